/**
 * The Model Context Protocol (MCP) side of conversations: a client's own tools offered to
 * an agent as an MCP server ({@link McpServer}), and what it shares with an
 * {@link AcpConnection}'s MCP endpoint (the settings, the HTTP request, the response's
 * outputs).
 * @module
 */

import { RawMcpServer } from '../wasm/agentwire_js.js';
import { type Dialect, requireDialect } from './bridge.js';
import { type Config, configJson } from './config.js';
import { AgentwireError, describe, requireBytes, requireNumber } from './errors.js';
import { Handle, convert } from './handle.js';
import { requireLoaded } from './module.js';

/**
 * Settings of an MCP server (`AcpConfig.mcp`, or an {@link McpServer}'s), one field per
 * field of the Rust `mcp::Config`; every field optional, left out: the library's default.
 */
export interface McpConfig {
  /** `serverInfo.name` in the `initialize` answer (default `agentwire`). */
  serverName?: string;
  /** `serverInfo.version` (default the library's version). */
  serverVersion?: string;
  /** `instructions` in the `initialize` answer (default none). */
  instructions?: string | null;
  /**
   * The interval of `: keepalive` comments on an SSE answer while a call is pending; 0
   * sends none (default 15 s: agents cut a silent answer at about 60 s, and keep one with
   * a comment every 15 s open).
   */
  keepAliveMs?: number;
  /** When a call has been pending this long, a `callLimit` event says so, once (default none). */
  callLimitMs?: number | null;
  /** Calls pending at once; one more is answered with a JSON-RPC error (default 32). */
  maxPendingCalls?: number;
  /** The largest POST body (and stdio line) accepted; a larger body is answered 413 (default 4 MiB). */
  maxBodyBytes?: number;
  /** HTTP exchanges open at once; one more is answered 503 (default 64). */
  maxExchanges?: number;
}

/**
 * One HTTP request to an MCP endpoint, as much of it as MCP reads (the server checks the
 * rest): route only the endpoint's path to it, after your own Host, Origin and secret
 * checks.
 */
export interface McpHttpRequest {
  /** The method, as sent (`POST`, `GET`, `DELETE`, …). */
  method: string;
  /** The `Accept` header (several joined with `, `). */
  accept?: string;
  /** The `Content-Type` header. */
  contentType?: string;
  /** The `Mcp-Session-Id` header. */
  sessionId?: string;
  /** The `MCP-Protocol-Version` header. */
  protocolVersion?: string;
  /** The whole body (empty for `GET` and `DELETE`; a body over `maxBodyBytes` may be cut there: it is answered 413). */
  body?: Uint8Array;
}

/** Send the response head: once, first. */
export interface McpHead {
  type: 'head';
  /** The HTTP status. */
  status: number;
  /** `Content-Type`: `application/json`, or `text/event-stream` (then also send `Cache-Control: no-cache` and flush every chunk); none for a response without a body. */
  contentType?: string;
  /** `Mcp-Session-Id` to send. */
  sessionId?: string;
  /** `Allow` to send (with 405). */
  allow?: string;
}

/** Write these bytes to the body, and flush. The array is the caller's to keep. */
export interface McpBody {
  type: 'body';
  data: Uint8Array;
}

/** End the response. Nothing follows. */
export interface McpEnd {
  type: 'end';
}

/** What an MCP exchange's response does next. Narrow on `type`. */
export type McpOutput = McpHead | McpBody | McpEnd;

/** The agent called one of the client's tools: answer it with {@link McpServer.answerCall}. */
export interface McpCall {
  type: 'call';
  /** The call's number, to answer it by. */
  call: number;
  /** The tool's index in the request's tools (and in {@link McpServer.tools}). */
  tool: number;
  /** The tool's name, as the agent sees it. */
  name: string;
  /** The client's input: a function tool's JSON arguments text, a freeform tool's raw text. */
  arguments: string;
}

/** Why a pending call ended without an answer: the agent cancelled it, the connection carrying its answer closed, the agent ended the session. */
export type McpCancelReason = 'requested' | 'disconnected' | 'sessionDeleted';

/** A pending call ended without an answer; answering it now throws. */
export interface McpCancelled {
  type: 'cancelled';
  call: number;
  reason: McpCancelReason;
  /** The agent's reason, when it gave one. */
  message?: string;
}

/** A call has been pending for `callLimitMs`: answer it before the agent gives up, if you will. */
export interface McpCallLimit {
  type: 'callLimit';
  call: number;
}

/** The agent ended the session (HTTP `DELETE`): every pending call was cancelled first. */
export interface McpClosed {
  type: 'closed';
}

/** What an {@link McpServer} tells its owner. Narrow on `type`. */
export type McpEvent = McpCall | McpCancelled | McpCallLimit | McpClosed;

/** A tool as the agent sees it. */
export interface McpTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: unknown;
}

/** Values of a new {@link McpServer}: `sessionId` is required. */
export interface McpServerOptions {
  /**
   * The session id, sent as `Mcp-Session-Id`: a random value you draw (at least 128 bits:
   * it is a credential of the session), 1 or more visible ASCII characters.
   */
  sessionId: string;
  /** The dialect of the request the tools come from (default `chat-completions`). */
  dialect?: Dialect;
  /** The request's `Config` (its limits apply to reading it). */
  config?: Config;
  /** The server's settings. */
  mcp?: McpConfig;
}

const TEXT = new TextEncoder();
const UTF8 = new TextDecoder();
const EMPTY = new Uint8Array(0);
const END: McpEnd = Object.freeze({ type: 'end' });

/**
 * An MCP server (JSON-RPC 2.0, revisions 2025-03-26, 2025-06-18 and 2025-11-25) offering
 * one agent session the client tools of a request, in the request's own terms (their
 * names, descriptions and JSON schemas), over Streamable HTTP or stdio, with no I/O of its
 * own. It answers `initialize`, `ping` and `tools/list` itself and holds each `tools/call`
 * until you answer it, for as long as that takes: its HTTP answer is then an SSE stream kept
 * busy with comments.
 *
 * - getters: {@link sessionId}, {@link protocolVersion}, {@link isInitialized},
 *   {@link isClosed}, {@link pendingCalls}, {@link tools};
 * - inputs, each taking `nowMs`: {@link handleHttp}, {@link pushStdio},
 *   {@link answerCall}, {@link exchangeGone}, {@link handleTimeout}, {@link close};
 * - outputs: {@link pollTransmit} (stdio bytes), {@link pollEvent}, {@link pollReady}
 *   and {@link drainExchange} (each exchange's response), then {@link pollTimeout}.
 *
 * **After every input, drain each of them, then ask {@link pollTimeout}.** An
 * {@link AcpConnection} with an `mcpEndpoint` makes one for each session itself.
 */
export class McpServer extends Handle<RawMcpServer> {
  constructor(request: Uint8Array | string, options: McpServerOptions) {
    requireLoaded();
    const bytes = typeof request === 'string' ? TEXT.encode(request) : request;
    requireBytes(bytes, 'request');
    if (options === null || typeof options !== 'object') {
      throw new AgentwireError('invalidArgument', `options must be an object, not ${describe(options)}`);
    }
    const { sessionId, dialect = 'chat-completions', config, mcp } = options;
    if (typeof sessionId !== 'string') throw new AgentwireError('invalidArgument', `sessionId must be a string, not ${describe(sessionId)}`);
    requireDialect(dialect);
    let raw: RawMcpServer;
    try {
      raw = new RawMcpServer(dialect, bytes, configJson(config), configJson(mcp, 'MCP config'), sessionId);
    } catch (error) {
      throw convert(error);
    }
    super(raw, 'MCP server');
  }

  // Getters.

  /** The session id, as given. */
  get sessionId(): string {
    return this.call((raw) => raw.sessionId());
  }

  /** The protocol version agreed in `initialize`; `undefined` before (and after close). */
  get protocolVersion(): string | undefined {
    return this.call((raw) => raw.protocolVersion());
  }

  /** Whether `initialize` was answered and the session is not closed. */
  get isInitialized(): boolean {
    return this.call((raw) => raw.isInitialized());
  }

  /** Whether the session ended ({@link close} or the agent's `DELETE`). */
  get isClosed(): boolean {
    return this.call((raw) => raw.isClosed());
  }

  /** Calls made and neither answered nor ended. */
  get pendingCalls(): number {
    return this.call((raw) => raw.pendingCalls());
  }

  /** The tools as the agent sees them, in the request's order. */
  get tools(): readonly McpTool[] {
    return Object.freeze(JSON.parse(this.call((raw) => raw.tools())) as McpTool[]);
  }

  // Inputs.

  /** An HTTP request to the MCP endpoint; its response comes from {@link drainExchange} under the returned number. */
  handleHttp(request: McpHttpRequest, nowMs: number): number {
    const args = mcpRequestArguments(request);
    requireNumber(nowMs, 'nowMs');
    return this.call((raw) => raw.handleHttp(...args, nowMs));
  }

  /** Bytes the agent wrote to a stdio server's stdin, in any chunking. */
  pushStdio(data: Uint8Array, nowMs: number): void {
    requireBytes(data, 'data');
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.pushStdio(data, nowMs));
  }

  /**
   * Answers the pending call `call` with what the client's tool returned: its text (or
   * texts, one content item each), and whether it failed. A call not pending (answered,
   * cancelled, dropped, never made) throws `invalidArgument`.
   */
  answerCall(call: number, content: string | readonly string[], isError: boolean, nowMs: number): void {
    requireNumber(call, 'call');
    const texts = typeof content === 'string' ? [content] : content;
    if (!Array.isArray(texts) || !texts.every((text) => typeof text === 'string')) {
      throw new AgentwireError('invalidArgument', `content must be a string or an array of strings, not ${describe(content)}`);
    }
    if (typeof isError !== 'boolean') throw new AgentwireError('invalidArgument', `isError must be a boolean, not ${describe(isError)}`);
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.answerCall(call, [...texts], isError, nowMs));
  }

  /** The agent's HTTP connection of `exchange` closed: the calls whose answers it owed are cancelled. */
  exchangeGone(exchange: number, nowMs: number): void {
    requireNumber(exchange, 'exchange');
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.exchangeGone(exchange, nowMs));
  }

  /** The deadline from {@link pollTimeout} passed (keep-alives, call limits). Early calls do nothing. */
  handleTimeout(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.handleTimeout(nowMs));
  }

  /** Ends the server from our side: open exchanges end after what they hold, pending calls are dropped, later requests are answered 404. */
  close(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.close(nowMs));
  }

  // Outputs.

  /** Bytes to write to a stdio server's stdout, or `undefined`. */
  pollTransmit(): Uint8Array | undefined {
    return this.call((raw) => raw.pollTransmit());
  }

  /** The next event, or `undefined`. */
  pollEvent(): McpEvent | undefined {
    const json = this.call((raw) => raw.pollEvent());
    return json === undefined ? undefined : (JSON.parse(json) as McpEvent);
  }

  /** An exchange that has output, each named at most once between two inputs; `undefined` when no other has any. */
  pollReady(): number | undefined {
    return this.call((raw) => raw.pollReady());
  }

  /** Every pending output of `exchange` (an empty array when none): its head, body chunks, then its end, after which it is forgotten. */
  drainExchange(exchange: number): McpOutput[] {
    requireNumber(exchange, 'exchange');
    return decodeMcpOutputs(this.call((raw) => raw.drainExchange(exchange)));
  }

  /** When {@link handleTimeout} is next due, on the `nowMs` clock; `undefined` when nothing is scheduled. */
  pollTimeout(): number | undefined {
    return this.call((raw) => raw.pollTimeout());
  }
}

/** The module's arguments for an MCP request: `[method, accept, contentType, sessionId, protocolVersion, body]`, checked. */
export function mcpRequestArguments(
  request: McpHttpRequest,
): [string, string | undefined, string | undefined, string | undefined, string | undefined, Uint8Array] {
  if (request === null || typeof request !== 'object') {
    throw new AgentwireError('invalidArgument', `request must be an object, not ${describe(request)}`);
  }
  const { method, accept, contentType, sessionId, protocolVersion, body = EMPTY } = request;
  if (typeof method !== 'string') throw new AgentwireError('invalidArgument', `request.method must be a string, not ${describe(method)}`);
  for (const [name, value] of Object.entries({ accept, contentType, sessionId, protocolVersion })) {
    if (value !== undefined && typeof value !== 'string') {
      throw new AgentwireError('invalidArgument', `request.${name} must be a string, not ${describe(value)}`);
    }
  }
  requireBytes(body, 'request.body');
  return [method, accept, contentType, sessionId, protocolVersion, body];
}

/** Reads the module's MCP output records (`src/mcp.rs` documents them). */
export function decodeMcpOutputs(records: Uint8Array): McpOutput[] {
  const outputs: McpOutput[] = [];
  if (records.length === 0) return outputs;
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  let at = 0;
  while (at < records.length) {
    switch (records[at]) {
      case 1: {
        const head: McpHead = { type: 'head', status: view.getUint16(at + 1, true) };
        at += 3;
        for (const field of ['contentType', 'sessionId', 'allow'] as const) {
          const length = records[at]!;
          if (length > 0) head[field] = UTF8.decode(records.subarray(at + 1, at + 1 + length));
          at += 1 + length;
        }
        outputs.push(head);
        break;
      }
      case 2: {
        const length = view.getUint32(at + 1, true);
        outputs.push({ type: 'body', data: records.subarray(at + 5, at + 5 + length) });
        at += 5 + length;
        break;
      }
      case 4:
        outputs.push(END);
        at += 1;
        break;
      default:
        throw new Error(`agentwire: unknown MCP output record ${records[at]}`);
    }
  }
  return outputs;
}
