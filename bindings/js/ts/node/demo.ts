/**
 * The demo: a recorded cursor-agent answer (thinking, then text streamed in fragments, then
 * the result with usage) played to a run in place of an agent process, so that everything
 * but the spawn takes the path a real request takes, with no Cursor account. The transcript
 * is the one the proxies' `--demo` plays, shipped beside this module.
 * @module
 */

import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import type { AgentChild, AgentGroup } from './group.js';

/** Between transcript lines, so that the stream is visibly a stream. */
const PACE_MS = 20;

/** The model listing the demo offers, in the CLI's format (`parseModels` reads it). */
export const DEMO_MODELS = 'Available models\n\nauto - Auto (default)\ndemo - agentwire demo transcript (current)\n';

let lines: readonly Buffer[] | undefined;

/** The transcript's lines, each with its newline, read once. */
function transcript(): readonly Buffer[] {
  lines ??= readFileSync(new URL('./demo_transcript.jsonl', import.meta.url))
    .toString('utf8')
    .split(/(?<=\n)/)
    .filter((line) => line.trim().length > 0)
    .map((line) => Buffer.from(line));
  return lines;
}

/** The demo's stand-in for a child process: no process id; `close` as a process would end. */
class DemoChild extends EventEmitter {
  readonly pid: number | undefined = undefined;
  /** The prompt goes nowhere. */
  readonly stdin = new Writable({ write: (_chunk, _encoding, done) => done() });
  readonly stdout = new Readable({ read: () => {} });
  readonly stderr = new Readable({ read: () => {} });
}

/**
 * The transcript played as an agent's stdout, a line every {@link PACE_MS}; then the
 * pipes end and `close` reports exit code 0. {@link stop} ends it early, as SIGTERM would.
 */
export class DemoPlayback implements AgentGroup {
  readonly #child = new DemoChild();
  readonly child: AgentChild = this.#child as unknown as AgentChild;
  #next = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #over = false;

  constructor() {
    const lines = transcript();
    this.#timer = setTimeout(() => this.#play(lines), PACE_MS);
  }

  stop(): void {
    this.#end(null, 'SIGTERM');
  }

  reaped(): void {}

  #play(lines: readonly Buffer[]): void {
    const line = lines[this.#next++];
    if (line === undefined) {
      this.#end(0, null);
      return;
    }
    this.#child.stdout.push(line);
    this.#timer = setTimeout(() => this.#play(lines), PACE_MS);
  }

  /** The pipes end; `close` follows once stdout is read to its end, as for a process. */
  #end(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#over) return;
    this.#over = true;
    clearTimeout(this.#timer);
    const child = this.#child;
    child.stderr.push(null);
    child.stdout.once('end', () => child.emit('close', code, signal));
    child.stdout.push(null);
    // An end nobody reads (the run stopped listening) still closes.
    if (child.stdout.listenerCount('data') === 0) child.stdout.resume();
  }
}
