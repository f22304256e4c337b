#!/usr/bin/env bash
# Installs the pinned real clients into this directory (ignored by git): openai-python,
# anthropic-python and pytest in python/.venv, the AI SDK in node/node_modules (the
# openai-compatible provider OpenCode bundles) and ai-sdk/node_modules (the Anthropic and
# OpenAI Responses providers), OpenCode in opencode/VERSION/, Claude Code in
# claude-code/VERSION/ and Codex in codex/VERSION/; and the real ACP agents the proxies are
# tested against (claude-agent-acp, codex-acp, Gemini CLI) in ../agents/node_modules.
# Installs nothing that is already there at its pinned version (ci/setup.sh runs it). Each
# install says what it installs, where and about how large it is, then how long it took;
# about 1.5 GB and two minutes in all, from npm and PyPI (their download caches, ~/.npm and
# ~/.cache/pip, fill as they install).
set -euo pipefail
cd "$(dirname "$0")"
installing() {
    echo "tests/clients/install.sh: $*"
    install_started=$SECONDS
}
installed() { echo "tests/clients/install.sh:     done in $((SECONDS - install_started)) s"; }

# openai-python and pytest, in a virtualenv of their own: their pins are the whole
# dependency closure, kept apart from the Python package's build tools in the root .venv.
venv=python/.venv
stamp=$venv/.agentwire-setup
key="$(python3 --version) $(sha256sum <python/requirements.txt)"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c '' 2>/dev/null && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
    echo "tests/clients/install.sh: tests/clients/$venv current"
else
    installing "installing openai-python, anthropic-python and pytest into tests/clients/$venv (pip; about 120 MB)"
    "$venv/bin/python" -c '' 2>/dev/null || python3 -m venv --clear "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements.txt
    printf '%s\n' "$key" >"$stamp"
    installed
fi

# npm ci wipes and rebuilds node_modules, so run it only when the lockfile is newer than
# the copy npm keeps of what it last installed (or nothing is installed yet).
# npm_ci DIR WHAT SIZE [FLAG...]: installs DIR's lockfile into DIR/node_modules.
npm_ci() {
    local dir=$1 what=$2 size=$3 shown=tests/clients/$1
    shown=${shown/clients\/..\//}
    shift 3
    if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        installing "installing $what into $shown/node_modules (npm; about $size)"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error "$@")
        installed
    else
        echo "tests/clients/install.sh: $shown/node_modules current"
    fi
}
npm_ci node "the AI SDK" "25 MB"
npm_ci ai-sdk "the AI SDK" "30 MB"
# The ACP agents need none of their install scripts (codex-acp's native binary is an
# optional dependency; Gemini CLI's would build optional native modules it runs without).
npm_ci ../agents "the ACP agents" "400 MB" --ignore-scripts

# Claude Code and Codex: npm packages whose platform-specific optional dependency carries
# the native binary (Claude Code's postinstall links it in place of its `bin` stub; Codex's
# `bin` is a node launcher that finds it). Each goes into a prefix of its own named after
# the pinned version; `version` is checked against what the installed package.json says.
# npm_cli NAME PACKAGE BIN SIZE: installs PACKAGE@$(cat NAME/version) into NAME/VERSION/.
npm_cli() {
    local name=$1 package=$2 bin=$3 size=$4 version installed
    version=$(cat "$name/version")
    installed=$name/$version/node_modules/$package/package.json
    if [ -x "$name/$version/node_modules/.bin/$bin" ] && [ -f "$installed" ] &&
        [ "$(node -p "require('./$installed').version")" = "$version" ]; then
        echo "tests/clients/install.sh: tests/clients/$name/$version current"
        return
    fi
    installing "installing $package@$version into tests/clients/$name/$version (npm; about $size)"
    rm -rf "${name:?}/$version"
    mkdir -p "$name/$version"
    # The engines field asks for node 22; both run under node 20 (only their launchers are
    # JavaScript), so the warning is silenced with the rest.
    npm install --prefix "$name/$version" --no-save --no-audit --no-fund --no-package-lock \
        --loglevel=error "$package@$version"
    if ! "$name/$version/node_modules/.bin/$bin" --version | grep -qF "$version"; then
        echo "tests/clients/install.sh: $name/$version/node_modules/.bin/$bin --version is not $version" >&2
        exit 1
    fi
    installed
}
npm_cli claude-code @anthropic-ai/claude-code claude "360 MB"
npm_cli codex @openai/codex codex "400 MB"

# OpenCode: `opencode-ai` on npm is a stub whose postinstall copies in the binary of a
# per-platform package; unpack that package directly instead (same binary, no install
# scripts). The variant is the one the postinstall would pick: arm64 or x64, `-baseline`
# on x64 CPUs without AVX2, `-musl` on musl systems.
version=$(cat opencode/version)
bin=opencode/$version/bin/opencode
if [ -x "$bin" ]; then
    echo "tests/clients/install.sh: tests/clients/$bin current"
else
    installing "unpacking OpenCode $version into tests/clients/opencode/$version (npm pack; about 180 MB)"
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
    # OpenCode (a Bun executable) writes into TMPDIR: the scratch directory, removed.
    if [ "$(TMPDIR="$scratch" "$bin" --version)" != "$version" ]; then
        echo "tests/clients/install.sh: $bin --version is not $version" >&2
        exit 1
    fi
    installed
fi
