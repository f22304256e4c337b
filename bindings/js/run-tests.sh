#!/usr/bin/env bash
# Builds the JavaScript package and runs its tests: the crate's own unit tests and lints; the
# suite (test/*.test.mjs) under Node, Bun and Deno against a module built with the
# `test-hooks` feature, every answer compared with the Rust examples' on the same input;
# `tsc --noEmit --strict` over the examples and the OpenCode plugin's types; the READMEs'
# TypeScript blocks compiled strict and run (tests/readme/ts.mjs); then the package as users
# get it: installed from this folder with one `npm install` (its `prepare` builds it),
# packed, its tarball's contents checked and loaded, installed from the tarball with no
# build (what a registry would serve; OpenCode installs the plugin so), and the module's
# size compared with the README's figures.
#
# bindings/js/setup.sh installs what it needs first (idempotent).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
js=bindings/js
started=$(date +%s)
step() { printf '    [%3d s] %s\n' "$(($(date +%s) - started))" "$*"; }

$js/setup.sh

step "the crate: unit tests and lints (host and wasm32)"
cargo test --quiet -p agentwire-js
cargo clippy --quiet -p agentwire-js --all-targets --all-features -- -D warnings
cargo clippy --quiet -p agentwire-js --target wasm32-unknown-unknown --all-features -- -D warnings

step "the Rust programs the suite compares with and runs"
for program in events translate reply replay_agent acp acp_agent; do
    path=$(cd $js/test && node -e "import('./support/paths.mjs').then((m) => console.log(m.rustProgram('$program')))")
    export "AGENTWIRE_${program^^}=$path"
done

step "the package, with the test hooks"
node $js/scripts/build.mjs --test-hooks

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export AGENTWIRE_JS_CASES=$scratch/cases AGENTWIRE_JS_EXPECTED=$scratch/expected.json AGENTWIRE_REQUIRE_TEST_HOOKS=1
mkdir "$AGENTWIRE_JS_CASES"
step "the Rust answers to compare with"
node $js/test/expect.mjs "$AGENTWIRE_JS_EXPECTED"

step "the suite under Node $(node --version)"
(cd $js/test && node --test --test-reporter=tap ./*.test.mjs | grep -Ev '^ *(ok |# Subtest|---|\.\.\.|duration_ms|[0-9]+\.\.[0-9]+$)')
step "the suite under Bun $($js/test/node_modules/.bin/bun --version)"
(cd $js/test && node_modules/.bin/bun test --timeout 60000 2>&1 | grep -Ev '^\(pass\)|^$')
step "the suite under Deno $($js/test/node_modules/.bin/deno --version | head -1 | cut -d' ' -f2)"
(cd $js/test && NO_COLOR=1 node_modules/.bin/deno test -A --no-check --quiet 2>&1 | grep -Ev ' \.\.\. ok |^running |^$')

step "tsc --noEmit --strict over the examples and the OpenCode plugin's types"
node $js/node_modules/typescript/bin/tsc -p $js/test/tsconfig.examples.json

step "the READMEs' TypeScript blocks, compiled strict and run (tests/readme/ts.mjs)"
node tests/readme/ts.mjs

step "installed with one command: npm install <this folder> (its prepare builds the package)"
mkdir "$scratch/app"
if ! (cd "$scratch/app" && npm init -y && npm install --no-audit --no-fund "$root/$js") >"$scratch/install.log" 2>&1; then
    cat "$scratch/install.log"
    exit 1
fi
cat >"$scratch/app/check.mjs" <<'JS'
import { AcpConnection, Bridge, Decoder, countTokens, version } from 'agentwire';
import { createAgentFetch } from 'agentwire/node';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const decoder = new Decoder();
decoder.pushStdout(new TextEncoder().encode('{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"}]}}\n'));
decoder.pushEof();
if (decoder.drain()[0].text !== 'Hi') throw new Error('no text');
if (new Bridge('{"model":"auto","messages":[{"role":"user","content":"hi"}]}').invocation === undefined) throw new Error('no invocation');
const messages = '{"model":"auto","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}';
if (new Bridge(messages, { dialect: 'messages' }).invocation === undefined) throw new Error('no Messages invocation');
if (countTokens(messages).status !== 404) throw new Error('no count_tokens reply');
if (!new TextDecoder().decode(new AcpConnection().pollTransmit()).includes('"initialize"')) throw new Error('no ACP initialize');
if (typeof createAgentFetch() !== 'function') throw new Error('no fetch');
const { default: plugin } = await import('agentwire/opencode');
const { default: server } = await import('agentwire/server');
if (plugin.id !== 'agentwire' || server !== plugin || typeof plugin.server !== 'function') throw new Error('no OpenCode plugin');
const wasm = readFileSync(fileURLToPath(import.meta.resolve('agentwire/agentwire.wasm')));
const exports = WebAssembly.Module.exports(new WebAssembly.Module(wasm)).map((e) => e.name);
if (exports.some((name) => name.includes('testPanic'))) throw new Error('the installed module carries the test hooks');
console.log(`    agentwire ${version()} loads and answers`);
JS
(cd "$scratch/app" && node check.mjs)

step "npm pack: what the package holds"
(cd $js && npm pack --dry-run --json --ignore-scripts --loglevel=error) >"$scratch/pack.json"
node - "$scratch/pack.json" <<'JS'
const { readFileSync } = require('node:fs');
const [pack] = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const files = pack.files.map((f) => f.path).sort();
const required = ['package.json', 'README.md', 'LICENSE-MIT', 'LICENSE-APACHE', 'wasm/agentwire_js_bg.wasm', 'wasm/agentwire_js.js', 'wasm/agentwire_js.d.ts',
  'dist/index.js', 'dist/index.d.ts', 'dist/web.js', 'dist/web.d.ts', 'dist/node/index.js', 'dist/node/index.d.ts',
  'dist/node/demo_transcript.jsonl', 'dist/opencode/index.js', 'dist/opencode/index.d.ts', 'opencode.js'];
const missing = required.filter((f) => !files.includes(f));
const unwanted = files.filter((f) => /^(test|examples|scripts|src|ts)\/|testing\.|\.test\.|\.rs$|Cargo|tsconfig|node_modules/.test(f));
for (const f of files.filter((f) => f.startsWith('dist/') && f.endsWith('.js'))) {
  if (!files.includes(f.replace(/\.js$/, '.d.ts'))) missing.push(f.replace(/\.js$/, '.d.ts'));
}
if (missing.length || unwanted.length) {
  console.error(`npm pack: missing ${JSON.stringify(missing)}, unwanted ${JSON.stringify(unwanted)}`);
  process.exit(1);
}
// No `any` in the public types: the declarations, comments stripped.
for (const f of files.filter((f) => f.endsWith('.d.ts'))) {
  const code = readFileSync(`bindings/js/${f}`, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  if (/\bany\b/.test(code)) {
    console.error(`npm pack: ${f} declares something as any`);
    process.exit(1);
  }
}
const wasm = pack.files.find((f) => f.path === 'wasm/agentwire_js_bg.wasm').size;
console.log(`    ${files.length} files, ${pack.size} bytes packed (${pack.unpackedSize} unpacked); wasm ${wasm} bytes`);
JS
gzipped=$(gzip -9 -c $js/wasm/agentwire_js_bg.wasm | wc -c)
printf '    wasm gzipped: %d bytes\n' "$gzipped"

step "the module's size, as the README gives it"
node - README.md $js/wasm/agentwire_js_bg.wasm "$gzipped" <<'JS'
// The README's figures (kB of 1000 bytes), within 5% of the module built as users get it
// (gzipped: by `gzip -9`).
const { readFileSync } = require('node:fs');
const [readme, path, gzipped] = process.argv.slice(2);
const said = /the module is (\d+) KB \((\d+) KB gzipped/.exec(readFileSync(readme, 'utf8'));
if (!said) {
  console.error(`${readme} no longer gives the module's size as "the module is N KB (N KB gzipped"`);
  process.exit(1);
}
const wasm = readFileSync(path);
const sizes = { module: wasm.length, gzipped: Number(gzipped) };
const figures = { module: Number(said[1]), gzipped: Number(said[2]) };
let wrong = false;
for (const [what, bytes] of Object.entries(sizes)) {
  const kb = bytes / 1000;
  const off = Math.abs(kb - figures[what]) / figures[what];
  console.log(`    ${what}: ${kb.toFixed(0)} KB, the README says ${figures[what]} KB (${(off * 100).toFixed(1)}% off)`);
  if (off > 0.05) wrong = true;
}
if (wrong) {
  console.error(`${readme}: the module's size is more than 5% off: say ${(sizes.module / 1000).toFixed(0)} KB (${(sizes.gzipped / 1000).toFixed(0)} KB gzipped)`);
  process.exit(1);
}
JS

step "installed from the packed tarball: dist/ and wasm/ inside, no build at install"
# Without cargo or anything else on PATH but node: a build would fail (and scripts/ is not
# in the tarball).
(cd $js && npm pack --ignore-scripts --loglevel=error --pack-destination "$scratch") >/dev/null
mkdir "$scratch/packed"
cp "$scratch/app/check.mjs" "$scratch/packed/"
if ! (cd "$scratch/packed" && npm init -y && env PATH="$(dirname "$(command -v node)")" npm install --no-audit --no-fund "$scratch"/agentwire-*.tgz) >"$scratch/install.log" 2>&1; then
    cat "$scratch/install.log"
    exit 1
fi
(cd "$scratch/packed" && node check.mjs)

step "done"
