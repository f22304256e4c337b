/**
 * The inputs a {@link Bridge} and an {@link AcpConnection} take alike, from the agent
 * process and the clock.
 * @module
 */

import type { AcpConnection } from './acp.js';
import type { Bridge } from './bridge.js';
import { AgentwireError, requireBytes, requireNumber } from './errors.js';
import { Handle } from './handle.js';

/** How the agent ended: with an exit code, or by a signal (its number). */
export type AgentExit = { code: number } | { signal: number };

/** What the module's objects fed by an agent take (`src/inputs.rs`). */
interface RawInputs {
  free(): void;
  pushStdout(data: Uint8Array, nowMs: number): void;
  pushStderr(data: Uint8Array, nowMs: number): void;
  agentExitedCode(code: number, nowMs: number): void;
  agentExitedSignal(signal: number, nowMs: number): void;
  handleTimeout(nowMs: number): void;
  shutdown(nowMs: number): void;
}

/** An object fed by an agent process: its output, its exit, the clock, the shutdown. */
export abstract class AgentInputs<R extends RawInputs> extends Handle<R> {
  /** Bytes the agent wrote to stdout, in any chunking. */
  pushStdout(data: Uint8Array, nowMs: number): void {
    this.#push((raw) => raw.pushStdout(data, nowMs), data, nowMs);
  }

  /** Bytes the agent wrote to stderr, in any chunking (only the tail is kept, for failure messages). */
  pushStderr(data: Uint8Array, nowMs: number): void {
    this.#push((raw) => raw.pushStderr(data, nowMs), data, nowMs);
  }

  #push(push: (raw: R) => void, data: Uint8Array, nowMs: number): void {
    const raw = this.raw();
    requireBytes(data, 'data');
    requireNumber(nowMs, 'nowMs');
    try {
      push(raw);
    } catch (error) {
      throw this.failure(error);
    }
  }

  /**
   * The agent exited with `{ code }`, or a signal ended it (`{ signal }`, its number). Call
   * it after its stdout and stderr were read to their end and pushed. An ACP connection
   * then fails every open turn with the stderr tail and decides a restart.
   */
  agentExited(exit: AgentExit, nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    const [how, value] = readExit(exit);
    this.call((raw) => (how === 'code' ? raw.agentExitedCode(value, nowMs) : raw.agentExitedSignal(value, nowMs)));
  }

  /** The deadline from `pollTimeout` passed. Early calls do nothing. */
  handleTimeout(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.handleTimeout(nowMs));
  }

  /**
   * The program is shutting down: every response still open ends as a failure the client
   * may retry (503 before the head, the dialect's in-band error and end after it); a
   * bridge's agent is to be stopped, an ACP connection's running prompts are cancelled.
   */
  shutdown(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.shutdown(nowMs));
  }
}

/** `exit` checked: `['code', code]` or `['signal', number]`; anything else throws `invalidArgument`. */
function readExit(exit: AgentExit): ['code' | 'signal', number] {
  if (exit !== null && typeof exit === 'object' && 'code' in exit && !('signal' in exit)) {
    requireNumber(exit.code, 'exit.code');
    return ['code', exit.code];
  }
  if (exit !== null && typeof exit === 'object' && 'signal' in exit && !('code' in exit)) {
    requireNumber(exit.signal, 'exit.signal');
    return ['signal', exit.signal];
  }
  throw new AgentwireError('invalidArgument', 'agentExited takes { code } or { signal }, exactly one');
}
