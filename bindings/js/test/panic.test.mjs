// A panic inside the WebAssembly module (forced through the test hook of a module built
// with the `test-hooks` feature) leaves the process alive, poisons that one object, and
// corrupts no other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { AgentwireError, Bridge, Decoder } from 'agentwire';
import { forcePanic, hasTestHooks } from '../dist/testing.js';
import { decode, read, respond } from './support/drive.mjs';
import { DEFAULT_REQUEST, FIXTURES } from './support/paths.mjs';

const required = process.env.AGENTWIRE_REQUIRE_TEST_HOOKS === '1';
const skip = !hasTestHooks() && !required && 'the module was built without the test-hooks feature';
const TRANSCRIPT = read(join(FIXTURES, 'parallel_tools.jsonl'));
const half = TRANSCRIPT.subarray(0, TRANSCRIPT.length >> 1);
const rest = TRANSCRIPT.subarray(TRANSCRIPT.length >> 1);

test('the module has its test hooks', { skip: !required && 'AGENTWIRE_REQUIRE_TEST_HOOKS is not set' }, () => {
  assert.ok(hasTestHooks(), 'built with --features test-hooks');
});

test('a panic poisons its decoder only; a decoder mid-stream carries on unharmed', { skip }, () => {
  const expected = decode(TRANSCRIPT).events;
  const bystander = new Decoder();
  bystander.pushStdout(half);
  const events = bystander.drain();
  const victim = new Decoder();
  victim.pushStdout(half);
  assert.throws(() => forcePanic(victim), (e) => e instanceof AgentwireError && e.code === 'panic' && e.kind === 'panic' && /RawDecoder::test_panic/.test(e.message));
  assert.ok(victim.closed);
  assert.throws(() => victim.pushStdout(rest), { code: 'poisoned', kind: 'poisoned' });
  assert.throws(() => victim.drain(), { code: 'poisoned' });
  victim.free(); // does nothing: a poisoned object is given up, never freed
  assert.throws(() => victim.stats, { code: 'poisoned' });
  bystander.pushStdout(rest);
  bystander.pushEof();
  events.push(...bystander.drain());
  assert.deepEqual(events, expected);
  bystander.free();
  assert.deepEqual(decode(TRANSCRIPT).events, expected, 'a new decoder works');
});

test('a panic poisons its bridge only; a bridge mid-response carries on unharmed', { skip }, () => {
  const expected = respond(Buffer.from(DEFAULT_REQUEST), TRANSCRIPT);
  const bystander = new Bridge(DEFAULT_REQUEST, { nowMs: 0, created: 1_700_000_000, idSeed: 0n });
  const out = [];
  const take = () => {
    for (const o of bystander.drain()) if (o.type === 'body') out.push(o.data);
  };
  bystander.pushStdout(half, 0);
  take();
  const victim = new Bridge(DEFAULT_REQUEST);
  victim.pushStdout(half, 0);
  assert.throws(() => forcePanic(victim), { code: 'panic', message: /RawBridge::test_panic/ });
  assert.throws(() => victim.pushStdout(rest, 1), { code: 'poisoned' });
  assert.throws(() => victim.pollTimeout(), { code: 'poisoned' });
  bystander.pushStdout(rest, 0);
  bystander.agentExited({ code: 0 }, 0);
  take();
  bystander.free();
  assert.ok(Buffer.concat(out).equals(expected.body));
  assert.ok(respond(Buffer.from(DEFAULT_REQUEST), TRANSCRIPT).body.equals(expected.body), 'a new bridge works');
});

test('many panics in a row leave the module working', { skip }, () => {
  // Each trap abandons its frames on the module's stack; without the stack pointer reset
  // (module.ts) the 1 MiB stack runs out after about 11,000 panics.
  const expected = decode(TRANSCRIPT).text;
  for (let i = 0; i < 20_000; i++) {
    const victim = i % 2 ? new Decoder() : new Bridge(DEFAULT_REQUEST);
    assert.throws(() => forcePanic(victim), { code: 'panic' });
  }
  assert.equal(decode(TRANSCRIPT).text, expected);
});
