#!/usr/bin/env bash
# Installs the C library: include/agentwire.h, libagentwire.a, libagentwire.so and a
# pkg-config file under PREFIX.
#
#   bindings/c/install.sh PREFIX [LIB_DIR]
#
# LIB_DIR holds the built libraries (default target/release: run `cargo build --release`
# first). Then: cc app.c $(pkg-config --cflags --libs agentwire) with
# PKG_CONFIG_PATH=PREFIX/lib/pkgconfig (shared), or link PREFIX/lib/libagentwire.a and
# $(pkg-config --libs --static agentwire) minus -lagentwire (static).
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=${1:?usage: bindings/c/install.sh PREFIX [LIB_DIR]}
lib_dir=${2:-target/release}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
install -m 644 include/agentwire.h "$prefix/include/"
install -m 644 "$lib_dir/libagentwire.a" "$prefix/lib/"
install -m 755 "$lib_dir/libagentwire.so" "$prefix/lib/"
sed -e "s|@PREFIX@|$(cd "$prefix" && pwd)|" -e "s|@VERSION@|$version|" \
    bindings/c/agentwire.pc.in > "$prefix/lib/pkgconfig/agentwire.pc"
