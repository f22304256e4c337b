// The Vercel AI SDK's @ai-sdk/openai-compatible 2.0.41 with ai 6.0.168 (what OpenCode
// 1.18.33 bundles) judges agentwire's output. A custom fetch hands the SDK's real request
// body to the `translate` example (agentwire's Bridge over a recorded cursor-agent
// transcript) and answers with the status and body it produced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { streamText, generateText, jsonSchema, tool } from 'ai';
import { files as sharedFiles, skipReason } from '../../support/shared_fixtures.mjs';
import { capture, lines, parse } from '../../support/expected_answers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TRANSLATE = process.env.AGENTWIRE_TRANSLATE ?? join(ROOT, 'target/debug/examples/translate');
const jsonl = (dir) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => join(dir, f)) : []);
const PROJECT = jsonl(join(ROOT, 'tests/fixtures'));
const SHARED = sharedFiles('cursor-agent', '.jsonl');
const TRANSCRIPTS = [...PROJECT, ...SHARED];
// Request bodies and cut transcripts, removed when the process exits, whatever the tests gave.
const scratch = mkdtempSync(join(tmpdir(), 'agentwire-ai-sdk-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

// The transcript cut just before its `result` line: the agent died mid-answer.
function truncated(path) {
  const kept = [];
  for (const line of lines(path)) {
    if (parse(line)?.type === 'result') break;
    kept.push(line);
  }
  const out = join(scratch, `truncated-${basename(path)}`);
  writeFileSync(out, kept.join(''));
  return out;
}

function providerFor(transcript, { exit = 0, replies = [] } = {}) {
  let n = 0;
  const fetch = async (url, init) => {
    assert.equal(String(url), 'http://127.0.0.1:1/v1/chat/completions');
    const requestFile = join(scratch, `request-${process.pid}-${n++}.json`);
    writeFileSync(requestFile, init.body);
    const run = spawnSync(TRANSLATE, ['--request', requestFile, '--exit', String(exit), transcript], { maxBuffer: 1 << 28 });
    assert.equal(run.status, 0, run.stderr.toString());
    const first = run.stderr.toString().split('\n')[0];
    assert.match(first, /^status: \d{3}$/);
    const status = Number(first.slice('status: '.length));
    replies.push({ status, body: run.stdout.toString() });
    const stream = JSON.parse(init.body).stream === true && status === 200;
    return new Response(run.stdout, { status, headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' } });
  };
  return createOpenAICompatible({ name: 'agentwire', baseURL: 'http://127.0.0.1:1/v1', apiKey: 'sk-test', fetch, includeUsage: true });
}

const reasonOf = (fr) => (typeof fr === 'string' ? fr : fr?.unified);
const deltaText = (p) => p.text ?? p.delta;

async function collect(transcript, options = {}) {
  const errors = [];
  const result = streamText({
    model: providerFor(transcript, options)('auto'),
    prompt: 'hi',
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  return { result, parts, errors };
}

function assertUsage(usage, want) {
  assert.equal(usage.inputTokens, want.input, JSON.stringify(usage));
  assert.equal(usage.outputTokens, want.output);
  assert.equal(usage.totalTokens, want.input + want.output);
  assert.equal(usage.inputTokenDetails?.cacheReadTokens ?? usage.cachedInputTokens, want.cacheRead);
  // The provider keeps the raw usage object: a reported cost reaches the caller, and is
  // never invented. (Its schema drops `prompt_tokens_details.cache_write_tokens`, which it
  // does not declare, without a warning.)
  assert.equal(usage.raw?.cost, want.cost, JSON.stringify(usage.raw));
}

test('the real captures are there', { skip: skipReason() }, () => {
  assert.ok(SHARED.length > 0);
});

test('the fixtures are there', () => {
  assert.ok(PROJECT.length > 0, 'tests/fixtures holds the project transcripts');
  assert.ok(TRANSCRIPTS.some((t) => capture(t).expected === null), 'at least one failure without a result');
  console.log(`AI SDK: ${PROJECT.length} project and ${SHARED.length} real transcripts`);
});

for (const transcript of TRANSCRIPTS) {
  const name = basename(transcript);
  const want = capture(transcript);

  test(`streamText: ${name}`, async () => {
    const replies = [];
    const { result, parts, errors } = await collect(transcript, { exit: want.expected === null ? 1 : 0, replies });
    const errorParts = parts.filter((p) => p.type === 'error');
    if (want.expected === null) {
      // Nothing was streamed: the status and JSON error body reach the caller as an APICallError.
      const { status, body } = replies.at(-1);
      assert.ok(status >= 400, `status ${status}`);
      assert.equal(errorParts.length, 1);
      assert.equal(errorParts[0].error.statusCode, status);
      assert.equal(errorParts[0].error.message, JSON.parse(body).error.message);
      assert.ok(errors.length === 1);
      return;
    }
    // Chunk validation failures surface as error parts: there must be none.
    assert.deepEqual(errorParts, []);
    assert.deepEqual(errors, []);
    const start = parts.find((p) => p.type === 'start-step');
    assert.deepEqual(start.warnings, []);
    assert.deepEqual(await result.warnings, []);
    const texts = parts.filter((p) => p.type === 'text-delta');
    assert.equal(texts.map(deltaText).join(''), want.expected);
    if (texts.length > 0) {
      // One text part for the whole turn, whatever reasoning interleaves.
      assert.equal(parts.filter((p) => p.type === 'text-start').length, 1);
      assert.equal(new Set(texts.map((p) => p.id)).size, 1);
    }
    const finish = parts.find((p) => p.type === 'finish');
    assert.equal(reasonOf(finish.finishReason), 'stop', 'never other/unknown (OpenCode would loop)');
    assert.ok(!parts.some((p) => p.type === 'tool-call' || p.type === 'tool-input-start'), 'agent mode: no tool calls');
    const reasoning = parts.filter((p) => p.type === 'reasoning-delta').map(deltaText).join('');
    if (want.thinking) assert.ok(reasoning.length > 0, 'reasoning present');
    assert.equal(await result.reasoningText ?? '', reasoning);
    if (want.usage) assertUsage(await result.usage, want.usage);
    else assert.equal((await result.usage).inputTokens, undefined, 'no usage invented');
  });

  test(`generateText: ${name}`, async () => {
    if (want.expected === null) {
      const replies = [];
      const call = generateText({ model: providerFor(transcript, { exit: 1, replies })('auto'), prompt: 'hi', maxRetries: 0 });
      const { status, body } = await call.then(() => assert.fail('a failure must reject'), (error) => {
        assert.equal(error.statusCode, replies.at(-1).status);
        assert.equal(error.message, JSON.parse(replies.at(-1).body).error.message);
        return replies.at(-1);
      });
      assert.ok(status >= 400 && body.length > 0);
      return;
    }
    const result = await generateText({ model: providerFor(transcript)('auto'), prompt: 'hi', maxRetries: 0 });
    assert.equal(result.text, want.expected);
    assert.equal(reasonOf(result.finishReason), 'stop');
    assert.deepEqual(result.warnings, []);
    assert.deepEqual(result.toolCalls, []);
    if (want.thinking) assert.ok(result.reasoningText?.length > 0, 'reasoning present');
    if (want.usage) assertUsage(result.usage, want.usage);
    else assert.equal(result.usage.inputTokens, undefined, 'no usage invented');
  });

  if (want.expected !== null) {
    test(`crash mid-stream: ${name}`, async () => {
      const replies = [];
      const cut = truncated(transcript);
      const { parts, errors } = await collect(cut, { exit: 1, replies });
      const text = parts.filter((p) => p.type === 'text-delta').map(deltaText).join('');
      assert.ok(want.expected.startsWith(text), 'what was streamed is a prefix of the answer');
      const errorParts = parts.filter((p) => p.type === 'error');
      assert.equal(errorParts.length, 1, 'the failure reaches the caller once');
      assert.equal(errors.length, 1);
      const { status, body } = replies.at(-1);
      if (status === 200) {
        // The in-stream error frame: the provider passes its message through and the
        // step ends with finishReason "error", never a clean stop.
        const frame = body.split('\n\n').map((f) => f.replace(/^data: /, '')).map(parse).find((v) => v?.error);
        assert.equal(errorParts[0].error, frame.error.message);
        assert.equal(reasonOf(parts.find((p) => p.type === 'finish').finishReason), 'error');
      } else {
        assert.equal(errorParts[0].error.statusCode, status);
      }
      await assert.rejects(generateText({ model: providerFor(cut, { exit: 1 })('auto'), prompt: 'hi', maxRetries: 0 }), (e) => e.statusCode >= 500);
    });
  }
}

// A hand-made stream in the shape cursor produces when it thinks again after writing text
// (multi-segment turns: think, write, call a tool, think, write). This records exactly what
// openai-compatible 2.0.41 makes of it, so a change in the SDK shows up here.
test('reasoning after text (hand-made stream): reasoning reopens, the text part stays open', async () => {
  const chunk = (delta, finish_reason = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'auto', choices: [{ index: 0, delta, finish_reason }] })}\n\n`;
  const body = [
    chunk({ role: 'assistant', reasoning_content: 'plan' }),
    chunk({ content: 'Let me look. ' }),
    chunk({ reasoning_content: '\n[shell] ls\n' }),
    chunk({ reasoning_content: 'found it' }),
    chunk({ content: 'Done.' }),
    chunk({}, 'stop'),
    'data: [DONE]\n\n',
  ].join('');
  const fetch = async () => new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  const provider = createOpenAICompatible({ name: 'agentwire', baseURL: 'http://127.0.0.1:1/v1', fetch });
  const result = streamText({ model: provider('auto'), prompt: 'hi', maxRetries: 0 });
  const shape = [];
  for await (const part of result.fullStream) {
    if (['reasoning-start', 'reasoning-delta', 'reasoning-end', 'text-start', 'text-delta', 'text-end', 'error'].includes(part.type)) {
      shape.push([part.type, part.id, deltaText(part)].filter((x) => x !== undefined).join(' '));
    }
  }
  assert.deepEqual(shape, [
    'reasoning-start reasoning-0',
    'reasoning-delta reasoning-0 plan',
    'reasoning-end reasoning-0',
    'text-start txt-0',
    'text-delta txt-0 Let me look. ',
    // reasoning after text: a new reasoning part (same id, reused), text part not closed
    'reasoning-start reasoning-0',
    'reasoning-delta reasoning-0 \n[shell] ls\n',
    'reasoning-delta reasoning-0 found it',
    'reasoning-end reasoning-0',
    // the text continues in the part that was opened first
    'text-delta txt-0 Done.',
    'text-end txt-0',
  ]);
  assert.equal(await result.text, 'Let me look. Done.');
  assert.equal(reasonOf(await result.finishReason), 'stop');
  // The step's content keeps one text part (at its first position) and one part per reasoning run.
  assert.deepEqual((await result.content).map((p) => [p.type, p.text]), [
    ['reasoning', 'plan'],
    ['text', 'Let me look. Done.'],
    ['reasoning', '\n[shell] ls\nfound it'],
  ]);
});

test('reasoning after text (translate output of a capture with a tool call)', async () => {
  const transcript = join(ROOT, 'tests/fixtures/partial_recaps.jsonl');
  const { result, parts } = await collect(transcript);
  const kinds = parts.map((p) => p.type);
  const firstText = kinds.indexOf('text-start');
  const reasoningAfterText = kinds.slice(firstText).filter((k) => k === 'reasoning-start').length;
  assert.ok(firstText >= 0 && reasoningAfterText >= 1, `reasoning reopened after text: ${kinds.join(',')}`);
  assert.equal(kinds.filter((k) => k === 'text-start').length, 1);
  assert.equal(kinds.filter((k) => k === 'text-end').length, 1);
  assert.equal(await result.text, capture(transcript).expected);
  console.log(`reasoning after text: ${kinds.filter((k) => k === 'reasoning-start').length} reasoning parts, 1 text part`);
});

test('client tool calls: parallel batch', async () => {
  const transcript = join(ROOT, 'tests/fixtures/client_native_batch.jsonl');
  const tools = JSON.parse(readFileSync(join(ROOT, 'tests/fixtures/requests/client_tools.json'), 'utf8')).tools;
  const toolSet = Object.fromEntries(tools.map((t) => [t.function.name, tool({ description: t.function.description, inputSchema: jsonSchema(t.function.parameters) })]));
  const result = streamText({ model: providerFor(transcript)('auto'), prompt: 'fix it', tools: toolSet, maxRetries: 0 });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  assert.deepEqual(parts.filter((p) => p.type === 'error'), []);
  const calls = parts.filter((p) => p.type === 'tool-call');
  assert.deepEqual(calls.map((c) => c.toolName), ['bash', 'read']);
  assert.equal(calls[0].input.command, 'ls -la');
  assert.ok(calls.every((c) => !c.invalid), 'arguments parse and match the schema');
  const finish = parts.find((p) => p.type === 'finish');
  assert.equal(reasonOf(finish.finishReason), 'tool-calls');
});
