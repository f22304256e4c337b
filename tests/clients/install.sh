#!/usr/bin/env bash
# Installs the pinned real clients (openai-python with pytest, the AI SDK, OpenCode) into
# this directory (ignored by git): python/.venv, node/node_modules, opencode/VERSION/.
# Installs nothing that is already there at its pinned version (ci/setup.sh runs it).
set -euo pipefail
cd "$(dirname "$0")"

# openai-python and pytest, in a virtualenv of their own: their pins are the whole
# dependency closure, kept apart from the Python package's build tools in the root .venv.
venv=python/.venv
stamp=$venv/.agentwire-setup
key="$(python3 --version) $(sha256sum <python/requirements.txt)"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c '' 2>/dev/null && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
    echo "tests/clients/install.sh: tests/clients/$venv current"
else
    echo "tests/clients/install.sh: installing openai-python into tests/clients/$venv"
    "$venv/bin/python" -c '' 2>/dev/null || python3 -m venv --clear "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements.txt
    printf '%s\n' "$key" >"$stamp"
fi

# npm ci wipes and rebuilds node_modules, so run it only when the lockfile is newer than
# the copy npm keeps of what it last installed (or nothing is installed yet).
if [ ! -f node/node_modules/.package-lock.json ] || [ node/package-lock.json -nt node/node_modules/.package-lock.json ]; then
    echo "tests/clients/install.sh: installing the AI SDK into tests/clients/node/node_modules"
    (cd node && npm ci --no-audit --no-fund --loglevel=error)
else
    echo "tests/clients/install.sh: tests/clients/node/node_modules current"
fi

# OpenCode: `opencode-ai` on npm is a stub whose postinstall copies in the binary of a
# per-platform package; unpack that package directly instead (same binary, no install
# scripts). The variant is the one the postinstall would pick: arm64 or x64, `-baseline`
# on x64 CPUs without AVX2, `-musl` on musl systems.
version=$(cat opencode/version)
bin=opencode/$version/bin/opencode
if [ -x "$bin" ]; then
    echo "tests/clients/install.sh: tests/clients/$bin current"
else
    echo "tests/clients/install.sh: unpacking OpenCode $version into tests/clients/opencode/$version"
    case "$(uname -m)" in
        x86_64 | amd64) arch=x64 ;;
        aarch64 | arm64) arch=arm64 ;;
        *) echo "tests/clients/install.sh: no OpenCode build for $(uname -m)" >&2; exit 1 ;;
    esac
    package=opencode-linux-$arch
    if [ "$arch" = x64 ] && ! grep -qw avx2 /proc/cpuinfo; then package=$package-baseline; fi
    if ldd --version 2>&1 | grep -qi musl; then package=$package-musl; fi
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    (cd "$scratch" && npm pack --silent --loglevel=error "$package@$version" >/dev/null)
    mkdir -p "opencode/$version"
    tar -xzf "$scratch"/*.tgz -C "opencode/$version" --strip-components=1
    if [ "$("$bin" --version)" != "$version" ]; then
        echo "tests/clients/install.sh: $bin --version is not $version" >&2
        exit 1
    fi
fi
