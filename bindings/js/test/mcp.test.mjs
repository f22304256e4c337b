// McpServer from JavaScript: a request's client tools, in each dialect's terms, offered
// over MCP's Streamable HTTP and stdio; a call held (an SSE answer with keep-alives) until
// it is answered; cancellations; hostile input answered without touching a pending call;
// misuse. And AcpConnection's conversation inputs at the sans-IO level: a turn's MCP server
// reached through handleMcp, a refusal for anything else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { AcpConnection, AgentwireError, McpServer } from 'agentwire';
import { clientToolsRequest } from './support/paths.mjs';

const TEXT = new TextEncoder();
const SESSION = 'f00dfeedf00dfeedf00dfeedf00dfeed';
const ACCEPT = 'application/json, text/event-stream';
const json = (value) => TEXT.encode(JSON.stringify({ jsonrpc: '2.0', ...value }));
const bodyText = (outputs) => Buffer.concat(outputs.filter((o) => o.type === 'body').map((o) => o.data)).toString();

/** POSTs `message` to `server`; the exchange and its outputs so far. */
function post(server, message, now = 0, session = SESSION) {
  const exchange = server.handleHttp({ method: 'POST', accept: ACCEPT, contentType: 'application/json', sessionId: session ?? undefined, body: message instanceof Uint8Array ? message : json(message) }, now);
  return { exchange, outputs: server.drainExchange(exchange) };
}

/** A server for `dialect`'s example request with client tools, initialized. */
function initialized(dialect = 'chat-completions', mcp = {}) {
  const server = new McpServer(readFileSync(clientToolsRequest(dialect)), { dialect, sessionId: SESSION, mcp });
  const { outputs } = post(server, { id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, 0, null);
  assert.deepEqual(outputs[0], { type: 'head', status: 200, contentType: 'application/json', sessionId: SESSION });
  assert.equal(JSON.parse(bodyText(outputs)).result.protocolVersion, '2025-06-18');
  assert.deepEqual(outputs.at(-1), { type: 'end' });
  assert.equal(post(server, { method: 'notifications/initialized' }).outputs[0].status, 202);
  assert.ok(server.isInitialized);
  return server;
}

test('each dialect’s tools are listed with their own schemas', () => {
  for (const [dialect, names] of [
    ['chat-completions', ['bash', 'read']],
    ['messages', ['Bash', 'Read']],
    ['responses', ['exec_command', 'apply_patch']],
  ]) {
    const server = initialized(dialect);
    const listed = JSON.parse(bodyText(post(server, { id: 1, method: 'tools/list' }).outputs)).result.tools;
    assert.deepEqual(
      listed.map((t) => t.name),
      server.tools.map((t) => t.name),
    );
    for (const name of names) assert.ok(listed.some((t) => t.name === name), `${dialect}: ${name}`);
    // A freeform (custom) tool takes one string.
    const patch = server.tools.find((t) => t.name === 'apply_patch');
    if (patch !== undefined) assert.equal(patch.inputSchema.properties.input.type, 'string');
    server.free();
  }
});

test('a call is held on an SSE answer with keep-alives until it is answered', () => {
  const server = initialized('chat-completions', { keepAliveMs: 100 });
  const { exchange, outputs } = post(server, { id: 7, method: 'tools/call', params: { name: 'bash', arguments: { command: 'ls' } } }, 10);
  assert.deepEqual(outputs, [{ type: 'head', status: 200, contentType: 'text/event-stream', sessionId: SESSION }]);
  const call = server.pollEvent();
  assert.equal(call.type, 'call');
  assert.equal(call.name, 'bash');
  assert.equal(call.arguments, '{"command":"ls"}');
  assert.equal(server.tools[call.tool].name, 'bash');
  assert.equal(server.pendingCalls, 1);
  assert.equal(server.pollTimeout(), 110);
  server.handleTimeout(110);
  assert.equal(server.pollReady(), exchange);
  assert.equal(bodyText(server.drainExchange(exchange)), ': keepalive\n\n');
  server.answerCall(call.call, ['a.txt', 'b.txt'], false, 120);
  const answer = server.drainExchange(exchange);
  const message = JSON.parse(bodyText(answer).split('data: ')[1]);
  assert.deepEqual(message, { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'a.txt' }, { type: 'text', text: 'b.txt' }], isError: false } });
  assert.deepEqual(answer.at(-1), { type: 'end' });
  assert.deepEqual(server.drainExchange(exchange), [], 'forgotten after its end');
  assert.throws(() => server.answerCall(call.call, 'again', false, 130), { code: 'invalidArgument', message: /not pending/ });
  assert.equal(server.pollEvent(), undefined);
  server.free();
});

test('a closed connection cancels its call; the agent’s cancellation too; stdio carries the same protocol', () => {
  const server = initialized();
  const { exchange } = post(server, { id: 8, method: 'tools/call', params: { name: 'bash', arguments: { command: 'sleep 1' } } });
  const call = server.pollEvent();
  server.exchangeGone(exchange, 1);
  assert.deepEqual(server.pollEvent(), { type: 'cancelled', call: call.call, reason: 'disconnected' });
  post(server, { id: 9, method: 'tools/call', params: { name: 'bash', arguments: { command: 'top' } } });
  const second = server.pollEvent();
  post(server, { method: 'notifications/cancelled', params: { requestId: 9, reason: 'user stopped it' } });
  assert.deepEqual(server.pollEvent(), { type: 'cancelled', call: second.call, reason: 'requested', message: 'user stopped it' });
  assert.equal(server.pendingCalls, 0);
  server.free();

  const stdio = new McpServer(readFileSync(clientToolsRequest()), { sessionId: SESSION });
  const line = (value) => Buffer.concat([json(value), TEXT.encode('\n')]);
  stdio.pushStdio(line({ id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }), 0);
  assert.equal(JSON.parse(Buffer.from(stdio.pollTransmit()).toString()).result.protocolVersion, '2025-11-25');
  const read = line({ id: 2, method: 'tools/call', params: { name: 'read', arguments: { path: 'a' } } });
  // Byte at a time.
  for (let i = 0; i < read.length; i++) stdio.pushStdio(read.subarray(i, i + 1), 1);
  const event = stdio.pollEvent();
  assert.equal(event.name, 'read');
  stdio.answerCall(event.call, 'contents', true, 2);
  assert.deepEqual(JSON.parse(Buffer.from(stdio.pollTransmit()).toString()).result, { content: [{ type: 'text', text: 'contents' }], isError: true });
  stdio.free();
});

test('hostile input gets JSON-RPC errors and leaves the pending call as it was', () => {
  const server = initialized();
  post(server, { id: 1, method: 'tools/call', params: { name: 'bash', arguments: { command: 'ls' } } });
  const call = server.pollEvent();
  const error = (body) => JSON.parse(bodyText(post(server, body).outputs)).error.code;
  assert.equal(error(TEXT.encode('{not json')), -32700);
  assert.equal(error({ id: 2, method: 'no/such' }), -32601);
  assert.equal(error({ id: 3, method: 'tools/call', params: { name: 'rm', arguments: {} } }), -32602);
  assert.equal(error({ id: 1, method: 'tools/call', params: { name: 'bash', arguments: {} } }), -32600, 'a request id already pending');
  assert.equal(post(server, { id: 4, method: 'ping' }, 0, 'another-session').outputs[0].status, 404, 'another session id');
  assert.equal(server.handleHttp({ method: 'GET', accept: ACCEPT, sessionId: SESSION }, 0) >= 0, true);
  assert.equal(server.pendingCalls, 1);
  assert.equal(server.pollEvent(), undefined);
  server.answerCall(call.call, 'ok', false, 1);
  server.close(2);
  assert.ok(server.isClosed);
  server.free();
});

test('misuse throws invalidArgument or invalidInput, naming what is wrong', () => {
  const body = readFileSync(clientToolsRequest());
  assert.throws(() => new McpServer(body, { sessionId: 'has space' }), { code: 'invalidArgument', message: /sessionId/ });
  assert.throws(() => new McpServer(body, {}), { code: 'invalidArgument', message: /sessionId must be a string/ });
  assert.throws(() => new McpServer('{}', { sessionId: SESSION }), { code: 'invalidInput', message: /cannot be read/ });
  assert.throws(() => new McpServer(body, { sessionId: SESSION, mcp: { keepAlive: 1 } }), (e) => e instanceof AgentwireError && e.code === 'invalidArgument' && /invalid MCP config.*keepAlive/.test(e.message));
  assert.throws(() => new McpServer(body, { sessionId: SESSION, dialect: 'anthropic' }), { code: 'invalidArgument', message: /dialect/ });
  const server = new McpServer(body, { sessionId: SESSION });
  assert.throws(() => server.handleHttp({ method: 1 }, 0), { code: 'invalidArgument', message: /method/ });
  assert.throws(() => server.answerCall(1, [1], false, 0), { code: 'invalidArgument', message: /content/ });
  server.free();
  assert.throws(() => server.pendingCalls, { code: 'closed' });
});

test('AcpConnection: a conversation turn’s tools reach the agent as its session’s MCP server, through handleMcp', () => {
  const endpoint = 'http://127.0.0.1:9/mcp/';
  const acp = new AcpConnection({ config: { mcpEndpoint: endpoint, poolSize: 0, conversations: { maxParked: 2 } } });
  const written = () => {
    const out = [];
    for (let bytes; (bytes = acp.pollTransmit()) !== undefined; ) {
      for (const line of Buffer.from(bytes).toString().split('\n').filter(Boolean)) out.push(JSON.parse(line));
    }
    return out;
  };
  const agent = (message) => acp.pushStdout(TEXT.encode(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`), 1);
  const [init] = written();
  agent({ id: init.id, result: { protocolVersion: 1, agentCapabilities: { mcpCapabilities: { http: true } }, agentInfo: { name: 'scripted', version: '1' } } });
  const body = readFileSync(clientToolsRequest());
  assert.throws(() => acp.startConversationTurn(body, {}, {}, new Uint8Array(31)), { code: 'invalidArgument', message: /32/ });
  const turn = acp.startConversationTurn(body, { nowMs: 1 }, { keys: { caller: 'c' } }, crypto.getRandomValues(new Uint8Array(32)));
  const [created] = written();
  assert.equal(created.method, 'session/new');
  const [server] = created.params.mcpServers;
  assert.ok(server.url.startsWith(endpoint));
  const token = server.url.slice(endpoint.length);
  const authorization = server.headers[0].value;
  const request = { method: 'POST', accept: ACCEPT, contentType: 'application/json', body: json({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'a', version: '1' } } }) };
  assert.deepEqual(acp.handleMcp('nope', authorization, request, 2), { type: 'refused', status: 404 });
  assert.deepEqual(acp.handleMcp(token, 'Bearer wrong', request, 2), { type: 'refused', status: 401 });
  const admitted = acp.handleMcp(token, TEXT.encode(authorization), request, 2);
  assert.equal(admitted.type, 'exchange');
  assert.ok(acp.hasMcpServer(admitted.exchange));
  assert.equal(acp.pollMcpReady(), admitted.exchange);
  const head = acp.pollMcpOutput(admitted.exchange);
  assert.equal(head.type, 'head');
  assert.equal(head.status, 200);
  const rest = acp.drainMcp(admitted.exchange);
  assert.match(bodyText(rest), /"protocolVersion":"2025-06-18"/);
  assert.deepEqual(rest.at(-1), { type: 'end' });
  assert.equal(acp.hasMcpServer(admitted.exchange), false, 'an ended exchange is forgotten');
  assert.equal(acp.parkedSessions, 0);
  assert.equal(acp.conversationStats.fresh.noSession, 1);
  acp.clientGone(turn, 3);
  acp.free();
});

test('AcpConfig’s conversation fields are checked and named', () => {
  for (const [config, says] of [
    [{ mcpEndpoint: 5 }, /mcpEndpoint must be a string or null, not 5/],
    [{ mcpServerName: null }, /mcpServerName must be a string/],
    [{ mcp: 'fast' }, /mcp must be an object/],
    [{ conversations: [] }, /conversations must be an object/],
    [{ mcp: { keepAlive: 1 } }, /keepAlive/],
    [{ conversations: { ttlMs: -1 } }, /-1/],
  ]) {
    assert.throws(() => new AcpConnection({ config }), (e) => e instanceof AgentwireError && e.code === 'invalidArgument' && says.test(e.message), JSON.stringify(config));
  }
  new AcpConnection({ config: { mcpEndpoint: null, mcpServerName: 'tools', mcp: { keepAliveMs: 0 }, conversations: { enabled: false } } }).free();
});
