#!/usr/bin/env bash
# Installs what building and testing the JavaScript package needs: `ci/setup.sh wasm js`
# (see there what goes where: the pinned wasm-bindgen CLI into <repository>/.tools, the
# npm dependencies into bindings/js/node_modules and bindings/js/test/node_modules, and the
# wasm32-unknown-unknown target into the Rust toolchain). Idempotent, and quick when
# everything is there.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec ci/setup.sh wasm js
