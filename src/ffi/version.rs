//! `aw_version`: the C ABI's version at run time (the header's `AW_VERSION_*` macros give
//! it at compile time). It is the ABI's own version, not the crate's: `build.rs` reads it
//! from the header and names the shared library's SONAME after its major.

use std::ffi::{CStr, c_char};

use super::boundary::boundary_or;

/// The ABI version, NUL-terminated.
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("AGENTWIRE_ABI_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("the ABI version has no NUL byte"),
    };

/// The C ABI version of the linked library, `"MAJOR.MINOR.PATCH"`. Compare it with the
/// header's `AW_VERSION_MAJOR`, `AW_VERSION_MINOR`, `AW_VERSION_PATCH` to detect a header
/// and a library that do not match: the major changes when the ABI breaks (and with it the
/// SONAME, `libagentwire.so.MAJOR`), the minor when functions or values are added.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn aw_version() -> *const c_char {
    boundary_or(VERSION.as_ptr(), || VERSION.as_ptr())
}
