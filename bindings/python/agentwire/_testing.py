"""Test support: make a handle's next call panic inside the library, to see the panic
boundary and poisoning from Python. Only in a library built with the ``ffi-test-hooks``
cargo feature."""

from __future__ import annotations

from typing import Union

from ._lib import Handle, optional_symbol
from .bridge import Bridge
from .config import Config
from .decoder import Decoder

_HOOKS = {
    Config: "aw_config_test_panic",
    Bridge: "aw_bridge_test_panic",
    Decoder: "aw_decoder_test_panic",
}


def has_test_hooks() -> bool:
    """Whether the library was built with the test hooks."""
    return optional_symbol("aw_bridge_test_panic") is not None


def panic(obj: Union[Config, Bridge, Decoder]) -> None:
    """Panics inside a call on ``obj``: raises PanicError and leaves ``obj`` poisoned."""
    hook = optional_symbol(_HOOKS[type(obj)])
    if hook is None:
        raise RuntimeError("the library was built without the ffi-test-hooks feature")
    Handle._check(obj, hook(obj._handle()))
