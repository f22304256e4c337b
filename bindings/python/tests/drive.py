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
