//! What the C ABI hands back: out-parameters, checked to be written only on success, and
//! borrowed views, read whole when handed out and read again, unchanged, until the call
//! that ends their documented life.

use std::ffi::{CStr, c_char};
use std::mem::MaybeUninit;

use agentwire::ffi::result::aw_result;
use agentwire::ffi::views::{aw_bytes, aw_str};

/// The byte every out-parameter is filled with before a call: a call that fails and
/// writes it anyway is seen.
const SENTINEL: u8 = 0xA5;

/// An out-parameter as a C caller declares one: uninitialised memory of its type, here
/// filled with [`SENTINEL`].
pub(super) struct OutParam<T> {
    slot: MaybeUninit<T>,
}

impl<T> OutParam<T> {
    pub(super) fn new() -> OutParam<T> {
        let mut slot = MaybeUninit::<T>::uninit();
        // SAFETY: the pointer is to `size_of::<T>()` bytes of this local.
        unsafe {
            slot.as_mut_ptr()
                .cast::<u8>()
                .write_bytes(SENTINEL, size_of::<T>());
        }
        OutParam { slot }
    }

    /// The pointer to hand to C: this out-parameter, or NULL.
    pub(super) fn ptr(&mut self, null: bool) -> *mut T {
        if null {
            std::ptr::null_mut()
        } else {
            self.slot.as_mut_ptr()
        }
    }

    /// Whether the memory still holds the sentinel.
    pub(super) fn untouched(&self) -> bool {
        // SAFETY: every byte was initialised by `new`; a call that broke its promise and
        // wrote a value may have left padding bytes undefined, but then the check has
        // already failed in spirit, and reading them as bytes cannot crash.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.slot.as_ptr().cast::<u8>(), size_of::<T>()) };
        bytes.iter().all(|b| *b == SENTINEL)
    }

    /// The value written, when the call returned `AW_RESULT_OK` (which promises it was);
    /// otherwise `None`, after checking that nothing was written.
    pub(super) fn outcome(self, result: aw_result, what: &str) -> Option<T> {
        if result == aw_result::Ok {
            // SAFETY: AW_RESULT_OK promises the out-parameter was written.
            Some(unsafe { self.slot.assume_init() })
        } else {
            assert!(
                self.untouched(),
                "{what} wrote its out-parameter and returned {result:?}"
            );
            None
        }
    }
}

/// Reads a borrowed run of bytes whole. `data` must not be NULL (the views promise it),
/// and must point to `len` readable bytes, which is what is being checked: under
/// AddressSanitizer a view into freed or foreign memory stops the run here.
fn read(data: *const u8, len: usize, what: &str) -> Vec<u8> {
    assert!(!data.is_null(), "{what}: a view with a NULL pointer");
    assert!(
        len <= isize::MAX as usize,
        "{what}: a view of {len} bytes, longer than any object"
    );
    // SAFETY: the ABI promises the view is readable for `len` bytes during its until,
    // which is when every caller of this function reads it.
    unsafe { std::slice::from_raw_parts(data, len) }.to_vec()
}

/// The bytes of an `aw_bytes`.
pub(super) fn bytes(view: aw_bytes, what: &str) -> Vec<u8> {
    read(view.data, view.len, what)
}

/// The text of an `aw_str`, which must be UTF-8.
pub(super) fn text(view: aw_str, what: &str) -> String {
    String::from_utf8(read(view.data.cast(), view.len, what))
        .unwrap_or_else(|e| panic!("{what}: a view that is not UTF-8: {e}"))
}

/// The text of an `aw_str` documented as NUL-terminated: UTF-8, no NUL inside, a NUL
/// right after its `len` bytes.
pub(super) fn c_text(view: aw_str, what: &str) -> String {
    let mut with_nul = read(view.data.cast(), view.len + 1, what);
    assert_eq!(
        with_nul.pop(),
        Some(0),
        "{what}: no NUL terminator at data[len]"
    );
    assert!(
        !with_nul.contains(&0),
        "{what}: a NUL byte inside the string"
    );
    String::from_utf8(with_nul).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"))
}

/// A C string from a `const char *` (`aw_*_last_error`, `aw_result_name`, `aw_version`).
pub(super) fn c_string(ptr: *const c_char, what: &str) -> String {
    assert!(!ptr.is_null(), "{what}: NULL instead of a string");
    // SAFETY: the ABI promises a NUL-terminated string, readable during its life.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str()
        .unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"))
        .to_owned()
}

/// An `aw_str` member that does not apply: empty, and still not NULL.
pub(super) fn assert_empty_str(view: aw_str, what: &str) {
    assert!(
        !view.data.is_null() && view.len == 0,
        "{what}: a member that does not apply is not empty"
    );
}

/// An `aw_bytes` member that does not apply: empty, and still not NULL.
pub(super) fn assert_empty_bytes(view: aw_bytes, what: &str) {
    assert!(
        !view.data.is_null() && view.len == 0,
        "{what}: a member that does not apply is not empty"
    );
}

/// Which handle a view borrows from: the index of its table and slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// Static memory: valid for ever.
    Static,
    /// An `aw_config` slot.
    Config(usize),
    /// An `aw_bridge` slot.
    Bridge(usize),
    /// An `aw_decoder` slot.
    Decoder(usize),
    /// An `aw_reply` slot.
    Reply(usize),
    /// An `aw_acp_connection` slot.
    Acp(usize),
    /// An `aw_registry` slot.
    Registry(usize),
}

/// How long a view stays valid, as the function that hands it out documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValidUntil {
    /// The owner's free (the invocation's strings; for ever for `Owner::Static`).
    Free,
    /// The next mutating call on the owner (getters' strings).
    MutatingCall,
    /// The next call of any kind on the owner (polled outputs and events, the last error).
    NextCall,
}

/// A view handed out, with what it held then.
struct View {
    owner: Owner,
    until: ValidUntil,
    data: *const u8,
    len: usize,
    held: Vec<u8>,
    what: String,
}

/// Every view still alive.
#[derive(Default)]
pub(super) struct Views {
    live: Vec<View>,
}

impl Views {
    /// Keeps `len` bytes at `data` (which were read whole just now and held `held`) to be
    /// read again until the end of their life.
    pub(super) fn keep(
        &mut self,
        owner: Owner,
        until: ValidUntil,
        data: *const u8,
        held: Vec<u8>,
        what: String,
    ) {
        // The same view handed out again (a getter called twice) is read once.
        let known = self.live.iter().any(|view| {
            view.owner == owner && view.until == until && view.data == data && view.held == held
        });
        if known {
            return;
        }
        self.live.push(View {
            owner,
            until,
            data,
            len: held.len(),
            held,
            what,
        });
    }

    /// A call on `owner` is about to happen: every live view is read again and must hold
    /// what it held, then the views the call ends are forgotten.
    pub(super) fn before_call(&mut self, owner: Owner, mutating: bool) {
        self.reread();
        self.live.retain(|view| {
            view.owner != owner
                || match view.until {
                    ValidUntil::Free => true,
                    ValidUntil::MutatingCall => !mutating,
                    ValidUntil::NextCall => false,
                }
        });
    }

    /// `owner` is about to be freed: its views are read a last time and forgotten.
    pub(super) fn before_free(&mut self, owner: Owner) {
        self.reread();
        self.live.retain(|view| view.owner != owner);
    }

    /// Reads every live view again.
    pub(super) fn reread(&self) {
        for view in &self.live {
            let now = read(view.data, view.len, &view.what);
            assert!(
                now == view.held,
                "{} ({:?}, {:?}) changed while it was documented valid: {:?} became {:?}",
                view.what,
                view.owner,
                view.until,
                String::from_utf8_lossy(&view.held),
                String::from_utf8_lossy(&now)
            );
        }
    }
}
