"""``Bridge``: one request's state machine, from its body (in the :class:`Dialect` of its
route) to the end of its HTTP response, with no I/O of its own."""

from __future__ import annotations

import enum
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Union

from ._lib import (
    DRAINED,
    NOT_AVAILABLE,
    REJECTED,
    BytesLike,
    Handle,
    c_len,
    check,
    choice,
    copy_bytes,
    copy_str,
    input_bytes,
    optional_key,
    optional_text,
)
from ._native import ffi, lib
from .config import Config
from .registry import Registry


class Dialect(enum.IntEnum):
    """The API a request speaks: the caller chooses it from the route the request came in
    on, never from the body.

    - ``CHAT_COMPLETIONS``: OpenAI Chat Completions, ``POST /v1/chat/completions``. The
      default.
    - ``RESPONSES``: OpenAI Responses, ``POST /v1/responses`` (what Codex speaks).
    - ``MESSAGES``: Anthropic Messages, ``POST /v1/messages`` with any query string (what
      Claude Code speaks); ``POST /v1/messages/count_tokens`` is
      :func:`~agentwire.count_tokens`, which needs no bridge.

    Wherever a dialect is taken, its name is too, in any case, with ``-`` or ``_``:
    ``"chat-completions"``, ``"responses"``, ``"messages"``."""

    #: OpenAI Chat Completions, ``POST /v1/chat/completions``. The default.
    CHAT_COMPLETIONS = lib.AW_DIALECT_CHAT_COMPLETIONS
    #: OpenAI Responses, ``POST /v1/responses`` (what Codex speaks).
    RESPONSES = lib.AW_DIALECT_RESPONSES
    #: Anthropic Messages, ``POST /v1/messages`` with any query string (what Claude Code
    #: speaks); ``POST /v1/messages/count_tokens`` is :func:`~agentwire.count_tokens`.
    MESSAGES = lib.AW_DIALECT_MESSAGES


@dataclass(frozen=True)
class Invocation:
    """The agent run to start: spawn ``[program, *args]`` in its own process group with
    ``env`` added to the environment, write ``stdin`` and close it."""

    program: str
    args: List[str]
    stdin: bytes
    env: Dict[str, str] = field(default_factory=dict)

    @property
    def argv(self) -> List[str]:
        """``[program, *args]``."""
        return [self.program, *self.args]


@dataclass(frozen=True)
class Head:
    """Send the response head (once, before any body)."""

    status: int
    content_type: str
    #: For errors, whether retrying may help: send it as ``x-should-retry``. None otherwise.
    retryable: Optional[bool] = None


class Body(bytes):
    """Write these bytes to the response body, and flush."""

    def __repr__(self) -> str:
        return f"Body({bytes(self)!r})"


@dataclass(frozen=True)
class StopAgent:
    """Terminate the agent's process group now."""


@dataclass(frozen=True)
class Respawn:
    """Start the agent again from :attr:`Bridge.invocation`, which now describes a new run,
    and feed its output and exit to the same bridge. Only a bridge made by
    :meth:`Bridge.in_conversation` asks for it, at most once, after the run it replaces was
    reported exited: the agent could not resume its chat, and the whole conversation goes
    to a fresh one before anything reached the client."""


@dataclass(frozen=True)
class End:
    """Close the response. Nothing follows."""


Output = Union[Head, Body, StopAgent, Respawn, End]

_STOP_AGENT = StopAgent()
_RESPAWN = Respawn()
_END = End()


def _output_of(out: Any) -> Output:
    """The output an ``aw_output`` holds, copied (call it before the next call on the
    handle that wrote it)."""
    kind = out.kind
    if kind == lib.AW_OUTPUT_KIND_HEAD:
        return Head(
            status=int(out.status),
            content_type=copy_str(out.content_type),
            retryable=bool(out.retryable) if out.has_retryable else None,
        )
    if kind == lib.AW_OUTPUT_KIND_BODY:
        return Body(copy_bytes(out.body))
    if kind == lib.AW_OUTPUT_KIND_STOP_AGENT:
        return _STOP_AGENT
    if kind == lib.AW_OUTPUT_KIND_RESPAWN:
        return _RESPAWN
    return _END


class Bridge(Handle):
    """One request, from its body to its HTTP response, in any :class:`Dialect`.

    Create it from the body and the dialect of its route; spawn :attr:`invocation` (None
    when the request was rejected), then feed the agent's output with :meth:`push_stdout`
    / :meth:`push_stderr`, its exit with :meth:`agent_exited`, deadlines with
    :meth:`handle_timeout` and a hang-up with :meth:`client_gone`. **After every input, drain** :meth:`outputs`, then
    ask :meth:`poll_timeout` for the next deadline. Time is ``now_ms`` on a monotonic
    millisecond clock of the caller's choice. Threads may share a bridge (a reader thread
    and a timer thread): its calls run one at a time.

    A request that may continue a conversation is :meth:`in_conversation`: its bridge may
    resume the agent's chat (``--resume``, only what is new on stdin), may ask for a
    :class:`Respawn`, and gives its place back with :meth:`end_conversation_turn`.
    """

    _free = lib.aw_bridge_free
    _last_error = lib.aw_bridge_last_error
    _what = "bridge"

    def __init__(
        self,
        body: BytesLike,
        config: Optional[Config] = None,
        *,
        now_ms: int = 0,
        created: Optional[int] = None,
        id_seed: Optional[int] = None,
        dialect: Union[Dialect, str] = Dialect.CHAT_COMPLETIONS,
    ) -> None:
        """``body`` is the request body, any bytes-like object; ``config`` the settings
        (copied; None for the defaults). ``created`` is the response's Unix time (default:
        now); ``id_seed`` a number unique to the request, from which ids derive (default:
        random). ``dialect`` is the API of the route the request came in on (a
        :class:`Dialect` or its name: ``"chat-completions"``, ``"responses"``,
        ``"messages"``); a body it cannot read is answered in its shape."""
        data = input_bytes(body, "body")
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        chosen = choice(Dialect, "dialect", dialect)
        created = int(time.time()) if created is None else created
        id_seed = secrets.randbits(63) if id_seed is None else id_seed
        out = ffi.new("aw_bridge **")
        if config is None:
            check(
                lib.aw_bridge_new(chosen, data, len(data), ffi.NULL, now_ms, created, id_seed, out)
            )
        else:
            with config._lock:
                check(
                    lib.aw_bridge_new(
                        chosen, data, len(data), config._handle(), now_ms, created, id_seed, out
                    )
                )
        self._adopt(out[0])
        with self._lock:
            self._invocation = self._read_invocation()

    @classmethod
    def in_conversation(
        cls,
        body: BytesLike,
        config: Optional[Config] = None,
        *,
        registry: Registry,
        owner_key: Union[bytes, str, None] = None,
        client_session: Optional[str] = None,
        client_agent: Optional[str] = None,
        caller_key: Optional[str] = None,
        now_ms: int = 0,
        created: Optional[int] = None,
        id_seed: Optional[int] = None,
        dialect: Union[Dialect, str] = Dialect.CHAT_COMPLETIONS,
    ) -> "Bridge":
        """A bridge for a request that may continue a conversation: ``registry`` decides
        whether it resumes the cursor-agent chat that answered the conversation so far
        (:attr:`invocation` then passes ``--resume`` and its stdin holds only what is new:
        the results of the chat's tool calls and the new input) or runs fresh with the
        whole conversation. A resumed chat the agent cannot continue is stopped
        (:class:`StopAgent`) and replaced by a fresh run (:class:`Respawn`), once, before
        anything reaches the client. Give the place back with
        :meth:`end_conversation_turn` once the response ended.

        ``owner_key`` is the key the request authenticated with (None: a request without
        one, on loopback): a session is only resumed by its owner. ``client_session`` and
        ``client_agent`` are a client's session and agent id headers (Claude Code's
        ``X-Claude-Code-Session-Id``, ``X-Claude-Code-Agent-Id``), ``caller_key`` a key the
        program gives the conversation; None when absent. The rest is as for
        :class:`Bridge`."""
        data = input_bytes(body, "body")
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        if not isinstance(registry, Registry):
            raise TypeError(f"registry must be a Registry, not {type(registry).__name__}")
        chosen = choice(Dialect, "dialect", dialect)
        created = int(time.time()) if created is None else created
        id_seed = secrets.randbits(63) if id_seed is None else id_seed
        keys = [
            optional_key(owner_key, "owner_key"),
            optional_text(client_session, "client_session"),
            optional_text(client_agent, "client_agent"),
            optional_text(caller_key, "caller_key"),
        ]
        key_args = [arg for key in keys for arg in (key, c_len(key))]
        out = ffi.new("aw_bridge **")
        self = cls.__new__(cls)
        with registry._lock:
            if config is None:
                check(
                    lib.aw_bridge_new_in_conversation(
                        chosen, data, len(data), ffi.NULL, now_ms, created, id_seed,
                        registry._handle(), *key_args, out,
                    )
                )
            else:
                with config._lock:
                    check(
                        lib.aw_bridge_new_in_conversation(
                            chosen, data, len(data), config._handle(), now_ms, created,
                            id_seed, registry._handle(), *key_args, out,
                        )
                    )
        self._adopt(out[0])
        with self._lock:
            self._invocation = self._read_invocation()
        return self

    def _read_invocation(self) -> Optional[Invocation]:
        ptr = self._ptr
        view = ffi.new("aw_str *")
        if self._check(lib.aw_bridge_invocation_program(ptr, view)) == REJECTED:
            return None
        program = copy_str(view[0])
        count = ffi.new("size_t *")
        self._check(lib.aw_bridge_invocation_arg_count(ptr, count))
        args = []
        for i in range(count[0]):
            self._check(lib.aw_bridge_invocation_arg(ptr, i, view))
            args.append(copy_str(view[0]))
        stdin = ffi.new("aw_bytes *")
        self._check(lib.aw_bridge_invocation_stdin(ptr, stdin))
        self._check(lib.aw_bridge_invocation_env_count(ptr, count))
        env = {}
        value = ffi.new("aw_str *")
        for i in range(count[0]):
            self._check(lib.aw_bridge_invocation_env(ptr, i, view, value))
            env[copy_str(view[0])] = copy_str(value[0])
        return Invocation(program, args, copy_bytes(stdin[0]), env)

    # Getters.

    @property
    def invocation(self) -> Optional[Invocation]:
        """The agent run to start (program, arguments, stdin, environment), or None when
        the request was rejected: then start nothing and drain :meth:`outputs` (the 400
        head, the dialect's error body, the end). When a resumed run the agent could not
        continue is replaced (from its :meth:`agent_exited` on, a :class:`Respawn` follows),
        it is the fresh run's."""
        with self._lock:
            return self._invocation

    @property
    def is_stream(self) -> bool:
        """Whether the response is a stream (``text/event-stream``)."""
        with self._lock:
            return bool(lib.aw_bridge_is_stream(self._handle()))

    @property
    def is_ended(self) -> bool:
        """Whether :class:`End` was handed out."""
        with self._lock:
            return bool(lib.aw_bridge_is_ended(self._handle()))

    @property
    def session_id(self) -> Optional[str]:
        """The agent's session (chat) id once seen, for ``--resume``."""
        view = ffi.new("aw_str *")
        with self._lock:
            if self._check(lib.aw_bridge_session_id(self._handle(), view)) == NOT_AVAILABLE:
                return None
            return copy_str(view[0])

    # Inputs.

    def push_stdout(self, data: BytesLike, now_ms: int) -> None:
        """Bytes the agent wrote to stdout (any bytes-like object), in any chunking."""
        buf = input_bytes(data, "data")
        with self._lock:
            self._check(lib.aw_bridge_push_stdout(self._handle(), buf, len(buf), now_ms))

    def push_stderr(self, data: BytesLike, now_ms: int) -> None:
        """Bytes the agent wrote to stderr (any bytes-like object), in any chunking (only
        the tail is kept)."""
        buf = input_bytes(data, "data")
        with self._lock:
            self._check(lib.aw_bridge_push_stderr(self._handle(), buf, len(buf), now_ms))

    def agent_exited(
        self, *, code: Optional[int] = None, signal: Optional[int] = None, now_ms: int
    ) -> None:
        """The agent exited with ``code``, or was ended by ``signal`` (exactly one). Call it
        after its stdout and stderr were read to their end and pushed."""
        if (code is None) == (signal is None):
            raise TypeError("agent_exited takes exactly one of code= and signal=")
        with self._lock:
            if code is not None:
                self._check(lib.aw_bridge_agent_exited_code(self._handle(), code, now_ms))
            else:
                self._check(lib.aw_bridge_agent_exited_signal(self._handle(), signal, now_ms))
            if self._invocation is not None and "--resume" in self._invocation.args:
                # A resumed run the agent could not continue is replaced by a fresh one
                # here (a Respawn follows): the invocation is the new run's from now on.
                self._invocation = self._read_invocation()

    def handle_timeout(self, now_ms: int) -> None:
        """The deadline from :meth:`poll_timeout` passed. Early calls do nothing."""
        with self._lock:
            self._check(lib.aw_bridge_handle_timeout(self._handle(), now_ms))

    def client_gone(self, now_ms: int) -> None:
        """The HTTP client hung up: stop the agent, end without writing more."""
        with self._lock:
            self._check(lib.aw_bridge_client_gone(self._handle(), now_ms))

    def shutdown(self, now_ms: int) -> None:
        """The program is shutting down: the response ends as a failure the client may
        retry (503 before the head, the dialect's in-band error and end after it), and the
        agent is to be stopped."""
        with self._lock:
            self._check(lib.aw_bridge_shutdown(self._handle(), now_ms))

    def end_conversation_turn(self, registry: Registry, now_ms: int) -> None:
        """Gives the bridge's place in its conversation back to ``registry``, the one it
        was made in (else :class:`~agentwire.WrongRegistryError`): the chat parks for the
        conversation's next request when the answer finished and reached the client;
        otherwise it is let go. Call it once the response ended (earlier, it counts as a
        response that did not finish); then drain ``registry.released()``. It does nothing
        for a bridge not made by :meth:`in_conversation`, and the second time."""
        if not isinstance(registry, Registry):
            raise TypeError(f"registry must be a Registry, not {type(registry).__name__}")
        with self._lock:
            handle = self._handle()
            with registry._lock:
                self._check(
                    lib.aw_bridge_end_conversation_turn(handle, registry._handle(), now_ms)
                )

    # Outputs.

    def poll_output(self) -> Optional[Output]:
        """The next thing to do, or None until the next input."""
        out = ffi.new("aw_output *")
        with self._lock:
            if self._check(lib.aw_bridge_poll_output(self._handle(), out)) == DRAINED:
                return None
            # Copied under the lock: the view lasts until the next call on the bridge.
            return _output_of(out)

    def outputs(self) -> Iterator[Output]:
        """Drains the outputs: iterate it to the end after every input."""
        while True:
            output = self.poll_output()
            if output is None:
                return
            yield output

    def poll_timeout(self) -> Optional[int]:
        """When :meth:`handle_timeout` is next due (``now_ms`` clock), or None."""
        has = ffi.new("bool *")
        deadline = ffi.new("uint64_t *")
        with self._lock:
            self._check(lib.aw_bridge_poll_timeout(self._handle(), has, deadline))
        return int(deadline[0]) if has[0] else None

    def __repr__(self) -> str:
        if self.closed:
            return "Bridge(<closed>)"
        return f"Bridge(stream={self.is_stream}, ended={self.is_ended})"
