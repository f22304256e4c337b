/**
 * `AgentRun`: one request driven to its end with a real agent process, the loop every
 * Node or Bun adapter would otherwise write.
 * @module
 */

import { Bridge, type Body, type BridgeOptions, type Dialect, type Head, type Invocation } from '../bridge.js';
import type { Config } from '../config.js';
import type { Caller } from '../registry.js';
import type { Conversations } from './conversations.js';
import { DemoPlayback } from './demo.js';
import { type AgentGroup, ProcessGroup, agentExit, delayUntil, spawnFailure } from './group.js';

/** How a run is set up; every field is optional. */
export interface AgentRunOptions {
  /** The API of the route the request came in on (default `chat-completions`). */
  dialect?: Dialect;
  /** The bridge's settings (the agent binary, workspace, timeouts, …). */
  config?: Config;
  /**
   * Aborting it means the client went away: the agent's process group is stopped and the
   * run ends without producing more.
   */
  signal?: AbortSignal;
  /** The environment the agent starts from (default `process.env`); the invocation's variables are added. */
  env?: NodeJS.ProcessEnv;
  /** The agent's working directory (default this process's). */
  cwd?: string;
  /** Between SIGTERM and SIGKILL when the agent's group is stopped (default 2,000 ms). */
  killGraceMs?: number;
  /**
   * Reading the agent's stdout pauses while more than this many body bytes wait for the
   * consumer (default 1 MiB): a slow client slows the agent instead of filling memory.
   */
  highWaterMark?: number;
  /** The response's `created`, in Unix seconds (default now). */
  created?: number;
  /** The number the response and tool-call ids derive from (default random). */
  idSeed?: bigint;
  /** The millisecond clock the bridge runs on (default `performance.now`). */
  clock?: () => number;
  /**
   * Answer from the bundled demo transcript instead of starting cursor-agent (the proxies'
   * `--demo`): a recorded answer with thinking, streamed text and usage, whatever was asked.
   * The bridge, its deadlines and its encoders run as for a real agent; no process is started
   * and no Cursor account is needed.
   */
  demo?: boolean;
  /**
   * The conversations this request may continue: the run resumes the chat that answered
   * its conversation so far (`--resume`, with only what is new) or runs fresh, and gives
   * its place back when the response ends. Give every run of a server the same one.
   * Ignored with `demo`.
   */
  conversations?: Conversations;
  /** Who sends the request, to `conversations` (default: the local user, no conversation ids; see {@link callerOf}). */
  caller?: Caller;
}

/** How the agent process ended. */
export type ProcessExit = { code: number } | { signal: NodeJS.Signals };

/**
 * One request, from its body (in its route's dialect) to the end of its response, with the
 * agent as a child process: spawned as the leader of its own process group (`detached`), its
 * prompt written to stdin, both pipes and its exit fed to a {@link Bridge}, one timer
 * re-armed from `pollTimeout()`, the whole group stopped (SIGTERM, then SIGKILL after
 * `killGraceMs`) when the bridge says so or the consumer goes away, anything the agent
 * leaves behind killed when it exits, and the agent always reaped.
 *
 * With `conversations`, a resumed chat the agent cannot continue (it fails before answering,
 * or answers under another chat) is replaced by a fresh run, once, in a new process group,
 * before anything reached the client; the response is the fresh run's.
 *
 * Iterate it for the response: a {@link Head} first, then {@link Body} chunks; the iteration
 * ends with the response. Leaving the loop early (`break`, an exception) counts as the
 * client going away, as does aborting `options.signal` or calling {@link clientGone}.
 *
 * ```ts
 * const run = new AgentRun(body, { config: { workspace } });
 * for await (const output of run) {
 *   if (output.type === 'head') res.writeHead(output.status, { 'content-type': output.contentType });
 *   else res.write(output.data);
 * }
 * res.end();
 * ```
 */
export class AgentRun implements AsyncIterable<Head | Body>, AsyncDisposable {
  /**
   * The agent started for it, or `undefined` when the request was rejected (its 400 is the
   * response); after a resumed chat was replaced, the fresh run.
   */
  invocation: Invocation | undefined;
  /**
   * Settles once the run is over: the agent was reaped (its exit) or never started
   * (`undefined`), and the response has ended.
   */
  readonly exited: Promise<ProcessExit | undefined>;

  readonly #bridge: Bridge;
  readonly #options: AgentRunOptions;
  readonly #conversations: Conversations | undefined;
  readonly #clock: () => number;
  readonly #killGraceMs: number;
  readonly #highWaterMark: number;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => this.clientGone();
  #group: AgentGroup | undefined;
  #settle: (exit: ProcessExit | undefined) => void = () => {};
  /** What waits for the consumer. */
  readonly #queue: (Head | Body)[] = [];
  #queuedBytes = 0;
  #paused = false;
  /** The bridge handed out its end. */
  #ended = false;
  /** The consumer read the last output; nothing more is produced for it. */
  #finished = false;
  #failure: unknown;
  #wake: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #deadline: number | undefined;

  constructor(body: Uint8Array | string, options: AgentRunOptions = {}) {
    this.#clock = options.clock ?? (() => performance.now());
    this.#killGraceMs = options.killGraceMs ?? 2_000;
    this.#highWaterMark = options.highWaterMark ?? 1 << 20;
    this.exited = new Promise((resolve) => {
      this.#settle = resolve;
    });
    const bridgeOptions: BridgeOptions = { nowMs: this.#clock() };
    if (options.dialect !== undefined) bridgeOptions.dialect = options.dialect;
    if (options.config !== undefined) bridgeOptions.config = options.config;
    if (options.created !== undefined) bridgeOptions.created = options.created;
    if (options.idSeed !== undefined) bridgeOptions.idSeed = options.idSeed;
    this.#options = options;
    this.#conversations = options.demo ? undefined : options.conversations;
    if (this.#conversations === undefined) {
      this.#bridge = new Bridge(body, bridgeOptions);
    } else {
      this.#bridge = Bridge.inConversation(body, this.#conversations.registry, { ...bridgeOptions, caller: options.caller ?? {} });
      this.#conversations.settle();
    }
    this.invocation = this.#bridge.invocation;
    this.#signal = options.signal;
    if (this.invocation !== undefined && this.#signal?.aborted !== true) {
      this.#start(this.invocation);
    } else {
      this.#settle(undefined);
    }
    this.#pump();
    if (this.#signal?.aborted) this.clientGone();
    else this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** The agent's process id (its process group's too), while it has one. */
  get pid(): number | undefined {
    return this.#group?.child.pid;
  }

  /** The client went away: the agent is stopped and the response ends with nothing more. */
  clientGone(): void {
    this.#input((bridge, now) => bridge.clientGone(now));
  }

  /**
   * The program is shutting down: the response ends as a failure the client may retry (503,
   * or an in-band error after the head) and the agent is stopped.
   */
  shutdown(): void {
    this.#input((bridge, now) => bridge.shutdown(now));
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Head | Body, void, undefined> {
    try {
      for (;;) {
        const output = this.#queue.shift();
        if (output !== undefined) {
          if (output.type === 'body') this.#queuedBytes -= output.data.length;
          this.#resumeIfDrained();
          yield output;
          continue;
        }
        if (this.#failure !== undefined) throw this.#failure;
        if (this.#ended) {
          this.#finished = true;
          return;
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      if (!this.#finished) this.clientGone();
    }
  }

  /** Ends the run as if the client went away, and waits until the agent is reaped. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.clientGone();
    await this.exited;
  }

  #start(invocation: Invocation): void {
    const options = this.#options;
    const group = options.demo
      ? new DemoPlayback()
      : new ProcessGroup(invocation.program, invocation.args, { ...(options.env ?? process.env), ...invocation.env }, options.cwd, this.#killGraceMs);
    this.#group = group;
    this.#paused = false;
    const child = group.child;
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // a failed kill, already handled
      // It never ran: the bridge reports a misconfiguration, as for a missing binary.
      this.#input((bridge, now) => {
        bridge.pushStderr(spawnFailure(invocation.program, error), now);
        bridge.agentExited({ code: 127 }, now);
      });
      this.#finish(group, undefined);
    });
    child.stdin!.end(invocation.stdin);
    child.stdout!.on('data', (chunk: Buffer) => this.#input((bridge, now) => bridge.pushStdout(chunk, now)));
    child.stderr!.on('data', (chunk: Buffer) => this.#input((bridge, now) => bridge.pushStderr(chunk, now)));
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      // Both pipes are at their end and the leader is reaped.
      const exit: ProcessExit = signal !== null ? { signal } : { code: code ?? 0 };
      this.#input((bridge, now) => bridge.agentExited(agentExit(code, signal), now));
      this.#finish(group, exit);
    });
  }

  /**
   * The bridge replaces a resumed chat the agent could not continue by a fresh run: the
   * run it replaces was reported exited (reaped, its group signalled), so the new one
   * starts in a group of its own.
   */
  #respawn(): void {
    const invocation = this.#bridge.invocation;
    this.invocation = invocation;
    if (invocation !== undefined) this.#start(invocation);
  }

  /** Feeds one input to the bridge, then acts on what it says. */
  #input(feed: (bridge: Bridge, now: number) => void): void {
    if (this.#ended || this.#failure !== undefined) return;
    try {
      feed(this.#bridge, this.#clock());
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#pump();
  }

  /** Drains the bridge: queues the response, stops the agent when told, re-arms the timer. */
  #pump(): void {
    if (this.#ended || this.#failure !== undefined) return;
    let outputs;
    try {
      outputs = this.#bridge.drain();
    } catch (error) {
      this.#fail(error);
      return;
    }
    for (const output of outputs) {
      switch (output.type) {
        case 'head':
          this.#queue.push(output);
          break;
        case 'body':
          this.#queue.push(output);
          this.#queuedBytes += output.data.length;
          break;
        case 'stopAgent':
          this.#stopGroup();
          break;
        case 'respawn':
          this.#respawn();
          break;
        case 'end':
          this.#end();
          break;
      }
    }
    if (this.#queuedBytes > this.#highWaterMark && !this.#paused && this.#group?.child.stdout) {
      this.#paused = true;
      this.#group.child.stdout.pause();
    }
    this.#arm();
    this.#wakeConsumer();
  }

  /** One timer, for the bridge's next deadline. */
  #arm(): void {
    const deadline = this.#ended ? undefined : this.#bridge.pollTimeout();
    if (deadline === this.#deadline) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#deadline = deadline;
    if (deadline === undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#deadline = undefined;
      this.#input((bridge, now) => bridge.handleTimeout(now));
    }, delayUntil(deadline, this.#clock()));
  }

  #end(): void {
    this.#ended = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    // Nothing more is produced: the agent's output (until it is reaped) is drained unread.
    if (this.#paused) this.#group?.child.stdout?.resume();
    this.#endConversationTurn();
    this.#bridge.free();
  }

  #fail(error: unknown): void {
    this.#failure = error;
    this.#stopGroup();
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    if (this.#paused) this.#group?.child.stdout?.resume();
    this.#endConversationTurn();
    this.#bridge.free();
    if (this.#group === undefined || this.#group.child.pid === undefined) this.#settle(undefined);
    this.#wakeConsumer();
  }

  /** The request's place in its conversation goes back: parked when the answer reached its end, released otherwise. */
  #endConversationTurn(): void {
    const conversations = this.#conversations;
    if (conversations === undefined || this.#bridge.closed || conversations.registry.closed) return;
    try {
      this.#bridge.endConversationTurn(conversations.registry, this.#clock());
    } catch {
      // A panic inside (a bug): the bridge and the registry are poisoned, the response
      // ends all the same.
    }
    conversations.settle();
  }

  /** `group` is reaped; the run is over unless a fresh run replaced it. */
  #finish(group: AgentGroup, exit: ProcessExit | undefined): void {
    group.reaped();
    if (this.#group === group) this.#settle(exit);
  }

  #stopGroup(): void {
    this.#group?.stop();
  }

  #resumeIfDrained(): void {
    if (this.#paused && this.#queuedBytes <= this.#highWaterMark / 2) {
      this.#paused = false;
      this.#group?.child.stdout?.resume();
    }
  }

  #wakeConsumer(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
