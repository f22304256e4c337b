/**
 * An agent process as the leader of its own process group: what {@link AgentRun} and
 * {@link AcpAgent} share to start it, stop everything it started, and read its end.
 * @module
 */

import { type ChildProcess, spawn } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { constants } from 'node:os';
import type { AgentExit } from '../inputs.js';
import type { AcpAgent } from './acp.js';
import type { AgentRun } from './run.js';

/**
 * What a run reads of its agent: a child process's pipes, id and events (`error`, `close`),
 * or the demo's stand-in for them.
 */
export type AgentChild = Pick<ChildProcess, 'pid' | 'stdin' | 'stdout' | 'stderr'> & Pick<EventEmitter, 'on'>;

/** An agent and the means to stop it: a {@link ProcessGroup}, or the demo's playback. */
export interface AgentGroup {
  readonly child: AgentChild;
  /** Stops the agent (again: nothing). */
  stop(): void;
  /** The agent is reaped: nothing more is to be stopped. */
  reaped(): void;
}

/** One agent process, spawned as the leader of its own group, with its stdio piped. */
export class ProcessGroup implements AgentGroup {
  readonly child: ChildProcess;
  readonly #killGraceMs: number;
  #grace: ReturnType<typeof setTimeout> | undefined;
  #leaderExited = false;

  constructor(command: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string | undefined, killGraceMs: number) {
    this.#killGraceMs = killGraceMs;
    this.child = spawn(command, args, {
      // Its own process group, so that stopping it reaches everything it started.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env,
      cwd,
    });
    // What the agent does not read (it exited, or is being stopped) is of no interest.
    this.child.stdin!.on('error', () => {});
    this.child.on('exit', () => {
      // The leader is reaped; whatever it left in its group goes too (a child still
      // holding the pipes would keep them open).
      this.#leaderExited = true;
      clearTimeout(this.#grace);
      this.kill('SIGKILL');
    });
  }

  /** Stops the group: SIGTERM, then SIGKILL after the grace. Again, or after the leader exited: nothing. */
  stop(): void {
    if (this.#leaderExited || this.#grace !== undefined || this.child.pid === undefined) return;
    this.kill('SIGTERM');
    this.#grace = setTimeout(() => this.kill('SIGKILL'), this.#killGraceMs);
  }

  /** Sends `signal` to every process of the group. */
  kill(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  }

  /** The group is reaped: the grace timer goes. */
  reaped(): void {
    clearTimeout(this.#grace);
  }
}

/** The `close` event's `(code, signal)` as the core's exit: a code, or a signal's number. */
export function agentExit(code: number | null, signal: NodeJS.Signals | null): AgentExit {
  return signal !== null ? { signal: constants.signals[signal] ?? 0 } : { code: code ?? 0 };
}

/**
 * The delay of a timer for `deadline` at `now`: setTimeout takes at most 2^31 - 1 ms, and
 * firing early is harmless (a deadline not yet due is ignored, and the timer armed again).
 */
export function delayUntil(deadline: number, now: number): number {
  return Math.min(Math.max(0, Math.ceil(deadline - now)), 0x7fffffff);
}

/** A failed spawn's message, as the agent's stderr would have said it. */
export function spawnFailure(command: string, error: Error): Uint8Array {
  return new TextEncoder().encode(`could not start ${command}: ${error.message}\n`);
}
