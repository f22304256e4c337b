"""The example plugin, run against a stand-in agent that replays a transcript: it prints
exactly the answer the transcript's result holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "run_prompt.py"
AGENT = HERE / "replay_agent.py"


def run(transcript: Path, exit_code: int = 0) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "AGENTWIRE_REPLAY": str(transcript),
        "AGENTWIRE_REPLAY_EXIT": str(exit_code),
    }
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "--agent", str(AGENT), "say hi"],
        env=env,
        capture_output=True,
        timeout=60,
    )


def result_text(transcript: Path) -> str:
    for line in transcript.read_text().splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "result":
            return event["result"]
    raise AssertionError("no result")


@pytest.mark.parametrize("name", ["partial_recaps.jsonl", "multibyte.jsonl", "repeated_tokens.jsonl"])
def test_prints_the_answer(name: str):
    transcript = FIXTURES / name
    done = run(transcript)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == result_text(transcript) + "\n"


def test_a_failed_run_prints_its_error():
    done = run(FIXTURES / "failure_no_result.jsonl", exit_code=1)
    assert done.returncode == 1
    assert b"error" in done.stderr


def test_a_missing_agent_prints_the_install_hint(tmp_path: Path):
    # No cursor-agent on PATH: the example's default agent.
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "say hi"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 127
    stderr = done.stderr.decode()
    assert "`cursor-agent` was not found" in stderr
    assert "curl https://cursor.com/install -fsS | bash" in stderr
    assert "Traceback" not in stderr
