#!/usr/bin/env bash
# The real ACP agents (claude-agent-acp, codex-acp, Gemini CLI; pinned in package.json)
# behind both example proxies with --agent-protocol acp, each agent's model a scripted
# server on loopback, driven through openai-python and anthropic-python, and through Claude
# Code, Codex and OpenCode doing multi-round tasks with their own tools
# (tests/agents/*.py). The three agents run in parallel, one pytest each; with codex-acp,
# the client tool that outlasts its limit (over two minutes: pytest -m outlasting) runs
# alongside them, one pytest per proxy. Each one's output is shown when it ends.
#
#   tests/agents/run.sh [AGENT...]      (default: claude codex gemini)
#
# With AGENTWIRE_ACP_FACTS=DIR, each run's observations (usage, timings, the model server's
# routes, the tool names each model saw) go to DIR/RUN.json. Install first:
# tests/clients/install.sh (ci/setup.sh clients) puts the agents in tests/agents/node_modules,
# the client CLIs in tests/clients and the Python clients in tests/clients/python/.venv.
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
for client in "claude-code/$(cat tests/clients/claude-code/version)/node_modules/.bin/claude" \
    "codex/$(cat tests/clients/codex/version)/node_modules/.bin/codex" \
    "opencode/$(cat tests/clients/opencode/version)/bin/opencode"; do
    if [ ! -x "tests/clients/$client" ]; then
        echo "tests/agents/run.sh: the pinned client CLIs are missing; run tests/clients/install.sh" >&2
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
# start RUN AGENT PROXIES MARKERS: one pytest in the background.
start() {
    local run=$1 facts=${AGENTWIRE_ACP_FACTS:+$AGENTWIRE_ACP_FACTS/$1.json}
    AGENTWIRE_ACP_AGENTS=$2 AGENTWIRE_ACP_PROXIES=$3 AGENTWIRE_ACP_FACTS=$facts \
        "$python" -m pytest -q -p no:cacheprovider --basetemp="$scratch/$run" -m "$4" tests/agents \
        >"$scratch/$run.log" 2>&1 &
    pids[$run]=$!
}
# The longest first; shown after the others.
if [[ " ${agents[*]} " == *" codex "* ]]; then
    for proxy in tokio blocking; do start "codex-outlasting-$proxy" codex "$proxy" outlasting; done
fi
for agent in "${agents[@]}"; do start "$agent" "$agent" tokio,blocking "not outlasting"; done
failed=()
for run in "${agents[@]}" "${!pids[@]}"; do
    [ -n "${pids[$run]:-}" ] || continue
    status=0
    wait "${pids[$run]}" || status=$?
    echo "--- $run (pytest exit $status)"
    cat "$scratch/$run.log"
    [ "$status" -eq 0 ] || failed+=("$run")
    unset "pids[$run]"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "tests/agents/run.sh: failed: ${failed[*]}" >&2
    exit 1
fi
