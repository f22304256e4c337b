"""A small typed program over the package: `mypy --strict` checks it (test_typing.py), and
the tests run it. What an editor plugin's code looks like with types."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from agentwire import (
    Body,
    Bridge,
    Config,
    Decoder,
    Dialect,
    ErrorKind,
    Head,
    StopAgent,
    TextDelta,
    ToolStrategy,
    error_reply,
)


def answer_text(stdout: bytes) -> str:
    """The answer's text in a transcript of the agent's stdout."""
    with Decoder() as decoder:
        decoder.push_stdout(stdout)
        decoder.push_eof()
        return "".join(e.text for e in decoder.events() if isinstance(e, TextDelta))


def respond(body: bytes, stdout: bytearray, now_ms: int = 0) -> Tuple[int, bytes, bool]:
    """The HTTP status and body a client gets, and whether the agent is to be stopped."""
    config = Config(tool_strategy="native", idle_timeout_ms=60_000, workspace=None)
    status = 0
    chunks: List[bytes] = []
    stop = False
    with Bridge(body, config, now_ms=now_ms, created=0, id_seed=1) as bridge:
        if bridge.invocation is not None:
            bridge.push_stdout(memoryview(stdout), now_ms)
            bridge.agent_exited(code=0, now_ms=now_ms)
        for output in bridge.outputs():
            if isinstance(output, Head):
                status = output.status
            elif isinstance(output, Body):
                chunks.append(bytes(output))
            elif isinstance(output, StopAgent):
                stop = True
        deadline: Optional[int] = bridge.poll_timeout()
        assert deadline is None
    assert config.tool_strategy is ToolStrategy.NATIVE
    return status, b"".join(chunks), stop


def refuse(path: str) -> Tuple[int, Dict[str, str], bytes]:
    """A server's answer to a request without the right key, in the shape of its route."""
    dialect = Dialect.MESSAGES if "/messages" in path else "chat-completions"
    reply = error_reply(dialect, ErrorKind.AUTHENTICATION, "Send the key as x-api-key.")
    return reply.status, reply.headers, reply.body
