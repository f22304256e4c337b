"""Claude Code itself against both proxies: a two-turn run where the model reads a file.

`claude -p` talks Anthropic Messages to the proxy (`POST /v1/messages?beta=true`, streamed).
The replay agent plays tests/fixtures/e2e/read_file, as for OpenCode: turn 1 asks for
notes.txt (a cursor `readToolCall`, which the proxy hands to Claude Code as a `tool_use` of
its own `Read` tool), Claude Code runs Read and sends the `tool_result` back, and turn 2
(chosen because the prompt now holds one tool result) answers from it. Exactly two agent
runs: a broken stream would make Claude Code re-send the turn without streaming (a third
run), so the count proves there was none. Claude Code runs with a HOME of its own and no
traffic but the proxy's, and is killed outright if it overruns.
"""

import json
import os
import re
import shlex
import shutil

from conftest import CLAUDE_ALIAS, FIXTURES, ROOT, assert_tool_round, run_client

VERSION = (ROOT / "tests/clients/claude-code/version").read_text().strip()
CLAUDE = ROOT / "tests/clients/claude-code" / VERSION / "node_modules/.bin/claude"
SCENARIO = FIXTURES / "e2e/read_file"
PROMPT = "When does the deploy window open? The answer is in notes.txt."
TIMEOUT_S = 120


def claude_env(proxy):
    """What the README's recipe sets, for this proxy: where it is, its key, the agent model,
    and no traffic anywhere else (update checks, telemetry)."""
    return {
        "ANTHROPIC_BASE_URL": proxy.url,
        "ANTHROPIC_API_KEY": proxy.key,
        "ANTHROPIC_MODEL": CLAUDE_ALIAS,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def turn_result(turn):
    """The `result` event of the scenario's turn."""
    lines = (SCENARIO / f"turn-{turn}.jsonl").read_text().splitlines()
    return next(event for event in map(json.loads, lines) if event["type"] == "result")


def test_claude_code_reads_a_file_and_answers(proxy, tmp_path):
    assert CLAUDE.is_file(), f"{CLAUDE} is missing: run tests/clients/install.sh"
    project, home, tmp = tmp_path / "project", tmp_path / "home", tmp_path / "tmp"
    for directory in (project, home, tmp):
        directory.mkdir()
    shutil.copy(SCENARIO / "notes.txt", project / "notes.txt")
    # A clean environment: nothing of the machine's own Claude Code or Anthropic settings.
    # Its temporary files go with the test's directory.
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), **claude_env(proxy)}
    # A failed request is reported, not retried: every request is one agent run.
    env["CLAUDE_CODE_MAX_RETRIES"] = "0"
    requests_before = len(proxy.requests())
    runs_before = len(proxy.agent_runs(CLAUDE_ALIAS))

    command = [CLAUDE, "-p", PROMPT, "--allowedTools", "Read", "--output-format", "json"]
    code, stdout, stderr = run_client(command, project, env, TIMEOUT_S)
    assert code == 0, f"claude exited with {code}:\n{stdout}\n{stderr}\nproxy:\n{proxy.log()}"
    result = json.loads(stdout)

    # Claude Code ran its own Read on the call the proxy handed it, and printed turn 2's answer.
    answer = turn_result(2)
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False), result
    assert result["result"] == answer["result"]
    assert result["num_turns"] == 2 and result["stop_reason"] == "end_turn"
    assert result["permission_denials"] == []
    # Turn 1 was stopped at the tool call, before the agent reported usage: the totals are turn 2's.
    counts = answer["usage"]
    usage = result["usage"]
    assert usage["input_tokens"] == counts["inputTokens"]
    assert usage["cache_read_input_tokens"] == counts["cacheReadTokens"]
    assert usage["cache_creation_input_tokens"] == counts["cacheWriteTokens"]
    assert usage["output_tokens"] == counts["outputTokens"]

    # Two requests, two agent runs: no retry, no non-streaming fallback, no side request
    # (count_tokens, the hello probe, a title or a quota check).
    assert proxy.requests_after(requests_before, 2) == [("POST /v1/messages", 200)] * 2
    runs = proxy.agent_runs(CLAUDE_ALIAS)[runs_before:]
    assert_tool_round(runs, "Read", (project / "notes.txt").read_text(), proxy.key)
    assert all(run["argv"][run["argv"].index("--model") + 1] == CLAUDE_ALIAS for run in runs)


def readme_recipe():
    """The README's Claude Code recipe: the ```sh block that sets ANTHROPIC_BASE_URL."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S)
    (recipe,) = [block for block in blocks if "ANTHROPIC_BASE_URL" in block]
    return recipe


def test_readme_recipe_is_the_tested_setup():
    """The README's recipe starts the proxy with Claude Code's names aliased as the tests do,
    and sets the same variables: the proxies' default address, the proxy's key."""
    recipe = readme_recipe()
    words = shlex.split(recipe, comments=True)
    alias = words[words.index("--model-alias") + 1]
    glob, model = alias.split("=")
    assert glob == "claude-*" and model
    assert words[words.index("--api-key") + 1] == "sk-local"
    assigned = dict(word.split("=", 1) for word in words if re.fullmatch(r"[A-Z_]+=.*", word))
    tested = claude_env(type("P", (), {"url": "", "key": ""}))
    assert assigned.keys() == tested.keys()
    assert assigned["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:32124"
    assert assigned["ANTHROPIC_API_KEY"] == "sk-local"
    assert assigned["ANTHROPIC_MODEL"] == model, "the agent model is the one Claude Code's names map to"
    assert assigned["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
