#!/usr/bin/env python3
"""Throughput of one Python ``Bridge.push_stdout`` call (with the drain of its outputs)
against the Rust bridge on the same bytes in the same chunking.

    python bindings/python/benches/push_stdout.py [--mb 32] [--chunk 4096]

The transcript is built from the project's transcripts (and the real captures in ../shared
when present): every line but the final ``result``, repeated to the size asked for, then
one ``result``. The Rust side is the ``translate`` example built with the ``python``
profile, the profile the package is built with, writing to /dev/null; its time includes
starting the process and reading the file, so the ratio slightly favours Python. Both
sides: the best of three runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import agentwire as aw

REPO = Path(__file__).resolve().parents[3]
REQUEST = b'{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}'


def transcript(size: int) -> bytes:
    sources = sorted((REPO / "tests" / "fixtures").glob("*.jsonl"))
    shared = REPO.parent / "shared" / "fixtures" / "cursor-agent"
    if shared.is_dir():
        sources += sorted(shared.glob("*.jsonl"))
    lines = []
    for path in sources:
        for line in path.read_bytes().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") not in ("result", "error"):
                lines.append(line + b"\n")
    block = b"".join(lines)
    out = bytearray()
    while len(out) < size:
        out += block
    out += b'{"type":"result","subtype":"success","result":""}\n'
    return bytes(out)


def python_run(data: bytes, chunk: int) -> tuple[float, int, int]:
    bridge = aw.Bridge(REQUEST, now_ms=0, created=1_700_000_000, id_seed=0)
    written = calls = 0
    start = time.perf_counter()
    for at in range(0, len(data), chunk):
        bridge.push_stdout(data[at : at + chunk], 0)
        calls += 1
        for output in bridge.outputs():
            if isinstance(output, aw.Body):
                written += len(output)
    elapsed = time.perf_counter() - start
    bridge.close()
    return elapsed, calls, written


def rust_run(path: Path, chunk: int) -> tuple[float, int]:
    subprocess.run(
        ["cargo", "build", "--quiet", "--profile", "python", "--example", "translate"],
        cwd=REPO,
        check=True,
    )
    binary = REPO / "target" / "python" / "examples" / "translate"
    args = [str(binary), "--chunk", str(chunk), str(path)]
    written = len(subprocess.run(args, capture_output=True, check=True).stdout)
    # Timed with the body going to /dev/null, the best of three.
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - start)
    return best, written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=4096)
    args = parser.parse_args()
    data = transcript(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "transcript.jsonl"
        path.write_bytes(data)
        rust_s, rust_written = rust_run(path, args.chunk)
    runs = [python_run(data, args.chunk) for _ in range(3)]
    py_s, calls, py_written = min(runs)
    assert py_written == rust_written, (py_written, rust_written)
    mb = len(data) / 1e6
    print(f"input {mb:.1f} MB in {calls} pushes of {args.chunk} bytes; output {py_written / 1e6:.1f} MB")
    print(f"python push_stdout + drain: {mb / py_s:8.1f} MB/s  {py_s / calls * 1e6:6.2f} us per call")
    print(f"rust   push_stdout + drain: {mb / rust_s:8.1f} MB/s  {rust_s / calls * 1e6:6.2f} us per call")
    print(f"python / rust time: {py_s / rust_s:.2f}x")


if __name__ == "__main__":
    main()
