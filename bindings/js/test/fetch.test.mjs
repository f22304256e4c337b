// createAgentFetch judged by real clients, with the replay agent standing in for
// cursor-agent: the AI SDK's openai-compatible provider (what OpenCode uses), its Anthropic
// and OpenAI (Responses) providers, and openai-node, each given the fetch as its own; no
// server, no port. Every route answers in its dialect, count_tokens and /api/hello without
// an agent. Cancelling a request stops the
// agent's whole process group and leaves no zombie.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { jsonSchema as jsonSchema7, streamText as streamText7, tool as tool7 } from 'ai7';
import OpenAI from 'openai';
import { countTokens, errorReply } from 'agentwire';
import { createAgentFetch } from 'agentwire/node';
import { assertTextAnswer, assertToolCallTurn, offeredTools, reasonOf, resultOf, streamParts } from '../../../tests/clients/node/judge.mjs';
import { DIALECTS, FIXTURES, PACKAGE, rustProgram } from './support/paths.mjs';
import { aliveIn, waitUntil, zombies } from './support/procs.mjs';
import { scratchDir } from './support/scratch.mjs';

const AGENT = join(PACKAGE, 'test/support/agent.sh');
const REPLAY = rustProgram('replay_agent');
const BASE_URL = 'http://agentwire.invalid/v1';

/** A fetch whose agent is the replay agent; `agent` gives it options, else the model picks a fixture. */
function agentFetch({ agent, log } = {}) {
  const env = { ...process.env, AGENTWIRE_REPLAY_AGENT: REPLAY, AGENTWIRE_TEST_AGENT: agent ?? '' };
  if (log !== undefined) env.AGENTWIRE_REPLAY_LOG = log;
  return createAgentFetch({ config: { cursorBinary: AGENT }, env, killGraceMs: 500 });
}

const logFile = () => join(scratchDir('agentwire-js-'), 'runs.jsonl');
const runsIn = (log) =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];

/** Every agent a log names is gone, its group empty, and none is left a zombie of ours. */
async function assertAgentsGone(log, ms) {
  const runs = runsIn(log);
  assert.ok(runs.length > 0, 'the agent ran');
  const gone = await waitUntil(() => runs.every((run) => aliveIn(run.pid).length === 0) && zombies().length === 0, ms);
  assert.ok(gone, `processes left: ${JSON.stringify(runs.map((run) => aliveIn(run.pid)))}, zombies: ${JSON.stringify(zombies())}`);
}

test('AI SDK streamText: text, reasoning, usage and finish reason', async () => {
  const provider = createOpenAICompatible({ name: 'cursor', baseURL: BASE_URL, fetch: agentFetch(), includeUsage: true });
  const { result, parts } = await streamParts(streamText, { model: provider('e2e-text'), prompt: 'hi' });
  await assertTextAnswer(result, parts);
});

test('AI SDK streamText with tools: two parallel tool calls, then the agent is stopped', async () => {
  const log = logFile();
  const provider = createOpenAICompatible({ name: 'cursor', baseURL: BASE_URL, fetch: agentFetch({ log }) });
  const tools = offeredTools(tool, jsonSchema);
  const { parts } = await streamParts(streamText, { model: provider('e2e-tools'), prompt: 'fix the failing test', tools });
  assertToolCallTurn(parts);
  await assertAgentsGone(log, 5_000);
});

// The AI SDK's Anthropic and OpenAI providers (ai 7) on the Messages and Responses routes.
// Anthropic's provider asks for thinking only when told to; OpenAI's asks for no reasoning
// summary for a model it does not know, so its answers carry none.
const THINKING = { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } };

test('AI SDK 7, @ai-sdk/anthropic streamText over POST /v1/messages: text, thinking, usage and finish reason', async () => {
  const anthropic = createAnthropic({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch() });
  const { result, parts } = await streamParts(streamText7, { model: anthropic('e2e-text'), prompt: 'hi', maxOutputTokens: 1024, providerOptions: THINKING });
  await assertTextAnswer(result, parts);
});

test('AI SDK 7, @ai-sdk/anthropic streamText with tools: two parallel tool calls, then the agent is stopped', async () => {
  const log = logFile();
  const anthropic = createAnthropic({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch({ log }) });
  const tools = offeredTools(tool7, jsonSchema7);
  const { parts } = await streamParts(streamText7, { model: anthropic('e2e-tools'), prompt: 'fix the failing test', maxOutputTokens: 1024, tools, providerOptions: THINKING });
  assertToolCallTurn(parts);
  await assertAgentsGone(log, 5_000);
});

test('AI SDK 7, @ai-sdk/openai streamText over POST /v1/responses: text, usage and finish reason', async () => {
  const openai = createOpenAI({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch() });
  const { result, parts } = await streamParts(streamText7, { model: openai.responses('e2e-text'), prompt: 'hi' });
  await assertTextAnswer(result, parts, { reasoning: false });
});

test('AI SDK 7, @ai-sdk/openai streamText with tools over POST /v1/responses: two parallel tool calls, then the agent is stopped', async () => {
  const log = logFile();
  const openai = createOpenAI({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch({ log }) });
  const tools = offeredTools(tool7, jsonSchema7);
  const { parts } = await streamParts(streamText7, { model: openai.responses('e2e-tools'), prompt: 'fix the failing test', tools });
  assertToolCallTurn(parts, { reasoning: false });
  await assertAgentsGone(log, 5_000);
});

test('AI SDK generateText: the non-streaming answer', async () => {
  const provider = createOpenAICompatible({ name: 'cursor', baseURL: BASE_URL, fetch: agentFetch() });
  const { text, finishReason } = await generateText({ model: provider('e2e-text'), prompt: 'hi', maxRetries: 0 });
  assert.equal(text, resultOf('multibyte.jsonl').result);
  assert.equal(reasonOf(finishReason), 'stop');
});

test('openai-node, streaming: the text and the usage chunk', async () => {
  const client = new OpenAI({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch(), maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'e2e-text',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'hi' }],
  });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  const want = resultOf('multibyte.jsonl');
  assert.equal(text, want.result);
  assert.equal(usage.completion_tokens, want.usage.outputTokens);
});

test('openai-node, not streaming: the whole message', async () => {
  const client = new OpenAI({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch(), maxRetries: 0 });
  const completion = await client.chat.completions.create({ model: 'e2e-text', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(completion.choices[0].message.content, resultOf('multibyte.jsonl').result);
  assert.equal(completion.choices[0].finish_reason, 'stop');
  assert.equal(completion.object, 'chat.completion');
});

test('openai-node sees failures with their true status and does not retry them', async () => {
  const log = logFile();
  const client = new OpenAI({ baseURL: BASE_URL, apiKey: 'unused', fetch: agentFetch({ log }), maxRetries: 3 });
  const error = await client.chat.completions
    .create({ model: 'e2e-not-logged-in', messages: [{ role: 'user', content: 'hi' }] })
    .then(() => undefined, (e) => e);
  assert.ok(error instanceof OpenAI.APIError, String(error));
  assert.equal(error.status, 401);
  assert.equal(runsIn(log).length, 1, 'x-should-retry: false keeps the client from retrying');
});

test('aborting a stream stops the agent’s whole process group within 1 s and leaves no zombie', async (t) => {
  const log = logFile();
  const fetch = agentFetch({ log, agent: `--transcript ${join(FIXTURES, 'parallel_tools.jsonl')} --delay-ms 200 --spawn-child` });
  const controller = new AbortController();
  const response = await fetch(`${BASE_URL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    signal: controller.signal,
  });
  assert.equal(response.status, 200);
  const reader = response.body.getReader();
  const first = await reader.read();
  assert.match(Buffer.from(first.value).toString(), /^data: /);
  assert.ok(await waitUntil(() => runsIn(log).length === 1 && runsIn(log)[0].child_pid !== null, 5_000), 'the agent and its child started');
  const [run] = runsIn(log);
  assert.ok(aliveIn(run.pid).length >= 2, 'the agent and its child share its group');
  const aborted = performance.now();
  controller.abort();
  await assert.rejects(reader.read(), { name: 'AbortError' });
  assert.ok(await waitUntil(() => aliveIn(run.pid).length === 0 && zombies().length === 0, 1_000), 'the group is gone within 1 s');
  t.diagnostic(`the agent's group was gone ${(performance.now() - aborted).toFixed(1)} ms after the abort`);
});

test('cancelling the response body stops the agent too', async () => {
  const log = logFile();
  const fetch = agentFetch({ log, agent: `--transcript ${join(FIXTURES, 'parallel_tools.jsonl')} --delay-ms 200 --spawn-child` });
  const response = await fetch(`${BASE_URL}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const reader = response.body.getReader();
  await reader.read();
  assert.ok(await waitUntil(() => runsIn(log)[0]?.child_pid != null, 5_000));
  await reader.cancel();
  await assertAgentsGone(log, 1_000);
});

test('a request aborted before its answer starts rejects like fetch', async () => {
  const fetch = agentFetch({ agent: '--transcript /dev/null --hang' });
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(
    fetch(`${BASE_URL}/chat/completions`, { method: 'POST', body: '{}', signal: controller.signal }),
    { name: 'AbortError' },
  );
});

const post = (fetch, path, body, headers = {}) => fetch(`${BASE_URL}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

test('each route runs the agent in its dialect; any query string is accepted', async () => {
  const log = logFile();
  const fetch = agentFetch({ log, agent: `--transcript ${join(FIXTURES, 'multibyte.jsonl')}` });
  const routes = [
    ['/chat/completions', DIALECTS['chat-completions'], /^data: \{"id":"chatcmpl-/, /data: \[DONE\]\n\n$/],
    ['/responses', DIALECTS.responses, /^event: response\.created\n/, /event: response\.completed\n/],
    ['/messages?beta=true', DIALECTS.messages, /^event: message_start\n/, /event: message_stop\n/],
    ['/messages', DIALECTS.messages, /^event: message_start\n/, /event: message_stop\n/],
  ];
  for (const [path, body, start, end] of routes) {
    const response = await post(fetch, path, body);
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get('content-type'), 'text/event-stream', path);
    const text = await response.text();
    assert.match(text, start, path);
    assert.match(text, end, path);
  }
  assert.equal(runsIn(log).length, routes.length);
});

test('count_tokens answers without an agent, as the package’s countTokens does', async () => {
  const log = logFile();
  const fetch = agentFetch({ log });
  for (const [body, status] of [[DIALECTS.messages, 404], ['{"model":', 400]]) {
    const response = await post(fetch, '/messages/count_tokens?beta=true', body, { 'anthropic-version': '2023-06-01' });
    const expected = countTokens(body);
    assert.equal(response.status, status);
    assert.equal(response.status, expected.status);
    assert.equal(response.headers.get('x-should-retry'), 'false');
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(Buffer.from(expected.body)));
  }
  assert.equal(runsIn(log).length, 0, 'no agent ran');
});

test('HEAD /api/hello answers 200 with nothing, and starts no agent', async () => {
  const log = logFile();
  const fetch = agentFetch({ log });
  const hello = await fetch('http://agentwire.invalid/api/hello', { method: 'HEAD' });
  assert.equal(hello.status, 200);
  assert.equal((await hello.arrayBuffer()).byteLength, 0);
  const wrong = await fetch('http://agentwire.invalid/api/hello', { method: 'GET' });
  assert.deepEqual([wrong.status, wrong.headers.get('allow'), (await wrong.json()).type], [405, 'HEAD', 'error']);
  assert.equal(runsIn(log).length, 0);
});

test('every refusal is in its route’s dialect, as errorReply renders it', async () => {
  const fetch = agentFetch();
  const missing = await fetch(`${BASE_URL}/models`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, 'not_found');
  const anthropicMissing = await fetch(`${BASE_URL}/models`, { headers: { 'anthropic-version': '2023-06-01' } });
  assert.deepEqual([anthropicMissing.status, (await anthropicMissing.json()).error.type], [404, 'not_found_error']);
  for (const [path, dialect] of [['/chat/completions', 'chat-completions'], ['/responses', 'responses'], ['/messages?beta=true', 'messages'], ['/messages/count_tokens', 'messages']]) {
    const wrong = await fetch(`${BASE_URL}${path}`, { method: 'GET' });
    assert.equal(wrong.status, 405, path);
    assert.equal(wrong.headers.get('allow'), 'POST', path);
    assert.equal(wrong.headers.get('x-should-retry'), 'false', path);
    const expected = errorReply(dialect, 'methodNotAllowed', `GET is not allowed on ${new URL(`${BASE_URL}${path}`).pathname}: use POST`);
    assert.ok(Buffer.from(await wrong.arrayBuffer()).equals(Buffer.from(expected.body)), path);
    const invalid = await post(fetch, path, '{"model":');
    assert.equal(invalid.status, 400, path);
    assert.equal(invalid.headers.get('x-should-retry'), 'false', path);
    const error = await invalid.json();
    assert.equal(error.type === 'error', dialect === 'messages', path);
    assert.equal(error.error.type, 'invalid_request_error', path);
  }
});
