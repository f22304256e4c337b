"""Creating and freeing handles leaks nothing: 10,000 cycles leave the resident set flat."""

from __future__ import annotations

import gc
import os

import agentwire as aw
from conftest import DEFAULT_REQUEST, FIXTURES

TRANSCRIPT = (FIXTURES / "partial_recaps.jsonl").read_bytes()


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cycle() -> None:
    with aw.Config(workspace="/srv") as config:
        with aw.Bridge(DEFAULT_REQUEST, config, now_ms=0) as bridge:
            bridge.push_stdout(TRANSCRIPT, 1)
            for _ in bridge.outputs():
                pass
        with aw.Decoder(config) as decoder:
            decoder.push_stdout(TRANSCRIPT)
            decoder.push_eof()
            for _ in decoder.events():
                pass
    # Dropped without close(): the garbage collector frees it.
    aw.Bridge(b"{", now_ms=0)


def test_ten_thousand_cycles_leave_rss_flat():
    for _ in range(1_000):
        cycle()
    gc.collect()
    before = rss_bytes()
    for _ in range(10_000):
        cycle()
    gc.collect()
    grown = rss_bytes() - before
    # A leak of even one small allocation per cycle would show as hundreds of KiB.
    assert grown < 1024 * 1024, f"RSS grew by {grown} bytes over 10,000 cycles"
