"""The C library, its result codes as exceptions, and the base class of every handle."""

from __future__ import annotations

import enum
import threading
from typing import Any, Callable, Dict, Optional, Type, TypeVar, Union

from ._native import ffi, lib


OK = lib.AW_RESULT_OK
DRAINED = lib.AW_RESULT_DRAINED
NOT_AVAILABLE = lib.AW_RESULT_NOT_AVAILABLE
REJECTED = lib.AW_RESULT_REJECTED


class AgentwireError(Exception):
    """A call into agentwire failed. ``code`` is the C ``aw_result`` value, ``name`` its
    name (``"AW_RESULT_AFTER_EXIT"``), and the message is the library's own."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.name = result_name(code)
        super().__init__(f"{message} ({self.name})" if message else self.name)


class MisuseError(AgentwireError):
    """The caller broke the API's rules (a call in the wrong state, a bad argument)."""


class InvalidInputError(AgentwireError, ValueError):
    """An argument's content is not acceptable (not UTF-8, a NUL byte in a path)."""


class NullParameterError(MisuseError):
    """A required value was missing."""


class PanicError(AgentwireError):
    """agentwire panicked inside the call (a bug in agentwire); the object is now unusable."""


class PoisonedError(AgentwireError):
    """An earlier call on this object panicked; it can only be closed."""


class LengthTooLargeError(MisuseError, ValueError):
    """A length is larger than any object can be."""


class IndexOutOfRangeError(MisuseError, IndexError):
    """An index is past the end of its list."""


class InvalidEnumError(MisuseError, ValueError):
    """An enum argument is not one of its values."""


class AfterExitError(MisuseError):
    """Agent output was pushed after the agent was reported exited."""


class ExitedTwiceError(MisuseError):
    """The agent was reported exited twice."""


class AfterEofError(MisuseError):
    """Stdout was pushed to a decoder after its end."""


class BusyError(MisuseError):
    """Another call on the object was in progress (from another thread). The package
    serialises its own calls, so this only comes from C code sharing the handle."""


class UnknownTurnError(MisuseError, LookupError):
    """A turn number the ACP connection never handed out."""


class WrongRegistryError(MisuseError):
    """A bridge was given back to another registry than the one it was made in."""


class UnknownExchangeError(MisuseError, LookupError):
    """An exchange number the MCP server never handed out."""


class UnknownCallError(MisuseError, LookupError):
    """A call number the MCP server never handed out."""


class CallNotPendingError(MisuseError):
    """The MCP call was answered, cancelled or dropped already."""


class InvalidUtf8Error(InvalidInputError):
    """A string is not valid UTF-8."""


class InteriorNulError(InvalidInputError):
    """A string that ends up in a command line contains a NUL character."""


class McpRefusedError(InvalidInputError):
    """A request to an ACP connection's MCP endpoint is refused: answer it with
    :attr:`status` and no body. Nothing changed."""

    #: The HTTP status to answer.
    status = 0


class McpNotFoundError(McpRefusedError, LookupError):
    """No session's MCP server has the request's path: answer 404."""

    status = 404


class McpUnauthorizedError(McpRefusedError):
    """The request does not present its MCP server's secret: answer 401."""

    status = 401


class InvalidRequestError(InvalidInputError):
    """A request body is not a valid request of its dialect."""


class InvalidSessionIdError(InvalidInputError):
    """An MCP session id is not 1 or more visible ASCII characters."""


class UnknownAgentError(InvalidInputError):
    """The command is no ACP agent whose own tools agentwire knows how to turn off (keep
    them: ``NativeTools.KEEP``)."""


class ClosedError(AgentwireError, ValueError):
    """The object was closed."""

    def __init__(self, what: str) -> None:
        Exception.__init__(self, f"this {what} is closed")
        self.code = 0
        self.name = "closed"


_BY_CODE: Dict[int, Type[AgentwireError]] = {
    lib.AW_RESULT_NULL_PARAMETER: NullParameterError,
    lib.AW_RESULT_PANIC: PanicError,
    lib.AW_RESULT_POISONED: PoisonedError,
    lib.AW_RESULT_LENGTH_TOO_LARGE: LengthTooLargeError,
    lib.AW_RESULT_INDEX_OUT_OF_RANGE: IndexOutOfRangeError,
    lib.AW_RESULT_INVALID_ENUM: InvalidEnumError,
    lib.AW_RESULT_AFTER_EXIT: AfterExitError,
    lib.AW_RESULT_EXITED_TWICE: ExitedTwiceError,
    lib.AW_RESULT_AFTER_EOF: AfterEofError,
    lib.AW_RESULT_BUSY: BusyError,
    lib.AW_RESULT_UNKNOWN_TURN: UnknownTurnError,
    lib.AW_RESULT_WRONG_REGISTRY: WrongRegistryError,
    lib.AW_RESULT_UNKNOWN_EXCHANGE: UnknownExchangeError,
    lib.AW_RESULT_UNKNOWN_CALL: UnknownCallError,
    lib.AW_RESULT_CALL_NOT_PENDING: CallNotPendingError,
    lib.AW_RESULT_INVALID_UTF8: InvalidUtf8Error,
    lib.AW_RESULT_INTERIOR_NUL: InteriorNulError,
    lib.AW_RESULT_MCP_NOT_FOUND: McpNotFoundError,
    lib.AW_RESULT_MCP_UNAUTHORIZED: McpUnauthorizedError,
    lib.AW_RESULT_INVALID_REQUEST: InvalidRequestError,
    lib.AW_RESULT_INVALID_SESSION_ID: InvalidSessionIdError,
    lib.AW_RESULT_UNKNOWN_AGENT: UnknownAgentError,
}


_E = TypeVar("_E", bound=enum.IntEnum)


def choice(enum_type: Type[_E], name: str, value: object) -> _E:
    """A member of ``enum_type`` from a member, its value, or its name in any case with
    ``-`` or ``_``; :class:`InvalidEnumError` (a ValueError) naming the choices otherwise,
    and TypeError for a value of another type."""
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        member = enum_type.__members__.get(value.strip().upper().replace("-", "_"))
        if member is not None:
            return member
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return enum_type(value)
        except ValueError:
            pass
    else:
        raise TypeError(
            f"{name} must be a member of {enum_type.__name__} or its name, "
            f"not {type(value).__name__}"
        )
    choices = ", ".join(repr(member.name.lower()) for member in enum_type)
    raise InvalidEnumError(
        lib.AW_RESULT_INVALID_ENUM,
        f"{name} is {value!r}, not one of {choices} (or a {enum_type.__name__})",
    )


def result_name(code: int) -> str:
    """The name of an ``aw_result`` value."""
    name: bytes = ffi.string(lib.aw_result_name(code))
    return name.decode()


def error_for(code: int, message: str) -> AgentwireError:
    """The exception for a failed call's code, by its group when the code is newer than
    this module."""
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = InvalidInputError if 7200 <= code < 7300 else MisuseError
    return cls(code, message)


def copy_str(view: Any) -> str:
    """Copies an ``aw_str`` into a Python string."""
    return bytes(ffi.buffer(view.data, view.len)).decode("utf-8")


def copy_bytes(view: Any) -> bytes:
    """Copies an ``aw_bytes`` into Python bytes."""
    return bytes(ffi.buffer(view.data, view.len))


def encode(value: str) -> bytes:
    """A string for the C side. Lone surrogates pass through as the invalid UTF-8 they are,
    for the library to refuse with its own error."""
    return value.encode("utf-8", "surrogatepass")


def optional_text(value: Optional[str], what: str) -> Any:
    """An optional string for the C side: NULL for None, else its UTF-8 bytes (see
    :func:`encode`). Pass ``len(result)`` as its length (0 for NULL)."""
    if value is None:
        return ffi.NULL
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str or None, not {type(value).__name__}")
    return encode(value)


def optional_key(value: Union[bytes, str, None], what: str) -> Any:
    """Optional key bytes for the C side: NULL for None, a str as its UTF-8 bytes."""
    if value is None:
        return ffi.NULL
    if isinstance(value, str):
        return encode(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, a str or None, not {type(value).__name__}")


def c_len(value: Any) -> int:
    """The length to pass with an optional input: 0 for NULL."""
    return 0 if value == ffi.NULL else len(value)


#: What byte inputs accept: any C-contiguous object with the buffer protocol.
BytesLike = Union[bytes, bytearray, memoryview]


def input_bytes(data: BytesLike, what: str) -> Any:
    """Bytes for the C side, without a copy: ``bytes`` as they are, any other bytes-like
    object through its buffer. Anything else (``str``, ``int``, a list) is a TypeError."""
    if isinstance(data, bytes):
        return data
    try:
        return ffi.from_buffer("uint8_t[]", data)
    except TypeError:
        raise TypeError(
            f"{what} must be a bytes-like object (bytes, bytearray, memoryview), "
            f"not {type(data).__name__}"
        ) from None


_H = TypeVar("_H", bound="Handle")


class Handle:
    """Owns one C handle: ``close()`` frees it (idempotent), as does leaving a ``with``
    block or garbage collection. Using a closed handle raises :class:`ClosedError`.

    Threads may share an object: every call into the library holds the object's lock, so
    calls from several threads (say a reader pushing the agent's output while a timer
    handles deadlines) run one at a time. :meth:`close` waits for a call in progress;
    calls after it raise :class:`ClosedError`. The draining iterators take the lock per
    item: two threads draining one object each get some of the items, none twice. The
    lock is reentrant, so a signal handler (which Python runs between two steps of the
    thread it interrupts, never inside a call into the library) may use the object too."""

    _ptr: Any = ffi.NULL
    _lock: threading.RLock
    _free: Callable[[Any], None]
    _last_error: Callable[[Any], Any]
    _what = "object"

    def __new__(cls: Type[_H], *args: Any, **kwargs: Any) -> _H:
        self = super().__new__(cls)
        # Before __init__ runs, so that an object whose construction failed still closes.
        self._lock = threading.RLock()
        return self

    def _adopt(self, ptr: Any) -> None:
        self._ptr = ptr

    def _handle(self) -> Any:
        """The C handle, for a call made with the lock held; ClosedError once closed."""
        if self._ptr == ffi.NULL:
            raise ClosedError(self._what)
        return self._ptr

    def _check(self, code: int) -> int:
        """Raises for a failed call on this handle; returns a status code unchanged. Call
        it with the lock held, before another call replaces the message."""
        if code < 7100:
            return code
        message = ""
        if code == lib.AW_RESULT_BUSY:
            # The handle's message belongs to the call in progress.
            message = f"another call on this {self._what} is in progress (from another thread)"
        elif self._ptr != ffi.NULL:
            message = ffi.string(type(self)._last_error(self._ptr)).decode("utf-8", "replace")
        raise error_for(code, message)

    def close(self) -> None:
        """Frees the handle, once a call in progress on another thread has returned.
        Calling it again does nothing."""
        with self._lock:
            ptr, self._ptr = self._ptr, ffi.NULL
            if ptr != ffi.NULL:
                type(self)._free(ptr)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return bool(self._ptr == ffi.NULL)

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def check(code: int) -> int:
    """Raises for a failed call without a handle (creation); returns a status unchanged."""
    if code >= 7100:
        raise error_for(code, "")
    return code


def optional_symbol(name: str) -> Optional[Any]:
    """A library function that may be absent (the test hooks)."""
    try:
        return getattr(lib, name)
    except (AttributeError, ffi.error):
        # cffi's ABI mode reports a symbol the library lacks as ffi.error.
        return None
