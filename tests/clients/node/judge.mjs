// What the AI SDK must see for the end-to-end fixtures, shared by the judges that reach
// agentwire in different ways: over HTTP through a proxy (proxy.e2e.mjs) and in-process
// through the JavaScript package's createAgentFetch (bindings/js/test/fetch.test.mjs). The
// caller passes the AI SDK's functions in, so that each resolves its own pinned copy.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURES = join(resolve(dirname(fileURLToPath(import.meta.url)), '../../..'), 'tests/fixtures');

const events = (name) =>
  readFileSync(join(FIXTURES, name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
/** The `result` event of a fixture transcript. */
export const resultOf = (name) => events(name).find((e) => e.type === 'result');
const thinkingOf = (name) =>
  events(name)
    .filter((e) => e.type === 'thinking' && e.subtype === 'delta')
    .map((e) => e.text)
    .join('');
/** A finish reason as a string, whichever shape the AI SDK version gives it. */
export const reasonOf = (fr) => (typeof fr === 'string' ? fr : fr?.unified);
const deltaText = (p) => p.text ?? p.delta;

/** `streamText(options)` read to its end; no part may be an error. */
export async function streamParts(streamText, options) {
  const errors = [];
  const result = streamText({ maxRetries: 0, onError: ({ error }) => errors.push(error), ...options });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  assert.deepEqual(parts.filter((p) => p.type === 'error'), [], 'no chunk failed validation');
  assert.deepEqual(errors, []);
  return { result, parts };
}

/** The answer of `multibyte.jsonl` (model `e2e-text`): text, reasoning, usage, finish reason. */
export async function assertTextAnswer(result, parts) {
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
}

/** The tools of `requests/client_tools.json`, as AI SDK tools. */
export function offeredTools(tool, jsonSchema) {
  const offered = JSON.parse(readFileSync(join(FIXTURES, 'requests/client_tools.json'), 'utf8')).tools;
  return Object.fromEntries(
    offered.map((t) => [t.function.name, tool({ description: t.function.description, inputSchema: jsonSchema(t.function.parameters) })]),
  );
}

/** The turn of `client_native_batch.jsonl` (model `e2e-tools`): two parallel tool calls. */
export function assertToolCallTurn(parts) {
  const calls = parts.filter((p) => p.type === 'tool-call');
  assert.deepEqual(calls.map((c) => c.toolName), ['bash', 'read']);
  assert.ok(calls.every((c) => !c.invalid && typeof c.input === 'object'), 'inputs parse and match the schemas');
  assert.equal(calls[0].input.command, 'ls -la');
  assert.equal(new Set(calls.map((c) => c.toolCallId)).size, 2);
  assert.ok(parts.some((p) => p.type === 'reasoning-delta'), 'the thinking before the calls is a reasoning part');
  assert.equal(reasonOf(parts.find((p) => p.type === 'finish').finishReason), 'tool-calls');
}
