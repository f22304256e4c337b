// The Vercel AI SDK's own Anthropic and OpenAI Responses providers (@ai-sdk/anthropic 4.0.105,
// @ai-sdk/openai 4.0.118 with ai 7.0.173) against a running proxy over loopback, with the
// SDK's own fetch: POST /v1/messages and POST /v1/responses.
// tests/clients/python/test_proxies_ai_sdk.py starts each proxy and runs this file with
// `node --test`, passing AGENTWIRE_E2E_BASE_URL and AGENTWIRE_E2E_API_KEY; the model names
// select what the replay agent behind the proxy plays (tests/clients/agent.sh). What each
// answer must hold is judged by ../node/judge.mjs, as for the openai-compatible provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { streamText, jsonSchema, tool } from 'ai';
import { assertTextAnswer, assertToolCallTurn, offeredTools, streamParts } from '../node/judge.mjs';

const baseURL = process.env.AGENTWIRE_E2E_BASE_URL;
const apiKey = process.env.AGENTWIRE_E2E_API_KEY;
assert.ok(baseURL && apiKey, 'AGENTWIRE_E2E_BASE_URL and AGENTWIRE_E2E_API_KEY name the proxy under test');

// Each dialect: its model for an API key and a name, and the provider options that ask for
// reasoning.
const dialects = {
  'Anthropic Messages': {
    modelFor: (key) => createAnthropic({ baseURL: `${baseURL}/v1`, apiKey: key }),
    reasoning: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } },
  },
  'OpenAI Responses': {
    modelFor: (key) => (id) => createOpenAI({ baseURL: `${baseURL}/v1`, apiKey: key }).responses(id),
    // The replayed model names are unknown to the provider: it is told they reason.
    reasoning: { openai: { reasoningSummary: 'auto', forceReasoning: true } },
  },
};

for (const [name, { modelFor, reasoning }] of Object.entries(dialects)) {
  const model = modelFor(apiKey);

  test(`${name}: text, reasoning parts, usage and finish reason`, async () => {
    const { result, parts } = await streamParts(streamText, { model: model('e2e-text'), prompt: 'hi', providerOptions: reasoning });
    await assertTextAnswer(result, parts);
  });

  test(`${name}: tool-call parts with parsed input, finish reason tool-calls`, async () => {
    const tools = offeredTools(tool, jsonSchema);
    const { parts } = await streamParts(streamText, {
      model: model('e2e-tools'),
      prompt: 'fix the failing test',
      tools,
      providerOptions: reasoning,
    });
    assertToolCallTurn(parts);
  });

  test(`${name}: a wrong key is an error part, and no text`, async () => {
    const errors = [];
    const result = streamText({
      model: modelFor('sk-wrong')('e2e-text'),
      prompt: 'hi',
      maxRetries: 0,
      onError: ({ error }) => errors.push(error),
    });
    const parts = [];
    for await (const part of result.fullStream) parts.push(part);
    assert.equal(parts.filter((p) => p.type === 'text-delta').length, 0);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].statusCode, 401);
  });
}
