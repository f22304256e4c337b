// What the Rust core answers for the same inputs: the `events` example (decoder events in a
// stable text form), the `translate` example (the HTTP body of a whole request in a
// dialect), each run with 4 KiB reads, the `reply` example (the replies that need no
// agent) and the `acp` example's `acp replay` (an ACP recording's inputs and outputs). run-tests.sh computes every case once (test/expect.mjs) into the
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

export function translateKey(dialect, request, transcript, stderr, exit) {
  return `translate ${dialect} ${request} ${transcript} ${stderr ?? '-'} ${exit}`;
}

/**
 * `{ status, body }` of the Rust bridge for the `dialect` request in the file `request`,
 * answered by `transcript`, with `stderr` (a file) and the exit code of a failed run.
 */
export function rustTranslate(dialect, request, transcript, stderr = undefined, exit = 0) {
  const hit = cached()[translateKey(dialect, request, transcript, stderr, exit)];
  if (hit !== undefined) return { status: hit.status, body: Buffer.from(hit.body, 'base64') };
  return runTranslate(dialect, request, transcript, stderr, exit);
}

export function runTranslate(dialect, request, transcript, stderr, exit) {
  const args = ['--api', dialect, '--chunk', '4096', '--request', request];
  if (stderr !== undefined) args.push('--stderr', stderr, '--exit', String(exit));
  const done = spawnSync(program('translate'), [...args, transcript], { maxBuffer: 64 << 20 });
  if (done.status !== 0) throw new Error(`translate failed: ${done.stderr}`);
  const status = Number(/^status: (\d+)/.exec(done.stderr.toString())[1]);
  return { status, body: done.stdout };
}

export function replyKey(args, stdin) {
  return `reply ${args.join(' ')} ${stdin === undefined ? '-' : Buffer.from(stdin).toString('base64')}`;
}

/**
 * `{ status, retryable, body }` of the `reply` example with `args` (`count-tokens`, or
 * `error DIALECT KIND MESSAGE`), the request body on its stdin.
 */
export function rustReply(args, stdin = undefined) {
  const hit = cached()[replyKey(args, stdin)];
  if (hit !== undefined) return { status: hit.status, retryable: hit.retryable, body: Buffer.from(hit.body, 'base64') };
  return runReply(args, stdin);
}

export function runReply(args, stdin) {
  const done = spawnSync(program('reply'), args, { input: stdin ?? '', maxBuffer: 64 << 20 });
  if (done.status !== 0) throw new Error(`reply failed: ${done.stderr}`);
  const stderr = done.stderr.toString();
  return {
    status: Number(/^status: (\d+)$/m.exec(stderr)[1]),
    retryable: /^retryable: (true|false)$/m.exec(stderr)[1] === 'true',
    body: done.stdout,
  };
}

export function acpReplayKey(dialect, recording) {
  return `acp replay ${dialect} ${recording}`;
}

/**
 * The `acp replay` document for `recording` with every turn in `dialect`: each
 * input it gave an `acp::Connection` and everything that followed (`{ steps }`).
 */
export function rustAcpReplay(dialect, recording) {
  const hit = cached()[acpReplayKey(dialect, recording)];
  if (hit !== undefined) return hit;
  return runAcpReplay(dialect, recording);
}

export function runAcpReplay(dialect, recording) {
  const out = execFileSync(program('acp'), ['replay', dialect, recording], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return JSON.parse(out);
}
