/**
 * `AcpConnection`: one warm agent process speaking the Agent Client Protocol (JSON-RPC 2.0
 * over its stdio: `gemini --acp`, `claude-agent-acp`, `codex-acp`, `cursor-agent acp`)
 * serving many requests, each a turn on a fresh ACP session, with no I/O of its own.
 * @module
 */

import { RawAcpConnection } from '../wasm/agentwire_js.js';
import { type Bridge, type BridgeOptions, type BridgeOutput, type Dialect, decodeOutputs, requestArguments } from './bridge.js';
import { configJson } from './config.js';
import { AgentwireError, describe, requireBytes, requireNumber } from './errors.js';
import { convert } from './handle.js';
import { AgentInputs } from './inputs.js';
import { type McpConfig, type McpHttpRequest, type McpOutput, decodeMcpOutputs, mcpRequestArguments } from './mcp.js';
import { requireLoaded } from './module.js';
import { type Caller, type RegistryConfig, type RegistryStats, callerArguments } from './registry.js';

/**
 * Settings of an {@link AcpConnection}, one field per field of the Rust `acp::AcpConfig`. A
 * plain object: every field is optional and a field left out keeps the library's default.
 * Durations are milliseconds, sizes bytes. A value of the wrong type, `null`, an unknown
 * field, a negative or fractional count, or `0` prompt slots throws `invalidArgument`.
 */
export interface AcpConfig {
  /** The working directory sessions are created in (`session/new`'s `cwd`; ACP wants an absolute path). Default `/`. */
  cwd?: string;
  /** `clientInfo.name` in `initialize` (default `agentwire`). */
  clientName?: string;
  /** `clientInfo.version` in `initialize` (default the library's version). */
  clientVersion?: string;
  /**
   * How `session/request_permission` is answered, chosen by the offered option's kind
   * (default `allowOnce`; `allow_always` is never chosen: some agents write it into the
   * user's global configuration).
   */
  permission?: AcpPermission;
  /**
   * Whether the agent's own tools (its shell, file edits, web search, ...) are offered to
   * its model; the client's tools, given as an MCP server, are offered either way. `keep`
   * (the default): kept, except in sessions given the client's tools by an agent that turns
   * them off per session (claude-agent-acp). `off`: off in every session, per session where
   * the agent takes that (claude-agent-acp) and at launch where only its configuration can
   * (codex-acp, Gemini CLI): start the agent as {@link launchWithoutNativeTools} says (the
   * Node driver's `AcpAgent` does, given `nativeTools: 'off'`).
   */
  nativeTools?: NativeTools;
  /**
   * How other agent requests (`fs/*`, `terminal/*`, extension methods) are answered:
   * `methodNotFound` (the default, JSON-RPC `-32601`), or `{ answer }`, this fixed `result`.
   */
  extensions?: 'methodNotFound' | { answer: AcpJson };
  /** Fresh sessions kept ready ahead of need, to hide `session/new`'s latency (default 1). */
  poolSize?: number;
  /** Prompts running at once; more wait in a queue (default 4, at least 1). */
  maxConcurrentPrompts?: number;
  /** How long a turn may wait in that queue before it fails with 503 (default 30 s). */
  queueTimeoutMs?: number;
  /** Deadline for the `initialize` answer (default 10 s). */
  initializeTimeoutMs?: number;
  /** Deadline for a `session/new` answer (default 30 s). */
  newSessionTimeoutMs?: number;
  /** Deadline for the answer to setting a session's model (default 10 s). */
  setModelTimeoutMs?: number;
  /** How long a cancelled prompt may take to end before its session is given up (default 10 s). */
  cancelTimeoutMs?: number;
  /**
   * Response bytes a turn may hold that the caller has not taken yet; a turn over it is
   * cancelled with a clear error, so that one slow client never stalls the agent's stdout,
   * which every session shares (default 8 MiB).
   */
  turnOutputBudget?: number;
  /** Model names that mean "the agent's own default" when the agent does not list them (default `auto`, `default`). */
  defaultModelNames?: string[];
  /** The longest agent stdout line accepted (default 64 MiB; at least 1). */
  maxLineLen?: number;
  /** Bytes of the agent's stderr kept for failure messages (default 4 KiB). */
  stderrTailBytes?: number;
  /**
   * Where you serve the MCP endpoint of client-tool sessions, on loopback: the URL a
   * session's path is appended to (`http://127.0.0.1:PORT/mcp/`). With it, a conversation
   * turn's client tools are given to the agent as an MCP server of its session's own
   * ({@link AcpConnection.handleMcp}); without it (the default), a request with client
   * tools is refused (400 naming `tools`).
   */
  mcpEndpoint?: string | null;
  /** The MCP server's name in `session/new`, which the agent puts in the tool names its model sees (`mcp__client__read`; default `client`). */
  mcpServerName?: string;
  /** The MCP servers' settings (keep-alive, limits). */
  mcp?: McpConfig;
  /**
   * Which parked session a conversation's next request continues
   * ({@link AcpConnection.startConversationTurn}): the registry's defaults, but at most 16
   * sessions parked (8 per owner), as the agent keeps each.
   */
  conversations?: RegistryConfig;
}

/** `AcpConfig.permission`: select the option of kind `allow_once` or `reject_once`. */
export type AcpPermission = 'allowOnce' | 'rejectOnce';

/** Every {@link AcpPermission}. */
const ACP_PERMISSIONS: readonly AcpPermission[] = Object.freeze(['allowOnce', 'rejectOnce']);

/** `AcpConfig.nativeTools`: the agent's own tools kept, or off. */
export type NativeTools = 'keep' | 'off';

/** Every {@link NativeTools}. */
const NATIVE_TOOLS: readonly NativeTools[] = Object.freeze(['keep', 'off']);

/** A JSON value: what `AcpConfig.extensions`' `answer` may hold. */
export type AcpJson = string | number | boolean | null | AcpJson[] | { [key: string]: AcpJson };

/** Values of a new {@link AcpConnection}; all optional. */
export interface AcpConnectionOptions {
  /** Settings (default: the library's defaults). */
  config?: AcpConfig;
  /** Now, on the caller's millisecond clock; every later `nowMs` is on the same clock (default 0). */
  nowMs?: number;
}

/**
 * Per-turn values of {@link AcpConnection.startTurn}: a {@link Bridge}'s (the dialect of the
 * route, the request's `Config`, now, `created`, the id seed); all optional.
 */
export type TurnOptions = BridgeOptions;

/**
 * Kill the agent's process group and start a new process with a new
 * {@link AcpConnection}: this one serves nothing more.
 */
export interface AcpRestart {
  type: 'restart';
  /** Why, for logs. */
  reason: string;
}

/** A connection-level decision. Narrow on `type`. */
export type AcpDecision = AcpRestart;

/**
 * What {@link AcpConnection.handleMcp} made of a request to the MCP endpoint: an exchange,
 * whose response comes from {@link AcpConnection.drainMcp}; or a refusal to answer with its
 * status and no body (404: no session's server has this path; 401: its secret was not
 * presented).
 */
export type McpAdmission = { type: 'exchange'; exchange: number } | { type: 'refused'; status: number };

/**
 * One ACP agent process serving many requests, each a turn (a number, unique within the
 * connection, rising in the order turns were started) on a fresh session, through the same
 * policy and dialect encoders as a {@link Bridge}.
 *
 * - getters: {@link isReady}, {@link isDead}, {@link activeTurns}, {@link models},
 *   {@link currentModel}, {@link malformedLines}, {@link parkedSessions},
 *   {@link conversationStats}, {@link hasMcpServer};
 * - inputs, each taking `nowMs`: {@link startTurn}, {@link startConversationTurn},
 *   {@link handleMcp}, {@link mcpExchangeGone}, {@link pushStdout}, {@link pushStderr},
 *   {@link agentExited}, {@link handleTimeout}, {@link clientGone}, {@link shutdown};
 * - outputs: {@link pollTransmit} (bytes for the agent's stdin), {@link pollReady} (a turn
 *   that has output), {@link pollOutput} / {@link drain} (a turn's outputs, the objects a
 *   `Bridge` gives, never `stopAgent`), {@link pollMcpReady} and {@link pollMcpOutput} /
 *   {@link drainMcp} (an MCP exchange's response), {@link pollDecision}, then
 *   {@link pollTimeout}.
 *
 * **After every input, write every {@link pollTransmit} to the agent's stdin, act on every
 * {@link pollDecision}, drain every turn {@link pollReady} names and every MCP exchange
 * {@link pollMcpReady} names, end the response of every open exchange whose server is gone
 * ({@link hasMcpServer}), then ask {@link pollTimeout} for the next deadline.** Spawn the
 * agent in its own process group: a restart kills the group.
 *
 * Conversations: {@link startConversationTurn} resumes the session that answered the
 * conversation so far with only what is new, or starts fresh; with `config.mcpEndpoint`,
 * the request's client tools reach the agent as an MCP server of the session's own, served
 * at that endpoint by you ({@link handleMcp}), whose calls end the turn's response with
 * the client's tool calls while the agent waits inside them for the next request's results.
 */
export class AcpConnection extends AgentInputs<RawAcpConnection> {
  /** A connection to a just-spawned agent: `initialize` is the first {@link pollTransmit}. */
  constructor(options: AcpConnectionOptions = {}) {
    requireLoaded();
    if (options === null || typeof options !== 'object') {
      throw new AgentwireError('invalidArgument', `options must be an object, not ${describe(options)}`);
    }
    const { config, nowMs = 0 } = options;
    requireNumber(nowMs, 'nowMs');
    const json = configJson(config, 'ACP config');
    if (config !== undefined) checkAcpConfig(config);
    let raw: RawAcpConnection;
    try {
      raw = new RawAcpConnection(json, nowMs);
    } catch (error) {
      throw convert(error);
    }
    super(raw, 'ACP connection');
  }

  // Getters.

  /** Whether the handshake succeeded and the agent is serving. */
  get isReady(): boolean {
    return this.call((raw) => raw.isReady());
  }

  /** Whether the connection serves nothing more (handshake failed, agent exited, or a restart was decided). */
  get isDead(): boolean {
    return this.call((raw) => raw.isDead());
  }

  /** Turns whose response has not ended yet. */
  get activeTurns(): number {
    return this.call((raw) => raw.activeTurns());
  }

  /**
   * The models the agent offers, from its latest `session/new` answer, in its order
   * (`/v1/models`); `undefined` until a session was created. An empty list: the agent
   * names none, and only its default is served.
   */
  get models(): readonly string[] | undefined {
    const models = this.call((raw) => raw.models());
    return models === undefined ? undefined : Object.freeze(models);
  }

  /** The model a fresh session uses unless told otherwise, when the agent says. */
  get currentModel(): string | undefined {
    return this.call((raw) => raw.currentModel());
  }

  /** Agent stdout lines that were not JSON-RPC (ignored). */
  get malformedLines(): number {
    return this.call((raw) => raw.malformedLines());
  }

  /** Sessions parked, waiting for their conversation's next request. */
  get parkedSessions(): number {
    return this.call((raw) => raw.parkedSessions());
  }

  /** What the conversations' registry has done so far. */
  get conversationStats(): RegistryStats {
    return JSON.parse(this.call((raw) => raw.conversationStats())) as RegistryStats;
  }

  /**
   * Whether the MCP server of `exchange` is still there. `false` (also for an exchange
   * whose end was handed out, or an unknown one): its session ended and nothing more comes
   * for it: end its response.
   */
  hasMcpServer(exchange: number): boolean {
    requireNumber(exchange, 'exchange');
    return this.call((raw) => raw.hasMcpServer(exchange));
  }

  // Inputs (and those of AgentInputs: pushStdout, pushStderr, agentExited, handleTimeout, shutdown).

  /**
   * A client request (its body, in the {@link Dialect} of its route): validated and
   * answered like a new {@link Bridge}, then queued for a session. Returns the turn; its
   * outputs come from {@link pollOutput}. A request the connection cannot serve (a 400,
   * client `tools`, an unknown model, a dead connection) is answered in the turn's
   * outputs, never thrown.
   */
  startTurn(body: Uint8Array | string, options: TurnOptions = {}): number {
    const raw = this.raw();
    const args = requestArguments(body, options);
    try {
      return raw.startTurn(...args);
    } catch (error) {
      throw this.failure(error);
    }
  }

  /**
   * A client request in a conversation: like {@link startTurn}, but it resumes the parked
   * session holding its conversation so far when there is one (answering the calls it waits
   * for with the request's tool results, prompting it with the new input), and with
   * `config.mcpEndpoint` gives the request's client tools to the agent as an MCP server.
   * `caller` says whose conversation it is; `entropy` is 32 bytes drawn at random
   * (`crypto.getRandomValues`), from which a session made for the turn takes its MCP
   * server's path and secret.
   */
  startConversationTurn(body: Uint8Array | string, options: TurnOptions, caller: Caller, entropy: Uint8Array): number {
    const raw = this.raw();
    const args = requestArguments(body, options);
    const who = callerArguments(caller);
    requireBytes(entropy, 'entropy');
    try {
      return raw.startConversationTurn(...args, ...who, entropy);
    } catch (error) {
      throw this.failure(error);
    }
  }

  /**
   * A request to the MCP endpoint: `token` is the path segment after `config.mcpEndpoint`'s
   * path, `authorization` the `Authorization` header's value. Check Host and Origin first.
   */
  handleMcp(token: string, authorization: string | Uint8Array | undefined, request: McpHttpRequest, nowMs: number): McpAdmission {
    if (typeof token !== 'string') throw new AgentwireError('invalidArgument', `token must be a string, not ${describe(token)}`);
    const auth = typeof authorization === 'string' ? TEXT.encode(authorization) : authorization;
    if (auth !== undefined) requireBytes(auth, 'authorization');
    const args = mcpRequestArguments(request);
    requireNumber(nowMs, 'nowMs');
    const [method, accept, contentType, sessionId, protocolVersion, body] = args;
    const made = this.call((raw) => raw.handleMcp(token, auth, method, accept, contentType, sessionId, protocolVersion, body, nowMs));
    return made < 0 ? { type: 'refused', status: -made } : { type: 'exchange', exchange: made };
  }

  /** The agent's HTTP connection of `exchange` closed (the calls whose answers it owed are cancelled). */
  mcpExchangeGone(exchange: number, nowMs: number): void {
    requireNumber(exchange, 'exchange');
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.mcpExchangeGone(exchange, nowMs));
  }

  /**
   * The HTTP client of `turn` hung up: its prompt is cancelled (`session/cancel`; the agent
   * lives on) and nothing more is written for it. An unknown or ended turn: nothing happens.
   */
  clientGone(turn: number, nowMs: number): void {
    requireTurn(turn);
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.clientGone(turn, nowMs));
  }

  // Outputs.

  /** Bytes to write to the agent's stdin, or `undefined`. The array is the caller's to keep. */
  pollTransmit(): Uint8Array | undefined {
    return this.call((raw) => raw.pollTransmit());
  }

  /**
   * A turn that has output, each named at most once between two inputs, in the order turns
   * were started; `undefined` when no other turn has any. It spares draining every turn
   * after each input.
   */
  pollReady(): number | undefined {
    return this.call((raw) => raw.pollReady());
  }

  /**
   * The next output of `turn` (the objects a {@link Bridge} gives; never `stopAgent`: a
   * turn that must stop becomes a cancelled session), or `undefined` until the next input,
   * and for ever after `end` or for an unknown turn.
   */
  pollOutput(turn: number): BridgeOutput | undefined {
    requireTurn(turn);
    return decodeOutputs(this.call((raw) => raw.pollOutput(turn)))[0];
  }

  /** Every pending output of `turn`, in order (an empty array when none). */
  drain(turn: number): BridgeOutput[] {
    requireTurn(turn);
    return decodeOutputs(this.call((raw) => raw.drainTurn(turn)));
  }

  /** An MCP exchange that has output, each named at most once between two inputs; `undefined` when no other has any. */
  pollMcpReady(): number | undefined {
    return this.call((raw) => raw.pollMcpReady());
  }

  /** The next output of MCP exchange `exchange`, or `undefined` until the next input (and for ever after its end). */
  pollMcpOutput(exchange: number): McpOutput | undefined {
    requireNumber(exchange, 'exchange');
    return decodeMcpOutputs(this.call((raw) => raw.pollMcpOutput(exchange)))[0];
  }

  /** Every pending output of MCP exchange `exchange`, in order (an empty array when none). */
  drainMcp(exchange: number): McpOutput[] {
    requireNumber(exchange, 'exchange');
    return decodeMcpOutputs(this.call((raw) => raw.drainMcp(exchange)));
  }

  /** The next connection-level decision, or `undefined`. */
  pollDecision(): AcpDecision | undefined {
    const reason = this.call((raw) => raw.pollDecision());
    return reason === undefined ? undefined : { type: 'restart', reason };
  }

  /** When {@link handleTimeout} is next due, on the `nowMs` clock; `undefined` when nothing is scheduled. */
  pollTimeout(): number | undefined {
    return this.call((raw) => raw.pollTimeout());
  }
}

const TEXT = new TextEncoder();

/** Throws `invalidArgument` unless `turn` could be a turn: a whole number, not negative. */
function requireTurn(turn: unknown): asserts turn is number {
  if (typeof turn !== 'number' || !Number.isSafeInteger(turn) || turn < 0) {
    throw new AgentwireError('invalidArgument', `turn must be a turn number from startTurn, not ${typeof turn === 'number' ? turn : describe(turn)}`);
  }
}

/** What each field of an {@link AcpConfig} holds. */
const ACP_FIELDS: Readonly<Record<keyof AcpConfig, 'text' | 'textOrNull' | 'object' | 'count' | 'names' | 'permission' | 'nativeTools' | 'extensions'>> = {
  cwd: 'text',
  clientName: 'text',
  clientVersion: 'text',
  permission: 'permission',
  nativeTools: 'nativeTools',
  extensions: 'extensions',
  poolSize: 'count',
  maxConcurrentPrompts: 'count',
  queueTimeoutMs: 'count',
  initializeTimeoutMs: 'count',
  newSessionTimeoutMs: 'count',
  setModelTimeoutMs: 'count',
  cancelTimeoutMs: 'count',
  turnOutputBudget: 'count',
  defaultModelNames: 'names',
  maxLineLen: 'count',
  stderrTailBytes: 'count',
  mcpEndpoint: 'textOrNull',
  mcpServerName: 'text',
  mcp: 'object',
  conversations: 'object',
};

/**
 * Checks each field of `config` against its type, so that the error names the field and
 * what it takes (the module checks again, and checks what only it knows: unknown fields,
 * zero prompt slots).
 */
function checkAcpConfig(config: object): void {
  for (const [field, value] of Object.entries(config)) {
    const kind = ACP_FIELDS[field as keyof AcpConfig];
    if (kind === undefined || value === undefined) continue;
    const fail = (takes: string) => {
      const shown = typeof value === 'string' ? `'${value}'` : typeof value === 'number' ? String(value) : describe(value);
      return new AgentwireError('invalidArgument', `invalid ACP config: ${field} must be ${takes}, not ${shown}`);
    };
    switch (kind) {
      case 'text':
        if (typeof value !== 'string') throw fail('a string');
        break;
      case 'textOrNull':
        if (typeof value !== 'string' && value !== null) throw fail('a string or null');
        break;
      case 'object':
        // Its fields are checked by the module, which names them.
        if (value === null || typeof value !== 'object' || Array.isArray(value)) throw fail('an object');
        break;
      case 'count':
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw fail('a whole number, 0 or more');
        break;
      case 'names':
        if (!Array.isArray(value) || !value.every((name) => typeof name === 'string')) throw fail('an array of strings');
        break;
      case 'permission':
        if (!(ACP_PERMISSIONS as readonly unknown[]).includes(value)) throw fail(ACP_PERMISSIONS.map((p) => `'${p}'`).join(' or '));
        break;
      case 'nativeTools':
        if (!(NATIVE_TOOLS as readonly unknown[]).includes(value)) throw fail(NATIVE_TOOLS.map((p) => `'${p}'`).join(' or '));
        break;
      case 'extensions':
        if (value !== 'methodNotFound' && !(value !== null && typeof value === 'object' && 'answer' in value && Object.keys(value).length === 1)) {
          throw fail("'methodNotFound' or { answer }");
        }
        break;
    }
  }
}
