#!/usr/bin/env node
// The OpenAI Chat Completions API on top of cursor-agent, served over HTTP on node:http: the
// same loop as the Rust proxies (examples/tokio_proxy.rs), with agentwire/node's AgentRun
// spawning and stopping the agent.
//
//   node http_server.mjs [--listen 127.0.0.1:32124] [--api-key KEY] [--agent PROGRAM] [--workspace DIR]
//
// A local server is attacked through the user's browser, so: loopback by default (another
// address needs --api-key), the Host header checked against the address listened on
// (DNS rebinding), no cross-origin use (a request with an Origin header is refused),
// JSON bodies only, the API key checked before anything else, and deadlines on reading the
// request. On SIGINT/SIGTERM open responses end with a retryable error and every agent is
// stopped.
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
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
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {string} code
 * @param {string} message
 */
function refuse(res, status, code, message) {
  res.writeHead(status, { 'content-type': 'application/json', 'x-should-retry': 'false' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }));
}

/** @param {import('node:http').IncomingMessage} req */
function authorized(req) {
  const key = values['api-key'];
  if (!key) return true;
  const given = Buffer.from(req.headers.authorization ?? '');
  const wanted = Buffer.from(`Bearer ${key}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
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
  if (!authorized(req)) return refuse(res, 401, 'invalid_api_key', 'Missing or wrong API key.');
  if (!hostAllowed(req.headers.host, listening().port)) return refuse(res, 421, 'misdirected_request', 'Unknown Host.');
  if (req.headers.origin !== undefined) return refuse(res, 403, 'cross_origin', 'Cross-origin requests are not allowed.');
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (path !== '/v1/chat/completions' && path !== '/chat/completions') return refuse(res, 404, 'not_found', `${path} is not served here.`);
  if (req.method !== 'POST') return refuse(res, 405, 'method_not_allowed', 'Use POST.');
  if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) return refuse(res, 415, 'unsupported_media_type', 'Send JSON.');
  const body = await readBody(req);
  if (body === undefined) return refuse(res, 413, 'request_too_large', 'The request body is too large.');

  const run = new AgentRun(body, { config });
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
