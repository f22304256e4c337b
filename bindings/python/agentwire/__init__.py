"""agentwire: the OpenAI Chat Completions API on top of the cursor-agent CLI, as a sans-IO
library over agentwire's C ABI.

Request bodies, the agent's stdout/stderr bytes, its exit and the time go in; the HTTP
head, SSE frames (or a JSON body) and "stop the agent now" come out. It spawns nothing and
reads no clock::

    bridge = Bridge(body, Config(), now_ms=clock())
    if bridge.invocation is not None:
        ...  # spawn bridge.invocation.argv in its own process group, write .stdin
    for output in bridge.outputs():  # after every push_stdout / push_stderr /
        ...                          # agent_exited / handle_timeout / client_gone

See ``examples/run_prompt.py`` for a whole plugin.
"""

from __future__ import annotations

from ._lib import (
    AfterEofError,
    AfterExitError,
    AgentwireError,
    ClosedError,
    ExitedTwiceError,
    IndexOutOfRangeError,
    InteriorNulError,
    InvalidEnumError,
    InvalidInputError,
    InvalidUtf8Error,
    LengthTooLargeError,
    MisuseError,
    NullParameterError,
    PanicError,
    PoisonedError,
)
from . import _lib as _errors
from . import bridge as _bridge
from . import config as _config
from . import decoder as _decoder
from ._native import ffi as _ffi
from ._native import lib as _c
from .bridge import Body, Bridge, End, Head, Invocation, Output, StopAgent
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

#: The version of the native library.
__version__: str = _ffi.string(_c.aw_version()).decode()

# Everything each part of the package exports, once (in a form type checkers follow).
__all__ = ["__version__"]
__all__ += _bridge.__all__
__all__ += _config.__all__
__all__ += _decoder.__all__
__all__ += _errors.__all__
