// The Vercel AI SDK's @ai-sdk/openai-compatible 2.0.41 (what OpenCode 1.18.33 bundles)
// judges agentwire's output. A custom fetch hands the SDK's real request body to the
// `translate` example (agentwire's Bridge over a recorded cursor-agent transcript) and
// answers with the status and body it produced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText, generateText } from 'ai';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TRANSLATE = process.env.AGENTWIRE_TRANSLATE ?? join(ROOT, 'target/debug/examples/translate');
const jsonl = (dir) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => join(dir, f)) : []);
const TRANSCRIPTS = [...jsonl(join(ROOT, 'tests/fixtures')), ...jsonl(join(ROOT, '../shared/fixtures/cursor-agent'))];
const scratch = mkdtempSync(join(tmpdir(), 'agentwire-ai-sdk-'));

function events(path) {
  return readFileSync(path, 'utf8').split('\n').flatMap((line) => {
    try { const v = JSON.parse(line); return v && typeof v === 'object' ? [v] : []; } catch { return []; }
  });
}
const resultOf = (path) => { const r = events(path).find((e) => e.type === 'result'); return r ? (r.result ?? '') : null; };
const hasThinking = (path) => events(path).some((e) => e.type === 'thinking' && e.subtype === 'delta' && e.text);
const hasUsage = (path) => events(path).some((e) => e.type === 'result' && e.usage && typeof e.usage === 'object');

function providerFor(transcript) {
  let n = 0;
  const fetch = async (url, init) => {
    assert.match(String(url), /\/chat\/completions$/);
    const requestFile = join(scratch, `request-${process.pid}-${n++}.json`);
    writeFileSync(requestFile, init.body);
    const run = spawnSync(TRANSLATE, ['--request', requestFile, transcript], { maxBuffer: 1 << 28 });
    assert.equal(run.status, 0, run.stderr.toString());
    const status = Number(run.stderr.toString().split('\n')[0].replace('status: ', ''));
    const stream = JSON.parse(init.body).stream === true && status === 200;
    return new Response(run.stdout, { status, headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' } });
  };
  return createOpenAICompatible({ name: 'agentwire', baseURL: 'http://127.0.0.1:1/v1', apiKey: 'sk-test', fetch, includeUsage: true });
}

const reasonOf = (fr) => (typeof fr === 'string' ? fr : fr?.unified);

for (const transcript of TRANSCRIPTS) {
  const name = transcript.split('/').pop();
  test(`streamText: ${name}`, async () => {
    const expected = resultOf(transcript);
    const result = streamText({ model: providerFor(transcript)('auto'), prompt: 'hi', maxRetries: 0 });
    const parts = [];
    for await (const part of result.fullStream) parts.push(part);
    const errors = parts.filter((p) => p.type === 'error');
    if (expected === null) {
      assert.ok(errors.length > 0, 'a failure reaches the client as an error');
      return;
    }
    assert.deepEqual(errors, []);
    const text = parts.filter((p) => p.type === 'text-delta').map((p) => p.text ?? p.delta).join('');
    assert.equal(text, expected);
    const finish = parts.find((p) => p.type === 'finish');
    assert.equal(reasonOf(finish.finishReason), 'stop', 'never other/unknown (OpenCode would loop)');
    const reasoning = parts.filter((p) => p.type === 'reasoning-delta').map((p) => p.text ?? p.delta).join('');
    if (hasThinking(transcript)) assert.ok(reasoning.length > 0, 'reasoning present');
    const usage = await result.usage;
    if (hasUsage(transcript)) assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0, JSON.stringify(usage));
  });

  test(`generateText: ${name}`, async () => {
    const expected = resultOf(transcript);
    const call = generateText({ model: providerFor(transcript)('auto'), prompt: 'hi', maxRetries: 0 });
    if (expected === null) {
      await assert.rejects(call);
      return;
    }
    const result = await call;
    assert.equal(result.text, expected);
    assert.equal(reasonOf(result.finishReason), 'stop');
  });
}

test('reasoning after text: a new reasoning part, the text part continues', async () => {
  const transcript = join(ROOT, 'tests/fixtures/partial_recaps.jsonl');
  const result = streamText({ model: providerFor(transcript)('auto'), prompt: 'hi', maxRetries: 0 });
  const kinds = [];
  for await (const part of result.fullStream) kinds.push(part.type);
  const textStarts = kinds.filter((k) => k === 'text-start').length;
  const reasoningStarts = kinds.filter((k) => k === 'reasoning-start').length;
  assert.ok(reasoningStarts >= 2, `reasoning reopened after text: ${kinds.join(',')}`);
  assert.ok(textStarts >= 1);
  assert.equal(await result.text, resultOf(transcript));
  console.log(`reasoning-after-text parts: ${reasoningStarts} reasoning parts, ${textStarts} text part(s)`);
});

test('client tool calls: parallel batch', async () => {
  const transcript = join(ROOT, 'tests/fixtures/client_native_batch.jsonl');
  const tools = JSON.parse(readFileSync(join(ROOT, 'tests/fixtures/requests/client_tools.json'), 'utf8')).tools;
  const { jsonSchema, tool } = await import('ai');
  const toolSet = Object.fromEntries(tools.map((t) => [t.function.name, tool({ description: t.function.description, inputSchema: jsonSchema(t.function.parameters) })]));
  const result = streamText({ model: providerFor(transcript)('auto'), prompt: 'fix it', tools: toolSet, maxRetries: 0 });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  assert.deepEqual(parts.filter((p) => p.type === 'error'), []);
  const calls = parts.filter((p) => p.type === 'tool-call');
  assert.deepEqual(calls.map((c) => c.toolName), ['bash', 'read']);
  assert.equal(calls[0].input.command, 'ls -la');
  const finish = parts.find((p) => p.type === 'finish');
  assert.equal(reasonOf(finish.finishReason), 'tool-calls');
});
