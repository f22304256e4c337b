"""The real ACP agents behind both proxies (`--agent-protocol acp`), each agent calling a
scripted model server (model_server.py) on loopback.

The `proxy` fixture runs one proxy per agent and proxy kind for the whole session, with the
proxy's default permission policy (reject_once); `forced_proxy` one more with
`--allow-force`. Each gets a scratch directory of its own (the agent's HOME, its work dir
holding notes.txt, Codex's CODEX_HOME) and a model server of its own. Which agents run is
`$AGENTWIRE_ACP_AGENTS` (comma-separated; default all three), which proxies
`$AGENTWIRE_ACP_PROXIES` (default both): tests/agents/run.sh runs one pytest per agent, in
parallel. A test marked `only(agents=…, proxies=…)` runs with those alone; one marked
`outlasting` takes minutes, and run.sh runs it apart (`-m outlasting`).

Nothing may leave the machine: the agents' update checks and telemetry are turned off, and
`HTTP(S)_PROXY` points at the model server, so any outbound call that does go out arrives
there and fails the run. When a proxy's tests are done the fixture checks that nothing but
the model calls reached the server, that the proxy exits 0 on SIGTERM, and that no process
is left whose environment or working directory is in the scratch directory (the agent and
every tool process it started).
"""

import datetime
import json
import os
import pathlib
import re
import secrets
import signal
import sys
import time
import urllib.error
import urllib.request

import pytest
from model_server import Server

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from proxy_process import ProxyProcess, built  # noqa: E402  (shared with tests/clients/python)

ROOT = pathlib.Path(__file__).resolve().parents[2]
AGENTS_DIR = ROOT / "tests/agents"
BIN = AGENTS_DIR / "node_modules/.bin"
AGENTS = ("claude", "codex", "gemini")
PROXIES = ("tokio", "blocking")
SHUTDOWN_TIMEOUT_S = 15
# The agents start in a few seconds; on a loaded 2-core machine Gemini CLI can miss the
# proxy's 10 s deadline for `initialize`, and is restarted.
WARM_UP_TIMEOUT_S = 120
LEFTOVER_TIMEOUT_S = 10
# A dummy key for the model server: the agents want one, the server ignores it.
MODEL_KEY = "scripted-model-key"
# What may reach the model server: each agent's model API (and Claude Code's reachability
# check of the base URL).
EXPECTED_CALLS = re.compile(
    r"(HEAD /|POST /v1/messages(/count_tokens)?|POST /v1/responses|POST /v1beta/models/[^/:]+:(streamGenerateContent|generateContent|countTokens))"
)


# A proxy's log line for a request it answered.
REQUEST_LINE = re.compile(r" INFO request id=(\d+) route=(.+?) model=.* status=(\d+) .*conversation=(\S+)")


# What each agent passes on to the client, as observed (README "The real ACP agents"):
# the scripted model server reports usage on every answer; claude-agent-acp hands it on in
# the prompt result, Gemini CLI in the prompt result's `_meta.quota` (input and output
# only), codex-acp only as the context window's fill (`usage_update`), which is no usage.
USAGE = {
    "claude": {"prompt_tokens": 3130, "completion_tokens": 42},
    "codex": None,
    "gemini": {"prompt_tokens": 120, "completion_tokens": 10},
}
# Agents that end the whole turn (stop reason `cancelled`) when a permission is rejected,
# rather than telling their model the tool was refused.
REJECTION_ENDS_TURN = {"codex"}


def selected_proxies():
    chosen = os.environ.get("AGENTWIRE_ACP_PROXIES", ",".join(PROXIES)).split(",")
    unknown = set(chosen) - set(PROXIES)
    if unknown:
        raise pytest.UsageError(f"AGENTWIRE_ACP_PROXIES: unknown proxies {sorted(unknown)} (known: {PROXIES})")
    return chosen


def selected_agents():
    chosen = os.environ.get("AGENTWIRE_ACP_AGENTS", ",".join(AGENTS)).split(",")
    unknown = set(chosen) - set(AGENTS)
    if unknown:
        raise pytest.UsageError(f"AGENTWIRE_ACP_AGENTS: unknown agents {sorted(unknown)} (known: {AGENTS})")
    return chosen


def recipe(agent, scratch, model_url):
    """The agent's command line (binary, arguments) and the environment it needs, for a
    model server at `model_url` (the README's recipes, made offline)."""
    if agent == "claude":
        env = {
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": MODEL_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "DISABLE_AUTOUPDATER": "1",
        }
        # Claude Code refuses to skip its permission checks as root unless told it runs in
        # a sandbox; claude-agent-acp asks it to, so without this every session fails.
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"
        # Each session's Claude Code fetches the plugins' security blocklist from GitHub
        # (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC does not stop it) unless its copy is
        # less than an hour old: give it a fresh, empty one.
        blocklist = scratch / "home/.claude/plugins/blocklist.json"
        blocklist.parent.mkdir(parents=True)
        fetched = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
        blocklist.write_text(json.dumps({"fetchedAt": fetched, "plugins": []}))
        return BIN / "claude-agent-acp", [], env
    if agent == "codex":
        codex_home = scratch / "codex-home"
        codex_home.mkdir()
        # Outside the sandbox (which needs user namespaces CI containers may not grant),
        # asking before anything but known-safe commands such as `cat`.
        (codex_home / "config.toml").write_text(
            f"""\
model = "gpt-5.5"
model_provider = "scripted"
sandbox_mode = "danger-full-access"
approval_policy = "untrusted"

[model_providers.scripted]
name = "scripted"
base_url = "{model_url}/v1"
env_key = "SCRIPTED_MODEL_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""
        )
        return BIN / "codex-acp", [], {"CODEX_HOME": str(codex_home), "SCRIPTED_MODEL_KEY": MODEL_KEY}
    # Its usage statistics (Clearcut, play.googleapis.com, flushed every minute) are on
    # unless the user's settings turn them off; GEMINI_TELEMETRY_ENABLED is OpenTelemetry.
    settings = scratch / "home/.gemini/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"privacy": {"usageStatisticsEnabled": False}}))
    env = {
        "GOOGLE_GEMINI_BASE_URL": model_url,
        "GEMINI_API_KEY": MODEL_KEY,
        "GEMINI_TELEMETRY_ENABLED": "false",
        "NO_BROWSER": "true",
        # Otherwise it starts, then starts itself again as a child with a larger heap:
        # twice the start-up time, against the proxy's 10 s deadline for `initialize`.
        "GEMINI_CLI_NO_RELAUNCH": "true",
        # It connects to a session's MCP servers only in a folder it trusts (else its model
        # is offered none of the client's tools, and ACP says nothing of it).
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    return BIN / "gemini", ["--acp"], env


def scratch_processes(scratch):
    """Every process whose environment or working directory names `scratch`: {pid: command}."""
    marker = str(scratch).encode()
    found = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cwd = os.readlink(entry / "cwd").encode()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in environ or cwd.startswith(marker):
            found[int(entry.name)] = command
    return found


class Proxy:
    """One proxy with its warm agent, its scratch directory and its model server."""

    def __init__(self, agent, kind, scratch, allow_force=False, native_tools_off=False):
        self.agent, self.kind, self.scratch = agent, kind, scratch
        self.key = "sk-acp-" + secrets.token_hex(12)
        self.home, self.work = scratch / "home", scratch / "work"
        self.home.mkdir()
        self.work.mkdir()
        # A line the model cannot know: an answer holding it came from the file.
        self.notes = f"The kettle in the lab is blue ({secrets.token_hex(6)}).\n"
        (self.work / "notes.txt").write_text(self.notes)
        self.server = Server(self.work)
        binary, args, agent_env = recipe(agent, scratch, self.server.url)
        # A clean environment: nothing of the machine's own agent settings or keys.
        env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "LANG": "C.UTF-8", **agent_env}
        env.update(HTTP_PROXY=self.server.url, HTTPS_PROXY=self.server.url, ALL_PROXY=self.server.url, NO_PROXY="127.0.0.1,localhost")
        env.update({name.lower(): value for name, value in env.items() if name.endswith("_PROXY")})
        command = [built(f"{kind}_proxy", "tests/agents/run.sh"), "--listen", "127.0.0.1:0", "--api-key", self.key]
        command += ["--agent-protocol", "acp", "--agent-bin", str(binary), "--workspace", str(self.work)]
        command += [f"--agent-arg={arg}" for arg in args]
        if allow_force:
            command.append("--allow-force")
        if native_tools_off:
            command += ["--acp-native-tools", "off"]
        self.running = ProxyProcess(f"{kind}_proxy", command, env, scratch / "proxy.log", cwd=self.work)
        self.process, self.url = self.running.process, self.running.url

    def log(self):
        return self.running.log()

    def warm_up(self, timeout_s):
        """Waits for a first answer: a request the proxy refuses as retryable (503, 504: the
        agent is not ready, or missed its start-up deadline and is being restarted) is
        sent again until `timeout_s`. Returns (seconds, refusals)."""
        body = json.dumps({"model": "default", "messages": [{"role": "user", "content": "Say hello."}]}).encode()
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        started, refusals = time.monotonic(), []
        while True:
            request = urllib.request.Request(self.url + "/v1/chat/completions", data=body, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=timeout_s) as response:
                    json.load(response)
                    return round(time.monotonic() - started, 3), refusals
            except urllib.error.HTTPError as error:
                refusals.append(f"{error.code}: {json.load(error)['error']['message']}")
                if error.code not in (503, 504) or time.monotonic() - started > timeout_s:
                    pytest.fail(f"{self.agent} behind {self.kind}_proxy never answered: {refusals}\n{self.log()}")
                time.sleep(0.1)  # between polls of a server that is restarting its agent

    def get(self, path):
        """(status, JSON body) of a GET."""
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {self.key}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    def wait_idle(self, timeout_s=10):
        """Waits until no request is in flight; False past the deadline."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.get("/health")[1]["in_flight"] == 0:
                return True
            time.sleep(0.02)
        return False

    def requests(self, after=0):
        """The requests the proxy logged as done so far whose id (their order of arrival) is
        above `after`: (route, status, conversation), in order of id; conversation is how
        it began (`resumed`, `fresh:<reason>`)."""
        lines = (REQUEST_LINE.search(line) for line in list(self.running.output))
        found = sorted((int(line.group(1)), line.group(2), int(line.group(3)), line.group(4)) for line in lines if line)
        return [(route, status, how) for number, route, status, how in found if number > after]

    def mark(self, timeout_s=10):
        """The id of a request made now: every request sent after this returns has a
        greater one, every request answered before it was called a smaller one (a log line
        may trail its response; ids do not)."""
        path = "/mark-" + secrets.token_hex(6)
        self.get(path)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.running.output):
                found = REQUEST_LINE.search(line)
                if found and found.group(2) == f"GET {path}":
                    return int(found.group(1))
            time.sleep(0.02)
        pytest.fail(f"{self.kind}_proxy never logged GET {path}:\n{self.log()}")

    def conversations(self):
        """The conversation counters of the keyed /health."""
        return self.get("/health")[1]["conversations"]

    def model_calls(self):
        return self.server.snapshot()

    def unexpected_calls(self):
        return [call for call in self.model_calls() if not EXPECTED_CALLS.fullmatch(f"{call['method']} {call['path']}")]

    def stop(self):
        """SIGTERM; the proxy must exit 0 and leave no process behind."""
        code = self.running.terminate(SHUTDOWN_TIMEOUT_S)
        # The group was killed and its leader reaped before the proxy exited; the other
        # members may still be on their way out.
        deadline = time.monotonic() + LEFTOVER_TIMEOUT_S
        while (left := scratch_processes(self.scratch)) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.server.close()
        assert code == 0, f"{self.kind}_proxy exited with {code} on SIGTERM:\n{self.log()}"
        assert left == {}, f"processes of the {self.agent} agent outlived {self.kind}_proxy: {left}"


def run_proxy(request, tmp_path_factory, facts, allow_force=False, native_tools_off=False):
    agent, kind = request.param
    variant = " (forced)" if allow_force else " (native tools off)" if native_tools_off else ""
    scratch = tmp_path_factory.mktemp(f"{agent}-{kind}{'-forced' if allow_force else ''}{'-bare' if native_tools_off else ''}")
    running = Proxy(agent, kind, scratch, allow_force, native_tools_off)
    try:
        seconds, refusals = running.warm_up(WARM_UP_TIMEOUT_S)
        note(facts, running, "first answer, cold (s)" + variant, seconds)
        if refusals:
            note(facts, running, "refused while starting" + variant, refusals)
        yield running
        note(facts, running, "model calls" + variant,
             sorted({f"{call['method']} {call['path']}" for call in running.model_calls()}))
        assert running.unexpected_calls() == [], "requests other than model calls reached the model server"
        # For the record (pytest -rP, or the log on failure): every call the agent made.
        print(f"{agent} behind {kind}_proxy: model calls {[(c['method'], c['path'], c.get('script')) for c in running.model_calls()]}")
    finally:
        if running.process.poll() is None:
            running.stop()


def pytest_configure(config):
    config.addinivalue_line("markers", "only(agents=..., proxies=...): run with these agents and proxy kinds only")
    config.addinivalue_line(
        "markers",
        "outlasting: a client tool that outlasts the agent's own limit (over two minutes: "
        "tests/agents/run.sh runs it in a pytest of its own, alongside the others)",
    )


def pytest_generate_tests(metafunc):
    only = metafunc.definition.get_closest_marker("only")
    agents = only.kwargs.get("agents", AGENTS) if only else AGENTS
    kinds = only.kwargs.get("proxies", PROXIES) if only else PROXIES
    pairs = [(agent, kind) for agent in selected_agents() if agent in agents for kind in selected_proxies() if kind in kinds]
    ids = [f"{agent}-{kind}" for agent, kind in pairs]
    for name in ("proxy", "forced_proxy", "bare_proxy"):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, pairs, ids=ids, indirect=True, scope="session")


@pytest.fixture(scope="session")
def facts():
    """Observations for the record (what each agent gives, how long it takes), written to
    $AGENTWIRE_ACP_FACTS as JSON at the end of the session when that is set."""
    observed = {}
    yield observed
    if os.environ.get("AGENTWIRE_ACP_FACTS"):
        pathlib.Path(os.environ["AGENTWIRE_ACP_FACTS"]).write_text(json.dumps(observed, indent=1, sort_keys=True) + "\n")


def note(facts, proxy, key, value):
    facts.setdefault(f"{proxy.agent}/{proxy.kind}", {})[key] = value


@pytest.fixture(scope="session")
def proxy(request, tmp_path_factory, facts):
    yield from run_proxy(request, tmp_path_factory, facts, allow_force=False)


@pytest.fixture(scope="session")
def forced_proxy(request, tmp_path_factory, facts):
    yield from run_proxy(request, tmp_path_factory, facts, allow_force=True)


@pytest.fixture(scope="session")
def bare_proxy(request, tmp_path_factory, facts):
    """A proxy whose warm agent's own tools are off (`--acp-native-tools off`)."""
    yield from run_proxy(request, tmp_path_factory, facts, native_tools_off=True)
