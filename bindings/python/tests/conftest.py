"""Shared fixtures: the repository's transcripts and the Rust examples the bindings are
compared with (`translate` for whole responses, `events` for decoder events)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from agentwire import _testing

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
sys.path.insert(0, str(REPO / "tests" / "support"))
import shared_fixtures  # noqa: E402  (the one finder of the real captures)
import expected_answers  # noqa: E402,F401  (the one reading of what a transcript answers)

DEFAULT_REQUEST = b'{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}'


# Tests of states only the test hooks reach; run-tests.sh requires the hooks, so that a
# library built without them fails rather than skips.
needs_hooks = pytest.mark.skipif(
    not _testing.has_test_hooks() and os.environ.get("AGENTWIRE_REQUIRE_TEST_HOOKS") != "1",
    reason="library built without the ffi-test-hooks feature",
)


def transcripts() -> List[Path]:
    return sorted(FIXTURES.glob("*.jsonl"))


def real_captures() -> List[Path]:
    """The real cursor-agent transcripts: none when absent (the tests over them are skipped),
    an error when required or incomplete (tests/support/shared_fixtures.py)."""
    return shared_fixtures.files("cursor-agent", "*.jsonl")


class Rust:
    """The Rust examples, built once per session."""

    def __init__(self) -> None:
        subprocess.run(
            ["cargo", "build", "--quiet", "--example", "translate", "--example", "events"],
            cwd=REPO,
            check=True,
        )
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        self.translate_bin = target / "debug" / "examples" / "translate"
        self.events_bin = target / "debug" / "examples" / "events"

    def translate(
        self,
        request: Path,
        transcript: Path,
        chunk: int = 4096,
        stderr: Optional[Path] = None,
        exit_code: int = 0,
    ) -> Tuple[int, bytes]:
        """(status, body) of the Rust bridge for the same input."""
        args = [str(self.translate_bin), "--chunk", str(chunk), "--request", str(request)]
        if stderr is not None:
            args += ["--stderr", str(stderr), "--exit", str(exit_code)]
        done = subprocess.run(args + [str(transcript)], capture_output=True, check=True)
        status = int(done.stderr.decode().splitlines()[0].split(": ")[1])
        return status, done.stdout

    def events(self, transcript: Path, chunk: int = 4096) -> str:
        done = subprocess.run(
            [str(self.events_bin), "--chunk", str(chunk), str(transcript)],
            capture_output=True,
            check=True,
        )
        return done.stdout.decode()


@pytest.fixture(scope="session")
def rust() -> Rust:
    return Rust()


@pytest.fixture
def default_request(tmp_path: Path) -> Path:
    path = tmp_path / "default.json"
    path.write_bytes(DEFAULT_REQUEST)
    return path
