#!/usr/bin/env bash
# The real ACP agents (claude-agent-acp, codex-acp, Gemini CLI; pinned in package.json)
# behind both example proxies with --agent-protocol acp, each agent's model a scripted
# server on loopback, driven through openai-python and anthropic-python (tests/agents/*.py).
# The three agents run in parallel, one pytest each; each one's output is shown when it ends.
#
#   tests/agents/run.sh [AGENT...]      (default: claude codex gemini)
#
# With AGENTWIRE_ACP_FACTS=DIR, each agent's observations (usage, timings, the model
# server's routes) go to DIR/AGENT.json. Install first: tests/clients/install.sh (ci/setup.sh
# clients) puts the agents in tests/agents/node_modules and the Python clients in
# tests/clients/python/.venv.
set -euo pipefail
cd "$(dirname "$0")/../.."

python=tests/clients/python/.venv/bin/python
agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(claude codex gemini)
for bin in claude-agent-acp codex-acp gemini; do
    if [ ! -x "tests/agents/node_modules/.bin/$bin" ]; then
        echo "tests/agents/run.sh: the pinned agents are missing; run tests/clients/install.sh" >&2
        exit 1
    fi
done
"$python" -c 'import anthropic, openai, pytest' 2>/dev/null || {
    echo "tests/agents/run.sh: the pinned Python clients are missing; run tests/clients/install.sh" >&2
    exit 1
}

cargo build --quiet -p agentwire-proxy --bin tokio_proxy --bin blocking_proxy
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
export AGENTWIRE_TOKIO_PROXY=$target/debug/tokio_proxy AGENTWIRE_BLOCKING_PROXY=$target/debug/blocking_proxy

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
declare -A pids
for agent in "${agents[@]}"; do
    facts=${AGENTWIRE_ACP_FACTS:+$AGENTWIRE_ACP_FACTS/$agent.json}
    AGENTWIRE_ACP_AGENTS=$agent AGENTWIRE_ACP_FACTS=$facts \
        "$python" -m pytest -q -p no:cacheprovider --basetemp="$scratch/$agent" tests/agents \
        >"$scratch/$agent.log" 2>&1 &
    pids[$agent]=$!
done
failed=()
for agent in "${agents[@]}"; do
    status=0
    wait "${pids[$agent]}" || status=$?
    echo "--- $agent (pytest exit $status)"
    cat "$scratch/$agent.log"
    [ "$status" -eq 0 ] || failed+=("$agent")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "tests/agents/run.sh: failed: ${failed[*]}" >&2
    exit 1
fi
