#!/usr/bin/env bash
# Real OpenAI clients judge agentwire's output: the official openai Python SDK and the
# Vercel AI SDK's openai-compatible provider (the version OpenCode bundles), each fed the
# bodies the `translate` example produces for every project transcript and, when present,
# every real capture in ../shared/fixtures/cursor-agent.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet --example translate
export AGENTWIRE_TRANSLATE="$PWD/target/debug/examples/translate"
python3 -m pytest -q tests/clients/python
(cd tests/clients/node && node --test)
