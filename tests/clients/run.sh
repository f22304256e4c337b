#!/usr/bin/env bash
# Real OpenAI clients judge agentwire's output.
#
# 1. Offline, through the clients' transport hooks (httpx MockTransport, a custom fetch): the
#    official openai Python SDK and the Vercel AI SDK's openai-compatible provider (the version
#    OpenCode bundles) are fed the bodies the `translate` example produces for every project
#    transcript (tests/fixtures) and, when present, every real capture in
#    ../shared/fixtures/cursor-agent. Each client's own request body goes to
#    `translate --request`, so the clients judge the answer to what they actually sent.
# 2. End to end, over loopback sockets, against both example proxies (`proxy/`: tokio_proxy,
#    blocking_proxy) with the replay agent standing in for cursor-agent: the openai SDK, the
#    AI SDK's streamText, and OpenCode itself running a two-turn tool round.
#
# Exits non-zero on any failure. Install the pinned clients first with tests/clients/install.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

opencode=tests/clients/opencode/$(cat tests/clients/opencode/version)/bin/opencode
python=tests/clients/python/.venv/bin/python
if ! "$python" -c 'import openai, pytest' 2>/dev/null || [ ! -d tests/clients/node/node_modules/@ai-sdk/openai-compatible ] || [ ! -x "$opencode" ]; then
    echo "tests/clients/run.sh: the pinned clients are missing; run tests/clients/install.sh" >&2
    exit 1
fi

cargo build --quiet -p agentwire --example translate
cargo build --quiet -p agentwire-proxy --bin replay_agent --bin tokio_proxy --bin blocking_proxy
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
export AGENTWIRE_TRANSLATE=$target/debug/examples/translate
for bin in replay_agent tokio_proxy blocking_proxy; do
    export "AGENTWIRE_${bin^^}=$target/debug/$bin"
done

echo "openai-python judges the output offline; openai-python, the AI SDK and OpenCode against both proxies"
"$python" -m pytest -q -p no:cacheprovider tests/clients/python
echo "the AI SDK (openai-compatible) judges the output (offline)"
(cd tests/clients/node && node --test --test-reporter=spec)
