//! `aw_reply` calls: every reply is made by the Rust API too (`anthropic::count_tokens`,
//! `ErrorReply::refusal` and the dialect's error body) and must answer the same status,
//! retryability and body, the body's view unchanged until the reply is freed.

use arbitrary::Arbitrary;

use super::views::{OutParam, Owner, ValidUntil, bytes};
use super::{Books, DialectArg, Hook, OK, Pass, World, allowed, check_result, handle, null_out};
use crate::fuzzing::RequestBody;
use crate::fuzzing::dialects::{check_error_body, error_body};
use agentwire::anthropic;
use agentwire::api::{ErrorKind, ErrorReply};
use agentwire::bridge::Dialect;
use agentwire::ffi::reply::*;
use agentwire::ffi::result::aw_result;
use agentwire::ffi::test_hooks::{aw_reply_test_overlap, aw_reply_test_panic};
use agentwire::ffi::views::aw_bytes;

/// The error classes in the order of `aw_error_kind`'s values (0 to 11).
const KINDS: [ErrorKind; 13] = [
    ErrorKind::InvalidRequest,
    ErrorKind::Authentication,
    ErrorKind::PermissionDenied,
    ErrorKind::NotFound,
    ErrorKind::MethodNotAllowed,
    ErrorKind::RequestTooLarge,
    ErrorKind::UnsupportedMediaType,
    ErrorKind::RateLimited,
    ErrorKind::Internal,
    ErrorKind::AgentFailed,
    ErrorKind::Unavailable,
    ErrorKind::Timeout,
    ErrorKind::UsageLimit,
];

/// A reply handle and what the Rust API says it holds.
pub(super) struct Slot {
    ptr: *mut aw_reply,
    status: u16,
    retryable: bool,
    body: Vec<u8>,
    pub(super) books: Books,
}

impl super::Slot for Slot {
    type Handle = aw_reply;
    fn ptr(&self) -> *mut aw_reply {
        self.ptr
    }
    fn books(&self) -> &Books {
        &self.books
    }
}

/// An `aw_error_kind` argument.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum KindArg {
    /// A valid value: `n % 13`.
    Valid(u8),
    /// Any number (13 and up are `AW_RESULT_INVALID_ENUM`).
    Any(u32),
}

impl KindArg {
    fn value(self) -> u32 {
        match self {
            KindArg::Valid(n) => u32::from(n) % KINDS.len() as u32,
            KindArg::Any(n) => n,
        }
    }

    fn kind(self) -> Option<ErrorKind> {
        usize::try_from(self.value())
            .ok()
            .and_then(|n| KINDS.get(n))
            .copied()
    }
}

/// A call on a reply.
#[derive(Debug, Clone, Arbitrary)]
pub enum ReplyOp {
    /// `aw_reply_new_count_tokens` (freeing the slot's handle first).
    CountTokens {
        /// A request body as a Messages request (`None`: a valid count_tokens body).
        body: Option<RequestBody>,
        /// How it is passed.
        pass: Pass,
        /// The config slot (`n % 3`; an empty slot is NULL), or NULL.
        config: Option<u8>,
        /// Pass NULL as `out_reply`.
        null_out: bool,
    },
    /// `aw_reply_new_error` (freeing the slot's handle first).
    Error {
        /// The `dialect` argument.
        dialect: DialectArg,
        /// The `kind` argument.
        kind: KindArg,
        /// The message (any bytes: UTF-8 or not).
        message: Vec<u8>,
        /// How it is passed.
        pass: Pass,
        /// Pass NULL as `out_reply`.
        null_out: bool,
    },
    /// `aw_reply_free`.
    Free,
    /// `aw_reply_status`.
    Status {
        /// Pass NULL as `out_status`.
        null_out: bool,
    },
    /// `aw_reply_retryable`.
    Retryable {
        /// Pass NULL as `out_retryable`.
        null_out: bool,
    },
    /// `aw_reply_body`.
    Body {
        /// Pass NULL as `out_body`.
        null_out: bool,
    },
    /// `aw_reply_last_error`.
    LastError,
    /// `aw_reply_test_panic`: poisons the handle.
    Panic,
    /// `aw_reply_test_overlap`: a call and a free from inside a call, refused as `BUSY`.
    Overlap,
}

/// Documented results.
const NEW_COUNT_TOKENS: &[aw_result] = &[
    aw_result::Ok,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
    aw_result::Poisoned,
];
const NEW_ERROR: &[aw_result] = &[
    aw_result::Ok,
    aw_result::InvalidEnum,
    aw_result::InvalidUtf8,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];

/// A valid `POST /v1/messages/count_tokens` body.
const COUNT_TOKENS_BODY: &[u8] = br#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;

impl World {
    /// One call on reply `slot`.
    pub(super) fn reply(&mut self, slot: usize, op: &ReplyOp) {
        let owner = Owner::Reply(slot);
        let ptr = handle(&self.replies[slot]);
        match op {
            ReplyOp::CountTokens {
                body,
                pass,
                config,
                null_out,
            } => self.reply_count_tokens(slot, body.as_ref(), *pass, *config, *null_out),
            ReplyOp::Error {
                dialect,
                kind,
                message,
                pass,
                null_out,
            } => self.reply_error(slot, *dialect, *kind, message, *pass, *null_out),
            ReplyOp::Free => {
                self.views.before_free(owner);
                // SAFETY: `ptr` is NULL or the slot's live handle, forgotten just below.
                unsafe { aw_reply_free(ptr) };
                self.replies[slot] = None;
            }
            ReplyOp::Status { null_out: null } => {
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_reply_status(ptr, out) };
                self.reply_scalar(slot, *null, "aw_reply_status", call, |s| s.status);
            }
            ReplyOp::Retryable { null_out: null } => {
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_reply_retryable(ptr, out) };
                self.reply_scalar(slot, *null, "aw_reply_retryable", call, |s| s.retryable);
            }
            ReplyOp::Body { null_out: null } => {
                self.before_call(owner, false);
                let mut out = OutParam::<aw_bytes>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_reply_body(ptr, out.ptr(*null)) };
                let mut want = None;
                let allowed = allowed(self.replies[slot].as_mut(), null_out(*null), |s| {
                    want = Some(s.body.clone());
                    aw_result::Ok
                });
                let what = "aw_reply_body";
                check_result(what, result, OK, &allowed);
                self.note(owner, result);
                if let Some(view) = out.outcome(result, what) {
                    let got = bytes(view, what);
                    assert_eq!(Some(&got), want.as_ref(), "{what}");
                    // A reply never changes: its body is valid until the free.
                    self.views
                        .keep(owner, ValidUntil::Free, view.data, got, what.into());
                }
            }
            ReplyOp::LastError => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_reply_last_error(ptr) };
                self.last_error_of(owner, "aw_reply_last_error", call);
            }
            ReplyOp::Panic => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_reply_test_panic(ptr) };
                self.test_hook(owner, Hook::Panic, call);
            }
            ReplyOp::Overlap => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_reply_test_overlap(ptr) };
                self.test_hook(owner, Hook::Overlap, call);
            }
        }
    }

    /// A getter of a number or flag of reply `slot`: `call` makes the call with the
    /// out-pointer, which must receive what `want` reads from the slot.
    fn reply_scalar<T: Copy + PartialEq + std::fmt::Debug>(
        &mut self,
        slot: usize,
        null: bool,
        what: &str,
        call: impl FnOnce(*mut T) -> aw_result,
        want: impl FnOnce(&Slot) -> T,
    ) {
        self.before_call(Owner::Reply(slot), false);
        let mut out = OutParam::<T>::new();
        let result = call(out.ptr(null));
        let mut wanted = None;
        let allowed = allowed(self.replies[slot].as_mut(), null_out(null), |s| {
            wanted = Some(want(s));
            aw_result::Ok
        });
        check_result(what, result, OK, &allowed);
        self.note(Owner::Reply(slot), result);
        if let Some(got) = out.outcome(result, what) {
            assert_eq!(Some(got), wanted, "{what}");
        }
    }

    /// `aw_reply_new_count_tokens`: what `anthropic::count_tokens` answers, with the
    /// request limits of the config.
    fn reply_count_tokens(
        &mut self,
        slot: usize,
        body: Option<&RequestBody>,
        pass: Pass,
        config: Option<u8>,
        null: bool,
    ) {
        self.reply(slot, &ReplyOp::Free);
        let body = body.map_or_else(
            || COUNT_TOKENS_BODY.to_vec(),
            |body| body.bytes(Dialect::Messages),
        );
        let passed = pass.apply(&body);
        let (config_ptr, config, poisoned) = self.config_arg(config);
        let mut out = OutParam::<*mut aw_reply>::new();
        // SAFETY: `passed` is a valid pointer and length, NULL, or a length over
        // PTRDIFF_MAX; `config_ptr` is NULL or live; `out` is a local or NULL.
        let result =
            unsafe { aw_reply_new_count_tokens(passed.ptr, passed.len, config_ptr, out.ptr(null)) };
        let what = "aw_reply_new_count_tokens";
        let mut errors = null_out(null).to_vec();
        errors.extend(passed.value.err().unwrap_or_default());
        if poisoned {
            errors.push(aw_result::Poisoned);
        }
        if !errors.is_empty() {
            check_result(what, result, NEW_COUNT_TOKENS, &errors);
            assert!(out.outcome(result, what).is_none());
            return;
        }
        let reply =
            anthropic::count_tokens(passed.value.unwrap_or_default(), &config.request_limits);
        check_result(what, result, NEW_COUNT_TOKENS, OK);
        assert!(
            matches!(reply.status(), 400 | 404 | 413) && !reply.retryable(),
            "count_tokens answered {} (retryable {})",
            reply.status(),
            reply.retryable()
        );
        let body = error_body(Dialect::Messages, &reply);
        check_error_body(Dialect::Messages, reply.status(), &body);
        self.keep_reply(slot, out.outcome(result, what), &reply, body);
    }

    /// `aw_reply_new_error`: the refusal `ErrorReply::refusal` makes, in the dialect's
    /// error body.
    fn reply_error(
        &mut self,
        slot: usize,
        dialect: DialectArg,
        kind: KindArg,
        message: &[u8],
        pass: Pass,
        null: bool,
    ) {
        self.reply(slot, &ReplyOp::Free);
        let passed = pass.apply(message);
        let mut out = OutParam::<*mut aw_reply>::new();
        // SAFETY: `passed` is a valid pointer and length, NULL, or a length over
        // PTRDIFF_MAX; `out` is a local or NULL.
        let result = unsafe {
            aw_reply_new_error(
                dialect.value(),
                kind.value(),
                passed.ptr.cast(),
                passed.len,
                out.ptr(null),
            )
        };
        let what = "aw_reply_new_error";
        let mut errors = null_out(null).to_vec();
        let text = match passed.value {
            Err(bad) => {
                errors.extend(bad);
                None
            }
            Ok(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => Some(text),
                Err(_) => {
                    errors.push(aw_result::InvalidUtf8);
                    None
                }
            },
        };
        let (Some(text), true) = (text, errors.is_empty()) else {
            check_result(what, result, NEW_ERROR, &errors);
            assert!(out.outcome(result, what).is_none());
            return;
        };
        let (Some(dialect), Some(kind)) = (dialect.dialect(), kind.kind()) else {
            check_result(what, result, NEW_ERROR, &[aw_result::InvalidEnum]);
            assert!(out.outcome(result, what).is_none());
            return;
        };
        check_result(what, result, NEW_ERROR, OK);
        let reply = ErrorReply::refusal(kind, text);
        let body = error_body(dialect, &reply);
        let value: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{what}: the body is not JSON ({e})"));
        match dialect {
            Dialect::Messages => assert_eq!(
                (&value["type"], &value["error"]["message"]),
                (&"error".into(), &text.into()),
                "{what}: {value}"
            ),
            _ => {
                crate::chat::error_body(&value);
                assert_eq!(value["error"]["message"], text, "{what}: {value}");
                assert_eq!(value["error"]["code"], kind.code(), "{what}: {value}");
            }
        }
        self.keep_reply(slot, out.outcome(result, what), &reply, body);
    }

    /// A new reply in `slot`, which must hold what `reply` and `body` say.
    fn keep_reply(
        &mut self,
        slot: usize,
        ptr: Option<*mut aw_reply>,
        reply: &ErrorReply,
        body: Vec<u8>,
    ) {
        let ptr = ptr.expect("a reply on OK");
        assert!(!ptr.is_null(), "a NULL reply");
        self.replies[slot] = Some(Slot {
            ptr,
            status: reply.status(),
            retryable: reply.retryable(),
            body,
            books: Books::new(),
        });
    }
}
