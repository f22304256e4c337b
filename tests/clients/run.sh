#!/usr/bin/env bash
# Real OpenAI clients judge agentwire's output: the official openai Python SDK and the
# Vercel AI SDK's openai-compatible provider (the version OpenCode bundles), each fed the
# bodies the `translate` example produces for every project transcript and, when present,
# every real capture in ../shared/fixtures/cursor-agent.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet --example translate
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
export AGENTWIRE_TRANSLATE="$target/debug/examples/translate"
python3 -m pytest -q tests/clients/python
(cd tests/clients/node && node --test)
