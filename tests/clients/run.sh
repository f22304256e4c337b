#!/usr/bin/env bash
# Real clients judge agentwire's output, in all three dialects.
#
# 1. Offline, through the clients' transport hooks (httpx MockTransport, a custom fetch): the
#    official openai and anthropic Python SDKs and the Vercel AI SDK's openai-compatible
#    provider (the version OpenCode bundles) are fed the bodies the `translate` example
#    produces for every project transcript (tests/fixtures) and, when present, every real
#    capture in ../shared/fixtures/cursor-agent. Each client's own request body goes to
#    `translate --request`, so the clients judge the answer to what they actually sent.
# 2. End to end, over loopback sockets, against both example proxies (`proxy/`: tokio_proxy,
#    blocking_proxy) with the replay agent standing in for cursor-agent: openai-python (Chat
#    Completions and Responses), anthropic-python (Messages), the AI SDK's streamText (the
#    openai-compatible, Anthropic and OpenAI Responses providers), and OpenCode, Claude Code
#    and Codex themselves, each running a two-turn tool round.
# 3. OpenCode with the JavaScript package's plugin, installed from its packed tarball and
#    configured by the README's lines alone (tests/clients/opencode/plugin.test.mjs).
# 4. The real ACP agents (claude-agent-acp, codex-acp, Gemini CLI) behind both proxies with
#    --agent-protocol acp, each calling a scripted model server on loopback, through
#    openai-python and anthropic-python (tests/agents/run.sh: text in every dialect, a tool
#    the agent runs itself, a permission-gated command, a client hanging up), and Claude
#    Code, Codex and OpenCode doing multi-round tasks with their own tools, which the agent
#    is given over MCP (one agent session per task; a client tool outlasting codex-acp's
#    limit).
#
# Exits non-zero on any failure. Install the pinned clients first with tests/clients/install.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

clients=tests/clients
python=$clients/python/.venv/bin/python
missing=false
"$python" -c 'import anthropic, openai, pytest' 2>/dev/null || missing=true
for installed in node/node_modules/@ai-sdk/openai-compatible ai-sdk/node_modules/@ai-sdk/anthropic \
    "opencode/$(cat $clients/opencode/version)/bin/opencode" \
    "claude-code/$(cat $clients/claude-code/version)/node_modules/.bin/claude" \
    "codex/$(cat $clients/codex/version)/node_modules/.bin/codex"; do
    [ -e "$clients/$installed" ] || missing=true
done
if $missing; then
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

# pytest's tmp_path directories (the clients' homes and projects) go under a directory of
# this run's, removed at its end.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "openai-python and anthropic-python judge the output offline; they, the AI SDK, OpenCode, Claude Code and Codex against both proxies"
"$python" -m pytest -q -p no:cacheprovider --basetemp="$scratch/pytest" tests/clients/python
echo "the AI SDK (openai-compatible) judges the output (offline)"
(cd tests/clients/node && node --test --test-reporter=spec)
echo "OpenCode with agentwire's plugin, from the packed JavaScript package (bindings/js/setup.sh installs what packing builds with)"
bindings/js/setup.sh
(cd tests/clients/opencode && node --test --test-reporter=spec plugin.test.mjs)
echo "the real ACP agents against both proxies (--agent-protocol acp), through openai-python, anthropic-python, Claude Code, Codex and OpenCode"
tests/agents/run.sh
