/**
 * `Bridge`: one request's state machine, from its body (in the {@link Dialect} of its
 * route) to the end of its HTTP response, with no I/O of its own.
 * @module
 */

import { RawBridge } from '../wasm/agentwire_js.js';
import { type Config, configJson } from './config.js';
import { AgentwireError, describe, requireBytes, requireNumber } from './errors.js';
import { convert, internalCall } from './handle.js';
import { AgentInputs } from './inputs.js';
import { requireLoaded } from './module.js';
import { type Caller, type Registry, callerArguments } from './registry.js';

/**
 * The agent run to start: spawn `argv` (`[program, ...args]`) in its own process group with
 * `env` added to the environment, write `stdin` and close it.
 */
export interface Invocation {
  /** The cursor-agent program (a path or a name looked up in `PATH`). */
  readonly program: string;
  /** Its arguments. No user-controlled text is among them: the prompt goes to stdin. */
  readonly args: readonly string[];
  /** The prompt: write it all, then close stdin. */
  readonly stdin: Uint8Array;
  /** Environment variables to set for the agent, on top of the caller's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** `[program, ...args]`. */
  readonly argv: readonly string[];
}

/** Send the response head: once, before any body. */
export interface Head {
  type: 'head';
  /** The HTTP status. */
  status: number;
  /** `text/event-stream` for a stream, `application/json` otherwise. */
  contentType: string;
  /** For errors, whether retrying may help: send it as `x-should-retry: true|false`. */
  retryable?: boolean;
}

/** Write these bytes to the response body, and flush. The array is the caller's to keep. */
export interface Body {
  type: 'body';
  data: Uint8Array;
}

/** Terminate the agent's process group now. */
export interface StopAgent {
  type: 'stopAgent';
}

/**
 * Start the agent again with {@link Bridge.invocation}, which now describes a new run (a
 * new process group; the one it replaces was reported exited), and feed its output to the
 * same bridge. Only a bridge made with {@link Bridge.inConversation} asks, at most once:
 * the agent could not resume its chat, and a fresh run gets the whole conversation before
 * anything reached the client.
 */
export interface Respawn {
  type: 'respawn';
}

/** Close the response. Nothing follows. */
export interface End {
  type: 'end';
}

/** What the adapter must do next. Narrow on `type`. */
export type BridgeOutput = Head | Body | StopAgent | Respawn | End;

/**
 * The API a request speaks, chosen from the route it came in on (never guessed from the
 * body): `chat-completions` (OpenAI Chat Completions, `POST /v1/chat/completions`),
 * `responses` (OpenAI Responses, `POST /v1/responses`, what Codex speaks) or `messages`
 * (Anthropic Messages, `POST /v1/messages`, what Claude Code speaks; its
 * `POST /v1/messages/count_tokens` is {@link countTokens}).
 */
export type Dialect = 'chat-completions' | 'responses' | 'messages';

/** Every {@link Dialect}. */
export const DIALECTS: readonly Dialect[] = Object.freeze(['chat-completions', 'responses', 'messages']);

/** Throws `invalidArgument` unless `value` is a {@link Dialect}. */
export function requireDialect(value: unknown): asserts value is Dialect {
  if (typeof value !== 'string' || !(DIALECTS as readonly string[]).includes(value)) {
    throw new AgentwireError('invalidArgument', `dialect must be one of ${DIALECTS.map((d) => `'${d}'`).join(', ')}, not ${typeof value === 'string' ? `'${value}'` : describe(value)}`);
  }
}

/** Per-request values of a {@link Bridge}; all optional. */
export interface BridgeOptions {
  /** The API of the route the request came in on (default `chat-completions`). */
  dialect?: Dialect;
  /** Settings (default: the library's defaults). */
  config?: Config;
  /** Now, on the caller's millisecond clock; every later `nowMs` is on the same clock (default 0). */
  nowMs?: number;
  /** The response's `created`, in Unix seconds (default: now). */
  created?: number;
  /** A number unique to the request, from which the response and tool-call ids derive (default: random, 63 bits). */
  idSeed?: bigint;
}

/** Per-request values of {@link Bridge.inConversation}: a bridge's, and who sends the request. */
export interface ConversationOptions extends BridgeOptions {
  /** Who sends it: the owner its sessions belong to and its conversation's ids (default: the local user, no ids). */
  caller?: Caller;
}

/** The conversation a bridge is made in, passed to the constructor under a key of its own. */
const IN_CONVERSATION = Symbol('in conversation');

interface InConversation {
  [IN_CONVERSATION]?: { registry: Registry; caller: Caller };
}

const STOP_AGENT: StopAgent = Object.freeze({ type: 'stopAgent' });
const RESPAWN: Respawn = Object.freeze({ type: 'respawn' });
const END: End = Object.freeze({ type: 'end' });
const TEXT = new TextEncoder();
const UTF8 = new TextDecoder();

/**
 * One request, from its body to its HTTP response, in any {@link Dialect}: the one its
 * route speaks (`options.dialect`).
 *
 * - getters: {@link invocation} (`undefined`: the request was rejected, spawn nothing),
 *   {@link isStream}, {@link isEnded}, {@link sessionId};
 * - inputs, each taking `nowMs`: {@link pushStdout}, {@link pushStderr},
 *   {@link agentExited}, {@link handleTimeout}, {@link clientGone}, {@link shutdown},
 *   and for a request in a conversation ({@link inConversation}) {@link endConversationTurn};
 * - outputs: {@link drain} (or {@link pollOutput}, {@link outputs}), then
 *   {@link pollTimeout}.
 *
 * **After every input, drain the outputs, then ask {@link pollTimeout} for the next
 * deadline.** Time is `nowMs` on a monotonic millisecond clock of the caller's choice
 * (`performance.now()` is fine: fractions are dropped). `agentwire/node` drives all of it
 * for a child process.
 */
export class Bridge extends AgentInputs<RawBridge> {
  #invocation: Invocation | undefined;

  constructor(body: Uint8Array | string, options: BridgeOptions = {}) {
    requireLoaded();
    let raw: RawBridge;
    const args = requestArguments(body, options);
    const conversation = (options as InConversation)[IN_CONVERSATION];
    if (conversation === undefined) {
      try {
        raw = new RawBridge(...args);
      } catch (error) {
        throw convert(error);
      }
    } else {
      const caller = callerArguments(conversation.caller);
      // The registry is borrowed for the call: a trap in it poisons the registry.
      raw = internalCall(conversation.registry, (registry) => RawBridge.inConversation(...args, registry, ...caller));
    }
    super(raw, 'bridge');
    this.#invocation = readInvocation(raw);
  }

  /**
   * Like `new Bridge(body, options)`, for a request that may continue a conversation: the
   * `registry` decides whether it resumes the cursor-agent chat that answered the
   * conversation so far (the invocation then passes `--resume` and its prompt holds only
   * what is new: the results of the chat's tool calls, then the new input) or runs fresh
   * with the whole conversation. `options.caller` says whose conversation it is.
   *
   * Give the request's place back with {@link endConversationTurn} once the response
   * ended (on every path). A resumed chat the agent cannot continue is replaced by a fresh
   * run, once, before anything reaches the client: the `respawn` output.
   */
  static inConversation(body: Uint8Array | string, registry: Registry, options: ConversationOptions = {}): Bridge {
    if (options === null || typeof options !== 'object') {
      throw new AgentwireError('invalidArgument', `options must be an object, not ${describe(options)}`);
    }
    const { caller = {}, ...rest } = options;
    const internal: BridgeOptions & InConversation = { ...rest, [IN_CONVERSATION]: { registry, caller } };
    return new Bridge(body, internal);
  }

  /**
   * The agent run to start, or `undefined` when the request was rejected (its 400, in the
   * dialect's shape, is in the outputs). After a `respawn` output, the new run.
   */
  get invocation(): Invocation | undefined {
    return this.#invocation;
  }

  // Getters.

  /** Whether the response is a stream (`text/event-stream`). */
  get isStream(): boolean {
    return this.call((raw) => raw.isStream());
  }

  /** Whether the end was handed out. */
  get isEnded(): boolean {
    return this.call((raw) => raw.isEnded());
  }

  /** The agent's session (chat) id once seen, for `--resume`. */
  get sessionId(): string | undefined {
    return this.call((raw) => raw.sessionId());
  }

  // Inputs (and those of AgentInputs: pushStdout, pushStderr, agentExited, handleTimeout, shutdown).

  /** The HTTP client hung up: stop the agent, end without writing more. */
  clientGone(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.clientGone(nowMs));
  }

  /**
   * Gives the request's place in its conversation back to `registry` (the one it was made
   * with): the chat is parked for the conversation's next request when the answer finished
   * and reached the client, and released otherwise. Call it once the response ended (or
   * the client left); earlier, it counts as a response that did not finish. Nothing for a
   * bridge not made by {@link inConversation}, and the second time.
   */
  endConversationTurn(registry: Registry, nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => internalCall(registry, (inner) => raw.endConversationTurn(inner, nowMs)));
  }

  // Outputs.

  /** Every pending output, in order (an empty array when none): call it after every input. */
  drain(): BridgeOutput[] {
    return this.#read(decodeOutputs(this.call((raw) => raw.drain())));
  }

  /** The next output, or `undefined` until the next input. */
  pollOutput(): BridgeOutput | undefined {
    return this.#read(decodeOutputs(this.call((raw) => raw.pollOutput())))[0];
  }

  /** `outputs`, after taking the new run a `respawn` describes. */
  #read(outputs: BridgeOutput[]): BridgeOutput[] {
    if (outputs.includes(RESPAWN)) this.#invocation = this.call(readInvocation);
    return outputs;
  }

  /** Drains the outputs: iterate it to the end after every input. */
  *outputs(): IterableIterator<BridgeOutput> {
    yield* this.drain();
  }

  /** When {@link handleTimeout} is next due, on the `nowMs` clock; `undefined` when nothing is scheduled. */
  pollTimeout(): number | undefined {
    return this.call((raw) => raw.pollTimeout());
  }
}

/**
 * The module's arguments for a request (`RawBridge`'s constructor, `RawAcpConnection.startTurn`):
 * `[dialect, body, config, nowMs, created, idSeed]`, each checked, the defaults filled in.
 */
export function requestArguments(
  body: Uint8Array | string,
  options: BridgeOptions,
): [Dialect, Uint8Array, string | undefined, number, number, bigint] {
  const bytes = typeof body === 'string' ? TEXT.encode(body) : body;
  requireBytes(bytes, 'body');
  if (options === null || typeof options !== 'object') {
    throw new AgentwireError('invalidArgument', `options must be an object, not ${describe(options)}`);
  }
  const { dialect = 'chat-completions', config, nowMs = 0, created = Math.floor(Date.now() / 1000), idSeed = randomSeed() } = options;
  requireDialect(dialect);
  requireNumber(nowMs, 'nowMs');
  requireNumber(created, 'created');
  if (typeof idSeed !== 'bigint' || idSeed < 0n || idSeed >= 1n << 64n) {
    throw new AgentwireError('invalidArgument', `idSeed must be a bigint from 0 to 2^64 - 1, not ${describe(idSeed)}`);
  }
  return [dialect, bytes, configJson(config), nowMs, created, idSeed];
}

function readInvocation(raw: RawBridge): Invocation | undefined {
  const json = raw.invocation();
  const stdin = raw.invocationStdin();
  if (json === undefined || stdin === undefined) return undefined;
  const parsed = JSON.parse(json) as { program: string; args: string[]; env: [string, string][] };
  return Object.freeze({
    program: parsed.program,
    args: Object.freeze(parsed.args),
    stdin,
    env: Object.freeze(Object.fromEntries(parsed.env)),
    argv: Object.freeze([parsed.program, ...parsed.args]),
  });
}

/** Reads the module's output records (`src/bridge.rs` documents them). */
export function decodeOutputs(records: Uint8Array): BridgeOutput[] {
  const outputs: BridgeOutput[] = [];
  if (records.length === 0) return outputs;
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  let at = 0;
  while (at < records.length) {
    switch (records[at]) {
      case 1: {
        const status = view.getUint16(at + 1, true);
        const retryable = records[at + 3]!;
        const length = records[at + 4]!;
        const contentType = UTF8.decode(records.subarray(at + 5, at + 5 + length));
        const head: Head = { type: 'head', status, contentType };
        if (retryable !== 0) head.retryable = retryable === 2;
        outputs.push(head);
        at += 5 + length;
        break;
      }
      case 2: {
        const length = view.getUint32(at + 1, true);
        outputs.push({ type: 'body', data: records.subarray(at + 5, at + 5 + length) });
        at += 5 + length;
        break;
      }
      case 3:
        outputs.push(STOP_AGENT);
        at += 1;
        break;
      case 4:
        outputs.push(END);
        at += 1;
        break;
      case 5:
        outputs.push(RESPAWN);
        at += 1;
        break;
      default:
        throw new Error(`agentwire: unknown output record ${records[at]}`);
    }
  }
  return outputs;
}

/** A random 63-bit seed (63 so that it survives any signed 64-bit store). */
function randomSeed(): bigint {
  const words = crypto.getRandomValues(new Uint32Array(2));
  return (BigInt(words[0]! & 0x7fffffff) << 32n) | BigInt(words[1]!);
}
