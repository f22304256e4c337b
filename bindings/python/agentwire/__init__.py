"""agentwire: the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs on
top of cursor-agent (stream-json) and any ACP agent, as a sans-IO library over agentwire's
C ABI.

Request bodies, the agent's stdout/stderr bytes, its exit and the time go in; the HTTP
head, SSE frames (or a JSON body) and "stop the agent now" come out. It spawns nothing and
reads no clock::

    bridge = Bridge(body, Config(), now_ms=clock(), dialect="messages")  # the route's API
    if bridge.invocation is not None:
        ...  # spawn bridge.invocation.argv in its own process group, write .stdin
    for output in bridge.outputs():  # after every push_stdout / push_stderr /
        ...                          # agent_exited / handle_timeout / client_gone

One warm ACP agent (``gemini --acp``, ``claude-agent-acp``, ``codex-acp``) serving many
requests is an :class:`AcpConnection`: each request a turn whose outputs are a bridge's.

Conversations: a :class:`Registry` decides whether a request resumes the agent session
that answered its conversation so far (:meth:`Bridge.in_conversation`,
:meth:`AcpConnection.start_conversation_turn`, which also gives the agent the client's
tools as an MCP server); :class:`McpServer` serves a client's tools to an agent for a
program that does it itself.

Replies that need no agent: :func:`count_tokens` (``POST /v1/messages/count_tokens``) and
:func:`error_reply` (a server's own refusals, in its route's dialect).

Objects may be shared between threads (a reader and a timer): each serialises its own
calls. See ``examples/run_prompt.py`` for a whole plugin.
"""

from __future__ import annotations

from ._lib import (
    AfterEofError,
    AfterExitError,
    AgentwireError,
    BusyError,
    CallNotPendingError,
    ClosedError,
    ExitedTwiceError,
    IndexOutOfRangeError,
    InteriorNulError,
    InvalidEnumError,
    InvalidInputError,
    InvalidRequestError,
    InvalidSessionIdError,
    InvalidUtf8Error,
    LengthTooLargeError,
    McpNotFoundError,
    McpRefusedError,
    McpUnauthorizedError,
    MisuseError,
    NullParameterError,
    PanicError,
    PoisonedError,
    UnknownAgentError,
    UnknownCallError,
    UnknownExchangeError,
    UnknownTurnError,
    WrongRegistryError,
)
from ._native import ffi as _ffi
from ._native import lib as _c
from .acp import (
    AcpConfig,
    AcpConnection,
    AgentLaunch,
    Decision,
    NativeTools,
    PermissionChoice,
    Restart,
    LaunchFile,
    launch_without_native_tools,
)
from .bridge import Body, Bridge, Dialect, End, Head, Invocation, Output, Respawn, StopAgent
from .config import Config, ReasoningField, ToolStrategy
from .decoder import (
    ActivityPhase,
    AgentActivity,
    Decoder,
    DecoderStats,
    Event,
    Failed,
    FailureKind,
    Finish,
    FinishReason,
    Progress,
    ProgressKind,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolOutcome,
    Usage,
)
from .mcp import (
    McpCall,
    McpCallLimit,
    McpCancelled,
    McpCancelReason,
    McpClosed,
    McpConfig,
    McpEvent,
    McpExchange,
    McpHead,
    McpOutput,
    McpRequest,
    McpServer,
    mcp_secret_matches,
)
from .registry import FreshReason, Registry, RegistryConfig, RegistryStats
from .reply import ErrorKind, Reply, count_tokens, error_reply

#: The version of the native library.
__version__: str = _ffi.string(_c.aw_version()).decode()

# The public names, as a literal list: type checkers read no other form (`from agentwire
# import Bridge` under `mypy --strict`). A test checks every public class of the modules is
# here.
__all__ = [
    "__version__",
    # acp
    "AcpConnection",
    "AcpConfig",
    "PermissionChoice",
    "NativeTools",
    "AgentLaunch",
    "LaunchFile",
    "launch_without_native_tools",
    "Restart",
    "Decision",
    # bridge
    "Bridge",
    "Dialect",
    "Invocation",
    "Head",
    "Body",
    "StopAgent",
    "Respawn",
    "End",
    "Output",
    # conversations
    "Registry",
    "RegistryConfig",
    "RegistryStats",
    "FreshReason",
    # MCP
    "McpServer",
    "McpConfig",
    "McpRequest",
    "McpHead",
    "McpOutput",
    "McpExchange",
    "McpEvent",
    "McpCall",
    "McpCancelled",
    "McpCallLimit",
    "McpClosed",
    "McpCancelReason",
    "mcp_secret_matches",
    # replies without an agent
    "Reply",
    "ErrorKind",
    "count_tokens",
    "error_reply",
    # config
    "Config",
    "ToolStrategy",
    "ReasoningField",
    # decoder
    "Decoder",
    "DecoderStats",
    "Event",
    "TextDelta",
    "ReasoningDelta",
    "ToolCall",
    "AgentActivity",
    "ActivityPhase",
    "ToolOutcome",
    "Progress",
    "ProgressKind",
    "Usage",
    "Finish",
    "FinishReason",
    "Failed",
    "FailureKind",
    # errors
    "AgentwireError",
    "MisuseError",
    "InvalidInputError",
    "NullParameterError",
    "PanicError",
    "PoisonedError",
    "LengthTooLargeError",
    "IndexOutOfRangeError",
    "InvalidEnumError",
    "AfterExitError",
    "ExitedTwiceError",
    "AfterEofError",
    "BusyError",
    "UnknownTurnError",
    "WrongRegistryError",
    "UnknownExchangeError",
    "UnknownCallError",
    "CallNotPendingError",
    "InvalidUtf8Error",
    "InteriorNulError",
    "McpRefusedError",
    "McpNotFoundError",
    "McpUnauthorizedError",
    "InvalidRequestError",
    "InvalidSessionIdError",
    "UnknownAgentError",
    "ClosedError",
]
