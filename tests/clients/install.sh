#!/usr/bin/env bash
# Installs the pinned real clients (openai-python with pytest, the AI SDK) on a fresh
# machine. Idempotent, and quick when they are already there.
set -euo pipefail
cd "$(dirname "$0")"

# pip returns in about a second when every pin is already satisfied.
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r python/requirements.txt

# npm ci wipes and rebuilds node_modules, so run it only when the lockfile is newer than
# the copy npm keeps of what it last installed (or nothing is installed yet).
if [ ! -f node/node_modules/.package-lock.json ] || [ node/package-lock.json -nt node/node_modules/.package-lock.json ]; then
    (cd node && npm ci --no-audit --no-fund --loglevel=error)
fi
