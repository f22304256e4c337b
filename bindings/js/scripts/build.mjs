#!/usr/bin/env node
// Builds the package in place: the WebAssembly module (cargo, then the wasm-bindgen CLI of
// exactly the version Cargo.lock pins) into wasm/, and the TypeScript layer (tsc) into
// dist/ (with the demo's transcript, proxy/src/demo_transcript.jsonl). It is the package's
// `prepare` script, so `npm install <this folder>` and `npm pack` run it.
//
//   node scripts/build.mjs [--test-hooks] [--wasm-only]
//
// --test-hooks  builds the module with the `test-hooks` feature (the package's tests use it;
//               never publish such a build).
// --wasm-only   skips tsc.
//
// Needs Rust with the wasm32-unknown-unknown target and the pinned CLI: bindings/js/setup.sh
// installs both (the CLI into <repository>/.tools). $AGENTWIRE_WASM_BINDGEN names another
// CLI binary; its version is checked all the same.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = resolve(pkg, '../..');
const args = new Set(process.argv.slice(2));
for (const arg of args) {
  if (arg !== '--test-hooks' && arg !== '--wasm-only') fail(`unknown option ${arg}`);
}

function fail(message) {
  console.error(`agentwire build: ${message}`);
  process.exit(1);
}

function run(program, programArgs, options = {}) {
  execFileSync(program, programArgs, { stdio: 'inherit', cwd: root, ...options });
}

// WebAssembly SIMD (every engine the package targets has it: Node 16.4+, Bun, Deno, Chrome
// 91+, Safari 16.4+, Electron) lets memchr scan for line ends 16 bytes at a time.
const WASM_RUSTFLAGS = '-C target-feature=+simd128';

/** The version of `name` in Cargo.lock. */
function lockedVersion(name) {
  const lock = readFileSync(join(root, 'Cargo.lock'), 'utf8');
  const match = lock.match(new RegExp(`\\[\\[package\\]\\]\\nname = "${name}"\\nversion = "([^"]+)"`));
  if (!match) fail(`Cargo.lock has no ${name}`);
  return match[1];
}

/** The wasm-bindgen CLI, checked to be the version the crate is built with. */
function bindgen() {
  const wanted = lockedVersion('wasm-bindgen');
  const candidates = [process.env.AGENTWIRE_WASM_BINDGEN, join(root, '.tools/bin/wasm-bindgen'), 'wasm-bindgen'];
  for (const candidate of candidates) {
    if (!candidate) continue;
    let found;
    try {
      found = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
    } catch {
      continue;
    }
    if (found === `wasm-bindgen ${wanted}`) return candidate;
    fail(`${candidate} is "${found}", but the crate is built with wasm-bindgen ${wanted} (Cargo.lock); run bindings/js/setup.sh`);
  }
  fail(`no wasm-bindgen CLI ${wanted}; run bindings/js/setup.sh (it installs it into .tools/)`);
}

const cli = bindgen();
const metadata = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: root, encoding: 'utf8' }));
const cargoArgs = ['build', '--quiet', '-p', 'agentwire-js', '--profile', 'wasm', '--target', 'wasm32-unknown-unknown'];
if (args.has('--test-hooks')) cargoArgs.push('--features', 'test-hooks');
run('cargo', cargoArgs, { env: { ...process.env, CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS: WASM_RUSTFLAGS } });
const module = join(metadata.target_directory, 'wasm32-unknown-unknown/wasm/agentwire_js.wasm');
rmSync(join(pkg, 'wasm'), { recursive: true, force: true });
// --target web: ES module glue whose init takes the module's bytes (read synchronously in
// Node, Bun and Deno; fetched in browsers). Names and producers sections only add size.
run(cli, ['--target', 'web', '--remove-name-section', '--remove-producers-section', '--out-dir', join(pkg, 'wasm'), module]);

if (!args.has('--wasm-only')) {
  const tsc = join(pkg, 'node_modules/typescript/bin/tsc');
  if (!existsSync(tsc)) {
    // The package's own build tools only (typescript, @types/node), as the lock file pins them.
    run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: pkg });
  }
  rmSync(join(pkg, 'dist'), { recursive: true, force: true });
  run(process.execPath, [tsc, '-p', pkg]);
  // The demo's transcript is the proxies' (`--demo`), beside the module that plays it.
  copyFileSync(join(root, 'proxy/src/demo_transcript.jsonl'), join(pkg, 'dist/node/demo_transcript.jsonl'));
}

// The licence texts live at the repository root; the package carries copies of them.
for (const licence of ['LICENSE-MIT', 'LICENSE-APACHE']) copyFileSync(join(root, licence), join(pkg, licence));
