#!/usr/bin/env bash
# The C ABI tested from C, through include/agentwire.h alone:
#   1. the header compiles strict as C99 and as C++17 (and the abi test runs as C++);
#   2. the tests and the plugin build strict, linked static and shared (and through the
#      installed pkg-config file);
#   3. abi: every result code, NULLs, misuse, bad input, poisoned handles, overlapping
#      calls; threads: four threads on one handle get AW_RESULT_BUSY, never a crash;
#   4. drive: whole requests and decoder events over the project's transcripts (and the
#      real captures in ../shared when present), byte-identical to the Rust examples
#      `translate` and `events` on the same input;
#   5. the plugin example against a stand-in agent that replays a transcript, and the
#      README's C loop as written there;
#   6. the same under ASan+UBSan, and under valgrind, with zero errors and zero leaks,
#      against the debug library and against the release library (optimised code is where
#      valgrind finds what debug builds hide).
# Run from anywhere; prints "N passed, N failed" last.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=target/c-tests
mkdir -p "$out"
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); printf 'FAILED: %s\n' "$*"; }
check() { # check NAME COMMAND...: runs COMMAND, counts it.
    local name=$1
    shift
    if "$@" >"$out/last.log" 2>&1; then pass; else fail "$name"; sed 's/^/    /' "$out/last.log" | tail -20; fi
}

STRICT=(-std=c99 -Wall -Wextra -Werror -pedantic -g -Iinclude)
LIBS=(-lpthread -ldl -lm)
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
# The test hooks (aw_*_test_panic) are in the library built with --all-features.
cargo build --quiet --all-features --lib --example translate --example events
lib=target/debug
translate=$lib/examples/translate
events=$lib/examples/events
# Programs linked to the shared library load it by its SONAME (libagentwire.so.MAJOR, set
# by build.rs), which cargo does not create: a link by that name, as install.sh makes one.
soname_link() { # soname_link LIBDIR LINKDIR: LINKDIR/<SONAME> → LIBDIR/libagentwire.so
    mkdir -p "$2"
    ln -sfn "$root/$1/libagentwire.so" "$2/$(readelf -d "$1/libagentwire.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')"
}
soname_dir=$out/soname
soname_link "$lib" "$soname_dir"

echo "==> header"
printf '#include "agentwire.h"\nint main(void) { return aw_version() == 0; }\n' >"$out/header.c"
check "header as C99" gcc "${STRICT[@]}" -fsyntax-only "$out/header.c"
check "header as C99 with the test hooks" gcc "${STRICT[@]}" -DAW_TEST_HOOKS -fsyntax-only "$out/header.c"
check "header as C++17" g++ -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -fsyntax-only "$out/header.c"

echo "==> build (static, shared, sanitized)"
build() { # build NAME SOURCE FLAGS...
    local name=$1 source=$2
    shift 2
    gcc "${STRICT[@]}" "$source" "$@" -o "$out/$name"
}
# The README's C block, compiled as written (bindings/c/tests/readme.c includes it).
awk '/^```c$/ { copy = 1; next } /^```$/ { copy = 0 } copy' README.md >"$out/readme_loop.inc"
check "README has a C block" test -s "$out/readme_loop.inc"
for prog in abi drive threads readme; do
    src=bindings/c/tests/$prog.c
    check "$prog static" build "$prog-static" "$src" -DAW_TEST_HOOKS -I"$out" "$lib/libagentwire.a" "${LIBS[@]}"
    check "$prog shared" build "$prog-shared" "$src" -DAW_TEST_HOOKS -I"$out" -L"$lib" -lagentwire -Wl,-rpath,"$root/$soname_dir"
    check "$prog asan" build "$prog-asan" "$src" -DAW_TEST_HOOKS -I"$out" "${SAN[@]}" "$lib/libagentwire.a" "${LIBS[@]}"
done
# The same test compiled and linked as C++17: the header serves C++ callers too.
check "abi as C++17" g++ -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -g -Iinclude -DAW_TEST_HOOKS \
    bindings/c/tests/abi.c -x none "$lib/libagentwire.a" "${LIBS[@]}" -o "$out/abi-cxx"
check "plugin static" build plugin-static bindings/c/examples/plugin.c "$lib/libagentwire.a" "${LIBS[@]}"
check "plugin asan" build plugin-asan bindings/c/examples/plugin.c "${SAN[@]}" "$lib/libagentwire.a" "${LIBS[@]}"

echo "==> build against the release library"
# What users link: optimised, without the test hooks.
cargo build --quiet --release --lib -p agentwire
release=target/release
soname_link "$release" "$out/soname-release"
for prog in abi drive threads readme; do
    check "$prog release" build "$prog-release" bindings/c/tests/$prog.c -I"$out" "$release/libagentwire.a" "${LIBS[@]}"
done
check "readme release shared" build readme-release-shared bindings/c/tests/readme.c -I"$out" \
    -L"$release" -lagentwire -Wl,-rpath,"$root/$out/soname-release"

echo "==> install + pkg-config"
prefix=$out/prefix
rm -rf "$prefix"
check "install.sh" bindings/c/install.sh "$prefix" "$lib"
export PKG_CONFIG_PATH=$root/$prefix/lib/pkgconfig
check "pkg-config version" test "$(pkg-config --modversion agentwire)" = "$(sed -n 's/^#define AW_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' include/agentwire.h | paste -sd.)"
# shellcheck disable=SC2046
check "abi via pkg-config" gcc "${STRICT[@]}" -DAW_TEST_HOOKS bindings/c/tests/abi.c \
    $(pkg-config --cflags --libs agentwire) -Wl,-rpath,"$root/$prefix/lib" -o "$out/abi-pkgconfig"

export RUST_BACKTRACE=0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
VALGRIND=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=all
    --errors-for-leak-kinds=all)

echo "==> abi"
for variant in static shared asan pkgconfig cxx; do
    check "abi $variant" "$out/abi-$variant"
done
check "abi static under valgrind" "${VALGRIND[@]}" "$out/abi-static"
check "abi shared under valgrind" "${VALGRIND[@]}" "$out/abi-shared"
check "abi release" "$out/abi-release"
check "abi release under valgrind" "${VALGRIND[@]}" "$out/abi-release"

echo "==> threads (one handle, four threads)"
# Calls must overlap (--require-busy) where threads run at once; valgrind runs one thread
# at a time, so there only the results and the memory are checked.
check "threads static" "$out/threads-static" 2000 --require-busy
check "threads asan" "$out/threads-asan" 1000 --require-busy
check "threads release" "$out/threads-release" 2000 --require-busy
check "threads under valgrind" "${VALGRIND[@]}" "$out/threads-shared" 200
check "threads release under valgrind" "${VALGRIND[@]}" "$out/threads-release" 200

echo "==> the README's C loop"
for variant in static shared asan release release-shared; do
    check "readme $variant" "$out/readme-$variant"
done
check "readme under valgrind" "${VALGRIND[@]}" "$out/readme-shared"
check "readme release under valgrind" "${VALGRIND[@]}" "$out/readme-release-shared"

echo "==> drive (bytes equal to the Rust examples)"
printf '%s' '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$out/default.json"
printf '%s' '{"model":"auto","stream":true,"messages":[{"role":' >"$out/truncated.json"
printf '\xff\xfe{"model":"auto"}' >"$out/not-utf8.json"
printf '%s' '{"model":"--force","messages":[{"role":"user","content":"hi"}]}' >"$out/flag-model.json"
requests=("$out/default.json" tests/fixtures/requests/*.json "$out/truncated.json" "$out/not-utf8.json" "$out/flag-model.json")

same() { # same NAME EXPECTED_CMD -- ACTUAL_CMD: both outputs (stdout + stderr) equal.
    local name=$1
    shift
    local expected=() actual=()
    while [ "$1" != -- ]; do expected+=("$1"); shift; done
    shift
    actual=("$@")
    if "${expected[@]}" >"$out/expected.out" 2>"$out/expected.err" \
        && "${actual[@]}" >"$out/actual.out" 2>"$out/actual.err" \
        && cmp -s "$out/expected.out" "$out/actual.out" \
        && cmp -s "$out/expected.err" "$out/actual.err"; then
        pass
    else
        fail "$name"
        cmp "$out/expected.out" "$out/actual.out" | sed 's/^/    /' || true
        head -c 400 "$out/actual.err" | sed 's/^/    /'
    fi
}

for transcript in tests/fixtures/*.jsonl; do
    t=$(basename "$transcript")
    for request in "${requests[@]}"; do
        r=$(basename "$request")
        for chunk in 1 7 4096; do
            same "bridge $t $r chunk $chunk" "$translate" --chunk "$chunk" --request "$request" "$transcript" \
                -- "$out/drive-static" bridge "$request" "$chunk" "$transcript"
        done
        same "bridge $t $r shared" "$translate" --request "$request" "$transcript" \
            -- "$out/drive-shared" bridge "$request" 4096 "$transcript"
        same "bridge $t $r asan" "$translate" --chunk 7 --request "$request" "$transcript" \
            -- "$out/drive-asan" bridge "$request" 7 "$transcript"
    done
    for chunk in 1 7 4096; do
        same "events $t chunk $chunk" "$events" --chunk "$chunk" "$transcript" \
            -- "$out/drive-static" events "$chunk" "$transcript"
    done
    same "events $t asan" "$events" --chunk 3 "$transcript" -- "$out/drive-asan" events 3 "$transcript"
    same "events $t valgrind" "$events" --chunk 5 "$transcript" \
        -- "${VALGRIND[@]}" "$out/drive-shared" events 5 "$transcript"
    same "bridge $t valgrind" "$translate" --chunk 5 --request tests/fixtures/requests/client_tools.json "$transcript" \
        -- "${VALGRIND[@]}" "$out/drive-static" bridge tests/fixtures/requests/client_tools.json 5 "$transcript"
    same "events $t release valgrind" "$events" --chunk 5 "$transcript" \
        -- "${VALGRIND[@]}" "$out/drive-release" events 5 "$transcript"
    for request in "$out/default.json" tests/fixtures/requests/client_tools.json; do
        same "bridge $t $(basename "$request") release valgrind" "$translate" --chunk 5 --request "$request" "$transcript" \
            -- "${VALGRIND[@]}" "$out/drive-release" bridge "$request" 5 "$transcript"
    done
done
# Failed runs: the agent's stderr and exit code decide the status and the error body.
for stderr in tests/fixtures/stderr/*.txt; do
    s=$(basename "$stderr")
    for request in "$out/default.json" tests/fixtures/requests/client_tools_nostream.json; do
        same "failure $s $(basename "$request")" \
            "$translate" --request "$request" --stderr "$stderr" --exit 1 tests/fixtures/failure_no_result.jsonl \
            -- "$out/drive-asan" bridge "$request" 4096 tests/fixtures/failure_no_result.jsonl "$stderr" 1
    done
done
# The real captures, found as every test finds them (tests/support/shared_fixtures.sh).
. tests/support/shared_fixtures.sh
real_status=0
real=$(shared_fixtures_files cursor-agent .jsonl) || real_status=$?
if [ "$real_status" = 0 ]; then
    while IFS= read -r transcript; do
        t=$(basename "$transcript")
        same "real bridge $t" "$translate" --chunk 4096 --request "$out/default.json" "$transcript" \
            -- "$out/drive-static" bridge "$out/default.json" 4096 "$transcript"
        same "real bridge (client tools) $t" "$translate" --chunk 7 --request tests/fixtures/requests/client_tools.json "$transcript" \
            -- "$out/drive-asan" bridge tests/fixtures/requests/client_tools.json 7 "$transcript"
        same "real events $t" "$events" --chunk 4096 "$transcript" -- "$out/drive-static" events 4096 "$transcript"
    done <<<"$real"
elif [ "$real_status" = 1 ]; then
    echo "    (real captures skipped)"
else
    fail "the real captures"
fi

echo "==> plugin example (stand-in agent)"
agent=bindings/c/tests/replay-agent.sh
normalize() { sed -E 's/"id":"chatcmpl-[0-9a-f]+"/"id":"ID"/g; s/"created":[0-9]+/"created":0/g; s/"id":"call_[A-Za-z0-9_]+"/"id":"CALL"/g' "$1"; }
plugin_case() { # plugin_case NAME PLUGIN REQUEST TRANSCRIPT EXIT
    local name=$1 plugin=$2 request=$3 transcript=$4 code=$5
    "$translate" --request "$request" --exit "$code" "$transcript" >"$out/plugin-expected.out" 2>"$out/plugin-expected.err"
    if AGENTWIRE_REPLAY=$transcript AGENTWIRE_REPLAY_EXIT=$code timeout 60 "$plugin" --agent "$agent" "$request" \
        >"$out/plugin.out" 2>"$out/plugin.err" \
        && [ "$(normalize "$out/plugin.out")" = "$(normalize "$out/plugin-expected.out")" ] \
        && [ "$(head -1 "$out/plugin.err")" = "$(head -1 "$out/plugin-expected.err")" ]; then
        pass
    else
        fail "$name"
        head -5 "$out/plugin.err" | sed 's/^/    /'
    fi
}
for plugin in plugin-static plugin-asan; do
    plugin_case "$plugin agent mode" "$out/$plugin" tests/fixtures/requests/agent_stream.json tests/fixtures/partial_recaps.jsonl 0
    plugin_case "$plugin no stream" "$out/$plugin" tests/fixtures/requests/client_tools_nostream.json tests/fixtures/multibyte.jsonl 0
    plugin_case "$plugin crash" "$out/$plugin" "$out/default.json" tests/fixtures/failure_no_result.jsonl 3
    plugin_case "$plugin rejected" "$out/$plugin" "$out/truncated.json" tests/fixtures/partial_recaps.jsonl 0
done
# Client tool calls end the turn: the plugin must kill the agent's whole process group,
# including a child that would otherwise run for ten minutes.
rm -f "$out/agent-child.pid"
if AGENTWIRE_REPLAY=tests/fixtures/client_native_batch.jsonl AGENTWIRE_REPLAY_HANG=1 \
    AGENTWIRE_REPLAY_PIDFILE=$out/agent-child.pid timeout 60 "$out/plugin-static" --agent "$agent" \
    tests/fixtures/requests/client_tools.json >"$out/plugin.out" 2>"$out/plugin.err" \
    && grep -q '"finish_reason":"tool_calls"' "$out/plugin.out" \
    && tail -c 15 "$out/plugin.out" | grep -q 'data: \[DONE\]'; then
    # Killed: gone, or a zombie waiting for its reaper.
    state=$(ps -o stat= -p "$(cat "$out/agent-child.pid")" 2>/dev/null || true)
    case "$state" in "" | Z*) pass ;; *) fail "plugin left the agent's child running ($state)" ;; esac
else
    fail "plugin stop-agent run"
    head -5 "$out/plugin.err" | sed 's/^/    /'
fi

echo
echo "c: $passed passed, $failed failed"
[ "$failed" = 0 ]
