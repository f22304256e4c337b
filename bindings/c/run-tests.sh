#!/usr/bin/env bash
# The C ABI tested from C, through include/agentwire.h alone:
#   1. the header compiles strict as C99 and as C++17 (and the abi test runs as C++);
#   2. the tests and the plugin build strict, linked static and shared (and through the
#      installed pkg-config file);
#   3. abi: every result code, NULLs, misuse, bad input, poisoned handles, overlapping
#      calls; threads: four threads on one handle get AW_RESULT_BUSY, never a crash;
#      conversations: whole conversations (a stream-json chat resumed and respawned, a
#      scripted ACP agent's tool round parked and answered through its MCP endpoint, a
#      standalone MCP server over HTTP and stdio with hostile input);
#   4. drive: whole requests of every dialect (Chat Completions, Responses, Messages) and
#      decoder events over the project's transcripts (and the real captures in ../shared
#      when present), byte-identical to the Rust examples `translate --api DIALECT` and
#      `events` on the same input; an ACP connection's turns in every dialect over the
#      project's ACP fixtures and the real ACP recordings, byte-identical to the Rust
#      example `acp run` on the same script of inputs; the replies that need no agent (count_tokens, every
#      refusal in every dialect) byte-identical to the Rust example `reply`;
#   5. the plugin example against a stand-in agent that replays a transcript (a request of
#      each dialect), and the README's C blocks as written there;
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
cargo build --quiet --all-features --lib --example translate --example events --example reply --example acp
lib=target/debug
translate=$lib/examples/translate
events=$lib/examples/events
reply=$lib/examples/reply
acp=$lib/examples/acp
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
# The README's C blocks, compiled as written (bindings/c/tests/readme.c includes them).
awk '/^```c$/ { copy = 1; next } /^```$/ { copy = 0 } copy' README.md >"$out/readme_loop.inc"
check "README has C blocks" test -s "$out/readme_loop.inc"
for prog in abi drive threads readme conversations; do
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
for prog in abi drive threads readme conversations; do
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

echo "==> conversations"
for variant in static shared asan release; do
    check "conversations $variant" "$out/conversations-$variant"
done
check "conversations under valgrind" "${VALGRIND[@]}" "$out/conversations-shared"
check "conversations release under valgrind" "${VALGRIND[@]}" "$out/conversations-release"

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
apis=(chat-completions responses messages)
# Per dialect: its smallest request (what translate sends without --request), the
# project's example requests of that dialect, and bodies no dialect takes: cut short, not
# UTF-8, a model name that would read as a flag.
printf '%s' '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$out/default-chat-completions.json"
printf '%s' '{"model":"auto","stream":true,"input":"hi"}' >"$out/default-responses.json"
printf '%s' '{"model":"auto","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$out/default-messages.json"
printf '%s' '{"model":"auto","stream":true,"messages":[{"role":' >"$out/truncated.json"
printf '\xff\xfe{"model":"auto"}' >"$out/not-utf8.json"
printf '%s' '{"model":"--force","messages":[{"role":"user","content":"hi"}]}' >"$out/flag-model-chat-completions.json"
printf '%s' '{"model":"--force","input":"hi"}' >"$out/flag-model-responses.json"
printf '%s' '{"model":"--force","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}' >"$out/flag-model-messages.json"
fixture_requests() { # fixture_requests API: the project's example requests of that dialect
    case $1 in
        chat-completions) ls tests/fixtures/requests/*.json ;;
        *) ls "tests/fixtures/requests/$1"/*.json ;;
    esac
}
# The example request with client tools, streaming and not, of each dialect.
client_tools() { case $1 in chat-completions) echo tests/fixtures/requests/client_tools.json ;; *) echo "tests/fixtures/requests/$1/client_tools.json" ;; esac; }
client_tools_nostream() { dirname "$(client_tools "$1")" | sed 's|$|/client_tools_nostream.json|'; }

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
    for api in "${apis[@]}"; do
        mapfile -t requests < <(echo "$out/default-$api.json"; fixture_requests "$api"
            echo "$out/truncated.json"; echo "$out/not-utf8.json"; echo "$out/flag-model-$api.json")
        for request in "${requests[@]}"; do
            r=$(basename "$request")
            for chunk in 1 7 4096; do
                same "bridge $api $t $r chunk $chunk" "$translate" --api "$api" --chunk "$chunk" --request "$request" "$transcript" \
                    -- "$out/drive-static" bridge --api "$api" "$request" "$chunk" "$transcript"
            done
            same "bridge $api $t $r shared" "$translate" --api "$api" --request "$request" "$transcript" \
                -- "$out/drive-shared" bridge --api "$api" "$request" 4096 "$transcript"
            same "bridge $api $t $r asan" "$translate" --api "$api" --chunk 7 --request "$request" "$transcript" \
                -- "$out/drive-asan" bridge --api "$api" "$request" 7 "$transcript"
        done
        tools=$(client_tools "$api")
        same "bridge $api $t valgrind" "$translate" --api "$api" --chunk 5 --request "$tools" "$transcript" \
            -- "${VALGRIND[@]}" "$out/drive-static" bridge --api "$api" "$tools" 5 "$transcript"
        same "bridge $api $t $(basename "$tools") release valgrind" "$translate" --api "$api" --chunk 5 --request "$tools" "$transcript" \
            -- "${VALGRIND[@]}" "$out/drive-release" bridge --api "$api" "$tools" 5 "$transcript"
    done
    # The default request's default dialect, as callers that never name one get it.
    same "bridge $t default.json release valgrind" "$translate" --chunk 5 "$transcript" \
        -- "${VALGRIND[@]}" "$out/drive-release" bridge "$out/default-chat-completions.json" 5 "$transcript"
    for chunk in 1 7 4096; do
        same "events $t chunk $chunk" "$events" --chunk "$chunk" "$transcript" \
            -- "$out/drive-static" events "$chunk" "$transcript"
    done
    same "events $t asan" "$events" --chunk 3 "$transcript" -- "$out/drive-asan" events 3 "$transcript"
    same "events $t valgrind" "$events" --chunk 5 "$transcript" \
        -- "${VALGRIND[@]}" "$out/drive-shared" events 5 "$transcript"
    same "events $t release valgrind" "$events" --chunk 5 "$transcript" \
        -- "${VALGRIND[@]}" "$out/drive-release" events 5 "$transcript"
done
# Failed runs: the agent's stderr and exit code decide the status and the error body.
for stderr in tests/fixtures/stderr/*.txt; do
    s=$(basename "$stderr")
    for api in "${apis[@]}"; do
        for request in "$out/default-$api.json" "$(client_tools_nostream "$api")"; do
            same "failure $api $s $(basename "$request")" \
                "$translate" --api "$api" --request "$request" --stderr "$stderr" --exit 1 tests/fixtures/failure_no_result.jsonl \
                -- "$out/drive-asan" bridge --api "$api" "$request" 4096 tests/fixtures/failure_no_result.jsonl "$stderr" 1
        done
    done
done
# The real captures, found as every test finds them (tests/support/shared_fixtures.sh).
. tests/support/shared_fixtures.sh
real_status=0
real=$(shared_fixtures_files cursor-agent .jsonl) || real_status=$?
if [ "$real_status" = 0 ]; then
    while IFS= read -r transcript; do
        t=$(basename "$transcript")
        for api in "${apis[@]}"; do
            tools=$(client_tools "$api")
            same "real bridge $api $t" "$translate" --api "$api" --chunk 4096 --request "$out/default-$api.json" "$transcript" \
                -- "$out/drive-static" bridge --api "$api" "$out/default-$api.json" 4096 "$transcript"
            same "real bridge $api (client tools) $t" "$translate" --api "$api" --chunk 7 --request "$tools" "$transcript" \
                -- "$out/drive-asan" bridge --api "$api" "$tools" 7 "$transcript"
        done
        same "real events $t" "$events" --chunk 4096 "$transcript" -- "$out/drive-static" events 4096 "$transcript"
    done <<<"$real"
elif [ "$real_status" = 1 ]; then
    echo "    (real captures skipped)"
else
    fail "the real captures"
fi

echo "==> ACP connections (bytes equal to the Rust example acp)"
# acp_case NAME API CHUNK RECORDING RUNNER...: the recording as a script (`acp script`),
# then the script through the Rust API and through RUNNER, outputs equal.
acp_case() {
    local name=$1 api=$2 chunk=$3 recording=$4
    shift 4
    if "$acp" script --api "$api" --chunk "$chunk" "$recording" >"$out/acp.script" 2>"$out/acp.err"; then
        same "acp $name" "$acp" run "$out/acp.script" -- "$@" acp "$out/acp.script"
    else
        fail "acp $name (script)"
        head -c 400 "$out/acp.err" | sed 's/^/    /'
    fi
}
i=0
for recording in tests/fixtures/acp/*.jsonl; do
    r=$(basename "$recording")
    for api in "${apis[@]}"; do
        for chunk in 1 4096; do
            acp_case "$api $r chunk $chunk" "$api" "$chunk" "$recording" "$out/drive-static"
        done
        acp_case "$api $r asan" "$api" 7 "$recording" "$out/drive-asan"
    done
    api=${apis[$((i % 3))]}
    i=$((i + 1))
    acp_case "$api $r valgrind" "$api" 5 "$recording" "${VALGRIND[@]}" "$out/drive-shared"
    acp_case "$api $r release valgrind" "$api" 5 "$recording" "${VALGRIND[@]}" "$out/drive-release"
done
acp_status=0
acp_real=$(shared_fixtures_files acp .jsonl) || acp_status=$?
if [ "$acp_status" = 0 ]; then
    i=0
    while IFS= read -r recording; do
        r=$(basename "$recording")
        for api in "${apis[@]}"; do
            acp_case "real $api $r" "$api" 4096 "$recording" "$out/drive-static"
        done
        api=${apis[$((i % 3))]}
        i=$((i + 1))
        acp_case "real $api $r asan" "$api" 7 "$recording" "$out/drive-asan"
        acp_case "real $api $r release valgrind" "$api" 4096 "$recording" "${VALGRIND[@]}" "$out/drive-release"
    done <<<"$acp_real"
elif [ "$acp_status" = 1 ]; then
    echo "    (real ACP recordings skipped)"
else
    fail "the real ACP recordings"
fi

echo "==> replies without an agent (bytes equal to the Rust example reply)"
for request in "$out/default-messages.json" "$(client_tools messages)" "$out/truncated.json" "$out/not-utf8.json" tests/fixtures/requests/client_tools.json; do
    same "count_tokens $(basename "$request")" "$reply" count-tokens "$request" \
        -- "$out/drive-asan" reply count-tokens "$request"
    same "count_tokens $(basename "$request") valgrind" "$reply" count-tokens "$request" \
        -- "${VALGRIND[@]}" "$out/drive-release" reply count-tokens "$request"
done
for api in "${apis[@]}"; do
    for kind in invalid-request authentication permission-denied not-found method-not-allowed request-too-large \
        unsupported-media-type rate-limited internal agent-failed unavailable timeout; do
        message="$kind on a $api route: say \"what\" to do – ok"
        same "refusal $api $kind" "$reply" error "$api" "$kind" "$message" \
            -- "$out/drive-asan" reply error "$api" "$kind" "$message"
    done
    same "refusal $api valgrind" "$reply" error "$api" unavailable "shutting down" \
        -- "${VALGRIND[@]}" "$out/drive-release" reply error "$api" unavailable "shutting down"
done

echo "==> plugin example (stand-in agent)"
agent=bindings/c/tests/replay-agent.sh
# What depends on the time and the process: ids derive from the plugin's seed (its pid),
# `created` from the clock.
normalize() { sed -E 's/[0-9a-f]{24,}/ID/g; s/"created(_at)?":[0-9]+/"created":0/g' "$1"; }
plugin_case() { # plugin_case NAME PLUGIN REQUEST TRANSCRIPT EXIT [--api DIALECT]
    local name=$1 plugin=$2 request=$3 transcript=$4 code=$5
    shift 5
    "$translate" "$@" --request "$request" --exit "$code" "$transcript" >"$out/plugin-expected.out" 2>"$out/plugin-expected.err"
    if AGENTWIRE_REPLAY=$transcript AGENTWIRE_REPLAY_EXIT=$code timeout 60 "$plugin" "$@" --agent "$agent" "$request" \
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
    plugin_case "$plugin crash" "$out/$plugin" "$out/default-chat-completions.json" tests/fixtures/failure_no_result.jsonl 3
    plugin_case "$plugin rejected" "$out/$plugin" "$out/truncated.json" tests/fixtures/partial_recaps.jsonl 0
    for api in responses messages; do
        plugin_case "$plugin $api tools" "$out/$plugin" "$(client_tools "$api")" tests/fixtures/parallel_tools.jsonl 0 --api "$api"
        plugin_case "$plugin $api crash" "$out/$plugin" "$out/default-$api.json" tests/fixtures/failure_no_result.jsonl 3 --api "$api"
    done
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
