"""Test support: reach, from Python, library states no correct call sequence reaches: a
panic inside a call (which poisons the handle) and a call made while another is inside
the handle (refused with ``AW_RESULT_BUSY``). Only in a library built with the
``ffi-test-hooks`` cargo feature."""

from __future__ import annotations

from typing import Any, Dict, Type, Union

from ._lib import Handle, optional_symbol
from .acp import AcpConfig, AcpConnection
from .bridge import Bridge
from .config import Config
from .decoder import Decoder
from .mcp import McpConfig, McpServer
from .registry import Registry, RegistryConfig

_KINDS: Dict[Type[Handle], str] = {
    Config: "config",
    Bridge: "bridge",
    Decoder: "decoder",
    AcpConfig: "acp_config",
    AcpConnection: "acp_connection",
    Registry: "registry",
    RegistryConfig: "registry_config",
    McpConfig: "mcp_config",
    McpServer: "mcp_server",
}
#: Every handle type the hooks take.
Hooked = Union[
    Config,
    Bridge,
    Decoder,
    AcpConfig,
    AcpConnection,
    Registry,
    RegistryConfig,
    McpConfig,
    McpServer,
]


def has_test_hooks() -> bool:
    """Whether the library was built with the test hooks."""
    return optional_symbol("aw_bridge_test_panic") is not None


def _call_hook(obj: Hooked, hook_name: str) -> None:
    hook: Any = optional_symbol(f"aw_{_KINDS[type(obj)]}_{hook_name}")
    if hook is None:
        raise RuntimeError("the library was built without the ffi-test-hooks feature")
    with obj._lock:
        obj._check(hook(obj._handle()))


def panic(obj: Union[Config, Bridge, Decoder, AcpConnection, Registry, McpServer]) -> None:
    """Panics inside a call on ``obj``: raises PanicError and leaves ``obj`` poisoned."""
    _call_hook(obj, "test_panic")


def overlap(obj: Hooked) -> None:
    """From inside a call on ``obj``, calls it again and tries to free it, as C code on
    another thread could: raises BusyError for the second call; ``obj`` stays usable."""
    _call_hook(obj, "test_overlap")
