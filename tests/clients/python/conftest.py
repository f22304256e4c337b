"""Both example proxies on loopback, for the end-to-end tests.

The `proxy` fixture starts `tokio_proxy` and `blocking_proxy` in turn (one instance each for
the whole session), both with `tests/clients/agent.sh` as their cursor-agent: the replay
agent playing the fixture the requested model names (Claude Code's own model names, `claude-*`,
are aliased to `e2e-read`: the two-turn Read round it runs). When a proxy's tests are done, the
fixture checks that it is idle (no request in flight, no agent process left, no zombie) and
that it shuts down cleanly on SIGTERM.
"""

import json
import os
import re
import pathlib
import secrets
import sys
import time
import urllib.request

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "support"))
from client_process import run_client  # noqa: E402,F401  (shared with tests/agents; the tests import it from here)
from proxy_process import ProxyProcess, built  # noqa: E402  (shared with tests/agents)

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests/fixtures"
AGENT = ROOT / "tests/clients/agent.sh"
PROXIES = ("tokio", "blocking")
IDLE_TIMEOUT_S = 5
SHUTDOWN_TIMEOUT_S = 10
# What the proxies map Claude Code's model names to (`--model-alias 'claude-*=…'`).
CLAUDE_ALIAS = "e2e-read"


def example(name):
    """The path of a built example; tests/clients/run.sh builds them and exports the paths."""
    return built(name, "tests/clients/run.sh")


def descendants(pid):
    """Every live or zombie process below `pid`, from /proc."""
    parents = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is parenthesised and may hold spaces: fields resume after ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = (int(fields[1]), fields[0])
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, state) in parents.items():
            if ppid == parent and child not in found:
                found[child] = state
                frontier.append(child)
    return found


def tool_result_block(prompt):
    """The part of an agent's prompt from its first tool result on (agentwire renders a
    tool result as `tool result for <id> (<name>)`, and in a resumed chat's prompt as
    `tool result for <id> (<name> <arguments>)`), or None when it holds none."""
    at = prompt.find("tool result for")
    return None if at < 0 else prompt[at:]


def assert_tool_round(runs, tool, content, secret):
    """The agent runs of a two-turn tool round: exactly two; the first prompt holds no tool
    result, the second holds `content` (every line of it) as the result of the client's
    `tool`; `secret` (the proxy's key) reached neither."""
    assert len(runs) == 2, [run["prompt"][-300:] for run in runs]
    assert tool_result_block(runs[0]["prompt"]) is None
    block = tool_result_block(runs[1]["prompt"])
    assert block and re.search(rf"\({re.escape(tool)}[ )]", block), runs[1]["prompt"]
    assert all(line in block for line in content.splitlines()), block
    assert not any(secret in run["prompt"] or secret in " ".join(run["argv"]) for run in runs)


# Agent failures before any answer (what the replay agent plays for each model, see
# tests/clients/agent.sh) and the status each must get; None: any 5xx.
AGENT_FAILURES = {
    "not-logged-in": ("e2e-not-logged-in", 401),
    "unknown-model": ("gpt-9-ultra", 404),
    "usage-limit": ("e2e-usage-limit", 429),
    "crash": ("e2e-crash", None),
}


class Proxy:
    """One running proxy: its base URL, API key and the logs of the agents it ran."""

    def __init__(self, kind, scratch):
        self.kind = kind
        self.key = "sk-e2e-" + secrets.token_hex(12)
        self.agent_logs = scratch / "agent-logs"
        self.agent_logs.mkdir()
        self.output_path = scratch / "proxy.log"
        env = dict(os.environ)
        env.update(AGENTWIRE_REPLAY_AGENT=example("replay_agent"), AGENTWIRE_E2E_LOGS=str(self.agent_logs))
        env.pop("AGENTWIRE_API_KEY", None)
        command = [example(f"{kind}_proxy"), "--listen", "127.0.0.1:0", "--agent-bin", str(AGENT), "--api-key", self.key]
        command += ["--model-alias", f"claude-*={CLAUDE_ALIAS}"]
        # Its output is kept for failures, and read for the requests it logged.
        self.running = ProxyProcess(f"{kind}_proxy", command, env, self.output_path)
        self.process, self.url, self.output = self.running.process, self.running.url, self.running.output

    def log(self):
        return self.running.log()

    def get(self, path, key=None):
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {key or self.key}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def requests(self):
        """Every request the proxy logged as done so far: (route, status), in order."""
        lines = (re.search(r" INFO request id=\d+ route=(.+?) model=.* status=(\d+) ", line) for line in list(self.output))
        return [(found.group(1), int(found.group(2))) for found in lines if found]

    def requests_after(self, before, count):
        """The requests logged after the first `before`, once there are at least `count` of
        them (the log line of a request comes just after its response, so it may trail the
        client's exit; bounded)."""
        deadline = time.monotonic() + IDLE_TIMEOUT_S
        while len(self.requests()) < before + count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.requests()[before:]

    def agent_runs(self, model):
        """What the replay agent logged for `model`: one entry per run, in order."""
        path = self.agent_logs / f"{model}.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def assert_idle(self):
        """No request in flight, and every agent the proxy started is gone and reaped.

        A run's agent is reaped and its slot freed just after its response ends, so this
        waits for that (bounded)."""
        deadline = time.monotonic() + IDLE_TIMEOUT_S
        while True:
            left = descendants(self.process.pid)
            health = self.get("/health")
            if (not left and health["in_flight"] == 0) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert left == {}, f"{self.kind}_proxy left processes behind (pid: state): {left}"
        assert health["in_flight"] == 0, health

    def stop(self):
        code = self.running.terminate(SHUTDOWN_TIMEOUT_S)
        assert code == 0, f"{self.kind}_proxy exited with {code} on SIGTERM:\n{self.log()}"


@pytest.fixture(scope="session", params=PROXIES)
def proxy(request, tmp_path_factory):
    running = Proxy(request.param, tmp_path_factory.mktemp(f"{request.param}-proxy"))
    try:
        yield running
        running.assert_idle()
    finally:
        if running.process.poll() is None:
            running.stop()
