// Conversations over a warm ACP agent through AcpAgent (and createAgentFetch with it): the
// client's tools reach the agent as an MCP server on the loopback endpoint the driver
// opens, a tool round ends the response while the agent waits inside its call, and the
// next request's results answer the call on the same session. A scripted agent plays the
// ACP agent (test/support/acp_mcp_agent.mjs: an MCP client over HTTP). Also: the
// endpoint's refusals, and that close() leaves no process, no listener and no socket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { AcpAgent, createAgentFetch } from 'agentwire/node';
import { PACKAGE } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';
import { scratchDir } from './support/scratch.mjs';

const AGENT = join(PACKAGE, 'test/support/acp_mcp_agent.mjs');
const URL = 'http://agentwire.invalid/v1/chat/completions';
const TASK = 'Find the failing test and fix it.';
const TOOLS = [
  {
    type: 'function',
    function: { name: 'bash', description: 'Run a shell command.', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  },
];

/** An AcpAgent running the scripted agent with `rounds` tool rounds, and its log. */
function start(rounds, config = {}) {
  const log = join(scratchDir('agentwire-acp-mcp-'), 'agent.jsonl');
  const agent = new AcpAgent({
    command: 'node',
    args: [AGENT, '--tool-rounds', String(rounds)],
    env: { ...process.env, ACP_MCP_AGENT_LOG: log },
    config: { cwd: '/home/user/project', poolSize: 0, ...config },
    killGraceMs: 500,
  });
  const events = (kind) =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line))
          .filter((event) => kind === undefined || event.event === kind)
      : [];
  return { agent, events };
}

/** A Chat Completions client in a tool loop, sending its whole conversation each round. */
class Client {
  messages = [{ role: 'user', content: TASK }];

  constructor(fetch) {
    this.fetch = fetch;
  }

  async round(stream = false) {
    const response = await this.fetch(URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'auto', stream, messages: this.messages, tools: TOOLS }),
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const message = stream ? fromStream(text) : JSON.parse(text).choices[0];
    this.messages.push(message.message);
    if (message.finish_reason === 'stop') return { text: message.message.content };
    assert.equal(message.finish_reason, 'tool_calls', text);
    const [call] = message.message.tool_calls;
    const { command } = JSON.parse(call.function.arguments);
    this.messages.push({ role: 'tool', tool_call_id: call.id, content: `${command.replace('echo ', '')} (exit 0)` });
    return { text: message.message.content, command };
  }
}

/** A Chat Completions stream as the choice a non-streaming answer would give. */
function fromStream(text) {
  let content = '';
  let finish;
  const calls = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const choice = JSON.parse(line.slice(6)).choices[0];
    if (choice === undefined) continue;
    content += choice.delta.content ?? '';
    for (const call of choice.delta.tool_calls ?? []) {
      calls[call.index] ??= { id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } };
      calls[call.index].function.arguments += call.function.arguments ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  const message = { role: 'assistant', content };
  if (calls.length > 0) message.tool_calls = calls;
  return { message, finish_reason: finish };
}

/** An HTTP request with headers fetch does not let a caller set (Host): its status. */
function rawStatus(url, headers) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

const gone = (group) => waitUntil(() => aliveIn(group).length === 0 && zombies().length === 0, 5_000);

/** This process's listening servers and sockets, where the runtime says (Node). */
function openSockets() {
  if (typeof process.getActiveResourcesInfo !== 'function') return undefined;
  return process.getActiveResourcesInfo().filter((kind) => kind === 'TCPServerWrap' || kind === 'TCPSocketWrap').length;
}

test('a tool loop over ACP: one session, one prompt, each result an MCP answer on the same session', { timeout: 60_000 }, async () => {
  const ROUNDS = 3;
  const { agent, events } = start(ROUNDS);
  const client = new Client(createAgentFetch({ acpAgent: agent }));
  for (let round = 0; round < ROUNDS; round++) {
    // Streams and whole answers alike.
    assert.deepEqual(await client.round(round % 2 === 1), { text: `Round ${round}.`, command: `echo round-${round}` }, `round ${round}`);
    assert.equal(agent.parkedSessions, 1, 'the session waits inside its call');
  }
  assert.deepEqual(await client.round(), { text: `Done after ${ROUNDS} tool rounds.` });
  assert.equal(events('session').length, 1, 'one ACP session for the whole loop');
  const prompts = events('prompt');
  assert.equal(prompts.length, 1, 'the results are MCP answers, not prompts');
  assert.match(prompts[0].text, /Find the failing test/);
  assert.doesNotMatch(prompts[0].text, /tool-call block/, 'the tools come over MCP, not in the prompt');
  assert.deepEqual(
    events('result').map((e) => e.text),
    Array.from({ length: ROUNDS }, (_, r) => `round-${r} (exit 0)`),
    'the agent got the client’s results as its tools’ results',
  );
  const stats = agent.conversationStats;
  assert.equal(stats.resumed, ROUNDS);
  assert.equal(stats.fresh.noSession, 1);
  assert.match(agent.mcpEndpoint, /^http:\/\/127\.0\.0\.1:\d+\/mcp\/$/);

  // A follow-up on the same session: a prompt holding only the new message.
  client.messages.push({ role: 'user', content: 'Thanks. Run it once more?' });
  assert.deepEqual(await client.round(), { text: `Done after ${ROUNDS} tool rounds.` });
  assert.equal(events('session').length, 1);
  assert.equal(events('prompt').at(-1).text, 'Thanks. Run it once more?');
  const pid = agent.pid;
  await agent.close();
  assert.ok(await gone(pid));
});

test('the MCP endpoint refuses a wrong secret, an unknown path, a foreign Host, a web page and an oversized body; the session carries on', { timeout: 60_000 }, async () => {
  const { agent, events } = start(2, { mcp: { maxBodyBytes: 4096 } });
  const client = new Client(createAgentFetch({ acpAgent: agent }));
  assert.equal((await client.round()).command, 'echo round-0');
  const [{ url, auth }] = events('session');
  const endpoint = agent.mcpEndpoint;
  const port = new globalThis.URL(endpoint).port;
  const post = (target, headers, body = '{}') =>
    fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body }).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
  assert.equal(await post(url, { authorization: 'Bearer 00000000000000000000000000000000' }), 401, 'a wrong secret');
  assert.equal(await post(url, {}), 401, 'no secret');
  assert.equal(await post(`${endpoint}0123456789abcdef`, { authorization: auth }), 404, 'no session has this path');
  assert.equal(await post(`http://127.0.0.1:${port}/other`, { authorization: auth }), 404, 'not the endpoint');
  assert.equal(await rawStatus(url, { authorization: auth, host: `evil.example:${port}` }), 400, 'a foreign Host');
  assert.equal(await rawStatus(url, { authorization: auth, host: `localhost:${Number(port) + 1}` }), 400, 'another port');
  assert.equal(await rawStatus(url, { authorization: auth, origin: 'https://evil.example' }), 403, 'a web page');
  assert.equal(await post(url, { authorization: auth }, JSON.stringify({ padding: 'x'.repeat(8192) })), 413, 'a body over maxBodyBytes');
  // None of it touched the parked session.
  assert.equal((await client.round()).command, 'echo round-1');
  assert.deepEqual(await client.round(), { text: 'Done after 2 tool rounds.' });
  await agent.close();
});

test('close() with a call pending stops the agent, closes the endpoint and every connection to it', { timeout: 60_000 }, async () => {
  const before = openSockets();
  const { agent, events } = start(1);
  const client = new Client(createAgentFetch({ acpAgent: agent }));
  assert.equal((await client.round()).command, 'echo round-0');
  assert.equal(events('call').length, 1);
  assert.equal(events('result').length, 0, 'the agent waits inside its call, its SSE answer open');
  const endpoint = agent.mcpEndpoint;
  const pid = agent.pid;
  await agent.close();
  assert.ok(await gone(pid), 'the agent’s group is gone and reaped');
  await assert.rejects(fetch(endpoint, { method: 'POST', body: '{}' }), 'nothing listens any more');
  if (before !== undefined) assert.ok(await waitUntil(() => openSockets() <= before, 5_000), `sockets left open: ${openSockets()} > ${before}`);
  assert.throws(() => agent.turn('{}'), /closed/);
});

test('conversations off: a request with tools is refused as before, and no endpoint is opened', { timeout: 30_000 }, async () => {
  const log = join(scratchDir('agentwire-acp-mcp-'), 'agent.jsonl');
  const agent = new AcpAgent({ command: 'node', args: [AGENT], env: { ...process.env, ACP_MCP_AGENT_LOG: log }, conversations: false, killGraceMs: 500 });
  const response = await createAgentFetch({ acpAgent: agent })(URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: TASK }], tools: TOOLS }),
  });
  assert.equal(response.status, 400);
  assert.match(await response.text(), /tools/);
  assert.equal(agent.mcpEndpoint, undefined);
  await agent.close();
});
