"""OpenCode itself against both proxies: a two-turn run where the model reads a file.

`opencode run` talks to the proxy through a custom openai-compatible provider. The replay
agent plays tests/fixtures/e2e/read_file: turn 1 asks for notes.txt (a cursor `readToolCall`,
which the proxy hands to OpenCode as a `read` tool call), OpenCode runs its own read tool and
sends the result back, and turn 2 (chosen because the prompt now holds one tool result)
answers from it. OpenCode runs isolated from the machine's configuration (a fresh HOME and
XDG directories, no `OPENCODE_*` variables but its own) and from the network (its models
catalogue, updates, sharing, plugins and LSP downloads switched off), and is killed
outright if it overruns: it ignores SIGTERM.
"""

import json
import os
import pathlib
import re
import shutil
import types

from conftest import FIXTURES, ROOT, assert_tool_round, run_client

VERSION = (ROOT / "tests/clients/opencode/version").read_text().strip()
OPENCODE = ROOT / "tests/clients/opencode" / VERSION / "bin/opencode"
SCENARIO = FIXTURES / "e2e/read_file"
PROMPT = "When does the deploy window open? The answer is in notes.txt."
TIMEOUT_S = 120
# No catalogue download, update check, sharing, plugins, LSP download or foreign config.
ISOLATION = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
}


def opencode_config(proxy):
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": "agentwire/e2e-read",
        "small_model": "agentwire/e2e-read",
        "provider": {
            "agentwire": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "agentwire",
                "options": {"baseURL": proxy.url + "/v1", "apiKey": proxy.key},
                "models": {
                    "e2e-read": {
                        "name": "agentwire replay",
                        "tool_call": True,
                        "reasoning": True,
                        "limit": {"context": 100000, "output": 8000},
                    }
                },
            }
        },
    }


def run_opencode(proxy, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(SCENARIO / "notes.txt", project / "notes.txt")
    home = tmp_path / "home"
    # OpenCode (a Bun executable) unpacks native libraries and its own files into TMPDIR:
    # the test's directory, removed with it.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENCODE_")}
    env.update(ISOLATION)
    env.update(
        # OpenCode takes its directory from PWD, which a child's cwd does not change.
        PWD=str(project),
        HOME=str(home),
        TMPDIR=str(tmp),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
        OPENCODE_CONFIG_CONTENT=json.dumps(opencode_config(proxy)),
    )
    command = [OPENCODE, "run", "--pure", "--format", "json", "--title", "e2e", "-m", "agentwire/e2e-read", PROMPT]
    code, stdout, stderr = run_client(command, project, env, TIMEOUT_S)
    return code, stdout, stderr, project


def test_opencode_reads_a_file_and_answers(proxy, tmp_path):
    assert OPENCODE.is_file(), f"{OPENCODE} is missing: run tests/clients/install.sh"
    runs_before = len(proxy.agent_runs("e2e-read"))
    code, stdout, stderr, project = run_opencode(proxy, tmp_path)
    assert code == 0, f"opencode exited with {code}:\n{stdout}\n{stderr}\nproxy:\n{proxy.log()}"
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]

    # OpenCode ran its own read tool on the call the proxy handed it.
    tools = [e["part"] for e in events if e.get("type") == "tool_use"]
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [("read", "completed")], tools
    assert pathlib.Path(tools[0]["state"]["input"]["filePath"]).name == "notes.txt"
    finishes = [e["part"]["reason"] for e in events if e.get("type") == "step_finish"]
    assert finishes == ["tool-calls", "stop"], finishes

    # It printed turn 2's answer.
    answer = next(json.loads(line)["result"] for line in (SCENARIO / "turn-2.jsonl").open() if '"type":"result"' in line)
    printed = "".join(e["part"]["text"] for e in events if e.get("type") == "text")
    assert answer in printed, printed

    # The second prompt the agent got holds the file's content as the read call's result.
    runs = proxy.agent_runs("e2e-read")[runs_before:]
    assert_tool_round(runs, "read", (project / "notes.txt").read_text(), proxy.key)


def test_readme_config_is_the_tested_shape():
    """The README's opencode.json is what these runs give OpenCode but for the proxy's
    address, key and model: the same provider package and option names, a model of its own
    list, the proxies' default address."""
    blocks = re.findall(r"^```json\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S)
    (readme,) = [json.loads(block) for block in blocks if "opencode.ai/config.json" in block]
    (name, provider), = readme["provider"].items()
    tested = opencode_config(types.SimpleNamespace(url="http://x", key="k"))["provider"]["agentwire"]
    assert provider["npm"] == tested["npm"]
    assert provider["options"].keys() == tested["options"].keys()
    assert provider["options"]["baseURL"] == "http://127.0.0.1:32124/v1"
    assert readme["model"].split("/", 1) == [name, next(iter(provider["models"]))]
    for model in provider["models"].values():
        assert model.keys() == next(iter(tested["models"].values())).keys()
