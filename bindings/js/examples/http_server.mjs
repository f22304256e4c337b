#!/usr/bin/env node
// The OpenAI Chat Completions and Responses APIs and the Anthropic Messages API on top of
// cursor-agent, served over HTTP on node:http: the same loop as the Rust proxies
// (examples/tokio_proxy.rs), with agentwire/node's AgentRun spawning and stopping the agent.
//
//   node http_server.mjs [--listen 127.0.0.1:32124] [--api-key KEY] [--agent PROGRAM] [--workspace DIR]
//
// Routes: POST /v1/chat/completions, POST /v1/responses, POST /v1/messages (any query
// string: Claude Code sends ?beta=true), POST /v1/messages/count_tokens (never an agent) and
// HEAD /api/hello (Claude Code's check that the server is up). Every refusal is in the
// dialect of its route, so that each client shows it as its own API's error.
//
// A local server is attacked through the user's browser, so: loopback by default (another
// address needs --api-key), the Host header checked against the address listened on
// (DNS rebinding), no cross-origin use (a request with an Origin header is refused),
// JSON bodies only, the API key (`Authorization: Bearer KEY`, or Anthropic's `x-api-key: KEY`)
// checked before anything else, and deadlines on reading the request. On SIGINT/SIGTERM
// open responses end with a retryable error and every agent is stopped.
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { countTokens, errorReply } from 'agentwire';
import { AgentRun } from 'agentwire/node';

const { values } = parseArgs({
  options: {
    listen: { type: 'string', default: '127.0.0.1:32124' },
    'api-key': { type: 'string', default: process.env.AGENTWIRE_API_KEY },
    agent: { type: 'string' },
    workspace: { type: 'string' },
  },
});
const at = values.listen.lastIndexOf(':');
const host = values.listen.slice(0, at).replace(/^\[(.*)\]$/, '$1');
const port = Number(values.listen.slice(at + 1));
const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
if (!loopback && !values['api-key']) {
  console.error('http_server: a non-loopback address needs --api-key');
  process.exit(2);
}
/** @type {import('agentwire').Config} */
const config = {};
if (values.agent) config.cursorBinary = values.agent;
if (values.workspace) config.workspace = values.workspace;
const MAX_BODY = 32 << 20;
/** @type {Set<AgentRun>} */
const runs = new Set();

/**
 * The route of a path (`/v1` may be left out of the OpenAI ones): the dialect of its
 * requests and its errors, its one method, and what it serves. An unknown path gets its 404 in the Anthropic shape when the
 * request carries `anthropic-version` (every Anthropic SDK sends it), else in the OpenAI one.
 * @param {string} path
 * @param {import('node:http').IncomingMessage} req
 * @returns {{ dialect: import('agentwire').Dialect, method: string, serves: 'agent' | 'countTokens' | 'hello' | undefined }}
 */
function routeOf(path, req) {
  switch (path) {
    case '/chat/completions':
    case '/v1/chat/completions':
      return { dialect: 'chat-completions', method: 'POST', serves: 'agent' };
    case '/responses':
    case '/v1/responses':
      return { dialect: 'responses', method: 'POST', serves: 'agent' };
    case '/v1/messages':
      return { dialect: 'messages', method: 'POST', serves: 'agent' };
    case '/v1/messages/count_tokens':
      return { dialect: 'messages', method: 'POST', serves: 'countTokens' };
    case '/api/hello':
      return { dialect: 'messages', method: 'HEAD', serves: 'hello' };
    default:
      return { dialect: req.headers['anthropic-version'] ? 'messages' : 'chat-completions', method: '', serves: undefined };
  }
}

/**
 * Sends a reply that needs no agent: a refusal, or the answer to count_tokens.
 * @param {import('node:http').ServerResponse} res
 * @param {import('agentwire').Reply} reply
 * @param {Record<string, string>} [headers]
 */
function send(res, reply, headers = {}) {
  res.writeHead(reply.status, { ...reply.headers, ...headers });
  res.end(reply.body);
}

/**
 * Whether the request carries the key: `Authorization: Bearer KEY` (OpenAI clients) or
 * `x-api-key: KEY` (Anthropic clients), compared in constant time.
 * @param {import('node:http').IncomingMessage} req
 */
function authorized(req) {
  const key = values['api-key'];
  if (!key) return true;
  const same = (/** @type {string} */ given, /** @type {string} */ wanted) =>
    Buffer.byteLength(given) === Buffer.byteLength(wanted) && timingSafeEqual(Buffer.from(given), Buffer.from(wanted));
  const bearer = req.headers.authorization;
  const apiKey = req.headers['x-api-key'];
  return (bearer !== undefined && same(bearer, `Bearer ${key}`)) || (typeof apiKey === 'string' && same(apiKey, key));
}

/**
 * The names this server may be reached by: what it listens on (DNS rebinding defence).
 * @param {string | undefined} header
 * @param {number} actualPort
 */
function hostAllowed(header, actualPort) {
  if (!loopback) return true;
  const names = ['localhost', '127.0.0.1', '[::1]', host.includes(':') ? `[${host}]` : host];
  return names.some((name) => header === `${name}:${actualPort}` || (actualPort === 80 && header === name));
}

/** @param {import('node:http').IncomingMessage} req */
async function readBody(req) {
  /** @type {Buffer[]} */
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
async function serve(req, res) {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  const route = routeOf(path, req);
  /** @type {(kind: import('agentwire').ErrorReplyKind, message: string, headers?: Record<string, string>) => void} */
  const refuse = (kind, message, headers) => send(res, errorReply(route.dialect, kind, message), headers);
  if (!authorized(req)) return refuse('authentication', 'Missing or wrong API key: send it as Authorization: Bearer KEY or x-api-key: KEY.');
  if (!hostAllowed(req.headers.host, listening().port)) return refuse('invalidRequest', 'This Host is not allowed: requests must name the address the server listens on.');
  if (req.headers.origin !== undefined) return refuse('permissionDenied', 'Cross-origin requests are not allowed.');
  if (route.serves === undefined) return refuse('notFound', `${path} is not served here.`);
  if (req.method !== route.method) return refuse('methodNotAllowed', `Use ${route.method}.`, { allow: route.method });
  if (route.serves === 'hello') return res.writeHead(200).end();
  if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) return refuse('unsupportedMediaType', 'Send JSON.');
  const body = await readBody(req);
  if (body === undefined) return refuse('requestTooLarge', 'The request body is too large.');
  if (route.serves === 'countTokens') return send(res, countTokens(body, { config }));

  const run = new AgentRun(body, { dialect: route.dialect, config });
  runs.add(run);
  // A client that hangs up before the end: stop the agent.
  res.on('close', () => run.clientGone());
  try {
    for await (const output of run) {
      if (output.type === 'head') {
        /** @type {Record<string, string>} */
        const headers = { 'content-type': output.contentType, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
        if (output.retryable !== undefined) headers['x-should-retry'] = String(output.retryable);
        res.writeHead(output.status, headers);
        res.flushHeaders();
      } else if (!res.write(output.data)) {
        // A slow client: wait before reading more of the agent (AgentRun pauses it meanwhile).
        await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
      }
    }
    res.end();
  } finally {
    await run.exited;
    runs.delete(run);
  }
}

/** The address the server listens on. */
function listening() {
  return /** @type {import('node:net').AddressInfo} */ (server.address());
}

const server = createServer((req, res) => {
  serve(req, res).catch((error) => {
    console.error(error);
    res.destroy();
  });
});
// Deadlines on reading a request: its head, and the whole of it.
server.headersTimeout = 10_000;
server.requestTimeout = 30_000;
server.listen(port, host, () => {
  const address = listening();
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  console.log(`listening on http://${shown}:${address.port}/v1`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    server.close();
    for (const run of runs) run.shutdown();
    await Promise.all([...runs].map((run) => run.exited));
    process.exit(0);
  });
}
