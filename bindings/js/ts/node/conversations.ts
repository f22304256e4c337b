/**
 * `Conversations`: one {@link Registry} for requests that start cursor-agent per request,
 * with its expiry timer kept, and who a request is to it.
 * @module
 */

import { setTimeout as timeout } from 'node:timers';
import { type Caller, Registry, type RegistryConfig, type RegistryStats } from '../registry.js';
import { delayUntil } from './group.js';

/**
 * The conversations of many {@link AgentRun}s: one {@link Registry} (which decides, for
 * each request, whether it resumes the cursor-agent chat that answered its conversation so
 * far with `--resume` and only what is new, or runs fresh with the whole history), and one
 * timer on its next expiry. {@link createAgentFetch} makes one; a server driving
 * {@link AgentRun}s itself gives each run the same one.
 *
 * Chats the registry lets go have no process to stop on this path (cursor-agent keeps its
 * chats itself, and each run's process ends with its request): they are forgotten. The
 * timer never keeps the program alive by itself. {@link close} forgets every chat.
 */
export class Conversations {
  /** The registry, for its counters (`stats`, `parked`, `busy`). */
  readonly registry: Registry;
  readonly #clock: () => number;
  #timer: ReturnType<typeof timeout> | undefined;
  #deadline: number | undefined;

  constructor(config?: RegistryConfig, clock: () => number = () => performance.now()) {
    this.registry = new Registry(config);
    this.#clock = clock;
  }

  /** What the registry has done so far. */
  get stats(): RegistryStats {
    return this.registry.stats;
  }

  /**
   * After the registry was used (a bridge made or ended with it): forgets the chats it let
   * go, and keeps one timer on its next deadline.
   */
  settle(): void {
    if (this.registry.closed) return;
    while (this.registry.pollReleased() !== undefined) {
      // Nothing to stop: see the class docs.
    }
    const deadline = this.registry.pollTimeout();
    if (deadline === this.#deadline) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#deadline = deadline;
    if (deadline === undefined) return;
    this.#timer = timeout(() => {
      this.#timer = undefined;
      this.#deadline = undefined;
      if (this.registry.closed) return;
      this.registry.handleTimeout(this.#clock());
      this.settle();
    }, delayUntil(deadline, this.#clock()));
    // A parked chat waits for a request that may never come: it does not keep the
    // program alive.
    this.#timer.unref();
  }

  /** Forgets every chat and frees the registry; runs still holding a chat end them as fresh ones would. */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.registry.closed) return;
    this.registry.clear(this.#clock());
    this.registry.free();
  }
}

/** The longest client id header (`X-Claude-Code-Session-Id`, `X-Claude-Code-Agent-Id`) taken; a longer one is ignored. */
export const MAX_CLIENT_ID = 128;

/**
 * Who a request with `headers` is to a registry, on a server that takes no key (the local
 * user): its conversation's ids from Claude Code's `X-Claude-Code-Session-Id` and
 * `X-Claude-Code-Agent-Id` headers, each taken when it is 1 to {@link MAX_CLIENT_ID}
 * visible ASCII characters.
 */
export function callerOf(headers: Headers): Caller {
  const session = clientId(headers.get('x-claude-code-session-id'));
  const agent = clientId(headers.get('x-claude-code-agent-id'));
  const keys: { clientSession?: string; clientAgent?: string } = {};
  if (session !== undefined) keys.clientSession = session;
  if (agent !== undefined) keys.clientAgent = agent;
  return { keys };
}

function clientId(value: string | null): string | undefined {
  if (value === null || value.length === 0 || value.length > MAX_CLIENT_ID) return undefined;
  return /^[\x21-\x7e]+$/.test(value) ? value : undefined;
}
