"""``Registry``: the conversation registry, which decides for each request whether it
resumes a parked agent session with only what is new, or starts fresh with the whole
conversation (always correct); with ``RegistryConfig``, its settings.

A :class:`~agentwire.Bridge` made by :meth:`Bridge.in_conversation
<agentwire.Bridge.in_conversation>` takes its place in a registry and gives it back with
:meth:`~agentwire.Bridge.end_conversation_turn`; an :class:`~agentwire.AcpConnection`
keeps a registry of its own (:attr:`AcpConfig.conversations
<agentwire.AcpConfig.conversations>`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Iterator, Optional, Tuple

from ._lib import DRAINED, Handle, check, copy_str
from ._native import ffi, lib
from .config import _Settings, _bool, _fields_of, _free_defaults, _int


class FreshReason(enum.IntEnum):
    """Why a request started a fresh agent session instead of resuming a parked one."""

    #: Conversations are turned off.
    DISABLED = lib.AW_FRESH_REASON_DISABLED
    #: No parked session of the request's owner and conversation key holds a prefix of its
    #: conversation (a new conversation, an edited or compacted history, a branch, another
    #: model or tool set, a side request, an expired or evicted session, a restart).
    NO_SESSION = lib.AW_FRESH_REASON_NO_SESSION
    #: The session holding its prefix is serving another request.
    BUSY = lib.AW_FRESH_REASON_BUSY
    #: The request adds nothing after the session's transcript (a retry, a regeneration).
    NOTHING_NEW = lib.AW_FRESH_REASON_NOTHING_NEW
    #: The session waits for the results of tool calls the request does not answer.
    UNANSWERED_CALLS = lib.AW_FRESH_REASON_UNANSWERED_CALLS
    #: The request carries a tool result for a call the session is not waiting for.
    UNKNOWN_RESULT = lib.AW_FRESH_REASON_UNKNOWN_RESULT
    #: The request adds an assistant message the agent did not write.
    FOREIGN_ANSWER = lib.AW_FRESH_REASON_FOREIGN_ANSWER


class RegistryConfig(_Settings):
    """Settings for :class:`Registry` and for an ACP connection's conversations, one typed
    attribute per field of the Rust ``RegistryConfig``.

    ``RegistryConfig()`` has the library's defaults. Every field is a keyword argument and
    an attribute, read and set through the library. Durations are milliseconds. What is
    made from a config copies it. Threads may share a config."""

    _free = lib.aw_registry_config_free
    _last_error = lib.aw_registry_config_last_error
    _what = "registry config"
    _c_prefix = "aw_registry_config"

    enabled = _bool(
        "Whether requests may resume parked sessions at all; when False every request starts "
        "fresh (FreshReason.DISABLED) and nothing is parked."
    )
    ttl_ms = _int(
        "uint64_t",
        "How long a parked session waits for its conversation's next request (a client's tool "
        "may run for minutes, and a person answering a permission prompt longer).",
    )
    max_parked = _int("size_t", "Parked sessions in all; the least recently used goes first.")
    max_parked_per_owner = _int(
        "size_t", "Parked sessions of one owner; that owner's least recently used goes first."
    )

    #: Every field's name, in declaration order.
    FIELDS: ClassVar[Tuple[str, ...]]

    def __init__(
        self,
        *,
        enabled: Optional[bool] = None,
        ttl_ms: Optional[int] = None,
        max_parked: Optional[int] = None,
        max_parked_per_owner: Optional[int] = None,
    ) -> None:
        """Every field is a keyword argument; one left out (or None) keeps the library's
        default. See each field's documentation."""
        self._set_given({k: v for k, v in locals().items() if k in self.FIELDS})

    @classmethod
    def _adopting(cls, ptr: Any) -> "RegistryConfig":
        """A config object owning the C handle ``ptr``."""
        config = cls.__new__(cls)
        config._adopt(ptr)
        return config


RegistryConfig.FIELDS = _fields_of(RegistryConfig)
_free_defaults()


@dataclass(frozen=True)
class RegistryStats:
    """What a registry has done so far."""

    #: Requests that resumed a parked session.
    resumed: int
    #: Requests refused: a Responses ``previous_response_id`` whose session is not here.
    refused: int
    #: Sessions let go because their time to live passed.
    expired: int
    #: Sessions let go to make room (the least recently used first).
    evicted: int
    #: Sessions let go because the request holding them did not end where its client's
    #: conversation is (a failure, a client gone), or another session replaced them.
    dropped: int
    #: Requests that started fresh, by reason.
    fresh: Dict[FreshReason, int] = field(default_factory=dict)


def _stats(stats: Any, fresh_count: Any) -> RegistryStats:
    """A RegistryStats from an ``aw_registry_stats`` and a reader of fresh counts."""
    return RegistryStats(
        resumed=int(stats.resumed),
        refused=int(stats.refused),
        expired=int(stats.expired),
        evicted=int(stats.evicted),
        dropped=int(stats.dropped),
        fresh={reason: fresh_count(reason) for reason in FreshReason},
    )


class Registry(Handle):
    """The parked agent sessions of one agent transport (a server that starts cursor-agent
    per request), and the decision, for each request, whether it continues one of them.

    A request resumes a parked session only when its owner (the key it authenticated with)
    and conversation key are the session's and the session's transcript is an exact prefix
    of its conversation; anything else starts fresh. Give each
    :meth:`Bridge.in_conversation <agentwire.Bridge.in_conversation>` this registry, and
    its place back with :meth:`~agentwire.Bridge.end_conversation_turn`. **After every
    input** (those, :meth:`handle_timeout`, :meth:`clear`) **drain** :meth:`released` (agent
    sessions no request will resume: chats to forget), then ask :meth:`poll_timeout` for
    the next deadline. Threads may share a registry: its calls run one at a time.

    Getters: :attr:`parked`, :attr:`busy`, :attr:`stats`."""

    _free = lib.aw_registry_free
    _last_error = lib.aw_registry_last_error
    _what = "registry"

    def __init__(self, config: Optional[RegistryConfig] = None) -> None:
        """An empty registry; ``config`` is copied (None for the defaults)."""
        if config is not None and not isinstance(config, RegistryConfig):
            raise TypeError(f"config must be a RegistryConfig, not {type(config).__name__}")
        out = ffi.new("aw_registry **")
        if config is None:
            check(lib.aw_registry_new(ffi.NULL, out))
        else:
            with config._lock:
                check(lib.aw_registry_new(config._handle(), out))
        self._adopt(out[0])

    # Getters.

    @property
    def parked(self) -> int:
        """Sessions parked, waiting for their conversation's next request."""
        out = ffi.new("size_t *")
        with self._lock:
            self._check(lib.aw_registry_parked(self._handle(), out))
        return int(out[0])

    @property
    def busy(self) -> int:
        """Sessions held by a bridge that has not given its place back."""
        out = ffi.new("size_t *")
        with self._lock:
            self._check(lib.aw_registry_busy(self._handle(), out))
        return int(out[0])

    @property
    def stats(self) -> RegistryStats:
        """What the registry has done so far."""
        out = ffi.new("aw_registry_stats *")
        count = ffi.new("uint64_t *")
        with self._lock:
            handle = self._handle()
            self._check(lib.aw_registry_get_stats(handle, out))

            def fresh(reason: FreshReason) -> int:
                self._check(lib.aw_registry_fresh(handle, reason, count))
                return int(count[0])

            return _stats(out[0], fresh)

    # Inputs.

    def handle_timeout(self, now_ms: int) -> None:
        """The deadline from :meth:`poll_timeout` passed: sessions idle for the time to
        live are let go. Early calls do nothing."""
        with self._lock:
            self._check(lib.aw_registry_handle_timeout(self._handle(), now_ms))

    def clear(self, now_ms: int) -> None:
        """Lets every parked session go and forgets the busy ones (a server shutting down,
        or conversations turned off); drain :meth:`released` after."""
        with self._lock:
            self._check(lib.aw_registry_clear(self._handle(), now_ms))

    # Outputs.

    def poll_released(self) -> Optional[str]:
        """The agent's own id of the next session the registry let go (a cursor-agent chat
        id), or None."""
        out = ffi.new("aw_str *")
        with self._lock:
            if self._check(lib.aw_registry_poll_released(self._handle(), out)) == DRAINED:
                return None
            return copy_str(out[0])

    def released(self) -> Iterator[str]:
        """Drains :meth:`poll_released`."""
        while True:
            session = self.poll_released()
            if session is None:
                return
            yield session

    def poll_timeout(self) -> Optional[int]:
        """When :meth:`handle_timeout` is next due (``now_ms`` clock), or None while nothing
        is parked."""
        has = ffi.new("bool *")
        deadline = ffi.new("uint64_t *")
        with self._lock:
            self._check(lib.aw_registry_poll_timeout(self._handle(), has, deadline))
        return int(deadline[0]) if has[0] else None

    def __repr__(self) -> str:
        if self.closed:
            return "Registry(<closed>)"
        return f"Registry(parked={self.parked}, busy={self.busy})"
