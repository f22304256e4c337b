#!/usr/bin/env bash
# Installs the C library under PREFIX, laid out as a distribution package lays it out:
#
#   PREFIX/include/agentwire.h
#   PREFIX/lib/libagentwire.a
#   PREFIX/lib/libagentwire.so.MAJOR.MINOR.PATCH   the shared library
#   PREFIX/lib/libagentwire.so.MAJOR               link named by its SONAME: what programs load
#   PREFIX/lib/libagentwire.so                     link that `-lagentwire` finds when linking
#   PREFIX/lib/pkgconfig/agentwire.pc
#
#   bindings/c/install.sh PREFIX [LIB_DIR]
#
# LIB_DIR holds the built libraries (default target/release: run `cargo build --release`
# first). The version is the C ABI's, AW_VERSION_* in the header; the library's SONAME is
# libagentwire.so.MAJOR (build.rs), checked here when readelf is there. The libraries are
# installed without debug information, as distributions install theirs: the release
# profile keeps line tables (`debug = 1`, for the proxies' backtraces), which make the
# built .so about 11 MiB and the .a about 37 MiB; installed, the .so is stripped of every
# symbol it does not export (about 1.4 MiB) and the .a of its debug sections only (about
# 16 MiB: its objects keep the symbols a link needs). `strip` (binutils) does it; STRIP
# names another. Then, with
# PKG_CONFIG_PATH=PREFIX/lib/pkgconfig:
#   shared: cc app.c $(pkg-config --cflags --libs agentwire) -Wl,-rpath,PREFIX/lib
#           (or run the program with LD_LIBRARY_PATH=PREFIX/lib)
#   static: cc app.c -IPREFIX/include PREFIX/lib/libagentwire.a -lgcc_s -lutil -lrt -lpthread
#           -lm -ldl  (the libraries are agentwire.pc's Libs.private)
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=${1:?usage: bindings/c/install.sh PREFIX [LIB_DIR]}
lib_dir=${2:-target/release}
header=include/agentwire.h

abi() { sed -n "s/^#define AW_VERSION_$1 \([0-9]*\)$/\1/p" "$header"; }
major=$(abi MAJOR)
version=$major.$(abi MINOR).$(abi PATCH)
soname=libagentwire.so.$major
if command -v readelf >/dev/null; then
    built=$(readelf -d "$lib_dir/libagentwire.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
    if [ "$built" != "$soname" ]; then
        echo "bindings/c/install.sh: $lib_dir/libagentwire.so has SONAME '$built', the header says $soname (rebuild it)" >&2
        exit 1
    fi
fi

strip=${STRIP:-strip}
if ! command -v "$strip" >/dev/null; then
    echo "bindings/c/install.sh: '$strip' not found: it installs the libraries without their debug information (binutils; STRIP names another)" >&2
    exit 1
fi

mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
prefix=$(cd "$prefix" && pwd)
install -m 644 "$header" "$prefix/include/"
"$strip" --strip-debug -o "$prefix/lib/libagentwire.a" "$lib_dir/libagentwire.a"
chmod 644 "$prefix/lib/libagentwire.a"
"$strip" --strip-unneeded -o "$prefix/lib/libagentwire.so.$version" "$lib_dir/libagentwire.so"
chmod 755 "$prefix/lib/libagentwire.so.$version"
ln -sfn "libagentwire.so.$version" "$prefix/lib/$soname"
ln -sfn "$soname" "$prefix/lib/libagentwire.so"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" \
    bindings/c/agentwire.pc.in >"$prefix/lib/pkgconfig/agentwire.pc"
