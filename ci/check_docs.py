#!/usr/bin/env python3
"""What the repository says of itself, checked where a script can tell (about a second of CPU).

1. **One description.** The crate (`Cargo.toml`, and the first paragraph of `src/lib.rs`),
   the example proxies (`proxy/Cargo.toml`), the wheel (`bindings/python/pyproject.toml`
   and the first paragraph of its README), the npm package (`bindings/js/package.json` and
   the first paragraph of its README) and the C header (`cbindgen.toml`) each name the
   same APIs — one for every variant of the core's `bridge::Dialect` (`API_OF_DIALECT`
   below) — and both kinds of agent (`AGENTS`). A dialect added to the core without its
   name here fails, and so does a description that forgets one.
2. **No citation of a document the repository does not hold.** No file (source, comment,
   script or document; captured data aside) points at notes kept elsewhere: "research
   notes", "design notes", a "trap N" of a checklist, a `§N` that is not a section of an
   RFC or of a Markdown file the repository holds, a `*.md` file it does not hold, a path
   under `../shared` other than the real captures the tests read (`../shared/fixtures`),
   or a path on one machine (`/work/…`).

`ci/check_docs.py` checks the repository (its tracked files and new ones not ignored);
`ci/check_docs.py --self-test` plants each kind of violation in the repository's text (in
memory, one at a time) and fails unless the check reports exactly that one besides what
it reported before, and plants allowed citations, which must add nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent

# The API each variant of `bridge::Dialect` speaks, as every description names it.
API_OF_DIALECT = {
    "ChatCompletions": "OpenAI Chat Completions",
    "Responses": "OpenAI Responses",
    "Messages": "Anthropic Messages",
}
# The agents every description names: cursor-agent's stream-json, and ACP agents.
AGENTS = ["cursor-agent", "ACP"]
DIALECT_FILE = "src/bridge/dialect.rs"

# Captured or generated data, not prose: never scanned for citations.
DATA_DIRS = ("tests/fixtures/", "fuzz/seeds/", "fuzz/dict/")
DATA_SUFFIXES = (".jsonl", ".lock", ".proptest-regressions", "package-lock.json")
# This file names every pattern it looks for.
SELF = "ci/check_docs.py"

Files = Dict[str, str]


class Violation(NamedTuple):
    path: str
    line: int  # 0: the file as a whole
    what: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.what}"


# --- 1. one description ---------------------------------------------------------------


def toml_description(text: str) -> Optional[str]:
    match = re.search(r'^description\s*=\s*"((?:[^"\\]|\\.)*)"', text, re.M)
    return match.group(1) if match else None


def json_description(text: str) -> Optional[str]:
    value = json.loads(text).get("description")
    return value if isinstance(value, str) else None


def first_doc_paragraph(text: str) -> Optional[str]:
    """The first paragraph of a Rust file's `//!` docs."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("//!"):
            break
        line = line[3:].strip()
        if not line:
            if lines:
                break
            continue
        lines.append(line)
    return " ".join(lines) or None


def first_readme_paragraph(text: str) -> Optional[str]:
    """The first paragraph of a README after its title."""
    lines: List[str] = []
    for line in text.splitlines():
        if line.startswith("#") and not lines:
            continue
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line.strip())
    return " ".join(lines) or None


def header_first_paragraph(text: str) -> Optional[str]:
    """The first paragraph of the C header's opening comment, as cbindgen.toml writes it."""
    match = re.search(r'^header\s*=\s*"""\s*/\*\n((?: \*[^\n]*\n)+)', text, re.M)
    if not match:
        return None
    lines = []
    for line in match.group(1).splitlines():
        line = line[2:].strip()
        if not line:
            break
        lines.append(line)
    return " ".join(lines) or None


DESCRIPTIONS: List["tuple[str, str, Callable[[str], Optional[str]]]"] = [
    ("Cargo.toml", "the crate's description", toml_description),
    ("src/lib.rs", "the crate's first paragraph", first_doc_paragraph),
    ("proxy/Cargo.toml", "the proxies' description", toml_description),
    ("bindings/python/pyproject.toml", "the wheel's description", toml_description),
    ("bindings/python/README.md", "the wheel's README", first_readme_paragraph),
    ("bindings/js/package.json", "the npm package's description", json_description),
    ("bindings/js/README.md", "the npm package's README", first_readme_paragraph),
    ("cbindgen.toml", "the C header's first paragraph", header_first_paragraph),
]


def dialects(text: str) -> Optional[List[str]]:
    """The variants of `pub enum Dialect`."""
    match = re.search(r"pub enum Dialect\s*\{(.*?)\n\}", text, re.S)
    if not match:
        return None
    body = re.sub(r"//[^\n]*|#\[[^\]]*\]", "", match.group(1))
    return re.findall(r"^\s*([A-Z]\w*)\s*,?\s*$", body, re.M)


def check_descriptions(files: Files) -> List[Violation]:
    found: List[Violation] = []
    variants = dialects(files.get(DIALECT_FILE, ""))
    if not variants:
        return [Violation(DIALECT_FILE, 0, "no `pub enum Dialect` to read the APIs from")]
    for variant in variants:
        if variant not in API_OF_DIALECT:
            found.append(
                Violation(
                    DIALECT_FILE,
                    0,
                    f"`Dialect::{variant}` has no API name in {SELF} (API_OF_DIALECT): name "
                    "it there and in every description",
                )
            )
    apis = [API_OF_DIALECT[v] for v in variants if v in API_OF_DIALECT]
    for path, what, read in DESCRIPTIONS:
        text = files.get(path)
        description = read(text) if text is not None else None
        if description is None:
            found.append(Violation(path, 0, f"{what} is missing"))
            continue
        plain = re.sub(r"\s+", " ", description.replace("`", ""))
        missing = [name for name in apis + AGENTS if name not in plain]
        if missing:
            found.append(
                Violation(
                    path,
                    0,
                    f"{what} does not name {', '.join(missing)} "
                    f"(every description names {', '.join(apis)} on {' and '.join(AGENTS)}): "
                    f"{plain!r}",
                )
            )
    return found


# --- 2. no citation of a document the repository does not hold -------------------------

PHRASES = [
    (re.compile(r"\bresearch\s+(?:notes?|sketch)\b", re.I), "cites research notes"),
    (re.compile(r"\bdesign\s+notes?\b", re.I), "cites design notes"),
    (re.compile(r"\btraps?\s+\d+", re.I), 'cites a "trap N" of a checklist'),
]
SECTION = re.compile(r"§\s*\d")
# What may stand before a `§`: an RFC, or a Markdown file (which must be held).
SECTION_SOURCE = re.compile(r"(?:\bRFC\s*\d+|[\w./-]+\.md`?),?\s*$")
MARKDOWN = re.compile(r"(?<![\w/.-])((?:\.\./|/)?(?:[\w.-]+/)*[\w-][\w.-]*\.md)\b")
SHARED = re.compile(r"(?<![\w.])(?:\.\./)+shared/(?!fixtures(?:/|\b))[\w.-]+")
LOCAL = re.compile(r"(?<![\w.])/work/[\w.-]+")
# Mentions of a Markdown name that cite nothing: a path in a test's made-up workspace.
NOT_CITATIONS = {("tests/bridge.rs", "/home/dev/project/NOTES.md")}


def scanned(path: str) -> bool:
    return path != SELF and not path.startswith(DATA_DIRS) and not path.endswith(DATA_SUFFIXES)


def check_citations(files: Files) -> List[Violation]:
    held = {Path(p).name for p in files}
    return [v for path, text in files.items() if scanned(path) for v in citations_in(path, text, held)]


def citations_in(path: str, text: str, held: "set[str]") -> List[Violation]:
    """The citations of one file; `held` is the name of every file the repository holds."""
    found: List[Violation] = []

    def markdown_held(name: str) -> bool:
        if re.match(r"(?:\.\./)+shared/fixtures/", name):
            return True
        return Path(name).name in held

    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in PHRASES:
            if pattern.search(line):
                found.append(Violation(path, number, f"{what}: {line.strip()}"))
        for match in SECTION.finditer(line):
            # A Markdown file named as the source is checked as every mention is, below.
            if not SECTION_SOURCE.search(line[: match.start()]):
                found.append(
                    Violation(
                        path,
                        number,
                        "cites a section (§) of something the repository does not hold "
                        f"(only an RFC's or a held Markdown file's): {line.strip()}",
                    )
                )
        for match in MARKDOWN.finditer(line):
            name = match.group(1)
            if (path, name) not in NOT_CITATIONS and not markdown_held(name):
                found.append(
                    Violation(path, number, f"cites {name}, which the repository does not hold")
                )
        for match in SHARED.finditer(line):
            found.append(
                Violation(
                    path,
                    number,
                    f"cites {match.group(0)}: only ../shared/fixtures (the real captures the "
                    "tests read) is outside the repository",
                )
            )
        for match in LOCAL.finditer(line):
            found.append(Violation(path, number, f"names a path on one machine: {match.group(0)}"))
    return found


# --- the repository --------------------------------------------------------------------


def repository_files() -> Files:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    files: Files = {}
    for path in filter(None, listed.split("\0")):
        try:
            data = (ROOT / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue  # deleted in the work tree, or a submodule
        if b"\0" in data:
            continue
        try:
            files[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return files


def check(files: Files) -> List[Violation]:
    return check_descriptions(files) + check_citations(files)


# --- the self-test ---------------------------------------------------------------------


def planted(files: Files, path: str, change: Callable[[str], str]) -> Files:
    copy = dict(files)
    before = copy[path]
    copy[path] = change(before)
    assert copy[path] != before, f"the plant in {path} changed nothing"
    return copy


def append(line: str) -> Callable[[str], str]:
    return lambda text: text + line + "\n"


def replace(old: str, new: str) -> Callable[[str], str]:
    def change(text: str) -> str:
        assert old in text, f"{old!r} is not there to replace"
        return text.replace(old, new, 1)

    return change


def self_test(files: Files) -> List[str]:
    """Plants each violation in the repository's text and returns what went unreported.

    What the repository already holds is left out of each comparison (the plain check
    reports it), so the self-test judges the check, not the repository."""
    failures: List[str] = []
    before = set(check(files))
    held = {Path(p).name for p in files}

    def check_planted(changed: Files, path: str) -> List[Violation]:
        # Only `path` changed: its citations and the descriptions are all that can differ.
        found = check_descriptions(changed)
        if scanned(path):
            found += citations_in(path, changed[path], held)
        return [v for v in found if v not in before]

    description = toml_description(files["Cargo.toml"]) or ""
    package = json_description(files["bindings/js/package.json"]) or ""
    # (what is planted, where, how, a word of the one violation expected there)
    violations = [
        (
            "a wheel described as Chat Completions only",
            "bindings/python/pyproject.toml",
            replace(
                toml_description(files["bindings/python/pyproject.toml"]) or "",
                "The OpenAI Chat Completions API on top of the cursor-agent CLI, as a sans-IO library",
            ),
            "OpenAI Responses",
        ),
        (
            "an npm package without the Anthropic Messages API",
            "bindings/js/package.json",
            replace(package, package.replace("Anthropic Messages", "Anthropic")),
            "Anthropic Messages",
        ),
        (
            "a crate that forgets ACP agents",
            "Cargo.toml",
            replace(description, description.replace("ACP", "other")),
            "ACP",
        ),
        (
            "a dialect the descriptions do not name",
            DIALECT_FILE,
            replace("    Messages,\n", "    Messages,\n    /// Gemini.\n    Gemini,\n"),
            "Dialect::Gemini",
        ),
        (
            "research notes",
            "src/lib.rs",
            append("// As the project's research notes on the CLI say."),
            "research notes",
        ),
        (
            "design notes",
            "proxy/src/http.rs",
            append("// DESIGN notes: where this departs from the plan."),
            "design notes",
        ),
        (
            "a trap of a checklist",
            "src/anthropic/mod.rs",
            append("//! - Ids safe for the API (trap 9)."),
            "trap N",
        ),
        (
            "a section of a document not held",
            "src/framing/sse.rs",
            append("//! What every client parses (see `openai-wire.md` §4)."),
            "openai-wire.md",
        ),
        (
            "a bare section",
            "tests/responses.rs",
            append("// The client's rules (§6.6)."),
            "section (§)",
        ),
        (
            "a Markdown file not held",
            "README.md",
            append("See DESIGN.md for the architecture."),
            "DESIGN.md",
        ),
        (
            "a path under ../shared that is not a capture",
            "ci/test.sh",
            append("# the notes in ../shared/research say why"),
            "../shared/research",
        ),
        (
            "a path on one machine",
            "bindings/python/agentwire/bridge.py",
            append("# /work/shared/fixtures holds them"),
            "/work/shared",
        ),
    ]
    for what, path, change, word in violations:
        changed = planted(files, path, change)
        got = check_planted(changed, path)
        # A planted line is the file's last; a description is reported for the whole file.
        line = len(changed[path].splitlines()) if changed[path].startswith(files[path]) else 0
        if len(got) != 1 or got[0][:2] != (path, line) or word.lower() not in got[0].what.lower():
            failures.append(
                f"planted {what} in {path}: expected one violation at line {line} naming "
                f"{word!r}, got {[str(v) for v in got]}"
            )
    allowed = [
        ("an RFC's section", "proxy/src/framing.rs", "// Chunked framing (RFC 9112 §7.1)."),
        ("a held Markdown file's section", "src/lib.rs", "// See `SECURITY.md` §2."),
        ("a held Markdown file", "ci/test.sh", "# see fuzz/README.md"),
        ("a capture", "tests/acp.rs", "// as ../shared/fixtures/PROVENANCE.md says"),
        ("a trap of a shell", "ci/package.sh", "trap 'rm -rf \"$dir\"' EXIT"),
    ]
    for what, path, line in allowed:
        got = check_planted(planted(files, path, append(line)), path)
        if got:
            failures.append(f"planted {what} in {path}, which is allowed: got {[str(v) for v in got]}")
    return failures


def main(argv: List[str]) -> int:
    files = repository_files()
    if argv[1:] == ["--self-test"]:
        failures = self_test(files)
        for failure in failures:
            print(f"{SELF} --self-test: {failure}", file=sys.stderr)
        if not failures:
            print(f"{SELF} --self-test: every planted violation reported, every allowed citation passed")
        return 1 if failures else 0
    if argv[1:]:
        print(f"usage: {SELF} [--self-test]", file=sys.stderr)
        return 2
    found = check(files)
    for violation in found:
        print(f"{SELF}: {violation}", file=sys.stderr)
    if found:
        print(
            f"{SELF}: {len(found)} finding(s): every description names the same APIs and agents, "
            "and nothing cites a document the repository does not hold (inline the fact)",
            file=sys.stderr,
        )
        return 1
    print(f"{SELF}: the descriptions agree; no citation of a document outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
