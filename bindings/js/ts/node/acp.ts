/**
 * `AcpAgent`: one warm ACP agent process serving many requests, the loop every Node or Bun
 * adapter of an {@link AcpConnection} would otherwise write.
 * @module
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AcpConfig, AcpConnection, type NativeTools, type TurnOptions } from '../acp.js';
import type { Body, Head } from '../bridge.js';
import { AgentwireError, describe } from '../errors.js';
import { type AgentLaunch, launchWithoutNativeTools } from '../launch.js';
import type { McpOutput } from '../mcp.js';
import type { Caller, RegistryStats } from '../registry.js';
import { ProcessGroup, agentExit, delayUntil, spawnFailure } from './group.js';
import { McpEndpoint, type McpEndpointRequest, refuse } from './mcp_endpoint.js';

/** How the agent is started and driven; only `command` is required. */
export interface AcpAgentOptions {
  /** The agent program: a path, or a name looked up in `PATH` (`gemini`, `claude-agent-acp`, …). */
  command: string;
  /** Its arguments (`['--acp']` for gemini-cli, `['acp']` for cursor-agent). */
  args?: readonly string[];
  /** The connection's settings (`cwd` is the sessions' working directory, not the process's). */
  config?: AcpConfig;
  /** The agent's environment (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The agent process's working directory (default this process's). */
  cwd?: string;
  /** Between SIGTERM and SIGKILL when the agent's group is stopped (default 2,000 ms). */
  killGraceMs?: number;
  /**
   * Body bytes a turn holds for its consumer before the rest waits in the connection
   * (default 1 MiB); there, past `config.turnOutputBudget`, the turn is cancelled, so that
   * one slow consumer never stalls the agent's stdout, which every turn shares.
   */
  highWaterMark?: number;
  /** The millisecond clock the connection runs on (default `performance.now`). */
  clock?: () => number;
  /**
   * Conversations (default on): every turn goes through
   * {@link AcpConnection.startConversationTurn}, so that a request continuing a
   * conversation resumes the session that answered it so far with only what is new; and
   * the agent reaches the client's tools of each request as an MCP server of its
   * session's own, at an endpoint this agent serves on 127.0.0.1 (a port the system
   * picks; `config.mcpEndpoint` is then the driver's and must be left out). The agent
   * must take HTTP MCP servers. `false`: every turn is a fresh session, and a request with
   * client tools is refused, as without an endpoint. `config.conversations` sets the
   * limits.
   */
  conversations?: boolean;
  /**
   * The agent's own tools (its shell, file edits, web search, …): `keep` or `off` (default
   * `config.nativeTools`, itself `keep` by default; giving both, they must agree). `off`
   * turns them off per session where the agent takes that (claude-agent-acp), and at
   * launch where only its configuration can, as {@link launchWithoutNativeTools} says:
   * codex-acp gets `-c` overrides appended to its arguments; Gemini CLI a policy file,
   * written into a private temporary directory and named after its arguments
   * (`--policy <file>`, then `--policy` and the user's own policies directory). The
   * directory is removed by {@link AcpAgent.close}. An agent agentwire knows no way to turn
   * the tools of (cursor-agent among them) is refused here, `invalidInput`.
   */
  nativeTools?: NativeTools;
}

/** A turn's values: a {@link Bridge}'s (its route's dialect, the request's `Config`, …), its client's `signal`, and who sends it. */
export interface AcpTurnOptions extends Omit<TurnOptions, 'nowMs'> {
  /** Aborting it means the client went away: the turn's session is cancelled (the agent lives on). */
  signal?: AbortSignal;
  /** Who sends the request, for conversations (default: the local user, no conversation ids; see {@link callerOf}). */
  caller?: Caller;
}

/**
 * One ACP agent (`gemini --acp`, `claude-agent-acp`, `codex-acp`, `cursor-agent acp`) kept
 * warm for many requests: spawned as the leader of its own process group when the first
 * turn needs it, its stdio, exit and one timer on `pollTimeout()` fed to an
 * {@link AcpConnection}. When the connection decides a restart (the agent exited, missed a
 * deadline, or every prompt slot is stuck) the whole group is stopped (SIGTERM, then
 * SIGKILL after `killGraceMs`) and reaped, and the next turn starts a new process. Anything
 * the agent leaves in its group when it exits is killed.
 *
 * With conversations (the default), a request that continues a conversation resumes its
 * session: the results of the calls the agent waits in are its MCP answers, new input a
 * prompt on the same session. The client's tools are an MCP server of each session's own
 * at the agent's loopback MCP endpoint, opened with the first turn (which starts the agent
 * once it listens): Host checked (loopback names only), no CORS, bodies bounded, each
 * session's path and bearer secret drawn with `crypto.getRandomValues`; a call's answer is
 * an SSE stream kept open with keep-alives for as long as the client's tool takes.
 * {@link close} closes the endpoint and every connection to it.
 *
 * ```ts
 * const agent = new AcpAgent({ command: 'gemini', args: ['--acp'], config: { cwd: process.cwd() } });
 * for await (const output of agent.turn(body, { dialect: 'messages', signal })) {
 *   if (output.type === 'head') res.writeHead(output.status, { 'content-type': output.contentType });
 *   else res.write(output.data);
 * }
 * await agent.close(); // open turns end as retryable failures; the agent is stopped and reaped
 * ```
 */
export class AcpAgent implements AsyncDisposable {
  readonly #options: AcpAgentOptions;
  readonly #clock: () => number;
  readonly #conversations: boolean;
  /** The process new turns go to, while it serves. */
  #current: AgentProcess | undefined;
  /** Every process not yet reaped (the current one, and those being stopped). */
  readonly #processes = new Set<AgentProcess>();
  /** The MCP endpoint, once a turn needed it; its URL once it listens. */
  #endpoint: McpEndpoint | undefined;
  #endpointUrl: string | undefined;
  #closed = false;
  /** With the agent's own tools off, what its launch adds. */
  readonly #launch: AgentLaunch | undefined;
  /** The options processes are spawned with, once the first one is. */
  #spawnOptions: AcpAgentOptions | undefined;
  /** The private directory of the launch's file, once written. */
  #fileDir: string | undefined;

  constructor(options: AcpAgentOptions) {
    if (options === null || typeof options !== 'object' || typeof options.command !== 'string') {
      throw new AgentwireError('invalidArgument', 'AcpAgent takes { command, args?, config?, … } with command a string');
    }
    const given = options.nativeTools;
    if (given !== undefined && given !== 'keep' && given !== 'off') {
      throw new AgentwireError('invalidArgument', `nativeTools must be 'keep' or 'off', not ${typeof given === 'string' ? `'${given}'` : describe(given)}`);
    }
    const configured = options.config?.nativeTools;
    if (given !== undefined && configured !== undefined && given !== configured) {
      throw new AgentwireError('invalidArgument', `nativeTools '${given}' and config.nativeTools '${String(configured)}' disagree: give one`);
    }
    const nativeTools = given ?? configured ?? 'keep';
    this.#options = given === undefined ? options : { ...options, config: { ...options.config, nativeTools } };
    this.#clock = options.clock ?? (() => performance.now());
    this.#conversations = options.conversations ?? true;
    if (this.#conversations && options.config?.mcpEndpoint != null) {
      throw new AgentwireError('invalidArgument', 'invalid ACP config: mcpEndpoint is served by the AcpAgent itself with conversations on; leave it out (or set conversations: false)');
    }
    // Checked now, so that a bad config throws here rather than at the first turn.
    new AcpConnection({ config: this.#options.config, nowMs: 0 }).free();
    if (nativeTools === 'off') this.#launch = prepareLaunch(options);
  }

  /** The agent's process id (its group's too), while one runs. */
  get pid(): number | undefined {
    return this.#current?.pid;
  }

  /** The models the running agent offers (`undefined` before its first session). */
  get models(): readonly string[] | undefined {
    return this.#current?.connection.models;
  }

  /** The model a fresh session uses unless told otherwise, when the agent says. */
  get currentModel(): string | undefined {
    return this.#current?.connection.currentModel;
  }

  /** The MCP endpoint's URL (`http://127.0.0.1:PORT/mcp/`), once it listens. */
  get mcpEndpoint(): string | undefined {
    return this.#endpointUrl;
  }

  /** Sessions of the running agent parked, waiting for their conversation's next request. */
  get parkedSessions(): number {
    const connection = this.#current?.connection;
    return connection === undefined || connection.closed ? 0 : connection.parkedSessions;
  }

  /** What the running agent's conversations registry has done (`undefined` while none runs). */
  get conversationStats(): RegistryStats | undefined {
    const connection = this.#current?.connection;
    return connection === undefined || connection.closed ? undefined : connection.conversationStats;
  }

  /**
   * Starts a turn for a request's body in its route's dialect; iterate it for the
   * response. A request the agent cannot serve is answered in the turn (a 400, a 404 for an
   * unknown model, a retryable 503 while the agent restarts).
   */
  turn(body: Uint8Array | string, options: AcpTurnOptions = {}): AcpTurn {
    if (this.#closed) throw new Error('this AcpAgent is closed');
    const { signal, caller, ...turnOptions } = options;
    const turn = new AcpTurn(signal);
    const start = (): void => {
      if (turn.ended) return;
      const started = this.#running();
      started.startTurn(turn, body, turnOptions, this.#conversations ? (caller ?? {}) : undefined);
    };
    if (!this.#conversations || this.#endpointUrl !== undefined) {
      start();
    } else {
      this.#listening()
        .then(() => {
          if (this.#closed) throw new Error('this AcpAgent is closed');
          start();
        })
        .catch((error: unknown) => turn.fail(error));
    }
    return turn;
  }

  /**
   * The models the agent offers (its first fresh session's list, in its order), starting the
   * agent when none runs; it then stays warm for the turns that follow. Rejects, with the
   * connection's reason, when the agent ends before it has a session (a program that cannot
   * start: a misconfiguration naming the install hint; a failed handshake), and at once
   * with `config.poolSize` 0 (no session is made before a turn asks).
   */
  async listModels(): Promise<readonly string[]> {
    if (this.#options.config?.poolSize === 0) throw new Error('listModels needs a session pool: config.poolSize is 0');
    if (this.#closed) throw new Error('this AcpAgent is closed');
    if (this.#conversations) await this.#listening();
    return this.#running().models();
  }

  /** The MCP endpoint, opened at the first need; resolves once it listens. */
  async #listening(): Promise<void> {
    if (this.#endpoint === undefined) {
      const maxBodyBytes = this.#options.config?.mcp?.maxBodyBytes ?? 4 << 20;
      this.#endpoint = new McpEndpoint((request) => this.#serveMcp(request), maxBodyBytes);
    }
    this.#endpointUrl = await this.#endpoint.url;
  }

  /** A request to the MCP endpoint, for the process whose session its path names. */
  #serveMcp(request: McpEndpointRequest): void {
    let status = 404;
    // The current process first: sessions of one that is being stopped are gone.
    const processes = [...this.#processes].sort((a, b) => Number(b === this.#current) - Number(a === this.#current));
    for (const running of processes) {
      const refused = running.serveMcp(request);
      if (refused === undefined) return;
      if (refused !== 404) {
        status = refused;
        break;
      }
    }
    refuse(request.response, status, undefined, false);
  }

  /** The process new work goes to, started when none serves. */
  #running(): AgentProcess {
    if (this.#closed) throw new Error('this AcpAgent is closed');
    if (this.#current === undefined || this.#current.retired) {
      const started = new AgentProcess(this.#spawning(), this.#clock, this.#conversations ? this.#endpointUrl : undefined);
      this.#processes.add(started);
      void started.exited.then(() => this.#processes.delete(started));
      this.#current = started;
    }
    return this.#current;
  }

  /**
   * Ends every open turn as a failure its client may retry, stops every agent process
   * (SIGTERM, SIGKILL after the grace), closes the MCP endpoint and every connection to
   * it, and resolves once each process is reaped and the endpoint closed.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const processes = [...this.#processes];
    for (const running of processes) running.shutdown();
    try {
      await Promise.all([...processes.map((running) => running.exited), this.#endpoint?.close()]);
    } finally {
      // Once every process that could read it is gone.
      if (this.#fileDir !== undefined) rmSync(this.#fileDir, { recursive: true, force: true });
    }
  }

  /**
   * The options agent processes are spawned with: with the agent's own tools off, the
   * launch's arguments appended, then its file, written (once) into a private directory,
   * named by its flag and followed by its arguments.
   */
  #spawning(): AcpAgentOptions {
    if (this.#spawnOptions !== undefined) return this.#spawnOptions;
    const launch = this.#launch;
    if (launch === undefined) return (this.#spawnOptions = this.#options);
    const args = [...(this.#options.args ?? []), ...launch.args];
    if (launch.file !== null) {
      // One directory, made once: a write that failed is tried again in it.
      this.#fileDir ??= mkdtempSync(join(tmpdir(), 'agentwire-acp-'));
      const path = join(this.#fileDir, launch.file.name);
      writeFileSync(path, launch.file.contents, { mode: 0o600 });
      args.push(launch.file.flag, path, ...launch.file.after);
    }
    this.#spawnOptions = { ...this.#options, args };
    return this.#spawnOptions;
  }

  /** {@link close}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** What the launch of the agent of `options` adds with its own tools off. */
function prepareLaunch(options: AcpAgentOptions): AgentLaunch {
  try {
    return launchWithoutNativeTools(options.command, options.args ?? [], options.env ?? process.env);
  } catch (error) {
    if (error instanceof AgentwireError) throw new AgentwireError(error.code, `nativeTools 'off': ${error.message}`);
    throw error;
  }
}

/** One agent process and its connection. Not part of the package's API. */
export class AgentProcess {
  readonly connection: AcpConnection;
  /** Settles once the process is reaped (or never started). */
  readonly exited: Promise<void>;
  /** A restart was decided, or the process is gone: new turns go to a new process. */
  retired = false;
  readonly #clock: () => number;
  readonly #highWaterMark: number;
  readonly #group: ProcessGroup;
  readonly #turns = new Map<number, AcpTurn>();
  /** The open exchanges with the MCP endpoint, by number, and their responses. */
  readonly #exchanges = new Map<number, ServerResponse>();
  #settle: () => void = () => {};
  #timer: ReturnType<typeof setTimeout> | undefined;
  #reaped = false;
  /** Why a restart was decided, when one was. */
  #reason: string | undefined;
  /** Callers of {@link models} waiting for the first session. */
  readonly #modelWaiters: { resolve: (models: readonly string[]) => void; reject: (error: Error) => void }[] = [];

  /** `mcpEndpoint`: the agent's MCP endpoint's URL, with conversations; `undefined` without. */
  constructor(options: AcpAgentOptions, clock: () => number, mcpEndpoint: string | undefined) {
    this.#clock = clock;
    this.#highWaterMark = options.highWaterMark ?? 1 << 20;
    this.exited = new Promise((resolve) => {
      this.#settle = resolve;
    });
    const config = mcpEndpoint === undefined ? options.config : { ...options.config, mcpEndpoint };
    this.connection = new AcpConnection({ config, nowMs: clock() });
    try {
      this.#group = new ProcessGroup(options.command, options.args ?? [], options.env ?? process.env, options.cwd, options.killGraceMs ?? 2_000);
    } catch (error) {
      // Arguments spawn refuses (a NUL in the command, say): nothing was started.
      this.connection.free();
      this.retired = true;
      this.#settle();
      throw error;
    }
    const child = this.#group.child;
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // a failed kill, already handled
      // It never ran: every turn fails as for an agent that exited at once.
      this.#input((c, now) => {
        c.pushStderr(spawnFailure(options.command, error), now);
        c.agentExited({ code: 127 }, now);
      });
      this.#reap();
    });
    child.stdout!.on('data', (chunk: Buffer) => this.#input((c, now) => c.pushStdout(chunk, now)));
    child.stderr!.on('data', (chunk: Buffer) => this.#input((c, now) => c.pushStderr(chunk, now)));
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      // Both pipes are at their end and the leader is reaped.
      this.#input((c, now) => c.agentExited(agentExit(code, signal), now));
      this.#reap();
    });
    this.#step();
  }

  get pid(): number | undefined {
    return this.#reaped ? undefined : this.#group.child.pid;
  }

  /** The agent's model list, once its first session exists. */
  models(): Promise<readonly string[]> {
    const known = this.connection.closed ? undefined : this.connection.models;
    if (known !== undefined) return Promise.resolve(known);
    if (this.connection.closed) return Promise.reject(this.#endError());
    return new Promise((resolve, reject) => this.#modelWaiters.push({ resolve, reject }));
  }

  /** Starts `turn`: a conversation turn when `caller` is given, a plain one otherwise. */
  startTurn(turn: AcpTurn, body: Uint8Array | string, options: Omit<TurnOptions, 'nowMs'>, caller: Caller | undefined): void {
    const turnOptions = { ...options, nowMs: this.#clock() };
    const id =
      caller === undefined
        ? this.connection.startTurn(body, turnOptions)
        : this.connection.startConversationTurn(body, turnOptions, caller, crypto.getRandomValues(new Uint8Array(32)));
    turn.attach(id, this);
    this.#turns.set(id, turn);
    this.#step();
  }

  /**
   * A request to the MCP endpoint for a session of this process: `undefined` once it is
   * an exchange (answered as the connection says), else the status of its refusal (404:
   * no session here has its path; 401: its secret was not presented).
   */
  serveMcp({ token, authorization, request, response }: McpEndpointRequest): number | undefined {
    if (this.connection.closed) return 404;
    let refused: number | undefined;
    this.#input((c, now) => {
      const admission = c.handleMcp(token, authorization, request, now);
      if (admission.type === 'refused') {
        refused = admission.status;
        return;
      }
      const exchange = admission.exchange;
      this.#exchanges.set(exchange, response);
      response.on('close', () => {
        // The agent hung up before the answer's end.
        if (this.#exchanges.get(exchange) !== response) return;
        this.#exchanges.delete(exchange);
        this.#input((connection, at) => connection.mcpExchangeGone(exchange, at));
      });
    });
    return refused;
  }

  /** The consumer of `turn` went away: its session is cancelled. */
  clientGone(turn: AcpTurn): void {
    if (turn.id === undefined || !this.#turns.has(turn.id)) return;
    const id = turn.id;
    this.#turns.delete(id);
    this.#input((c, now) => c.clientGone(id, now));
  }

  /** Every open turn ends as a retryable failure; the agent is stopped. */
  shutdown(): void {
    this.#input((c, now) => c.shutdown(now));
    this.#retire();
  }

  /** Moves what waits in the connection for `turn` to it, up to its high-water mark (or all of it). */
  pull(turn: AcpTurn, all = false): void {
    const id = turn.id;
    if (id === undefined || this.connection.closed || !this.#turns.has(id)) return;
    while (all || turn.queuedBytes < this.#highWaterMark) {
      const output = this.connection.pollOutput(id);
      if (output === undefined) return;
      if (output.type === 'end') this.#turns.delete(id);
      turn.deliver(output);
      if (output.type === 'end') return;
    }
  }

  /** Feeds one input to the connection, then acts on what it says. */
  #input(feed: (connection: AcpConnection, now: number) => void): void {
    if (this.connection.closed) return;
    try {
      feed(this.connection, this.#clock());
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#step();
  }

  /** After every input: the agent's stdin, the decisions, the turns, the MCP answers, the timer. */
  #step(): void {
    if (this.connection.closed) return;
    try {
      for (let bytes; (bytes = this.connection.pollTransmit()) !== undefined; ) {
        const stdin = this.#group.child.stdin;
        if (stdin?.writable) stdin.write(bytes);
      }
      for (let decision; (decision = this.connection.pollDecision()) !== undefined; ) {
        this.#reason ??= decision.reason;
        this.#retire();
      }
      for (let id; (id = this.connection.pollReady()) !== undefined; ) {
        const turn = this.#turns.get(id);
        if (turn !== undefined) this.pull(turn);
      }
      for (let exchange; (exchange = this.connection.pollMcpReady()) !== undefined; ) {
        this.#answer(exchange, this.connection.drainMcp(exchange));
      }
      for (const exchange of [...this.#exchanges.keys()]) {
        // Its session ended: nothing more comes for it.
        if (!this.connection.hasMcpServer(exchange)) this.#endExchange(exchange);
      }
      this.#arm();
      const models = this.#modelWaiters.length > 0 ? this.connection.models : undefined;
      if (models !== undefined) for (const waiter of this.#modelWaiters.splice(0)) waiter.resolve(models);
    } catch (error) {
      this.#fail(error);
    }
  }

  /** Writes an MCP exchange's outputs to its response. */
  #answer(exchange: number, outputs: McpOutput[]): void {
    const response = this.#exchanges.get(exchange);
    if (response === undefined) return;
    for (const output of outputs) {
      switch (output.type) {
        case 'head': {
          const headers: Record<string, string> = {};
          if (output.contentType !== undefined) headers['content-type'] = output.contentType;
          if (output.contentType === 'text/event-stream') headers['cache-control'] = 'no-cache';
          if (output.sessionId !== undefined) headers['mcp-session-id'] = output.sessionId;
          if (output.allow !== undefined) headers['allow'] = output.allow;
          response.writeHead(output.status, headers);
          // A held call's stream may stay silent until its first keep-alive: the agent
          // sees the head now.
          response.flushHeaders();
          break;
        }
        case 'body':
          response.write(output.data);
          break;
        case 'end':
          this.#exchanges.delete(exchange);
          response.end();
          break;
      }
    }
  }

  /** Ends the response of an exchange whose server is gone. */
  #endExchange(exchange: number): void {
    const response = this.#exchanges.get(exchange);
    this.#exchanges.delete(exchange);
    if (response === undefined) return;
    if (!response.headersSent) response.writeHead(404);
    response.end();
  }

  /** Why nothing more is served, for those who wait on the process. */
  #endError(): Error {
    return new Error(this.#reason ?? 'the ACP agent exited before it had a session');
  }

  /** One timer, for the connection's next deadline. */
  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const deadline = this.connection.pollTimeout();
    if (deadline === undefined) return;
    this.#timer = setTimeout(() => this.#input((c, now) => c.handleTimeout(now)), delayUntil(deadline, this.#clock()));
  }

  /** No new turns; the agent's group is stopped (its exit then ends the open turns). */
  #retire(): void {
    this.retired = true;
    this.#group.child.stdin?.end();
    this.#group.stop();
  }

  /** A call into the connection failed (a bug): every turn fails with it, the agent is stopped. */
  #fail(error: unknown): void {
    this.#retire();
    clearTimeout(this.#timer);
    for (const turn of this.#turns.values()) turn.fail(error);
    this.#turns.clear();
    for (const exchange of [...this.#exchanges.keys()]) this.#endExchange(exchange);
    for (const waiter of this.#modelWaiters.splice(0)) waiter.reject(error instanceof Error ? error : new Error(String(error)));
    this.connection.free();
  }

  /** The process is reaped: nothing more comes from it. */
  #reap(): void {
    if (this.#reaped) return;
    this.retired = true;
    this.#reaped = true;
    clearTimeout(this.#timer);
    this.#group.reaped();
    // The exit ended every turn in the connection: what a slow consumer has not taken yet
    // moves to its turn before the connection goes.
    for (const turn of [...this.#turns.values()]) this.pull(turn, true);
    for (const turn of this.#turns.values()) turn.fail(new Error('the ACP agent exited'));
    this.#turns.clear();
    for (const exchange of [...this.#exchanges.keys()]) this.#endExchange(exchange);
    for (const waiter of this.#modelWaiters.splice(0)) waiter.reject(this.#endError());
    this.connection.free();
    this.#settle();
  }
}

/**
 * One request served by an {@link AcpAgent}: iterate it for the response, a {@link Head}
 * first, then {@link Body} chunks; the iteration ends with the response. Leaving the loop
 * early (`break`, an exception), aborting the turn's `signal` or calling
 * {@link clientGone} cancels its session; the agent serves on.
 */
export class AcpTurn implements AsyncIterable<Head | Body> {
  /** The turn's number in its connection, once the agent took it (with conversations, once the MCP endpoint listens). */
  id: number | undefined;
  #process: AgentProcess | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => this.clientGone();
  readonly #queue: (Head | Body)[] = [];
  #queuedBytes = 0;
  #ended = false;
  #failure: unknown;
  #wake: (() => void) | undefined;

  /** @internal */
  constructor(signal: AbortSignal | undefined) {
    this.#signal = signal;
    if (signal?.aborted) this.#ended = true;
    else signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** @internal The agent took the turn as `id`. */
  attach(id: number, process: AgentProcess): void {
    this.id = id;
    this.#process = process;
  }

  /** @internal Whether the response ended (or the client left). */
  get ended(): boolean {
    return this.#ended;
  }

  /** @internal Body bytes waiting for the consumer. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** The client went away: the turn's session is cancelled and the iteration ends. */
  clientGone(): void {
    if (this.#ended) return;
    this.#queue.length = 0;
    this.#queuedBytes = 0;
    this.#finish();
    this.#process?.clientGone(this);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Head | Body, void, undefined> {
    try {
      for (;;) {
        const output = this.#queue.shift();
        if (output !== undefined) {
          if (output.type === 'body') this.#queuedBytes -= output.data.length;
          if (this.#queue.length === 0) this.#process?.pull(this);
          yield output;
          continue;
        }
        if (this.#failure !== undefined) throw this.#failure;
        if (this.#ended) return;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      this.clientGone();
    }
  }

  /** @internal One output from the connection. */
  deliver(output: Head | Body | { type: 'end' } | { type: 'stopAgent' } | { type: 'respawn' }): void {
    if (output.type === 'end') this.#finish();
    else if (output.type === 'head' || output.type === 'body') {
      this.#queue.push(output);
      if (output.type === 'body') this.#queuedBytes += output.data.length;
    }
    this.#wakeConsumer();
  }

  /** @internal The turn cannot be answered: the iteration throws `error`. */
  fail(error: unknown): void {
    if (this.#ended) return;
    this.#failure = error;
    this.#finish();
  }

  #finish(): void {
    this.#ended = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#wakeConsumer();
  }

  #wakeConsumer(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
