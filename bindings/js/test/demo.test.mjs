// The demo (`demo: true`): the proxies' recorded answer played through the bridge in place
// of cursor-agent, so that a user with no account and nothing installed gets a streamed
// answer in every dialect; no process is started, and stopping it early ends it as SIGTERM
// would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText } from 'ai';
import { AgentRun, createAgentFetch } from 'agentwire/node';
import { DIALECTS, ROOT } from './support/paths.mjs';

/** The transcript's answer, as the proxies' --demo serves it. */
const ANSWER = readFileSync(join(ROOT, 'proxy/src/demo_transcript.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line))
  .find((event) => event.type === 'result').result;
const ROUTES = { 'chat-completions': 'chat/completions', responses: 'responses', messages: 'messages' };

test('the AI SDK streams the demo: thinking, text, usage and finish reason, with no agent installed', async () => {
  const fetch = createAgentFetch({ demo: true, config: { cursorBinary: '/nonexistent/cursor-agent' } });
  const demo = createOpenAICompatible({ name: 'cursor', baseURL: 'http://agentwire.invalid/v1', fetch, includeUsage: true });
  const result = streamText({ model: demo('auto'), prompt: 'Hello!' });
  let text = '';
  let reasoning = '';
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') text += part.text;
    if (part.type === 'reasoning-delta') reasoning += part.text;
    if (part.type === 'error') throw part.error;
  }
  assert.equal(text, ANSWER);
  assert.ok(reasoning.length > 0, 'the transcript thinks first');
  assert.equal(await result.finishReason, 'stop');
  const usage = await result.usage;
  assert.deepEqual([usage.inputTokens, usage.outputTokens], [12, 48]);
});

test('every route answers the demo in its dialect, as one JSON body', async () => {
  const fetch = createAgentFetch({ demo: true });
  for (const [dialect, body] of Object.entries(DIALECTS)) {
    const response = await fetch(`http://agentwire.invalid/v1/${ROUTES[dialect]}`, { method: 'POST', body: body.replace('"stream":true', '"stream":false') });
    assert.equal(response.status, 200, dialect);
    assert.match(response.headers.get('content-type'), /application\/json/, dialect);
    assert.ok((await response.text()).includes(JSON.stringify(ANSWER).slice(1, -1)), dialect);
  }
});

test('an AgentRun plays the demo to its end and reports exit code 0, with no process', async () => {
  const run = new AgentRun(DIALECTS['chat-completions'], { demo: true });
  assert.equal(run.pid, undefined);
  let text = '';
  for await (const output of run) if (output.type === 'body') text += Buffer.from(output.data).toString();
  assert.ok(text.endsWith('data: [DONE]\n\n'));
  assert.deepEqual(await run.exited, { code: 0 });
});

test('leaving the demo early stops it as SIGTERM would', async () => {
  const run = new AgentRun(DIALECTS['chat-completions'], { demo: true });
  for await (const output of run) {
    if (output.type === 'body') break;
  }
  assert.deepEqual(await run.exited, { signal: 'SIGTERM' });
});
