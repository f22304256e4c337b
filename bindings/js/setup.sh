#!/usr/bin/env bash
# Installs what building and testing the JavaScript package needs. Idempotent, and quick when
# everything is there. Everything goes into the project's own directories (the toolchain
# aside, which gets the wasm32 target):
#   - the wasm32-unknown-unknown target (rustup);
#   - the wasm-bindgen CLI of exactly the version Cargo.lock pins for the crate, into
#     <repository>/.tools (the generated glue must come from the same version);
#   - the package's build tools (typescript, @types/node) into bindings/js/node_modules, and
#     what judges it (the AI SDK, openai-node, Bun, Deno, the examples' host types) into
#     bindings/js/test/node_modules, each from its committed lock file.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi

want=$(sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;q}' Cargo.lock)
if [ -z "$want" ]; then
    echo "bindings/js/setup.sh: Cargo.lock pins no wasm-bindgen" >&2
    exit 1
fi
if [ "$(.tools/bin/wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $want" ]; then
    # Without default features: they only add TLS to the test runner's webdriver downloads.
    # --locked uses the CLI's published lock file; where the registry cannot serve every
    # version it names, the newest compatible dependencies are used instead.
    install=(cargo install --quiet --force --root .tools --no-default-features wasm-bindgen-cli --version "=$want")
    if ! "${install[@]}" --locked 2>/dev/null; then
        "${install[@]}"
    fi
fi

# Only when the lock file is newer than what npm last installed. No install scripts run (the
# package's own `prepare` would build it), but Bun's and Deno's, which link their binaries.
# The test project installs with `npm install --no-save` from its lock file, not `npm ci`:
# the registry does not serve every platform's binary package (the optional dependencies of
# Deno and of msgpackr-extract), so the lock file cannot list them all, which `npm ci` refuses.
stale() {
    [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]
}
if stale bindings/js; then
    (cd bindings/js && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
if stale bindings/js/test; then
    (cd bindings/js/test && npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error &&
        npm rebuild --loglevel=error bun deno)
fi
