"""``McpServer``: an MCP server offering an agent the tools of a client's request, for a
program that serves them itself; ``McpConfig``, its settings (and those of an ACP
connection's MCP servers); the HTTP side of an MCP exchange (:class:`McpRequest` in,
:class:`McpHead`, :class:`~agentwire.Body` and :class:`~agentwire.End` out), which an
:class:`~agentwire.AcpConnection`'s MCP endpoint shares; and :func:`mcp_secret_matches`.

No I/O of its own: the program serves the MCP endpoint (or the stdio pipes), hands each
request in, and writes what comes out."""

from __future__ import annotations

import enum
import secrets
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, List, Mapping, Optional, Tuple, Union

from ._lib import (
    DRAINED,
    NOT_AVAILABLE,
    BytesLike,
    Handle,
    check,
    choice,
    copy_bytes,
    copy_str,
    encode,
    input_bytes,
    optional_text,
    c_len,
)
from ._native import ffi, lib
from .bridge import Body, Dialect, End, _END
from .config import (
    Config,
    _Settings,
    _fields_of,
    _free_defaults,
    _int,
    _optional_int,
    _optional_string,
    _string,
)


class McpConfig(_Settings):
    """Settings for :class:`McpServer` and for an ACP connection's MCP servers
    (:attr:`AcpConfig.mcp <agentwire.AcpConfig.mcp>`), one typed attribute per field of the
    Rust ``mcp::Config``.

    ``McpConfig()`` has the library's defaults. Every field is a keyword argument and an
    attribute, read and set through the library. Durations are milliseconds, sizes bytes.
    What is made from a config copies it. Threads may share a config."""

    _free = lib.aw_mcp_config_free
    _last_error = lib.aw_mcp_config_last_error
    _what = "MCP config"
    _c_prefix = "aw_mcp_config"

    server_name = _string("``serverInfo.name`` in the ``initialize`` answer.")
    server_version = _string("``serverInfo.version`` in the ``initialize`` answer.")
    instructions = _optional_string(
        "``instructions`` in the ``initialize`` answer (agents may show them to their model), "
        "or None."
    )
    keep_alive_ms = _int(
        "uint64_t",
        "The interval of ``: keepalive`` comments on an SSE answer while a call is pending; 0 "
        "sends none. The recorded agents cut a silent answer at about 60 s.",
    )
    call_limit_ms = _optional_int(
        "uint64_t",
        "When a call has been pending this long, an McpCallLimit event says so (once per "
        "call), so that it can be answered before the agent gives up; or None.",
    )
    max_pending_calls = _int(
        "size_t", "Calls pending at once; one more is answered with a JSON-RPC error."
    )
    max_body_bytes = _int(
        "size_t",
        "The largest POST body, and the longest stdio line, accepted (a larger body is "
        "answered 413).",
    )
    max_exchanges = _int(
        "size_t",
        "HTTP exchanges open at once; one more is answered 503. Keep it above "
        "max_pending_calls.",
    )

    #: Every field's name, in declaration order.
    FIELDS: ClassVar[Tuple[str, ...]]

    def __init__(
        self,
        *,
        server_name: Optional[str] = None,
        server_version: Optional[str] = None,
        instructions: Optional[str] = None,
        keep_alive_ms: Optional[int] = None,
        call_limit_ms: Optional[int] = None,
        max_pending_calls: Optional[int] = None,
        max_body_bytes: Optional[int] = None,
        max_exchanges: Optional[int] = None,
    ) -> None:
        """Every field is a keyword argument; one left out (or None) keeps the library's
        default, which for ``instructions`` and ``call_limit_ms`` is None."""
        self._set_given({k: v for k, v in locals().items() if k in self.FIELDS})

    @classmethod
    def _adopting(cls, ptr: Any) -> "McpConfig":
        """A config object owning the C handle ``ptr``."""
        config = cls.__new__(cls)
        config._adopt(ptr)
        return config


McpConfig.FIELDS = _fields_of(McpConfig)
_free_defaults()


@dataclass(frozen=True)
class McpRequest:
    """An HTTP request to an MCP endpoint, as much of it as MCP reads. The program routes
    only the endpoint's path here (after its Host and Origin checks)."""

    #: The method, as sent (``POST``, ``GET``, ``DELETE``, ...).
    method: str
    #: The whole body (empty for ``GET`` and ``DELETE``).
    body: bytes = b""
    #: The ``Accept`` header (several joined with ``", "``), or None.
    accept: Optional[str] = None
    #: The ``Content-Type`` header, or None.
    content_type: Optional[str] = None
    #: The ``Mcp-Session-Id`` header, or None.
    session_id: Optional[str] = None
    #: The ``MCP-Protocol-Version`` header, or None.
    protocol_version: Optional[str] = None

    @classmethod
    def of(cls, method: str, headers: Mapping[str, str], body: bytes = b"") -> "McpRequest":
        """A request from its method, its headers (names in any case) and its body."""
        lower = {name.lower(): value for name, value in headers.items()}
        return cls(
            method=method,
            body=body,
            accept=lower.get("accept"),
            content_type=lower.get("content-type"),
            session_id=lower.get("mcp-session-id"),
            protocol_version=lower.get("mcp-protocol-version"),
        )

    def _c_args(self) -> List[Any]:
        """The C arguments: method, the four headers (NULL when absent), the body; each
        with its length."""
        method = encode(self.method)
        headers = [
            optional_text(value, name)
            for value, name in (
                (self.accept, "accept"),
                (self.content_type, "content_type"),
                (self.session_id, "session_id"),
                (self.protocol_version, "protocol_version"),
            )
        ]
        body = input_bytes(self.body, "body")
        args: List[Any] = [method, len(method)]
        for header in headers:
            args += [header, c_len(header)]
        return args + [body, len(body)]


@dataclass(frozen=True)
class McpHead:
    """Send the response head (once, first): ``status``, ``Content-Type`` when not None
    (for ``text/event-stream`` also ``Cache-Control: no-cache``, and flush each body chunk),
    ``Mcp-Session-Id`` when not None, ``Allow`` when not None."""

    status: int
    content_type: Optional[str] = None
    session_id: Optional[str] = None
    allow: Optional[str] = None


#: What an MCP exchange's response does next: its head, body bytes, then the end.
McpOutput = Union[McpHead, Body, End]


def _mcp_output_of(out: Any) -> McpOutput:
    """The output an ``aw_mcp_output`` holds, copied."""
    if out.kind == lib.AW_MCP_OUTPUT_KIND_HEAD:

        def text(view: Any) -> Optional[str]:
            return copy_str(view) if view.len else None

        return McpHead(
            status=int(out.status),
            content_type=text(out.content_type),
            session_id=text(out.session_id),
            allow=text(out.allow),
        )
    if out.kind == lib.AW_MCP_OUTPUT_KIND_BODY:
        return Body(copy_bytes(out.body))
    return _END


@dataclass(frozen=True)
class McpExchange:
    """One exchange of an ACP connection's MCP endpoint: keep it with its HTTP connection
    and pass it back as it was handed out."""

    #: The MCP server (one per session with client tools).
    server: int
    #: The exchange within it.
    exchange: int

    def _c(self) -> Any:
        return ffi.new("aw_mcp_exchange *", [self.server, self.exchange])[0]


class McpCancelReason(enum.IntEnum):
    """Why a pending MCP call ended without an answer."""

    #: The agent sent ``notifications/cancelled`` (with a message when it gave a reason).
    REQUESTED = lib.AW_MCP_CANCEL_REASON_REQUESTED
    #: The HTTP connection that would carry the answer closed.
    DISCONNECTED = lib.AW_MCP_CANCEL_REASON_DISCONNECTED
    #: The agent ended the session (HTTP ``DELETE``).
    SESSION_DELETED = lib.AW_MCP_CANCEL_REASON_SESSION_DELETED


@dataclass(frozen=True)
class McpCall:
    """The agent called a client tool: run it, then :meth:`McpServer.answer_call`."""

    #: The call's number (unique within its server, rising).
    call: int
    #: The tool's index in the request's ``tools``.
    tool: int
    #: The tool's name as the client knows it.
    name: str
    #: The client's input for the call: the JSON arguments text of a function tool, the
    #: raw text of a freeform one.
    arguments: str


@dataclass(frozen=True)
class McpCancelled:
    """A pending call ended without an answer; answering it now is
    :class:`~agentwire.CallNotPendingError`."""

    call: int
    reason: McpCancelReason
    #: The agent's reason, when it gave one.
    message: Optional[str] = None


@dataclass(frozen=True)
class McpCallLimit:
    """The call has been pending for ``call_limit_ms``: answer it now if the agent would
    give up on it. Once per call."""

    call: int


@dataclass(frozen=True)
class McpClosed:
    """The agent ended the session (HTTP ``DELETE``): every pending call was cancelled
    first, and the server serves nothing more."""


#: What an MCP server tells its owner.
McpEvent = Union[McpCall, McpCancelled, McpCallLimit, McpClosed]

_CLOSED = McpClosed()


def mcp_secret_matches(expected: BytesLike, given: BytesLike) -> bool:
    """Whether ``given`` equals ``expected``, in a time that does not depend on where they
    differ: for comparing a secret (a bearer token, a session id) with what a request
    carries. A length mismatch returns False at once (the length is not the secret)."""
    a = input_bytes(expected, "expected")
    b = input_bytes(given, "given")
    return bool(lib.aw_mcp_secret_matches(a, len(a), b, len(b)))


class McpServer(Handle):
    """An MCP server (JSON-RPC 2.0 over MCP's Streamable HTTP or stdio) offering one agent
    session the tools of a client's request. It answers ``initialize``, ``ping`` and
    ``tools/list`` itself and holds each ``tools/call`` pending until
    :meth:`answer_call`, for as long as that takes: the HTTP answer is an SSE stream kept
    busy with keep-alive comments.

    For every input — :meth:`handle_http` per HTTP request to the endpoint (after the
    program's Host, Origin and secret checks), :meth:`push_stdio`, :meth:`answer_call`,
    :meth:`exchange_gone`, :meth:`handle_timeout`, :meth:`end_session` — **drain**
    :meth:`transmits` (stdio bytes to write), :meth:`events` (:class:`McpCall`,
    :class:`McpCancelled`, :class:`McpCallLimit`, :class:`McpClosed`) and
    :meth:`exchange_outputs` of every exchange :meth:`ready_exchanges` names, then ask
    :meth:`poll_timeout` for the next deadline. Threads may share a server.

    Getters: :attr:`session_id`, :attr:`protocol_version`, :attr:`is_initialized`,
    :attr:`is_closed`, :attr:`pending_calls`, :attr:`tools`."""

    _free = lib.aw_mcp_server_free
    _last_error = lib.aw_mcp_server_last_error
    _what = "MCP server"

    def __init__(
        self,
        body: BytesLike,
        config: Optional[Config] = None,
        mcp_config: Optional[McpConfig] = None,
        *,
        session_id: Optional[str] = None,
        dialect: Union[Dialect, str] = Dialect.CHAT_COMPLETIONS,
    ) -> None:
        """A server offering the tools of ``body``, a client's request of ``dialect``
        (only its ``tools`` are read, with ``config``'s request limits; a body that is no
        valid request is :class:`~agentwire.InvalidRequestError`). ``mcp_config`` holds the
        server's settings (copied). ``session_id`` is the ``Mcp-Session-Id``, a credential
        of the session: by default 128 random bits."""
        data = input_bytes(body, "body")
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        if mcp_config is not None and not isinstance(mcp_config, McpConfig):
            raise TypeError(f"mcp_config must be an McpConfig, not {type(mcp_config).__name__}")
        chosen = choice(Dialect, "dialect", dialect)
        session = encode(secrets.token_hex(16) if session_id is None else session_id)
        out = ffi.new("aw_mcp_server **")
        configs = [c for c in (config, mcp_config) if c is not None]
        for held in configs:
            held._lock.acquire()
        try:
            check(
                lib.aw_mcp_server_new(
                    chosen,
                    data,
                    len(data),
                    ffi.NULL if config is None else config._handle(),
                    ffi.NULL if mcp_config is None else mcp_config._handle(),
                    session,
                    len(session),
                    out,
                )
            )
        finally:
            for held in reversed(configs):
                held._lock.release()
        self._adopt(out[0])

    # Getters.

    @property
    def session_id(self) -> str:
        """The ``Mcp-Session-Id`` the server was made with."""
        view = ffi.new("aw_str *")
        with self._lock:
            self._check(lib.aw_mcp_server_session_id(self._handle(), view))
            return copy_str(view[0])

    @property
    def protocol_version(self) -> Optional[str]:
        """The protocol version agreed in ``initialize``; None before (and once closed)."""
        view = ffi.new("aw_str *")
        with self._lock:
            code = lib.aw_mcp_server_protocol_version(self._handle(), view)
            if self._check(code) == NOT_AVAILABLE:
                return None
            return copy_str(view[0])

    @property
    def is_initialized(self) -> bool:
        """Whether ``initialize`` was answered and the session is not closed."""
        with self._lock:
            return bool(lib.aw_mcp_server_is_initialized(self._handle()))

    @property
    def is_closed(self) -> bool:
        """Whether the session ended (:meth:`end_session`, or the agent's ``DELETE``)."""
        with self._lock:
            return bool(lib.aw_mcp_server_is_closed(self._handle()))

    @property
    def pending_calls(self) -> int:
        """Calls made and neither answered nor ended."""
        out = ffi.new("size_t *")
        with self._lock:
            self._check(lib.aw_mcp_server_pending_calls(self._handle(), out))
        return int(out[0])

    @property
    def tools(self) -> List[str]:
        """The tools' names as the agent sees them, in the request's order."""
        count = ffi.new("size_t *")
        view = ffi.new("aw_str *")
        with self._lock:
            handle = self._handle()
            self._check(lib.aw_mcp_server_tool_count(handle, count))
            names = []
            for i in range(count[0]):
                self._check(lib.aw_mcp_server_tool_name(handle, i, view))
                names.append(copy_str(view[0]))
            return names

    # Inputs.

    def handle_http(self, request: McpRequest, now_ms: int) -> int:
        """An HTTP request to the MCP endpoint; returns its exchange's number, whose
        response comes from :meth:`exchange_outputs`. Refusals (a bad method, header,
        session or body) are responses, not exceptions."""
        if not isinstance(request, McpRequest):
            raise TypeError(f"request must be an McpRequest, not {type(request).__name__}")
        args = request._c_args()
        out = ffi.new("uint64_t *")
        with self._lock:
            self._check(lib.aw_mcp_server_handle_http(self._handle(), *args, now_ms, out))
        return int(out[0])

    def push_stdio(self, data: BytesLike, now_ms: int) -> None:
        """Bytes the agent wrote to the stdio server's stdin, in any chunking."""
        buf = input_bytes(data, "data")
        with self._lock:
            self._check(lib.aw_mcp_server_push_stdio(self._handle(), buf, len(buf), now_ms))

    def answer_call(self, call: int, text: str, *, is_error: bool = False, now_ms: int) -> None:
        """Answers the pending call ``call`` with what the client's tool returned;
        ``is_error`` when the client reports that it failed.
        :class:`~agentwire.UnknownCallError` for a call never made,
        :class:`~agentwire.CallNotPendingError` for one answered or ended already."""
        raw = encode(text)
        with self._lock:
            self._check(
                lib.aw_mcp_server_answer_call(
                    self._handle(), call, raw, len(raw), bool(is_error), now_ms
                )
            )

    def exchange_gone(self, exchange: int, now_ms: int) -> None:
        """The agent's HTTP connection of ``exchange`` closed: the calls whose answers it
        owed are cancelled. :class:`~agentwire.UnknownExchangeError` for an exchange never
        handed out."""
        with self._lock:
            self._check(lib.aw_mcp_server_exchange_gone(self._handle(), exchange, now_ms))

    def handle_timeout(self, now_ms: int) -> None:
        """The deadline from :meth:`poll_timeout` passed. Early calls do nothing."""
        with self._lock:
            self._check(lib.aw_mcp_server_handle_timeout(self._handle(), now_ms))

    def end_session(self, now_ms: int) -> None:
        """Ends the MCP session from our side: every open exchange ends after what it holds,
        pending calls are dropped without events, and later requests are answered 404
        (stdio input is ignored). (``close()`` frees the server, as every object's does.)"""
        with self._lock:
            self._check(lib.aw_mcp_server_close(self._handle(), now_ms))

    # Outputs.

    def poll_transmit(self) -> Optional[bytes]:
        """Bytes to write to the stdio server's stdout (whole lines), or None."""
        out = ffi.new("aw_bytes *")
        with self._lock:
            if self._check(lib.aw_mcp_server_poll_transmit(self._handle(), out)) == DRAINED:
                return None
            return copy_bytes(out[0])

    def transmits(self) -> Iterator[bytes]:
        """Drains :meth:`poll_transmit`."""
        while True:
            item = self.poll_transmit()
            if item is None:
                return
            yield item

    def poll_event(self) -> Optional[McpEvent]:
        """The next event, or None."""
        out = ffi.new("aw_mcp_event *")
        with self._lock:
            if self._check(lib.aw_mcp_server_poll_event(self._handle(), out)) == DRAINED:
                return None
            kind = out.kind
            if kind == lib.AW_MCP_EVENT_KIND_CALL:
                return McpCall(
                    call=int(out.call),
                    tool=int(out.tool),
                    name=copy_str(out.tool_name),
                    arguments=copy_str(out.arguments),
                )
            if kind == lib.AW_MCP_EVENT_KIND_CANCELLED:
                return McpCancelled(
                    call=int(out.call),
                    reason=McpCancelReason(out.cancel_reason),
                    message=copy_str(out.cancel_message) if out.has_cancel_message else None,
                )
            if kind == lib.AW_MCP_EVENT_KIND_CALL_LIMIT:
                return McpCallLimit(call=int(out.call))
            return _CLOSED

    def events(self) -> Iterator[McpEvent]:
        """Drains :meth:`poll_event`."""
        while True:
            event = self.poll_event()
            if event is None:
                return
            yield event

    def poll_ready(self) -> Optional[int]:
        """An exchange with output for :meth:`poll_exchange`, each named at most once
        between two inputs; None when no other has any."""
        out = ffi.new("uint64_t *")
        with self._lock:
            if self._check(lib.aw_mcp_server_poll_ready(self._handle(), out)) == DRAINED:
                return None
        return int(out[0])

    def ready_exchanges(self) -> Iterator[int]:
        """Drains :meth:`poll_ready`."""
        while True:
            exchange = self.poll_ready()
            if exchange is None:
                return
            yield exchange

    def poll_exchange(self, exchange: int) -> Optional[McpOutput]:
        """The next output of ``exchange`` (:class:`McpHead`, :class:`~agentwire.Body`,
        :class:`~agentwire.End`), or None until the next input (and for ever after its
        end). :class:`~agentwire.UnknownExchangeError` for an exchange never handed out."""
        out = ffi.new("aw_mcp_output *")
        with self._lock:
            code = lib.aw_mcp_server_poll_exchange(self._handle(), exchange, out)
            if self._check(code) == DRAINED:
                return None
            return _mcp_output_of(out)

    def exchange_outputs(self, exchange: int) -> Iterator[McpOutput]:
        """Drains :meth:`poll_exchange` of ``exchange``."""
        while True:
            output = self.poll_exchange(exchange)
            if output is None:
                return
            yield output

    def poll_timeout(self) -> Optional[int]:
        """When :meth:`handle_timeout` is next due (``now_ms`` clock), or None."""
        has = ffi.new("bool *")
        deadline = ffi.new("uint64_t *")
        with self._lock:
            self._check(lib.aw_mcp_server_poll_timeout(self._handle(), has, deadline))
        return int(deadline[0]) if has[0] else None

    def __repr__(self) -> str:
        if self.closed:
            return "McpServer(<closed>)"
        return (
            f"McpServer(tools={self.tools}, initialized={self.is_initialized}, "
            f"pending_calls={self.pending_calls})"
        )
