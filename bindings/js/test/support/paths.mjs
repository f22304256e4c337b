// Where the tests find the repository's transcripts, the real captures beside it, and the
// Rust programs they compare with.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
export const PACKAGE = join(ROOT, 'bindings/js');
export const FIXTURES = join(ROOT, 'tests/fixtures');
export const SHARED = resolve(ROOT, '../shared/fixtures/cursor-agent');
export const DEFAULT_REQUEST = '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}';

const jsonl = (dir) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith('.jsonl'))
        .sort()
        .map((name) => join(dir, name))
    : [];

/** The project's own transcripts. */
export const transcripts = () => jsonl(FIXTURES);
/** The real captures in ../shared (none on a machine without them). */
export const realCaptures = () => jsonl(SHARED);
/** The example requests. */
export const requests = () =>
  readdirSync(join(FIXTURES, 'requests'))
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => join(FIXTURES, 'requests', name));
/** The stderr of failed runs. */
export const stderrs = () =>
  readdirSync(join(FIXTURES, 'stderr'))
    .filter((name) => name.endsWith('.txt'))
    .sort()
    .map((name) => join(FIXTURES, 'stderr', name));

/**
 * The executable of a Rust program, built now: `$AGENTWIRE_<NAME>` when set (run-tests.sh
 * builds them once), else the example of that name, else a binary of that name in any
 * workspace member (where the proxies' helpers may live).
 */
export function rustProgram(name) {
  const preset = process.env[`AGENTWIRE_${name.toUpperCase()}`];
  if (preset) return preset;
  for (const selector of [['--example', name], ['--workspace', '--bin', name]]) {
    let out;
    try {
      out = execFileSync('cargo', ['build', '--quiet', '--message-format=json', ...selector], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        maxBuffer: 64 << 20,
      });
    } catch {
      continue;
    }
    for (const line of out.split('\n')) {
      if (!line.startsWith('{')) continue;
      const message = JSON.parse(line);
      if (message.reason === 'compiler-artifact' && message.target?.name === name && message.executable) {
        return message.executable;
      }
    }
  }
  throw new Error(`cargo builds no program named ${name}`);
}
