"""The Bridge from Python: the same bytes as the Rust bridge on the same input, in every
dialect, typed outputs, misuse raising the right exception."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentwire as aw
from conftest import (
    DEFAULT_REQUEST,
    DIALECTS,
    FIXTURES,
    client_tools_request,
    fixture_requests,
    real_captures,
    transcripts,
)
from drive import respond

HOSTILE = [
    b'{"model":',
    b"\xff\xfe{}",
    b"[]",
    b"",
    b"\x00" * 64,
    b'{"model":"--force","messages":[{"role":"user","content":"hi"}]}',
    b'{"model":"auto","messages":[{"role":"user","content":"hi"}],"tools":"no"}',
    b'{"model":"auto","messages":' + b"[" * 10_000 + b"]" * 10_000 + b"}",
]


def smallest(tmp_path: Path, api: str) -> Path:
    """The dialect's smallest request, as a file for `translate`."""
    path = tmp_path / f"default-{api}.json"
    path.write_bytes(DIALECTS[api])
    return path


@pytest.mark.parametrize("api", DIALECTS)
@pytest.mark.parametrize("transcript", transcripts(), ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_transcripts_give_the_rust_bytes(rust, tmp_path: Path, api: str, transcript: Path, chunk: int):
    for request in [smallest(tmp_path, api), *fixture_requests(api)]:
        expected = rust.translate(request, transcript, chunk=chunk, api=api)
        got = respond(request.read_bytes(), transcript.read_bytes(), chunk, dialect=api)
        assert got == expected, request


@pytest.mark.parametrize("api", DIALECTS)
@pytest.mark.parametrize("stderr", sorted((FIXTURES / "stderr").glob("*.txt")), ids=lambda p: p.name)
def test_failed_runs_give_the_rust_status_and_body(rust, tmp_path: Path, api: str, stderr: Path):
    transcript = FIXTURES / "failure_no_result.jsonl"
    nostream = client_tools_request(api).with_name("client_tools_nostream.json")
    for request in [smallest(tmp_path, api), nostream]:
        expected = rust.translate(request, transcript, stderr=stderr, exit_code=1, api=api)
        got = respond(
            request.read_bytes(),
            transcript.read_bytes(),
            stderr=stderr.read_bytes(),
            exit_code=1,
            dialect=api,
        )
        assert got == expected
        assert got[0] >= 400


@pytest.mark.skipif(not real_captures(), reason="../shared/fixtures absent")
@pytest.mark.parametrize("api", DIALECTS)
@pytest.mark.parametrize("transcript", real_captures(), ids=lambda p: p.name)
def test_real_captures_give_the_rust_bytes(rust, tmp_path: Path, api: str, transcript: Path):
    for request in [smallest(tmp_path, api), client_tools_request(api)]:
        expected = rust.translate(request, transcript, chunk=4096, api=api)
        got = respond(request.read_bytes(), transcript.read_bytes(), 4096, dialect=api)
        assert got == expected


@pytest.mark.parametrize("api", DIALECTS)
@pytest.mark.parametrize("body", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_bodies_get_the_rust_400(rust, tmp_path: Path, api: str, body: bytes):
    request = tmp_path / "request.json"
    request.write_bytes(body)
    expected = rust.translate(request, FIXTURES / "partial_recaps.jsonl", api=api)
    assert expected[0] == 400
    with aw.Bridge(body, now_ms=0, created=1_700_000_000, id_seed=0, dialect=api) as bridge:
        assert bridge.invocation is None
        outputs = list(bridge.outputs())
    assert outputs[0] == aw.Head(400, "application/json", retryable=False)
    assert isinstance(outputs[1], aw.Body) and isinstance(outputs[1], bytes)
    assert outputs[2:] == [aw.End()]
    assert (400, bytes(outputs[1])) == expected


@pytest.mark.parametrize(
    "name, dialect",
    [
        ("chat-completions", aw.Dialect.CHAT_COMPLETIONS),
        ("chat_completions", aw.Dialect.CHAT_COMPLETIONS),
        ("CHAT_COMPLETIONS", aw.Dialect.CHAT_COMPLETIONS),
        ("responses", aw.Dialect.RESPONSES),
        (" Messages ", aw.Dialect.MESSAGES),
        (aw.Dialect.MESSAGES, aw.Dialect.MESSAGES),
        (1, aw.Dialect.RESPONSES),
    ],
)
def test_a_dialect_is_chosen_by_member_name_or_value(name: object, dialect: aw.Dialect):
    body = DIALECTS[dialect.name.lower().replace("_", "-")]
    by_name = respond_to(body, name)
    assert by_name == respond_to(body, dialect)
    assert by_name[0] == aw.Head(200, "text/event-stream")
    # Each dialect's stream is its own: the same answer in another dialect differs.
    others = [d for d in aw.Dialect if d != dialect]
    assert all(respond_to(DIALECTS[d.name.lower().replace("_", "-")], d) != by_name for d in others)


def respond_to(body: bytes, dialect: object) -> list:
    answer = (FIXTURES / "multibyte.jsonl").read_bytes()
    with aw.Bridge(body, now_ms=0, created=1, id_seed=2, dialect=dialect) as bridge:  # type: ignore[arg-type]
        bridge.push_stdout(answer, 1)
        bridge.agent_exited(code=0, now_ms=2)
        return list(bridge.outputs())


@pytest.mark.parametrize("value", ["chat", "anthropic", "", 3, -1, 2**40])
def test_an_unknown_dialect_is_a_value_error_naming_the_dialects(value: object):
    with pytest.raises(ValueError) as info:
        aw.Bridge(DEFAULT_REQUEST, dialect=value)  # type: ignore[arg-type]
    assert isinstance(info.value, aw.InvalidEnumError)
    for name in ("'chat_completions'", "'responses'", "'messages'"):
        assert name in str(info.value)


@pytest.mark.parametrize("value", [None, 1.0, b"messages", True, ["messages"]])
def test_a_dialect_of_another_type_is_a_type_error(value: object):
    with pytest.raises(TypeError, match="dialect must be a member of Dialect or its name"):
        aw.Bridge(DEFAULT_REQUEST, dialect=value)  # type: ignore[arg-type]


def test_invocation_and_the_loop():
    config = aw.Config(cursor_binary="/opt/agent", cli_config_dir="/tmp/cfg", workspace="/srv")
    with aw.Bridge(DEFAULT_REQUEST, config, now_ms=100, created=1, id_seed=7) as bridge:
        inv = bridge.invocation
        assert inv is not None
        assert inv.program == "/opt/agent" and inv.argv[0] == "/opt/agent"
        assert "--workspace" in inv.args and "/srv" in inv.args
        assert inv.env == {"CURSOR_CONFIG_DIR": "/tmp/cfg"}
        assert b"hi" in inv.stdin
        assert bridge.is_stream and not bridge.is_ended
        assert bridge.session_id is None
        assert bridge.poll_timeout() == 100 + config.head_deadline_ms
        assert list(bridge.outputs()) == []
        bridge.push_stdout(
            b'{"type":"system","subtype":"init","session_id":"s-9"}\n'
            b'{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"}]}}\n'
            b'{"type":"result","subtype":"success","result":"Hi"}\n',
            150,
        )
        outputs = list(bridge.outputs())
        assert outputs[0] == aw.Head(200, "text/event-stream")
        assert b"".join(o for o in outputs if isinstance(o, aw.Body)).endswith(b"data: [DONE]\n\n")
        assert outputs[-1] == aw.End()
        assert bridge.is_ended and bridge.session_id == "s-9"
        assert bridge.poll_timeout() is None
        bridge.agent_exited(code=0, now_ms=160)
        assert list(bridge.outputs()) == []


def test_client_gone_stops_the_agent_and_ends():
    with aw.Bridge(DEFAULT_REQUEST, now_ms=0) as bridge:
        bridge.client_gone(5)
        assert list(bridge.outputs()) == [aw.StopAgent(), aw.End()]


def test_shutdown_ends_with_a_retryable_503():
    with aw.Bridge(DEFAULT_REQUEST, now_ms=0) as bridge:
        bridge.shutdown(5)
        outputs = list(bridge.outputs())
        assert outputs[0] == aw.Head(503, "application/json", retryable=True)
        assert b"shutting down" in outputs[1]
        assert outputs[2:] == [aw.StopAgent(), aw.End()]
        bridge.shutdown(6)
        assert list(bridge.outputs()) == []


def test_idle_timeout_fails_with_504():
    config = aw.Config(idle_timeout_ms=1000, head_deadline_ms=60_000)
    with aw.Bridge(DEFAULT_REQUEST, config, now_ms=0) as bridge:
        assert bridge.poll_timeout() == 1000
        bridge.handle_timeout(999)
        assert list(bridge.outputs()) == []
        bridge.handle_timeout(1000)
        outputs = list(bridge.outputs())
        assert outputs[0] == aw.Head(504, "application/json", retryable=True)
        assert aw.StopAgent() in outputs and outputs[-1] == aw.End()


def test_misuse_raises():
    bridge = aw.Bridge(DEFAULT_REQUEST, now_ms=0)
    bridge.agent_exited(signal=9, now_ms=1)
    with pytest.raises(aw.AfterExitError, match="after the agent exited") as info:
        bridge.push_stdout(b"{}\n", 2)
    assert info.value.name == "AW_RESULT_AFTER_EXIT"
    assert isinstance(info.value, aw.MisuseError)
    with pytest.raises(aw.AfterExitError):
        bridge.push_stderr(b"x", 2)
    with pytest.raises(aw.ExitedTwiceError):
        bridge.agent_exited(code=0, now_ms=3)
    with pytest.raises(TypeError):
        bridge.agent_exited(now_ms=3)
    with pytest.raises(TypeError):
        bridge.agent_exited(code=0, signal=9, now_ms=3)
    bridge.close()
    bridge.close()
    assert bridge.closed
    with pytest.raises(aw.ClosedError):
        bridge.push_stdout(b"x", 4)
    with pytest.raises(aw.ClosedError):
        list(bridge.outputs())
    with pytest.raises(aw.ClosedError):
        aw.Bridge(DEFAULT_REQUEST, config=_closed_config())


def _closed_config() -> aw.Config:
    config = aw.Config()
    config.close()
    return config


def test_bytes_like_inputs_give_the_bytes_result():
    answer = (FIXTURES / "partial_recaps.jsonl").read_bytes()

    def run(body: object, stdout: object) -> list:
        with aw.Bridge(body, now_ms=0, created=1, id_seed=3) as bridge:  # type: ignore[arg-type]
            bridge.push_stdout(stdout, 1)  # type: ignore[arg-type]
            bridge.push_stderr(stdout, 1)  # type: ignore[arg-type]
            return list(bridge.outputs())

    expected = run(DEFAULT_REQUEST, answer)
    assert any(isinstance(o, aw.Body) for o in expected)
    for make in (bytearray, memoryview, lambda b: memoryview(bytearray(b))):
        assert run(make(DEFAULT_REQUEST), make(answer)) == expected


@pytest.mark.parametrize("value", [5, "{}", None, [123], 1.5])
def test_inputs_that_are_not_bytes_are_type_errors(value: object):
    with pytest.raises(TypeError, match="body must be a bytes-like object"):
        aw.Bridge(value)  # type: ignore[arg-type]
    with aw.Bridge(DEFAULT_REQUEST, now_ms=0) as bridge:
        with pytest.raises(TypeError, match="data must be a bytes-like object"):
            bridge.push_stdout(value, 1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="data must be a bytes-like object"):
            bridge.push_stderr(value, 1)  # type: ignore[arg-type]
        # Nothing was fed: the bridge still waits for its first input.
        assert list(bridge.outputs()) == []
    with pytest.raises(TypeError, match="config must be a Config"):
        aw.Bridge(DEFAULT_REQUEST, {"workspace": "/srv"})  # type: ignore[arg-type]


def test_a_non_contiguous_buffer_is_refused():
    with aw.Bridge(DEFAULT_REQUEST, now_ms=0) as bridge:
        with pytest.raises(BufferError):
            bridge.push_stdout(memoryview(b"{}\n{}\n")[::2], 1)
