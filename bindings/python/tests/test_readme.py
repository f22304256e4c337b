"""The README's Python snippets for this package run as written (with the names they take
for granted: the request ``body``, a ``clock``, a ``chunk`` of cursor-agent's stdout, an
ACP agent's output ``agent_out``) and type-check under ``mypy --strict``."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import agentwire as aw
from conftest import DEFAULT_REQUEST, FIXTURES, REPO

PACKAGE = Path(__file__).resolve().parents[1]
# The names the snippet uses without defining them, as a typed prelude.
PRELUDE = """from typing import Callable
body: bytes
clock: Callable[[], int]
chunk: bytes
agent_out: bytes
"""


def snippets() -> List[str]:
    """The README's Python code blocks that use this package."""
    blocks = re.findall(r"^```python\n(.*?)^```$", (REPO / "README.md").read_text(), re.M | re.S)
    return [block for block in blocks if "import agentwire" in block]


def bridge_snippet() -> str:
    (snippet,) = [block for block in snippets() if "aw.Bridge(" in block]
    return snippet


def acp_snippet() -> str:
    (snippet,) = [block for block in snippets() if "aw.AcpConnection(" in block]
    return snippet


def test_the_readme_has_a_snippet_for_the_bridge_and_one_for_acp():
    assert len(snippets()) == 2
    assert bridge_snippet() != acp_snippet()


def test_the_acp_snippet_runs():
    started = time.monotonic()
    names: Dict[str, Any] = {
        "body": DEFAULT_REQUEST,
        "clock": lambda: int((time.monotonic() - started) * 1000),
        "agent_out": b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n',
    }
    exec(compile(acp_snippet(), "README.md", "exec"), names)
    # The handshake's answer made the connection ready: the session it asked for last.
    assert names["turn"] == 0 and b'"method":"session/new"' in names["data"]
    assert names["models"] is None and names["conn"].closed


def test_the_snippet_runs():
    snippet = bridge_snippet()
    started = time.monotonic()
    names: Dict[str, Any] = {
        "body": DEFAULT_REQUEST,
        "clock": lambda: int((time.monotonic() - started) * 1000),
        "chunk": (FIXTURES / "multibyte.jsonl").read_bytes(),
    }
    exec(compile(snippet, "README.md", "exec"), names)
    # The chunk held a whole answer: the snippet drained it to the end.
    assert names["inv"] is not None and names["inv"].argv[0] == "cursor-agent"
    assert names["out"] == aw.End()
    assert names["deadline"] is None


@pytest.mark.parametrize("which", ["bridge", "acp"])
def test_the_snippets_pass_mypy_strict(tmp_path: Path, which: str):
    snippet = bridge_snippet() if which == "bridge" else acp_snippet()
    program = tmp_path / "readme_snippet.py"
    program.write_text(PRELUDE + snippet)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(program)],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
