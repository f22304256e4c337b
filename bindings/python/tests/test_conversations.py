"""Conversations from Python: ``Registry`` and bridges made ``in_conversation`` (a chat
parked after a tool round and resumed with ``--resume`` and only what is new, a chat the
agent does not know replaced through ``Respawn``, expiry, owners kept apart), a warm ACP
agent scripted here (the client's tools as an MCP server, a tool round parked inside its
call and answered through MCP, a follow-up prompt of only the new message), and
``McpServer`` over HTTP and stdio with hostile input."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import pytest

import agentwire as aw

CHAT = "9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab"
LOST = "11111111-2222-3333-4444-555555555555"
FRESH = "22222222-2222-3333-4444-555555555555"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


def line(value: Dict[str, Any]) -> bytes:
    return json.dumps(value).encode() + b"\n"


def init(chat: str) -> bytes:
    return line({"type": "system", "subtype": "init", "session_id": chat, "model": "Auto"})


def text(chat: str, words: str) -> bytes:
    return line(
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": words}]},
            "session_id": chat,
        }
    )


def shell(chat: str, call: str, command: str) -> bytes:
    return line(
        {
            "type": "tool_call",
            "subtype": "started",
            "call_id": call,
            "tool_call": {"shellToolCall": {"args": {"command": command}}},
            "model_call_id": f"m-{call}",
            "session_id": chat,
        }
    )


def result(chat: str, words: str) -> bytes:
    return line(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": words,
            "session_id": chat,
            "usage": {"inputTokens": 3, "outputTokens": 2},
        }
    )


def chat_body(messages: List[Dict[str, Any]], stream: bool = False) -> bytes:
    body: Dict[str, Any] = {"model": "auto", "messages": messages, "tools": TOOLS}
    if stream:
        body["stream"] = True
    return json.dumps(body).encode()


class Seen:
    """What a plugin saw of one response."""

    def __init__(self) -> None:
        self.status = 0
        self.body = b""
        self.stops = 0
        self.respawns = 0
        self.ended = False

    def drain(self, bridge: aw.Bridge) -> None:
        for output in bridge.outputs():
            if isinstance(output, aw.Head):
                self.status = output.status
            elif isinstance(output, aw.Body):
                self.body += output
            elif isinstance(output, aw.StopAgent):
                self.stops += 1
            elif isinstance(output, aw.Respawn):
                self.respawns += 1
            else:
                self.ended = True

    def echo(self) -> Dict[str, Any]:
        """The assistant message a client echoes from a non-streaming body."""
        message: Dict[str, Any] = json.loads(self.body)["choices"][0]["message"]
        return message


def run(bridge: aw.Bridge, seen: Seen, lines: List[bytes], now: int) -> None:
    """One agent run: its stdout lines, then its exit (a signal when the bridge stopped
    it)."""
    stops = seen.stops
    for chunk in lines:
        if bridge.is_ended or seen.stops > stops:
            break
        bridge.push_stdout(chunk, now)
        seen.drain(bridge)
    if seen.stops > stops:
        bridge.agent_exited(signal=15, now_ms=now)
    else:
        bridge.agent_exited(code=0, now_ms=now)
    seen.drain(bridge)


def resumes(bridge: aw.Bridge) -> Optional[str]:
    invocation = bridge.invocation
    assert invocation is not None
    args = invocation.args
    return args[args.index("--resume") + 1] if "--resume" in args else None


def prompt(bridge: aw.Bridge) -> str:
    invocation = bridge.invocation
    assert invocation is not None
    return invocation.stdin.decode()


def first_round(registry: aw.Registry, **keys: Any) -> List[Dict[str, Any]]:
    """A first answer parked on the chat; returns the next request's messages."""
    messages: List[Dict[str, Any]] = [{"role": "user", "content": "List the files."}]
    bridge = aw.Bridge.in_conversation(
        chat_body(messages), registry=registry, now_ms=0, id_seed=1, **keys
    )
    assert resumes(bridge) is None and "List the files." in prompt(bridge)
    assert registry.busy == 1
    seen = Seen()
    run(bridge, seen, [init(CHAT), shell(CHAT, "a1", "ls"), text(CHAT, "x")], 1)
    assert (seen.status, seen.ended, seen.stops) == (200, True, 1)
    bridge.end_conversation_turn(registry, 2)
    bridge.close()
    answer = seen.echo()
    messages.append(answer)
    messages.append(
        {"role": "tool", "tool_call_id": answer["tool_calls"][0]["id"], "content": "a.txt"}
    )
    return messages


def test_a_tool_round_resumes_the_chat_and_a_lost_chat_respawns_fresh() -> None:
    registry = aw.Registry(aw.RegistryConfig(ttl_ms=60_000))
    messages = first_round(registry)
    assert (registry.parked, registry.busy) == (1, 0)
    assert registry.poll_timeout() == 2 + 60_000
    assert list(registry.released()) == []

    bridge = aw.Bridge.in_conversation(chat_body(messages), registry=registry, now_ms=3)
    assert resumes(bridge) == CHAT
    assert "a.txt" in prompt(bridge) and "List the files." not in prompt(bridge)
    seen = Seen()
    # cursor-agent started a new chat for an id it did not know: stopped, then replaced by
    # a fresh run with the whole conversation before anything reached the client.
    bridge.push_stdout(init(LOST) + text(LOST, "I have no context."), 4)
    seen.drain(bridge)
    assert (seen.stops, seen.respawns) == (1, 0) and resumes(bridge) == CHAT
    bridge.agent_exited(signal=15, now_ms=4)
    # From the exit on, the invocation is the fresh run's; the Respawn asks for it.
    assert resumes(bridge) is None
    seen.drain(bridge)
    assert (seen.stops, seen.respawns, seen.ended, seen.body) == (1, 1, False, b"")
    assert "List the files." in prompt(bridge) and "a.txt" in prompt(bridge)
    run(bridge, seen, [init(FRESH), text(FRESH, "a.txt is there."), result(FRESH, "a.txt is there.")], 5)
    assert (seen.status, seen.ended, seen.respawns) == (200, True, 1)
    assert seen.echo()["content"] == "a.txt is there."
    bridge.end_conversation_turn(registry, 6)
    bridge.close()
    assert list(registry.released()) == [CHAT]

    # The conversation now continues the fresh chat, with only the new message.
    messages.append(seen.echo())
    messages.append({"role": "user", "content": "What is in it?"})
    bridge = aw.Bridge.in_conversation(chat_body(messages), registry=registry, now_ms=7)
    assert resumes(bridge) == FRESH
    assert "What is in it?" in prompt(bridge) and "List the files." not in prompt(bridge)
    # Its client leaves: the chat is let go, and the same request again runs fresh.
    bridge.client_gone(8)
    assert list(bridge.outputs()) == [aw.StopAgent(), aw.End()]
    bridge.agent_exited(signal=15, now_ms=9)
    bridge.end_conversation_turn(registry, 9)
    bridge.close()
    assert list(registry.released()) == [FRESH]
    assert registry.parked == 0
    again = aw.Bridge.in_conversation(chat_body(messages), registry=registry, now_ms=10)
    assert resumes(again) is None and "List the files." in prompt(again)
    again.end_conversation_turn(registry, 11)

    stats = registry.stats
    assert (stats.resumed, stats.refused, stats.expired, stats.evicted) == (2, 0, 0, 0)
    assert stats.fresh[aw.FreshReason.NO_SESSION] == 2
    assert sum(stats.fresh.values()) == 2


def test_a_tool_loop_gives_the_agent_only_the_delta() -> None:
    registry = aw.Registry()
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent. " * 40},
        {"role": "user", "content": "Find the failing test and fix it."},
    ]
    sizes = []
    for round_ in range(10):
        bridge = aw.Bridge.in_conversation(
            chat_body(messages), registry=registry, now_ms=round_ * 10, id_seed=round_
        )
        sizes.append(len(prompt(bridge)))
        assert (resumes(bridge) is not None) == (round_ > 0)
        seen = Seen()
        run(
            bridge,
            seen,
            [init(CHAT), shell(CHAT, f"c{round_}", f"cat file{round_}"), text(CHAT, "x")],
            round_ * 10 + 1,
        )
        bridge.end_conversation_turn(registry, round_ * 10 + 2)
        answer = seen.echo()
        messages.append(answer)
        messages.append(
            {
                "role": "tool",
                "tool_call_id": answer["tool_calls"][0]["id"],
                "content": f"output of round {round_}",
            }
        )
    deltas = sizes[1:]
    assert max(deltas) - min(deltas) < 64, sizes
    assert max(deltas) < sizes[0]
    assert registry.stats.resumed == 9


def test_owners_and_keys_keep_conversations_apart_and_sessions_expire() -> None:
    registry = aw.Registry(aw.RegistryConfig(ttl_ms=1_000))
    messages = first_round(registry, owner_key=b"sk-one", client_session="s")
    body = chat_body(messages)
    for keys in (
        {},
        {"owner_key": "sk-two", "client_session": "s"},
        {"owner_key": b"sk-one", "client_session": "t"},
    ):
        bridge = aw.Bridge.in_conversation(body, registry=registry, now_ms=3, **keys)
        assert resumes(bridge) is None, keys
        bridge.end_conversation_turn(registry, 3)
    assert registry.parked == 1
    registry.handle_timeout(1_001)
    assert list(registry.released()) == []
    registry.handle_timeout(1_002)
    assert list(registry.released()) == [CHAT]
    assert registry.poll_timeout() is None
    assert registry.stats.expired == 1
    # A continuation of a response that is not here: OpenAI's own error.
    bridge = aw.Bridge.in_conversation(
        b'{"model":"auto","input":"hi","previous_response_id":"resp_1"}',
        registry=registry,
        dialect="responses",
        now_ms=4,
    )
    assert bridge.invocation is None
    outputs = list(bridge.outputs())
    assert outputs[0] == aw.Head(400, "application/json", False)
    assert b"previous_response_not_found" in b"".join(o for o in outputs if isinstance(o, aw.Body))
    assert registry.stats.refused == 1


def test_registry_misuse() -> None:
    registry, other = aw.Registry(), aw.Registry()
    bridge = aw.Bridge.in_conversation(
        chat_body([{"role": "user", "content": "x"}]),
        aw.Config(cursor_binary="/opt/agent"),
        registry=registry,
    )
    assert bridge.invocation is not None and bridge.invocation.program == "/opt/agent"
    with pytest.raises(aw.WrongRegistryError, match="registry"):
        bridge.end_conversation_turn(other, 1)
    assert registry.busy == 1
    bridge.end_conversation_turn(registry, 1)
    assert registry.busy == 0
    with pytest.raises(TypeError):
        aw.Bridge.in_conversation(b"{}", registry=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        aw.Bridge.in_conversation(b"{}", registry=registry, caller_key=b"k")  # type: ignore[arg-type]
    with pytest.raises(aw.InvalidUtf8Error):
        aw.Bridge.in_conversation(b"{}", registry=registry, client_session="\udc80")
    # A plain bridge has no place to give back.
    aw.Bridge(chat_body([{"role": "user", "content": "x"}])).end_conversation_turn(other, 1)
    registry.close()
    with pytest.raises(aw.ClosedError):
        registry.parked
    config = aw.RegistryConfig()
    assert config.as_dict() == {
        "enabled": True,
        "ttl_ms": 30 * 60 * 1000,
        "max_parked": 256,
        "max_parked_per_owner": 32,
    }
    config.enabled = False
    with pytest.raises(TypeError):
        config.ttl_ms = "5"  # type: ignore[assignment]
    with aw.Registry(config) as off:
        bridge = aw.Bridge.in_conversation(chat_body([{"role": "user", "content": "x"}]), registry=off)
        bridge.end_conversation_turn(off, 1)
        assert off.stats.fresh[aw.FreshReason.DISABLED] == 1


# ---- A warm ACP agent, scripted ---------------------------------------------------------

ENDPOINT = "http://127.0.0.1:9999/mcp/"
ACCEPT = "application/json, text/event-stream"


class Harness:
    """A connection and the agent's side of it, scripted."""

    def __init__(self, agent_name: str, conversations: Optional[aw.RegistryConfig] = None) -> None:
        config = aw.AcpConfig(mcp_endpoint=ENDPOINT, pool_size=0, conversations=conversations)
        self.conn = aw.AcpConnection(config, now_ms=0)
        self.now = 0
        self.seed = 0
        init = self.written()
        assert init[0]["method"] == "initialize"
        self.agent(
            {
                "jsonrpc": "2.0",
                "id": init[0]["id"],
                "result": {
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "mcpCapabilities": {"http": True, "sse": True},
                        "sessionCapabilities": {"close": {}},
                    },
                    "agentInfo": {"name": agent_name, "version": "1"},
                },
            }
        )

    def agent(self, message: Dict[str, Any]) -> None:
        self.conn.push_stdout(line(message), self.now)

    def written(self) -> List[Dict[str, Any]]:
        out = b"".join(self.conn.transmits())
        return [json.loads(l) for l in out.splitlines() if l]

    def tick(self, ms: int) -> None:
        self.now += ms
        due = self.conn.poll_timeout()
        if due is not None and self.now >= due:
            self.conn.handle_timeout(self.now)

    def start(self, messages: List[Dict[str, Any]]) -> int:
        self.seed += 1
        return self.conn.start_conversation_turn(
            chat_body(messages, stream=True),
            now_ms=self.now,
            id_seed=self.seed,
            entropy=bytes([self.seed]) * 32,
        )

    def response(self, turn: int) -> Tuple[Optional[int], str, bool]:
        status, body, ended = None, b"", False
        for output in self.conn.outputs(turn):
            assert not isinstance(output, (aw.StopAgent, aw.Respawn))
            if isinstance(output, aw.Head):
                status = output.status
            elif isinstance(output, aw.Body):
                body += output
            else:
                ended = True
        return status, body.decode(), ended

    def mcp(self, url: str, auth: str, payload: Dict[str, Any], session: Optional[str]) -> Tuple[aw.McpExchange, List[aw.McpOutput]]:
        request = aw.McpRequest(
            "POST",
            json.dumps(payload, separators=(",", ":")).encode(),
            accept=ACCEPT,
            content_type="application/json",
            session_id=session,
            protocol_version="2025-11-25" if session else None,
        )
        exchange = self.conn.handle_mcp(
            url[len(ENDPOINT):], request, authorization=auth, now_ms=self.now
        )
        return exchange, list(self.conn.mcp_outputs(exchange))


def sse_echo(body: str) -> Dict[str, Any]:
    """The Chat Completions stream's assistant message, as a client echoes it."""
    content = ""
    calls: List[Dict[str, Any]] = []
    for frame in body.splitlines():
        if not frame.startswith("data: ") or frame == "data: [DONE]":
            continue
        choices = json.loads(frame[6:]).get("choices") or [{}]
        delta = choices[0].get("delta", {})
        content += delta.get("content") or ""
        for call in delta.get("tool_calls", []):
            if call["index"] >= len(calls):
                calls.append({"id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}})
            calls[call["index"]]["function"]["arguments"] += call["function"].get("arguments", "")
    message: Dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return message


def bodies(outputs: List[aw.McpOutput]) -> str:
    return b"".join(o for o in outputs if isinstance(o, aw.Body)).decode()


def connect(h: Harness, new_session: Dict[str, Any]) -> Tuple[str, str, str]:
    """The agent's MCP client: initialized, tools listed. Returns url, auth, session."""
    server = new_session["params"]["mcpServers"][0]
    url, auth = server["url"], server["headers"][0]["value"]
    assert url.startswith(ENDPOINT) and auth.startswith("Bearer ")
    _, out = h.mcp(url, auth, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "2"}}}, None)
    head = out[0]
    assert isinstance(head, aw.McpHead) and head.status == 200 and head.session_id
    session = head.session_id
    _, out = h.mcp(url, auth, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert out[0] == aw.McpHead(202, None, session, None)
    _, out = h.mcp(url, auth, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
    assert '"name":"bash"' in bodies(out)
    return url, auth, session


def test_an_acp_tool_round_parks_inside_the_call_and_the_results_answer_it() -> None:
    h = Harness("@zed-industries/claude-agent-acp")
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "Be careful."},
        {"role": "user", "content": "What is here?"},
    ]
    turn = h.start(messages)
    new_session = h.written()[0]
    assert new_session["method"] == "session/new"
    options = new_session["params"]["_meta"]["claudeCode"]["options"]
    assert options["allowedTools"] == ["mcp__client__bash"]
    h.agent({"jsonrpc": "2.0", "id": new_session["id"], "result": {"sessionId": "s1"}})
    prompt_request = [m for m in h.written() if m.get("method") == "session/prompt"][0]
    url, auth, session = connect(h, new_session)

    # Hostile requests to the endpoint change nothing.
    request = aw.McpRequest("POST", b"{}", accept=ACCEPT, content_type="application/json")
    with pytest.raises(aw.McpNotFoundError) as not_found:
        h.conn.handle_mcp("0" * 16, request, authorization=auth, now_ms=h.now)
    assert not_found.value.status == 404
    with pytest.raises(aw.McpUnauthorizedError) as unauthorized:
        h.conn.handle_mcp(url[len(ENDPOINT):], request, authorization="Bearer 00", now_ms=h.now)
    assert unauthorized.value.status == 401 and isinstance(unauthorized.value, aw.McpRefusedError)
    with pytest.raises(aw.McpUnauthorizedError):
        h.conn.handle_mcp(url[len(ENDPOINT):], request, authorization=None, now_ms=h.now)
    _, out = h.mcp(url, auth, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "rm", "arguments": {}}}, session)
    assert "-32602" in bodies(out)
    _, out = h.mcp(url, auth, {"jsonrpc": "2.0", "id": 99, "result": {}}, session)
    assert isinstance(out[0], aw.McpHead) and out[0].status == 202

    h.agent({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Let me look."}}}})
    call, out = h.mcp(url, auth, {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "ls"}}}, session)
    assert out[0] == aw.McpHead(200, "text/event-stream", session, None)
    assert aw.End() not in out
    h.tick(300)
    status, body, ended = h.response(turn)
    assert (status, ended) == (200, True)
    assert '"finish_reason":"tool_calls"' in body and "mcp__client__bash" not in body
    echo = sse_echo(body)
    assert echo["content"] == "Let me look."
    assert echo["tool_calls"][0]["function"]["arguments"] == '{"command":"ls"}'
    assert h.conn.parked_sessions == 1
    assert all(m.get("method") != "session/cancel" for m in h.written())
    h.tick(15_000)
    assert ": keepalive" in bodies(list(h.conn.mcp_outputs(call)))

    # The results continue the same session: the call is answered, nothing is prompted.
    messages.append(echo)
    messages.append({"role": "tool", "tool_call_id": echo["tool_calls"][0]["id"], "content": "a.txt b.txt"})
    turn = h.start(messages)
    assert h.written() == []
    answer = list(h.conn.mcp_outputs(call))
    assert "a.txt b.txt" in bodies(answer) and answer[-1] == aw.End()
    h.agent({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Two files."}}}})
    h.agent({"jsonrpc": "2.0", "id": prompt_request["id"], "result": {"stopReason": "end_turn"}})
    status, body, ended = h.response(turn)
    assert ended and '"finish_reason":"stop"' in body
    assert sse_echo(body)["content"] == "Two files."

    # A follow-up turn: a prompt on the same session holding only the new message.
    messages.append(sse_echo(body))
    messages.append({"role": "user", "content": "Thanks! Which is bigger?"})
    turn = h.start(messages)
    written = h.written()
    assert len(written) == 1 and written[0]["method"] == "session/prompt"
    assert written[0]["params"]["sessionId"] == "s1"
    assert written[0]["params"]["prompt"][0]["text"] == "Thanks! Which is bigger?"
    h.agent({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b.txt"}}}})
    h.agent({"jsonrpc": "2.0", "id": written[0]["id"], "result": {"stopReason": "end_turn"}})
    assert "b.txt" in h.response(turn)[1]
    assert h.conn.parked_sessions == 1
    stats = h.conn.conversation_stats
    assert stats.resumed == 2 and stats.fresh[aw.FreshReason.NO_SESSION] == 1
    h.conn.shutdown(h.now)
    assert any(m.get("method") == "session/close" for m in h.written())
    assert h.conn.parked_sessions == 0


def test_a_parked_acp_session_expires() -> None:
    h = Harness("gemini-cli", aw.RegistryConfig(ttl_ms=60_000))
    turn = h.start([{"role": "user", "content": "Go."}])
    new_session = h.written()[0]
    h.agent({"jsonrpc": "2.0", "id": new_session["id"], "result": {"sessionId": "s1"}})
    h.written()
    url, auth, session = connect(h, new_session)
    call, _ = h.mcp(url, auth, {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "ls"}}}, session)
    h.tick(300)
    assert h.response(turn)[2] and h.conn.parked_sessions == 1
    h.tick(15_000)
    assert list(h.conn.mcp_ready()) == [call]
    for _ in range(4):
        h.tick(15_000)
    assert any(m.get("method") == "session/cancel" for m in h.written())
    assert h.conn.parked_sessions == 0 and h.conn.conversation_stats.expired == 1
    h.conn.mcp_exchange_gone(call, h.now)


def test_acp_config_conversation_fields() -> None:
    config = aw.AcpConfig()
    assert config.mcp_endpoint is None and config.mcp_server_name == "client"
    assert config.conversations.as_dict() == {
        "enabled": True,
        "ttl_ms": 30 * 60 * 1000,
        "max_parked": 16,
        "max_parked_per_owner": 8,
    }
    assert config.mcp.keep_alive_ms == 15_000
    config.mcp = aw.McpConfig(keep_alive_ms=3_000, call_limit_ms=50_000)
    config.conversations = aw.RegistryConfig(enabled=False)
    config.mcp_endpoint = ENDPOINT
    assert config.mcp.as_dict()["keep_alive_ms"] == 3_000
    assert config.mcp.call_limit_ms == 50_000
    assert not config.conversations.enabled
    assert config.mcp_endpoint == ENDPOINT
    config.mcp_endpoint = None
    assert config.mcp_endpoint is None
    assert "conversations=RegistryConfig(enabled=False" in repr(config)
    with pytest.raises(TypeError):
        config.mcp = aw.RegistryConfig()  # type: ignore[assignment]
    with pytest.raises(aw.InvalidUtf8Error):
        config.mcp_server_name = "\udc80"
    with pytest.raises(AttributeError):
        config.mcp_endpont = "x"  # type: ignore[attr-defined]
    with aw.AcpConnection(now_ms=0) as conn:
        with pytest.raises(ValueError, match="32 bytes"):
            conn.start_conversation_turn(b"{}", now_ms=0, entropy=b"short")
        with pytest.raises(aw.McpNotFoundError):
            conn.handle_mcp("x", aw.McpRequest("GET"), authorization=None, now_ms=0)
        assert conn.poll_mcp_ready() is None
        assert conn.poll_mcp_output(aw.McpExchange(3, 4)) is None
        assert conn.parked_sessions == 0


# ---- A standalone MCP server -------------------------------------------------------------

SESSION = "0123456789abcdef0123456789abcdef"
REQUEST = chat_body([{"role": "user", "content": "hi"}])


def post(server: aw.McpServer, payload: Any, session: Optional[str] = SESSION, now: int = 0) -> Tuple[int, List[aw.McpOutput]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    request = aw.McpRequest.of(
        "POST",
        {"Accept": ACCEPT, "Content-Type": "application/json", **({"Mcp-Session-Id": session} if session else {})},
        body,
    )
    exchange = server.handle_http(request, now)
    return exchange, list(server.exchange_outputs(exchange))


def initialized(config: Optional[aw.McpConfig] = None) -> aw.McpServer:
    server = aw.McpServer(REQUEST, mcp_config=config, session_id=SESSION)
    _, out = post(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex", "version": "1"}}}, None)
    assert out[0] == aw.McpHead(200, "application/json", SESSION, None)
    return server


def test_mcp_server_holds_a_call_until_it_is_answered() -> None:
    server = initialized(aw.McpConfig(keep_alive_ms=1_000, call_limit_ms=5_000))
    assert server.tools == ["bash"] and server.protocol_version == "2025-06-18"
    assert server.session_id == SESSION and server.is_initialized and not server.is_closed
    _, out = post(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert '"inputSchema"' in bodies(out)
    held, out = post(server, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "ls"}}})
    assert out == [aw.McpHead(200, "text/event-stream", SESSION, None)]
    (event,) = list(server.events())
    assert isinstance(event, aw.McpCall)
    assert (event.tool, event.name, event.arguments) == (0, "bash", '{"command":"ls"}')
    assert server.pending_calls == 1
    assert server.poll_timeout() == 1_000
    server.handle_timeout(1_000)
    assert list(server.ready_exchanges()) == [held]
    assert ": keepalive" in bodies(list(server.exchange_outputs(held)))
    server.handle_timeout(5_000)
    assert list(server.events()) == [aw.McpCallLimit(event.call)]
    server.answer_call(event.call, "a.txt", now_ms=5_000)
    answer = list(server.exchange_outputs(held))
    assert '"text":"a.txt"' in bodies(answer) and '"isError":false' in bodies(answer)
    assert answer[-1] == aw.End()
    with pytest.raises(aw.CallNotPendingError):
        server.answer_call(event.call, "again", now_ms=5_001)
    with pytest.raises(aw.UnknownCallError):
        server.answer_call(event.call + 1, "x", is_error=True, now_ms=5_001)
    with pytest.raises(aw.UnknownExchangeError):
        server.poll_exchange(held + 100)
    with pytest.raises(aw.UnknownExchangeError):
        server.exchange_gone(held + 100, 0)


def test_mcp_server_answers_hostile_input_and_keeps_its_calls() -> None:
    server = initialized()
    post(server, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "ls"}}})
    (call,) = list(server.events())
    for payload, code in [
        (b"{not json", "-32700"),
        ({"jsonrpc": "1.0", "id": 2, "method": "ping"}, "-32600"),
        ({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, "-32601"),
        ({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "rm", "arguments": {}}}, "-32602"),
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "bash", "arguments": {}}}, "-32600"),
        ({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": "nope"}, "-32602"),
    ]:
        _, out = post(server, payload)
        assert code in bodies(out), (payload, out)
    _, out = post(server, b"x" * (5 << 20))
    assert isinstance(out[0], aw.McpHead) and out[0].status == 413
    _, out = post(server, {"jsonrpc": "2.0", "id": 8, "method": "ping"}, session="someone-else")
    assert isinstance(out[0], aw.McpHead) and out[0].status == 404
    _, out = post(server, {"jsonrpc": "2.0", "id": 8, "method": "ping"}, session=None)
    assert isinstance(out[0], aw.McpHead) and out[0].status == 400
    assert list(server.events()) == [] and server.pending_calls == 1
    # The call's connection closes: it is cancelled.
    held, _ = post(server, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "bash", "arguments": {}}})
    (second,) = list(server.events())
    server.exchange_gone(held, 1)
    assert list(server.events()) == [aw.McpCancelled(second.call, aw.McpCancelReason.DISCONNECTED)]
    # A cancellation with a reason, then DELETE.
    post(server, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "stop"}})
    assert list(server.events()) == [aw.McpCancelled(call.call, aw.McpCancelReason.REQUESTED, "stop")]
    server.handle_http(aw.McpRequest("DELETE", session_id=SESSION), 2)
    assert list(server.events()) == [aw.McpClosed()] and server.is_closed


def test_mcp_server_over_stdio_and_its_misuse() -> None:
    body = b'{"model":"auto","input":"hi","tools":[{"type":"custom","name":"apply_patch","description":"Patch."}]}'
    server = aw.McpServer(body, dialect="responses", mcp_config=aw.McpConfig(max_body_bytes=512))
    assert len(server.session_id) == 32
    init = line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
    for i in range(len(init)):
        server.push_stdio(init[i : i + 1], 0)
    out = b"".join(server.transmits())
    assert b'"id":0,"result"' in out and out.endswith(b"\n")
    server.push_stdio(line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "apply_patch", "arguments": {"input": "*** Begin Patch"}}}), 0)
    (call,) = list(server.events())
    assert isinstance(call, aw.McpCall) and call.arguments == "*** Begin Patch"
    server.answer_call(call.call, "failed", is_error=True, now_ms=1)
    assert b'"isError":true' in b"".join(server.transmits())
    server.push_stdio(b"x" * 1023 + b"\n", 2)
    assert b"-32600" in b"".join(server.transmits())
    server.end_session(3)
    assert server.is_closed and not server.closed
    server.push_stdio(init, 4)
    assert server.poll_transmit() is None
    server.close()
    assert server.closed and repr(server) == "McpServer(<closed>)"

    with pytest.raises(aw.InvalidSessionIdError):
        aw.McpServer(REQUEST, session_id="has space")
    with pytest.raises(aw.InvalidSessionIdError):
        aw.McpServer(REQUEST, session_id="")
    with pytest.raises(aw.InvalidRequestError):
        aw.McpServer(b'{"model":', session_id=SESSION)
    with pytest.raises(aw.InvalidEnumError):
        aw.McpServer(REQUEST, dialect="completions")
    with pytest.raises(TypeError):
        aw.McpServer(REQUEST, mcp_config=aw.Config())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        aw.McpServer(REQUEST).handle_http(b"POST", 0)  # type: ignore[arg-type]


def test_secrets_match_only_when_equal() -> None:
    assert aw.mcp_secret_matches(b"s3cret", b"s3cret")
    assert aw.mcp_secret_matches(b"", bytearray())
    assert not aw.mcp_secret_matches(b"s3cret", b"s3creT")
    assert not aw.mcp_secret_matches(b"s3cret", memoryview(b"s3cre"))
