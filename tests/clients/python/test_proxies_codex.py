"""Codex itself against both proxies: a two-turn run where the model runs a shell command.

`codex exec` talks OpenAI Responses to the proxy (`POST /v1/responses`, streamed) through a
custom provider in the CODEX_HOME's config.toml, the README's. The replay agent plays
tests/fixtures/e2e/run_command: turn 1 asks to print notes.txt (a cursor `shellToolCall`,
which the proxy hands to Codex as a `function_call` of its own `exec_command` tool), Codex
runs the command and sends its output back as a `function_call_output`, and turn 2 (chosen
because the prompt now holds one tool result) answers from it. Exactly two agent runs: a
stream Codex cannot finish is retried (a third run), so the count proves there was none.
Codex runs with a CODEX_HOME and HOME of its own, and is killed outright if it overruns.
"""

import json
import os
import re
import shutil
import tomllib

from conftest import FIXTURES, ROOT, assert_tool_round, run_client

VERSION = (ROOT / "tests/clients/codex/version").read_text().strip()
CODEX = ROOT / "tests/clients/codex" / VERSION / "node_modules/.bin/codex"
SCENARIO = FIXTURES / "e2e/run_command"
MODEL = "e2e-shell"
PROMPT = "When does the deploy window open? Print notes.txt to find out."
TIMEOUT_S = 120


def codex_config(base_url, model):
    """The README's config.toml, for a proxy at `base_url` and an agent model."""
    return f"""\
model = "{model}"
model_provider = "agentwire"

[model_providers.agentwire]
name = "agentwire"
base_url = "{base_url}/v1"
env_key = "AGENTWIRE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""


def turn_result(turn):
    lines = (SCENARIO / f"turn-{turn}.jsonl").read_text().splitlines()
    return next(event for event in map(json.loads, lines) if event["type"] == "result")


def test_codex_runs_a_command_and_answers(proxy, tmp_path):
    assert CODEX.is_file(), f"{CODEX} is missing: run tests/clients/install.sh"
    project, home, codex_home, tmp = tmp_path / "project", tmp_path / "home", tmp_path / "codex-home", tmp_path / "tmp"
    for directory in (project, home, codex_home, tmp):
        directory.mkdir()
    shutil.copy(SCENARIO / "notes.txt", project / "notes.txt")
    (codex_home / "config.toml").write_text(codex_config(proxy.url, MODEL))
    # A clean environment: nothing of the machine's own Codex or OpenAI settings; its
    # temporary files go with the test's directory.
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "CODEX_HOME": str(codex_home), "AGENTWIRE_API_KEY": proxy.key}
    requests_before = len(proxy.requests())
    runs_before = len(proxy.agent_runs(MODEL))

    # The command is the scenario's own `cat notes.txt`, in a scratch directory: run without
    # Codex's sandbox, which needs user namespaces that CI containers may not grant.
    command = [CODEX, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", PROMPT]
    code, stdout, stderr = run_client(command, project, env, TIMEOUT_S)
    assert code == 0, f"codex exited with {code}:\n{stdout}\n{stderr}\nproxy:\n{proxy.log()}"

    # Codex ran the command the proxy handed it, and printed turn 2's answer (only that) last.
    assert "cat notes.txt" in stderr and "deploy window: 04:30 UTC" in stderr, stderr
    assert stdout.strip() == turn_result(2)["result"]

    # Two requests, two agent runs: no retry, no reconnect.
    assert proxy.requests_after(requests_before, 2) == [("POST /v1/responses", 200)] * 2
    runs = proxy.agent_runs(MODEL)[runs_before:]
    assert_tool_round(runs, "exec_command", (project / "notes.txt").read_text(), proxy.key)


def test_readme_config_is_the_tested_shape():
    """The README's config.toml is what these runs give Codex but for the model: the same
    provider and keys, the proxies' default address."""
    blocks = re.findall(r"^```toml\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S)
    (readme,) = [tomllib.loads(block) for block in blocks if "wire_api" in block]
    tested = tomllib.loads(codex_config("http://127.0.0.1:32124", readme["model"]))
    assert readme == tested
