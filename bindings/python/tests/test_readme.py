"""The README's Python snippet for this package runs as written (with the names it takes
for granted: the request ``body``, a ``clock``, a ``chunk`` of the agent's stdout) and
type-checks under ``mypy --strict``."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import agentwire as aw
from conftest import DEFAULT_REQUEST, FIXTURES, REPO

PACKAGE = Path(__file__).resolve().parents[1]
# The names the snippet uses without defining them, as a typed prelude.
PRELUDE = """from typing import Callable
body: bytes
clock: Callable[[], int]
chunk: bytes
"""


def snippets() -> List[str]:
    """The README's Python code blocks that use this package."""
    blocks = re.findall(r"^```python\n(.*?)^```$", (REPO / "README.md").read_text(), re.M | re.S)
    return [block for block in blocks if "import agentwire" in block]


def test_the_readme_has_a_snippet_for_the_package():
    assert len(snippets()) == 1


def test_the_snippet_runs():
    (snippet,) = snippets()
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


def test_the_snippet_passes_mypy_strict(tmp_path: Path):
    (snippet,) = snippets()
    program = tmp_path / "readme_snippet.py"
    program.write_text(PRELUDE + snippet)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(program)],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
