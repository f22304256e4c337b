// The real captures beside the repository (`../shared/fixtures`), found one way by every
// JavaScript test (the AI SDK judge in tests/clients/node, the package's suite in
// bindings/js/test), with the rules of the Rust tests' finder (tests/support/shared.rs):
//
// - present: every file a test names must be there; a renamed, missing or empty capture
//   set throws, it is never taken for absence;
// - absent: the tests over the captures are skipped (`skipReason()` for `test(..., { skip })`);
// - absent under `CI=true` or `AGENTWIRE_REQUIRE_SHARED=1`: a failure.
//
// `AGENTWIRE_SHARED_DIR` names the directory used in place of `../shared` (the one holding
// `fixtures/`). Every function takes the environment as an argument, so that the rules are
// tested on temporary directories (bindings/js/test/shared.test.mjs).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const DIR_VAR = 'AGENTWIRE_SHARED_DIR';
export const REQUIRE_VAR = 'AGENTWIRE_REQUIRE_SHARED';

const isDir = (path) => existsSync(path) && statSync(path).isDirectory();

/** The directory standing for `../shared`. */
export const sharedDir = (env = process.env) => (env[DIR_VAR] ? resolve(env[DIR_VAR]) : resolve(ROOT, '../shared'));

/** Whether absence is a failure: `CI=true` or `AGENTWIRE_REQUIRE_SHARED=1`. */
export const required = (env = process.env) =>
  ['true', '1'].includes((env.CI ?? '').toLowerCase()) || ['1', 'true'].includes((env[REQUIRE_VAR] ?? '').toLowerCase());

/** `fixtures/` when present, null when absent; throws when absent and required. */
export function fixturesDir(env = process.env) {
  const dir = join(sharedDir(env), 'fixtures');
  if (isDir(dir)) return dir;
  if (required(env)) {
    throw new Error(`the real captures ${dir} are absent, and CI=true or ${REQUIRE_VAR}=1 requires them (set ${DIR_VAR} to where they are)`);
  }
  return null;
}

/** Why the tests over the captures are skipped, or false when the captures are present. */
export const skipReason = (env = process.env) => fixturesDir(env) === null && `the real captures ${join(sharedDir(env), 'fixtures')} are absent`;

/**
 * The files of `fixtures/<relative>` whose names end with `suffix`, sorted: at least one when
 * the captures are present (throws otherwise), none when they are absent (throws when required).
 */
export function files(relative = 'cursor-agent', suffix = '.jsonl', env = process.env) {
  const dir = fixturesDir(env);
  if (dir === null) return [];
  const where = join(dir, relative);
  if (!isDir(where)) throw new Error(`${where}: missing from the real captures`);
  const found = readdirSync(where)
    .filter((name) => name.endsWith(suffix))
    .sort()
    .map((name) => join(where, name));
  if (found.length === 0) throw new Error(`${where}: no *${suffix} in the real captures`);
  return found;
}
