//! `aw_reply`: a whole HTTP reply an adapter sends without running an agent — the answer
//! to `POST /v1/messages/count_tokens` (`anthropic::count_tokens`), and the adapter's own
//! refusals in the shape of the route's dialect (`Dialect::write_error`).

use std::ffi::c_char;

use super::boundary::{
    Guarded, Handle, Out, boundary, call, free_handle, impl_handle, input_bytes, input_enum,
    input_str, last_error,
};
use super::bridge::aw_dialect;
use super::config::{aw_config, config_or_default};
use super::names::{CEnum, mirrors, name_of};
use super::result::aw_result;
use super::views::aw_bytes;
use crate::anthropic;
use crate::api::{ErrorKind, ErrorReply};
use crate::bridge::Dialect;

/// A whole reply that needs no agent: an opaque handle created by
/// `aw_reply_new_count_tokens` or `aw_reply_new_error`, read with `aw_reply_status`,
/// `aw_reply_retryable` and `aw_reply_body`, freed by `aw_reply_free`.
///
/// Send it as: the status, `content-type: application/json`, `x-should-retry: true|false`
/// from `aw_reply_retryable`, then the body. A reply never changes, so the views it hands
/// out stay valid until it is freed.
#[allow(non_camel_case_types)]
pub struct aw_reply(Guarded<Reply>);
impl_handle!(aw_reply, Reply);

pub(crate) struct Reply {
    status: u16,
    retryable: bool,
    body: Vec<u8>,
}

impl Reply {
    fn of(dialect: Dialect, reply: &ErrorReply) -> Reply {
        let mut body = Vec::new();
        dialect.write_error(reply, &mut body);
        Reply {
            status: reply.status(),
            retryable: reply.retryable(),
            body,
        }
    }
}

/// The class of an error reply; each has one HTTP status, and whether a client may retry
/// follows from it (`aw_reply_retryable`). `aw_error_kind_name` names a value.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_error_kind {
    /// 400: the request is invalid.
    InvalidRequest = 0,
    /// 401: not authenticated (no key, or the wrong one).
    Authentication = 1,
    /// 403: not allowed (say, a web origin that is not allowed).
    PermissionDenied = 2,
    /// 404: the route (or the model) does not exist.
    NotFound = 3,
    /// 405: the route does not take this method.
    MethodNotAllowed = 4,
    /// 413: the request body is too large.
    RequestTooLarge = 5,
    /// 415: the request body is not of a media type the route takes.
    UnsupportedMediaType = 6,
    /// 429: a rate limit was hit, or every agent slot is taken. Retryable.
    RateLimited = 7,
    /// 500: misconfigured; retrying will not help until someone fixes it.
    Internal = 8,
    /// 502: the agent failed. Retryable.
    AgentFailed = 9,
    /// 503: unavailable, or shutting down. Retryable.
    Unavailable = 10,
    /// 504: timed out. Retryable.
    Timeout = 11,
    /// 429: the account's usage limit or quota is used up. Not retryable.
    UsageLimit = 12,
}

mirrors!(aw_error_kind => ErrorKind {
    InvalidRequest,
    Authentication,
    PermissionDenied,
    NotFound,
    MethodNotAllowed,
    RequestTooLarge,
    UnsupportedMediaType,
    RateLimited,
    Internal,
    AgentFailed,
    Unavailable,
    Timeout,
    UsageLimit,
});

/// The name of an `aw_error_kind` value (`"usage_limit"` for `AW_ERROR_KIND_USAGE_LIMIT`:
/// the enumerator's name after its prefix, in lower case), or NULL for a number that is
/// not one. The Rust API, the bindings and the examples name the classes alike.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.2.
#[unsafe(no_mangle)]
pub extern "C" fn aw_error_kind_name(kind: u32) -> *const c_char {
    name_of::<aw_error_kind>(kind)
}

/// The answer to a `POST /v1/messages/count_tokens` body (any query string), without an
/// agent, as a new reply in `*out_reply`: a 400 naming the field (413 for a body over the
/// limit) when the body is not a valid count_tokens request, else a 404
/// `not_found_error` saying tokens cannot be counted here (cursor-agent's prompt and
/// tokenizer are not visible; each response reports its real usage). Never a 5xx and
/// never retryable: Claude Code then shows its own estimate, and retries nothing.
///
/// `config` gives the request limits (NULL: the defaults).
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`,
/// `AW_RESULT_POISONED` (a poisoned `config`), `AW_RESULT_BUSY` (`config` is in a call on
/// another thread).
///
/// Memory and lifetimes: `body` is read during the call only. The caller owns the new
/// reply and frees it with `aw_reply_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_new_count_tokens(
    body: *const u8,
    body_len: usize,
    config: *const aw_config,
    out_reply: *mut *mut aw_reply,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_reply` is NULL or writable, `body` is NULL or
        // `body_len` readable bytes, `config` is NULL or a live config.
        let (out, body, config) = unsafe {
            let out = match Out::new(out_reply, "out_reply") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            let body = match input_bytes(body, body_len, "body") {
                Ok(body) => body,
                Err(error) => return error.code,
            };
            let config = match config_or_default(config) {
                Ok(config) => config,
                Err(code) => return code,
            };
            (out, body, config)
        };
        let reply = anthropic::count_tokens(body, &config.request_limits);
        out.write(aw_reply::into_raw(Reply::of(Dialect::Messages, &reply)));
        aw_result::Ok
    })
}

/// An adapter's own refusal on a route of `dialect` (an `aw_dialect`): the error body of
/// that dialect for an error of class `kind` (an `aw_error_kind`) saying `message`, as a
/// new reply in `*out_reply`. For what the adapter decides before any bridge exists: not
/// authenticated (401), a forbidden origin (403), an unknown route (404), a wrong method
/// (405), a body too large (413) or not JSON (415), every agent slot taken (429),
/// shutting down (503). The body's machine code (`code` in the OpenAI dialects) is the
/// class's own (`invalid_api_key`, `not_found`, `rate_limit_exceeded`, …).
///
/// `message`, `message_len`: UTF-8 (NULL allowed when `message_len` is 0); say what to
/// do about it, since clients show it.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_ENUM` (`dialect` or `kind` out of range),
/// `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `message` is read during the call only. The caller owns the new
/// reply and frees it with `aw_reply_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_new_error(
    dialect: u32,
    kind: u32,
    message: *const c_char,
    message_len: usize,
    out_reply: *mut *mut aw_reply,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_reply` is NULL or writable, `message` is NULL or
        // `message_len` readable bytes.
        let (out, message) = unsafe {
            let out = match Out::new(out_reply, "out_reply") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            match input_str(message, message_len, "message") {
                Ok(message) => (out, message),
                Err(error) => return error.code,
            }
        };
        let checked = input_enum(dialect, "dialect", aw_dialect::from_u32)
            .and_then(|dialect| Ok((dialect, input_enum(kind, "kind", aw_error_kind::from_u32)?)));
        let (dialect, kind) = match checked {
            Ok(checked) => checked,
            Err(error) => return error.code,
        };
        let reply = ErrorReply::refusal(kind, message);
        out.write(aw_reply::into_raw(Reply::of(dialect, &reply)));
        aw_result::Ok
    })
}

/// Frees a reply. NULL does nothing; the views it handed out become invalid. A free that
/// overlaps a call on the reply from another thread is refused, as for every handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_free(reply: *mut aw_reply) {
    // SAFETY: the pointer rules: `reply` is NULL or a live reply, freed once.
    unsafe { free_handle(reply) }
}

/// The message of the last call on `reply` that failed, NUL-terminated; `""` when none
/// failed or `reply` is NULL.
///
/// Memory and lifetimes: valid until the next call on `reply` (from any thread) or its
/// free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_last_error(reply: *const aw_reply) -> *const c_char {
    // SAFETY: the pointer rules: `reply` is NULL or a live reply.
    unsafe { last_error(reply) }
}

/// The HTTP status of the reply, into `*out_status`. Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_status(
    reply: *const aw_reply,
    out_status: *mut u16,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(reply, |reply| {
            Out::new(out_status, "out_status")?.write(reply.status);
            Ok(aw_result::Ok)
        })
    }
}

/// Whether retrying the request may help, into `*out_retryable`: send it as
/// `x-should-retry: true|false` (Anthropic's and OpenAI's SDKs honour it over the status).
/// Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_retryable(
    reply: *const aw_reply,
    out_retryable: *mut bool,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(reply, |reply| {
            Out::new(out_retryable, "out_retryable")?.write(reply.retryable);
            Ok(aw_result::Ok)
        })
    }
}

/// The reply's body (JSON, sent as `application/json`), into `*out_body`. Returns
/// `AW_RESULT_OK`.
///
/// Memory and lifetimes: valid until `aw_reply_free` (a reply never changes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_body(
    reply: *const aw_reply,
    out_body: *mut aw_bytes,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(reply, |reply| {
            Out::new(out_body, "out_body")?.write(aw_bytes::of(&reply.body));
            Ok(aw_result::Ok)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_kind_maps_to_its_class() {
        for (value, (kind, class)) in aw_error_kind::VALUES.iter().zip(ErrorKind::ALL).enumerate() {
            let value = u32::try_from(value).unwrap();
            assert_eq!(*kind as u32, value, "{kind:?} is numbered in order");
            assert_eq!(aw_error_kind::from_u32(value), Some(*class));
        }
        assert_eq!(aw_error_kind::from_u32(13), None);
        let statuses: Vec<u16> = aw_error_kind::VALUES
            .iter()
            .map(|k| aw_error_kind::from_u32(*k as u32).unwrap().status())
            .collect();
        assert_eq!(
            statuses,
            [
                400, 401, 403, 404, 405, 413, 415, 429, 500, 502, 503, 504, 429
            ]
        );
    }
}
