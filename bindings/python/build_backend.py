"""PEP 517 build backend: maturin, after writing the header cffi reads, and with an sdist
that holds the library and not the repository's test kit.

maturin's cffi mode hands cffi a C header to learn the library's declarations from. cffi's
parser knows no preprocessor, and agentwire's header (include/agentwire.h, the C user's
manual) has include guards, includes and the C23/C++ conditionals cbindgen writes for
fixed-size enums. maturin takes ``<cargo target dir>/header.h`` when that file exists, so
this backend writes it first: the committed header with its preprocessor lines resolved for
plain C99.

maturin puts every path dependency of the crate in the sdist, its dev-dependencies too, and
so the test kit (``testkit/``, the package the repository's Rust tests and fuzz targets
share). The sdist is rewritten without it, as ``cargo package`` leaves it out of the crate:
its files and its lines in Cargo.toml go. Everything else is maturin's.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import maturin

HERE = Path(__file__).resolve().parent


def _manifest() -> Path:
    """The crate's Cargo.toml: pyproject.toml's ``manifest-path``, which is ``../../Cargo.toml``
    in the repository and ``Cargo.toml`` in the sdist (maturin rewrites it there)."""
    text = (HERE / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^manifest-path\s*=\s*"([^"]+)"', text, re.M)
    if match is None:
        raise RuntimeError("pyproject.toml has no [tool.maturin] manifest-path")
    return (HERE / match.group(1)).resolve()


MANIFEST = _manifest()
HEADER = MANIFEST.parent / "include" / "agentwire.h"

# The macros the header is resolved with: C99, not C++. AW_TEST_HOOKS is kept defined so the
# test-only functions are declared; they exist in the library only when it is built with the
# `ffi-test-hooks` feature, and the package looks them up lazily.
DEFINED = {"__STDC_VERSION__": 199901, "AW_TEST_HOOKS": 1}

_DEFINED_CALL = re.compile(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_INTEGER_DEFINE = re.compile(r"#\s*define\s+(\w+)\s+(\d+)\s*$")


def _evaluate(condition: str) -> bool:
    """Evaluates a preprocessor condition of the simple forms cbindgen writes."""
    expr = _DEFINED_CALL.sub(
        lambda m: "1" if (m.group(1) or m.group(2)) in DEFINED else "0", condition
    )
    expr = re.sub(r"(\d+)[LlUu]+\b", r"\1", expr)
    expr = expr.replace("||", " or ").replace("&&", " and ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    expr = _IDENTIFIER.sub(
        lambda m: m.group(0)
        if m.group(0) in ("or", "and", "not")
        else str(DEFINED.get(m.group(0), 0)),
        expr,
    )
    return bool(eval(expr, {"__builtins__": {}}, {}))  # noqa: S307 - digits and operators only


def cffi_header(text: str) -> str:
    """The header with every preprocessor line resolved: what cffi's parser accepts.

    Keeps the declarations of taken branches and integer ``#define``s (cffi reads those as
    constants); drops includes, include guards and everything else.
    """
    out = []
    # One entry per open conditional: (this branch taken, any branch taken, parent active).
    stack: list[tuple[bool, bool, bool]] = []
    active = True
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            if active:
                out.append(line)
            continue
        directive = stripped[1:].strip()
        word = directive.split(None, 1)[0] if directive else ""
        rest = directive[len(word) :].split("//", 1)[0].strip()
        if word in ("if", "ifdef", "ifndef"):
            if word == "ifdef":
                taken = rest in DEFINED
            elif word == "ifndef":
                # The include guard is never defined here.
                taken = rest not in DEFINED
            else:
                taken = _evaluate(rest)
            stack.append((taken, taken, active))
            active = active and taken
        elif word in ("elif", "else"):
            _, any_taken, parent = stack.pop()
            taken = not any_taken and (word == "else" or _evaluate(rest))
            stack.append((taken, any_taken or taken, parent))
            active = parent and taken
        elif word == "endif":
            _, _, active = stack.pop()
        elif word == "define" and active:
            match = _INTEGER_DEFINE.match(stripped)
            if match:
                out.append(f"#define {match.group(1)} {match.group(2)}")
    if stack:
        raise ValueError("unbalanced #if in the header")
    return "\n".join(out) + "\n"


def _target_dir() -> Path:
    if os.environ.get("CARGO_TARGET_DIR"):
        return Path(os.environ["CARGO_TARGET_DIR"])
    metadata = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--manifest-path", str(MANIFEST)],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(json.loads(metadata.stdout)["target_directory"])


def _write_header() -> None:
    target = _target_dir()
    target.mkdir(parents=True, exist_ok=True)
    (target / "header.h").write_text(cffi_header(HEADER.read_text(encoding="utf-8")), encoding="utf-8")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _write_header()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _write_header()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


get_requires_for_build_wheel = maturin.get_requires_for_build_wheel
get_requires_for_build_editable = maturin.get_requires_for_build_editable
prepare_metadata_for_build_wheel = maturin.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = maturin.prepare_metadata_for_build_editable
# The test kit's directory, and its package name in the crate's dev-dependencies.
TEST_KIT = "testkit"
TEST_KIT_PACKAGE = "agentwire-testkit"


def without_test_kit(manifest: str) -> str:
    """The sdist's Cargo.toml without the test kit: its dev-dependency (with the comment
    lines above it) and its workspace member."""
    text, dependencies = re.subn(
        rf"(?m)^(?:#.*\n)*{re.escape(TEST_KIT_PACKAGE)}\s*=.*\n", "", manifest
    )

    def members(match: re.Match[str]) -> str:
        kept = [m for m in re.findall(r'"([^"]*)"', match.group(1)) if m != TEST_KIT]
        return "members = [" + ", ".join(f'"{m}"' for m in kept) + "]"

    text, lists = re.subn(r"(?m)^members\s*=\s*\[([^\]]*)\]", members, text)
    if dependencies != 1 or lists != 1 or TEST_KIT_PACKAGE in text:
        raise RuntimeError(
            f"the sdist's Cargo.toml: expected one {TEST_KIT_PACKAGE} dependency and one members "
            f"list, found {dependencies} and {lists}"
        )
    return text


def _drop_test_kit(sdist: Path) -> None:
    with tarfile.open(sdist, "r:gz") as source:
        entries = [
            (member, source.extractfile(member).read() if member.isfile() else None)
            for member in source.getmembers()
        ]
    rewritten = sdist.with_name(sdist.name + ".partial")
    with tarfile.open(rewritten, "w:gz", format=tarfile.PAX_FORMAT) as out:
        for member, data in entries:
            # Every member is under the sdist's one top directory, `<name>-<version>/`.
            path = member.name.partition("/")[2]
            if path == TEST_KIT or path.startswith(TEST_KIT + "/"):
                continue
            if path == "Cargo.toml":
                data = without_test_kit(data.decode("utf-8")).encode("utf-8")
                member.size = len(data)
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    os.replace(rewritten, sdist)


def build_sdist(sdist_directory, config_settings=None):
    name = maturin.build_sdist(sdist_directory, config_settings)
    _drop_test_kit(Path(sdist_directory) / name)
    return name


get_requires_for_build_sdist = maturin.get_requires_for_build_sdist
