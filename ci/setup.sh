#!/usr/bin/env bash
# Installs what the test suite needs besides system packages, into the project's own
# directories (all ignored by git), and nothing that is already there at its pinned
# version. ci/test.sh runs it first; a second run installs nothing and needs no network.
#
#   ci/setup.sh [python] [clients] [fuzz] [crates]      (default: all but fuzz, which
#                                                       fuzz/run-smoke.sh installs when run)
#
#   python   .venv: the Python package's build and test tools
#            (bindings/python/requirements-dev.txt), and .tools/wheelhouse: the wheels the
#            installed-wheel test puts beside agentwire's in a fresh virtualenv, offline
#            (bindings/python/requirements-test.txt)
#   clients  the pinned real clients (tests/clients/install.sh): openai-python and
#            anthropic-python in tests/clients/python/.venv, the AI SDK in
#            tests/clients/{node,ai-sdk}/node_modules, OpenCode, Claude Code and Codex in
#            tests/clients/{opencode,claude-code,codex}/VERSION/, and the ACP agents
#            (claude-agent-acp, codex-acp, Gemini CLI) in tests/agents/node_modules
#   fuzz     cargo-fuzz in .tools/bin (fuzz/run-smoke.sh puts it on PATH)
#   crates   every crate the workspace and fuzz/ build from, in cargo's cache, so the
#            offline `cargo package` check (ci/package.sh) finds them
#
# Environment: AGENTWIRE_VENV overrides .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2

venv=${AGENTWIRE_VENV:-.venv}
tools=$PWD/.tools

# up_to_date STAMP KEY: whether the last install recorded in STAMP was made from KEY (the
# pins and the interpreter it was made with).
up_to_date() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
say() { printf 'ci/setup.sh: %s\n' "$*"; }

python_tools() {
    local key stamp=$venv/.agentwire-setup
    key="$(python3 --version) $(cat bindings/python/requirements-dev.txt bindings/python/requirements-test.txt | sha256sum)"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c '' 2>/dev/null && up_to_date "$stamp" "$key"; then
        say "$venv current"
    else
        say "installing the Python build and test tools into $venv"
        # --clear: a virtualenv whose interpreter is gone cannot be repaired in place.
        "$venv/bin/python" -c '' 2>/dev/null || python3 -m venv --clear "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r bindings/python/requirements-dev.txt
        printf '%s\n' "$key" >"$stamp"
    fi

    local wheelhouse=$tools/wheelhouse
    stamp=$wheelhouse/.agentwire-setup
    key="$("$venv/bin/python" --version) $(sha256sum <bindings/python/requirements-test.txt)"
    if up_to_date "$stamp" "$key"; then
        say ".tools/wheelhouse current"
    else
        say "downloading the installed-wheel test's dependencies into .tools/wheelhouse"
        mkdir -p "$wheelhouse"
        "$venv/bin/pip" download --quiet --disable-pip-version-check --only-binary=:all: \
            -d "$wheelhouse" -r bindings/python/requirements-test.txt
        printf '%s\n' "$key" >"$stamp"
    fi
}

clients() {
    tests/clients/install.sh
}

fuzz() {
    # `cargo-fuzz --version` answers for the binary itself ("cargo-fuzz 0.13.2").
    if [ "$("$tools/bin/cargo-fuzz" --version 2>/dev/null)" = "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
        say ".tools/bin/cargo-fuzz $CARGO_FUZZ_VERSION current"
    else
        say "building cargo-fuzz $CARGO_FUZZ_VERSION into .tools/bin (a few minutes)"
        cargo install --quiet --locked --root "$tools" cargo-fuzz --version "$CARGO_FUZZ_VERSION"
    fi
}

crates() {
    cargo fetch --quiet
    cargo fetch --quiet --manifest-path fuzz/Cargo.toml
    say "crates fetched"
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python clients crates)
for part in "${parts[@]}"; do
    case "$part" in
        python) python_tools ;;
        clients) clients ;;
        fuzz) fuzz ;;
        crates) crates ;;
        *) echo "ci/setup.sh: unknown part '$part' (python, clients, fuzz, crates)" >&2; exit 2 ;;
    esac
done
