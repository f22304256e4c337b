#!/usr/bin/env bash
# A long fuzzing campaign: each target in turn, one process (one core), until RUNS
# executions or SECONDS have passed, whichever comes first, growing fuzz/corpus/<target>/.
# Prints one line of figures per target (executions, exec/s, cov, ft, corpus) and keeps
# the whole libFuzzer output in fuzz/logs/campaign-<target>.log.
#
#   fuzz/campaign.sh [TARGET...]          (default: every target)
#
# Environment:
#   FUZZ_RUNS       executions per target (default 10000000)
#   FUZZ_SECONDS    time limit per target (default 3600)
#   FUZZ_NICE       niceness of the fuzzing process (default 19: it yields to anything)
#   FUZZ_SANITIZER  as in run-smoke.sh (default: none, and address for `abi`)
#
# Every binary is built first and copied out of cargo's target directory, so that a
# target's run uses the code as it was at the start, whatever is rebuilt meanwhile.
# A crash stops that target's run (libFuzzer writes the input to fuzz/artifacts/<target>/);
# run the script again for that target after the fix: the corpus carries the work over.
set -euo pipefail
cd "$(dirname "$0")"

runs=${FUZZ_RUNS:-10000000}
seconds=${FUZZ_SECONDS:-3600}
niceness=${FUZZ_NICE:-19}
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(framing decoder decoder_mutated request bridge abi)
fi

export PATH="$PWD/../.tools/bin:$PATH"
if ! cargo fuzz --version >/dev/null 2>&1; then
    ../ci/setup.sh fuzz
fi

# shellcheck source=common.sh
. ./common.sh

./seeds.sh
mkdir -p logs target/campaign
triple=$(rustc -vV | sed -n 's/^host: //p')
for target in "${targets[@]}"; do
    cargo "${toolchain[@]}" fuzz build --sanitizer "$(sanitizer_of "$target")" "$target"
    cp "target/$triple/release/$target" "target/campaign/$target"
done

summary=()
failed=()
for target in "${targets[@]}"; do
    options_of "$target"
    mkdir -p "corpus/$target" "artifacts/$target"
    log=logs/campaign-$target.log
    echo "==> $target: $runs executions or $seconds s (sanitizer $(sanitizer_of "$target")), log fuzz/$log"
    status=0
    nice -n "$niceness" "target/campaign/$target" "corpus/$target" "${run_options[@]}" \
        -runs="$runs" -max_total_time="$seconds" -artifact_prefix="artifacts/$target/" \
        >"$log" 2>&1 || status=$?
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    # The last status line: "#N  DONE  cov: C ft: F corp: K/S ...".
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
    outcome=ok
    if [ "$status" -ne 0 ]; then
        outcome="CRASHED (exit $status)"
        failed+=("$target")
    fi
    summary+=("$(printf '%-16s %12s %8s %7s %7s %14s  %s' "$target" "${executions:-?}" \
        "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$outcome")")
    echo "${summary[-1]}"
done

echo
printf '%-16s %12s %8s %7s %7s %14s\n' target executions exec/s cov ft corpus
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "crashed: ${failed[*]} (inputs in fuzz/artifacts/; see fuzz/README.md to reproduce)"
    exit 1
fi
