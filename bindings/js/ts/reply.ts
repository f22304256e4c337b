/**
 * Replies that need no agent: the answer to `POST /v1/messages/count_tokens`
 * ({@link countTokens}) and a server's own refusals in its route's dialect
 * ({@link errorReply}).
 * @module
 */

import { countTokens as rawCountTokens, errorReply as rawErrorReply } from '../wasm/agentwire_js.js';
import { type Dialect, requireDialect } from './bridge.js';
import { type Config, configJson } from './config.js';
import { AgentwireError, describe, requireBytes } from './errors.js';
import { convert } from './handle.js';
import { requireLoaded } from './module.js';

/**
 * The class of an error reply; each has one HTTP status, and whether a client may retry
 * follows from it: `invalidRequest` 400, `authentication` 401 (no key, or the wrong one),
 * `permissionDenied` 403, `notFound` 404 (the route or the model), `methodNotAllowed` 405,
 * `requestTooLarge` 413, `unsupportedMediaType` 415 (a body not declared JSON),
 * `rateLimited` 429 (every agent slot taken; retryable), `internal` 500, `agentFailed` 502
 * (retryable), `unavailable` 503 (shutting down; retryable), `timeout` 504 (retryable),
 * `usageLimit` 429 (the account's usage limit or quota is used up; not retryable).
 */
export type ErrorReplyKind =
  | 'invalidRequest'
  | 'authentication'
  | 'permissionDenied'
  | 'notFound'
  | 'methodNotAllowed'
  | 'requestTooLarge'
  | 'unsupportedMediaType'
  | 'rateLimited'
  | 'internal'
  | 'agentFailed'
  | 'unavailable'
  | 'timeout'
  | 'usageLimit';

/** A whole HTTP reply: send `status` with `headers`, then `body`. */
export interface Reply {
  /** The HTTP status. */
  readonly status: number;
  /** Whether retrying the request may help: sent as `x-should-retry`. */
  readonly retryable: boolean;
  /** `content-type` (`application/json`) and `x-should-retry`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body. The array is the caller's to keep. */
  readonly body: Uint8Array;
}

const TEXT = new TextEncoder();
/** In a `u` pattern a surrogate pair is one code point, so only a lone surrogate matches. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The reply to a `POST /v1/messages/count_tokens` body (any query string), with no agent:
 * a 400 naming the field (413 over `config.requestLimits.maxBodyBytes`) when the body is not
 * a valid count_tokens request, else a 404 `not_found_error` saying tokens cannot be
 * counted here — cursor-agent's own prompt and tokenizer are not visible, and each response
 * reports its real `usage`. Never a 5xx and never retryable: Claude Code then shows its own
 * estimate, and the Anthropic SDKs raise a not-found error once.
 */
export function countTokens(body: Uint8Array | string, options: { config?: Config } = {}): Reply {
  requireLoaded();
  const bytes = typeof body === 'string' ? TEXT.encode(body) : body;
  requireBytes(bytes, 'body');
  return replyOf(() => rawCountTokens(bytes, configJson(options.config)));
}

/**
 * A server's own refusal on a route of `dialect`: that dialect's error body for an error of
 * class `kind` saying `message` (clients show it: say what to do). For what a server
 * decides before any {@link Bridge} exists: not authenticated (401), a forbidden origin
 * (403), an unknown route (404), a wrong method (405), a body too large (413) or not JSON
 * (415), every agent slot taken (429), shutting down (503). The OpenAI dialects' `code` is
 * the class's own (`invalid_api_key`, `not_found`, `rate_limit_exceeded`, …).
 */
export function errorReply(dialect: Dialect, kind: ErrorReplyKind, message: string): Reply {
  requireLoaded();
  requireDialect(dialect);
  if (typeof kind !== 'string') throw new AgentwireError('invalidArgument', `kind must be a string, not ${describe(kind)}`);
  if (typeof message !== 'string') throw new AgentwireError('invalidArgument', `message must be a string, not ${describe(message)}`);
  // Crossing into the module would turn a lone surrogate into U+FFFD without a word.
  if (LONE_SURROGATE.test(message)) throw new AgentwireError('invalidInput', 'message is not Unicode text: it holds a lone surrogate');
  return replyOf(() => rawErrorReply(dialect, kind, message));
}

/** Reads the module's reply record (`src/reply.rs` documents it). */
function replyOf(make: () => Uint8Array): Reply {
  let record: Uint8Array;
  try {
    record = make();
  } catch (error) {
    throw convert(error);
  }
  const status = record[0]! | (record[1]! << 8);
  const retryable = record[2] === 1;
  return Object.freeze({
    status,
    retryable,
    headers: Object.freeze({ 'content-type': 'application/json', 'x-should-retry': String(retryable) }),
    body: record.subarray(3),
  });
}
