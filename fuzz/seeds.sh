#!/usr/bin/env bash
# Builds the seed corpora fuzz/corpus/<target>/ from files already in the checkout: the
# project's fixtures and, when present beside the repository, the shared real captures.
# Nothing is downloaded. Existing corpus files (what earlier runs found) are kept.
#
#   fuzz/seeds.sh
set -euo pipefail
cd "$(dirname "$0")"

fixtures=../tests/fixtures
shared=../../shared/fixtures
targets=(framing decoder decoder_mutated request bridge abi)
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
done

# Transcripts: the project's, then the shared captures (absent on machines without them).
transcripts=("$fixtures"/*.jsonl)
if [ -d "$shared/cursor-agent" ]; then
    transcripts+=("$shared"/cursor-agent/*.jsonl)
fi

count=0
for path in "${transcripts[@]}"; do
    name=$(basename "$path" .jsonl)
    # Whole transcripts seed every stdout target. The bridge and the mutator read their
    # input as structure, not text; a transcript still gives them varied bytes to start
    # from.
    for target in framing decoder decoder_mutated bridge; do
        cp "$path" "corpus/$target/transcript-$name"
    done
    count=$((count + 1))
done

# Per-line seeds: the first line of each (type, subtype) seen across all transcripts, so
# that short inputs of every kind are in the corpus from the start. They are cut into a
# temporary directory, removed when the script exits.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lines=0
while IFS= read -r -d '' file; do
    lines=$((lines + 1))
    cp "$file" corpus/decoder/
    cp "$file" corpus/framing/
done < <(
    awk -v dir="$tmp" '
        match($0, /"type":"[a-z_]+"(,"subtype":"[a-z_]+")?/) {
            key = substr($0, RSTART, RLENGTH)
            if (!(key in seen)) {
                seen[key] = 1
                n++
                print > (dir "/line-" n)
                close(dir "/line-" n)
            }
        }' "${transcripts[@]}"
    find "$tmp" -type f -print0
)

# Request bodies: the project's, and the OpenCode bodies of the shared fixtures (one
# request per JSONL record's "body"; python3 extracts them when it is installed).
requests=0
# Every dialect's: the Chat Completions bodies at the top, the others in a folder each
# (named after it, so that equal file names do not collide).
while IFS= read -r -d '' path; do
    name=${path#"$fixtures"/requests/}
    cp "$path" "corpus/request/request-${name//\//-}"
    requests=$((requests + 1))
done < <(find "$fixtures/requests" -type f -print0)
if [ -d "$shared/opencode" ] && command -v python3 >/dev/null; then
    for path in "$shared"/opencode/*.jsonl; do
        requests=$((requests + $(python3 - "$path" corpus/request <<'PY'
import json, os, sys
source, out = sys.argv[1], sys.argv[2]
n = 0
for i, line in enumerate(open(source, encoding="utf-8")):
    try:
        body = json.loads(line).get("body")
    except (ValueError, AttributeError):
        continue
    if body is None:
        continue
    name = "opencode-%s-%d.json" % (os.path.basename(source).rsplit(".", 1)[0], i)
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        json.dump(body, f)
    n += 1
print(n)
PY
        )))
    done
fi

# The C ABI's calls: structured inputs no file in the checkout is shaped like, so a small
# corpus kept in git (minimised with -merge=1 from the long runs) starts the target.
abi=0
for path in seeds/abi/*; do
    [ -f "$path" ] || continue
    cp "$path" corpus/abi/
    abi=$((abi + 1))
done

echo "seeds: $count transcripts, $lines per-line seeds, $requests request bodies, $abi abi inputs"
