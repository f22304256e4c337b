"""Shared fixtures: the repository's transcripts and requests, and the Rust examples the
bindings are compared with (`translate` for whole responses, `events` for decoder events,
`reply` for the replies that need no agent, `acp` for ACP connections)."""

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
#: The dialects by `translate --api` name, each with its smallest request (translate's own
#: default for it).
DIALECTS = {
    "chat-completions": DEFAULT_REQUEST,
    "responses": b'{"model":"auto","stream":true,"input":"hi"}',
    "messages": b'{"model":"auto","max_tokens":1024,"stream":true,'
    b'"messages":[{"role":"user","content":"hi"}]}',
}


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


def fixture_requests(api: str) -> List[Path]:
    """The project's example requests of a dialect."""
    folder = FIXTURES / "requests"
    return sorted((folder if api == "chat-completions" else folder / api).glob("*.json"))


def client_tools_request(api: str) -> Path:
    """The example request of a dialect that offers client tools (streaming)."""
    return [p for p in fixture_requests(api) if p.name == "client_tools.json"][0]


class Rust:
    """The Rust examples, built once per session."""

    def __init__(self) -> None:
        subprocess.run(
            ["cargo", "build", "--quiet"]
            + ["--example", "translate", "--example", "events", "--example", "reply"]
            + ["--example", "acp"],
            cwd=REPO,
            check=True,
        )
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        self.translate_bin = target / "debug" / "examples" / "translate"
        self.events_bin = target / "debug" / "examples" / "events"
        self.reply_bin = target / "debug" / "examples" / "reply"
        self.acp_bin = target / "debug" / "examples" / "acp"

    def translate(
        self,
        request: Path,
        transcript: Path,
        chunk: int = 4096,
        stderr: Optional[Path] = None,
        exit_code: int = 0,
        api: str = "chat-completions",
    ) -> Tuple[int, bytes]:
        """(status, body) of the Rust bridge for the same input."""
        args = [str(self.translate_bin), "--api", api, "--chunk", str(chunk)]
        args += ["--request", str(request)]
        if stderr is not None:
            args += ["--stderr", str(stderr), "--exit", str(exit_code)]
        done = subprocess.run(args + [str(transcript)], capture_output=True, check=True)
        status = int(done.stderr.decode().splitlines()[0].split(": ")[1])
        return status, done.stdout

    def reply(self, *args: str, stdin: bytes = b"") -> Tuple[int, bool, bytes]:
        """(status, retryable, body) of the `reply` example: `count-tokens` with the
        body on stdin, or `error DIALECT KIND MESSAGE`."""
        done = subprocess.run(
            [str(self.reply_bin), *args], input=stdin, capture_output=True, check=True
        )
        status, retryable = done.stderr.decode().splitlines()[:2]
        return int(status.split(": ")[1]), retryable.split(": ")[1] == "true", done.stdout

    def acp_script(self, recording: Path, api: str, chunk: int) -> bytes:
        """The inputs of an ACP recording's replay, as a script (`acp script`)."""
        args = [str(self.acp_bin), "script", "--api", api, "--chunk", str(chunk)]
        return subprocess.run(args + [str(recording)], capture_output=True, check=True).stdout

    def acp_run(self, script: Path) -> bytes:
        """Everything the Rust connection outputs for a script (`acp run`)."""
        args = [str(self.acp_bin), "run", str(script)]
        return subprocess.run(args, capture_output=True, check=True).stdout

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
