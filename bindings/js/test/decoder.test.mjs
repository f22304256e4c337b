// The Decoder from JavaScript: the same events as the Rust decoder, in every chunking, as
// typed objects; its stream forms; its errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { basename, join } from 'node:path';
import { AgentwireError, Decoder, DecoderStream, decodeStdout } from 'agentwire';
import { decode, read } from './support/drive.mjs';
import { FIXTURES, realCaptures, transcripts } from './support/paths.mjs';
import { rustEvents } from './support/rust.mjs';

const CHUNKS = [1, 7, 4096, Infinity];

test('every project transcript gives the Rust events, in every chunking', () => {
  for (const transcript of transcripts()) {
    const expected = rustEvents(transcript);
    assert.ok(expected.length > 0, basename(transcript));
    for (const chunk of CHUNKS) {
      assert.equal(decode(read(transcript), chunk).text, expected, `${basename(transcript)} in ${chunk}-byte pushes`);
    }
  }
});

test('every real capture gives the Rust events, in every chunking', { skip: realCaptures().length === 0 && '../shared/fixtures absent' }, () => {
  for (const transcript of realCaptures()) {
    const expected = rustEvents(transcript);
    for (const chunk of CHUNKS) {
      assert.equal(decode(read(transcript), chunk).text, expected, `${basename(transcript)} in ${chunk}-byte pushes`);
    }
  }
});

test('events are typed objects, narrowed on type', () => {
  const { events } = decode(read(join(FIXTURES, 'parallel_tools.jsonl')));
  const types = new Set(events.map((e) => e.type));
  for (const type of ['textDelta', 'agentActivity', 'usage', 'finish']) assert.ok(types.has(type), type);
  const started = events.find((e) => e.type === 'agentActivity');
  assert.equal(started.phase, 'started');
  assert.equal(started.tool, 'shell');
  assert.ok(!('outcome' in started) && !('startedSeen' in started));
  assert.equal(typeof started.arguments, 'string');
  const rejected = events.filter((e) => e.type === 'agentActivity' && e.phase === 'completed' && !e.startedSeen);
  assert.ok(rejected.length > 0);
  assert.equal(rejected[0].outcome, 'rejected');
  const usage = events.find((e) => e.type === 'usage');
  assert.equal(usage.promptTokens, usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens);
  assert.equal(usage.totalTokens, usage.promptTokens + usage.outputTokens);
  assert.deepEqual(events.at(-1), { type: 'finish', reason: 'stop' });
});

test('usage counts cache writes into the prompt, and reports no reasoning tokens it was not given', () => {
  const decoder = new Decoder();
  decoder.pushStdout(
    Buffer.from(
      '{"type":"result","subtype":"success","result":"","usage":{"inputTokens":3,"outputTokens":4,"cacheReadTokens":5,"cacheWriteTokens":6},"total_cost":0.25}\n',
    ),
  );
  const usage = decoder.drain().find((e) => e.type === 'usage');
  assert.deepEqual(usage, {
    type: 'usage',
    inputTokens: 3,
    outputTokens: 4,
    cacheReadTokens: 5,
    cacheWriteTokens: 6,
    cost: 0.25,
    promptTokens: 14,
    totalTokens: 18,
  });
  decoder.free();
});

test('pollEvent and events() hand out the same events as drain()', () => {
  const bytes = read(join(FIXTURES, 'multibyte.jsonl'));
  const { events } = decode(bytes);
  const polled = [];
  const iterated = [];
  const a = new Decoder();
  const b = new Decoder();
  a.pushStdout(bytes);
  b.pushStdout(bytes);
  a.pushEof();
  b.pushEof();
  for (let e = a.pollEvent(); e !== undefined; e = a.pollEvent()) polled.push(e);
  for (const e of b.events()) iterated.push(e);
  assert.deepEqual(polled, events);
  assert.deepEqual(iterated, events);
  assert.ok(a.isFinished && b.isFinished);
  assert.equal(a.pollEvent(), undefined);
  a.free();
  b.free();
});

test('stats, session id and model are the decoder’s', () => {
  const decoder = new Decoder({ decoder: { maxLineLen: 90 } });
  decoder.pushStdout(
    Buffer.from(
      '{"type":"system","subtype":"init","session_id":"s-1","model":"Composer 2"}\nnot json\n{' + 'x'.repeat(100) + '}\n',
    ),
  );
  decoder.pushEof();
  const events = decoder.drain();
  assert.equal(events.at(-1).type, 'failed');
  assert.ok(events.at(-1).message.length > 0);
  assert.deepEqual(decoder.stats, {
    lines: 2,
    unknown: 0,
    nonJson: 1,
    badLines: 1,
    recaps: 0,
    reconciled: 0,
    divergences: 0,
    results: 0,
  });
  assert.equal(decoder.sessionId, 's-1');
  assert.equal(decoder.model, 'Composer 2');
  assert.ok(decoder.isFinished);
  decoder.free();
});

test('misuse throws AgentwireError with its code', () => {
  const decoder = new Decoder();
  decoder.pushEof();
  decoder.pushEof();
  assert.throws(() => decoder.pushStdout(Buffer.from('{}\n')), { name: 'AgentwireError', code: 'afterEof', kind: 'misuse', message: /after its end/ });
  assert.throws(() => decoder.pushStdout('text'), { code: 'invalidArgument', message: /Uint8Array/ });
  decoder.free();
  decoder.free();
  assert.ok(decoder.closed);
  assert.throws(() => decoder.drain(), (e) => e instanceof AgentwireError && e.code === 'closed');
  assert.throws(() => decoder.stats, { code: 'closed' });
  assert.throws(() => new Decoder({ decoder: { maxLines: 1 } }), { code: 'invalidArgument', message: /maxLines/ });
  assert.throws(() => new Decoder({ decoder: { maxLineLen: -1 } }), { code: 'invalidArgument' });
  assert.throws(() => new Decoder({ decoder: { maxLineLen: NaN } }), { code: 'invalidArgument', message: /maxLineLen/ });
  assert.throws(() => new Decoder('config'), { code: 'invalidArgument' });
});

async function* chunksOf(bytes, size) {
  for (let at = 0; at < bytes.length; at += size) {
    await null;
    yield bytes.subarray(at, at + size);
  }
}

test('decodeStdout gives the events of an async iterable and returns the stats', async () => {
  const transcript = join(FIXTURES, 'partial_recaps.jsonl');
  const bytes = read(transcript);
  const events = [];
  const stream = decodeStdout(chunksOf(bytes, 100));
  let step;
  while (!(step = await stream.next()).done) events.push(step.value);
  assert.deepEqual(events, decode(bytes).events);
  assert.equal(step.value.results, 1);
  assert.ok(step.value.recaps > 0);
});

test('DecoderStream transforms a byte stream into the events', async () => {
  const bytes = read(join(FIXTURES, 'thinking_repeats.jsonl'));
  const source = ReadableStream.from(chunksOf(bytes, 33));
  const events = [];
  for await (const event of source.pipeThrough(new DecoderStream())) events.push(event);
  assert.deepEqual(events, decode(bytes).events);
});
