#!/usr/bin/env bash
# The packages, checked as users get them rather than from the checkout:
#
#   crate   `cargo package` (with verification: the packaged crate alone builds, with every
#           feature), nothing but the expected files in it (no test file), the .crate under
#           512 KiB, and no warning but cargo's notes on the targets left out;
#   python  the sdist and a wheel built from it, their metadata checked, the wheel installed
#           into a fresh virtualenv and the package's tests run against it
#           (bindings/python/run-tests.sh wheel); then nothing but the expected files in the
#           sdist, in that wheel and in the one `pip wheel bindings/python` builds from the
#           tree, and both licence texts in each (the wheels' `.dist-info/licenses/`);
#   c       the release library installed with bindings/c/install.sh into an empty prefix,
#           without debug information and under its size limits, then programs built from
#           the prefix alone, exactly as the README's link lines say (static, shared with an
#           rpath, shared with LD_LIBRARY_PATH, through pkg-config), and run.
#
#   ci/package.sh [crate] [python] [c]      (default: all three)
#
# Offline once `ci/setup.sh` has run. Prints each package's size and contents.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

# The published crate's limits (see `include` in Cargo.toml).
CRATE_MAX_KIB=512
# The installed C libraries' limits: stripped, the .so is about 1.4 MiB and the .a (all of
# Rust's standard library inside) about 16 MiB; with their debug information, 11 and 37.
C_SO_MAX_KIB=3072
C_A_MAX_KIB=24576

check_crate() {
    echo "==> the crate (cargo package)"
    local log=$target/package-check.log
    mkdir -p "$target"
    # --allow-dirty: the suite also runs on work not yet committed. --offline: ci/setup.sh
    # fetched every crate the verification build needs. A target directory of its own: the
    # verification rebuilds dependencies with the package's features, and in the shared one
    # that would make every later build of the crate and its tests start over.
    if ! cargo package -p agentwire --allow-dirty --all-features --offline \
        --target-dir "$target/package-check" >"$log" 2>&1; then
        cat "$log"
        echo "ci/package.sh: cargo package failed" >&2
        exit 1
    fi
    # Cargo names every test, bench and example it leaves out; any other warning (missing
    # metadata, a file the package needs) fails the check.
    if grep '^warning:' "$log" | grep -v -E '^warning: ignoring (test|benchmark|example) `[^`]+` as `[^`]+` is not included in the published package$'; then
        echo "ci/package.sh: cargo package warned (above)" >&2
        exit 1
    fi
    local version crate_file
    version=$(cargo metadata --format-version 1 --no-deps --offline |
        python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "agentwire"))')
    crate_file=$target/package-check/package/agentwire-$version.crate
    local unexpected=() files=0 name
    while IFS= read -r name; do
        name=${name#agentwire-"$version"/}
        files=$((files + 1))
        case "$name" in
            Cargo.toml | Cargo.toml.orig | Cargo.lock | .cargo_vcs_info.json) ;;
            README.md | CHANGELOG.md | SECURITY.md | LICENSE-MIT | LICENSE-APACHE) ;;
            build.rs | include/agentwire.h) ;;
            # The library; src/ holds nothing else (no test support, no fixture).
            src/*.rs) ;;
            *) unexpected+=("$name") ;;
        esac
    done < <(tar -tzf "$crate_file" | grep -v '/$')
    if [ ${#unexpected[@]} -gt 0 ]; then
        printf 'ci/package.sh: not expected in the crate: %s\n' "${unexpected[@]}" >&2
        exit 1
    fi
    local kib
    kib=$(( ($(stat -c %s "$crate_file") + 1023) / 1024 ))
    if [ "$kib" -gt "$CRATE_MAX_KIB" ]; then
        echo "ci/package.sh: $crate_file is $kib KiB, over $CRATE_MAX_KIB KiB" >&2
        exit 1
    fi
    echo "    agentwire-$version.crate: $kib KiB ($(sed -n 's/.*Packaged [0-9]* files, \([^ ]*\) (.*/\1/p' "$log") unpacked), $files files:" \
        "src/ ($(tar -tzf "$crate_file" | grep -c '/src/.*\.rs$') .rs), build.rs, include/agentwire.h, README, CHANGELOG, SECURITY, both licences;" \
        "verified with every feature"
}

check_python() {
    bindings/python/run-tests.sh wheel
    echo "==> the Python sdist's and wheels' files"
    # Besides the release's wheel (built from the sdist), the one `pip wheel bindings/python`
    # builds from the tree (the crates are already built, in the same profile).
    local venv=${AGENTWIRE_VENV:-.venv} tree=$target/python-tree-wheel
    rm -rf "$tree"
    mkdir -p "$tree"
    PATH="$root/$venv/bin:$PATH" CARGO_TARGET_DIR=$target \
        "$root/$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-build-isolation \
        --no-deps --wheel-dir "$tree" ./bindings/python >"$tree/build.log" 2>&1 ||
        { cat "$tree/build.log"; exit 1; }
    python3 - "$root" "$target"/python-dist/agentwire_bridge-*.tar.gz \
        "$target"/python-dist/agentwire_bridge-*.whl "$tree"/agentwire_bridge-*.whl <<'EOF'
"""Nothing but the expected files in the sdist and the wheels, every expected one there, and
both licence texts, the repository's own, in each."""
import fnmatch
import sys
import tarfile
import zipfile
from pathlib import Path

root = Path(sys.argv[1])
sdist, wheels = Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
LICENCES = ["LICENSE-APACHE", "LICENSE-MIT"]
# Shell-style patterns (`*` matches `/` too), each of which must match a file.
SDIST = [
    "PKG-INFO", "pyproject.toml", "build_backend.py", "bindings/python/README.md",
    "agentwire/*.py", "agentwire/py.typed",
    "Cargo.toml", "Cargo.lock", "build.rs", "include/agentwire.h", "src/*.rs",
    "README.md", "CHANGELOG.md", "SECURITY.md", *LICENCES,
]
WHEEL = [
    "agentwire/*.py", "agentwire/py.typed",
    "agentwire/_native/__init__.py", "agentwire/_native/ffi.py", "agentwire/_native/lib_native.so",
    "*.dist-info/METADATA", "*.dist-info/WHEEL", "*.dist-info/RECORD",
    "*.dist-info/sboms/agentwire.cyclonedx.json",
    *(f"*.dist-info/licenses/{name}" for name in LICENCES),
]


def check(archive, files, patterns, licences_in):
    """`files` maps the path of each file in `archive` to a function reading it."""
    unexpected = [n for n in files if not any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    missing = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in files)]
    for name in LICENCES:
        path = licences_in + name
        if path in files and files[path]() != (root / name).read_bytes():
            unexpected.append(f"{path} (not the repository's {name})")
    if unexpected or missing:
        sys.exit(f"ci/package.sh: {archive.name}: not expected {unexpected}, missing {missing}")


with tarfile.open(sdist) as tar:
    members = {m.name.partition("/")[2]: m for m in tar.getmembers() if m.isfile()}
    check(sdist, {n: (lambda m=m: tar.extractfile(m).read()) for n, m in members.items()}, SDIST, "")
print(f"    {sdist.name}: {len(members)} files: the crate's (Cargo.toml, Cargo.lock, build.rs, "
      f"include/agentwire.h, src/ ({sum(n.startswith('src/') for n in members)} .rs), README, "
      "CHANGELOG, SECURITY), the package's (pyproject.toml, build_backend.py, PKG-INFO, its "
      f"README, agentwire/ ({sum(n.startswith('agentwire/') for n in members)} files)), both licences")
for wheel in wheels:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        check(wheel, {n: (lambda n=n: archive.read(n)) for n in names}, WHEEL, f"{info}/licenses/")
    built = "from the sdist" if wheel.parent == sdist.parent else "from the tree"
    print(f"    {wheel.name} ({built}): {len(names)} files: {', '.join(names)}")
EOF
}

check_c() {
    echo "==> the C library, installed into a prefix"
    cargo build -p agentwire --release --lib --quiet
    local work=$target/package-c
    rm -rf "$work"
    mkdir -p "$work"
    local prefix=$work/prefix
    bindings/c/install.sh "$prefix"
    local major version
    major=$(sed -n 's/^#define AW_VERSION_MAJOR \([0-9]*\)$/\1/p' include/agentwire.h)
    version=$(sed -n 's/^#define AW_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' include/agentwire.h | paste -sd.)
    local expected="include/agentwire.h
lib/libagentwire.a
lib/libagentwire.so -> libagentwire.so.$major
lib/libagentwire.so.$major -> libagentwire.so.$version
lib/libagentwire.so.$version
lib/pkgconfig/agentwire.pc"
    local installed
    installed=$(cd "$prefix" && find . \( -type l -printf '%P -> %l\n' \) -o \( -type f -printf '%P\n' \) | sort)
    if [ "$installed" != "$expected" ]; then
        printf 'ci/package.sh: the prefix holds\n%s\nnot\n%s\n' "$installed" "$expected" >&2
        exit 1
    fi
    local soname
    soname=$(readelf -d "$prefix/lib/libagentwire.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
    [ "$soname" = "libagentwire.so.$major" ] || { echo "ci/package.sh: SONAME '$soname'" >&2; exit 1; }
    local lib max kib
    for lib in "libagentwire.so.$version:$C_SO_MAX_KIB" "libagentwire.a:$C_A_MAX_KIB"; do
        max=${lib#*:}
        lib=${lib%:*}
        if readelf -S -W "$prefix/lib/$lib" | grep ' \.debug_' >/dev/null; then
            echo "ci/package.sh: the installed $lib carries debug information" >&2
            exit 1
        fi
        kib=$(( ($(stat -c %s "$prefix/lib/$lib") + 1023) / 1024 ))
        if [ "$kib" -gt "$max" ]; then
            echo "ci/package.sh: the installed $lib is $kib KiB, over $max KiB" >&2
            exit 1
        fi
    done

    # The programs are built in an empty directory from the prefix alone: the C suite's
    # API test (without the test hooks, which a release lacks) and the plugin example.
    local build=$work/build
    mkdir -p "$build"
    cp bindings/c/tests/abi.c bindings/c/tests/check.h bindings/c/examples/plugin.c "$build/"
    (
        cd "$build"
        export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
        # The README's lines, with this prefix for its $HOME/.local (and the static line
        # taking the archive from the prefix rather than from target/release).
        # shellcheck disable=SC2046
        {
            cc abi.c -I"$prefix/include" "$prefix/lib/libagentwire.a" -lgcc_s -lutil -lrt -lpthread -lm -ldl -o abi-static
            cc abi.c $(pkg-config --cflags --libs agentwire) -Wl,-rpath,"$(pkg-config --variable=libdir agentwire)" -o abi-rpath
            cc abi.c $(pkg-config --cflags --libs agentwire) -o abi-env
            cc plugin.c $(pkg-config --cflags --libs agentwire) -Wl,-rpath,"$(pkg-config --variable=libdir agentwire)" -o plugin
        }
        ./abi-static >abi-static.out
        ./abi-rpath >abi-rpath.out
        LD_LIBRARY_PATH=$prefix/lib ./abi-env >abi-env.out
        # Without the rpath and without LD_LIBRARY_PATH the loader must not find it: the
        # shared programs above found the prefix's library, by its SONAME.
        if ./abi-env >/dev/null 2>&1; then
            echo "ci/package.sh: abi-env ran without LD_LIBRARY_PATH: which library did it load?" >&2
            exit 1
        fi
        for program in abi-rpath plugin; do
            loaded=$(ldd "$program" | sed -n 's/^\s*libagentwire[^ ]* => \([^ ]*\) .*/\1/p')
            [ "$loaded" = "$prefix/lib/libagentwire.so.$major" ] ||
                { echo "ci/package.sh: $program loads '$loaded'" >&2; exit 1; }
        done
        # The plugin runs a stand-in agent that replays a transcript; the answer ends the
        # stream as the Rust bridge does.
        printf '%s' '{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}' >request.json
        AGENTWIRE_REPLAY=$root/tests/fixtures/multibyte.jsonl timeout 60 \
            ./plugin --agent "$root/bindings/c/tests/replay-agent.sh" request.json >plugin.out 2>plugin.err
        grep -q '"finish_reason":"stop"' plugin.out && [ "$(tail -c 14 plugin.out)" = 'data: [DONE]' ] ||
            { echo "ci/package.sh: the plugin's answer is incomplete" >&2; head -5 plugin.err >&2; exit 1; }
    )
    echo "    installed into a prefix: include/agentwire.h, lib/libagentwire.a ($(du -k "$prefix/lib/libagentwire.a" | cut -f1) KiB, at most $C_A_MAX_KIB)," \
        "lib/libagentwire.so.$version ($(du -k "$prefix/lib/libagentwire.so.$version" | cut -f1) KiB, at most $C_SO_MAX_KIB; SONAME $soname) with its links, no debug information," \
        "lib/pkgconfig/agentwire.pc; built from it alone static, shared (rpath, LD_LIBRARY_PATH, pkg-config), and run"
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(crate python c)
for part in "${parts[@]}"; do
    case "$part" in
        crate) check_crate ;;
        python) check_python ;;
        c) check_c ;;
        *) echo "ci/package.sh: unknown part '$part' (crate, python, c)" >&2; exit 2 ;;
    esac
done
