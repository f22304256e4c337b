#!/usr/bin/env bash
# The whole test suite: Rust (unit, integration, real-capture conformance, doc tests, the
# C header's freshness, and both example proxies over loopback with the replay agent —
# proxy/tests), lints and docs, the C ABI from C (strict, static and shared, sanitizers,
# valgrind), the Python package built from source, the JavaScript package (WebAssembly,
# under Node, Bun and Deno), the packages as users get them (the
# crate, the Python sdist and wheel, the C library installed into a prefix), the real
# clients judging the output, the real ACP agents behind both proxies, and every fenced
# block of the Markdown files run where it can be (tests/readme). The fuzz
# targets' bodies run as tests (tests/fuzz_seeds.rs: every seed and thousands of
# generated inputs); the coverage-guided smoke run of the
# targets themselves (fuzz/run-smoke.sh: every target built under AddressSanitizer, then
# run) takes about 10 minutes on 2 cores, most of it the build, so it runs only when asked
# for: AGENTWIRE_FUZZ_SECONDS=N ci/test.sh runs every target for N seconds.
#
# One command on a fresh clone: it first installs what it needs besides system packages
# (ci/setup.sh, which says what goes where: .venv, .tools, the npm projects' node_modules
# and the pinned clients under tests/clients in the project's own directories; the
# wasm32-unknown-unknown target in the Rust toolchain; downloads in cargo's, pip's and
# npm's caches), nothing that is already current, so a second run installs nothing.
# The system packages it needs are checked first; `.ci/run` installs them, then runs this.
# It runs with a temporary directory of its own, which must end empty (every test removes
# what it creates), and prints how long each stage took.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
stages=()
step() {
    stages+=("$(($(date +%s) - started)) $*")
    printf '\n==> %s (at %d s)\n' "$*" "$(($(date +%s) - started))"
}
# How long each stage took, at the end whatever happened.
stage_times() {
    local i now at name next
    now=$(date +%s)
    echo
    echo "ci/test.sh: stage times (total $((now - started)) s)"
    for i in "${!stages[@]}"; do
        at=${stages[$i]%% *}
        name=${stages[$i]#* }
        next=$((now - started))
        [ $((i + 1)) -lt ${#stages[@]} ] && next=${stages[$((i + 1))]%% *}
        printf '    %5d s  %s\n' "$((next - at))" "$name"
    done
}

missing=()
for tool in cargo python3 node npm cc g++ pkg-config valgrind readelf; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "ci/test.sh: missing from PATH: ${missing[*]} (system packages: .ci/run installs valgrind, pkg-config and g++)" >&2
    exit 1
fi

# The real captures beside the repository (../shared, or $AGENTWIRE_SHARED_DIR): the tests
# over them skip when they are absent, and fail instead under CI=true or
# AGENTWIRE_REQUIRE_SHARED=1 (.ci/run sets it). Said here once, before any suite runs.
if [ ! -d "${AGENTWIRE_SHARED_DIR:-../shared}/fixtures" ]; then
    echo "ci/test.sh: the real captures ${AGENTWIRE_SHARED_DIR:-../shared}/fixtures are absent: the tests over them are skipped (each says SKIPPED), or fail under CI=true or AGENTWIRE_REQUIRE_SHARED=1" >&2
fi

step "what the repository says of itself (ci/check_docs.py: one description of the APIs, no citation of a document it does not hold)"
python3 ci/check_docs.py --self-test
python3 ci/check_docs.py

# Temporary files. The suite runs with a temporary directory of its own (TMPDIR), which
# must be empty at its end: every test removes what it creates, passed or failed. Checked at
# the end whatever happened; what was left is named and fails the run. A program that
# ignores TMPDIR writes to the system's temporary directory instead: entries named like the
# suites' own (agentwire-*, pytest's, mktemp's tmp.*) or OpenCode's that appear there during
# the run are named too, and fail the run under CI=true, where the machine is the suite's
# alone (elsewhere another program may have made them).
system_tmp=${TMPDIR:-/tmp}
tmp_entries() {
    find "$system_tmp" -mindepth 1 -maxdepth 1 \( -name 'agentwire-*' -o -name 'pytest-of-*' \
        -o -name 'tmp.??????????' -o -name 'opencode' -o -name '.*.so' \) -printf '%f\n' | sort
}
tmp_before=$(tmp_entries)
run_tmp=$(mktemp -d "$system_tmp/agentwire-ci-XXXXXX")
export TMPDIR=$run_tmp
finish() {
    local status=$? entry
    local -a left new
    mapfile -t left < <(find "$run_tmp" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)
    rm -rf "$run_tmp"
    mapfile -t new < <(comm -13 <(printf '%s\n' "$tmp_before") <(tmp_entries) | sed '/^$/d')
    stage_times
    if [ ${#left[@]} -gt 0 ]; then
        echo "ci/test.sh: temporary files left behind in the suite's TMPDIR (removed now):" >&2
        for entry in "${left[@]}"; do echo "    $entry" >&2; done
        [ "$status" -ne 0 ] || status=1
    else
        echo "ci/test.sh: no temporary file left behind: the suite's TMPDIR ended empty"
    fi
    if [ ${#new[@]} -gt 0 ]; then
        echo "ci/test.sh: new in $system_tmp while the suite ran, named like its own files (by a program that ignores TMPDIR, or by another program on this machine):" >&2
        for entry in "${new[@]}"; do echo "    $system_tmp/$entry" >&2; done
        if [ "${CI:-}" = true ] && [ "$status" -eq 0 ]; then status=1; fi
    else
        echo "ci/test.sh: nothing new in $system_tmp named like the suite's files"
    fi
    [ "$status" -ne 0 ] || printf '\n==> all tests passed (in %d s)\n' "$(($(date +%s) - started))"
    exit "$status"
}
trap finish EXIT

step "set-up (ci/setup.sh)"
ci/setup.sh

step "the Markdown files' code blocks: each one run by a stage below, or saying why not (tests/readme/snippets.py)"
python3 tests/readme/snippets.py check

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

step "JavaScript package (WebAssembly; Node, Bun and Deno; real clients; the READMEs' TypeScript; npm install and pack)"
bindings/js/run-tests.sh

step "the Markdown files' shell blocks, run as written (tests/readme/snippets.py)"
python3 tests/readme/snippets.py run sh

# Every suite the script names must be there to run: a lost file or run bit is a failure,
# never a silent skip.
for script in tests/clients/run.sh tests/agents/run.sh fuzz/run-smoke.sh; do
    if [ ! -x "$script" ]; then
        echo "ci/test.sh: $script is missing or not executable" >&2
        exit 1
    fi
done

step "real clients (openai-python, anthropic-python, AI SDK, OpenCode, Claude Code, Codex; offline and against both proxies) and the real ACP agents (claude-agent-acp, codex-acp, Gemini CLI) behind both proxies, the clients' tools given to them over MCP"
tests/clients/run.sh

if [ -n "${AGENTWIRE_FUZZ_SECONDS:-}" ]; then
    step "fuzz smoke run"
    fuzz/run-smoke.sh "$AGENTWIRE_FUZZ_SECONDS"
else
    echo "ci/test.sh: the fuzz smoke run is not part of the default run (AGENTWIRE_FUZZ_SECONDS=30 ci/test.sh runs it)"
fi

# The benchmarks are type-checked by `cargo clippy --all-targets` above; only their
# figures need the bench profile (benches/run.sh).
