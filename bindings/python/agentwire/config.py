"""``Config``: the settings of a bridge (and a decoder), one typed attribute per field of
the Rust ``Config``, with the library's defaults."""

from __future__ import annotations

import enum
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ClassVar,
    Dict,
    Generic,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

from ._lib import NOT_AVAILABLE, Handle, check, choice, copy_str, encode
from ._native import ffi, lib


#: What a field reads as, and what it may be set to.
G = TypeVar("G")
S = TypeVar("S")
E = TypeVar("E", bound=enum.IntEnum)


class ToolStrategy(enum.IntEnum):
    """How client tools are executed in client mode (a request with tools). A
    :class:`Config` also takes the names: ``"read_only"`` (or ``"read-only"``),
    ``"native"``, ``"envelope_only"``."""

    #: The agent runs read-only; its non-mutating calls that map to a client tool become
    #: client tool calls; mutating tools are taught as text envelopes. The default.
    READ_ONLY = lib.AW_TOOL_STRATEGY_READ_ONLY
    #: The agent uses its own tools (its edits bypass the client).
    NATIVE = lib.AW_TOOL_STRATEGY_NATIVE
    #: Every client tool is a text envelope; nothing is intercepted.
    ENVELOPE_ONLY = lib.AW_TOOL_STRATEGY_ENVELOPE_ONLY


class ReasoningField(enum.IntEnum):
    """Where reasoning text goes in the response. A :class:`Config` also takes the names:
    ``"reasoning_content"`` (or ``"reasoning-content"``), ``"reasoning"``,
    ``"omitted"``."""

    REASONING_CONTENT = lib.AW_REASONING_FIELD_REASONING_CONTENT
    REASONING = lib.AW_REASONING_FIELD_REASONING
    OMITTED = lib.AW_REASONING_FIELD_OMITTED


def _number(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


class _Field(Generic[G, S]):
    """One config field: reads and writes go through the C getter and setter, so values
    (and defaults) are the library's. Reads as ``G``; accepts ``S``."""

    def __init__(
        self,
        c_type: str,
        doc: str,
        accept: Callable[[str, object], Any],
        read: Callable[[Any], G],
        optional: bool = False,
    ) -> None:
        self.c_type = c_type
        self.accept = accept
        self.read = read
        self.optional = optional
        self.name = ""
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        # The C functions are named after the owner's handle: aw_config_get_<name>, ...
        prefix: str = getattr(owner, "_c_prefix")
        self.name = name
        self.getter = getattr(lib, f"{prefix}_get_{name}")
        self.setter = getattr(lib, f"{prefix}_set_{name}")
        self.clear = getattr(lib, f"{prefix}_clear_{name}") if self.optional else None
        default = self._get(_defaults(prefix))
        if isinstance(default, enum.Enum):
            shown = f"{type(default).__name__}.{default.name}"
        else:
            shown = repr(default)
        self.__doc__ = f"{self.__doc__} Default: {shown}."

    def _get(self, ptr: Any) -> G:
        out = ffi.new(f"{self.c_type} *")
        if check(self.getter(ptr, out)) == NOT_AVAILABLE:
            return None  # type: ignore[return-value]  # G is Optional[...] for these fields
        return self.read(copy_str(out[0]) if self.c_type == "aw_str" else out[0])

    @overload
    def __get__(self, obj: None, owner: type) -> "_Field[G, S]": ...

    @overload
    def __get__(self, obj: "_Settings", owner: type) -> G: ...

    def __get__(self, obj: Optional["_Settings"], owner: type) -> Any:
        if obj is None:
            return self
        with obj._lock:
            out = ffi.new(f"{self.c_type} *")
            if obj._check(self.getter(obj._handle(), out)) == NOT_AVAILABLE:
                return None
            # Copied under the lock: a string view lasts until the next call on the config.
            return self.read(copy_str(out[0]) if self.c_type == "aw_str" else out[0])

    def __set__(self, obj: "_Settings", value: S) -> None:
        if value is None:
            if self.clear is None:
                raise TypeError(f"{self.name} cannot be None")
            with obj._lock:
                obj._check(self.clear(obj._handle()))
            return
        accepted = self.accept(self.name, value)
        with obj._lock:
            handle = obj._handle()
            if self.c_type == "aw_str":
                raw = encode(accepted)
                obj._check(self.setter(handle, raw, len(raw)))
            else:
                obj._check(self.setter(handle, accepted))


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _string(doc: str) -> _Field[str, str]:
    return _Field("aw_str", doc, _text, str)


def _optional_string(doc: str) -> _Field[Optional[str], Optional[str]]:
    return _Field("aw_str", doc, _text, str, optional=True)


def _bool(doc: str) -> _Field[bool, bool]:
    return _Field("bool", doc, _flag, bool)


def _int(c_type: str, doc: str) -> _Field[int, int]:
    return _Field(c_type, doc, _number, int)


def _optional_int(c_type: str, doc: str) -> _Field[Optional[int], Optional[int]]:
    return _Field(c_type, doc, _number, int, optional=True)


def _enum(enum_type: Type[E], c_type: str, doc: str) -> _Field[E, Union[E, str]]:
    return _Field(c_type, doc, lambda name, value: choice(enum_type, name, value), enum_type)


# A config of each kind with the library's defaults, read by the fields' documentation
# when their classes are defined, then freed.
_DEFAULT_HANDLES: Dict[str, Any] = {}


def _defaults(prefix: str) -> Any:
    if prefix not in _DEFAULT_HANDLES:
        out = ffi.new(f"{prefix} **")
        check(getattr(lib, f"{prefix}_new")(out))
        _DEFAULT_HANDLES[prefix] = out[0]
    return _DEFAULT_HANDLES[prefix]


def _free_defaults() -> None:
    """Frees the default configs read by the fields' documentation: call it once every
    settings class is defined."""
    for prefix, ptr in _DEFAULT_HANDLES.items():
        getattr(lib, f"{prefix}_free")(ptr)
    _DEFAULT_HANDLES.clear()


class _Settings(Handle):
    """The base of :class:`Config` and :class:`~agentwire.AcpConfig`: a handle whose
    fields are class attributes read and written through the library."""

    #: The C handle type, and the prefix of its functions.
    _c_prefix = ""
    #: Every field's name, in declaration order.
    FIELDS: ClassVar[Tuple[str, ...]]

    def _set_given(self, given: Dict[str, object]) -> None:
        """Creates the handle with the defaults, then sets every given field not None."""
        out = ffi.new(f"{self._c_prefix} **")
        check(getattr(lib, f"{self._c_prefix}_new")(out))
        self._adopt(out[0])
        for name, value in given.items():
            if value is not None:
                setattr(self, name, value)

    if not TYPE_CHECKING:
        # Hidden from type checkers, which would take any attribute as settable on a class
        # with __setattr__: they report a misspelt field themselves.

        def __setattr__(self, name: str, value: object) -> None:
            # A misspelt field would otherwise become a new attribute and change nothing.
            if not name.startswith("_") and name not in self.FIELDS:
                raise AttributeError(
                    f"{type(self).__name__} has no field {name!r}; its fields are: "
                    f"{', '.join(self.FIELDS)}"
                )
            super().__setattr__(name, value)

    def as_dict(self) -> Dict[str, object]:
        """Every field and its value."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def __repr__(self) -> str:
        name = type(self).__name__
        if self.closed:
            return f"{name}(<closed>)"
        return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


def _fields_of(cls: type) -> Tuple[str, ...]:
    """The names of a settings class's fields, in declaration order."""
    return tuple(name for name, value in vars(cls).items() if isinstance(value, _Field))


class Config(_Settings):
    """Settings for :class:`~agentwire.Bridge` and :class:`~agentwire.Decoder`.

    ``Config()`` has the library's defaults (read-only agent in client mode, no
    ``--force``, generous timeouts). Every field is a keyword argument and a typed
    attribute, read and set through the library, which refuses bad values with
    :class:`~agentwire.InvalidInputError` or :class:`~agentwire.MisuseError` (a wrong type
    is a :class:`TypeError`) and leaves the field as it was. Durations are milliseconds,
    sizes bytes. Enum fields take their enum or its name (``tool_strategy="native"``).
    Bridges and decoders copy the config when created. Threads may share a config.
    """

    _free = lib.aw_config_free
    _last_error = lib.aw_config_last_error
    _what = "config"
    _c_prefix = "aw_config"

    cursor_binary = _string("The cursor-agent program: a path, or a name looked up in PATH.")
    workspace = _optional_string("The agent's ``--workspace`` for every run, or None.")
    cli_config_dir = _optional_string(
        "An isolated CLI configuration directory, passed as ``CURSOR_CONFIG_DIR``, or None. "
        "Every ``--model`` run rewrites the CLI's ``cli-config.json``; isolating it keeps "
        "concurrent runs from racing on the user's file."
    )
    allow_force = _bool(
        "Whether agent mode (a request without tools) may pass ``--force``, letting the agent "
        "run shell and web tools without approval. Client mode never passes it."
    )
    tool_strategy = _enum(
        ToolStrategy, "aw_tool_strategy", "How client tools are executed (a ToolStrategy)."
    )
    partial_output = _bool("Whether to pass ``--stream-partial-output`` for token-level text.")
    reasoning = _enum(
        ReasoningField, "aw_reasoning_field", "Where reasoning text goes (a ReasoningField)."
    )
    activity_notes = _bool(
        "Whether the agent's own tool use and reconnects show as notes in the reasoning "
        "channel."
    )
    head_deadline_ms = _int(
        "uint64_t",
        "Streaming: how long to wait for the first answer event before sending the 200 head "
        "and starting keep-alives. Until then a failure still gets its true HTTP status.",
    )
    keep_alive_ms = _int(
        "uint64_t", "Interval of SSE keep-alive comments during silence, once the head is sent."
    )
    idle_timeout_ms = _int(
        "uint64_t", "Silence from the agent after which it is stopped and the request fails (504)."
    )
    max_duration_ms = _optional_int(
        "uint64_t",
        "Total duration after which the agent is stopped and the request fails (504), or None.",
    )
    batch_window_ms = _int(
        "uint64_t",
        "How long a batch of client tool calls stays open for more calls of the same model call.",
    )
    stderr_tail_bytes = _int(
        "size_t", "Bytes of the agent's stderr kept for failure messages, the most recent."
    )
    max_envelope_bytes = _int(
        "size_t", "Largest text envelope a client tool call may be written in."
    )
    decoder_max_line_len = _int(
        "size_t", "Longest stdout line accepted; a longer one is dropped and decoding resumes."
    )
    decoder_max_notes = _int(
        "size_t", "Bytes of non-JSON stdout lines kept for failure classification."
    )
    request_max_body_bytes = _int(
        "size_t", "Largest request body accepted; a larger one is answered with 400."
    )
    request_max_messages = _int(
        "size_t", "Most messages a request may have; more is answered with 400."
    )
    request_max_tools = _int("size_t", "Most tools a request may offer; more is answered with 400.")
    request_reject_attachments = _bool(
        "Whether a request holding an image, audio clip or file is refused (400) instead of "
        "each attachment becoming a short text placeholder naming its media type and size."
    )
    loop_guard_max_failed_repeats = _int(
        "uint32_t",
        "After this many identical calls in a row in the current turn that all failed, the "
        "next identical one is refused (0: no limit).",
    )
    loop_guard_max_repeats = _int(
        "uint32_t",
        "After this many identical calls in a row in the current turn, whatever their "
        "results, the next identical one is refused (0: no limit).",
    )

    #: Every field's name, in declaration order.
    FIELDS: ClassVar[Tuple[str, ...]]

    def __init__(
        self,
        *,
        cursor_binary: Optional[str] = None,
        workspace: Optional[str] = None,
        cli_config_dir: Optional[str] = None,
        allow_force: Optional[bool] = None,
        tool_strategy: Union[ToolStrategy, str, None] = None,
        partial_output: Optional[bool] = None,
        reasoning: Union[ReasoningField, str, None] = None,
        activity_notes: Optional[bool] = None,
        head_deadline_ms: Optional[int] = None,
        keep_alive_ms: Optional[int] = None,
        idle_timeout_ms: Optional[int] = None,
        max_duration_ms: Optional[int] = None,
        batch_window_ms: Optional[int] = None,
        stderr_tail_bytes: Optional[int] = None,
        max_envelope_bytes: Optional[int] = None,
        decoder_max_line_len: Optional[int] = None,
        decoder_max_notes: Optional[int] = None,
        request_max_body_bytes: Optional[int] = None,
        request_max_messages: Optional[int] = None,
        request_max_tools: Optional[int] = None,
        request_reject_attachments: Optional[bool] = None,
        loop_guard_max_failed_repeats: Optional[int] = None,
        loop_guard_max_repeats: Optional[int] = None,
    ) -> None:
        """Every field is a keyword argument; one left out (or None) keeps the library's
        default, which for ``workspace``, ``cli_config_dir`` and ``max_duration_ms`` is
        None. See each field's documentation."""
        self._set_given({k: v for k, v in locals().items() if k in self.FIELDS})


Config.FIELDS = _fields_of(Config)
