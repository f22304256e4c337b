"""Conversations through the real agents: a client's own tools given to the agent as an MCP
server of its session, and a multi-round task on one agent session.

Each test is a client doing a task of ROUNDS tool rounds through a proxy with
`--agent-protocol acp`: Claude Code, Codex and OpenCode themselves (tokio_proxy), and
scripts playing the client over openai-python and anthropic-python (both proxies). The
agent's model is the scripted server (model_server.py, `client_rounds`): in round k it
calls the client's shell tool — offered to it as an MCP tool — with round_command(k), and
once every result came back it answers quoting them. The client runs each command itself,
in a project directory of the test's own whose notes.txt the agent's workspace does not
have, so an output that reaches the model came from the client.

What each test asserts, from three sides:
- the client: every round's call reached it, and its final answer quotes every output;
- the proxy: the task's first request started fresh, every later one resumed the
  conversation (the request log lines, and the keyed /health counters);
- the agent's model: one request per round plus the answer, all in one inner session
  (the session id Claude Code and Codex send their model; for Gemini CLI, which sends none,
  the native history carried from request to request), request k holding the first k-1
  outputs as its own native tool results, none an error.
"""

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import openai
import pytest
from conftest import ROOT, note
from model_server import CLIENT_ANSWER, DEFERRED_NOTE, LATE_RESULT, client_rounds, round_output

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from client_process import run_client  # noqa: E402  (shared with tests/clients/python)

ROUNDS = 3
# A round is a model call, an MCP call and a client's command: seconds; a loaded 2-core
# machine gets a wide margin.
REQUEST_TIMEOUT_S = 120
CLIENT_TIMEOUT_S = 300
COMMAND_TIMEOUT_S = 30
# The script's shell tool, in each dialect.
BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string", "description": "The command."}}, "required": ["command"]}
OPENAI_BASH = {"type": "function", "function": {"name": "bash", "description": "Runs a shell command in the project.", "parameters": BASH_SCHEMA}}
ANTHROPIC_BASH = {"name": "bash", "description": "Runs a shell command in the project.", "input_schema": BASH_SCHEMA}


class Task:
    """One task of a test: its project directory (notes.txt with a line of its own), its
    prompt (a nonce naming it in the model server's log) and where the logs stood when it
    began."""

    def __init__(self, proxy, tmp_path, rounds=ROUNDS):
        self.proxy, self.rounds = proxy, rounds
        self.tag = "nonce-" + secrets.token_hex(6)
        self.project = tmp_path / "project"
        self.project.mkdir()
        self.notes = f"The deploy window opens at 04:30 ({secrets.token_hex(6)}).\n"
        (self.project / "notes.txt").write_text(self.notes)
        self.prompt = f"Run the commands the task needs and report what they printed ({self.tag}). {client_rounds(rounds)}"
        self.outputs = [round_output(k, self.notes) for k in range(1, rounds + 1)]
        self.counters_before = proxy.conversations()
        self.after = proxy.mark()
        self.started = time.monotonic()

    def requests(self, count, timeout_s=10):
        """The task's requests the proxy logged (route, status, conversation), the MCP
        endpoint's and /health's left out, once there are `count` of them (a request's log
        line comes just after its response ends, so it may trail the client)."""
        deadline = time.monotonic() + timeout_s
        while True:
            requests = [r for r in self.proxy.requests(self.after) if r[0].startswith("POST /v1/")]
            if len(requests) >= count or time.monotonic() > deadline:
                return requests
            time.sleep(0.02)

    def run(self, command):
        """Runs `command` as the client's tool does, in the project: its output."""
        done = subprocess.run(["bash", "-c", command], cwd=self.project, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        return done.stdout + done.stderr

    def model_calls(self):
        """The model server's requests of this task (its nonce), in order."""
        return [call for call in self.proxy.model_calls() if call.get("nonce") == self.tag and call["script"].startswith("client")]

    def assert_answer(self, text):
        """The client's final answer quotes every round's output."""
        assert CLIENT_ANSWER in text, text
        for output in self.outputs:
            assert output in text, (output, text)

    def assert_one_session(self, requests):
        """The proxy: `requests` (route, status, conversation) of the task, the first
        fresh, every later one resumed; the /health counters moved by as much. The model:
        one call per round and the answer, in one inner session, each round's call
        holding every earlier output as its own tool result."""
        assert [status for _, status, _ in requests] == [200] * len(requests), requests
        assert requests[0][2].startswith("fresh:"), requests
        assert [how for _, _, how in requests[1:]] == ["resumed"] * (len(requests) - 1), requests
        counters = self.proxy.conversations()
        assert counters["resumed"] - self.counters_before["resumed"] == len(requests) - 1, (self.counters_before, counters)

        calls = self.model_calls()
        scripts = [call["script"] for call in calls]
        assert scripts == [f"client round {k}" for k in range(1, self.rounds + 1)] + ["client answer"], scripts
        for k, call in enumerate(calls):
            given = call["results"]
            assert len(given) == k, (k, given)
            for result, output in zip(given, self.outputs):
                assert not result["error"] and not result["prompt"], result
                assert output in result["text"], (output, result)
        sessions = {call["session"] for call in calls}
        if self.proxy.agent == "gemini":
            assert sessions == {None}
        else:
            assert len(sessions) == 1 and None not in sessions, sessions
        return calls

    def note_facts(self, facts, client, calls):
        """What the inner model was offered and called, and each round's time at the model
        (from the previous model call to this one: the client's command, two HTTP hops, an
        MCP answer and the agent's own work)."""
        note(facts, self.proxy, f"{client}: client tools the model saw", calls[0]["client_tools"])
        note(facts, self.proxy, f"{client}: every tool the model was offered", calls[0]["offered"])
        note(facts, self.proxy, f"{client}: tool the model called", calls[0]["called"])
        times = [round(b["at"] - a["at"], 3) for a, b in zip(calls, calls[1:])]
        note(facts, self.proxy, f"{client}: seconds per round at the model", times)
        note(facts, self.proxy, f"{client}: task wall time (s)", round(time.monotonic() - self.started, 3))


def openai_task(proxy, task):
    """openai-python runs `task` through `proxy`: each `bash` call the answer asks for run
    and its result sent, until the answer is text. The messages, and the last choice."""
    client = openai.OpenAI(api_key=proxy.key, base_url=proxy.url + "/v1", max_retries=0, timeout=REQUEST_TIMEOUT_S)
    messages = [{"role": "user", "content": task.prompt}]
    for _ in range(task.rounds + 1):
        completion = client.chat.completions.create(model="default", messages=messages, tools=[OPENAI_BASH])
        choice = completion.choices[0]
        if choice.finish_reason != "tool_calls":
            break
        calls = choice.message.tool_calls
        assert [call.function.name for call in calls] == ["bash"], calls
        messages.append(choice.message.model_dump(exclude_none=True))
        for call in calls:
            output = task.run(json.loads(call.function.arguments)["command"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    assert choice.finish_reason == "stop", choice
    return messages, choice


# What codex-acp offers its model whatever its configuration says (its MCP-resource
# readers, its plan, patch and image tools); everything else of its own is turned off.
CODEX_UNREMOVABLE = {"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource", "update_plan", "apply_patch", "view_image"}


def test_native_tools_off_offers_the_model_the_client_tools_only(bare_proxy, tmp_path, facts):
    """With `--acp-native-tools off` the inner model is offered the client's tools and none
    of the agent's own (but for codex-acp's few that nothing turns off), and the task still
    runs on one session."""
    task = Task(bare_proxy, tmp_path, rounds=2)
    messages, choice = openai_task(bare_proxy, task)
    seen = [(call["script"], call["offered"], call["results"]) for call in task.model_calls()]
    assert sum(1 for message in messages if message["role"] == "tool") == task.rounds, (messages, seen)
    task.assert_answer(choice.message.content)
    calls = task.assert_one_session(task.requests(task.rounds + 1))
    client_tools = set(calls[0]["client_tools"])
    assert len(client_tools) == 1, calls[0]
    for call in calls:
        own = set(call["offered"]) - client_tools
        if bare_proxy.agent == "codex":
            assert own <= CODEX_UNREMOVABLE, own - CODEX_UNREMOVABLE
        else:
            assert own == set(), own
    note(facts, bare_proxy, "native tools off: every tool the model was offered", calls[0]["offered"])


def test_openai_script_task(proxy, tmp_path, facts):
    """openai-python (Chat Completions) plays the client: it runs each `bash` call the answer
    asks for and sends the results, until the answer is text."""
    task = Task(proxy, tmp_path)
    messages, choice = openai_task(proxy, task)
    rounds = sum(1 for message in messages if message["role"] == "tool")
    assert rounds == ROUNDS, messages
    task.assert_answer(choice.message.content)
    requests = task.requests(ROUNDS + 1)
    assert [route for route, _, _ in requests] == ["POST /v1/chat/completions"] * (ROUNDS + 1)
    calls = task.assert_one_session(requests)
    task.note_facts(facts, "openai-python", calls)


def test_anthropic_script_task(proxy, tmp_path, facts):
    """anthropic-python (Messages) plays the client, as above with `tool_use` and
    `tool_result` blocks."""
    task = Task(proxy, tmp_path)
    client = anthropic.Anthropic(api_key=proxy.key, base_url=proxy.url, max_retries=0, timeout=REQUEST_TIMEOUT_S)
    messages = [{"role": "user", "content": task.prompt}]
    for _ in range(ROUNDS + 1):
        message = client.messages.create(model="default", max_tokens=1024, messages=messages, tools=[ANTHROPIC_BASH])
        if message.stop_reason != "tool_use":
            break
        uses = [block for block in message.content if block.type == "tool_use"]
        assert [use.name for use in uses] == ["bash"], message.content
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]})
        results = [{"type": "tool_result", "tool_use_id": use.id, "content": task.run(use.input["command"])} for use in uses]
        messages.append({"role": "user", "content": results})
    assert message.stop_reason == "end_turn", message
    rounds = sum(1 for m in messages if m["role"] == "user" and isinstance(m["content"], list))
    assert rounds == ROUNDS, messages
    task.assert_answer("".join(block.text for block in message.content if block.type == "text"))
    requests = task.requests(ROUNDS + 1)
    assert [route for route, _, _ in requests] == ["POST /v1/messages"] * (ROUNDS + 1)
    calls = task.assert_one_session(requests)
    task.note_facts(facts, "anthropic-python", calls)


# The real clients: each as its tests/clients recipe sets it up (a HOME and temporary
# directory of its own, no traffic but the proxy's), its model the proxy's `default`.
CLAUDE = ROOT / "tests/clients/claude-code" / (ROOT / "tests/clients/claude-code/version").read_text().strip() / "node_modules/.bin/claude"
CODEX = ROOT / "tests/clients/codex" / (ROOT / "tests/clients/codex/version").read_text().strip() / "node_modules/.bin/codex"
OPENCODE = ROOT / "tests/clients/opencode" / (ROOT / "tests/clients/opencode/version").read_text().strip() / "bin/opencode"
# OpenCode: no catalogue download, update check, sharing, plugins, LSP download or foreign
# config (tests/clients/python/test_proxies_opencode.py).
OPENCODE_ISOLATION = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
}


def client_env(proxy, task, tmp_path, **extra):
    """A clean environment for a client CLI: its own HOME and TMPDIR under the test's
    directory, and the model server as its HTTP(S) proxy, so that a call anywhere but the
    agentwire proxy on loopback arrives there and fails the run."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "LANG": "C.UTF-8"}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = proxy.server.url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra)
    return env


def run_task(proxy, task, command, env, route):
    """Runs a client CLI through the task; its stdout, once the proxy logged the task's
    requests (all of `route`) and they were one conversation on one inner session."""
    code, stdout, stderr = run_client(command, task.project, env, CLIENT_TIMEOUT_S)
    assert code == 0, f"{command[0]} exited with {code}:\n{stdout}\n{stderr}\nproxy:\n{proxy.log()}"
    requests = task.requests(ROUNDS + 1)
    assert [r for r, _, _ in requests] == [route] * (ROUNDS + 1), requests
    return stdout, task.assert_one_session(requests)


@pytest.mark.only(proxies=("tokio",))
def test_claude_code_task(proxy, tmp_path, facts):
    """Claude Code (`claude -p`, its Bash tool allowed) does the task: the agent's model calls
    `mcp__client__Bash`, Claude Code runs each command and the answer it prints quotes them."""
    assert CLAUDE.is_file(), f"{CLAUDE} is missing: run tests/clients/install.sh"
    task = Task(proxy, tmp_path)
    env = client_env(
        proxy,
        task,
        tmp_path,
        ANTHROPIC_BASE_URL=proxy.url,
        ANTHROPIC_API_KEY=proxy.key,
        ANTHROPIC_MODEL="default",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="0",
        DISABLE_AUTOUPDATER="1",
    )
    command = [CLAUDE, "-p", task.prompt, "--allowedTools", "Bash", "--output-format", "json"]
    stdout, calls = run_task(proxy, task, command, env, "POST /v1/messages")
    result = json.loads(stdout)
    assert (result["subtype"], result["is_error"], result["num_turns"]) == ("success", False, ROUNDS + 1), result
    assert result["permission_denials"] == []
    task.assert_answer(result["result"])
    task.note_facts(facts, "Claude Code", calls)


@pytest.mark.only(proxies=("tokio",))
def test_codex_task(proxy, tmp_path, facts):
    """Codex (`codex exec`, outside its sandbox) does the task through its Responses
    provider: Codex runs each command with its own shell tool and prints the answer."""
    assert CODEX.is_file(), f"{CODEX} is missing: run tests/clients/install.sh"
    task = Task(proxy, tmp_path)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f"""\
model = "default"
model_provider = "agentwire"

[model_providers.agentwire]
name = "agentwire"
base_url = "{proxy.url}/v1"
env_key = "AGENTWIRE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

# Else it sends analytics to ab.chatgpt.com and fetches plugins from GitHub and chatgpt.com.
[analytics]
enabled = false

[features]
plugins = false
"""
    )
    env = client_env(proxy, task, tmp_path, CODEX_HOME=str(codex_home), AGENTWIRE_API_KEY=proxy.key)
    command = [CODEX, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", task.prompt]
    stdout, calls = run_task(proxy, task, command, env, "POST /v1/responses")
    task.assert_answer(stdout)
    task.note_facts(facts, "Codex", calls)


@pytest.mark.only(proxies=("tokio",))
def test_opencode_task(proxy, tmp_path, facts):
    """OpenCode (`opencode run`) does the task through its openai-compatible provider:
    OpenCode runs each command with its own bash tool and prints the answer."""
    assert OPENCODE.is_file(), f"{OPENCODE} is missing: run tests/clients/install.sh"
    task = Task(proxy, tmp_path)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": "agentwire/default",
        "small_model": "agentwire/default",
        "permission": {"bash": "allow"},
        "provider": {
            "agentwire": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "agentwire",
                "options": {"baseURL": proxy.url + "/v1", "apiKey": proxy.key},
                "models": {"default": {"name": "agentwire", "tool_call": True, "limit": {"context": 100000, "output": 8000}}},
            }
        },
    }
    home = tmp_path / "home"
    # At every start OpenCode installs @opencode-ai/plugin from npm into its config
    # directory, unless the directory's package.json and package-lock.json both name it.
    config_dir = home / ".config/opencode"
    config_dir.mkdir(parents=True)
    (config_dir / "node_modules").mkdir()
    (config_dir / "package.json").write_text(json.dumps({"dependencies": {"@opencode-ai/plugin": "*"}}))
    (config_dir / "package-lock.json").write_text(json.dumps({"packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}))
    env = client_env(
        proxy,
        task,
        tmp_path,
        **OPENCODE_ISOLATION,
        # OpenCode takes its directory from PWD, which a child's cwd does not change.
        PWD=str(task.project),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
        OPENCODE_CONFIG_CONTENT=json.dumps(config),
    )
    command = [OPENCODE, "run", "--pure", "--format", "json", "--title", "task", "-m", "agentwire/default", task.prompt]
    stdout, calls = run_task(proxy, task, command, env, "POST /v1/chat/completions")
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    tools = [(e["part"]["tool"], e["part"]["state"]["status"]) for e in events if e.get("type") == "tool_use"]
    assert tools == [("bash", "completed")] * ROUNDS, tools
    task.assert_answer("".join(e["part"]["text"] for e in events if e.get("type") == "text"))
    task.note_facts(facts, "OpenCode", calls)


# codex-acp gives up on an MCP call after 120 s (its limit for a server given over ACP,
# which ACP cannot raise); the client's tool here takes longer.
CLIENT_TOOL_S = 130


@pytest.mark.outlasting
@pytest.mark.only(agents=("codex",))
def test_client_tool_outlasting_the_agent_limit(proxy, tmp_path, facts):
    """A CLIENT TOOL THAT OUTLASTS THE AGENT'S OWN LIMIT (takes over two minutes;
    tests/agents/run.sh runs it in a pytest of its own, alongside the others).

    The script's tool result comes CLIENT_TOOL_S after the call was handed to it, past the
    120 s after which codex-acp gives up on an MCP call. agentwire answers the call before
    that (at about 100 s) with a note that the result follows; the model ends its turn on
    it; when the client's result comes it is given to the model as a prompt on the same
    session. The model never sees an error for the call, it gets the real result, and the
    client gets a normal answer. The one sleep here is the client's own slowness, the
    behaviour under test."""
    task = Task(proxy, tmp_path, rounds=1)
    client = openai.OpenAI(api_key=proxy.key, base_url=proxy.url + "/v1", max_retries=0, timeout=REQUEST_TIMEOUT_S)
    messages = [{"role": "user", "content": task.prompt}]
    completion = client.chat.completions.create(model="default", messages=messages, tools=[OPENAI_BASH])
    handed = time.monotonic()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    (call,) = choice.message.tool_calls
    messages.append(choice.message.model_dump(exclude_none=True))
    output = task.run(json.loads(call.function.arguments)["command"])
    time.sleep(max(0.0, handed + CLIENT_TOOL_S - time.monotonic()))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    completion = client.chat.completions.create(model="default", messages=messages, tools=[OPENAI_BASH])
    choice = completion.choices[0]
    assert choice.finish_reason == "stop", choice
    task.assert_answer(choice.message.content)

    # The proxy: the second request resumed the conversation.
    requests = task.requests(2)
    assert [(status, how) for _, status, how in requests] == [(200, "fresh:no_session"), (200, "resumed")], requests

    # The model: the call, the note (a result, not an error) before codex's limit, then the
    # client's result as a prompt of the same session, and the answer.
    calls = task.model_calls()
    assert [c["script"] for c in calls] == ["client round 1", "client wait", "client answer"], calls
    assert len({c["session"] for c in calls}) == 1, calls
    note_result, late = calls[2]["results"]
    assert calls[1]["results"] == [note_result]
    assert DEFERRED_NOTE in note_result["text"] and not note_result["error"] and not note_result["prompt"], note_result
    assert late["prompt"] and not late["error"] and late["text"].startswith(LATE_RESULT), late
    assert task.outputs[0] in late["text"], late
    for result in (note_result, late):
        assert "timed out" not in result["text"] and "tool call error" not in result["text"], result
    note(facts, proxy, "call answered with the note after (s)", round(calls[1]["at"] - calls[0]["at"], 3))
    note(facts, proxy, "late result prompted after (s)", round(calls[2]["at"] - calls[0]["at"], 3))
    note(facts, proxy, "answer after the note", choice.message.content)
