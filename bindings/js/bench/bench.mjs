// The JavaScript package against the Rust core on the same bytes, in the same run (a
// benchmark, not a test): Bridge.pushStdout + drain() over the 64 MiB event mix in 4 KiB
// chunks, the Decoder with events as JavaScript objects, the cost of one call into the
// module, and the module's size and load time.
//
//   node bench/bench.mjs        (or: bun bench/bench.mjs, deno run -A bench/bench.mjs)
//
// Build the package first (node scripts/build.mjs, without test hooks). The native side is
// bench/native.rs, built with cargo's bench profile; each round runs it once, then the
// package once, so that both see the same load on a shared machine; each side's best round
// counts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { Bridge, Decoder } from '../dist/index.js';

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = resolve(pkg, '../..');
const CHUNK = 4096;
const RUNS = 5;
const STREAM = '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}';
const runtime = globalThis.Deno ? `Deno ${Deno.version.deno}` : globalThis.Bun ? `Bun ${Bun.version}` : `Node ${process.version}`;

const scratch = mkdtempSync(join(tmpdir(), 'agentwire-bench-'));
const mixFile = join(scratch, 'mix.jsonl');
console.error('building the native side (cargo bench -p agentwire-js --bench native)…');
const built = execFileSync('cargo', ['bench', '--no-run', '--quiet', '--message-format=json', '-p', 'agentwire-js', '--bench', 'native'], {
  cwd: root,
  encoding: 'utf8',
  maxBuffer: 64 << 20,
});
const nativeProgram = built
  .split('\n')
  .filter((line) => line.startsWith('{'))
  .map((line) => JSON.parse(line))
  .find((m) => m.reason === 'compiler-artifact' && m.target?.name === 'native' && m.executable).executable;
const runNative = () => JSON.parse(execFileSync(nativeProgram, [mixFile, '1'], { encoding: 'utf8' }));
let native = runNative(); // writes the mix
const mix = new Uint8Array(readFileSync(mixFile));

/** One run of `run`, in MB/s of the mix, and what it counted. */
function once(run) {
  const started = performance.now();
  const counted = run();
  return { mbs: mix.length / ((performance.now() - started) / 1000) / 1e6, counted };
}

function bridgeRun() {
  const bridge = new Bridge(STREAM, { nowMs: 0, created: 1_700_000_000, idSeed: 0n });
  let out = 0;
  for (let at = 0; at < mix.length; at += CHUNK) {
    bridge.pushStdout(mix.subarray(at, at + CHUNK), 0);
    for (const output of bridge.drain()) if (output.type === 'body') out += output.data.length;
  }
  bridge.free();
  return out;
}

function decoderRun() {
  const decoder = new Decoder();
  let events = 0;
  for (let at = 0; at < mix.length; at += CHUNK) {
    decoder.pushStdout(mix.subarray(at, at + CHUNK));
    events += decoder.drain().length;
  }
  decoder.free();
  return events;
}

/** µs per call of `call`, the best of RUNS batches of `n`. */
function perCall(n, call) {
  let fastest = Infinity;
  for (let r = 0; r < RUNS; r++) {
    const started = performance.now();
    for (let i = 0; i < n; i++) call();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return (fastest * 1000) / n;
}

let bridge = { mbs: 0 };
let decoder = { mbs: 0 };
for (let round = 0; round < RUNS; round++) {
  const n = runNative();
  native = { ...n, bridge_mbs: Math.max(native.bridge_mbs, n.bridge_mbs), decoder_mbs: Math.max(native.decoder_mbs, n.decoder_mbs) };
  const b = once(bridgeRun);
  const d = once(decoderRun);
  if (b.mbs > bridge.mbs) bridge = b;
  if (d.mbs > decoder.mbs) decoder = d;
}
rmSync(scratch, { recursive: true });
if (bridge.counted !== native.body_bytes) throw new Error(`the bridge wrote ${bridge.counted} bytes, the native one ${native.body_bytes}`);
if (decoder.counted !== native.events) throw new Error(`the decoder gave ${decoder.counted} events, the native one ${native.events}`);

const idle = new Bridge(STREAM, { nowMs: 0 });
const empty = new Uint8Array(0);
const blank = new Uint8Array(CHUNK).fill(0x20); // one blank line of 4 KiB: scanned, then skipped
blank[CHUNK - 1] = 0x0a;
const lines = new Decoder();
const calls = {
  'a getter (bridge.isEnded)': perCall(1e6, () => idle.isEnded),
  'pollTimeout()': perCall(1e6, () => idle.pollTimeout()),
  'drain() with nothing pending': perCall(1e6, () => idle.drain()),
  'Decoder.pushStdout(0 bytes)': perCall(1e6, () => lines.pushStdout(empty)),
  'Decoder.pushStdout(4 KiB blank line)': perCall(1e5, () => lines.pushStdout(blank)),
  'Decoder.drain() with nothing pending': perCall(1e6, () => lines.drain()),
  'new Bridge(request) + free()': perCall(2e4, () => new Bridge(STREAM, { nowMs: 0, idSeed: 1n }).free()),
};
idle.free();
lines.free();

const wasm = readFileSync(join(pkg, 'wasm/agentwire_js_bg.wasm'));
let compile = Infinity;
for (let r = 0; r < RUNS; r++) {
  const started = performance.now();
  new WebAssembly.Instance(new WebAssembly.Module(wasm), { './agentwire_js_bg.js': new Proxy({}, { get: () => () => {} }) });
  compile = Math.min(compile, performance.now() - started);
}

const f = (n, d = 1) => n.toFixed(d);
console.log(`agentwire ${runtime}: the ${f(mix.length / 2 ** 20)} MiB event mix of the ${native.source}, ${CHUNK}-byte chunks, best of ${RUNS}`);
console.log(`  Bridge pushStdout + drain   ${f(bridge.mbs)} MB/s   native Rust ${f(native.bridge_mbs)} MB/s   ratio ${f(bridge.mbs / native.bridge_mbs, 2)}x`);
console.log(`  Decoder, events as objects  ${f(decoder.mbs)} MB/s   native Rust ${f(native.decoder_mbs)} MB/s   ratio ${f(decoder.mbs / native.decoder_mbs, 2)}x   (${decoder.counted} events)`);
for (const [what, us] of Object.entries(calls)) console.log(`  ${what.padEnd(42)} ${f(us, 3)} µs per call`);
console.log(`  module: ${wasm.length} bytes, ${gzipSync(wasm, { level: 9 }).length} gzipped; compile + instantiate ${f(compile)} ms`);
