#!/usr/bin/env bash
# Builds the Python package from source into a virtualenv and runs its tests.
#
# The virtualenv (default .venv, or $AGENTWIRE_VENV) must hold pytest, maturin, cffi and
# mypy (bindings/python/requirements-dev.txt):
# `.ci/run` installs them; without it this script installs them first. The package itself
# is then built without network (no build isolation), with the `ffi-test-hooks` feature so
# the poisoned-handle tests run.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${AGENTWIRE_VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import pytest, maturin, cffi, mypy' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r bindings/python/requirements-dev.txt
fi
# maturin's build hooks run the `maturin` program from the virtualenv.
export PATH="$PWD/$venv/bin:$PATH"
start=$(date +%s)
MATURIN_PEP517_ARGS="--features ffi-test-hooks" \
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation \
    --force-reinstall --no-deps ./bindings/python
echo "    python package built and installed in $(($(date +%s) - start)) s"
AGENTWIRE_REQUIRE_TEST_HOOKS=1 "$venv/bin/pytest" -q -p no:cacheprovider bindings/python/tests
