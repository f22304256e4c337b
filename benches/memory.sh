#!/usr/bin/env bash
# Peak memory of `translate`:
# - on a 1 GiB transcript holding one 60 MiB tool-result line (the default line limit is
#   64 MiB), next to the same transcript without that line;
# - on one 50 MiB line of each kind that carries bulk: answer text (decoded and re-encoded
#   as SSE), and a tool result (skipped), as a multiple of the line's length. The goal is
#   at most about twice the line plus a constant.
# Transcripts are generated in a temporary directory and removed afterwards.
# Needs /usr/bin/time (GNU time) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if [ -d ../shared/fixtures/cursor-agent ] && [ "${AGENTWIRE_WORKLOAD:-}" != project ]; then
    sources=../shared/fixtures/cursor-agent
else
    sources=tests/fixtures
fi

python3 - "$sources" "$dir" <<'PY'
import json, os, sys

sources, out = sys.argv[1], sys.argv[2]
events = []
for name in sorted(os.listdir(sources)):
    if not name.endswith(".jsonl"):
        continue
    for line in open(os.path.join(sources, name), "rb"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") not in ("system", "user", "result"):
            events.append(line.rstrip(b"\n") + b"\n")
body = b"".join(events)
init = b'{"type":"system","subtype":"init","session_id":"m","model":"Composer 2"}\n'
result = b'{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"m"}\n'
content = ("x" * 70 + "\\n") * (60 * 1024 * 1024 // 72)
huge = ('{"type":"tool_call","subtype":"completed","call_id":"huge","tool_call":{"readToolCall":'
        '{"args":{"path":"/w/huge"},"result":{"success":{"content":"' + content + '"}}}},'
        '"session_id":"m"}\n').encode()
for name, with_huge in (("with-huge-line.jsonl", True), ("without.jsonl", False)):
    with open(os.path.join(out, name), "wb") as f:
        f.write(init)
        written, placed = 0, not with_huge
        while written < 1 << 30:
            f.write(body)
            written += len(body)
            if not placed and written > 1 << 29:
                f.write(huge)
                written += len(huge)
                placed = True
        f.write(result)
print(f"longest line: {len(huge)} bytes")

# One long line of each kind, between an init and a result.
size = 50 * 1024 * 1024
text = json.dumps(("line of text;\n" * (size // 15))[:size])
tool = json.dumps(("x" * 70 + "\n") * (size // 71))
singles = {
    "text-line": '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":' + text + '}]},"session_id":"m"}\n',
    "tool-result-line": '{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"readToolCall":{"args":{"path":"/w/f"},"result":{"success":{"content":' + tool + '}}}},"session_id":"m"}\n',
}
for name, line in singles.items():
    with open(os.path.join(out, name + ".jsonl"), "wb") as f:
        f.write(init)
        f.write(line.encode())
        f.write(result)
    with open(os.path.join(out, name + ".len"), "w") as f:
        f.write(str(len(line)))
PY

cargo build --release --quiet --example translate
for name in with-huge-line without; do
    file="$dir/$name.jsonl"
    size=$(stat -c %s "$file")
    /usr/bin/time -f "%M %e" -o "$dir/time" target/release/examples/translate "$file" >/dev/null 2>&1
    read -r kib seconds <"$dir/time"
    echo "$name: $size bytes in ${seconds}s, peak RSS $((kib / 1024)) MiB"
done
for name in text-line tool-result-line; do
    file="$dir/$name.jsonl"
    line=$(cat "$dir/$name.len")
    /usr/bin/time -f "%M %e" -o "$dir/time" target/release/examples/translate "$file" >/dev/null 2>&1
    read -r kib seconds <"$dir/time"
    ratio=$(python3 -c "print(f'{$kib * 1024 / $line:.2f}')")
    echo "$name: one $line-byte line in ${seconds}s, peak RSS $((kib / 1024)) MiB = ${ratio}x the line"
done
