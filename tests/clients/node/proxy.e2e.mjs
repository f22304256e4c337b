// The Vercel AI SDK (@ai-sdk/openai-compatible 2.0.41 with ai 6.0.168, what OpenCode 1.18.33
// bundles) against a running proxy over loopback, with the SDK's own fetch.
// tests/clients/python/test_proxies_ai_sdk.py starts each proxy and runs this file with
// `node --test`, passing AGENTWIRE_E2E_BASE_URL and AGENTWIRE_E2E_API_KEY; the model names
// select what the replay agent behind the proxy plays (tests/clients/agent.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText, jsonSchema, tool } from 'ai';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const FIXTURES = join(ROOT, 'tests/fixtures');
const baseURL = process.env.AGENTWIRE_E2E_BASE_URL;
const apiKey = process.env.AGENTWIRE_E2E_API_KEY;
assert.ok(baseURL && apiKey, 'AGENTWIRE_E2E_BASE_URL and AGENTWIRE_E2E_API_KEY name the proxy under test');

const provider = createOpenAICompatible({ name: 'agentwire', baseURL: `${baseURL}/v1`, apiKey, includeUsage: true });
const events = (name) =>
  readFileSync(join(FIXTURES, name), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
const resultOf = (name) => events(name).find((e) => e.type === 'result');
const thinkingOf = (name) => events(name).filter((e) => e.type === 'thinking' && e.subtype === 'delta').map((e) => e.text).join('');
const reasonOf = (fr) => (typeof fr === 'string' ? fr : fr?.unified);
const deltaText = (p) => p.text ?? p.delta;

async function run(options) {
  const errors = [];
  const result = streamText({ maxRetries: 0, onError: ({ error }) => errors.push(error), ...options });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  assert.deepEqual(parts.filter((p) => p.type === 'error'), [], 'no chunk failed validation');
  assert.deepEqual(errors, []);
  return { result, parts };
}

test('text, reasoning parts, usage and finish reason', async () => {
  const { result, parts } = await run({ model: provider('e2e-text'), prompt: 'hi' });
  const want = resultOf('multibyte.jsonl');
  assert.equal(parts.filter((p) => p.type === 'text-delta').map(deltaText).join(''), want.result);
  assert.equal(parts.filter((p) => p.type === 'text-start').length, 1);
  const reasoning = parts.filter((p) => p.type === 'reasoning-delta').map(deltaText).join('');
  assert.equal(reasoning, thinkingOf('multibyte.jsonl'));
  assert.ok(parts.some((p) => p.type === 'reasoning-start') && parts.some((p) => p.type === 'reasoning-end'));
  assert.equal(reasonOf(parts.find((p) => p.type === 'finish').finishReason), 'stop');
  const usage = await result.usage;
  const counts = want.usage;
  assert.equal(usage.inputTokens, counts.inputTokens + counts.cacheReadTokens + counts.cacheWriteTokens);
  assert.equal(usage.outputTokens, counts.outputTokens);
});

test('streamText with tools: tool-call parts with parsed input, finish reason tool-calls', async () => {
  const offered = JSON.parse(readFileSync(join(FIXTURES, 'requests/client_tools.json'), 'utf8')).tools;
  const tools = Object.fromEntries(
    offered.map((t) => [t.function.name, tool({ description: t.function.description, inputSchema: jsonSchema(t.function.parameters) })]),
  );
  const { parts } = await run({ model: provider('e2e-tools'), prompt: 'fix the failing test', tools });
  const calls = parts.filter((p) => p.type === 'tool-call');
  assert.deepEqual(calls.map((c) => c.toolName), ['bash', 'read']);
  assert.ok(calls.every((c) => !c.invalid && typeof c.input === 'object'), 'inputs parse and match the schemas');
  assert.equal(calls[0].input.command, 'ls -la');
  assert.equal(new Set(calls.map((c) => c.toolCallId)).size, 2);
  assert.ok(parts.some((p) => p.type === 'reasoning-delta'), 'the thinking before the calls is a reasoning part');
  assert.equal(reasonOf(parts.find((p) => p.type === 'finish').finishReason), 'tool-calls');
});
