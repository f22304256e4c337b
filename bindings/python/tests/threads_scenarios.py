"""Threads sharing one object, as plugins do (a reader thread and a timer thread, a close
from the main thread). Run as a program by test_threads.py, so that a crash of the
interpreter is a failed test rather than the end of the test run.

    threads_scenarios.py SCENARIO ROUNDS

Prints one line of counts; exits non-zero (or dies) when something went wrong.
"""

from __future__ import annotations

import itertools
import sys
import threading
from typing import Callable, Dict, List

import agentwire as aw

REQUEST = b'{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}'
# Reasoning deltas: every line is one event and one SSE frame, none merged or held back.
# Many to a push, so that a push is long next to the Python code around it.
LINES = 64
CHUNK = b"".join(
    b'{"type":"thinking","subtype":"delta","text":"t%d"}\n' % i for i in range(LINES)
)
RESULT = b'{"type":"result","subtype":"success","result":""}\n'


def run_threads(*targets: Callable[[], None]) -> None:
    """Runs the targets at once; re-raises the first exception any of them raised."""
    errors: List[BaseException] = []

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        return run

    threads = [threading.Thread(target=guarded(t)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def close_while_reading(rounds: int) -> Dict[str, int]:
    """A reader pushes and drains until the main thread closes the bridge under it: every
    call before the close completes, every call after it raises ClosedError."""
    closed_errors = 0
    for _ in range(rounds):
        bridge = aw.Bridge(REQUEST, now_ms=0)
        started = threading.Event()
        outcome: List[str] = []

        def reader() -> None:
            try:
                while True:
                    bridge.push_stdout(CHUNK, 1)
                    started.set()
                    for _ in bridge.outputs():
                        pass
            except aw.ClosedError:
                outcome.append("closed")

        thread = threading.Thread(target=reader)
        thread.start()
        if not started.wait(30):
            raise AssertionError("the reader never pushed")
        bridge.close()
        thread.join()
        if outcome != ["closed"]:
            raise AssertionError(f"the reader ended with {outcome}")
        closed_errors += 1
    return {"closed": closed_errors}


def drain_until(bridge: aw.Bridge, done: threading.Event, outputs: List[aw.Output]) -> None:
    """Drains `bridge` into `outputs` in a tight loop until `done`, then once more."""
    while not done.is_set():
        outputs.extend(bridge.outputs())
    outputs.extend(bridge.outputs())


def two_pushers(rounds: int) -> Dict[str, int]:
    """Two readers push into one bridge while a third thread drains it: every line comes
    out once, with one head and one end in all."""
    bridge = aw.Bridge(REQUEST, now_ms=0)
    outputs: List[aw.Output] = []
    pushed = [threading.Event(), threading.Event()]
    done = threading.Event()

    def pusher(slot: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(rounds):
                bridge.push_stdout(bytearray(CHUNK), 1)
            pushed[slot].set()
            if all(e.is_set() for e in pushed):
                done.set()

        return run

    run_threads(pusher(0), pusher(1), lambda: drain_until(bridge, done, outputs))
    bridge.push_stdout(RESULT, 2)
    outputs.extend(bridge.outputs())
    bridge.close()
    body = b"".join(o for o in outputs if isinstance(o, aw.Body))
    frames = body.count(b'"reasoning_content":"t')
    heads = sum(isinstance(o, aw.Head) for o in outputs)
    ends = sum(isinstance(o, aw.End) for o in outputs)
    expected = 2 * rounds * LINES
    if (frames, heads, ends) != (expected, 1, 1):
        raise AssertionError(f"{frames} frames (expected {expected}), {heads} heads, {ends} ends")
    return {"frames": frames}


def reader_and_timer(rounds: int) -> Dict[str, int]:
    """A reader pushes while a timer thread handles each deadline as it comes
    (keep-alives every millisecond of a shared clock) and drains, until the reader is
    done; then the agent exits."""
    config = aw.Config(keep_alive_ms=1, head_deadline_ms=1)
    bridge = aw.Bridge(REQUEST, config, now_ms=0)
    outputs: List[aw.Output] = []
    ticks = itertools.count(1)
    done = threading.Event()

    def reader() -> None:
        for _ in range(rounds):
            bridge.push_stdout(memoryview(CHUNK), next(ticks))
        done.set()

    def timer() -> None:
        while not done.is_set():
            now = next(ticks)
            deadline = bridge.poll_timeout()
            if deadline is not None and deadline <= now:
                bridge.handle_timeout(now)
            outputs.extend(bridge.outputs())

    run_threads(reader, timer)
    now = next(ticks)
    bridge.push_stdout(RESULT, now)
    bridge.agent_exited(code=0, now_ms=now)
    outputs.extend(bridge.outputs())
    bridge.close()
    body = b"".join(o for o in outputs if isinstance(o, aw.Body))
    frames = body.count(b'"reasoning_content":"t')
    heads = sum(isinstance(o, aw.Head) for o in outputs)
    if (frames, heads, outputs[-1]) != (rounds * LINES, 1, aw.End()):
        raise AssertionError(f"{frames} frames, {heads} heads, last {outputs[-1]!r}")
    return {"frames": frames, "keep_alives": body.count(b": keep-alive")}


def decoder_pushers(rounds: int) -> Dict[str, int]:
    """Two threads push into one decoder while a third polls it: every line is one event,
    once."""
    decoder = aw.Decoder()
    events: List[aw.Event] = []
    pushed = [threading.Event(), threading.Event()]

    def pusher(slot: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(rounds):
                decoder.push_stdout(CHUNK)
            pushed[slot].set()

        return run

    def poller() -> None:
        while not all(e.is_set() for e in pushed):
            events.extend(decoder.events())
        events.extend(decoder.events())

    run_threads(pusher(0), pusher(1), poller)
    lines = decoder.stats.lines
    decoder.close()
    deltas = sum(isinstance(e, aw.ReasoningDelta) for e in events)
    if (lines, deltas) != (2 * rounds * LINES, 2 * rounds * LINES):
        raise AssertionError(f"{lines} lines, {deltas} events, expected {2 * rounds * LINES}")
    return {"events": deltas}


SCENARIOS = {
    "close_while_reading": close_while_reading,
    "two_pushers": two_pushers,
    "reader_and_timer": reader_and_timer,
    "decoder_pushers": decoder_pushers,
}

if __name__ == "__main__":
    name, rounds = sys.argv[1], int(sys.argv[2])
    print(name, SCENARIOS[name](rounds))
