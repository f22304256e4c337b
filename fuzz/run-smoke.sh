#!/usr/bin/env bash
# Smoke fuzzing: builds every fuzz target, seeds the corpora, runs each target for
# SECONDS (default 30) and prints the executions per target. Exits non-zero if any target
# crashed (a broken invariant, a panic, a timeout or running out of memory); the crashing
# input is then in fuzz/artifacts/<target>/.
#
#   fuzz/run-smoke.sh [SECONDS]
#
# Environment:
#   FUZZ_SANITIZER  cargo-fuzz sanitizer (default none: the crate is safe Rust, so
#                   AddressSanitizer would find nothing the assertions do not, at half the
#                   speed; `address` works on nightly)
#   FUZZ_TARGETS    space-separated subset of targets to run
#   CARGO_TARGET_DIR is honoured.
#
# Needs cargo-fuzz (the pinned one in the project's .tools/bin, which `ci/setup.sh fuzz`
# installs; installed here when missing) and a nightly toolchain; without one, stable is
# told to accept nightly flags with RUSTC_BOOTSTRAP=1, as CI machines only have stable.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-30}
sanitizer=${FUZZ_SANITIZER:-none}
read -r -a targets <<<"${FUZZ_TARGETS:-framing decoder decoder_mutated request bridge}"

export PATH="$PWD/../.tools/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
    ../ci/setup.sh fuzz
fi

toolchain=()
# (grep without -q reads all of rustup's output: no SIGPIPE under pipefail.)
if rustup toolchain list 2>/dev/null | grep '^nightly' >/dev/null; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi

echo "==> building the fuzz targets (${toolchain[*]:-stable with RUSTC_BOOTSTRAP=1}, sanitizer $sanitizer)"
build_start=$SECONDS
cargo "${toolchain[@]}" fuzz build --sanitizer "$sanitizer"
echo "built in $((SECONDS - build_start)) s"

./seeds.sh

# libFuzzer options:
# - max_len 64 KiB: several real lines, room for the over-limit paths (the decoder
#   bodies use a 4 KiB line limit, the framing body 16 bytes and 1 KiB);
# - timeout 10 s per input: executions take milliseconds, so anything slower is a
#   finding (a quadratic path, or a generator that got out of hand);
# - rss_limit 1 GiB (half libFuzzer's default) and malloc_limit 256 MiB: the targets
#   peak below 100 MiB, so runaway memory is reported rather than tolerated.
options=(-max_len=65536 -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256 -print_final_stats=1)
declare -A dict=(
    [framing]=dict/cursor.dict
    [decoder]=dict/cursor.dict
    [request]=dict/request.dict
)

mkdir -p logs
failed=()
summary=()
for target in "${targets[@]}"; do
    log=logs/$target.log
    extra=()
    if [ -n "${dict[$target]:-}" ]; then
        extra=(-dict="${dict[$target]}")
    fi
    echo "==> $target for $seconds s"
    status=0
    cargo "${toolchain[@]}" fuzz run --sanitizer "$sanitizer" "$target" "corpus/$target" -- \
        "${options[@]}" "${extra[@]}" -max_total_time="$seconds" >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        summary+=("$(printf '%-16s %12s  CRASHED (exit %s, log fuzz/%s)' "$target" "${runs:-?}" "$status" "$log")")
        # The panic message and the reproduction hints.
        grep -E -A12 "panicked at|ERROR: libFuzzer|Test unit written" "$log" | head -n 60 || tail -n 40 "$log"
    else
        summary+=("$(printf '%-16s %12s  ok' "$target" "${runs:-?}")")
    fi
done

echo
printf '%-16s %12s\n' target executions
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz smoke run failed: ${failed[*]} (inputs in fuzz/artifacts/; see fuzz/README.md to reproduce)"
    exit 1
fi
echo "fuzz smoke run passed"
