#!/usr/bin/env bash
# The Python package's tests (tests/), run two ways:
#
#   bindings/python/run-tests.sh [source] [wheel]      (default: both)
#
#   source  builds the package from the source tree into .venv, with the `ffi-test-hooks`
#           feature so that the poisoned-handle tests run, and tests it there;
#   wheel   builds what a release publishes into target/python-dist, with `python -m build`
#           and maturin: the sdist, then a wheel built from that sdist (so the sdist is known
#           to be complete);
#           checks both with `twine check --strict`; installs the wheel, and nothing else
#           of the package, into a fresh virtualenv, offline; checks the installed metadata
#           and licence files; and runs tests/ against the installed package, from outside
#           the source tree (a release has no test hooks: those tests skip).
#
# The tools come from .venv (or $AGENTWIRE_VENV), which `ci/setup.sh python` fills; this
# runs it first (it installs nothing when .venv is current). Without network once set up:
# the package builds without build isolation, and the fresh virtualenv gets pytest and
# cffi from .tools/wheelhouse.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv=${AGENTWIRE_VENV:-.venv}
ci/setup.sh python
# maturin's build hooks run the `maturin` program from the virtualenv.
export PATH="$root/$venv/bin:$PATH"
pip=("$root/$venv/bin/pip" --disable-pip-version-check)
# What the tests write (pytest's tmp_path directories) and the wheel test's empty working
# directory: under one temporary directory, removed when this script exits, however.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

from_source() {
    echo "==> Python package built from source, tested in $venv"
    local start=$SECONDS
    MATURIN_PEP517_ARGS="--features ffi-test-hooks" \
        "${pip[@]}" install --quiet --no-build-isolation --force-reinstall --no-deps ./bindings/python
    echo "    python package built and installed in $((SECONDS - start)) s"
    AGENTWIRE_REQUIRE_TEST_HOOKS=1 "$venv/bin/pytest" -q -p no:cacheprovider --basetemp="$scratch/pytest-source" bindings/python/tests
}

from_wheel() {
    echo "==> Python sdist and wheel, the wheel tested as installed"
    local dist=$root/target/python-dist fresh=$root/target/python-wheel-venv start=$SECONDS
    rm -rf "$dist" "$fresh"
    mkdir -p "$dist"
    # `python -m build` as a release runs it: the sdist, then a wheel built from the
    # unpacked sdist. `--compatibility pypi`: a platform tag PyPI accepts (manylinux_2_X,
    # X from the glibc symbols the library uses). The crates are shared with the other
    # builds' target directory.
    CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target} MATURIN_PEP517_ARGS="--compatibility pypi" \
        "$venv/bin/python" -m build --no-isolation --outdir "$dist" bindings/python >"$dist/build.log" 2>&1 ||
        { cat "$dist/build.log"; exit 1; }
    local sdist wheel
    sdist=$(echo "$dist"/agentwire_bridge-*.tar.gz)
    wheel=$(echo "$dist"/agentwire_bridge-*.whl)
    echo "    sdist and wheel built in $((SECONDS - start)) s: $(basename "$sdist") $(du -k "$sdist" | cut -f1) KiB, $(basename "$wheel") $(du -k "$wheel" | cut -f1) KiB"
    "$venv/bin/twine" check --strict "$sdist" "$wheel"

    python3 -m venv --without-pip "$fresh"
    "${pip[@]}" --python "$fresh/bin/python" install --quiet --no-index \
        --find-links "$root/.tools/wheelhouse" -r bindings/python/requirements-test.txt "$wheel"

    # Everything below runs from an empty directory, so nothing but the installed package
    # can be imported as `agentwire` (pytest adds only tests/ itself to sys.path).
    local away=$scratch/away
    mkdir "$away"
    cat >"$away/installed_wheel.py" <<'EOF'
"""Checks the installed wheel: its metadata and licence files, that its sources parse as
the oldest Python it declares, and that the tests imported it and not the source tree."""

import ast
import importlib.metadata
import os
import sys
from pathlib import Path

FRESH = Path(os.environ["AGENTWIRE_WHEEL_VENV"]).resolve()


def check_installed():
    dist = importlib.metadata.distribution("agentwire-bridge")
    meta = dist.metadata
    assert meta["License-Expression"] == "MIT OR Apache-2.0", meta["License-Expression"]
    licences = sorted(f.name for f in dist.files if "licenses" in f.parts)
    assert licences == ["LICENSE-APACHE", "LICENSE-MIT"], licences
    assert meta["Description-Content-Type"].startswith("text/markdown")
    assert meta["Summary"] and meta.get_all("Classifier")
    oldest = meta["Requires-Python"].removeprefix(">=")
    version = tuple(int(part) for part in oldest.split("."))
    sources = [f for f in dist.files if f.suffix == ".py" and f.parts[0] == "agentwire"]
    assert sources
    for source in sources:
        ast.parse(source.read_text(), str(source), feature_version=version)
    print(f"    installed: {dist.version}, {meta['License-Expression']}, licences {licences}, "
          f"{len(sources)} modules parse as Python {oldest}")


def pytest_collection_finish(session):
    module = Path(sys.modules["agentwire"].__file__).resolve()
    assert module.is_relative_to(FRESH), f"the tests imported {module}, not the installed wheel"


if __name__ == "__main__":
    check_installed()
EOF
    (
        cd "$away"
        export AGENTWIRE_WHEEL_VENV=$fresh
        "$fresh/bin/python" installed_wheel.py
        "$fresh/bin/python" -m pytest -q -p no:cacheprovider -p installed_wheel --basetemp="$scratch/pytest-wheel" "$root/bindings/python/tests"
    )
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(source wheel)
for part in "${parts[@]}"; do
    case "$part" in
        source) from_source ;;
        wheel) from_wheel ;;
        *) echo "bindings/python/run-tests.sh: unknown part '$part' (source, wheel)" >&2; exit 2 ;;
    esac
done
