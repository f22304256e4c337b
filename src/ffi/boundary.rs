//! The panic boundary, the in-use check, handle poisoning, the last error, and the checks
//! every export makes on what C hands it. All raw-pointer reads of the C ABI go through
//! this file.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_char};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use super::result::{Error, aw_result};

/// Runs `f`, turning a panic into `fallback`: no panic unwinds into C (it would abort the
/// process). For exports without a handle to poison.
pub(crate) fn boundary_or<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    // AssertUnwindSafe: nothing observes state `f` left half-done; exports that mutate a
    // handle go through `Guarded`, which poisons it.
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Runs an export's body: a panic becomes `AW_RESULT_PANIC`.
pub(crate) fn boundary(f: impl FnOnce() -> aw_result) -> aw_result {
    boundary_or(aw_result::Panic, f)
}

/// What a call on a handle returns: a status (`Ok`, `Drained`, …) or a failure.
pub(crate) type Outcome = Result<aw_result, Error>;

/// What `aw_*_last_error` gives while another call is inside the handle: that call owns
/// the handle's own message.
const BUSY_MESSAGE: &CStr = c"the handle is in use by another call (from another thread)";

/// A handle's state with the bookkeeping every handle carries: whether a call is inside
/// it, whether a panic poisoned it, and the message of its last failed call.
///
/// The C contract lets a handle move between threads but never be used from two at once.
/// The contract is checked, not trusted: every call on a handle first takes its in-use
/// flag (one compare-exchange) and gives it back when it returns, unwinding included. A
/// call that finds the flag taken touches nothing and returns `AW_RESULT_BUSY`, so a
/// caller that breaks the rule gets an error instead of two threads mutating one state.
pub(crate) struct Guarded<S> {
    in_use: AtomicBool,
    inside: UnsafeCell<Inside<S>>,
}

// SAFETY: `inside` is only reached through `enter`, which hands it to one caller at a time
// (the compare-exchange on `in_use` acquires what the previous holder released), so the
// state moves between threads but is never shared: `S: Send` is what that needs.
unsafe impl<S: Send> Sync for Guarded<S> {}

/// What the in-use flag guards.
struct Inside<S> {
    state: S,
    poisoned: bool,
    last_error: CString,
}

/// One call's exclusive hold on a handle: derefs to its inside, and gives the in-use flag
/// back when dropped.
struct Entered<'a, S> {
    guarded: &'a Guarded<S>,
}

impl<S> Deref for Entered<'_, S> {
    type Target = Inside<S>;
    fn deref(&self) -> &Inside<S> {
        // SAFETY: this value exists only while its call holds the in-use flag, so no other
        // reference to the inside exists.
        unsafe { &*self.guarded.inside.get() }
    }
}

impl<S> DerefMut for Entered<'_, S> {
    fn deref_mut(&mut self) -> &mut Inside<S> {
        // SAFETY: as `deref`; `&mut self` makes this the only reference this call holds.
        unsafe { &mut *self.guarded.inside.get() }
    }
}

impl<S> Drop for Entered<'_, S> {
    fn drop(&mut self) {
        self.guarded.in_use.store(false, Ordering::Release);
    }
}

impl<S> Guarded<S> {
    pub(crate) fn new(state: S) -> Guarded<S> {
        Guarded {
            in_use: AtomicBool::new(false),
            inside: UnsafeCell::new(Inside {
                state,
                poisoned: false,
                last_error: CString::default(),
            }),
        }
    }

    /// Takes the in-use flag for one call: `AW_RESULT_BUSY` when another call holds it.
    fn enter(&self) -> Result<Entered<'_, S>, aw_result> {
        self.in_use
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| Entered { guarded: self })
            .map_err(|_| aw_result::Busy)
    }

    /// Runs `f` on the state, unless the handle is poisoned or in use. A panic in `f`
    /// poisons it.
    pub(crate) fn call(&self, f: impl FnOnce(&mut S) -> Outcome) -> aw_result {
        let mut inside = match self.enter() {
            Ok(inside) => inside,
            Err(code) => return code,
        };
        if inside.poisoned {
            return aw_result::Poisoned;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| f(&mut inside.state)));
        inside.settle(outcome)
    }

    /// Reads a value from the state: `Err(AW_RESULT_BUSY)`, `Err(AW_RESULT_POISONED)`,
    /// or `Err(AW_RESULT_PANIC)` when a panic in `f` poisoned the handle.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&S) -> T) -> Result<T, aw_result> {
        let mut inside = self.enter()?;
        if inside.poisoned {
            return Err(aw_result::Poisoned);
        }
        catch_unwind(AssertUnwindSafe(|| f(&inside.state))).map_err(|payload| {
            inside.poison(payload.as_ref());
            aw_result::Panic
        })
    }

    /// The last failed call's message, NUL-terminated; empty when none failed.
    pub(crate) fn last_error(&self) -> *const c_char {
        match self.enter() {
            // The CString's heap buffer stays put until a later failed call replaces it.
            Ok(inside) => inside.last_error.as_ptr(),
            Err(_) => BUSY_MESSAGE.as_ptr(),
        }
    }
}

impl<S> Inside<S> {
    fn settle(&mut self, outcome: std::thread::Result<Outcome>) -> aw_result {
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

    fn poison(&mut self, payload: &(dyn std::any::Any + Send)) {
        self.poisoned = true;
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown panic");
        self.set_error(&format!(
            "agentwire panicked ({what}); this handle is poisoned and can only be freed"
        ));
    }

    fn set_error(&mut self, message: &str) {
        self.last_error = CString::new(message.replace('\0', " ")).unwrap_or_default();
    }
}

/// A C handle type: an opaque struct around a [`Guarded`] state.
pub(crate) trait Handle: Sized + 'static {
    type State: 'static;
    fn guarded(&self) -> &Guarded<Self::State>;
    fn wrap(guarded: Guarded<Self::State>) -> Self;

    /// Moves `state` to the heap as a new handle for C.
    fn into_raw(state: Self::State) -> *mut Self {
        Box::into_raw(Box::new(Self::wrap(Guarded::new(state))))
    }

    /// Frees a handle from [`into_raw`](Self::into_raw); NULL does nothing, and neither
    /// does a handle another call is inside (freeing it would pull its state from under
    /// that call): it stays valid, and a later free frees it.
    ///
    /// # Safety
    /// `ptr` is NULL or came from `into_raw` and was not freed since.
    unsafe fn free(ptr: *mut Self) {
        // SAFETY: per this function's contract a non-NULL `ptr` is a live handle.
        let Some(handle) = (unsafe { ptr.as_ref() }) else {
            return;
        };
        let Ok(entered) = handle.guarded().enter() else {
            return;
        };
        // The flag stays taken until the memory it lives in is gone.
        std::mem::forget(entered);
        // SAFETY: `ptr` came from `Box::into_raw` and was not freed (the contract), and
        // this call holds the in-use flag, so no other call is inside it.
        drop(unsafe { Box::from_raw(ptr) });
    }

    /// The handle behind a C pointer.
    ///
    /// # Safety
    /// `ptr` is NULL or a live handle of this type.
    unsafe fn from_ptr<'a>(ptr: *const Self) -> Result<&'a Guarded<Self::State>, aw_result> {
        // SAFETY: per this function's contract a non-NULL `ptr` is a live handle. Shared
        // references may exist on several threads at once: everything they reach is
        // behind the in-use flag.
        let handle = unsafe { ptr.as_ref() }.ok_or(aw_result::NullParameter)?;
        Ok(handle.guarded())
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

    /// Writes what a poll gave: `AW_RESULT_OK`, or `AW_RESULT_DRAINED` (nothing written)
    /// when it gave nothing.
    pub(crate) fn write_polled(self, value: Option<T>) -> aw_result {
        match value {
            Some(value) => {
                self.write(value);
                aw_result::Ok
            }
            None => aw_result::Drained,
        }
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

/// An optional UTF-8 string from C: NULL (with length 0) when absent; any other pointer,
/// even with length 0, is present.
///
/// # Safety
/// As [`input_bytes`].
pub(crate) unsafe fn input_optional_str<'a>(
    data: *const c_char,
    len: usize,
    name: &'static str,
) -> Result<Option<&'a str>, Error> {
    // SAFETY: forwarded contract.
    let text = unsafe { input_str(data, len, name) }?;
    Ok((!data.is_null()).then_some(text))
}

/// Optional bytes from C: NULL (with length 0) when absent.
///
/// # Safety
/// As [`input_bytes`].
pub(crate) unsafe fn input_optional_bytes<'a>(
    data: *const u8,
    len: usize,
    name: &'static str,
) -> Result<Option<&'a [u8]>, Error> {
    // SAFETY: forwarded contract.
    let bytes = unsafe { input_bytes(data, len, name) }?;
    Ok((!data.is_null()).then_some(bytes))
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

/// The body of an export that reads a handle: the panic boundary, the handle check, then
/// `f`.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type.
pub(crate) unsafe fn call<H: Handle>(
    ptr: *const H,
    f: impl FnOnce(&H::State) -> Outcome,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe { call_mut(ptr.cast_mut(), |state| f(state)) }
}

/// The body of an export that changes a handle: the panic boundary, the handle check,
/// then `f`.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type.
pub(crate) unsafe fn call_mut<H: Handle>(
    ptr: *mut H,
    f: impl FnOnce(&mut H::State) -> Outcome,
) -> aw_result {
    boundary(|| {
        // SAFETY: forwarded contract.
        match unsafe { H::from_ptr(ptr) } {
            Ok(handle) => handle.call(f),
            Err(code) => code,
        }
    })
}

/// The body of a predicate export (`aw_*_is_*`): `fallback` for NULL, a poisoned handle,
/// a handle in use by another call, or a panic.
///
/// # Safety
/// `ptr` is NULL or a live handle of this type.
pub(crate) unsafe fn predicate<H: Handle>(
    ptr: *const H,
    fallback: bool,
    f: impl FnOnce(&H::State) -> bool,
) -> bool {
    boundary_or(fallback, || {
        // SAFETY: forwarded contract.
        match unsafe { H::from_ptr(ptr) } {
            Ok(handle) => handle.read(f).unwrap_or(fallback),
            Err(_) => fallback,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(guarded: &Guarded<u32>) -> String {
        // SAFETY: the pointer is the guard's own NUL-terminated buffer (or a static one),
        // read at once.
        let message = unsafe { CStr::from_ptr(guarded.last_error()) };
        message.to_str().unwrap().to_owned()
    }

    #[test]
    fn a_panic_poisons_and_failures_keep_their_message() {
        let guarded = Guarded::new(0u32);
        let failed = guarded.call(|_| Err(Error::new(aw_result::AfterEof, "late")));
        assert_eq!(failed, aw_result::AfterEof);
        assert_eq!(message(&guarded), "late");
        assert_eq!(
            guarded.call(|n| Ok(aw_result::Ok).inspect(|_| *n += 1)),
            aw_result::Ok
        );
        assert_eq!(guarded.read(|n| *n), Ok(1));
        let panicked = guarded.call(|_| panic!("boom"));
        assert_eq!(panicked, aw_result::Panic);
        assert_eq!(guarded.call(|_| Ok(aw_result::Ok)), aw_result::Poisoned);
        assert_eq!(guarded.read(|_| false), Err(aw_result::Poisoned));
        assert!(message(&guarded).contains("boom"));
        let read_panics = Guarded::new(0u32);
        assert_eq!(
            read_panics.read(|_| panic!("in a read")),
            Err::<(), _>(aw_result::Panic)
        );
        assert_eq!(read_panics.read(|n| *n), Err(aw_result::Poisoned));
    }

    #[test]
    fn a_call_inside_another_is_refused_and_changes_nothing() {
        let guarded = Guarded::new(0u32);
        assert_eq!(
            guarded.call(|_| Err(Error::new(aw_result::AfterEof, "first"))),
            aw_result::AfterEof
        );
        let outer = guarded.call(|n| {
            *n += 1;
            assert_eq!(
                guarded.call(|n| Ok(aw_result::Ok).inspect(|_| *n += 10)),
                aw_result::Busy
            );
            assert_eq!(guarded.read(|n| *n), Err(aw_result::Busy));
            assert!(message(&guarded).contains("in use by another call"));
            Ok(aw_result::Ok)
        });
        assert_eq!(outer, aw_result::Ok);
        // The refused calls neither ran nor replaced the last error.
        assert_eq!(guarded.read(|n| *n), Ok(1));
        assert_eq!(message(&guarded), "first");
    }

    #[test]
    fn the_flag_is_given_back_when_a_call_panics() {
        let guarded = Guarded::new(0u32);
        assert_eq!(guarded.call(|_| panic!("boom")), aw_result::Panic);
        // Poisoned, not busy: the panic released the flag.
        assert_eq!(guarded.call(|_| Ok(aw_result::Ok)), aw_result::Poisoned);
    }

    #[test]
    fn threads_racing_on_one_handle_are_serialised_or_refused() {
        // Each successful call adds one in two non-atomic steps with a yield between
        // them: overlapping calls inside the state would lose updates.
        const CALLS: u32 = 20_000;
        let guarded = Guarded::new(0u32);
        let counts = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let (mut ok, mut busy) = (0u32, 0u32);
                        for i in 0..CALLS {
                            let result = guarded.call(|n| {
                                let seen = *n;
                                if i % 64 == 0 {
                                    std::thread::yield_now();
                                }
                                *n = seen + 1;
                                Ok(aw_result::Ok)
                            });
                            match result {
                                aw_result::Ok => ok += 1,
                                aw_result::Busy => busy += 1,
                                other => panic!("unexpected {other:?}"),
                            }
                        }
                        (ok, busy)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .collect::<Vec<_>>()
        });
        let ok: u32 = counts.iter().map(|c| c.0).sum();
        let busy: u32 = counts.iter().map(|c| c.1).sum();
        assert_eq!(ok + busy, 4 * CALLS);
        assert_eq!(guarded.read(|n| *n), Ok(ok), "{busy} refused");
    }

    #[test]
    fn a_handle_in_a_call_is_not_freed() {
        struct Probe(Guarded<u32>);
        impl_handle!(Probe, u32);
        let ptr = Probe::into_raw(7);
        // SAFETY: `ptr` is live until the last free, which succeeds.
        unsafe {
            let handle = Probe::from_ptr(ptr).unwrap();
            let result = handle.call(|n| {
                free_handle(ptr);
                *n += 1;
                Ok(aw_result::Ok)
            });
            assert_eq!(result, aw_result::Ok);
            assert_eq!(Probe::from_ptr(ptr).unwrap().read(|n| *n), Ok(8));
            free_handle(ptr);
        }
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
