// What the Rust core answers for the same inputs: the `events` example (decoder events in a
// stable text form) and the `translate` example (the HTTP body of a whole request), each
// run with 4 KiB reads. run-tests.sh computes every case once (test/expect.mjs) into the
// file $AGENTWIRE_JS_EXPECTED, which the suite reads under Node, Bun and Deno alike;
// without it a case is computed when asked for.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rustProgram } from './paths.mjs';

let cache;
function cached() {
  if (cache === undefined) {
    const path = process.env.AGENTWIRE_JS_EXPECTED;
    cache = path && existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : {};
  }
  return cache;
}

const programs = {};
const program = (name) => (programs[name] ??= rustProgram(name));

export function eventsKey(transcript) {
  return `events ${transcript}`;
}

/** The Rust decoder's events for `transcript`, in the `events` example's text form. */
export function rustEvents(transcript) {
  const hit = cached()[eventsKey(transcript)];
  if (hit !== undefined) return hit;
  return execFileSync(program('events'), ['--chunk', '4096', transcript], { encoding: 'utf8', maxBuffer: 64 << 20 });
}

export function translateKey(request, transcript, stderr, exit) {
  return `translate ${request} ${transcript} ${stderr ?? '-'} ${exit}`;
}

/**
 * `{ status, body }` of the Rust bridge for the request in the file `request`, answered by
 * `transcript`, with `stderr` (a file) and the exit code of a failed run.
 */
export function rustTranslate(request, transcript, stderr = undefined, exit = 0) {
  const hit = cached()[translateKey(request, transcript, stderr, exit)];
  if (hit !== undefined) return { status: hit.status, body: Buffer.from(hit.body, 'base64') };
  return runTranslate(request, transcript, stderr, exit);
}

export function runTranslate(request, transcript, stderr, exit) {
  const args = ['--chunk', '4096', '--request', request];
  if (stderr !== undefined) args.push('--stderr', stderr, '--exit', String(exit));
  const done = spawnSync(program('translate'), [...args, transcript], { maxBuffer: 64 << 20 });
  if (done.status !== 0) throw new Error(`translate failed: ${done.stderr}`);
  const status = Number(/^status: (\d+)/.exec(done.stderr.toString())[1]);
  return { status, body: done.stdout };
}
