/**
 * `createAgentFetch`: a WHATWG `fetch` that answers the OpenAI Chat Completions and Responses
 * APIs and the Anthropic Messages API in-process, with cursor-agent behind it: no server, no
 * port.
 * @module
 */

import type { Body, Dialect, Head } from '../bridge.js';
import { type Reply, countTokens, errorReply } from '../reply.js';
import { AgentRun, type AgentRunOptions } from './run.js';

/** Settings of {@link createAgentFetch}: those of an {@link AgentRun}, for every request (the route gives the dialect). */
export type AgentFetchOptions = Omit<AgentRunOptions, 'signal' | 'created' | 'idSeed' | 'dialect'>;

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
 */
export function createAgentFetch(options: AgentFetchOptions = {}): typeof fetch {
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
    const run = new AgentRun(body, { ...options, dialect: route.dialect, signal });
    const outputs = run[Symbol.asyncIterator]();
    const first = await outputs.next();
    if (first.done || first.value.type !== 'head') {
      // The run ended with no head: only when the client went away first.
      signal.throwIfAborted();
      throw new Error('agentwire: the response ended before its head');
    }
    return new Response(bodyStream(outputs, signal), { status: first.value.status, headers: headersOf(first.value) });
  };
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
