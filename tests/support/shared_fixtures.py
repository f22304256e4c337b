"""The real captures beside the repository (`../shared/fixtures`), found one way by every
Python test (the real clients' suites in tests/clients/python, the package's in
bindings/python/tests), with the rules of the Rust tests' finder (tests/support/shared.rs):

- present: every file a test names must be there; a renamed, missing, unreadable or empty
  capture set fails, it is never taken for absence;
- absent: the tests over the captures are reported as skipped (`skip_if_absent`, or an
  empty parameter set);
- absent under `CI=true` or `AGENTWIRE_REQUIRE_SHARED=1`: a failure.

`AGENTWIRE_SHARED_DIR` names the directory used in place of `../shared` (the one holding
`fixtures/`). Every function takes the environment as an argument, so that the rules are
tested on temporary directories (bindings/python/tests/test_shared_fixtures.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Mapping, Optional

ROOT = Path(__file__).resolve().parents[2]
DIR_VAR = "AGENTWIRE_SHARED_DIR"
REQUIRE_VAR = "AGENTWIRE_REQUIRE_SHARED"


class SharedFixturesError(AssertionError):
    """The real captures are absent where they are required, or not what the tests name."""


def shared_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The directory standing for `../shared`."""
    override = environ.get(DIR_VAR)
    return Path(override) if override else ROOT.parent / "shared"


def required(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether absence is a failure: `CI=true` or `AGENTWIRE_REQUIRE_SHARED=1`."""
    return environ.get("CI", "").lower() in ("true", "1") or environ.get(REQUIRE_VAR, "").lower() in ("1", "true")


def fixtures_dir(environ: Mapping[str, str] = os.environ) -> Optional[Path]:
    """`fixtures/` when present, None when absent; raises when absent and required."""
    directory = shared_dir(environ) / "fixtures"
    if directory.is_dir():
        return directory
    if required(environ):
        raise SharedFixturesError(
            f"the real captures {directory} are absent, and CI=true or {REQUIRE_VAR}=1 requires them "
            f"(set {DIR_VAR} to where they are)"
        )
    return None


def absent_reason(environ: Mapping[str, str] = os.environ) -> str:
    return f"the real captures {shared_dir(environ) / 'fixtures'} are absent"


def files(relative: str = "cursor-agent", pattern: str = "*.jsonl", environ: Mapping[str, str] = os.environ) -> List[Path]:
    """The files of `fixtures/<relative>` matching `pattern`, sorted: at least one when the
    captures are present (raises otherwise), none when they are absent (raises when
    required)."""
    directory = fixtures_dir(environ)
    if directory is None:
        return []
    where = directory / relative
    if not where.is_dir():
        raise SharedFixturesError(f"{where}: missing from the real captures")
    found = sorted(p for p in where.glob(pattern) if p.is_file())
    if not found:
        raise SharedFixturesError(f"{where}: no {pattern} in the real captures")
    return found


def path(relative: str, environ: Mapping[str, str] = os.environ) -> Optional[Path]:
    """The file `fixtures/<relative>`, which must exist when the captures are present; None
    when they are absent (raises when required)."""
    directory = fixtures_dir(environ)
    if directory is None:
        return None
    found = directory / relative
    if not found.is_file():
        raise SharedFixturesError(f"{found}: missing from the real captures (renamed or deleted?)")
    return found


def skip_if_absent(environ: Mapping[str, str] = os.environ) -> Path:
    """Inside a test: `fixtures/`, or the test skipped (failed when required)."""
    import pytest

    try:
        directory = fixtures_dir(environ)
    except SharedFixturesError as error:
        pytest.fail(str(error))
    if directory is None:
        pytest.skip(absent_reason(environ))
    return directory
