"""Threads sharing one object, as plugins do (a reader thread and a timer thread, a close
from the main thread). Run as a program by test_threads.py, so that a crash of the
interpreter is a failed test rather than the end of the test run.

    threads_scenarios.py SCENARIO ROUNDS

Prints one line of counts; exits non-zero (or dies) when something went wrong.
"""

from __future__ import annotations

import itertools
import json
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


def conversations_on_one_registry(rounds: int) -> Dict[str, int]:
    """Four threads run conversations of their own owners on one registry (each a tool
    round parked, then resumed by its results) while a fifth expires and drains it: every
    conversation resumes its own chat, and no session is left busy."""
    registry = aw.Registry()
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]

    def body(messages: List[Dict[str, object]]) -> bytes:
        return json.dumps({"model": "auto", "messages": messages, "tools": tools}).encode()

    def conversations(slot: int) -> Callable[[], None]:
        def run() -> None:
            owner = f"owner-{slot}"
            for round_ in range(rounds):
                chat = f"{slot:08x}-0000-4000-8000-{round_:012x}"
                messages: List[Dict[str, object]] = [
                    {"role": "user", "content": f"task {slot} {round_}"}
                ]
                bridge = aw.Bridge.in_conversation(body(messages), registry=registry, owner_key=owner)
                bridge.push_stdout(
                    json.dumps({"type": "system", "subtype": "init", "session_id": chat}).encode()
                    + b"\n"
                    + json.dumps({"type": "tool_call", "subtype": "started", "call_id": "c", "tool_call": {"shellToolCall": {"args": {"command": "ls"}}}, "session_id": chat}).encode()
                    + b"\n"
                    + json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "x"}]}, "session_id": chat}).encode()
                    + b"\n",
                    1,
                )
                answer = b"".join(o for o in bridge.outputs() if isinstance(o, aw.Body))
                bridge.agent_exited(signal=15, now_ms=1)
                list(bridge.outputs())
                bridge.end_conversation_turn(registry, 1)
                bridge.close()
                message = json.loads(answer)["choices"][0]["message"]
                messages.append(message)
                messages.append({"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "ok"})
                resumed = aw.Bridge.in_conversation(body(messages), registry=registry, owner_key=owner)
                invocation = resumed.invocation
                if invocation is None or invocation.args[invocation.args.index("--resume") + 1] != chat:
                    raise AssertionError(f"thread {slot} round {round_} did not resume {chat}")
                resumed.client_gone(2)
                resumed.end_conversation_turn(registry, 2)
                resumed.close()

        return run

    done = threading.Event()
    released: List[str] = []

    def timer() -> None:
        while not done.is_set():
            registry.handle_timeout(0)
            released.extend(registry.released())
        released.extend(registry.released())

    workers = [conversations(slot) for slot in range(4)]

    def all_workers() -> None:
        try:
            run_threads(*workers)
        finally:
            done.set()

    run_threads(all_workers, timer)
    stats = registry.stats
    if stats.resumed != 4 * rounds or registry.busy != 0:
        raise AssertionError(f"{stats}, {registry.busy} busy")
    if stats.fresh[aw.FreshReason.NO_SESSION] != 4 * rounds:
        raise AssertionError(f"{stats}")
    # Every resumed chat's client left: each chat was let go, once.
    if sorted(released) != sorted(set(released)) or len(released) != 4 * rounds:
        raise AssertionError(f"{len(released)} released")
    registry.close()
    return {"resumed": stats.resumed}


SCENARIOS = {
    "close_while_reading": close_while_reading,
    "two_pushers": two_pushers,
    "reader_and_timer": reader_and_timer,
    "decoder_pushers": decoder_pushers,
    "conversations_on_one_registry": conversations_on_one_registry,
}

if __name__ == "__main__":
    name, rounds = sys.argv[1], int(sys.argv[2])
    print(name, SCENARIOS[name](rounds))
