//! The C library's version and its SONAME.
//!
//! The C ABI is versioned apart from the crate: `AW_VERSION_MAJOR`/`_MINOR`/`_PATCH` in
//! `include/agentwire.h` (written there from `cbindgen.toml`) are the ABI's version, and
//! `AW_VERSION_MAJOR` changes exactly when the ABI breaks. This script reads them from the
//! header, so the header stays the one place the ABI version is written:
//! - `aw_version()` returns them (`AGENTWIRE_ABI_VERSION`, read by `src/ffi/version.rs`);
//! - the shared library's SONAME is `libagentwire.so.<AW_VERSION_MAJOR>`, so a program
//!   linked against one ABI never loads a library of another.

use std::env;
use std::fs;
use std::path::Path;

const HEADER: &str = "include/agentwire.h";

/// The value of `#define NAME <digits>` in the header.
fn version_macro(header: &str, name: &str) -> u32 {
    let prefix = format!("#define {name} ");
    let value = header
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{HEADER} defines no {name}"));
    value
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{HEADER}: {name} is not a number: {value:?}"))
}

fn main() {
    println!("cargo:rerun-if-changed={HEADER}");
    println!("cargo:rerun-if-changed=build.rs");
    let path = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join(HEADER);
    let header = fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let major = version_macro(&header, "AW_VERSION_MAJOR");
    let minor = version_macro(&header, "AW_VERSION_MINOR");
    let patch = version_macro(&header, "AW_VERSION_PATCH");
    println!("cargo:rustc-env=AGENTWIRE_ABI_VERSION={major}.{minor}.{patch}");

    // ELF platforms, whose linkers take `-soname`. (macOS names a dylib with
    // `-install_name`, Windows a DLL by its file name: both are left as cargo makes them.)
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = matches!(
        os.as_str(),
        "linux"
            | "android"
            | "freebsd"
            | "netbsd"
            | "openbsd"
            | "dragonfly"
            | "solaris"
            | "illumos"
    );
    if elf {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libagentwire.so.{major}");
    }
}
