#!/usr/bin/env bash
# Smoke fuzzing: builds every fuzz target, seeds the corpora, runs each target for
# SECONDS (default 30) and prints the executions per target. Exits non-zero if any target
# crashed (a broken invariant, a panic, a timeout or running out of memory); the crashing
# input is then in fuzz/artifacts/<target>/.
#
#   fuzz/run-smoke.sh [SECONDS]
#
# Environment:
#   FUZZ_SANITIZER  cargo-fuzz sanitizer of every target (default: none, as the safe Rust
#                   behind the other targets gives AddressSanitizer nothing the assertions
#                   do not find, at half the speed; and address for `abi`, which calls the
#                   C ABI's unsafe code and reads the views it hands out, so that a view
#                   into freed memory is found). `abi` runs last: it is rebuilt with its
#                   sanitizer once the others are done.
#   FUZZ_TARGETS    space-separated subset of targets to run
#   CARGO_TARGET_DIR is honoured.
#
# Needs cargo-fuzz (installed here with `cargo install cargo-fuzz --locked` when missing)
# and a nightly toolchain; without one, stable is told to accept nightly flags with
# RUSTC_BOOTSTRAP=1, as CI machines only have stable.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-30}
sanitizer=${FUZZ_SANITIZER:-none}
sanitizer_of() {
    if [ -z "${FUZZ_SANITIZER:-}" ] && [ "$1" = abi ]; then
        echo address
    else
        echo "$sanitizer"
    fi
}
read -r -a targets <<<"${FUZZ_TARGETS:-framing decoder decoder_mutated request bridge abi}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "==> installing cargo-fuzz"
    cargo install cargo-fuzz --locked
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
# `abi` reads its input as a list of calls: whole lists from the start (no slow growth of
# the length libFuzzer tries) reach states many calls deep; 4 KiB holds more calls than a
# run makes.
declare -A own_options=(
    [abi]="-max_len=4096 -len_control=0"
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
    read -r -a own <<<"${own_options[$target]:-}"
    extra+=("${own[@]}")
    echo "==> $target for $seconds s (sanitizer $(sanitizer_of "$target"))"
    status=0
    cargo "${toolchain[@]}" fuzz run --sanitizer "$(sanitizer_of "$target")" "$target" "corpus/$target" -- \
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
