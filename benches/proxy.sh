#!/usr/bin/env bash
# Load figures for both example proxies (tokio_proxy, blocking_proxy), release builds on
# loopback, with the replay agent standing in for cursor-agent and proxy/benches/proxy_load.rs
# as the client. Prints, for each proxy:
#   1. latency: 1,000 sequential streaming requests; the agent's first stdout byte -> the
#      first content frame at the client, and request sent -> agent running (p50/p99), each
#      next to its floor measured between the requests (proxy_load.rs says how);
#   2. concurrency: 512 streams at once, replay pacing 10 ms per line; every stream checked
#      complete and correct, agent processes left afterwards, the proxy's peak RSS;
#   3. throughput: one stream of a 64 MiB event-mix transcript written as fast as the agent
#      can, next to `translate` on the same file, runs alternating (best of 5 each).
# Then the warm ACP path (`--agent-protocol acp`, the `acp_agent` stand-in playing a recording
# that answers the same text) beside the per-request path, for each proxy:
#   4. request sent -> first content frame, p50/p99, REQUESTS sequential requests each way
#      (the per-request agent, replay_agent, paced by ACP_DELAY_MS between lines; the ACP
#      agent waits ACP_DELAY_MS before each line, its first chunk included); and the proxy's
#      added latency: the ACP agent stamping its first agent_message_chunk as it writes it ->
#      the client reading the first content frame, p50/p99/max, next to its floor measured
#      between the requests (the same warm agent relayed through a loopback TCP connection);
#   5. sessions per second: RATE_REQUESTS requests, CLIENTS at a time, each way;
#   6. memory: OPEN streams at once, 101 lines at 10 ms, each way: the proxy's peak RSS over
#      its idle RSS, per stream (over ACP 4 prompts run at once, the rest wait in its queue).
# Nothing is asserted but correctness: the numbers are for the README. Options through the
# environment: PARTS ("per-request acp": sections 1-3, sections 4-6), PROXIES ("tokio
# blocking"), REQUESTS (1000), STREAMS (512), RUNS (5), ACP_DELAY_MS (0), RATE_REQUESTS
# (1000), CLIENTS (4), OPEN (64).
set -euo pipefail
cd "$(dirname "$0")/.."

parts=${PARTS:-per-request acp}
proxies=${PROXIES:-tokio blocking}
requests=${REQUESTS:-1000}
streams=${STREAMS:-512}
runs=${RUNS:-5}
acp_delay=${ACP_DELAY_MS:-0}
rate_requests=${RATE_REQUESTS:-1000}
clients=${CLIENTS:-4}
open=${OPEN:-64}

builds=()
for kind in $proxies; do builds+=(--bin "${kind}_proxy"); done
cargo build --release --quiet -p agentwire-proxy "${builds[@]}" --bin replay_agent --bin acp_agent
cargo build --release --quiet -p agentwire --example translate
cargo bench --no-run --quiet -p agentwire-proxy --bench proxy_load
load=$(cargo bench --no-run -p agentwire-proxy --bench proxy_load --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "proxy_load" and m.get("executable"):
        print(m["executable"])')
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bins=$target/release
examples=$target/release/examples
replay=$bins/replay_agent
acp=$bins/acp_agent

dir=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
# 512 streams hold a socket and three pipes each in the proxy.
ulimit -n "$(ulimit -Hn)"

"$load" workloads "$dir"
for delay in 0 10 "$acp_delay"; do
    printf '#!/bin/sh\nexec %q --delay-ms %s "$@"\n' "$replay" "$delay" >"$dir/agent-delay-$delay"
    chmod +x "$dir/agent-delay-$delay"
done
key=sk-bench-$RANDOM$RANDOM

# start KIND AGENT TRANSCRIPT [FLAGS...]: starts a proxy, sets $pid and $url.
start() {
    local kind=$1 agent=$2 transcript=$3
    shift 3
    : >"$dir/proxy.log"
    AGENTWIRE_REPLAY_TRANSCRIPT=$transcript AGENTWIRE_REPLAY_TIMES=$dir/times.jsonl \
        "$bins/${kind}_proxy" --listen 127.0.0.1:0 --agent-bin "$agent" --api-key "$key" "$@" \
        >"$dir/proxy.log" 2>&1 &
    pid=$!
    local waited=0
    # It binds a free port and announces it.
    until url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\)/v1.*|\1|p' "$dir/proxy.log") && [ -n "$url" ]; do
        if ! kill -0 "$pid" 2>/dev/null || [ $waited -ge 200 ]; then
            echo "${kind}_proxy did not start:" >&2
            cat "$dir/proxy.log" >&2
            exit 1
        fi
        sleep 0.05
        waited=$((waited + 1))
    done
}

stop() {
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
}

# Agent processes still alive (or not reaped) once every response has ended, after up to 5 s.
leftovers() {
    local n waited=0
    while true; do
        n=$( (pgrep -f "^$replay" || true; pgrep -f "^$acp" || true; [ -z "$pid" ] || ps -o pid= --ppid "$pid" || true) | sort -u | grep -c . || true)
        if [ "$n" = 0 ] || [ $waited -ge 100 ]; then
            echo "$n"
            return
        fi
        sleep 0.05
        waited=$((waited + 1))
    done
}

peak_rss_mib() {
    awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"
}

cpu_seconds() {
    # utime + stime: fields 14 and 15, counted after the parenthesised command name.
    python3 -c 'import os, sys
stat = open(f"/proc/{sys.argv[1]}/stat").read()
fields = stat[stat.rindex(")") + 2:].split()
print(round((int(fields[11]) + int(fields[12])) / os.sysconf(sys.argv[2]), 2))' "$pid" SC_CLK_TCK
}

# calc FORMAT EXPRESSION: awk arithmetic (a fresh machine may lack bc).
calc() {
    awk "BEGIN { printf \"$1\", $2 }"
}

# timed COMMAND...: "wall-seconds cpu-seconds" of one run, output discarded.
timed() {
    python3 -c 'import resource, subprocess, sys, time
begin = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
wall = time.perf_counter() - begin
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.6f} {usage.ru_utime + usage.ru_stime:.2f}")' "$@"
}

# least A B: the smaller number (B when A is empty).
least() {
    printf '%s\n' $1 "$2" | sort -g | head -1
}

# start_acp KIND RECORDING DELAY_MS [FLAGS...]: starts a proxy serving a warm acp_agent.
start_acp() {
    local kind=$1 recording=$2 delay=$3
    shift 3
    start "$kind" "$acp" /dev/null --agent-protocol acp --agent-arg --recording \
        --agent-arg "$recording" --agent-arg --delay-ms --agent-arg "$delay" "$@"
}

# open_streams: OPEN paced streams at once against the running proxy, checked; prints the
# proxy's peak RSS before and after, and the growth per stream.
open_streams() {
    local idle peak
    idle=$(peak_rss_mib)
    "$load" concurrent "$url" "$key" auto "$open" "$dir/paced.txt" || true
    peak=$(peak_rss_mib)
    echo "  proxy peak RSS ${idle} MiB idle, ${peak} MiB after:" \
        "$(calc %.0f "($peak - $idle) * 1024 / $open") KiB per stream"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
mix=$dir/mix.jsonl
mix_bytes=$(stat -c %s "$mix")

case " $parts " in *" per-request "*) ;; *) proxies_per_request= ;; esac
for kind in ${proxies_per_request-$proxies}; do
    echo
    echo "== ${kind}_proxy"

    start "$kind" "$replay" "$dir/latency.jsonl"
    "$load" latency "$url" "$key" auto "$requests" "$dir" "$replay"
    echo "  agents left: $(leftovers)"
    stop

    start "$kind" "$dir/agent-delay-10" "$dir/paced.jsonl" --max-concurrent "$streams"
    idle=$(peak_rss_mib)
    "$load" concurrent "$url" "$key" auto "$streams" "$dir/paced.txt" || true
    echo "  agents left: $(leftovers); proxy peak RSS ${idle} MiB idle, $(peak_rss_mib) MiB after;" \
        "proxy CPU $(cpu_seconds) s"
    stop

    # The baseline runs alternate with the proxy's, so both meet the same machine load.
    start "$kind" "$dir/agent-delay-0" "$mix"
    proxy_seconds=
    proxy_cpu=
    translate_seconds=
    translate_cpu=
    for attempt in $(seq "$runs"); do
        read -r seconds cpu < <(timed "$examples/translate" "$mix")
        translate_seconds=$(least "$translate_seconds" "$seconds")
        translate_cpu=$(least "$translate_cpu" "$cpu")
        before=$(cpu_seconds)
        "$load" throughput "$url" "$key" auto "$mix_bytes" >"$dir/throughput.out"
        grep -v '^seconds' "$dir/throughput.out"
        proxy_seconds=$(least "$proxy_seconds" "$(awk '/^seconds/ { print $2 }' "$dir/throughput.out")")
        proxy_cpu=$(least "$proxy_cpu" "$(calc %.2f "$(cpu_seconds) - $before")")
    done
    echo "  throughput on the $((mix_bytes / 1048576)) MiB event mix, best of $runs:" \
        "$(calc %.1f "$mix_bytes / 1e6 / $proxy_seconds") MB/s through the proxy," \
        "$(calc %.1f "$mix_bytes / 1e6 / $translate_seconds") MB/s translate:" \
        "$(calc %.2f "$translate_seconds / $proxy_seconds")x translate"
    echo "  CPU for one stream: proxy ${proxy_cpu} s, translate ${translate_cpu} s" \
        "($(calc %.2f "$translate_cpu / $proxy_cpu")x); proxy peak RSS $(peak_rss_mib) MiB"
    stop
done

case " $parts " in *" acp "*) ;; *) exit 0 ;; esac
for kind in $proxies; do
    echo
    echo "== ${kind}_proxy: the warm ACP agent beside the per-request path"

    echo " per-request (replay_agent --delay-ms $acp_delay):"
    start "$kind" "$dir/agent-delay-$acp_delay" "$dir/latency.jsonl"
    "$load" latency "$url" "$key" auto "$requests" "$dir" "$dir/agent-delay-$acp_delay"
    stop
    echo " ACP (acp_agent --delay-ms $acp_delay):"
    start_acp "$kind" "$dir/acp-latency.jsonl" "$acp_delay"
    "$load" acp-latency "$url" "$key" auto "$requests" "$dir" "$acp" "$acp_delay"
    stop

    echo " sessions per second, per-request:"
    start "$kind" "$dir/agent-delay-0" "$dir/latency.jsonl"
    "$load" rate "$url" "$key" auto "$rate_requests" "$clients" "$dir/latency.txt"
    echo "  agents left: $(leftovers); proxy CPU $(cpu_seconds) s"
    stop
    echo " sessions per second, ACP:"
    start_acp "$kind" "$dir/acp-latency.jsonl" 0
    "$load" rate "$url" "$key" auto "$rate_requests" "$clients" "$dir/latency.txt"
    echo "  proxy CPU $(cpu_seconds) s"
    stop

    echo " $open streams open at once, per-request:"
    start "$kind" "$dir/agent-delay-10" "$dir/paced.jsonl" --max-concurrent "$open"
    open_streams
    echo "  agents left: $(leftovers)"
    stop
    echo " $open streams open at once, ACP:"
    start_acp "$kind" "$dir/acp-paced.jsonl" 10 --max-concurrent "$open"
    # Idle is measured with the agent warm and one request served.
    "$load" rate "$url" "$key" auto 1 1 "$dir/paced.txt" >/dev/null
    open_streams
    stop
    echo "  agents left after the proxy stopped: $(leftovers)"
done
