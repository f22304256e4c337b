// An agent that cannot start (no such binary, or a wrapper whose program is missing: exit
// 127 with nothing on stdout) is a misconfiguration everywhere in the package: 500 with
// `x-should-retry: false` and the install hint naming the option that names the binary,
// from AgentRun, createAgentFetch (every route) and AcpAgent. With `retryAdvice: 'status'`
// the fetch answers it as a 400, and the AI SDK, which retries every 5xx whatever the
// header says, makes one attempt and shows the hint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText } from 'ai';
import { AcpAgent, AgentRun, createAgentFetch } from 'agentwire/node';
import { DIALECTS, PACKAGE, rustProgram } from './support/paths.mjs';

const MISSING = '/nonexistent/cursor-agent';
const ROUTES = { 'chat-completions': 'chat/completions', responses: 'responses', messages: 'messages' };
const post = (fetch, dialect, body = DIALECTS[dialect]) =>
  fetch(`http://agentwire.invalid/v1/${ROUTES[dialect]}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

async function collect(outputs) {
  let head;
  const body = [];
  for await (const output of outputs) {
    if (output.type === 'head') head = output;
    else body.push(output.data);
  }
  return { head, text: Buffer.concat(body).toString() };
}

/** The hint: how to install the CLI, and the option that names the binary. */
function assertInstallHint(text) {
  assert.match(text, /curl https:\/\/cursor\.com\/install -fsS \| bash/);
  assert.match(text, /cursorBinary/);
}

test('createAgentFetch: a missing binary answers 500, not retryable, with the install hint, on every route', async () => {
  const fetch = createAgentFetch({ config: { cursorBinary: MISSING } });
  for (const dialect of Object.keys(DIALECTS)) {
    const response = await post(fetch, dialect);
    assert.equal(response.status, 500, dialect);
    assert.equal(response.headers.get('x-should-retry'), 'false', dialect);
    const text = await response.text();
    assertInstallHint(text);
    assert.match(text, /could not start \/nonexistent\/cursor-agent/);
  }
});

test('a wrapper whose program is missing (exit 127, nothing on stdout) is the same misconfiguration', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'agentwire-js-'));
  try {
    const wrapper = join(scratch, 'cursor-agent');
    writeFileSync(wrapper, '#!/bin/sh\nexec /nonexistent/node "$0.js" "$@"\n', { mode: 0o755 });
    const { head, text } = await collect(new AgentRun(DIALECTS['chat-completions'], { config: { cursorBinary: wrapper } }));
    assert.equal(head.status, 500);
    assert.equal(head.retryable, false);
    assertInstallHint(text);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test("retryAdvice 'status': the same failure is a 400 the AI SDK tries once, and it shows the hint", async () => {
  const fetch = createAgentFetch({ config: { cursorBinary: MISSING }, retryAdvice: 'status' });
  const response = await post(fetch, 'chat-completions');
  assert.equal(response.status, 400);
  assert.equal(response.headers.get('x-should-retry'), 'false');
  const body = await response.json();
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.code, 'agent_misconfigured');
  assertInstallHint(body.error.message);

  let attempts = 0;
  const counting = async (input, init) => {
    attempts += 1;
    return fetch(input, init);
  };
  const provider = createOpenAICompatible({ name: 'cursor', baseURL: 'http://agentwire.invalid/v1', fetch: counting });
  await assert.rejects(generateText({ model: provider('auto'), prompt: 'hi' }), (error) => {
    const cause = APICallError.isInstance(error) ? error : error.lastError;
    assert.ok(APICallError.isInstance(cause), String(error));
    assert.equal(cause.isRetryable, false);
    assertInstallHint(cause.message);
    return true;
  });
  assert.equal(attempts, 1);
});

test("retryAdvice 'status' changes only the permanent failures clients retry by status", async () => {
  const env = { ...process.env, AGENTWIRE_REPLAY_AGENT: rustProgram('replay_agent') };
  const fetch = createAgentFetch({ config: { cursorBinary: join(PACKAGE, 'test/support/agent.sh') }, env, retryAdvice: 'status' });
  const answered = await post(fetch, 'chat-completions', '{"model":"e2e-text","messages":[{"role":"user","content":"hi"}]}');
  assert.equal(answered.status, 200);
  assert.match((await answered.json()).choices[0].message.content, /Café/);
  // A crash may go better next time: its 502 and its advice stay.
  const crashed = await post(fetch, 'chat-completions', '{"model":"e2e-crash","messages":[{"role":"user","content":"hi"}]}');
  assert.equal(crashed.status, 502);
  assert.equal(crashed.headers.get('x-should-retry'), 'true');
  assert.equal((await crashed.json()).error.type, 'server_error');
  // Permanent failures whose status no client retries keep it.
  const loggedOut = await post(fetch, 'chat-completions', '{"model":"e2e-not-logged-in","messages":[{"role":"user","content":"hi"}]}');
  assert.equal(loggedOut.status, 401);
  assert.match((await loggedOut.json()).error.message, /cursor-agent login/);
  // A used-up usage limit is a 429 only the header says not to retry: a 400 here.
  const limited = await post(fetch, 'chat-completions', '{"model":"e2e-usage-limit","messages":[{"role":"user","content":"hi"}]}');
  assert.equal(limited.status, 400);
  assert.equal((await limited.json()).error.code, 'insufficient_quota');
  // count_tokens needs no agent: its 404 is untouched.
  const count = await fetch('http://agentwire.invalid/v1/messages/count_tokens', { method: 'POST', body: DIALECTS.messages });
  assert.equal(count.status, 404);
});

test('AcpAgent: a missing program fails the turn as a misconfiguration, and listModels says why', { timeout: 20_000 }, async () => {
  const agent = new AcpAgent({ command: '/nonexistent/acp-agent', config: { cwd: '/tmp' } });
  try {
    const { head, text } = await collect(agent.turn(DIALECTS['chat-completions'].replace('"auto"', '"default"')));
    assert.equal(head.status, 500);
    assert.equal(head.retryable, false);
    assert.match(text, /curl https:\/\/cursor\.com\/install -fsS \| bash/);
    assert.match(text, /could not start \/nonexistent\/acp-agent/);
    await assert.rejects(agent.listModels(), /could not be started[\s\S]*cursor\.com\/install/);
    // The fetch over the same agent, for the AI SDK: one 400.
    const fetch = createAgentFetch({ acpAgent: agent, retryAdvice: 'status' });
    const response = await post(fetch, 'messages', DIALECTS.messages.replace('"auto"', '"default"'));
    assert.equal(response.status, 400);
    const body = await response.json();
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /cursor\.com\/install/);
  } finally {
    await agent.close();
  }
});
