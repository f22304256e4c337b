#!/usr/bin/env bash
# Real OpenAI clients judge agentwire's output: the official openai Python SDK and the
# Vercel AI SDK's openai-compatible provider (the version OpenCode bundles), each fed the
# bodies the `translate` example produces for every project transcript (tests/fixtures) and,
# when present, every real capture in ../shared/fixtures/cursor-agent. Each client's own
# request body goes to `translate --request`, so the clients judge the answer to what they
# actually sent. Offline: the bodies reach the clients through their transport hooks
# (httpx MockTransport, a custom fetch). Exits non-zero on any failure.
# Install the pinned clients first with tests/clients/install.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! python3 -c 'import openai, pytest' 2>/dev/null || [ ! -d tests/clients/node/node_modules/@ai-sdk/openai-compatible ]; then
    echo "tests/clients/run.sh: the pinned clients are missing; run tests/clients/install.sh" >&2
    exit 1
fi

cargo build --quiet --example translate
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
export AGENTWIRE_TRANSLATE="$target/debug/examples/translate"

echo "openai-python judges the output"
python3 -m pytest -q -p no:cacheprovider tests/clients/python
echo "the AI SDK (openai-compatible) judges the output"
(cd tests/clients/node && node --test --test-reporter=spec)
