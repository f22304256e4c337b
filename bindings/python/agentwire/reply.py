"""Replies that need no agent: the answer to ``POST /v1/messages/count_tokens``
(:func:`count_tokens`), and a server's own refusals in the shape of its route's dialect
(:func:`error_reply`)."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

from ._lib import BytesLike, check, choice, copy_bytes, encode, input_bytes
from ._native import ffi, lib
from .bridge import Dialect
from .config import Config


class ErrorKind(enum.IntEnum):
    """The class of an error reply; each has one HTTP status (:attr:`status`), and whether
    a client may retry follows from it:

    ``INVALID_REQUEST`` 400, ``AUTHENTICATION`` 401 (no key, or the wrong one),
    ``PERMISSION_DENIED`` 403, ``NOT_FOUND`` 404 (the route or the model),
    ``METHOD_NOT_ALLOWED`` 405, ``REQUEST_TOO_LARGE`` 413, ``UNSUPPORTED_MEDIA_TYPE`` 415
    (a body not declared JSON), ``RATE_LIMITED`` 429 (every agent slot taken; retryable),
    ``INTERNAL`` 500, ``AGENT_FAILED`` 502 (retryable), ``UNAVAILABLE`` 503 (shutting down;
    retryable), ``TIMEOUT`` 504 (retryable), ``USAGE_LIMIT`` 429 (the account's usage limit
    or quota is used up; not retryable).

    :func:`error_reply` also takes the names, in any case, with ``-`` or ``_``
    (``"authentication"``, ``"not-found"``, ``"rate_limited"``, …)."""

    #: 400: the request is invalid.
    INVALID_REQUEST = lib.AW_ERROR_KIND_INVALID_REQUEST
    #: 401: not authenticated (no key, or the wrong one).
    AUTHENTICATION = lib.AW_ERROR_KIND_AUTHENTICATION
    #: 403: not allowed (say, a web origin that is not allowed).
    PERMISSION_DENIED = lib.AW_ERROR_KIND_PERMISSION_DENIED
    #: 404: the route (or the model) does not exist.
    NOT_FOUND = lib.AW_ERROR_KIND_NOT_FOUND
    #: 405: the route does not take this method.
    METHOD_NOT_ALLOWED = lib.AW_ERROR_KIND_METHOD_NOT_ALLOWED
    #: 413: the request body is too large.
    REQUEST_TOO_LARGE = lib.AW_ERROR_KIND_REQUEST_TOO_LARGE
    #: 415: the request body is not of a media type the route takes.
    UNSUPPORTED_MEDIA_TYPE = lib.AW_ERROR_KIND_UNSUPPORTED_MEDIA_TYPE
    #: 429: a rate limit was hit, or every agent slot is taken. Retryable.
    RATE_LIMITED = lib.AW_ERROR_KIND_RATE_LIMITED
    #: 500: misconfigured; retrying will not help until someone fixes it.
    INTERNAL = lib.AW_ERROR_KIND_INTERNAL
    #: 502: the agent failed. Retryable.
    AGENT_FAILED = lib.AW_ERROR_KIND_AGENT_FAILED
    #: 503: unavailable, or shutting down. Retryable.
    UNAVAILABLE = lib.AW_ERROR_KIND_UNAVAILABLE
    #: 504: timed out. Retryable.
    TIMEOUT = lib.AW_ERROR_KIND_TIMEOUT
    #: 429: the account's usage limit or quota is used up. Not retryable.
    USAGE_LIMIT = lib.AW_ERROR_KIND_USAGE_LIMIT

    @property
    def status(self) -> int:
        """The HTTP status of the class."""
        return _status(self)


@functools.lru_cache(maxsize=None)
def _status(kind: ErrorKind) -> int:
    """The library's status for a class: that of its refusals."""
    return error_reply(Dialect.CHAT_COMPLETIONS, kind, "").status


@dataclass(frozen=True)
class Reply:
    """A whole HTTP reply: send :attr:`status` with :attr:`headers`, then :attr:`body`."""

    status: int
    #: Whether retrying the request may help: sent as ``x-should-retry``.
    retryable: bool
    #: The JSON body.
    body: bytes
    content_type: str = "application/json"

    @property
    def headers(self) -> Dict[str, str]:
        """``content-type`` and ``x-should-retry``."""
        return {
            "content-type": self.content_type,
            "x-should-retry": "true" if self.retryable else "false",
        }


def _read(new: Any) -> Reply:
    """Creates a C reply with ``new(out)``, copies it out and frees it."""
    out = ffi.new("aw_reply **")
    check(new(out))
    reply = out[0]
    try:
        status = ffi.new("uint16_t *")
        retryable = ffi.new("bool *")
        body = ffi.new("aw_bytes *")
        check(lib.aw_reply_status(reply, status))
        check(lib.aw_reply_retryable(reply, retryable))
        check(lib.aw_reply_body(reply, body))
        return Reply(int(status[0]), bool(retryable[0]), copy_bytes(body[0]))
    finally:
        lib.aw_reply_free(reply)


def count_tokens(body: BytesLike, config: Optional[Config] = None) -> Reply:
    """The reply to a ``POST /v1/messages/count_tokens`` body (any query string), with no
    agent: a 400 naming the field (413 over ``config.request_max_body_bytes``) when the body
    is not a valid count_tokens request, else a 404 ``not_found_error`` saying tokens
    cannot be counted here — cursor-agent's own prompt and tokenizer are not visible, and
    each response reports its real ``usage``. Never a 5xx and never retryable: Claude
    Code then shows its own estimate, and anthropic-python raises ``NotFoundError`` once."""
    data = input_bytes(body, "body")
    if config is not None and not isinstance(config, Config):
        raise TypeError(f"config must be a Config, not {type(config).__name__}")
    if config is None:
        return _read(lambda out: lib.aw_reply_new_count_tokens(data, len(data), ffi.NULL, out))
    with config._lock:
        handle = config._handle()
        return _read(lambda out: lib.aw_reply_new_count_tokens(data, len(data), handle, out))


def error_reply(
    dialect: Union[Dialect, str], kind: Union[ErrorKind, str], message: str
) -> Reply:
    """A server's own refusal on a route of ``dialect``: that dialect's error body for an
    error of class ``kind`` saying ``message`` (clients show it: say what to do). For what
    a server decides before any :class:`~agentwire.Bridge` exists: not authenticated
    (401), a forbidden origin (403), an unknown route (404), a wrong method (405), a body
    too large (413) or not JSON (415), every agent slot taken (429), shutting down (503).
    The OpenAI dialects' ``code`` is the class's own (``invalid_api_key``,
    ``not_found``, ``rate_limit_exceeded``, …)."""
    chosen_dialect = choice(Dialect, "dialect", dialect)
    chosen_kind = choice(ErrorKind, "kind", kind)
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, not {type(message).__name__}")
    raw = encode(message)
    return _read(
        lambda out: lib.aw_reply_new_error(chosen_dialect, chosen_kind, raw, len(raw), out)
    )
