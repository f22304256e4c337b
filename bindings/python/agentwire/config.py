"""``Config``: the settings of a bridge (and a decoder), one attribute per field of the Rust
``Config``, with the library's defaults."""

from __future__ import annotations

import enum
from typing import Any, Callable, Generic, Optional, TypeVar, overload

from ._lib import NOT_AVAILABLE, Handle, check, copy_str, encode
from ._native import ffi, lib

__all__ = ["Config", "ToolStrategy", "ReasoningField"]

T = TypeVar("T")


class ToolStrategy(enum.IntEnum):
    """How client tools are executed in client mode (a request with tools)."""

    #: The agent runs read-only; its non-mutating calls that map to a client tool become
    #: client tool calls; mutating tools are taught as text envelopes. The default.
    READ_ONLY = lib.AW_TOOL_STRATEGY_READ_ONLY
    #: The agent uses its own tools (its edits bypass the client).
    NATIVE = lib.AW_TOOL_STRATEGY_NATIVE
    #: Every client tool is a text envelope; nothing is intercepted.
    ENVELOPE_ONLY = lib.AW_TOOL_STRATEGY_ENVELOPE_ONLY


class ReasoningField(enum.IntEnum):
    """Where reasoning text goes in the response."""

    REASONING_CONTENT = lib.AW_REASONING_FIELD_REASONING_CONTENT
    REASONING = lib.AW_REASONING_FIELD_REASONING
    OMITTED = lib.AW_REASONING_FIELD_OMITTED


class _Field(Generic[T]):
    """One config field: reads and writes go through the C getter and setter, so values
    (and defaults) are the library's."""

    def __init__(
        self,
        c_type: str,
        convert: Callable[[Any], T] = lambda v: v,
        optional: bool = False,
        string: bool = False,
    ) -> None:
        self.c_type = c_type
        self.convert = convert
        self.optional = optional
        self.string = string
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.getter = getattr(lib, f"aw_config_get_{name}")
        self.setter = getattr(lib, f"aw_config_set_{name}")
        self.clear = getattr(lib, f"aw_config_clear_{name}", None) if self.optional else None

    @overload
    def __get__(self, obj: None, owner: type) -> "_Field[T]": ...

    @overload
    def __get__(self, obj: "Config", owner: type) -> T: ...

    def __get__(self, obj: Optional["Config"], owner: type) -> Any:
        if obj is None:
            return self
        out = ffi.new(f"{self.c_type} *")
        code = obj._check(self.getter(obj._handle(), out))
        if code == NOT_AVAILABLE:
            return None
        return self.convert(copy_str(out[0]) if self.string else out[0])

    def __set__(self, obj: "Config", value: T) -> None:
        handle = obj._handle()
        if value is None:
            if self.clear is None:
                raise TypeError(f"{self.name} cannot be None")
            obj._check(self.clear(handle))
        elif self.string:
            if not isinstance(value, str):
                raise TypeError(f"{self.name} must be a str")
            raw = encode(value)
            obj._check(self.setter(handle, raw, len(raw)))
        else:
            obj._check(self.setter(handle, int(value)))  # type: ignore[call-overload]


class Config(Handle):
    """Settings for :class:`~agentwire.Bridge` and :class:`~agentwire.Decoder`.

    ``Config()`` has the library's defaults (read-only agent in client mode, no
    ``--force``, generous timeouts); every field can be given as a keyword argument and
    read or set as an attribute. Durations are milliseconds, sizes bytes. Bridges and
    decoders copy the config when created.
    """

    _free = lib.aw_config_free
    _last_error = lib.aw_config_last_error
    _what = "config"

    #: The cursor-agent program: a path, or a name looked up in ``PATH``.
    cursor_binary: _Field[str] = _Field("aw_str", string=True)
    #: ``--workspace`` for every run, or None.
    workspace: _Field[Optional[str]] = _Field("aw_str", optional=True, string=True)
    #: An isolated CLI configuration directory (``CURSOR_CONFIG_DIR``), or None.
    cli_config_dir: _Field[Optional[str]] = _Field("aw_str", optional=True, string=True)
    #: Whether agent mode may pass ``--force``.
    allow_force: _Field[bool] = _Field("bool", bool)
    #: How client tools are executed.
    tool_strategy: _Field[ToolStrategy] = _Field("aw_tool_strategy", ToolStrategy)
    #: Whether to pass ``--stream-partial-output``.
    partial_output: _Field[bool] = _Field("bool", bool)
    #: Where reasoning text goes.
    reasoning: _Field[ReasoningField] = _Field("aw_reasoning_field", ReasoningField)
    #: Whether the agent's own tool use shows as notes in the reasoning channel.
    activity_notes: _Field[bool] = _Field("bool", bool)
    #: Streaming: how long to wait for the first answer event before sending the 200 head.
    head_deadline_ms: _Field[int] = _Field("uint64_t", int)
    #: Interval of SSE keep-alive comments during silence.
    keep_alive_ms: _Field[int] = _Field("uint64_t", int)
    #: Silence after which the agent is stopped and the request fails with 504.
    idle_timeout_ms: _Field[int] = _Field("uint64_t", int)
    #: Total duration after which the agent is stopped (504), or None.
    max_duration_ms: _Field[Optional[int]] = _Field("uint64_t", int, optional=True)
    #: How long a batch of client tool calls stays open for more calls.
    batch_window_ms: _Field[int] = _Field("uint64_t", int)
    #: Bytes of the agent's stderr kept for failure messages.
    stderr_tail_bytes: _Field[int] = _Field("size_t", int)
    #: Largest text envelope a client tool call may be written in.
    max_envelope_bytes: _Field[int] = _Field("size_t", int)
    #: Longest stdout line accepted.
    decoder_max_line_len: _Field[int] = _Field("size_t", int)
    #: Bytes of non-JSON stdout kept for failure classification.
    decoder_max_notes: _Field[int] = _Field("size_t", int)
    #: Largest request body accepted.
    request_max_body_bytes: _Field[int] = _Field("size_t", int)
    #: Most messages a request may have.
    request_max_messages: _Field[int] = _Field("size_t", int)
    #: Most tools a request may offer.
    request_max_tools: _Field[int] = _Field("size_t", int)
    #: Whether a request holding an image, audio clip or file is refused (400) instead of
    #: passing each on as a text placeholder.
    request_reject_attachments: _Field[bool] = _Field("bool", bool)
    #: Repeated-call limit for calls whose results were failures.
    loop_guard_max_failed_repeats: _Field[int] = _Field("uint32_t", int)
    #: Repeated-call limit for any call.
    loop_guard_max_repeats: _Field[int] = _Field("uint32_t", int)

    #: Every field's name, in declaration order.
    FIELDS = (
        "cursor_binary",
        "workspace",
        "cli_config_dir",
        "allow_force",
        "tool_strategy",
        "partial_output",
        "reasoning",
        "activity_notes",
        "head_deadline_ms",
        "keep_alive_ms",
        "idle_timeout_ms",
        "max_duration_ms",
        "batch_window_ms",
        "stderr_tail_bytes",
        "max_envelope_bytes",
        "decoder_max_line_len",
        "decoder_max_notes",
        "request_max_body_bytes",
        "request_max_messages",
        "request_max_tools",
        "request_reject_attachments",
        "loop_guard_max_failed_repeats",
        "loop_guard_max_repeats",
    )

    def __init__(self, **fields: Any) -> None:
        unknown = set(fields) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"unknown Config fields: {', '.join(sorted(unknown))}")
        out = ffi.new("aw_config **")
        check(lib.aw_config_new(out))
        self._adopt(out[0])
        for name, value in fields.items():
            setattr(self, name, value)

    def as_dict(self) -> dict:
        """Every field and its value."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def __repr__(self) -> str:
        if self.closed:
            return "Config(<closed>)"
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"
