#!/usr/bin/env bash
# Smoke fuzzing: builds every fuzz target, seeds the corpora, runs each target for
# SECONDS (default 30) and prints the executions per target. Exits non-zero if any target
# crashed (a broken invariant, a panic, a timeout or running out of memory); the crashing
# input is then in fuzz/artifacts/<target>/.
#
#   fuzz/run-smoke.sh [SECONDS]
#
# Environment:
#   FUZZ_SANITIZER  cargo-fuzz sanitizer of every target (default: address, so that one
#                   build serves every target, `abi` included, which needs it; a second
#                   build, with other flags, rebuilt every crate for minutes; at 30 s a
#                   target, the half speed costs the smoke run nothing it is for).
#   FUZZ_TARGETS    space-separated subset of targets to run
#   CARGO_TARGET_DIR is honoured.
#
# Needs cargo-fuzz (the pinned one in the project's .tools/bin, which `ci/setup.sh fuzz`
# installs; installed here when missing) and a nightly toolchain; without one, stable is
# told to accept nightly flags with RUSTC_BOOTSTRAP=1, as CI machines only have stable.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-30}
read -r -a targets <<<"${FUZZ_TARGETS:-framing decoder decoder_mutated request bridge abi}"

export PATH="$PWD/../.tools/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
    ../ci/setup.sh fuzz
fi

# shellcheck source=common.sh
. ./common.sh
# One sanitizer for every target: one build.
export FUZZ_SANITIZER=${FUZZ_SANITIZER:-address}
sanitizer=$FUZZ_SANITIZER

echo "==> building the fuzz targets (${toolchain[*]:-stable with RUSTC_BOOTSTRAP=1}, sanitizer $sanitizer)"
build_start=$SECONDS
cargo "${toolchain[@]}" fuzz build --sanitizer "$sanitizer"
echo "built in $((SECONDS - build_start)) s"

./seeds.sh

mkdir -p logs
failed=()
summary=()
for target in "${targets[@]}"; do
    log=logs/$target.log
    options_of "$target"
    echo "==> $target for $seconds s (sanitizer $(sanitizer_of "$target"))"
    status=0
    cargo "${toolchain[@]}" fuzz run --sanitizer "$(sanitizer_of "$target")" "$target" "corpus/$target" -- \
        "${run_options[@]}" -max_total_time="$seconds" >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        summary+=("$(printf '%-16s %12s  CRASHED (exit %s, log fuzz/%s)' "$target" "${runs:-?}" "$status" "$log")")
        # The panic message and the reproduction hints.
        grep -E -A12 "panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|Test unit written" "$log" | head -n 60 || tail -n 40 "$log"
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
