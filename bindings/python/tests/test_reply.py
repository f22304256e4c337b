"""The replies that need no agent from Python: count_tokens and a server's own refusals, the
same bytes as the Rust `reply` example, in every dialect; bad arguments raise."""

from __future__ import annotations

import json

import pytest

import agentwire as aw
from conftest import DIALECTS, FIXTURES, client_tools_request

KINDS = {
    "invalid-request": 400,
    "authentication": 401,
    "permission-denied": 403,
    "not-found": 404,
    "method-not-allowed": 405,
    "request-too-large": 413,
    "unsupported-media-type": 415,
    "rate-limited": 429,
    "internal": 500,
    "agent-failed": 502,
    "unavailable": 503,
    "timeout": 504,
}

COUNT_TOKENS_BODIES = [
    DIALECTS["messages"],
    client_tools_request("messages").read_bytes(),
    (FIXTURES / "requests" / "client_tools.json").read_bytes(),
    b'{"model":"claude-sonnet-4-5","messages":[{"role":"robot","content":"x"}]}',
    b'{"model":',
    b"\xff\xfe{}",
    b"",
]


@pytest.mark.parametrize("body", COUNT_TOKENS_BODIES, ids=range(len(COUNT_TOKENS_BODIES)))
def test_count_tokens_gives_the_rust_reply(rust, body: bytes):
    expected = rust.reply("count-tokens", stdin=body)
    reply = aw.count_tokens(body)
    assert (reply.status, reply.retryable, reply.body) == expected
    assert reply.headers == {"content-type": "application/json", "x-should-retry": "false"}
    # Never an agent, never a 5xx, never retryable: an honest 404 or the 400 naming a field.
    assert reply.status in (400, 404) and not reply.retryable
    error = json.loads(reply.body)
    assert error["type"] == "error"
    if reply.status == 400:
        assert error["error"]["type"] == "invalid_request_error"


def test_count_tokens_keeps_the_configured_limits():
    body = client_tools_request("messages").read_bytes()
    config = aw.Config(request_max_body_bytes=64)
    assert aw.count_tokens(bytearray(body), config).status == 413
    assert aw.count_tokens(memoryview(body)).status == 404
    with pytest.raises(TypeError, match="config must be a Config"):
        aw.count_tokens(body, {"request_max_body_bytes": 64})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="body must be a bytes-like object"):
        aw.count_tokens("{}")  # type: ignore[arg-type]
    config.close()
    with pytest.raises(aw.ClosedError):
        aw.count_tokens(body, config)


@pytest.mark.parametrize("api", DIALECTS)
@pytest.mark.parametrize("kind", KINDS)
def test_refusals_give_the_rust_reply(rust, api: str, kind: str):
    message = f"{kind} on a {api} route: say \"what\" to do – é"
    expected = rust.reply("error", api, kind, message)
    reply = aw.error_reply(api, kind, message)
    assert (reply.status, reply.retryable, reply.body) == expected
    assert reply.status == KINDS[kind] == aw.ErrorKind[kind.upper().replace("-", "_")].status
    error = json.loads(reply.body)
    if api == "messages":
        assert error["type"] == "error" and error["error"]["message"] == message
    else:
        assert error["error"]["message"] == message and isinstance(error["error"]["code"], str)


def test_refusals_take_members_and_names():
    by_member = aw.error_reply(aw.Dialect.RESPONSES, aw.ErrorKind.RATE_LIMITED, "slow down")
    assert by_member == aw.error_reply("responses", "rate_limited", "slow down")
    assert by_member == aw.error_reply(1, "RATE-LIMITED", "slow down")
    assert (by_member.status, by_member.retryable) == (429, True)
    assert by_member.headers["x-should-retry"] == "true"


def test_bad_refusal_arguments_raise_naming_the_choices():
    with pytest.raises(ValueError, match="'chat_completions', 'responses', 'messages'"):
        aw.error_reply("anthropic", "not-found", "x")
    with pytest.raises(aw.InvalidEnumError, match="'unsupported_media_type'"):
        aw.error_reply("messages", "teapot", "x")
    with pytest.raises(aw.InvalidEnumError):
        aw.error_reply("messages", 12, "x")
    with pytest.raises(TypeError, match="kind must be a member of ErrorKind or its name"):
        aw.error_reply("messages", 401.0, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="message must be a str"):
        aw.error_reply("messages", "not-found", b"x")  # type: ignore[arg-type]
    # A lone surrogate is not UTF-8: the library refuses it.
    with pytest.raises(aw.InvalidUtf8Error):
        aw.error_reply("messages", "not-found", "\ud800")
