/**
 * `createAgentFetch`: a WHATWG `fetch` that answers the OpenAI API in-process, with
 * cursor-agent behind it: no server, no port.
 * @module
 */

import type { Body, Head } from '../bridge.js';
import { AgentRun, type AgentRunOptions } from './run.js';

/** Settings of {@link createAgentFetch}: those of an {@link AgentRun}, for every request. */
export type AgentFetchOptions = Omit<AgentRunOptions, 'signal' | 'created' | 'idSeed'>;

/**
 * The route answered, by the end of the URL's path (any base URL works). Each API dialect the
 * core speaks would be one more route here, handed to the bridge with the request.
 */
const CHAT_COMPLETIONS = /\/chat\/completions\/?$/;

/**
 * A `fetch` for OpenAI clients that runs each `POST …/chat/completions` through an
 * {@link AgentRun} in this process: give it to a client as its custom fetch, with any base
 * URL (nothing is contacted).
 *
 * ```ts
 * const cursor = createOpenAICompatible({ name: 'cursor', baseURL: 'http://agentwire/v1', fetch: createAgentFetch() });
 * const result = streamText({ model: cursor('auto'), prompt: 'Hello' });
 * ```
 *
 * The response is the one the proxies would send: its status (errors with their true status
 * and `x-should-retry`), `text/event-stream` frames as the agent produces them, or one JSON
 * body. Aborting the request's `signal` (or cancelling the response body) stops the agent's
 * process group; as with `fetch`, a request aborted before its head rejects with the
 * signal's reason, and a body read after the abort errors with it. Other paths answer 404,
 * other methods 405, with OpenAI error bodies.
 */
export function createAgentFetch(options: AgentFetchOptions = {}): typeof fetch {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(absolute(input), init);
    const path = new URL(request.url).pathname;
    if (!CHAT_COMPLETIONS.test(path)) {
      return errorResponse(404, 'not_found', `${request.method} ${path} is not served here: only POST …/chat/completions`);
    }
    if (request.method !== 'POST') {
      return errorResponse(405, 'method_not_allowed', `${request.method} is not allowed on ${path}: use POST`, { allow: 'POST' });
    }
    const signal = request.signal;
    signal.throwIfAborted();
    const body = new Uint8Array(await request.arrayBuffer());
    signal.throwIfAborted();
    const run = new AgentRun(body, { ...options, signal });
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

function errorResponse(status: number, code: string, message: string, extra: Record<string, string> = {}): Response {
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } });
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/json', 'x-should-retry': 'false', ...extra },
  });
}

/** `input` with a base, so that a path-only URL (which no request needs) still parses. */
function absolute(input: RequestInfo | URL): RequestInfo | URL {
  if (typeof input === 'string' && !/^[a-z][a-z0-9+.-]*:/i.test(input)) return new URL(input, 'http://agentwire/');
  return input;
}
