"""Drives the Python API over a transcript the way the Rust examples do, for comparison."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import List, Optional, Tuple

import agentwire as aw


def respond(
    body: bytes,
    transcript: bytes,
    chunk: int = 4096,
    stderr: Optional[bytes] = None,
    exit_code: int = 0,
    dialect: str = "chat-completions",
) -> Tuple[int, bytes]:
    """(status, body) of a whole request of `dialect`, like the `translate` example."""
    status = 0
    out = bytearray()
    with aw.Bridge(body, now_ms=0, created=1_700_000_000, id_seed=0, dialect=dialect) as bridge:

        def drain() -> bool:
            nonlocal status
            for output in bridge.outputs():
                if isinstance(output, aw.Head):
                    status = output.status
                elif isinstance(output, aw.Body):
                    out.extend(output)
                elif isinstance(output, aw.End):
                    return True
            return False

        ended = drain()
        if bridge.invocation is not None:
            for at in range(0, len(transcript), chunk):
                if ended:
                    break
                bridge.push_stdout(transcript[at : at + chunk], 0)
                ended = drain()
            if stderr is not None:
                bridge.push_stderr(stderr, 0)
            bridge.agent_exited(code=exit_code, now_ms=0)
            drain()
    return status, bytes(out)


def _q(text: str) -> bytes:
    out = bytearray(b'"')
    for b in text.encode("utf-8"):
        if b < 0x20 or b == 0x7F or b in (0x22, 0x5C):
            out += f"\\x{b:02x}".encode()
        else:
            out.append(b)
    out += b'"'
    return bytes(out)


def _opt(label: str, text: Optional[str]) -> bytes:
    return f" {label}:".encode() + (_q(text) if text is not None else b"-")


def event_line(event: aw.Event) -> bytes:
    """One event in the `events` example's text form."""
    if isinstance(event, aw.TextDelta):
        return b"text " + _q(event.text)
    if isinstance(event, aw.ReasoningDelta):
        return b"reasoning " + _q(event.text)
    if isinstance(event, aw.ToolCall):
        return b"tool_call %d " % event.index + b" ".join(
            [_q(event.id), _q(event.name), _q(event.arguments)]
        )
    if isinstance(event, aw.AgentActivity):
        if event.phase == aw.ActivityPhase.STARTED:
            phase = b"started"
        else:
            assert event.outcome is not None
            phase = f"completed:{event.outcome.name.lower()}:{int(event.started_seen)}".encode()
        return (
            b"activity " + _q(event.call_id) + b" " + _q(event.tool) + b" " + phase + b" "
            + _q(event.summary) + _opt("args", event.arguments)
            + _opt("model_call", event.model_call_id)
        )
    if isinstance(event, aw.Progress):
        return f"progress {event.kind.name.lower()} {event.attempt}".encode()
    if isinstance(event, aw.Usage):
        reasoning = "-" if event.reasoning_tokens is None else str(event.reasoning_tokens)
        cost = "-" if event.cost is None else struct.pack(">d", event.cost).hex()
        return (
            f"usage {event.input_tokens} {event.output_tokens} {event.cache_read_tokens} "
            f"{event.cache_write_tokens} reasoning:{reasoning} cost:{cost} "
            f"{event.prompt_tokens} {event.total_tokens}"
        ).encode()
    if isinstance(event, aw.Finish):
        return f"finish {event.reason.name.lower()}".encode()
    assert isinstance(event, aw.Failed)
    return f"failed {event.kind.name.lower()} ".encode() + _q(event.message)


def decode(transcript: bytes, chunk: int = 4096) -> Tuple[List[aw.Event], str]:
    """The events of a transcript, and their text form."""
    events: List[aw.Event] = []
    with aw.Decoder() as decoder:
        for at in range(0, len(transcript), chunk):
            decoder.push_stdout(transcript[at : at + chunk])
            events.extend(decoder.events())
        decoder.push_eof()
        events.extend(decoder.events())
        assert decoder.is_finished
    text = b"".join(event_line(e) + b"\n" for e in events)
    return events, text.decode("utf-8")


def read(path: Path) -> bytes:
    return path.read_bytes()


def acp_run(script: bytes) -> bytes:
    """Everything an :class:`aw.AcpConnection` outputs for a script of inputs, in the
    format of the Rust example `acp run` (see examples/acp.rs)."""
    out = bytearray()
    conn: Optional[aw.AcpConnection] = None
    at = 0
    while at < len(script):
        end = script.index(b"\n", at)
        line = script[at:end].decode()
        at = end + 1
        words = line.split(" ")
        payload = b""
        if words[0] in ("start", "stdout", "stderr"):
            size = int(words[5] if words[0] == "start" else words[2])
            payload = script[at : at + size]
            at += size + 1
        out += f"> {line}\n".encode()
        if words[0] == "new":
            if conn is not None:
                conn.close()
            config = aw.AcpConfig(pool_size=int(words[2]), cwd=line.split(" ", 3)[3])
            conn = aw.AcpConnection(config, now_ms=int(words[1]))
        else:
            assert conn is not None, "the script starts with `new`"
            now = 0 if words[0] == "start" else int(words[1])
            if words[0] == "start":
                conn.start_turn(
                    payload,
                    now_ms=int(words[2]),
                    created=int(words[3]),
                    id_seed=int(words[4]),
                    dialect=words[1],
                )
            elif words[0] == "stdout":
                conn.push_stdout(payload, now)
            elif words[0] == "stderr":
                conn.push_stderr(payload, now)
            elif words[0] == "exit":
                conn.agent_exited(code=int(words[2]), now_ms=now)
            elif words[0] == "gone":
                conn.client_gone(int(words[1]), int(words[2]))
            elif words[0] == "timeout":
                conn.handle_timeout(now)
            elif words[0] == "shutdown":
                conn.shutdown(now)
            else:
                raise ValueError(f"unknown script input {line!r}")
        _acp_drain(conn, out)
    if conn is not None:
        models = conn.models
        if models is None:
            out += b"models none\n"
        else:
            out += f"models {len(models)}\n".encode()
            for model in models:
                out += f"model {model}\n".encode()
        out += f"current {conn.current_model or 'none'}\n".encode()
        conn.close()
    return bytes(out)


def _acp_drain(conn: aw.AcpConnection, out: bytearray) -> None:
    for data in conn.transmits():
        out += b"transmit %d\n" % len(data) + data + b"\n"
    for decision in conn.decisions():
        out += f"decision restart {decision.reason}\n".encode()
    for turn in conn.ready_turns():
        for output in conn.outputs(turn):
            if isinstance(output, aw.Head):
                retryable = "-" if output.retryable is None else str(output.retryable).lower()
                out += f"turn {turn} head {output.status} {output.content_type} {retryable}\n".encode()
            elif isinstance(output, aw.Body):
                out += b"turn %d body %d\n" % (turn, len(output)) + output + b"\n"
            elif isinstance(output, aw.End):
                out += b"turn %d end\n" % turn
            else:
                out += b"turn %d stop-agent\n" % turn
    deadline = conn.poll_timeout()
    out += (
        f"state ready={int(conn.is_ready)} dead={int(conn.is_dead)} active={conn.active_turns} "
        f"malformed={conn.malformed_lines} timeout={'none' if deadline is None else deadline}\n"
    ).encode()
