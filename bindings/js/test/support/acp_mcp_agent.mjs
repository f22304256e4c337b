#!/usr/bin/env node
// A scripted ACP agent that calls the client's tools through the MCP server it is given in
// `session/new` (over HTTP, as the real agents do): it speaks ACP on its stdio as
// claude-agent-acp does (it says it is one, so that its permission requests are
// recognised), and MCP's Streamable HTTP to the URL it is given, with the bearer header it
// is given.
//
//   node acp_mcp_agent.mjs [--tool-rounds N]
//
// Each session with an MCP server answers a prompt with a tool loop: for each of its first
// N rounds (counted per session, R from 0) it says `Round R.`, asks permission for
// `mcp__client__bash`, and calls `bash` with `echo round-R`, waiting inside the call (the
// answer is an SSE stream) until it is answered; then it says `Done after N tool rounds.`
// and ends its turn. A session without a server answers `Hello.`. `session/cancel` aborts
// the call in flight and ends the turn as cancelled.
//
// With env ACP_MCP_AGENT_LOG=FILE, it appends one JSON line per event: `start` (pid, its
// arguments, and the files its `--policy` arguments name: path, contents or null),
// `session` (its id, the MCP server's url and auth, the `_meta` of `session/new`), `prompt` (the text and its bytes),
// `call` and `result` (round, command, the result's text), `cancel`, `close`.
import { appendFileSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const rounds = Number(process.argv[process.argv.indexOf('--tool-rounds') + 1] || 0);
const logFile = process.env.ACP_MCP_AGENT_LOG;
const log = (event) => {
  if (logFile) appendFileSync(logFile, `${JSON.stringify({ ...event, pid: process.pid })}\n`);
};

const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
let nextId = 1000;
/** Requests this agent sent the client, by id. */
const waiting = new Map();
const request = (method, params) =>
  new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    send({ id, method, params });
  });
const say = (sessionId, text) => send({ method: 'session/update', params: { sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } } });

/** Sessions by id: `{ server: { url, auth } | undefined, mcp: session id once initialized, round, abort }`. */
const sessions = new Map();
let sessionCount = 0;

/** One MCP request; the JSON-RPC response (read from a JSON or an SSE answer). */
async function mcp(session, message, signal) {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: session.server.auth };
  if (session.mcp !== undefined) {
    headers['mcp-session-id'] = session.mcp;
    headers['mcp-protocol-version'] = '2025-06-18';
  }
  const response = await fetch(session.server.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', ...message }), signal });
  if (response.headers.get('mcp-session-id')) session.mcp = response.headers.get('mcp-session-id');
  if (message.id === undefined) {
    await response.arrayBuffer();
    return undefined;
  }
  if (!response.ok) throw new Error(`MCP ${message.method}: HTTP ${response.status}`);
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response.json();
  // An SSE stream: the answer is its `message` event (comments keep it open meanwhile).
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data) return JSON.parse(data);
    }
  }
  throw new Error(`MCP ${message.method}: the stream ended without an answer`);
}

async function connect(session) {
  if (session.mcp !== undefined) return;
  const init = await mcp(session, { id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'acp-mcp-agent', version: '1' } } });
  if (init.error) throw new Error(`MCP initialize: ${JSON.stringify(init.error)}`);
  await mcp(session, { method: 'notifications/initialized' });
  const listed = await mcp(session, { id: 1, method: 'tools/list' });
  if (!listed.result.tools.some((tool) => tool.name === 'bash')) throw new Error(`no bash tool: ${JSON.stringify(listed)}`);
}

async function prompt(id, params) {
  const session = sessions.get(params.sessionId);
  const text = params.prompt.map((part) => part.text ?? '').join('');
  log({ event: 'prompt', sessionId: params.sessionId, text, bytes: Buffer.byteLength(text) });
  if (session.server === undefined) {
    say(params.sessionId, 'Hello.');
    send({ id, result: { stopReason: 'end_turn' } });
    return;
  }
  const abort = new AbortController();
  session.abort = abort;
  try {
    await connect(session);
    while (session.round < rounds) {
      const round = session.round;
      say(params.sessionId, `Round ${round}.`);
      const toolCall = { toolCallId: `toolu_${round}`, title: 'mcp__client__bash', kind: 'other', rawInput: { command: `echo round-${round}` } };
      const options = [
        { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
        { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
      ];
      const permission = await request('session/request_permission', { sessionId: params.sessionId, toolCall, options });
      if (permission.result?.outcome?.optionId !== 'allow') throw new Error(`not allowed: ${JSON.stringify(permission)}`);
      const command = `echo round-${round}`;
      log({ event: 'call', sessionId: params.sessionId, round, command });
      const answer = await mcp(session, { id: 10 + round, method: 'tools/call', params: { name: 'bash', arguments: { command } } }, abort.signal);
      const result = answer.result.content.map((item) => item.text).join('');
      log({ event: 'result', sessionId: params.sessionId, round, text: result });
      session.round += 1;
    }
    say(params.sessionId, `Done after ${session.round} tool rounds.`);
    send({ id, result: { stopReason: 'end_turn' } });
  } catch (error) {
    if (abort.signal.aborted) send({ id, result: { stopReason: 'cancelled' } });
    else send({ id, error: { code: -32603, message: String(error) } });
  } finally {
    session.abort = undefined;
  }
}

function handle(message) {
  if (message.method === undefined) {
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
    return;
  }
  const { id, method, params } = message;
  switch (method) {
    case 'initialize':
      send({
        id,
        result: {
          protocolVersion: 1,
          agentCapabilities: { mcpCapabilities: { http: true, sse: true }, sessionCapabilities: { close: {} } },
          agentInfo: { name: '@zed-industries/claude-agent-acp', version: '0.0.0-scripted' },
        },
      });
      break;
    case 'session/new': {
      const sessionId = `s-${++sessionCount}`;
      const entry = params.mcpServers?.[0];
      const server = entry === undefined ? undefined : { url: entry.url, auth: entry.headers.find((h) => h.name === 'Authorization')?.value };
      sessions.set(sessionId, { server, mcp: undefined, round: 0, abort: undefined });
      log({ event: 'session', sessionId, ...(server ?? {}), meta: params._meta });
      send({ id, result: { sessionId } });
      break;
    }
    case 'session/prompt':
      void prompt(id, params);
      break;
    case 'session/cancel':
      log({ event: 'cancel', sessionId: params.sessionId });
      sessions.get(params.sessionId)?.abort?.abort();
      break;
    case 'session/close':
      log({ event: 'close', sessionId: params.sessionId });
      sessions.delete(params.sessionId);
      send({ id, result: {} });
      break;
    default:
      if (id !== undefined) send({ id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
}

const readPolicy = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};
const policies = process.argv
  .slice(2)
  .flatMap((arg, i, args) => (arg === '--policy' && i + 1 < args.length ? [{ path: args[i + 1], contents: readPolicy(args[i + 1]) }] : []));
log({ event: 'start', args: process.argv.slice(2), policies });
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim()) handle(JSON.parse(line));
});
lines.on('close', () => process.exit(0));
