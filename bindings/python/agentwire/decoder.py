"""``Decoder``: cursor-agent stdout to typed events, for plugins that render the answer
themselves and need no HTTP."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

from ._lib import DRAINED, NOT_AVAILABLE, BytesLike, Handle, check, copy_str, input_bytes
from ._native import ffi, lib
from .config import Config



class ActivityPhase(enum.IntEnum):
    STARTED = lib.AW_ACTIVITY_PHASE_STARTED
    COMPLETED = lib.AW_ACTIVITY_PHASE_COMPLETED


class ToolOutcome(enum.IntEnum):
    SUCCESS = lib.AW_TOOL_OUTCOME_SUCCESS
    REJECTED = lib.AW_TOOL_OUTCOME_REJECTED
    ERROR = lib.AW_TOOL_OUTCOME_ERROR
    PERMISSION_DENIED = lib.AW_TOOL_OUTCOME_PERMISSION_DENIED
    UNKNOWN = lib.AW_TOOL_OUTCOME_UNKNOWN


class ProgressKind(enum.IntEnum):
    RECONNECTING = lib.AW_PROGRESS_KIND_RECONNECTING
    RECONNECTED = lib.AW_PROGRESS_KIND_RECONNECTED
    RETRYING = lib.AW_PROGRESS_KIND_RETRYING


class FinishReason(enum.IntEnum):
    STOP = lib.AW_FINISH_REASON_STOP
    LENGTH = lib.AW_FINISH_REASON_LENGTH
    TOOL_CALLS = lib.AW_FINISH_REASON_TOOL_CALLS
    CONTENT_FILTER = lib.AW_FINISH_REASON_CONTENT_FILTER


class FailureKind(enum.IntEnum):
    INVALID_REQUEST = lib.AW_FAILURE_KIND_INVALID_REQUEST
    NOT_AUTHENTICATED = lib.AW_FAILURE_KIND_NOT_AUTHENTICATED
    MODEL_UNAVAILABLE = lib.AW_FAILURE_KIND_MODEL_UNAVAILABLE
    RATE_LIMITED = lib.AW_FAILURE_KIND_RATE_LIMITED
    MISCONFIGURED = lib.AW_FAILURE_KIND_MISCONFIGURED
    UNAVAILABLE = lib.AW_FAILURE_KIND_UNAVAILABLE
    TIMEOUT = lib.AW_FAILURE_KIND_TIMEOUT
    AGENT_ERROR = lib.AW_FAILURE_KIND_AGENT_ERROR
    AGENT_CRASHED = lib.AW_FAILURE_KIND_AGENT_CRASHED
    BAD_OUTPUT = lib.AW_FAILURE_KIND_BAD_OUTPUT


@dataclass(frozen=True)
class TextDelta:
    """Answer text, in order; concatenated, the deltas are the answer exactly once."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """Model reasoning ("thinking") text."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """A call of one of the client's tools, for the client to execute."""

    index: int
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class AgentActivity:
    """A tool the agent ran (or tried to run) itself: never for the client to execute."""

    call_id: str
    tool: str
    phase: ActivityPhase
    #: How it ended (None while started).
    outcome: Optional[ToolOutcome]
    #: Completed: whether its start was seen.
    started_seen: bool
    summary: str
    arguments: Optional[str]
    model_call_id: Optional[str]


@dataclass(frozen=True)
class Progress:
    """The agent is alive but not answering yet."""

    kind: ProgressKind
    #: Reconnecting, retrying: the attempt from 1; 0 otherwise.
    attempt: int


@dataclass(frozen=True)
class Usage:
    """Token usage (and cost) as the agent reported it; never estimated."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: Optional[int]
    cost: Optional[float]
    prompt_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class Finish:
    """The answer is complete."""

    reason: FinishReason


@dataclass(frozen=True)
class Failed:
    """The answer failed; no finish follows."""

    kind: FailureKind
    message: str


Event = Union[TextDelta, ReasoningDelta, ToolCall, AgentActivity, Progress, Usage, Finish, Failed]


@dataclass(frozen=True)
class DecoderStats:
    """Counters over everything a decoder decoded so far."""

    lines: int
    unknown: int
    non_json: int
    bad_lines: int
    recaps: int
    reconciled: int
    divergences: int
    results: int


def _optional_text(has: Any, view: Any) -> Optional[str]:
    return copy_str(view) if has else None


def _event(e: Any) -> Event:
    kind = e.kind
    if kind == lib.AW_EVENT_KIND_TEXT_DELTA:
        return TextDelta(copy_str(e.text))
    if kind == lib.AW_EVENT_KIND_REASONING_DELTA:
        return ReasoningDelta(copy_str(e.text))
    if kind == lib.AW_EVENT_KIND_TOOL_CALL:
        c = e.tool_call
        return ToolCall(c.index, copy_str(c.id), copy_str(c.name), copy_str(c.arguments))
    if kind == lib.AW_EVENT_KIND_AGENT_ACTIVITY:
        a = e.activity
        phase = ActivityPhase(a.phase)
        return AgentActivity(
            call_id=copy_str(a.call_id),
            tool=copy_str(a.tool),
            phase=phase,
            outcome=ToolOutcome(a.outcome) if phase == ActivityPhase.COMPLETED else None,
            started_seen=bool(a.started_seen),
            summary=copy_str(a.summary),
            arguments=_optional_text(a.has_arguments, a.arguments),
            model_call_id=_optional_text(a.has_model_call_id, a.model_call_id),
        )
    if kind == lib.AW_EVENT_KIND_PROGRESS:
        return Progress(ProgressKind(e.progress.kind), e.progress.attempt)
    if kind == lib.AW_EVENT_KIND_USAGE:
        u = e.usage
        return Usage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens,
            reasoning_tokens=u.reasoning_tokens if u.has_reasoning_tokens else None,
            cost=u.cost if u.has_cost else None,
            prompt_tokens=u.prompt_tokens,
            total_tokens=u.total_tokens,
        )
    if kind == lib.AW_EVENT_KIND_FINISH:
        return Finish(FinishReason(e.finish_reason))
    return Failed(FailureKind(e.failure.kind), copy_str(e.failure.message))


class Decoder(Handle):
    """Decodes cursor-agent ``--output-format stream-json`` stdout into typed events.

    Feed every read with :meth:`push_stdout` and the end with :meth:`push_eof`; **after
    each, drain** :meth:`events`. Threads may share a decoder: its calls run one at a
    time.
    """

    _free = lib.aw_decoder_free
    _last_error = lib.aw_decoder_last_error
    _what = "decoder"

    def __init__(self, config: Optional[Config] = None) -> None:
        """Only ``config``'s decoder limits are used (None for the defaults)."""
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        out = ffi.new("aw_decoder **")
        if config is None:
            check(lib.aw_decoder_new(ffi.NULL, out))
        else:
            with config._lock:
                check(lib.aw_decoder_new(config._handle(), out))
        self._adopt(out[0])
        self._event = ffi.new("aw_event *")

    def push_stdout(self, data: BytesLike) -> None:
        """Stdout bytes (any bytes-like object), in any chunking."""
        buf = input_bytes(data, "data")
        with self._lock:
            self._check(lib.aw_decoder_push_stdout(self._handle(), buf, len(buf)))

    def push_eof(self) -> None:
        """Stdout ended. Calling it again does nothing."""
        with self._lock:
            self._check(lib.aw_decoder_push_eof(self._handle()))

    def poll_event(self) -> Optional[Event]:
        """The next event, or None until the next input."""
        with self._lock:
            if self._check(lib.aw_decoder_poll_event(self._handle(), self._event)) == DRAINED:
                return None
            # Copied under the lock: the event's strings last until the next call.
            return _event(self._event)

    def events(self) -> Iterator[Event]:
        """Drains the events: iterate it to the end after every input."""
        while True:
            event = self.poll_event()
            if event is None:
                return
            yield event

    @property
    def stats(self) -> DecoderStats:
        """Counters over everything decoded so far."""
        out = ffi.new("aw_decoder_stats *")
        with self._lock:
            self._check(lib.aw_decoder_get_stats(self._handle(), out))
        s = out[0]
        return DecoderStats(
            s.lines, s.unknown, s.non_json, s.bad_lines, s.recaps, s.reconciled,
            s.divergences, s.results,
        )

    @property
    def session_id(self) -> Optional[str]:
        """The agent's session (chat) id, once an event carried one."""
        view = ffi.new("aw_str *")
        with self._lock:
            if self._check(lib.aw_decoder_session_id(self._handle(), view)) == NOT_AVAILABLE:
                return None
            return copy_str(view[0])

    @property
    def model(self) -> Optional[str]:
        """The model's display name from the agent's ``system/init`` event."""
        view = ffi.new("aw_str *")
        with self._lock:
            if self._check(lib.aw_decoder_model(self._handle(), view)) == NOT_AVAILABLE:
                return None
            return copy_str(view[0])

    @property
    def is_finished(self) -> bool:
        """Whether :meth:`push_eof` was called and every event was polled."""
        with self._lock:
            return bool(lib.aw_decoder_is_finished(self._handle()))
