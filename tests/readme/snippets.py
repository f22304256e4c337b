"""Every fenced block of the repository's Markdown files runs somewhere, as written.

    python3 tests/readme/snippets.py check       every block accounted for (below)
    python3 tests/readme/snippets.py json LANG   the blocks of LANG this directory runs, as JSON
    python3 tests/readme/snippets.py run sh      runs the shell blocks (ci/test.sh does)

Where each language's blocks run:

- ``rust``: doc tests (``cargo test --doc``; src/lib.rs includes README.md);
- ``c``: bindings/c/run-tests.sh, which compiles README.md's C blocks and runs them;
- ``python``: bindings/python/tests/test_readme.py (those that use ``agentwire``) and
  tests/clients/python/test_proxies_openai.py (the openai-python one);
- ``json``, ``toml``: the client suites that give OpenCode and Codex those configurations
  (tests/clients/python/test_proxies_opencode.py, test_proxies_codex.py);
- ``ts``: tests/readme/ts.mjs, under Node, from bindings/js/run-tests.sh;
- ``sh``: here (``run sh``), from ci/test.sh;
- ``text``: listings, not programs: diagrams, synopses, command lines with placeholders.

A ``ts`` or ``sh`` block that cannot run in the suite says why on the line before its
fence, in a comment the rendered page does not show::

    <!-- not run: starts Claude Code, which is interactive; ... -->

Such blocks are few, and each names where what it shows is tested instead. Every other
block of those two languages is run by a setup of its own (the names it takes for granted,
what it must give), and a block without one is a failure: a new snippet gets a setup.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\S*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (\S.*\S) -->$")

# Languages whose blocks run elsewhere: (file, text the block contains, where it runs).
ELSEWHERE: Dict[str, List[Tuple[str, str, str]]] = {
    "rust": [("README.md", "", "src/lib.rs")],
    "c": [("README.md", "", "bindings/c/run-tests.sh")],
    "python": [
        ("README.md", "import agentwire", "bindings/python/tests/test_readme.py"),
        ("README.md", "from openai import OpenAI", "tests/clients/python/test_proxies_openai.py"),
    ],
    "json": [
        ("README.md", "opencode.ai/config.json", "tests/clients/python/test_proxies_opencode.py"),
        ("README.md", "agentwire@file:", "tests/clients/opencode/plugin.test.mjs"),
        ("bindings/js/README.md", "agentwire@file:", "tests/clients/opencode/plugin.test.mjs"),
    ],
    "toml": [("README.md", "wire_api", "tests/clients/python/test_proxies_codex.py")],
}
HERE = {"ts": "tests/readme/ts.mjs", "sh": "tests/readme/snippets.py"}
LISTINGS = {"text"}


@dataclass
class Block:
    file: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: Optional[str]

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def markdown_files() -> List[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.md"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    return sorted(name for name in listed if (ROOT / name).is_file())


def blocks() -> List[Block]:
    found = []
    for name in markdown_files():
        lines = (ROOT / name).read_text().split("\n")
        i = 0
        while i < len(lines):
            opening = FENCE.match(lines[i])
            if not opening or not opening.group(1):
                i += 1
                continue
            start = i
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                i += 1
            note = NOT_RUN.match(lines[start - 1]) if start > 0 else None
            code = "\n".join(lines[start + 1 : i]) + "\n"
            found.append(Block(name, start + 1, opening.group(1), code, note.group(1) if note else None))
            i += 1
    return found


def problems(every: List[Block]) -> List[str]:
    wrong = []
    for block in every:
        if block.not_run is not None and block.lang not in HERE:
            wrong.append(f"{block.where()}: a ```{block.lang} block cannot be marked 'not run' (only {', '.join(HERE)})")
        elif block.lang in ELSEWHERE:
            claims = [rule for rule in ELSEWHERE[block.lang] if rule[0] == block.file and rule[1] in block.code]
            if len(claims) != 1:
                runners = "; ".join(f"{file} blocks containing {text!r}: {runner}" for file, text, runner in ELSEWHERE[block.lang])
                wrong.append(f"{block.where()}: no test runs this ```{block.lang} block (what runs them: {runners})")
        elif block.lang not in HERE and block.lang not in LISTINGS:
            wrong.append(f"{block.where()}: ```{block.lang}: no runner for this language (tests/readme/snippets.py)")
    for rules in ELSEWHERE.values():
        for file, _, runner in rules:
            text = (ROOT / runner).read_text()
            if "README" not in text:
                wrong.append(f"{runner} no longer reads {file}")
    if 'include_str!("../README.md")' not in (ROOT / "src/lib.rs").read_text():
        wrong.append("src/lib.rs no longer runs README.md's Rust blocks as doc tests")
    return wrong


def check() -> int:
    every = blocks()
    wrong = problems(every)
    for problem in wrong:
        print(f"snippets: {problem}", file=sys.stderr)
    counts: Dict[str, int] = {}
    for block in every:
        key = "not run" if block.not_run else block.lang
        counts[key] = counts.get(key, 0) + 1
    print(f"    {len(every)} blocks in {len(markdown_files())} Markdown files: "
          + ", ".join(f"{n} {lang}" for lang, n in sorted(counts.items())))
    for block in every:
        if block.not_run:
            print(f"    not run: {block.where()} ({block.not_run})")
    return 1 if wrong else 0


def runnable(lang: str) -> List[Block]:
    return [block for block in blocks() if block.lang == lang and block.not_run is None]


# The shell blocks' setups: text the block contains → what it takes for granted (files in
# its working directory, its environment) and what it must leave there.
def c_link_lines(work: Path, env: Dict[str, str]) -> Callable[[str], Optional[str]]:
    """The README's link lines, run in a directory laid out as the repository (its
    `include`, `bindings` and built `target`), with a small `app.c` and `$HOME` of their own."""
    subprocess.run(["cargo", "build", "--quiet", "--release", "--lib", "-p", "agentwire"], cwd=ROOT, check=True)
    for name in ["include", "bindings"]:
        (work / name).symlink_to(ROOT / name)
    (work / "target").symlink_to(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    # A program of the user's: it prints the library's version, and fails on a library
    # of another version than its header's.
    (work / "app.c").write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "agentwire.h"\n'
        "int main(void) {\n"
        "    char header[32];\n"
        '    snprintf(header, sizeof header, "%d.%d.%d", AW_VERSION_MAJOR, AW_VERSION_MINOR, AW_VERSION_PATCH);\n'
        '    printf("agentwire %s\\n", aw_version());\n'
        "    return strcmp(aw_version(), header) != 0;\n"
        "}\n"
    )
    env["HOME"] = str(work / "home")

    def after(stdout: str) -> Optional[str]:
        if not re.fullmatch(r"agentwire \d+\.\d+\.\d+\n", stdout):
            return f"./app printed {stdout!r}"
        if not (work / "home/.local/lib/pkgconfig/agentwire.pc").is_file():
            return "nothing installed under $HOME/.local"
        return None

    return after


SH_SETUPS: List[Tuple[str, Callable[[Path, Dict[str, str]], Callable[[str], Optional[str]]]]] = [
    ("bindings/c/install.sh", c_link_lines),
]


def run_sh() -> int:
    failed = 0
    for block in runnable("sh"):
        setups = [setup for text, setup in SH_SETUPS if text in block.code]
        if len(setups) != 1:
            print(f"snippets: {block.where()}: no setup for this shell block (SH_SETUPS in tests/readme/snippets.py)", file=sys.stderr)
            failed += 1
            continue
        with tempfile.TemporaryDirectory(prefix="agentwire-readme-") as scratch:
            work = Path(scratch)
            env = dict(os.environ)
            after = setups[0](work, env)
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.code],
                cwd=work, env=env, capture_output=True, text=True, timeout=600,
            )
            problem = f"exit {done.returncode}: {done.stderr.strip()}" if done.returncode else after(done.stdout)
        if problem:
            print(f"snippets: {block.where()} (sh): {problem}", file=sys.stderr)
            failed += 1
        else:
            print(f"    {block.where()} (sh) ran")
    return 1 if failed else 0


def main(argv: List[str]) -> int:
    if argv == ["check"]:
        return check()
    if len(argv) == 2 and argv[0] == "json" and argv[1] in HERE:
        print(json.dumps([block.__dict__ for block in runnable(argv[1])]))
        return 0
    if argv == ["run", "sh"]:
        return run_sh()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
