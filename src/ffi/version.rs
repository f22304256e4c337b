//! `aw_version`: the library's version at run time (the header's `AW_VERSION_*` macros
//! give it at compile time).

use std::ffi::{CStr, c_char};

use super::boundary::boundary_or;

/// The crate version, NUL-terminated.
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("the crate version has no NUL byte"),
    };

/// The version of the linked library, `"MAJOR.MINOR.PATCH"` (compare with the header's
/// `AW_VERSION_MAJOR`, `AW_VERSION_MINOR`, `AW_VERSION_PATCH` to detect a header and a
/// library that do not match; there is no ABI stability between versions yet).
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn aw_version() -> *const c_char {
    boundary_or(VERSION.as_ptr(), || VERSION.as_ptr())
}
