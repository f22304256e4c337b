"""``AcpConnection``: one warm ACP agent process (JSON-RPC 2.0 over its stdio: ``gemini
--acp``, ``claude-agent-acp``, ``codex-acp``, ...) serving many requests, each a turn on a
fresh session whose outputs are a :class:`~agentwire.Bridge`'s; with ``AcpConfig``, its
settings. No I/O of its own: the caller spawns the agent, writes what
:meth:`AcpConnection.transmits` gives to its stdin, and pushes what it writes."""

from __future__ import annotations

import enum
import os
import secrets
import time
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from ._lib import (
    DRAINED,
    NOT_AVAILABLE,
    BytesLike,
    Handle,
    c_len,
    check,
    choice,
    copy_bytes,
    copy_str,
    encode,
    input_bytes,
    optional_key,
    optional_text,
)
from ._native import ffi, lib
from .bridge import Dialect, Output, _output_of
from .config import (
    Config,
    _Settings,
    _enum,
    _int,
    _optional_string,
    _string,
    _fields_of,
    _free_defaults,
)
from .mcp import McpConfig, McpExchange, McpOutput, McpRequest, _mcp_output_of
from .registry import FreshReason, RegistryConfig, RegistryStats, _stats


class PermissionChoice(enum.IntEnum):
    """How the agent's permission requests are answered: by the offered option's kind,
    never its id; ``allow_always`` is never chosen. An :class:`AcpConfig` also takes the
    names ``"allow_once"`` (or ``"allow-once"``) and ``"reject_once"``."""

    #: Select the option of kind ``allow_once``: the agent runs the tool this once. The
    #: default.
    ALLOW_ONCE = lib.AW_PERMISSION_CHOICE_ALLOW_ONCE
    #: Select the option of kind ``reject_once``.
    REJECT_ONCE = lib.AW_PERMISSION_CHOICE_REJECT_ONCE


class NativeTools(enum.IntEnum):
    """Whether the agent's own tools (its shell, file edits, web search, ...) are offered to
    its model; the client's tools, given as an MCP server, are offered either way. An
    :class:`AcpConfig` also takes the names ``"keep"`` and ``"off"``."""

    #: Kept, except in sessions given the client's tools by an agent that turns them off
    #: per session (claude-agent-acp). The default.
    KEEP = lib.AW_NATIVE_TOOLS_KEEP
    #: Off in every session: per session where the agent takes that (claude-agent-acp),
    #: and at launch where only its configuration can (codex-acp, Gemini CLI): start the
    #: agent as :func:`launch_without_native_tools` says.
    OFF = lib.AW_NATIVE_TOOLS_OFF


class AcpConfig(_Settings):
    """Settings for :class:`AcpConnection`, one typed attribute per field of the Rust
    ``AcpConfig`` a program sets (answers to other agent requests are always "method not
    found", and ``auto`` and ``default`` always name the agent's default model).

    ``AcpConfig()`` has the library's defaults. Every field is a keyword argument and an
    attribute, read and set through the library, which refuses bad values with
    :class:`~agentwire.InvalidInputError` or :class:`~agentwire.MisuseError` (a wrong type
    is a :class:`TypeError`). Durations are milliseconds, sizes bytes. A connection copies
    its config when created. Threads may share a config.
    """

    _free = lib.aw_acp_config_free
    _last_error = lib.aw_acp_config_last_error
    _what = "ACP config"
    _c_prefix = "aw_acp_config"

    cwd = _string(
        "The working directory sessions are created in (``session/new``'s ``cwd``; ACP "
        "wants an absolute path)."
    )
    client_name = _string("``clientInfo.name`` in ``initialize``.")
    client_version = _string("``clientInfo.version`` in ``initialize``.")
    permission = _enum(
        PermissionChoice,
        "aw_permission_choice",
        "How permission requests are answered (a PermissionChoice).",
    )
    native_tools = _enum(
        NativeTools,
        "aw_native_tools",
        "Whether the agent's own tools are offered to its model (a NativeTools). With "
        "``off``, start a codex-acp or Gemini CLI agent as "
        ":func:`launch_without_native_tools` says.",
    )
    pool_size = _int(
        "size_t",
        "Fresh sessions kept ready ahead of need, to hide ``session/new``'s latency (0: "
        "sessions are created on demand).",
    )
    max_concurrent_prompts = _int("size_t", "Prompts running at once; more wait in a queue.")
    queue_timeout_ms = _int(
        "uint64_t", "How long a request may wait in that queue before it fails with 503."
    )
    initialize_timeout_ms = _int("uint64_t", "The deadline for the ``initialize`` answer.")
    new_session_timeout_ms = _int("uint64_t", "The deadline for a ``session/new`` answer.")
    set_model_timeout_ms = _int(
        "uint64_t",
        "The deadline for a ``session/set_config_option`` or ``session/set_model`` answer.",
    )
    cancel_timeout_ms = _int(
        "uint64_t",
        "How long a cancelled prompt may take to end before its session is given up.",
    )
    turn_output_budget = _int(
        "size_t",
        "Response bytes a turn may hold that the caller has not taken yet; a turn over it is "
        "cancelled with a clear error, so that one slow client never stops the agent's "
        "stdout, which every session shares.",
    )
    max_line_len = _int("size_t", "The longest agent stdout line accepted.")
    stderr_tail_bytes = _int("size_t", "Bytes of the agent's stderr kept for failure messages.")
    mcp_endpoint = _optional_string(
        "Where the program serves the MCP endpoint of client-tool sessions, on loopback: the "
        "URL a session's server path is appended to (``http://127.0.0.1:PORT/mcp/``). With "
        "it, a conversation turn's client tools reach the agent as an MCP server of their own "
        "session (:meth:`AcpConnection.handle_mcp`); without it (None), a request with "
        "client tools is refused (400 naming ``tools``)."
    )
    mcp_server_name = _string(
        "The MCP server's name in ``session/new``, which the agent puts in the tool names its "
        "model sees (``mcp__client__read`` for Claude)."
    )

    @property
    def mcp(self) -> McpConfig:
        """The settings of the sessions' MCP servers (keep-alive, call limit, body and
        exchange limits), as a copy: change it and assign it back. Default: McpConfig()
        (a keep-alive every 15 s; each agent's own call limit where it is known)."""
        out = ffi.new("aw_mcp_config **")
        with self._lock:
            self._check(lib.aw_acp_config_get_mcp(self._handle(), out))
        return McpConfig._adopting(out[0])

    @mcp.setter
    def mcp(self, value: McpConfig) -> None:
        if not isinstance(value, McpConfig):
            raise TypeError(f"mcp must be an McpConfig, not {type(value).__name__}")
        with self._lock:
            handle = self._handle()
            with value._lock:
                self._check(lib.aw_acp_config_set_mcp(handle, value._handle()))

    @property
    def conversations(self) -> RegistryConfig:
        """The settings of the connection's conversations registry, as a copy: change it
        and assign it back. Default: RegistryConfig(max_parked=16, max_parked_per_owner=8)
        (a parked ACP session is kept by the agent)."""
        out = ffi.new("aw_registry_config **")
        with self._lock:
            self._check(lib.aw_acp_config_get_conversations(self._handle(), out))
        return RegistryConfig._adopting(out[0])

    @conversations.setter
    def conversations(self, value: RegistryConfig) -> None:
        if not isinstance(value, RegistryConfig):
            raise TypeError(f"conversations must be a RegistryConfig, not {type(value).__name__}")
        with self._lock:
            handle = self._handle()
            with value._lock:
                self._check(lib.aw_acp_config_set_conversations(handle, value._handle()))

    def __init__(
        self,
        *,
        cwd: Optional[str] = None,
        client_name: Optional[str] = None,
        client_version: Optional[str] = None,
        permission: Union[PermissionChoice, str, None] = None,
        native_tools: Union[NativeTools, str, None] = None,
        pool_size: Optional[int] = None,
        max_concurrent_prompts: Optional[int] = None,
        queue_timeout_ms: Optional[int] = None,
        initialize_timeout_ms: Optional[int] = None,
        new_session_timeout_ms: Optional[int] = None,
        set_model_timeout_ms: Optional[int] = None,
        cancel_timeout_ms: Optional[int] = None,
        turn_output_budget: Optional[int] = None,
        max_line_len: Optional[int] = None,
        stderr_tail_bytes: Optional[int] = None,
        mcp_endpoint: Optional[str] = None,
        mcp_server_name: Optional[str] = None,
        mcp: Optional[McpConfig] = None,
        conversations: Optional[RegistryConfig] = None,
    ) -> None:
        """Every field is a keyword argument; one left out (or None) keeps the library's
        default. See each field's documentation."""
        self._set_given({k: v for k, v in locals().items() if k in self.FIELDS})


# The nested settings are fields too: set through the constructor, shown by repr().
AcpConfig.FIELDS = _fields_of(AcpConfig) + ("mcp", "conversations")
_free_defaults()


@dataclass(frozen=True)
class LaunchFile:
    """A file of the program's own the agent reads: write :attr:`contents` to a file named
    :attr:`name` in a private directory of the program's own, append :attr:`flag` and the
    file's path to the agent's arguments, then :attr:`after`, and remove the file when the
    agent is stopped for good."""

    #: The file's name (the agent may read it by its extension).
    name: str
    #: What the file holds.
    contents: str
    #: The flag that names the file to the agent.
    flag: str
    #: Arguments to append after the file's path, in order.
    after: Tuple[str, ...]


@dataclass(frozen=True)
class AgentLaunch:
    """What to add to an ACP agent's launch so that its own tools are off (made by
    :func:`launch_without_native_tools`): :attr:`args` to append to its command line and,
    for some agents, a :attr:`file` to write and name on the command line after them."""

    #: Arguments to append to the agent's command line, in order.
    args: Tuple[str, ...]
    #: A file to write and name on the command line after :attr:`args`; None for an agent
    #: that needs none.
    file: Optional[LaunchFile]


class _Launch(Handle):
    """An ``aw_acp_launch``, read whole into an :class:`AgentLaunch`."""

    _free = lib.aw_acp_launch_free
    _last_error = lib.aw_acp_launch_last_error
    _what = "agent launch"

    def __init__(self, program: str, args: Sequence[str], env: Optional[Mapping[str, str]]) -> None:
        if not isinstance(program, str):
            raise TypeError(f"program must be a str, not {type(program).__name__}")
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise TypeError("args must be a sequence of str")
        # The strings stay alive (referenced here) for the length of the call.
        strings = [ffi.new("char[]", encode(a)) for a in args]
        argv = ffi.new("const char *[]", strings) if strings else ffi.NULL
        envp: Any = ffi.NULL
        if env is not None:
            entries = []
            for name, value in env.items():
                if not isinstance(name, str) or not isinstance(value, str):
                    raise TypeError("env must map str to str")
                entries.append(ffi.new("char[]", encode(f"{name}={value}")))
            envp = ffi.new("const char *[]", entries + [ffi.NULL])
        out = ffi.new("aw_acp_launch **")
        check(lib.aw_acp_launch_new(encode(program), argv, len(strings), envp, out))
        self._adopt(out[0])

    def read(self) -> AgentLaunch:
        count = ffi.new("size_t *")
        view = ffi.new("aw_str *")
        with self._lock:
            ptr = self._handle()

            def string(getter: Any, *index: int) -> str:
                self._check(getter(ptr, *index, view))
                return copy_str(view)

            self._check(lib.aw_acp_launch_arg_count(ptr, count))
            args = tuple(string(lib.aw_acp_launch_arg, i) for i in range(count[0]))
            file = None
            if lib.aw_acp_launch_has_file(ptr):
                self._check(lib.aw_acp_launch_file_after_count(ptr, count))
                file = LaunchFile(
                    name=string(lib.aw_acp_launch_file_name),
                    contents=string(lib.aw_acp_launch_file_contents),
                    flag=string(lib.aw_acp_launch_file_flag),
                    after=tuple(string(lib.aw_acp_launch_file_after, i) for i in range(count[0])),
                )
            return AgentLaunch(args, file)


def launch_without_native_tools(
    program: str, args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None
) -> AgentLaunch:
    """What to add to the launch of the ACP agent ``program`` ``args`` so that its own
    tools are off (:attr:`NativeTools.OFF`). The agent is recognised by the file name of
    its program or of an argument (as in ``npx @zed-industries/codex-acp``):
    claude-agent-acp (nothing to add), codex-acp (``-c`` overrides), ``gemini --acp`` (a
    ``--policy`` file, then the user's own policies directory). ``env`` is the environment
    the agent will get (read for ``GEMINI_CLI_HOME`` or else ``HOME``); None for this
    process's (``os.environ``), which it then inherits.

    Raises :class:`~agentwire.UnknownAgentError` for an agent agentwire knows no way to
    turn the tools of (cursor-agent among them), :class:`~agentwire.InvalidUtf8Error`, or
    TypeError for arguments of the wrong type."""
    launch = _Launch(program, args, env)
    try:
        return launch.read()
    finally:
        launch.close()


@dataclass(frozen=True)
class Restart:
    """Kill the agent's process group and start a new agent process with a new
    :class:`AcpConnection`: this one serves nothing more."""

    #: Why, for logs.
    reason: str


#: A connection-level decision (only :class:`Restart` today).
Decision = Restart


class AcpConnection(Handle):
    """One ACP agent process serving many requests, each a turn numbered from 0.

    Spawn the agent once (in its own process group), create the connection, then for every
    input — :meth:`start_turn` per request, :meth:`push_stdout`, :meth:`push_stderr`,
    :meth:`agent_exited`, :meth:`handle_timeout`, :meth:`client_gone`, :meth:`shutdown` —
    **drain** :meth:`transmits` (write them to the agent's stdin), :meth:`decisions`
    (:class:`Restart`), and :meth:`outputs` of every turn :meth:`ready_turns` names; then
    ask :meth:`poll_timeout` for the next deadline. A turn's outputs are a
    :class:`~agentwire.Bridge`'s (:class:`~agentwire.Head`, :class:`~agentwire.Body`,
    :class:`~agentwire.End`), never :class:`~agentwire.StopAgent`: a turn that must stop
    has its session cancelled instead. Time is ``now_ms`` on a monotonic millisecond clock
    of the caller's choice. Threads may share a connection: its calls run one at a time.

    Conversations: :meth:`start_conversation_turn` resumes the parked session holding a
    request's conversation so far, and with :attr:`AcpConfig.mcp_endpoint` gives the
    request's client tools to the agent as an MCP server of the session's own. The program
    then serves that endpoint on loopback: each HTTP request under it goes to
    :meth:`handle_mcp`, and after every input it also drains :meth:`mcp_outputs` of every
    exchange :meth:`mcp_ready` names, writing them to that request's HTTP response; a
    connection that closes first is :meth:`mcp_exchange_gone`.

    Getters: :attr:`is_ready`, :attr:`is_dead`, :attr:`active_turns`,
    :attr:`malformed_lines`, :attr:`models`, :attr:`current_model`,
    :attr:`parked_sessions`, :attr:`conversation_stats`.
    """

    _free = lib.aw_acp_connection_free
    _last_error = lib.aw_acp_connection_last_error
    _what = "ACP connection"

    def __init__(self, config: Optional[AcpConfig] = None, *, now_ms: int = 0) -> None:
        """A connection to a just-spawned agent: its first transmit is ``initialize``.
        ``config`` is copied (None for the defaults)."""
        if config is not None and not isinstance(config, AcpConfig):
            raise TypeError(f"config must be an AcpConfig, not {type(config).__name__}")
        out = ffi.new("aw_acp_connection **")
        if config is None:
            check(lib.aw_acp_connection_new(ffi.NULL, now_ms, out))
        else:
            with config._lock:
                check(lib.aw_acp_connection_new(config._handle(), now_ms, out))
        self._adopt(out[0])

    # Getters.

    @property
    def is_ready(self) -> bool:
        """Whether the handshake succeeded and the agent is serving."""
        with self._lock:
            return bool(lib.aw_acp_connection_is_ready(self._handle()))

    @property
    def is_dead(self) -> bool:
        """Whether the connection serves nothing more (the handshake failed, the agent
        exited, or a restart was decided)."""
        with self._lock:
            return bool(lib.aw_acp_connection_is_dead(self._handle()))

    @property
    def active_turns(self) -> int:
        """How many turns have a response that has not ended yet."""
        out = ffi.new("size_t *")
        with self._lock:
            self._check(lib.aw_acp_connection_active_turns(self._handle(), out))
        return int(out[0])

    @property
    def malformed_lines(self) -> int:
        """How many agent stdout lines were not JSON-RPC (ignored)."""
        out = ffi.new("uint64_t *")
        with self._lock:
            self._check(lib.aw_acp_connection_malformed_lines(self._handle(), out))
        return int(out[0])

    @property
    def models(self) -> Optional[List[str]]:
        """The model ids the agent offers (from its latest ``session/new`` answer), in its
        order; None until a session was created; empty when the agent lists none (then
        only its default is served)."""
        count = ffi.new("size_t *")
        view = ffi.new("aw_str *")
        with self._lock:
            handle = self._handle()
            if self._check(lib.aw_acp_connection_model_count(handle, count)) == NOT_AVAILABLE:
                return None
            models = []
            for i in range(count[0]):
                self._check(lib.aw_acp_connection_model(handle, i, view))
                models.append(copy_str(view[0]))
            return models

    @property
    def current_model(self) -> Optional[str]:
        """The model a fresh session uses unless told otherwise, when the agent says."""
        view = ffi.new("aw_str *")
        with self._lock:
            handle = self._handle()
            if self._check(lib.aw_acp_connection_current_model(handle, view)) == NOT_AVAILABLE:
                return None
            return copy_str(view[0])

    @property
    def parked_sessions(self) -> int:
        """Sessions parked, waiting for their conversation's next request."""
        out = ffi.new("size_t *")
        with self._lock:
            self._check(lib.aw_acp_connection_parked_sessions(self._handle(), out))
        return int(out[0])

    @property
    def conversation_stats(self) -> RegistryStats:
        """What the connection's conversations registry has done so far."""
        out = ffi.new("aw_registry_stats *")
        count = ffi.new("uint64_t *")
        with self._lock:
            handle = self._handle()
            self._check(lib.aw_acp_connection_conversation_stats(handle, out))

            def fresh(reason: FreshReason) -> int:
                self._check(lib.aw_acp_connection_conversation_fresh(handle, reason, count))
                return int(count[0])

            return _stats(out[0], fresh)

    # Inputs.

    def start_turn(
        self,
        body: BytesLike,
        config: Optional[Config] = None,
        *,
        now_ms: int,
        created: Optional[int] = None,
        id_seed: Optional[int] = None,
        dialect: Union[Dialect, str] = Dialect.CHAT_COMPLETIONS,
    ) -> int:
        """A client request: validated and answered as a :class:`~agentwire.Bridge`
        would, then queued for a session; returns the turn's number. A body that cannot be
        served (invalid, or with client ``tools``, which the agent cannot call) is not an
        exception: the turn's outputs are the error head, body and end. ``config`` holds the
        request's settings (copied; None for the defaults); ``created``, ``id_seed`` and
        ``dialect`` are as for a :class:`~agentwire.Bridge`."""
        data = input_bytes(body, "body")
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        chosen = choice(Dialect, "dialect", dialect)
        created = int(time.time()) if created is None else created
        id_seed = secrets.randbits(63) if id_seed is None else id_seed
        turn = ffi.new("uint64_t *")
        with self._lock:
            handle = self._handle()
            if config is None:
                self._check(
                    lib.aw_acp_connection_start_turn(
                        handle, chosen, data, len(data), ffi.NULL, now_ms, created, id_seed, turn
                    )
                )
            else:
                with config._lock:
                    self._check(
                        lib.aw_acp_connection_start_turn(
                            handle,
                            chosen,
                            data,
                            len(data),
                            config._handle(),
                            now_ms,
                            created,
                            id_seed,
                            turn,
                        )
                    )
        return int(turn[0])

    def start_conversation_turn(
        self,
        body: BytesLike,
        config: Optional[Config] = None,
        *,
        now_ms: int,
        owner_key: Union[bytes, str, None] = None,
        client_session: Optional[str] = None,
        client_agent: Optional[str] = None,
        caller_key: Optional[str] = None,
        entropy: Optional[bytes] = None,
        created: Optional[int] = None,
        id_seed: Optional[int] = None,
        dialect: Union[Dialect, str] = Dialect.CHAT_COMPLETIONS,
    ) -> int:
        """Like :meth:`start_turn`, for a request that may continue a conversation: it
        resumes the parked session holding its conversation so far when there is one
        (answering the calls it waits for with the request's tool results, through its MCP
        server, and prompting it with only the new input), and otherwise starts a fresh
        session with the whole conversation. With :attr:`AcpConfig.mcp_endpoint` the
        request's client tools are given to the agent as an MCP server, whose calls end the
        response with the client's tool calls while the agent stays inside them.

        ``owner_key``, ``client_session``, ``client_agent`` and ``caller_key`` are as for
        :meth:`Bridge.in_conversation <agentwire.Bridge.in_conversation>`; ``entropy`` is 32
        random bytes (default: from the operating system), from which a session made for
        the turn takes its MCP server's path and secret. Returns the turn's number."""
        data = input_bytes(body, "body")
        if config is not None and not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        chosen = choice(Dialect, "dialect", dialect)
        created = int(time.time()) if created is None else created
        id_seed = secrets.randbits(63) if id_seed is None else id_seed
        seed = os.urandom(32) if entropy is None else bytes(entropy)
        if len(seed) != 32:
            raise ValueError(f"entropy must be 32 bytes, not {len(seed)}")
        keys = [
            optional_key(owner_key, "owner_key"),
            optional_text(client_session, "client_session"),
            optional_text(client_agent, "client_agent"),
            optional_text(caller_key, "caller_key"),
        ]
        key_args = [arg for key in keys for arg in (key, c_len(key))]
        turn = ffi.new("uint64_t *")
        with self._lock:
            handle = self._handle()
            if config is None:
                self._check(
                    lib.aw_acp_connection_start_conversation_turn(
                        handle, chosen, data, len(data), ffi.NULL, now_ms, created, id_seed,
                        *key_args, seed, turn,
                    )
                )
            else:
                with config._lock:
                    self._check(
                        lib.aw_acp_connection_start_conversation_turn(
                            handle, chosen, data, len(data), config._handle(), now_ms,
                            created, id_seed, *key_args, seed, turn,
                        )
                    )
        return int(turn[0])

    def handle_mcp(
        self,
        token: str,
        request: McpRequest,
        *,
        authorization: Union[bytes, str, None],
        now_ms: int,
    ) -> McpExchange:
        """A request to the MCP endpoint, under path segment ``token`` (what follows the
        endpoint's URL) with ``authorization`` (the ``Authorization`` header's value, None
        when absent): handed to the server of the session it names. Its response comes from
        :meth:`mcp_outputs`. A request no server takes raises
        :class:`~agentwire.McpNotFoundError` (answer 404) or
        :class:`~agentwire.McpUnauthorizedError` (answer 401; both have ``status``), and
        changes nothing."""
        if not isinstance(request, McpRequest):
            raise TypeError(f"request must be an McpRequest, not {type(request).__name__}")
        raw_token = encode(token)
        auth = optional_key(authorization, "authorization")
        args = request._c_args()
        out = ffi.new("aw_mcp_exchange *")
        with self._lock:
            self._check(
                lib.aw_acp_connection_handle_mcp(
                    self._handle(), raw_token, len(raw_token), auth, c_len(auth), *args,
                    now_ms, out,
                )
            )
            return McpExchange(int(out.server), int(out.exchange))

    def mcp_exchange_gone(self, exchange: McpExchange, now_ms: int) -> None:
        """The agent's HTTP connection of ``exchange`` closed: the calls whose answers it
        owed are cancelled."""
        with self._lock:
            self._check(
                lib.aw_acp_connection_mcp_exchange_gone(self._handle(), exchange._c(), now_ms)
            )

    def push_stdout(self, data: BytesLike, now_ms: int) -> None:
        """Bytes the agent wrote to stdout (any bytes-like object), in any chunking."""
        buf = input_bytes(data, "data")
        with self._lock:
            self._check(lib.aw_acp_connection_push_stdout(self._handle(), buf, len(buf), now_ms))

    def push_stderr(self, data: BytesLike, now_ms: int) -> None:
        """Bytes the agent wrote to stderr, in any chunking (only the tail is kept)."""
        buf = input_bytes(data, "data")
        with self._lock:
            self._check(lib.aw_acp_connection_push_stderr(self._handle(), buf, len(buf), now_ms))

    def agent_exited(
        self, *, code: Optional[int] = None, signal: Optional[int] = None, now_ms: int
    ) -> None:
        """The agent exited with ``code``, or was ended by ``signal`` (exactly one): every
        open turn fails with its stderr tail, and the connection is dead."""
        if (code is None) == (signal is None):
            raise TypeError("agent_exited takes exactly one of code= and signal=")
        with self._lock:
            if code is not None:
                self._check(lib.aw_acp_connection_agent_exited_code(self._handle(), code, now_ms))
            else:
                self._check(
                    lib.aw_acp_connection_agent_exited_signal(self._handle(), signal, now_ms)
                )

    def handle_timeout(self, now_ms: int) -> None:
        """The deadline from :meth:`poll_timeout` passed. Early calls do nothing."""
        with self._lock:
            self._check(lib.aw_acp_connection_handle_timeout(self._handle(), now_ms))

    def client_gone(self, turn: int, now_ms: int) -> None:
        """The HTTP client of ``turn`` hung up: its prompt is cancelled and nothing more is
        written for it. :class:`~agentwire.UnknownTurnError` for a turn never started."""
        with self._lock:
            self._check(lib.aw_acp_connection_client_gone(self._handle(), turn, now_ms))

    def shutdown(self, now_ms: int) -> None:
        """The program is shutting down: every turn ends as a failure the client may
        retry, and every running prompt is cancelled."""
        with self._lock:
            self._check(lib.aw_acp_connection_shutdown(self._handle(), now_ms))

    # Outputs.

    def poll_transmit(self) -> Optional[bytes]:
        """Bytes to write to the agent's stdin (whole JSON-RPC lines), or None."""
        out = ffi.new("aw_bytes *")
        with self._lock:
            if self._check(lib.aw_acp_connection_poll_transmit(self._handle(), out)) == DRAINED:
                return None
            # Copied under the lock: the view lasts until the next call.
            return copy_bytes(out[0])

    def transmits(self) -> Iterator[bytes]:
        """Drains :meth:`poll_transmit`."""
        return _drain(self.poll_transmit)

    def poll_ready(self) -> Optional[int]:
        """A turn that has output, each named at most once between two inputs, in the
        order turns were started; None when no other turn has any."""
        out = ffi.new("uint64_t *")
        with self._lock:
            if self._check(lib.aw_acp_connection_poll_ready(self._handle(), out)) == DRAINED:
                return None
        return int(out[0])

    def ready_turns(self) -> Iterator[int]:
        """Drains :meth:`poll_ready`."""
        return _drain(self.poll_ready)

    def poll_output(self, turn: int) -> Optional[Output]:
        """The next output of ``turn``, or None until the next input (and for ever after
        :class:`~agentwire.End`). :class:`~agentwire.UnknownTurnError` for a turn never
        started."""
        out = ffi.new("aw_output *")
        with self._lock:
            code = lib.aw_acp_connection_poll_output(self._handle(), turn, out)
            if self._check(code) == DRAINED:
                return None
            return _output_of(out)

    def outputs(self, turn: int) -> Iterator[Output]:
        """Drains :meth:`poll_output` of ``turn``."""
        return _drain(lambda: self.poll_output(turn))

    def poll_mcp_ready(self) -> Optional[McpExchange]:
        """An MCP exchange with output for :meth:`poll_mcp_output`, or None."""
        out = ffi.new("aw_mcp_exchange *")
        with self._lock:
            if self._check(lib.aw_acp_connection_poll_mcp_ready(self._handle(), out)) == DRAINED:
                return None
            return McpExchange(int(out.server), int(out.exchange))

    def mcp_ready(self) -> Iterator[McpExchange]:
        """Drains :meth:`poll_mcp_ready`."""
        return _drain(self.poll_mcp_ready)

    def poll_mcp_output(self, exchange: McpExchange) -> Optional[McpOutput]:
        """The next output of an MCP exchange (:class:`~agentwire.McpHead`,
        :class:`~agentwire.Body`, :class:`~agentwire.End`), or None until the next input,
        for ever after its end, and for an exchange whose server is gone (then end the
        response)."""
        out = ffi.new("aw_mcp_output *")
        with self._lock:
            code = lib.aw_acp_connection_poll_mcp_output(self._handle(), exchange._c(), out)
            if self._check(code) == DRAINED:
                return None
            return _mcp_output_of(out)

    def mcp_outputs(self, exchange: McpExchange) -> Iterator[McpOutput]:
        """Drains :meth:`poll_mcp_output` of ``exchange``."""
        return _drain(lambda: self.poll_mcp_output(exchange))

    def poll_decision(self) -> Optional[Decision]:
        """The next connection-level decision, or None."""
        out = ffi.new("aw_acp_decision *")
        with self._lock:
            if self._check(lib.aw_acp_connection_poll_decision(self._handle(), out)) == DRAINED:
                return None
            return Restart(copy_str(out.reason))

    def decisions(self) -> Iterator[Decision]:
        """Drains :meth:`poll_decision`."""
        return _drain(self.poll_decision)

    def poll_timeout(self) -> Optional[int]:
        """When :meth:`handle_timeout` is next due (``now_ms`` clock), or None."""
        has = ffi.new("bool *")
        deadline = ffi.new("uint64_t *")
        with self._lock:
            self._check(lib.aw_acp_connection_poll_timeout(self._handle(), has, deadline))
        return int(deadline[0]) if has[0] else None

    def __repr__(self) -> str:
        if self.closed:
            return "AcpConnection(<closed>)"
        return (
            f"AcpConnection(ready={self.is_ready}, dead={self.is_dead}, "
            f"active_turns={self.active_turns})"
        )


T = TypeVar("T")


def _drain(poll: Callable[[], Optional[T]]) -> Iterator[T]:
    """Yields what ``poll`` gives until it gives None, taking the lock per item."""
    while True:
        item = poll()
        if item is None:
            return
        yield item
