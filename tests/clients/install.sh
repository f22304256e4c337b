#!/usr/bin/env bash
# Installs the pinned real clients (openai-python, the AI SDK) on a fresh machine.
# Idempotent, and quick when they are already there.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install --quiet --disable-pip-version-check -r python/requirements.txt
if [ ! -d node/node_modules/@ai-sdk/openai-compatible ] || [ node/package-lock.json -nt node/node_modules/.package-lock.json ]; then
    (cd node && npm ci --no-audit --no-fund --loglevel=error)
fi
