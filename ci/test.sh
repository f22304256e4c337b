#!/usr/bin/env bash
# The whole test suite: Rust (unit, integration, real-capture conformance, doc tests, the
# C header's freshness, and both example proxies over loopback with the replay agent —
# proxy/tests/proxy.rs), lints and docs, the C ABI from C (strict, static and shared, sanitizers,
# valgrind), the Python package built from source, and the real OpenAI clients judging the
# output. Run from the repository root; `.ci/run` installs what a fresh machine lacks and
# then runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
step() { printf '\n==> %s (at %d s)\n' "$*" "$(($(date +%s) - started))"; }

step "cargo test"
cargo test --workspace --all-features

step "cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet

step "C ABI (header, static + shared, ASan+UBSan, valgrind, plugin example)"
bindings/c/run-tests.sh

step "Python package (built from source, pytest)"
bindings/python/run-tests.sh

if [ -x tests/clients/run.sh ]; then
    step "real clients (openai-python, AI SDK, OpenCode; offline and against both proxies)"
    tests/clients/run.sh
fi

if [ -x fuzz/run-smoke.sh ] && [ "${AGENTWIRE_SKIP_FUZZ:-0}" != 1 ]; then
    step "fuzz smoke run"
    fuzz/run-smoke.sh "${AGENTWIRE_FUZZ_SECONDS:-30}"
fi

if [ -d benches ] && ls benches/*.rs >/dev/null 2>&1; then
    step "benches compile"
    cargo bench --workspace --no-run --quiet
fi

step "all tests passed"
