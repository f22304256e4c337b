// Creating and freeing objects leaks nothing: 10,000 cycles do not grow the module's memory
// (every leak inside it would, a page at a time), nor the process's resident set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Bridge, Decoder } from 'agentwire';
import { wasmMemory } from '../dist/testing.js';
import { read } from './support/drive.mjs';
import { DEFAULT_REQUEST, FIXTURES } from './support/paths.mjs';

const TRANSCRIPT = read(join(FIXTURES, 'partial_recaps.jsonl'));
const CONFIG = { workspace: '/srv', decoder: { maxNotes: 1024 } };

function cycle() {
  const bridge = new Bridge(DEFAULT_REQUEST, { config: CONFIG });
  bridge.pushStdout(TRANSCRIPT, 1);
  bridge.drain();
  bridge.agentExited({ code: 0 }, 2);
  bridge.drain();
  bridge.free();
  const decoder = new Decoder(CONFIG);
  decoder.pushStdout(TRANSCRIPT);
  decoder.pushEof();
  decoder.drain();
  decoder.free();
  // Errors are objects of the module too.
  try {
    new Decoder({ unknownField: 1 });
  } catch {
    // expected
  }
}

test('10,000 create/free cycles do not grow memory', () => {
  for (let i = 0; i < 1_000; i++) cycle();
  const memory = wasmMemory();
  const before = memory.buffer.byteLength;
  const rssBefore = process.memoryUsage().rss;
  for (let i = 0; i < 10_000; i++) cycle();
  assert.equal(memory.buffer.byteLength, before, 'the module’s memory grew');
  const grown = process.memoryUsage().rss - rssBefore;
  // The JavaScript heap comes and goes with the collector; a leak of the module's objects
  // would show above as growth, and any leak of a page per cycle here as 40 MB.
  assert.ok(grown < 16 << 20, `RSS grew by ${grown} bytes over 10,000 cycles`);
});
