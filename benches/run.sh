#!/usr/bin/env bash
# Runs the criterion benchmarks (benches/throughput.rs, benches/acp.rs, then
# benches/conversations.rs) and prints each stage's throughput next to the baselines
# measured in the same run. Arguments go to criterion (a filter such as `stdout_to_sse`,
# `acp` or `conversations`, or `--measurement-time 10`); the conversations benchmark runs
# when no filter is given or the filter names it. Workloads come from ../shared/fixtures
# when present (AGENTWIRE_WORKLOAD=project forces the project's own transcripts and a
# generated request).
set -euo pipefail
cd "$(dirname "$0")/.."

filter=""
for arg in "$@"; do
    case $arg in
        -*) ;;
        *) filter=$arg; break ;;
    esac
done
cargo bench --bench throughput -- "$@"
cargo bench --bench acp -- "$@"
if [ -z "$filter" ] || [[ $filter == *conversation* ]]; then
    cargo bench --bench conversations -- "$@"
fi

python3 - "${CARGO_TARGET_DIR:-target}/criterion" <<'PY'
import json, os, sys

root = sys.argv[1]

def mean_us(group, bench):
    """Mean time of one iteration in µs, or None when the bench did not run."""
    path = os.path.join(root, group, bench, "new", "estimates.json")
    try:
        return json.load(open(path))["mean"]["point_estimate"] / 1e3
    except OSError:
        return None

def rate(group, bench):
    """Mean throughput in MB/s (or Melem/s), or None when the bench did not run."""
    path = os.path.join(root, group, bench, "new")
    try:
        estimates = json.load(open(os.path.join(path, "estimates.json")))
        info = json.load(open(os.path.join(path, "benchmark.json")))
    except OSError:
        return None
    seconds = estimates["mean"]["point_estimate"] / 1e9
    amount = info["throughput"]
    per = amount.get("Bytes") or amount.get("Elements")
    return per / seconds / 1e6

header = "\nstage                                           MB/s   x serde_json   x memchr"
for group, benches in [
    ("framing", ["line_framer"]),
    ("stdout_to_sse", ["bridge"]),
    ("stdout_to_sse_huge_line", ["bridge"]),
]:
    validate = rate(group, "serde_json_validate")
    scan = rate(group, "memchr_scan")
    for bench in ["serde_json_validate", "memchr_scan"] + benches:
        r = rate(group, bench)
        if r is None:
            continue
        x_validate = f"{r / validate:12.2f}" if validate else " " * 12
        x_scan = f"{r / scan:10.3f}" if scan else ""
        if header:
            print(header)
            header = None
        print(f"{group + '/' + bench:44} {r:9.1f} {x_validate}   {x_scan}")
fast = rate("chunking", "bridge_4096")
for chunk in ["1", "64", "4096"]:
    r = rate("chunking", "bridge_" + chunk)
    if r is not None and fast:
        print(f"{'chunking/bridge_' + chunk:44} {r:9.1f}   ({fast / r:.2f}x the time of 4 KiB reads)")
for bench, unit in [("text_delta_frames", "M frames/s"), ("text_delta_bytes", "MB/s")]:
    r = rate("sse", bench)
    if r is not None:
        print(f"{'sse/' + bench:44} {r:9.1f} {unit}")
chat = rate("encoder", "chat_completions")
for bench in ["chat_completions", "responses", "messages"]:
    r = rate("encoder", bench)
    if r is not None and chat:
        print(f"{'encoder/' + bench:44} {r:9.1f}   ({chat / r:.2f}x the time of chat_completions)")
value = rate("request", "serde_json_validate")
for bench in ["serde_json_validate", "serde_json_value", "parse", "parse_and_render_prompt"]:
    r = rate("request", bench)
    if r is not None:
        print(f"{'request/' + bench:44} {r:9.1f} {r / value:12.2f}")
sessions = rate("acp", "session")
if sessions:
    # Elements are sessions: rates in millions of sessions per second.
    print(f"\n{'acp/session (a whole request, warm connection)':44} {sessions * 1e6:9.0f} sessions/s")
    for bench, what in [("per_request_bridge", "the per-request Bridge, same answer"),
                        ("serde_json_validate", "serde_json validating its exchange"),
                        ("memchr_scan", "memchr scanning its exchange")]:
        r = rate("acp", bench)
        if r:
            print(f"{'  vs acp/' + bench:44} {r * 1e6:9.0f} /s   (acp/session takes {r / sessions:.2f}x the time of {what})")
small, large = rate("client_batch", "starts_40000"), rate("client_batch", "starts_80000")
if small and large:
    # Rates are per start: the time ratio of twice the starts is 2 x small / large.
    print(f"{'client_batch/starts_80000 vs 40000':44} {2 * small / large:9.2f}x the time (linear: 2x)")
conv = {name: mean_us("conversations", name) for name in [
    "serde_json_validate_r20", "parse_r20", "render_prompt_r20", "sj_added_r20",
    "sj_resumed_r2_20", "sj_fresh_r2_20", "acp_resumed_r2_20", "acp_fresh_r2_20"]}
if all(conv.values()):
    print("\nconversations (means of one request of a Claude Code tool loop)        µs")
    for path, label in [("sj", "stream-json"), ("acp", "ACP")]:
        resumed, fresh = conv[path + "_resumed_r2_20"], conv[path + "_fresh_r2_20"]
        print(f"  {label + ' request, rounds 2-20: resumed':62} {resumed:9.1f}   ({resumed / fresh:.2f}x the time of a fresh one, {fresh:.1f})")
    added, validate, parse = conv["sj_added_r20"], conv["serde_json_validate_r20"], conv["parse_r20"]
    print(f"  {'what a resumed request adds, round 20 (decide, render, fallback)':62} {added:9.1f}   ({added / validate:.2f}x serde_json validating the body, {validate:.1f}; {added / parse:.2f}x parsing it, {parse:.1f})")
    render = conv["render_prompt_r20"]
    print(f"  {'the whole render a fresh request does instead, round 20':62} {render:9.1f}   ({render / validate:.2f}x the validation)")
PY
