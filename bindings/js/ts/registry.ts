/**
 * `Registry`: which agent session a request continues. Agent clients hold conversations
 * (many requests whose histories extend one another, with tool rounds between them); a
 * session that answered one request already holds that history, so the next request of the
 * same conversation needs to give it only what is new.
 * @module
 */

import { RawRegistry } from '../wasm/agentwire_js.js';
import { configJson } from './config.js';
import { AgentwireError, describe, requireNumber } from './errors.js';
import { Handle, convert } from './handle.js';
import { requireLoaded } from './module.js';

/**
 * Settings of a {@link Registry}, one field per field of the Rust `registry::RegistryConfig`.
 * A plain object: every field is optional and a field left out keeps the library's default.
 * A value of the wrong type, `null`, an unknown field, or a negative or fractional count
 * throws `invalidArgument`.
 */
export interface RegistryConfig {
  /** Whether requests may resume parked sessions at all; `false`: every request is fresh and nothing is parked (default `true`). */
  enabled?: boolean;
  /**
   * How long a parked session waits for its conversation's next request (default 30
   * minutes: a client's tool may run for ten, and a person answering a permission prompt
   * longer).
   */
  ttlMs?: number;
  /** Parked sessions in all; the least recently used goes first (default 256). */
  maxParked?: number;
  /** Parked sessions of one owner (the key a request authenticated with); that owner's least recently used goes first (default 32). */
  maxParkedPerOwner?: number;
}

/**
 * Why a request started a fresh agent session instead of resuming a parked one:
 * conversations are off; no parked session holds a prefix of its conversation (a new
 * conversation, an edited, compacted or pruned history, a branch, another model or tool
 * set, a side request, an expired or evicted session, a restart); the session holding it
 * is busy; the request adds nothing new (a retry, a regeneration); it leaves calls the
 * session waits for unanswered; it answers a call the session does not wait for; it adds
 * an assistant message the agent did not write.
 */
export type FreshReason = 'disabled' | 'noSession' | 'busy' | 'nothingNew' | 'unansweredCalls' | 'unknownResult' | 'foreignAnswer';

/**
 * Why a parked session was let go: its time to live passed, room was needed, a session
 * with the same transcript was parked after it, a request that held it did not end where
 * its client's conversation is, or {@link Registry.clear}.
 */
export type ReleaseReason = 'expired' | 'evicted' | 'replaced' | 'failed' | 'cleared';

/** What a {@link Registry} has done, for a server's health report. */
export interface RegistryStats {
  /** Requests that resumed a parked session. */
  readonly resumed: number;
  /** Requests that started a fresh session, by reason (every reason present). */
  readonly fresh: Readonly<Record<FreshReason, number>>;
  /** Requests refused (`previous_response_id` of a response that is not here). */
  readonly refused: number;
  /** Sessions let go because their time to live passed. */
  readonly expired: number;
  /** Sessions let go because room was needed. */
  readonly evicted: number;
  /** Sessions let go because their request failed, or another took their place. */
  readonly dropped: number;
}

/** A parked agent session the registry let go: end it (stop its process, close its ACP session). */
export interface Released {
  /** The agent's own id of the session (an ACP session id, cursor-agent's chat id). */
  readonly agentSession: string;
  /** Why. */
  readonly reason: ReleaseReason;
}

/** The ids a request carries for its conversation; the strongest present is used, in this order. */
export interface ConversationKeys {
  /** A key the embedding program gives the conversation. */
  caller?: string;
  /** A client's session id header (Claude Code's `X-Claude-Code-Session-Id`). */
  clientSession?: string;
  /** A client's agent id within that session (Claude Code's `X-Claude-Code-Agent-Id`, sent by subagents). */
  clientAgent?: string;
}

/**
 * Who sends a request that may continue a conversation: the owner its sessions belong to
 * (a session is only ever resumed by a request of its owner) and its conversation's ids.
 */
export interface Caller {
  /** The key the request authenticated with (its bytes; a string as UTF-8). Left out: the local user, for a server that takes no key. */
  ownerKey?: Uint8Array | string;
  /** The conversation's ids. */
  keys?: ConversationKeys;
}

/**
 * The parked sessions of one agent transport, and the decision, for each request, whether
 * it continues one of them. Requests reach it through {@link Bridge.inConversation} (which
 * decides) and {@link Bridge.endConversationTurn} (which parks or releases); an ACP
 * connection keeps its own.
 *
 * - getters: {@link parked}, {@link busy}, {@link stats}, {@link config};
 * - inputs, each taking `nowMs`: {@link handleTimeout}, {@link clear};
 * - outputs: {@link pollReleased} (agent sessions to end), then {@link pollTimeout}.
 *
 * **After every input (a bridge made or ended with it too), drain {@link pollReleased},
 * then ask {@link pollTimeout} for the next deadline.**
 */
export class Registry extends Handle<RawRegistry> {
  constructor(config?: RegistryConfig) {
    requireLoaded();
    const json = configJson(config, 'registry config');
    let raw: RawRegistry;
    try {
      raw = new RawRegistry(json);
    } catch (error) {
      throw convert(error);
    }
    super(raw, 'registry');
  }

  // Getters.

  /** Sessions parked and waiting for their next request. */
  get parked(): number {
    return this.call((raw) => raw.parked());
  }

  /** Sessions held by a request. */
  get busy(): number {
    return this.call((raw) => raw.busy());
  }

  /** What it has done so far. */
  get stats(): RegistryStats {
    return JSON.parse(this.call((raw) => raw.stats())) as RegistryStats;
  }

  /** Its settings, every field present. */
  get config(): Required<RegistryConfig> {
    return JSON.parse(this.call((raw) => raw.config())) as Required<RegistryConfig>;
  }

  // Inputs.

  /** The deadline from {@link pollTimeout} passed: sessions idle for `ttlMs` are released. Early calls do nothing. */
  handleTimeout(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.handleTimeout(nowMs));
  }

  /** Releases every parked session and forgets the busy ones (a server shutting down, or conversations turned off). */
  clear(nowMs: number): void {
    requireNumber(nowMs, 'nowMs');
    this.call((raw) => raw.clear(nowMs));
  }

  // Outputs.

  /** The next agent session to end, or `undefined`. */
  pollReleased(): Released | undefined {
    const json = this.call((raw) => raw.pollReleased());
    return json === undefined ? undefined : (JSON.parse(json) as Released);
  }

  /** When {@link handleTimeout} is next due, on the `nowMs` clock; `undefined` when no session is parked. */
  pollTimeout(): number | undefined {
    return this.call((raw) => raw.pollTimeout());
  }
}

const TEXT = new TextEncoder();

/**
 * The module's arguments for `caller` (`RawBridge.inConversation`,
 * `RawAcpConnection.startConversationTurn`): `[ownerKey, caller, clientSession, clientAgent]`,
 * each checked.
 */
export function callerArguments(caller: Caller): [Uint8Array | undefined, string | undefined, string | undefined, string | undefined] {
  if (caller === null || typeof caller !== 'object') {
    throw new AgentwireError('invalidArgument', `caller must be an object, not ${describe(caller)}`);
  }
  const { ownerKey, keys = {} } = caller;
  let key: Uint8Array | undefined;
  if (typeof ownerKey === 'string') key = TEXT.encode(ownerKey);
  else if (ownerKey instanceof Uint8Array || ownerKey === undefined) key = ownerKey;
  else throw new AgentwireError('invalidArgument', `caller.ownerKey must be a Uint8Array or a string, not ${describe(ownerKey)}`);
  if (keys === null || typeof keys !== 'object') {
    throw new AgentwireError('invalidArgument', `caller.keys must be an object, not ${describe(keys)}`);
  }
  const text = (name: keyof ConversationKeys): string | undefined => {
    const value = keys[name];
    if (value === undefined || typeof value === 'string') return value;
    throw new AgentwireError('invalidArgument', `caller.keys.${name} must be a string, not ${describe(value)}`);
  };
  return [key, text('caller'), text('clientSession'), text('clientAgent')];
}
