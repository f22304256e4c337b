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
from model_server import CLIENT_ANSWER, DEFERRED_NOTE, LATE_RESULT, NONCE, WAIT_ANSWER, client_rounds, round_command, round_output

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

    def __init__(self, proxy, tmp_path):
        self.proxy = proxy
        self.tag = "nonce-" + secrets.token_hex(6)
        self.project = tmp_path / "project"
        self.project.mkdir()
        self.notes = f"The deploy window opens at 04:30 ({secrets.token_hex(6)}).\n"
        (self.project / "notes.txt").write_text(self.notes)
        self.prompt = f"Run the commands the task needs and report what they printed ({self.tag}). {client_rounds(ROUNDS)}"
        self.outputs = [round_output(k, self.notes) for k in range(1, ROUNDS + 1)]
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
        assert scripts == [f"client round {k}" for k in range(1, ROUNDS + 1)] + ["client answer"], scripts
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
        note(facts, self.proxy, f"{client}: tool the model called", calls[0]["called"])
        times = [round(b["at"] - a["at"], 3) for a, b in zip(calls, calls[1:])]
        note(facts, self.proxy, f"{client}: seconds per round at the model", times)
        note(facts, self.proxy, f"{client}: task wall time (s)", round(time.monotonic() - self.started, 3))


def test_openai_script_task(proxy, tmp_path, facts):
    """openai-python (Chat Completions) plays the client: it runs each `bash` call the answer
    asks for and sends the results, until the answer is text."""
    task = Task(proxy, tmp_path)
    client = openai.OpenAI(api_key=proxy.key, base_url=proxy.url + "/v1", max_retries=0, timeout=REQUEST_TIMEOUT_S)
    messages = [{"role": "user", "content": task.prompt}]
    for _ in range(ROUNDS + 1):
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
