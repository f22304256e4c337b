/**
 * `createAgentFetch`: a WHATWG `fetch` that answers the OpenAI Chat Completions and Responses
 * APIs and the Anthropic Messages API in-process, with cursor-agent (or a warm ACP agent, or
 * the demo transcript) behind it: no server, no port.
 * @module
 */

import type { Body, Dialect, Head } from '../bridge.js';
import type { Caller, RegistryConfig } from '../registry.js';
import { type Reply, countTokens, errorReply } from '../reply.js';
import type { AcpAgent } from './acp.js';
import { Conversations, callerOf } from './conversations.js';
import { AgentRun, type AgentRunOptions } from './run.js';

/**
 * Settings of {@link createAgentFetch}: those of an {@link AgentRun}, for every request (the
 * route gives the dialect), and two of its own.
 */
export interface AgentFetchOptions extends Omit<AgentRunOptions, 'signal' | 'created' | 'idSeed' | 'dialect' | 'conversations' | 'caller'> {
  /**
   * Conversations on the cursor-agent path (default on): a request whose history extends
   * an answer this fetch gave resumes that chat (`--resume`, with a prompt holding only
   * the new tool results and input) instead of starting over with the whole history.
   * `false` turns them off (every request runs fresh); a {@link RegistryConfig} sets their
   * limits (`ttlMs`, `maxParked`, …); a {@link Conversations} is used as it is (one you
   * read the counters of). An {@link AcpAgent} has its own (its `conversations` option).
   */
  conversations?: boolean | RegistryConfig | Conversations;
  /**
   * Serve every request as a turn of this warm ACP agent instead of a cursor-agent process
   * per request (`config` is then each turn's; the agent's own settings are the
   * {@link AcpAgent}'s). The caller closes the agent.
   */
  acpAgent?: AcpAgent;
  /**
   * How a failure no retry can help (`x-should-retry: false`: a misconfigured or missing
   * agent, an exhausted usage limit) reaches clients that decide by the status alone.
   * `'header'` (the default) keeps its true status: 500 for a misconfiguration, 429 for a
   * usage limit. `'status'` answers such a failure of status 408, 409, 429 or 5xx as a 400
   * whose body says `invalid_request_error` (message and code unchanged), so that the AI
   * SDK, which retries those statuses whatever the header says, and OpenCode, which also
   * retries on words such as `server_error` in the body, make one attempt.
   */
  retryAdvice?: 'header' | 'status';
}

/**
 * A route: the end of a URL's path (any base URL works; the query string is not part of
 * it), the one method it answers, what it does, and the dialect of its errors.
 */
interface Route {
  readonly path: RegExp;
  readonly method: 'POST' | 'HEAD';
  /** `agent`: an agent run of the dialect; `countTokens`: {@link countTokens}, no agent; `hello`: 200, empty. */
  readonly serves: 'agent' | 'countTokens' | 'hello';
  readonly dialect: Dialect;
}

/** The routes answered; the first whose path matches is the request's. */
const ROUTES: readonly Route[] = [
  { path: /\/chat\/completions\/?$/, method: 'POST', serves: 'agent', dialect: 'chat-completions' },
  { path: /\/responses\/?$/, method: 'POST', serves: 'agent', dialect: 'responses' },
  { path: /\/messages\/count_tokens\/?$/, method: 'POST', serves: 'countTokens', dialect: 'messages' },
  { path: /\/messages\/?$/, method: 'POST', serves: 'agent', dialect: 'messages' },
  // Claude Code's check that the server is up, before its first request.
  { path: /\/api\/hello\/?$/, method: 'HEAD', serves: 'hello', dialect: 'messages' },
];

const SERVED = 'POST …/chat/completions, POST …/responses, POST …/messages, POST …/messages/count_tokens or HEAD …/api/hello';

/**
 * A `fetch` for OpenAI and Anthropic clients that answers, in this process, each
 * `POST …/chat/completions` (OpenAI Chat Completions), `POST …/responses` (OpenAI
 * Responses) and `POST …/messages` (Anthropic Messages) through an {@link AgentRun} of that
 * dialect; `POST …/messages/count_tokens` with {@link countTokens}, never an agent; and
 * `HEAD …/api/hello` with an empty 200. Give it to a client as its custom fetch, with any
 * base URL (nothing is contacted); any query string is accepted (Claude Code sends
 * `?beta=true`). No key is checked: nothing outside the process can reach it.
 *
 * ```ts
 * const fetch = createAgentFetch();
 * const cursor = createOpenAICompatible({ name: 'cursor', baseURL: 'http://agentwire/v1', fetch });
 * const claude = createAnthropic({ baseURL: 'http://agentwire/v1', apiKey: 'unused', fetch });
 * const result = streamText({ model: claude('auto'), prompt: 'Hello' });
 * ```
 *
 * The response is the one the proxies would send: its status (errors with their true status
 * and `x-should-retry`, in the route's dialect), `text/event-stream` frames as the agent
 * produces them, or one JSON body. Aborting the request's `signal` (or cancelling the
 * response body) stops the agent's process group; as with `fetch`, a request aborted before
 * its head rejects with the signal's reason, and a body read after the abort errors with
 * it. A wrong method answers 405 in the route's dialect, with `allow`; any other path 404,
 * in the Anthropic shape when the request carries `anthropic-version` (every Anthropic
 * SDK sends it), else in the OpenAI shape.
 *
 * Conversations are on (`options.conversations`): a request whose history extends an
 * answer this fetch gave (the next round of a tool loop, a follow-up) resumes that
 * cursor-agent chat with only what is new; Claude Code's `X-Claude-Code-Session-Id` and
 * `X-Claude-Code-Agent-Id` headers keep its conversations (and subagents) apart.
 *
 * `options.demo` answers from the bundled demo transcript with no agent;
 * `options.acpAgent` serves each request as a turn of a warm ACP agent; and
 * `options.retryAdvice: 'status'` turns a failure no retry can help into a 400, for
 * clients that retry by status alone (the AI SDK, OpenCode).
 */
export function createAgentFetch(options: AgentFetchOptions = {}): typeof fetch {
  const { conversations: wanted = true, ...rest } = options;
  const conversations =
    wanted instanceof Conversations ? wanted : wanted === false || options.demo || options.acpAgent !== undefined ? undefined : new Conversations(wanted === true ? undefined : wanted, options.clock);
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(absolute(input), init);
    const path = new URL(request.url).pathname;
    const route = ROUTES.find((r) => r.path.test(path));
    if (route === undefined) {
      const dialect = request.headers.has('anthropic-version') ? 'messages' : 'chat-completions';
      return replyResponse(errorReply(dialect, 'notFound', `${request.method} ${path} is not served here: only ${SERVED}`));
    }
    if (request.method !== route.method) {
      const refusal = errorReply(route.dialect, 'methodNotAllowed', `${request.method} is not allowed on ${path}: use ${route.method}`);
      return replyResponse(refusal, { allow: route.method });
    }
    if (route.serves === 'hello') return new Response(null, { status: 200 });
    const signal = request.signal;
    signal.throwIfAborted();
    const body = new Uint8Array(await request.arrayBuffer());
    signal.throwIfAborted();
    if (route.serves === 'countTokens') {
      const config = options.config;
      return replyResponse(countTokens(body, config === undefined ? {} : { config }));
    }
    const { acpAgent, retryAdvice, ...runOptions } = rest;
    const caller = callerOf(request.headers);
    const outputs =
      acpAgent === undefined
        ? new AgentRun(body, { ...runOptions, dialect: route.dialect, signal, ...(conversations === undefined ? {} : { conversations, caller }) })[Symbol.asyncIterator]()
        : acpAgent.turn(body, turnOptions(route.dialect, runOptions, signal, caller))[Symbol.asyncIterator]();
    const first = await outputs.next();
    if (first.done || first.value.type !== 'head') {
      // The run ended with no head: only when the client went away first.
      signal.throwIfAborted();
      throw new Error('agentwire: the response ended before its head');
    }
    const head = first.value;
    if (retryAdvice === 'status' && head.retryable === false && RETRIED_BY_STATUS(head.status)) {
      return asClientError(head, outputs, route.dialect);
    }
    return new Response(bodyStream(outputs, signal), { status: head.status, headers: headersOf(head) });
  };
}

/** The statuses the AI SDK (and OpenCode) retry whatever `x-should-retry` says. */
const RETRIED_BY_STATUS = (status: number): boolean => status === 408 || status === 409 || status === 429 || status >= 500;

/** An ACP turn's options from the fetch's: the route's dialect, the request's `Config`, the client's signal, who sends it. */
function turnOptions(dialect: Dialect, options: Omit<AgentFetchOptions, 'acpAgent' | 'retryAdvice' | 'conversations'>, signal: AbortSignal, caller: Caller) {
  return options.config === undefined ? { dialect, signal, caller } : { dialect, config: options.config, signal, caller };
}

/**
 * A failure no retry helps, whose status clients retry, answered as a 400: its whole body
 * (an error head's body is one JSON document) with the error's type made
 * `invalid_request_error`, everything else as the bridge wrote it.
 */
async function asClientError(head: Head, outputs: AsyncGenerator<Head | Body, void, undefined>, dialect: Dialect): Promise<Response> {
  const chunks: Uint8Array[] = [];
  for (let next = await outputs.next(); !next.done; next = await outputs.next()) {
    if (next.value.type === 'body') chunks.push(next.value.data);
  }
  const text = new TextDecoder().decode(Buffer.concat(chunks));
  let body: string;
  try {
    const json = JSON.parse(text) as { error?: { type?: unknown } };
    if (json.error !== null && typeof json.error === 'object') json.error.type = 'invalid_request_error';
    body = JSON.stringify(json);
  } catch {
    // Not the JSON an error head carries: say so in the route's dialect rather than pass on bytes no client reads.
    body = new TextDecoder().decode(errorReply(dialect, 'invalidRequest', text.trim() || 'The agent failed, and retrying will not help.').body);
  }
  const headers = headersOf(head);
  headers.set('content-type', 'application/json');
  return new Response(body, { status: 400, headers });
}

/** The response body: the run's body chunks, as they come. */
function bodyStream(outputs: AsyncGenerator<Head | Body, void, undefined>, signal: AbortSignal): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await outputs.next();
      if (signal.aborted) {
        controller.error(signal.reason);
      } else if (next.done) {
        controller.close();
      } else if (next.value.type === 'body') {
        controller.enqueue(next.value.data);
      }
    },
    async cancel() {
      // The consumer gave up reading: the client is gone.
      await outputs.return();
    },
  });
}

function headersOf(head: Head): Headers {
  const headers = new Headers({ 'content-type': head.contentType, 'cache-control': 'no-cache' });
  if (head.retryable !== undefined) headers.set('x-should-retry', String(head.retryable));
  return headers;
}

/** A reply that needs no agent, as a `Response`. */
function replyResponse(reply: Reply, extra: Record<string, string> = {}): Response {
  // A copy (a few hundred bytes): BodyInit takes only arrays over a plain ArrayBuffer.
  return new Response(reply.body.slice(), { status: reply.status, headers: { ...reply.headers, ...extra } });
}

/** `input` with a base, so that a path-only URL (which no request needs) still parses. */
function absolute(input: RequestInfo | URL): RequestInfo | URL {
  if (typeof input === 'string' && !/^[a-z][a-z0-9+.-]*:/i.test(input)) return new URL(input, 'http://agentwire/');
  return input;
}
