//! Borrowed views handed to C: `aw_bytes` and `aw_str`.

use std::ffi::{CStr, c_char};

/// A borrowed run of bytes. Not owned by the caller: never free it. Each function that
/// hands one out says how long it stays valid (usually until the next mutating call on
/// the same handle). `data` is never NULL, even when `len` is 0.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_bytes {
    /// The first byte.
    pub data: *const u8,
    /// How many bytes.
    pub len: usize,
}

/// A borrowed UTF-8 string, **not** NUL-terminated unless the function that hands it out
/// says so. Not owned by the caller: never free it. Each function that hands one out says
/// how long it stays valid. `data` is never NULL, even when `len` is 0.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_str {
    /// The first byte.
    pub data: *const c_char,
    /// Length in bytes.
    pub len: usize,
}

impl aw_bytes {
    pub(crate) fn of(bytes: &[u8]) -> aw_bytes {
        aw_bytes {
            data: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// An empty view, for members of a struct that do not apply.
    pub(crate) const EMPTY: aw_bytes = aw_bytes {
        data: c"".as_ptr().cast(),
        len: 0,
    };
}

impl aw_str {
    pub(crate) fn of(text: &str) -> aw_str {
        aw_str {
            data: text.as_ptr().cast(),
            len: text.len(),
        }
    }

    /// A view of a C string without its terminator (which stays readable at `data[len]`).
    pub(crate) fn of_c(text: &CStr) -> aw_str {
        aw_str {
            data: text.as_ptr(),
            len: text.count_bytes(),
        }
    }

    /// An empty view, for members of a struct that do not apply.
    pub(crate) const EMPTY: aw_str = aw_str {
        data: c"".as_ptr(),
        len: 0,
    };
}
