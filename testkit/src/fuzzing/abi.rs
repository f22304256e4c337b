//! The [`abi`] body: random sequences of C ABI calls over a small table of handles, each
//! call checked against the header's documented promises and against the Rust API it
//! wraps, driven in lockstep.
//!
//! The caller modelled here keeps the header's memory-safety contract and nothing more: a
//! handle is NULL or live (an empty slot is passed as NULL; a freed handle is never passed
//! again), a data pointer points to as many bytes as its length says, or is NULL, or comes
//! with a length over `PTRDIFF_MAX` (both documented errors), and an out-pointer is NULL or
//! writable. Within that, anything goes: every function, in any order, on handles in any
//! state (fresh, rejected, exited, ended, poisoned through the test hooks), with any
//! numbers, enum values, strings (not UTF-8, with NUL bytes, cut short) and clock (forward,
//! far forward, backward).
//!
//! What every call must do:
//! - return one of the results its documentation lists (every function on a handle may
//!   also return `AW_RESULT_NULL_PARAMETER` and `AW_RESULT_POISONED`), and exactly the one
//!   the Rust API's answer implies: a NULL handle is `NULL_PARAMETER`, a poisoned one
//!   `POISONED`, a NULL out-pointer or a bad argument one of the errors it documents, with
//!   no effect; never `AW_RESULT_PANIC` but from a test hook;
//! - write its out-parameters only when it returns `AW_RESULT_OK` (they are pre-filled
//!   with a sentinel), and then with what the Rust API gives: the same outputs, events,
//!   deadlines, counters, invocation and settings; members of an `aw_output` or `aw_event`
//!   that its kind does not use are zero or empty, and no view has a NULL pointer;
//! - hand out views that stay readable and unchanged for as long as their function
//!   documents (until the next call, the next mutating call, or the handle's free): every
//!   view is read whole when handed out and again before every later call until then, so
//!   that AddressSanitizer sees any that dangle; strings are UTF-8, and NUL-terminated where
//!   documented;
//! - keep `aw_*_last_error` as documented: `""` until a call fails, then non-empty and
//!   unchanged by successful calls; a poisoned handle's says so;
//! - after the end: a bridge polls nothing and schedules nothing; a poisoned handle
//!   answers `POISONED` to everything, its predicates their documented fallback, and can
//!   still be freed; a poisoned config cannot create a bridge, decoder or reply;
//! - a call made from inside another on the same handle (the `aw_*_test_overlap` hooks, as
//!   another thread would) is `BUSY` and does nothing, the free it tries is refused and the
//!   handle stays live, its last error untouched;
//! - an ACP connection (`aw_acp_connection`, created from an `aw_acp_config` whose every
//!   setter and getter is checked against the Rust `AcpConfig`) transmits, names ready
//!   turns, hands out turn outputs (never `STOP_AGENT`), decisions and deadlines exactly as
//!   the Rust `acp::Connection` does; a turn number it never handed out is
//!   `AW_RESULT_UNKNOWN_TURN`;
//! - a conversation registry (`aw_registry`, created from an `aw_registry_config` whose
//!   every setter and getter is checked) counts, expires and releases exactly as the Rust
//!   `registry::Registry` does; a bridge made in it (`aw_bridge_new_in_conversation`, with
//!   any owner key and conversation headers, valid or not) behaves as the Rust bridge made
//!   by `Bridge::in_conversation` in the registry's shadow, and gives its place back
//!   (`aw_bridge_end_conversation_turn`) to that registry only
//!   (`AW_RESULT_WRONG_REGISTRY` otherwise);
//! - `aw_bridge_new` takes every `aw_dialect` (an invalid one is `INVALID_ENUM`, once the
//!   pointers and the config are checked); an `aw_reply` holds exactly the status,
//!   retryability and body the Rust API makes (`anthropic::count_tokens`,
//!   `ErrorReply::refusal` in the dialect's error body), and its body's view stays valid
//!   and unchanged until the free.

mod acp;
mod bridge;
mod config;
mod decoder;
mod registry;
mod reply;
mod views;

use std::sync::{Once, OnceLock};

use arbitrary::{Arbitrary, Unstructured};

use crate::fuzzing::RequestBody;
use crate::fuzzing::dialects::DIALECTS;
pub use acp::{AcpOp, AcpSettings, AcpStdout, AnswerShape, TurnArg};
use agentwire::bridge::{Config, Dialect};
use agentwire::ffi::config::aw_config;
use agentwire::ffi::result::{aw_result, aw_result_is_status, aw_result_name};
use agentwire::ffi::version::aw_version;
use agentwire::ffi::views::aw_str;
pub use bridge::BridgeOp;
pub use bridge::Keys;
pub use config::{
    ClearField, ConfigOp, EnumField, Field, FlagField, Number, NumberField, TextField,
};
pub use decoder::DecoderOp;
pub use registry::{RegistryOp, RegistrySettings};
pub use reply::{KindArg, ReplyOp};
use views::{OutParam, Owner, ValidUntil, Views};

/// Slots per handle type: few, so that operations meet the same handles often.
const SLOTS: usize = 3;

/// Operations per run (the rest of a longer input is ignored).
const MAX_OPS: usize = 256;

/// The [`abi`] body's input: the handles a C caller starts with, and what it does, in
/// order.
#[derive(Debug, Clone, Arbitrary)]
pub struct AbiInput {
    /// Slot 0 of each type may hold a handle from the start (slots 1 and 2 start empty),
    /// so that short inputs reach deep states.
    pub start: Start,
    /// The calls (the first 256 are made).
    pub ops: Vec<AbiOp>,
}

/// The handles in slot 0 at the start: a config with the defaults, a decoder created
/// with it, and maybe a bridge (creating one costs far more than any other call, so runs
/// without bridges go faster).
#[derive(Debug, Clone, Arbitrary)]
pub struct Start {
    /// The bridge's dialect (`n % 3`), request body and built-in transcript, or no
    /// bridge.
    pub bridge: Option<(u8, RequestBody, u8)>,
    /// The decoder's built-in transcript.
    pub decoder_transcript: u8,
}

/// One thing a C caller does.
#[derive(Debug, Clone, Arbitrary)]
pub enum AbiOp {
    /// A call on config slot `n % 3`.
    Config(u8, ConfigOp),
    /// A call on bridge slot `n % 3`.
    Bridge(u8, BridgeOp),
    /// A call on decoder slot `n % 3`.
    Decoder(u8, DecoderOp),
    /// A call on reply slot `n % 3`.
    Reply(u8, ReplyOp),
    /// The caller's clock moves.
    Clock(Clock),
    /// `aw_result_name` and `aw_result_is_status` of a number.
    ResultName(ResultNumber),
    /// `aw_version`.
    Version,
    /// A call on ACP connection slot `n % 3`.
    Acp(u8, AcpOp),
    /// A call on conversation registry slot `n % 3`.
    Registry(u8, RegistryOp),
}

/// How the caller's clock moves. Later calls pass the new time as `now_ms`.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Clock {
    /// Milliseconds forward.
    Forward(u16),
    /// Far forward (up to 49 days).
    Far(u32),
    /// Anywhere, backward too: a clock that is not monotonic is misuse, but must not
    /// crash or poison anything.
    Jump(u64),
}

/// A number passed to `aw_result_name`.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum ResultNumber {
    /// Near the defined values: 6990 to 7245.
    Near(u8),
    /// Any number.
    Any(u32),
}

/// Bytes for an agent's stdout.
#[derive(Debug, Clone, Arbitrary)]
pub enum Stdout {
    /// The next bytes (1 to 4096) of the handle's built-in transcript.
    Transcript(u16),
    /// Real-shaped lines, generated (and maybe mutated) from these bytes as the
    /// `decoder_mutated` body does.
    Lines(Vec<u8>),
    /// Any bytes.
    Raw(Vec<u8>),
}

impl Stdout {
    /// The bytes; a transcript is read from `offset`, which moves past them.
    fn bytes(&self, transcript: &[u8], offset: &mut usize) -> Vec<u8> {
        match self {
            Stdout::Transcript(n) => {
                let start = (*offset).min(transcript.len());
                let end = (start + usize::from(*n % 4096) + 1).min(transcript.len());
                *offset = end;
                transcript[start..end].to_vec()
            }
            Stdout::Lines(seed) => {
                super::script::Script::generate(&mut Unstructured::new(seed), usize::MAX).bytes
            }
            Stdout::Raw(bytes) => bytes.clone(),
        }
    }
}

/// Built-in transcript `n`, modulo their number.
fn transcript(n: u8) -> &'static [u8] {
    super::TRANSCRIPTS[usize::from(n) % super::TRANSCRIPTS.len()].as_bytes()
}

/// An `aw_dialect` argument.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum DialectArg {
    /// A valid value: `n % 3`.
    Valid(u8),
    /// Any number (3 and up are `AW_RESULT_INVALID_ENUM`).
    Any(u32),
}

impl DialectArg {
    /// The number passed.
    fn value(self) -> u32 {
        match self {
            DialectArg::Valid(n) => u32::from(n % 3),
            DialectArg::Any(n) => n,
        }
    }

    /// The dialect the number names in `aw_dialect` (0 Chat Completions, 1 Responses,
    /// 2 Messages), if it names one.
    fn dialect(self) -> Option<Dialect> {
        usize::try_from(self.value())
            .ok()
            .and_then(|n| DIALECTS.get(n))
            .copied()
    }
}

/// How a byte or string argument is passed: the ways the header allows, valid or not.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Pass {
    /// Pointer and length of the whole value.
    Whole,
    /// Its first `n % (len + 1)` bytes (a string cut inside a character).
    Prefix(u16),
    /// A valid pointer and length 0.
    Empty,
    /// NULL with length 0: allowed, the empty value.
    Null,
    /// NULL with a length of `n + 1`: `AW_RESULT_NULL_PARAMETER`.
    NullWithLength(u16),
    /// The value's pointer and a length over `PTRDIFF_MAX`: `AW_RESULT_LENGTH_TOO_LARGE`.
    TooLarge(u64),
    /// NULL and a length over `PTRDIFF_MAX`: either error.
    NullTooLarge(u64),
}

/// An argument as passed: pointer, length, and either the bytes the callee sees or the
/// errors it may answer.
struct Passed<'a> {
    ptr: *const u8,
    len: usize,
    value: Result<&'a [u8], &'static [aw_result]>,
}

impl Pass {
    fn apply(self, data: &[u8]) -> Passed<'_> {
        // A length over PTRDIFF_MAX, from `n`: every one of them, up to usize::MAX.
        let too_large = |n: u64| isize::MAX as usize + 1 + (n as usize & isize::MAX as usize);
        let valid = |len: usize| Passed {
            ptr: data.as_ptr(),
            len,
            value: Ok(&data[..len]),
        };
        match self {
            Pass::Whole => valid(data.len()),
            Pass::Prefix(n) => valid(usize::from(n) % (data.len() + 1)),
            Pass::Empty => valid(0),
            Pass::Null => Passed {
                ptr: std::ptr::null(),
                len: 0,
                value: Ok(&[]),
            },
            Pass::NullWithLength(n) => Passed {
                ptr: std::ptr::null(),
                len: usize::from(n) + 1,
                value: Err(&[aw_result::NullParameter]),
            },
            Pass::TooLarge(n) => Passed {
                ptr: data.as_ptr(),
                len: too_large(n),
                value: Err(&[aw_result::LengthTooLarge]),
            },
            Pass::NullTooLarge(n) => Passed {
                ptr: std::ptr::null(),
                len: too_large(n),
                value: Err(&[aw_result::LengthTooLarge, aw_result::NullParameter]),
            },
        }
    }
}

/// What a handle's last error must be.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LastError {
    /// No call failed yet: `""`.
    Empty,
    /// A call failed: a message, not yet read.
    Failed,
    /// The handle is poisoned: a message that says so.
    Poisoned,
    /// The message read, which stays until another call fails.
    Is(String),
}

/// The bookkeeping every handle carries: poisoned or not, and its last error.
#[derive(Debug)]
struct Books {
    poisoned: bool,
    last_error: LastError,
}

impl Books {
    fn new() -> Books {
        Books {
            poisoned: false,
            last_error: LastError::Empty,
        }
    }

    /// Notes a call's result: a failure sets the last error.
    fn note(&mut self, result: aw_result) {
        if result == aw_result::Panic {
            self.poisoned = true;
        }
        if self.poisoned {
            self.last_error = LastError::Poisoned;
        } else if !aw_result_is_status(result as u32) {
            self.last_error = LastError::Failed;
        }
    }

    /// Checks the message `aw_*_last_error` returned.
    fn check_last_error(&mut self, message: String, what: &str) {
        match &self.last_error {
            LastError::Empty => assert_eq!(message, "", "{what}: a message before any failure"),
            LastError::Failed => assert!(!message.is_empty(), "{what}: empty after a failure"),
            LastError::Poisoned => assert!(
                message.contains("poisoned"),
                "{what} of a poisoned handle: {message:?}"
            ),
            LastError::Is(before) => {
                assert_eq!(&message, before, "{what}: changed without a failed call")
            }
        }
        if !self.poisoned {
            self.last_error = LastError::Is(message);
        }
    }
}

/// A slot of the handle table: a handle and its books.
trait Slot {
    /// The C handle type.
    type Handle;
    fn ptr(&self) -> *mut Self::Handle;
    fn books(&self) -> &Books;
}

/// The handle in `slot`, or NULL when it is empty.
fn handle<S: Slot>(slot: &Option<S>) -> *mut S::Handle {
    slot.as_ref().map_or(std::ptr::null_mut(), Slot::ptr)
}

/// The test hooks every handle type has.
#[derive(Debug, Clone, Copy)]
enum Hook {
    /// `aw_*_test_panic`: a panic inside a call, which poisons the handle.
    Panic,
    /// `aw_*_test_overlap`: a call and a free from inside a call, refused as `BUSY`.
    Overlap,
}

/// Results documented by several functions.
const OK: &[aw_result] = &[aw_result::Ok];
const POLL: &[aw_result] = &[aw_result::Ok, aw_result::Drained];
const OPTIONAL: &[aw_result] = &[aw_result::Ok, aw_result::NotAvailable];

/// The results a call on the handle in `slot` may return: those of its misuse (`errors`, a
/// NULL or poisoned handle, see [`misuse`]), or else the one `work` makes of the Rust
/// object the handle must behave as.
fn allowed<S: Slot>(
    slot: Option<&mut S>,
    errors: &[aw_result],
    work: impl FnOnce(&mut S) -> aw_result,
) -> Vec<aw_result> {
    match misuse(slot.as_deref().map(Slot::books), errors) {
        Some(allowed) => allowed,
        None => vec![work(slot.expect("a live handle"))],
    }
}

/// What a call on a handle must return, given the misuse it meets: `NULL_PARAMETER` for a
/// NULL handle, `POISONED` for a poisoned one, else one of `errors` (NULL out-pointers,
/// bad arguments) when any applies; `None` when the call must do its work.
fn misuse(handle: Option<&Books>, errors: &[aw_result]) -> Option<Vec<aw_result>> {
    match handle {
        None => Some(vec![aw_result::NullParameter]),
        Some(books) if books.poisoned => Some(vec![aw_result::Poisoned]),
        Some(_) if !errors.is_empty() => Some(errors.to_vec()),
        Some(_) => None,
    }
}

/// Checks a call's result against its documented results (those of `documented`, and
/// `NULL_PARAMETER` and `POISONED`, which every function on a handle may return) and
/// against the results the model allows.
fn check_result(what: &str, got: aw_result, documented: &[aw_result], allowed: &[aw_result]) {
    assert_ne!(got, aw_result::Panic, "{what} panicked inside agentwire");
    assert!(
        documented.contains(&got) || got == aw_result::NullParameter || got == aw_result::Poisoned,
        "{what} returned {got:?}, which it does not document ({documented:?})"
    );
    assert!(
        allowed.contains(&got),
        "{what} returned {got:?}; expected {allowed:?}"
    );
}

/// The `NULL_PARAMETER` of a NULL out-pointer, if `null`.
fn null_out(null: bool) -> &'static [aw_result] {
    if null {
        &[aw_result::NullParameter]
    } else {
        &[]
    }
}

/// Every handle, the caller's clock and the live views.
struct World {
    now: u64,
    configs: [Option<config::Slot>; SLOTS],
    bridges: [Option<bridge::Slot>; SLOTS],
    decoders: [Option<decoder::Slot>; SLOTS],
    replies: [Option<reply::Slot>; SLOTS],
    acps: [Option<acp::Slot>; SLOTS],
    registries: [Option<registry::Slot>; SLOTS],
    views: Views,
}

impl World {
    fn new() -> World {
        World {
            now: 1_000,
            configs: Default::default(),
            bridges: Default::default(),
            decoders: Default::default(),
            replies: Default::default(),
            acps: Default::default(),
            registries: Default::default(),
            views: Views::default(),
        }
    }

    fn clock(&mut self, clock: Clock) {
        self.now = match clock {
            Clock::Forward(ms) => self.now.saturating_add(u64::from(ms)),
            Clock::Far(ms) => self.now.saturating_add(u64::from(ms)),
            Clock::Jump(to) => to,
        };
    }

    /// A call on the handle `owner` names is about to happen: the views are read again,
    /// and those the call ends forgotten (an empty slot's call is on NULL, which ends
    /// nothing).
    fn before_call(&mut self, owner: Owner, mutating: bool) {
        if self.books_mut(owner).is_some() {
            self.views.before_call(owner, mutating);
        } else {
            self.views.reread();
        }
    }

    /// Notes a call's result on the books of the handle `owner` names.
    fn note(&mut self, owner: Owner, result: aw_result) {
        if let Some(books) = self.books_mut(owner) {
            books.note(result);
        }
    }

    /// Checks what `aw_*_last_error` returned for the handle `owner` names (`""` for
    /// NULL), and keeps the string, valid until the next call on it.
    fn check_last_error(&mut self, owner: Owner, message: *const std::ffi::c_char, what: &str) {
        let text = views::c_string(message, what);
        let Some(books) = self.books_mut(owner) else {
            assert_eq!(text, "", "{what}(NULL)");
            return;
        };
        books.check_last_error(text.clone(), what);
        let mut held = text.into_bytes();
        held.push(0);
        self.views.keep(
            owner,
            ValidUntil::NextCall,
            message.cast(),
            held,
            what.into(),
        );
    }

    /// A getter of a string valid until the next mutating call on the handle `owner`
    /// names: `call` makes the call with the out-pointer; the result is `OK` with `want`,
    /// or `NOT_AVAILABLE` when `want` is `None`.
    fn text_getter(
        &mut self,
        owner: Owner,
        null: bool,
        what: &str,
        documented: &[aw_result],
        want: Option<String>,
        call: impl FnOnce(*mut aw_str) -> aw_result,
    ) {
        self.before_call(owner, false);
        let mut out = OutParam::<aw_str>::new();
        let result = call(out.ptr(null));
        let books = self.books_mut(owner).map(|books| &*books);
        let allowed = misuse(books, null_out(null)).unwrap_or_else(|| {
            vec![if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::NotAvailable
            }]
        });
        check_result(what, result, documented, &allowed);
        self.note(owner, result);
        if let Some(view) = out.outcome(result, what) {
            let got = views::text(view, what);
            assert_eq!(Some(&got), want.as_ref(), "{what}");
            self.views.keep(
                owner,
                ValidUntil::MutatingCall,
                view.data.cast(),
                got.into_bytes(),
                what.into(),
            );
        }
    }

    /// The config argument of `aw_bridge_new` and `aw_decoder_new`: the handle in config
    /// slot `n % 3` (NULL when empty) or NULL, the settings the new handle must copy, and
    /// whether the config is poisoned. Reading it is a call on it.
    fn config_arg(&mut self, config: Option<u8>) -> (*mut aw_config, Config, bool) {
        let Some(slot) = config.map(|c| usize::from(c) % SLOTS) else {
            return (std::ptr::null_mut(), Config::default(), false);
        };
        self.before_call(Owner::Config(slot), false);
        match &self.configs[slot] {
            None => (std::ptr::null_mut(), Config::default(), false),
            Some(c) => (c.ptr, c.shadow.clone(), c.books.poisoned),
        }
    }

    /// The books of the handle `owner` names, if its slot holds one.
    fn books_mut(&mut self, owner: Owner) -> Option<&mut Books> {
        match owner {
            Owner::Static => None,
            Owner::Config(slot) => self.configs[slot].as_mut().map(|s| &mut s.books),
            Owner::Bridge(slot) => self.bridges[slot].as_mut().map(|s| &mut s.books),
            Owner::Decoder(slot) => self.decoders[slot].as_mut().map(|s| &mut s.books),
            Owner::Reply(slot) => self.replies[slot].as_mut().map(|s| &mut s.books),
            Owner::Acp(slot) => self.acps[slot].as_mut().map(|s| &mut s.books),
            Owner::Registry(slot) => self.registries[slot].as_mut().map(|s| &mut s.books),
        }
    }

    /// `aw_*_last_error` of the handle `owner` names, made by `call`: see
    /// [`check_last_error`](Self::check_last_error).
    fn last_error_of(
        &mut self,
        owner: Owner,
        what: &str,
        call: impl FnOnce() -> *const std::ffi::c_char,
    ) {
        self.before_call(owner, false);
        let message = call();
        self.check_last_error(owner, message, what);
    }

    /// A test hook on the handle `owner` names, made by `call`, and its result checked.
    fn test_hook(&mut self, owner: Owner, hook: Hook, call: impl FnOnce() -> aw_result) {
        self.before_call(owner, true);
        let result = call();
        match hook {
            Hook::Panic => self.after_test_panic(owner, result),
            Hook::Overlap => self.after_overlap(owner, result),
        }
    }

    /// Checks what an `aw_*_test_panic` hook returned: `AW_RESULT_PANIC`, which poisons
    /// the handle, or `POISONED` once it is; `NULL_PARAMETER` for NULL.
    fn after_test_panic(&mut self, owner: Owner, result: aw_result) {
        let want = match self.books_mut(owner) {
            None => aw_result::NullParameter,
            Some(books) if books.poisoned => aw_result::Poisoned,
            Some(_) => aw_result::Panic,
        };
        assert_eq!(result, want, "aw_*_test_panic on {owner:?}");
        if let Some(books) = self.books_mut(owner) {
            books.note(result);
        }
    }

    /// Checks what an `aw_*_test_overlap` hook returned: `AW_RESULT_BUSY`, the answer to
    /// a call made while another is in progress on the handle (and the free it then
    /// tries is refused: the handle stays live); `POISONED` for a poisoned handle,
    /// `NULL_PARAMETER` for NULL. The refused call leaves the last error alone.
    fn after_overlap(&mut self, owner: Owner, result: aw_result) {
        let want = match self.books_mut(owner) {
            None => aw_result::NullParameter,
            Some(books) if books.poisoned => aw_result::Poisoned,
            Some(_) => aw_result::Busy,
        };
        assert_eq!(result, want, "aw_*_test_overlap on {owner:?}");
    }

    /// Frees every handle, as a caller does at the end, whatever state each is in.
    fn free_all(&mut self) {
        for slot in 0..SLOTS {
            self.config(slot, &ConfigOp::Free);
            self.bridge(slot, &BridgeOp::Free);
            self.decoder(slot, &DecoderOp::Free);
            self.reply(slot, &ReplyOp::Free);
            self.acp(slot, &AcpOp::Free);
            self.registry(slot, &RegistryOp::Free);
        }
        self.views.reread();
    }
}

/// The values and names of `aw_result` as the header defines them (`AW_RESULT_OK = 7000,`
/// lines): the contract C code is compiled against, read from the header itself so that a
/// value added to the ABI is expected here as soon as the header has it.
fn header_results() -> &'static [(u32, String)] {
    static RESULTS: OnceLock<Vec<(u32, String)>> = OnceLock::new();
    RESULTS.get_or_init(|| {
        let results: Vec<(u32, String)> = include_str!("../../../include/agentwire.h")
            .lines()
            .filter_map(|line| {
                let (name, value) = line.trim().strip_suffix(',')?.split_once(" = ")?;
                let value = value.parse().ok()?;
                name.starts_with("AW_RESULT_")
                    .then(|| (value, name.to_owned()))
            })
            .collect();
        assert!(
            results
                .iter()
                .any(|(v, n)| *v == 7000 && n == "AW_RESULT_OK"),
            "the header's aw_result values were not found"
        );
        results
    })
}

/// `MAJOR.MINOR.PATCH` of the header's `#define AW_VERSION_*` lines: the version a C
/// program compiled against it expects `aw_version` to give.
fn header_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let part = |name: &str| {
            let prefix = format!("#define AW_VERSION_{name} ");
            include_str!("../../../include/agentwire.h")
                .lines()
                .find_map(|line| line.strip_prefix(prefix.as_str()))
                .and_then(|value| value.trim().parse::<u32>().ok())
                .unwrap_or_else(|| panic!("the header defines no AW_VERSION_{name}"))
        };
        format!("{}.{}.{}", part("MAJOR"), part("MINOR"), part("PATCH"))
    })
}

impl World {
    /// `aw_result_name` names the header's values and only them, in static strings;
    /// `aw_result_is_status` is the 7000–7099 range.
    fn result_name(&mut self, number: ResultNumber) {
        let value = match number {
            ResultNumber::Near(n) => 6990 + u32::from(n),
            ResultNumber::Any(n) => n,
        };
        self.views.reread();
        let name = aw_result_name(value);
        let want = header_results()
            .iter()
            .find(|(v, _)| *v == value)
            .map_or("AW_RESULT_UNKNOWN", |(_, name)| name.as_str());
        self.keep_static(name, want, "aw_result_name");
        assert_eq!(
            aw_result_is_status(value),
            (7000..7100).contains(&value),
            "aw_result_is_status({value})"
        );
    }

    /// `aw_version` is the C ABI version the header defines (`AW_VERSION_MAJOR`,
    /// `_MINOR`, `_PATCH`), `MAJOR.MINOR.PATCH`, in a static string.
    fn version(&mut self) {
        self.views.reread();
        self.keep_static(aw_version(), header_version(), "aw_version");
    }

    /// Checks a static C string is `want`, and keeps it to be read again until the end.
    fn keep_static(&mut self, ptr: *const std::ffi::c_char, want: &str, what: &str) {
        let got = views::c_string(ptr, what);
        assert_eq!(got, want, "{what}");
        let mut held = got.into_bytes();
        held.push(0);
        self.views.keep(
            Owner::Static,
            ValidUntil::Free,
            ptr.cast(),
            held,
            what.into(),
        );
    }
}

/// Keeps the panics of the `aw_*_test_panic` hooks quiet, and from reaching a panic hook
/// that aborts (libFuzzer's does, so that a crash's stack is kept): they are the poisoning
/// this body asks for, caught inside the boundary. Any other panic goes on to the hook in
/// place before.
fn quiet_test_hook_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let hook_panic = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|message| message.ends_with("_test_panic"));
            if !hook_panic {
                previous(info);
            }
        }));
    });
}

/// The C ABI under an arbitrary sequence of calls: see the module documentation for
/// every rule checked.
pub fn abi(input: AbiInput) {
    quiet_test_hook_panics();
    let mut world = World::new();
    let start = &input.start;
    world.config(0, &ConfigOp::New { null_out: false });
    if let Some((dialect, body, transcript)) = &start.bridge {
        let bridge = BridgeOp::New {
            dialect: DialectArg::Valid(*dialect),
            body: body.clone(),
            pass: Pass::Whole,
            config: Some(0),
            transcript: *transcript,
            created_unix: 1_700_000_000,
            id_seed: 1,
            null_out: false,
        };
        world.bridge(0, &bridge);
    }
    let decoder = DecoderOp::New {
        config: Some(0),
        transcript: start.decoder_transcript,
        null_out: false,
    };
    world.decoder(0, &decoder);
    for op in input.ops.iter().take(MAX_OPS) {
        match op {
            AbiOp::Config(slot, op) => world.config(usize::from(*slot) % SLOTS, op),
            AbiOp::Bridge(slot, op) => {
                let slot = usize::from(*slot) % SLOTS;
                world.bridge(slot, op);
                world.observe_bridge(slot);
            }
            AbiOp::Decoder(slot, op) => {
                let slot = usize::from(*slot) % SLOTS;
                world.decoder(slot, op);
                world.observe_decoder(slot);
            }
            AbiOp::Reply(slot, op) => world.reply(usize::from(*slot) % SLOTS, op),
            AbiOp::Clock(clock) => world.clock(*clock),
            AbiOp::ResultName(number) => world.result_name(*number),
            AbiOp::Version => world.version(),
            AbiOp::Acp(slot, op) => {
                let slot = usize::from(*slot) % SLOTS;
                world.acp(slot, op);
                world.observe_acp(slot);
            }
            AbiOp::Registry(slot, op) => {
                let slot = usize::from(*slot) % SLOTS;
                world.registry(slot, op);
                world.observe_registry(slot);
            }
        }
    }
    world.free_all();
}

/// Builds an [`AbiInput`] from bytes, as libFuzzer's `arbitrary` glue does, and runs
/// [`abi`]; for tests and seed replays. Bytes that build no input are skipped.
pub fn abi_bytes(data: &[u8]) {
    if let Ok(input) = AbiInput::arbitrary_take_rest(Unstructured::new(data)) {
        abi(input);
    }
}
