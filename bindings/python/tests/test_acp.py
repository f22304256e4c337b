"""``AcpConnection`` and ``AcpConfig``: the same bytes as the Rust API over the project's ACP
fixtures and the real recordings, every getter, input and output, misuse, and a whole
conversation with the stand-in ACP agent (`acp_agent`, built by cargo) as a subprocess."""

from __future__ import annotations

import json
import os
import pydoc
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import agentwire as aw
from agentwire import _testing
from conftest import DIALECTS, FIXTURES, REPO, Rust, needs_hooks, shared_fixtures
from drive import acp_run

ACP_FIXTURES = sorted((FIXTURES / "acp").glob("*.jsonl"))
APIS = ["chat-completions", "responses", "messages"]

INITIALIZED = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}\n'
SESSION = (
    b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1","models":{"currentModelId":"m-a",'
    b'"availableModels":[{"modelId":"m-a","name":"A"},{"modelId":"m-b","name":"B"}]}}}\n'
)
CHUNK = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":'
    b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}}}\n'
)
PROMPT_END = b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}\n'
REQUEST = b'{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}'


def real_recordings() -> List[Path]:
    return shared_fixtures.files("acp", "*.jsonl")


def compare(rust: Rust, tmp_path: Path, recording: Path, api: str, chunk: int) -> None:
    script = tmp_path / "acp.script"
    script.write_bytes(rust.acp_script(recording, api, chunk))
    expected = rust.acp_run(script)
    assert b"turn 0 end" in expected or b"turn 0 head" in expected, "the replay served a turn"
    assert acp_run(script.read_bytes()) == expected


@pytest.mark.parametrize("recording", ACP_FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_fixtures_give_the_rust_bytes(
    rust: Rust, tmp_path: Path, recording: Path, api: str, chunk: int
) -> None:
    compare(rust, tmp_path, recording, api, chunk)


@pytest.mark.parametrize("api", APIS)
def test_real_recordings_give_the_rust_bytes(rust: Rust, tmp_path: Path, api: str) -> None:
    recordings = real_recordings()
    if not recordings:
        pytest.skip("the real captures are absent")
    for recording in recordings:
        compare(rust, tmp_path, recording, api, 4096)


def connected(config: Optional[aw.AcpConfig] = None) -> aw.AcpConnection:
    """A connection past its handshake with one session (models m-a, m-b) in its pool."""
    conn = aw.AcpConnection(config, now_ms=0)
    assert b'"method":"initialize"' in b"".join(conn.transmits())
    conn.push_stdout(INITIALIZED, 1)
    assert b'"method":"session/new"' in b"".join(conn.transmits())
    conn.push_stdout(SESSION, 2)
    return conn


def test_a_turn_from_handshake_to_end() -> None:
    with aw.AcpConnection(now_ms=0) as conn:
        assert not conn.is_ready and not conn.is_dead
        assert conn.models is None and conn.current_model is None
        assert conn.poll_timeout() == 10_000
        conn.close()
    with connected() as conn:
        assert conn.is_ready and conn.models == ["m-a", "m-b"] and conn.current_model == "m-a"
        turn = conn.start_turn(REQUEST, now_ms=3, created=1_700_000_000, id_seed=1)
        assert turn == 0 and conn.active_turns == 1
        assert b'"method":"session/prompt"' in b"".join(conn.transmits())
        conn.push_stdout(bytearray(CHUNK), 4)
        conn.push_stdout(memoryview(PROMPT_END), 5)
        assert list(conn.ready_turns()) == [0]
        outputs = list(conn.outputs(0))
        assert outputs[0] == aw.Head(200, "text/event-stream")
        assert outputs[-1] == aw.End()
        body = b"".join(o for o in outputs if isinstance(o, aw.Body))
        assert b'"content":"Hello"' in body and body.endswith(b"data: [DONE]\n\n")
        assert conn.poll_output(0) is None and conn.active_turns == 0
        assert conn.malformed_lines == 0
        conn.push_stdout(b"not json\n", 6)
        assert conn.malformed_lines == 1
        assert "ready=True" in repr(conn)
    assert repr(conn) == "AcpConnection(<closed>)"


def test_the_agent_exiting_fails_open_turns_and_later_ones() -> None:
    with connected() as conn:
        turn = conn.start_turn(DIALECTS["messages"], now_ms=3, dialect=aw.Dialect.MESSAGES)
        list(conn.transmits())
        conn.push_stderr(b"boom\n", 4)
        conn.agent_exited(signal=9, now_ms=5)
        assert conn.is_dead and not conn.is_ready
        head = next(conn.outputs(turn))
        assert isinstance(head, aw.Head) and head.status >= 500
        later = conn.start_turn(DIALECTS["responses"], now_ms=6, dialect="responses")
        outputs = list(conn.outputs(later))
        assert isinstance(outputs[0], aw.Head) and outputs[0].status >= 500
        assert outputs[-1] == aw.End()
        decisions = list(conn.decisions())
        assert all(isinstance(d, aw.Restart) and d.reason for d in decisions)


def test_misuse_is_a_typed_error_and_changes_nothing() -> None:
    with connected() as conn:
        with pytest.raises(aw.UnknownTurnError, match="never started") as caught:
            conn.poll_output(0)
        assert isinstance(caught.value, LookupError) and caught.value.name == "AW_RESULT_UNKNOWN_TURN"
        with pytest.raises(aw.UnknownTurnError):
            conn.client_gone(5, 1)
        with pytest.raises(aw.InvalidEnumError):
            conn.start_turn(REQUEST, now_ms=1, dialect="completions")
        with pytest.raises(TypeError):
            conn.start_turn("text", now_ms=1)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            conn.start_turn(REQUEST, aw.AcpConfig(), now_ms=1)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            conn.agent_exited(now_ms=1)
        assert conn.active_turns == 0
        turn = conn.start_turn(REQUEST, aw.Config(keep_alive_ms=5), now_ms=1)
        assert turn == 0
        conn.client_gone(turn, 2)
        conn.agent_exited(code=0, now_ms=3)
        with pytest.raises(aw.AfterExitError):
            conn.push_stdout(b"{}\n", 4)
        with pytest.raises(aw.AfterExitError):
            conn.push_stderr(b"x", 4)
        with pytest.raises(aw.ExitedTwiceError):
            conn.agent_exited(code=1, now_ms=4)
        conn.shutdown(5)
        conn.handle_timeout(6)
    with pytest.raises(aw.ClosedError):
        conn.poll_transmit()
    with pytest.raises(TypeError):
        aw.AcpConnection(aw.Config())  # type: ignore[arg-type]


def test_config_fields_defaults_and_bad_values() -> None:
    config = aw.AcpConfig(cwd="/srv/w", permission="reject-once", pool_size=0)
    assert config.cwd == "/srv/w" and config.pool_size == 0
    assert config.permission is aw.PermissionChoice.REJECT_ONCE
    defaults = aw.AcpConfig()
    assert defaults.as_dict()["max_concurrent_prompts"] == 4
    assert defaults.queue_timeout_ms == 30_000 and defaults.turn_output_budget == 8 << 20
    assert defaults.client_name == "agentwire" and defaults.cwd == "/"
    assert set(aw.AcpConfig.FIELDS) == set(defaults.as_dict())
    with pytest.raises(aw.InvalidEnumError, match="allow_once"):
        config.permission = 7  # type: ignore[assignment]
    with pytest.raises(aw.InvalidUtf8Error):
        config.cwd = "\udcff"
    with pytest.raises(TypeError):
        config.pool_size = "1"  # type: ignore[assignment]
    with pytest.raises(AttributeError, match="AcpConfig has no field"):
        config.pool = 1  # type: ignore[attr-defined]
    assert config.cwd == "/srv/w" and config.permission is aw.PermissionChoice.REJECT_ONCE
    assert defaults.native_tools is aw.NativeTools.KEEP
    config.native_tools = "off"  # type: ignore[assignment]
    assert config.native_tools is aw.NativeTools.OFF
    assert aw.AcpConfig(native_tools=aw.NativeTools.OFF).native_tools is aw.NativeTools.OFF
    with pytest.raises(aw.InvalidEnumError, match="keep"):
        config.native_tools = "none"  # type: ignore[assignment]
    assert config.native_tools is aw.NativeTools.OFF
    assert repr(config).startswith("AcpConfig(cwd='/srv/w'")
    # The setting reaches the agent: session/new carries the cwd.
    with aw.AcpConnection(config, now_ms=0) as conn:
        list(conn.transmits())
        conn.push_stdout(INITIALIZED, 1)
        conn.start_turn(REQUEST, now_ms=1)
        assert b'"cwd":"/srv/w"' in b"".join(conn.transmits())


def test_launch_without_native_tools_says_what_to_add() -> None:
    codex = aw.launch_without_native_tools("npx", ["-y", "@zed-industries/codex-acp"])
    assert codex.file is None
    assert len(codex.args) > 0 and codex.args[0::2] == ("-c",) * (len(codex.args) // 2)
    assert "features.shell_tool=false" in codex.args
    claude = aw.launch_without_native_tools("/usr/local/bin/claude-agent-acp")
    assert claude == aw.AgentLaunch(args=(), file=None)

    gemini = aw.launch_without_native_tools(
        "gemini", ["--acp"], env={"HOME": "/home/u", "GEMINI_CLI_HOME": "/srv/g"}
    )
    assert gemini.args == ()
    file = gemini.file
    assert file is not None
    assert (file.name, file.flag) == ("agentwire-native-tools-off.toml", "--policy")
    assert 'toolName = "*"\ndecision = "deny"' in file.contents
    assert 'mcpName = "*"\ndecision = "ask_user"' in file.contents
    assert file.after == ("--policy", "/srv/g/.gemini/policies")
    home = aw.launch_without_native_tools("gemini", ["--experimental-acp"], env={"HOME": "/h"})
    assert home.file is not None and home.file.after == ("--policy", "/h/.gemini/policies")
    own = ["--acp", "--policy", "/etc/p.toml"]
    named = aw.launch_without_native_tools("gemini", own, env={"HOME": "/h"})
    assert named.file is not None and named.file.after == ()
    # None: this process's environment.
    saved = os.environ.get("GEMINI_CLI_HOME")
    os.environ["GEMINI_CLI_HOME"] = "/from/process"
    try:
        inherited = aw.launch_without_native_tools("gemini", ["--acp"])
        assert inherited.file is not None
        assert inherited.file.after == ("--policy", "/from/process/.gemini/policies")
        given = aw.launch_without_native_tools("gemini", ["--acp"], env={})
        assert given.file is not None and given.file.after == ()
    finally:
        if saved is None:
            del os.environ["GEMINI_CLI_HOME"]
        else:
            os.environ["GEMINI_CLI_HOME"] = saved

    for program, args in [("cursor-agent", ["acp"]), ("gemini", []), ("my-agent", ["--acp"])]:
        with pytest.raises(aw.UnknownAgentError):
            aw.launch_without_native_tools(program, args)
    with pytest.raises(aw.InvalidUtf8Error):
        aw.launch_without_native_tools("codex-acp\udcff")
    with pytest.raises(TypeError):
        aw.launch_without_native_tools("codex-acp", "--acp")
    with pytest.raises(TypeError):
        aw.launch_without_native_tools("gemini", ["--acp"], env={"A": 1})  # type: ignore[dict-item]


def test_help_documents_every_field() -> None:
    text = pydoc.render_doc(aw.AcpConfig, renderer=pydoc.plaintext)
    for name in aw.AcpConfig.FIELDS:
        paragraph = text.split(f"\n |  {name}\n", 1)[1].split("\n |  \n", 1)[0]
        assert "Default: " in paragraph and len(paragraph) > 40, name
    assert "Default: PermissionChoice.ALLOW_ONCE." in text
    text = pydoc.render_doc(aw.AcpConnection, renderer=pydoc.plaintext)
    for method in ("start_turn", "transmits", "ready_turns", "outputs", "decisions", "models"):
        assert method in text


@needs_hooks
def test_overlapping_calls_are_refused_and_a_panic_poisons() -> None:
    conn = aw.AcpConnection(now_ms=0)
    with pytest.raises(aw.BusyError):
        _testing.overlap(conn)
    assert conn.poll_transmit() is not None
    with pytest.raises(aw.PanicError):
        _testing.panic(conn)
    with pytest.raises(aw.PoisonedError):
        conn.poll_transmit()
    assert conn.is_dead
    conn.close()
    config = aw.AcpConfig()
    with pytest.raises(aw.BusyError):
        _testing.overlap(config)
    assert config.pool_size == 1


# The stand-in agent, as a subprocess.


@pytest.fixture(scope="module")
def acp_agent() -> Path:
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "agentwire-proxy", "--bin", "acp_agent"],
        cwd=REPO,
        check=True,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "acp_agent"


def recorded_text(recording: Path) -> str:
    """What the recording's agent answered its first prompt, in message chunks."""
    records = [json.loads(line) for line in recording.read_text().splitlines() if line.strip()]
    session = next(
        r["msg"]["params"]["sessionId"]
        for r in records
        if r["dir"] == "client→agent" and r["msg"].get("method") == "session/prompt"
    )
    return "".join(
        r["msg"]["params"]["update"]["content"].get("text", "")
        for r in records
        if r["dir"] == "agent→client"
        and "msg" in r
        and r["msg"].get("method") == "session/update"
        and r["msg"]["params"]["sessionId"] == session
        and r["msg"]["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def test_the_stand_in_agent_end_to_end(acp_agent: Path) -> None:
    recording = FIXTURES / "acp" / "synthetic__malformed-line.jsonl"
    expected = recorded_text(recording)
    assert expected
    started = time.monotonic()
    deadline = started + 60

    def clock() -> int:
        return int((time.monotonic() - started) * 1000)

    agent = subprocess.Popen(
        [str(acp_agent), "--recording", str(recording), "--delay-ms", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert agent.stdin is not None and agent.stdout is not None and agent.stderr is not None
    outputs: List[aw.Output] = []
    decisions: List[aw.Decision] = []
    selector = selectors.DefaultSelector()
    selector.register(agent.stdout, selectors.EVENT_READ, "stdout")
    selector.register(agent.stderr, selectors.EVENT_READ, "stderr")
    try:
        with aw.AcpConnection(aw.AcpConfig(cwd=str(REPO)), now_ms=clock()) as conn:
            turn: Optional[int] = None
            body = json.dumps(
                {"model": "auto", "stream": False, "messages": [{"role": "user", "content": "hi"}]}
            ).encode()

            def drain() -> None:
                for data in conn.transmits():
                    agent.stdin.write(data)  # type: ignore[union-attr]
                    agent.stdin.flush()  # type: ignore[union-attr]
                decisions.extend(conn.decisions())
                for ready in conn.ready_turns():
                    outputs.extend(conn.outputs(ready))

            def pump(timeout: float) -> None:
                """Pushes what the agent wrote within `timeout` seconds; EOF unregisters."""
                for key, _ in selector.select(timeout=timeout):
                    data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                    if not data:
                        selector.unregister(key.fileobj)
                    elif key.data == "stdout":
                        conn.push_stdout(data, clock())
                    else:
                        conn.push_stderr(data, clock())
                    drain()

            drain()
            while not outputs or outputs[-1] != aw.End():
                assert time.monotonic() < deadline, f"no end by the deadline: {outputs}"
                if turn is None and conn.is_ready:
                    turn = conn.start_turn(body, now_ms=clock())
                    drain()
                    continue
                due = conn.poll_timeout()
                wait = deadline - time.monotonic()
                if due is not None:
                    wait = min(wait, max(0, due - clock()) / 1000)
                pump(wait)
                assert len(selector.get_map()) == 2, "the agent ended before the answer"
                if due is not None and clock() >= due:
                    conn.handle_timeout(clock())
                    drain()
            assert conn.models is not None and conn.malformed_lines >= 1
            assert decisions == [] and conn.is_ready
            # End of stdin ends the agent; what it wrote is read to its end first.
            agent.stdin.close()
            while selector.get_map():
                assert time.monotonic() < deadline, "the agent did not end by the deadline"
                pump(deadline - time.monotonic())
            code = agent.wait(timeout=max(1, deadline - time.monotonic()))
            conn.agent_exited(code=code, now_ms=clock())
            drain()
            assert conn.is_dead and code == 0
            assert [type(d) for d in decisions] == [aw.Restart]
    finally:
        selector.close()
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
            agent.wait(timeout=10)
        for stream in (agent.stdout, agent.stderr):
            stream.close()
    head = outputs[0]
    assert isinstance(head, aw.Head) and head.status == 200
    assert head.content_type == "application/json"
    answer: Dict[str, object] = json.loads(b"".join(o for o in outputs if isinstance(o, aw.Body)))
    assert answer["choices"][0]["message"]["content"] == expected  # type: ignore[index]
