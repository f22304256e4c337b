#!/usr/bin/env bash
# Installs what the test suite needs besides system packages, and nothing that is already
# there at its pinned version. ci/test.sh runs it first; a second run installs nothing and
# needs no network. Every install says what it installs, where, and about how long it
# takes, then how long it took.
#
#   ci/setup.sh [python] [clients] [crates] [wasm] [js] [fuzz]
#                                       (default: all but fuzz, which fuzz/run-smoke.sh
#                                       installs when run)
#
# Into the project's own directories (all ignored by git):
#   python   .venv: the Python package's build and test tools
#            (bindings/python/requirements-dev.txt), and .tools/wheelhouse: the wheels the
#            installed-wheel test puts beside agentwire's in a fresh virtualenv, offline
#            (bindings/python/requirements-test.txt)
#   clients  the pinned real clients (tests/clients/install.sh): openai-python and
#            anthropic-python in tests/clients/python/.venv, the AI SDK in
#            tests/clients/{node,ai-sdk}/node_modules, OpenCode, Claude Code and Codex in
#            tests/clients/{opencode,claude-code,codex}/VERSION/, and the ACP agents
#            (claude-agent-acp, codex-acp, Gemini CLI) in tests/agents/node_modules
#   wasm     the wasm-bindgen CLI of exactly the version Cargo.lock pins for the JavaScript
#            package (the generated glue must come from the same version), built from
#            source into .tools/bin; and the wasm32-unknown-unknown target (below)
#   js       the JavaScript package's build tools (typescript, @types/node) in
#            bindings/js/node_modules, and what judges it (the AI SDK, openai-node, Bun,
#            Deno, the examples' host types) in bindings/js/test/node_modules, each from its
#            committed lock file
#   fuzz     cargo-fuzz in .tools/bin (fuzz/run-smoke.sh puts it on PATH)
# Outside them:
#   wasm     the wasm32-unknown-unknown target's standard library, added by rustup to the
#            active Rust toolchain (rustc --print sysroot), where every target lives
#   crates   every crate the workspace, fuzz/ and the wasm-bindgen CLI build from, in
#            cargo's download cache ($CARGO_HOME/registry, ~/.cargo by default), so the
#            offline `cargo package` check (ci/package.sh) finds them
#   and pip's and npm's download caches (~/.cache/pip, ~/.npm) fill as they install.
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
# installing WHAT: says what is being installed, where and about how long it takes; then
# installed says how long it took.
installing() {
    say "$*"
    install_started=$SECONDS
}
installed() { say "    done in $((SECONDS - install_started)) s"; }

python_tools() {
    local key stamp=$venv/.agentwire-setup
    key="$(python3 --version) $(cat bindings/python/requirements-dev.txt bindings/python/requirements-test.txt | sha256sum)"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c '' 2>/dev/null && up_to_date "$stamp" "$key"; then
        say "$venv current"
    else
        installing "installing the Python build and test tools (maturin, cffi, pytest, mypy, build, twine: bindings/python/requirements-dev.txt) into $venv (pip; about 170 MB, a minute)"
        # --clear: a virtualenv whose interpreter is gone cannot be repaired in place.
        "$venv/bin/python" -c '' 2>/dev/null || python3 -m venv --clear "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r bindings/python/requirements-dev.txt
        printf '%s\n' "$key" >"$stamp"
        installed
    fi

    local wheelhouse=$tools/wheelhouse
    stamp=$wheelhouse/.agentwire-setup
    key="$("$venv/bin/python" --version) $(sha256sum <bindings/python/requirements-test.txt)"
    if up_to_date "$stamp" "$key"; then
        say ".tools/wheelhouse current"
    else
        installing "downloading the installed-wheel test's dependencies (bindings/python/requirements-test.txt) into .tools/wheelhouse (pip; about 20 MB, seconds)"
        mkdir -p "$wheelhouse"
        "$venv/bin/pip" download --quiet --disable-pip-version-check --only-binary=:all: \
            -d "$wheelhouse" -r bindings/python/requirements-test.txt
        printf '%s\n' "$key" >"$stamp"
        installed
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
        installing "building cargo-fuzz $CARGO_FUZZ_VERSION from source into .tools/bin (cargo install; its crates into cargo's cache; a few minutes)"
        cargo install --quiet --locked --root "$tools" cargo-fuzz --version "$CARGO_FUZZ_VERSION"
        installed
    fi
}

crates() {
    # cargo fetch downloads only what its cache lacks: nothing on a second run.
    installing "fetching the crates the workspace and fuzz/ build from into cargo's cache, ${CARGO_HOME:-~/.cargo}/registry (only those missing; about 200 MB unpacked and a minute on a fresh machine)"
    cargo fetch --quiet
    cargo fetch --quiet --manifest-path fuzz/Cargo.toml
    installed
}

wasm() {
    local sysroot
    sysroot=$(rustc --print sysroot)
    if [ -d "$sysroot/lib/rustlib/wasm32-unknown-unknown/lib" ]; then
        say "the wasm32-unknown-unknown target current (in the Rust toolchain, $sysroot)"
    elif command -v rustup >/dev/null; then
        installing "adding the wasm32-unknown-unknown target to the Rust toolchain, $sysroot/lib/rustlib (rustup; about 90 MB, under a minute; outside the project: the toolchain holds every target)"
        rustup target add wasm32-unknown-unknown
        installed
    else
        echo "ci/setup.sh: the Rust toolchain at $sysroot has no wasm32-unknown-unknown target, and there is no rustup to add it" >&2
        exit 1
    fi

    local want
    want=$(sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;q}' Cargo.lock)
    if [ -z "$want" ]; then
        echo "ci/setup.sh: Cargo.lock pins no wasm-bindgen" >&2
        exit 1
    fi
    if [ "$("$tools/bin/wasm-bindgen" --version 2>/dev/null)" = "wasm-bindgen $want" ]; then
        say ".tools/bin/wasm-bindgen $want current"
    else
        installing "building wasm-bindgen-cli $want from source into .tools/bin (cargo install; its crates into cargo's cache; about 5 minutes on two idle cores, 15 on a loaded machine)"
        # Without default features: they only add TLS to the test runner's webdriver
        # downloads. --locked uses the CLI's published lock file; where the registry cannot
        # serve every version it names, the newest compatible dependencies are used instead.
        local install=(cargo install --quiet --force --root "$tools" --no-default-features wasm-bindgen-cli --version "=$want")
        if ! "${install[@]}" --locked 2>/dev/null; then
            say "    its published lock file cannot be served; building with the newest compatible dependencies"
            "${install[@]}"
        fi
        installed
    fi
}

js() {
    # Only when the lock file is newer than what npm last installed. No install scripts run
    # (the package's own `prepare` would build it), but Bun's and Deno's, which link their
    # binaries. The test project installs with `npm install --no-save` from its lock file,
    # not `npm ci`: the registry does not serve every platform's binary package (the
    # optional dependencies of Deno and of msgpackr-extract), so the lock file cannot list
    # them all, which `npm ci` refuses.
    if stale bindings/js; then
        installing "installing the JavaScript package's build tools (typescript, @types/node) into bindings/js/node_modules (npm; about 30 MB, seconds)"
        (cd bindings/js && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        installed
    else
        say "bindings/js/node_modules current"
    fi
    if stale bindings/js/test; then
        installing "installing what judges the JavaScript package (the AI SDK, openai-node, Bun, Deno, the examples' host types) into bindings/js/test/node_modules (npm; about 350 MB, a minute or two)"
        (cd bindings/js/test && npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error &&
            npm rebuild --loglevel=error bun deno)
        installed
    else
        say "bindings/js/test/node_modules current"
    fi
}
# stale DIR: whether DIR's lock file is newer than what npm last installed into it.
stale() {
    [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python clients crates wasm js)
for part in "${parts[@]}"; do
    case "$part" in
        python) python_tools ;;
        clients) clients ;;
        crates) crates ;;
        wasm) wasm ;;
        js) js ;;
        fuzz) fuzz ;;
        *) echo "ci/setup.sh: unknown part '$part' (python, clients, crates, wasm, js, fuzz)" >&2; exit 2 ;;
    esac
done
