//! The panic boundary, handle poisoning, the last error, and the checks every export makes
//! on what C hands it. All raw-pointer reads of the C ABI go through this file.

use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char};
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use super::result::{Error, aw_result};

/// Runs `f`, turning a panic into `fallback`: no panic unwinds into C (it would abort the
/// process). For exports without a handle to poison.
pub(crate) fn boundary_or<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    // AssertUnwindSafe: nothing observes state `f` left half-done; exports that mutate a
    // handle go through `Guarded::call_mut`, which poisons it.
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Runs an export's body: a panic becomes `AW_RESULT_PANIC`.
pub(crate) fn boundary(f: impl FnOnce() -> aw_result) -> aw_result {
    boundary_or(aw_result::Panic, f)
}

/// What a call on a handle returns: a status (`Ok`, `Drained`, …) or a failure.
pub(crate) type Outcome = Result<aw_result, Error>;

/// A handle's state with the bookkeeping every handle carries: whether a panic poisoned
/// it, and the message of its last failed call.
///
/// Handles are `Send` but not `Sync`: the C contract lets a handle move between threads
/// but never be used from two at once, so interior mutability needs no locks.
pub(crate) struct Guarded<S> {
    state: S,
    poisoned: Cell<bool>,
    last_error: RefCell<CString>,
}

impl<S> Guarded<S> {
    pub(crate) fn new(state: S) -> Guarded<S> {
        Guarded {
            state,
            poisoned: Cell::new(false),
            last_error: RefCell::new(CString::default()),
        }
    }

    /// Runs `f` on the state, unless the handle is poisoned. A panic in `f` poisons it.
    pub(crate) fn call_mut(&mut self, f: impl FnOnce(&mut S) -> Outcome) -> aw_result {
        if self.poisoned.get() {
            return aw_result::Poisoned;
        }
        let state = &mut self.state;
        let outcome = catch_unwind(AssertUnwindSafe(|| f(state)));
        self.settle(outcome)
    }

    /// Runs `f` on the state (shared), unless the handle is poisoned. A panic in `f`
    /// poisons it.
    pub(crate) fn call(&self, f: impl FnOnce(&S) -> Outcome) -> aw_result {
        if self.poisoned.get() {
            return aw_result::Poisoned;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| f(&self.state)));
        self.settle(outcome)
    }

    /// Reads a plain value from the state; `fallback` when poisoned or on a panic.
    pub(crate) fn get<T>(&self, fallback: T, f: impl FnOnce(&S) -> T) -> T {
        if self.poisoned.get() {
            return fallback;
        }
        match catch_unwind(AssertUnwindSafe(|| f(&self.state))) {
            Ok(value) => value,
            Err(payload) => {
                self.poison(payload.as_ref());
                fallback
            }
        }
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.get()
    }

    /// The last failed call's message, NUL-terminated; empty when none failed.
    pub(crate) fn last_error(&self) -> *const c_char {
        // The CString's heap buffer stays put until the next failed call replaces it.
        self.last_error.borrow().as_ptr()
    }

    fn settle(&self, outcome: std::thread::Result<Outcome>) -> aw_result {
        match outcome {
            Ok(Ok(status)) => status,
            Ok(Err(error)) => {
                self.set_error(&error.message);
                error.code
            }
            Err(payload) => {
                self.poison(payload.as_ref());
                aw_result::Panic
            }
        }
    }

    fn poison(&self, payload: &(dyn std::any::Any + Send)) {
        self.poisoned.set(true);
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown panic");
        self.set_error(&format!(
            "agentwire panicked ({what}); this handle is poisoned and can only be freed"
        ));
    }

    fn set_error(&self, message: &str) {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        *self.last_error.borrow_mut() = message;
    }
}

/// A C handle type: an opaque struct around a [`Guarded`] state.
pub(crate) trait Handle: Sized + 'static {
    type State: 'static;
    fn guarded(&self) -> &Guarded<Self::State>;
    fn guarded_mut(&mut self) -> &mut Guarded<Self::State>;
    fn wrap(guarded: Guarded<Self::State>) -> Self;

    /// Moves `state` to the heap as a new handle for C.
    fn into_raw(state: Self::State) -> *mut Self {
        Box::into_raw(Box::new(Self::wrap(Guarded::new(state))))
    }

    /// Frees a handle from [`into_raw`](Self::into_raw); NULL does nothing.
    ///
    /// # Safety
    /// `ptr` is NULL or came from `into_raw` and was not freed since.
    unsafe fn free(ptr: *mut Self) {
        if !ptr.is_null() {
            // SAFETY: per this function's contract `ptr` came from `Box::into_raw` and is
            // freed exactly once.
            drop(unsafe { Box::from_raw(ptr) });
        }
    }

    /// The handle behind a C pointer, for a non-mutating call.
    ///
    /// # Safety
    /// `ptr` is NULL or a live handle of this type that no other thread is using.
    unsafe fn from_ptr<'a>(ptr: *const Self) -> Result<&'a Guarded<Self::State>, aw_result> {
        // SAFETY: per this function's contract a non-NULL `ptr` is a live handle.
        let handle = unsafe { ptr.as_ref() }.ok_or(aw_result::NullParameter)?;
        Ok(handle.guarded())
    }

    /// The handle behind a C pointer, for a mutating call.
    ///
    /// # Safety
    /// `ptr` is NULL or a live handle of this type that no other thread is using.
    unsafe fn from_mut_ptr<'a>(ptr: *mut Self) -> Result<&'a mut Guarded<Self::State>, aw_result> {
        // SAFETY: per this function's contract a non-NULL `ptr` is a live handle, and the
        // caller holds it exclusively for the duration of the call.
        let handle = unsafe { ptr.as_mut() }.ok_or(aw_result::NullParameter)?;
        Ok(handle.guarded_mut())
    }
}

/// Declares the [`Handle`] impl of an opaque C handle struct `$handle(Guarded<$state>)`.
macro_rules! impl_handle {
    ($handle:ident, $state:ty) => {
        impl $crate::ffi::boundary::Handle for $handle {
            type State = $state;
            fn guarded(&self) -> &$crate::ffi::boundary::Guarded<$state> {
                &self.0
            }
            fn guarded_mut(&mut self) -> &mut $crate::ffi::boundary::Guarded<$state> {
                &mut self.0
            }
            fn wrap(guarded: $crate::ffi::boundary::Guarded<$state>) -> Self {
                $handle(guarded)
            }
        }
    };
}
pub(crate) use impl_handle;

/// An out-parameter: checked non-NULL before any work is done, written only on success.
pub(crate) struct Out<'a, T> {
    ptr: NonNull<T>,
    _lifetime: PhantomData<&'a mut T>,
}

impl<T> Out<'_, T> {
    /// # Safety
    /// `ptr` is NULL or points to memory writable as a `T` for the duration of the call.
    pub(crate) unsafe fn new(ptr: *mut T, name: &'static str) -> Result<Self, Error> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::null(name))?;
        Ok(Out {
            ptr,
            _lifetime: PhantomData,
        })
    }

    pub(crate) fn write(self, value: T) {
        // SAFETY: `new`'s contract: the pointer is writable as a `T`. `write` does not read
        // or drop the old contents, which may be uninitialized C memory.
        unsafe { self.ptr.as_ptr().write(value) }
    }

    /// Writes a value that may be absent: `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE`
    /// (nothing written).
    pub(crate) fn write_optional(self, value: Option<T>) -> aw_result {
        match value {
            Some(value) => {
                self.write(value);
                aw_result::Ok
            }
            None => aw_result::NotAvailable,
        }
    }
}

/// Bytes from C: `data` may be NULL only when `len` is 0.
///
/// # Safety
/// A non-NULL `data` points to `len` readable bytes that stay unchanged during the call.
pub(crate) unsafe fn input_bytes<'a>(
    data: *const u8,
    len: usize,
    name: &'static str,
) -> Result<&'a [u8], Error> {
    if len > isize::MAX as usize {
        return Err(Error::new(
            aw_result::LengthTooLarge,
            format!("`{name}` length {len} is larger than any object can be"),
        ));
    }
    if data.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Error::null(name))
        };
    }
    // SAFETY: `data` is non-NULL and, per this function's contract, points to `len`
    // readable bytes; `len` fits in `isize`, as `from_raw_parts` requires.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// A UTF-8 string from C as pointer + length (no NUL terminator needed).
///
/// # Safety
/// As [`input_bytes`].
pub(crate) unsafe fn input_str<'a>(
    data: *const c_char,
    len: usize,
    name: &'static str,
) -> Result<&'a str, Error> {
    // SAFETY: forwarded contract.
    let bytes = unsafe { input_bytes(data.cast(), len, name) }?;
    std::str::from_utf8(bytes).map_err(|e| {
        Error::new(
            aw_result::InvalidUtf8,
            format!("`{name}` is not UTF-8: {e}"),
        )
    })
}

/// Reads a C enum argument, which may hold any number.
pub(crate) fn input_enum<T>(
    value: u32,
    name: &'static str,
    from: impl FnOnce(u32) -> Option<T>,
) -> Result<T, Error> {
    from(value).ok_or_else(|| {
        Error::new(
            aw_result::InvalidEnum,
            format!("`{name}` is {value}, not one of its enum's values"),
        )
    })
}

/// The body of every `aw_*_free`.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type, freed exactly once.
pub(crate) unsafe fn free_handle<H: Handle>(ptr: *mut H) {
    boundary_or((), || {
        // SAFETY: forwarded contract.
        unsafe { H::free(ptr) }
    })
}

/// The body of every `aw_*_last_error`.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type.
pub(crate) unsafe fn last_error<H: Handle>(ptr: *const H) -> *const c_char {
    boundary_or(c"".as_ptr(), || {
        // SAFETY: forwarded contract.
        match unsafe { H::from_ptr(ptr) } {
            Ok(handle) => handle.last_error(),
            Err(_) => c"".as_ptr(),
        }
    })
}

/// The body of a non-mutating export: the panic boundary, the handle check, then `f`.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type used by no other thread.
pub(crate) unsafe fn call<H: Handle>(
    ptr: *const H,
    f: impl FnOnce(&H::State) -> Outcome,
) -> aw_result {
    boundary(|| {
        // SAFETY: forwarded contract.
        match unsafe { H::from_ptr(ptr) } {
            Ok(handle) => handle.call(f),
            Err(code) => code,
        }
    })
}

/// The body of a mutating export: the panic boundary, the handle check, then `f`.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type used by no other thread.
pub(crate) unsafe fn call_mut<H: Handle>(
    ptr: *mut H,
    f: impl FnOnce(&mut H::State) -> Outcome,
) -> aw_result {
    boundary(|| {
        // SAFETY: forwarded contract.
        match unsafe { H::from_mut_ptr(ptr) } {
            Ok(handle) => handle.call_mut(f),
            Err(code) => code,
        }
    })
}

/// The body of a predicate export (`aw_*_is_*`): `fallback` for NULL, a poisoned handle
/// or a panic.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type used by no other thread.
pub(crate) unsafe fn predicate<H: Handle>(
    ptr: *const H,
    fallback: bool,
    f: impl FnOnce(&H::State) -> bool,
) -> bool {
    boundary_or(fallback, || {
        // SAFETY: forwarded contract.
        match unsafe { H::from_ptr(ptr) } {
            Ok(handle) => handle.get(fallback, f),
            Err(_) => fallback,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_poisons_and_failures_keep_their_message() {
        let mut guarded = Guarded::new(0u32);
        let failed = guarded.call_mut(|_| Err(Error::new(aw_result::AfterEof, "late")));
        assert_eq!(failed, aw_result::AfterEof);
        // SAFETY: the pointer is the guard's own NUL-terminated buffer, read at once.
        let message = unsafe { std::ffi::CStr::from_ptr(guarded.last_error()) };
        assert_eq!(message.to_str().unwrap(), "late");
        assert_eq!(
            guarded.call_mut(|n| Ok(aw_result::Ok).inspect(|_| *n += 1)),
            aw_result::Ok
        );
        let panicked = guarded.call_mut(|_| panic!("boom"));
        assert_eq!(panicked, aw_result::Panic);
        assert!(guarded.is_poisoned());
        assert_eq!(guarded.call(|_| Ok(aw_result::Ok)), aw_result::Poisoned);
        assert!(guarded.get(true, |_| false));
        // SAFETY: as above.
        let message = unsafe { std::ffi::CStr::from_ptr(guarded.last_error()) };
        assert!(message.to_str().unwrap().contains("boom"));
    }

    #[test]
    fn inputs_are_checked_before_they_are_read() {
        // SAFETY: every pointer is NULL or a live local.
        unsafe {
            assert_eq!(input_bytes(std::ptr::null(), 0, "d").unwrap(), b"");
            let e = input_bytes(std::ptr::null(), 1, "d").unwrap_err();
            assert_eq!(e.code, aw_result::NullParameter);
            let e = input_bytes(b"x".as_ptr(), usize::MAX, "d").unwrap_err();
            assert_eq!(e.code, aw_result::LengthTooLarge);
            let e = input_str(c"\xff".as_ptr(), 1, "s").unwrap_err();
            assert_eq!(e.code, aw_result::InvalidUtf8);
            assert!(Out::new(std::ptr::null_mut::<u8>(), "o").is_err());
        }
        let e = input_enum(9, "e", |_| None::<()>).unwrap_err();
        assert_eq!(e.code, aw_result::InvalidEnum);
    }
}
