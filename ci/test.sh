#!/usr/bin/env bash
# The whole test suite: Rust (unit, integration, real-capture conformance, doc tests, the
# C header's freshness, and both example proxies over loopback with the replay agent —
# proxy/tests/proxy.rs), lints and docs, the C ABI from C (strict, static and shared, sanitizers,
# valgrind), the Python package built from source, the JavaScript package (WebAssembly,
# under Node, Bun and Deno), the packages as users get them (the
# crate, the Python sdist and wheel, the C library installed into a prefix), the real
# OpenAI clients judging the output, and a fuzz smoke run.
#
# One command on a fresh clone: it first installs what it needs besides system packages
# into the project's own directories (ci/setup.sh: .venv, .tools, the pinned clients under
# tests/clients; nothing that is already current, so a second run installs nothing).
# The system packages it needs are checked first; `.ci/run` installs them, then runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
step() { printf '\n==> %s (at %d s)\n' "$*" "$(($(date +%s) - started))"; }

missing=()
for tool in cargo python3 node npm cc g++ pkg-config valgrind readelf; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "ci/test.sh: missing from PATH: ${missing[*]} (system packages: .ci/run installs valgrind, pkg-config and g++)" >&2
    exit 1
fi

step "set-up (ci/setup.sh)"
ci/setup.sh

step "cargo test"
cargo test --workspace --all-features

step "cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "the core without the C ABI (default features off, as the WebAssembly package builds it)"
cargo clippy --lib --no-default-features -- -D warnings

step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet

step "C ABI (header, static + shared, ASan+UBSan, valgrind, plugin example)"
bindings/c/run-tests.sh

step "Python package (built from source, pytest)"
bindings/python/run-tests.sh source

step "packages (the crate, the Python sdist and installed wheel, the C library installed into a prefix)"
ci/package.sh

step "JavaScript package (WebAssembly; Node, Bun and Deno; real clients; npm install and pack)"
bindings/js/run-tests.sh

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
    # Only that they build, so in the test profile, from the dependencies `cargo test`
    # built: the bench profile (optimised, fat LTO) rebuilt every dependency for minutes,
    # and only the figures need it (benches/run.sh).
    cargo test --workspace --all-features --benches --no-run --quiet
fi

step "all tests passed"
