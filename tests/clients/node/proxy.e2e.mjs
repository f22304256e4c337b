// The Vercel AI SDK (@ai-sdk/openai-compatible 2.0.41 with ai 6.0.168, what OpenCode 1.18.33
// bundles) against a running proxy over loopback, with the SDK's own fetch.
// tests/clients/python/test_proxies_ai_sdk.py starts each proxy and runs this file with
// `node --test`, passing AGENTWIRE_E2E_BASE_URL and AGENTWIRE_E2E_API_KEY; the model names
// select what the replay agent behind the proxy plays (tests/clients/agent.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText, jsonSchema, tool } from 'ai';
import { assertTextAnswer, assertToolCallTurn, offeredTools, streamParts } from './judge.mjs';

const baseURL = process.env.AGENTWIRE_E2E_BASE_URL;
const apiKey = process.env.AGENTWIRE_E2E_API_KEY;
assert.ok(baseURL && apiKey, 'AGENTWIRE_E2E_BASE_URL and AGENTWIRE_E2E_API_KEY name the proxy under test');

const provider = createOpenAICompatible({ name: 'agentwire', baseURL: `${baseURL}/v1`, apiKey, includeUsage: true });

test('text, reasoning parts, usage and finish reason', async () => {
  const { result, parts } = await streamParts(streamText, { model: provider('e2e-text'), prompt: 'hi' });
  await assertTextAnswer(result, parts);
});

test('streamText with tools: tool-call parts with parsed input, finish reason tool-calls', async () => {
  const tools = offeredTools(tool, jsonSchema);
  const { parts } = await streamParts(streamText, { model: provider('e2e-tools'), prompt: 'fix the failing test', tools });
  assertToolCallTurn(parts);
});
