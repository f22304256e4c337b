"""Threads sharing one object: each object serialises its own calls (the library releases
the GIL during a call), so a reader thread, a timer thread and a close from the main
thread neither crash the interpreter nor lose or repeat an output. Each scenario runs in
its own interpreter (threads_scenarios.py), so a crash fails its test instead of ending
the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import agentwire as aw
from agentwire import _testing
from conftest import DEFAULT_REQUEST, needs_hooks

SCENARIOS = Path(__file__).resolve().parent / "threads_scenarios.py"


@pytest.mark.parametrize(
    "scenario, rounds",
    [
        ("close_while_reading", 500),
        ("two_pushers", 2000),
        ("reader_and_timer", 2000),
        ("decoder_pushers", 2000),
        ("conversations_on_one_registry", 200),
    ],
)
def test_threads_on_one_object(scenario: str, rounds: int):
    done = subprocess.run(
        [sys.executable, str(SCENARIOS), scenario, str(rounds)],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr.decode()[-2000:])
    assert done.stderr == b""
    assert done.stdout.startswith(scenario.encode())


@needs_hooks
@pytest.mark.parametrize("make", [aw.Config, lambda: aw.Bridge(DEFAULT_REQUEST), aw.Decoder])
def test_a_call_overlapping_another_in_c_is_busy(make):
    # What C code sharing the handle with another thread can meet; the package's own
    # calls never overlap.
    obj = make()
    with pytest.raises(aw.BusyError, match="in progress") as info:
        _testing.overlap(obj)
    assert info.value.name == "AW_RESULT_BUSY"
    assert isinstance(info.value, aw.MisuseError)
    if isinstance(obj, aw.Bridge):
        obj.client_gone(1)
        assert list(obj.outputs()) == [aw.StopAgent(), aw.End()]
    elif isinstance(obj, aw.Decoder):
        obj.push_eof()
        assert isinstance(list(obj.events())[-1], aw.Failed)
    else:
        obj.keep_alive_ms = 5
        assert obj.keep_alive_ms == 5
    obj.close()


@needs_hooks
@pytest.mark.parametrize(
    "make",
    [aw.Registry, aw.RegistryConfig, aw.McpConfig, lambda: aw.McpServer(DEFAULT_REQUEST)],
)
def test_a_call_overlapping_another_on_a_conversation_handle_is_busy(make):
    obj = make()
    with pytest.raises(aw.BusyError, match="in progress"):
        _testing.overlap(obj)
    # Whole and usable afterwards.
    if isinstance(obj, aw.Registry):
        assert obj.parked == 0
    elif isinstance(obj, aw.McpServer):
        assert obj.tools == [] and obj.pending_calls == 0
    else:
        assert obj.as_dict()
    obj.close()
