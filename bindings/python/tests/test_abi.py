"""The package's view of the C ABI: every function of the header is bound, the version is
the header's, and a caught panic poisons the handle."""

from __future__ import annotations

import re

import pytest

import agentwire as aw
from agentwire import _testing
from agentwire._native import ffi, lib
from conftest import DEFAULT_REQUEST, REPO, needs_hooks

HEADER = (REPO / "include" / "agentwire.h").read_text()


def test_every_function_in_the_header_is_bound():
    names = set(re.findall(r"^[a-z][\w ]*?\**\b(aw_\w+)\(", HEADER, re.M))
    assert len(names) > 80
    # The test hooks exist only in a library built with them.
    hooks = {n for n in names if "_test_" in n}
    for name in sorted(names - hooks):
        assert getattr(lib, name) is not None, name


def test_version_is_the_header_version():
    major, minor, patch = (int(x) for x in aw.__version__.split("."))
    assert (major, minor, patch) == (lib.AW_VERSION_MAJOR, lib.AW_VERSION_MINOR, lib.AW_VERSION_PATCH)
    assert lib.AW_VERSION_NUMBER == major * 1_000_000 + minor * 1_000 + patch


def test_result_names():
    assert aw.AgentwireError(lib.AW_RESULT_PANIC, "").name == "AW_RESULT_PANIC"
    assert ffi.string(lib.aw_result_name(12345)) == b"AW_RESULT_UNKNOWN"


@needs_hooks
@pytest.mark.parametrize("make", [aw.Registry, lambda: aw.McpServer(DEFAULT_REQUEST)])
def test_a_panic_poisons_a_conversation_handle(make):
    obj = make()
    with pytest.raises(aw.PanicError, match="panicked"):
        _testing.panic(obj)
    if isinstance(obj, aw.Registry):
        with pytest.raises(aw.PoisonedError):
            obj.parked
        # A poisoned registry makes no bridge.
        with pytest.raises(aw.PoisonedError):
            aw.Bridge.in_conversation(DEFAULT_REQUEST, registry=obj)
    else:
        with pytest.raises(aw.PoisonedError):
            list(obj.events())
        assert obj.is_closed and not obj.is_initialized
    obj.close()


@needs_hooks
@pytest.mark.parametrize("make", [aw.Config, lambda: aw.Bridge(DEFAULT_REQUEST), aw.Decoder])
def test_a_panic_poisons_the_handle(make):
    obj = make()
    with pytest.raises(aw.PanicError, match="panicked"):
        _testing.panic(obj)
    with pytest.raises(aw.PoisonedError):
        _testing.panic(obj)
    if isinstance(obj, aw.Bridge):
        with pytest.raises(aw.PoisonedError):
            obj.push_stdout(b"{}\n", 1)
        with pytest.raises(aw.PoisonedError):
            list(obj.outputs())
    elif isinstance(obj, aw.Decoder):
        with pytest.raises(aw.PoisonedError):
            obj.push_eof()
    else:
        with pytest.raises(aw.PoisonedError):
            obj.keep_alive_ms
        with pytest.raises(aw.PoisonedError):
            aw.Bridge(DEFAULT_REQUEST, obj)
    obj.close()
