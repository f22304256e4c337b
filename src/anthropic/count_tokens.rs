//! `POST /v1/messages/count_tokens`: answered without starting an agent.
//!
//! # Why an honest 404 and not an estimate
//!
//! The endpoint promises the number of input tokens the model would be charged for. That
//! number cannot be known here: it depends on cursor-agent's own prompt, which is never
//! shown (every real capture reports over 16,000 input tokens, fresh and cached, for a
//! prompt of a line or two), and on the tokenizer of whichever model Cursor routes to.
//! Any number sent would be a guess that a client cannot tell from a count, and the
//! project reports usage only as the agent reports it.
//!
//! What the clients do with a refusal instead (Claude Code and anthropic-python 2.12.0,
//! `max_retries=2`, against a loopback server):
//! - Claude Code calls the endpoint for `/context` (about 25 calls) and from its IDE
//!   extension; when a call fails with a 4xx it shows its own local estimate, and it
//!   retries 5xx replies (doubling the calls) — so never a 5xx.
//! - anthropic-python's `messages.count_tokens` raises `NotFoundError` (status 404, the
//!   message below) after one request: it retries neither a 404 nor a reply carrying
//!   `x-should-retry: false`. (A 400 raises `BadRequestError`, equally once; a number
//!   would be returned as a `MessageTokensCount` no caller could doubt.)
//! - The real number of every request still reaches both, as `usage` in each response.
//!
//! A 404 `not_found_error` says what is true — this server has no token counter — where a
//! 400 would tell the client its request is wrong. A body that *is* wrong still gets the
//! 400 (or 413) naming the field, from the same parser as `POST /v1/messages`.

use super::request::{Endpoint, parse};
use crate::api::{ErrorKind, ErrorReply, RequestLimits};

/// The message of the refusal.
pub const COUNT_TOKENS_UNAVAILABLE: &str = "Token counting is not available on this server: \
    the agent's own prompt and tokenizer are not visible to it. Each response reports the \
    tokens it used in 'usage'.";

/// The reply to a `POST /v1/messages/count_tokens` body (any query string): a 400 naming
/// the field (413 for an over-limit body) when the body is not a valid count_tokens
/// request, else a 404 `not_found_error` saying that tokens cannot be counted here (see
/// the module docs). Never starts an agent, never a 5xx, never retryable. Send it with
/// [`write_error`](super::write_error), `reply.status()`, and `x-should-retry: false`.
#[must_use]
pub fn count_tokens(body: &[u8], limits: &RequestLimits) -> ErrorReply {
    match parse(body, limits, Endpoint::CountTokens) {
        Err(error) => ErrorReply::from(&error),
        Ok(_) => ErrorReply::new(
            ErrorKind::NotFound,
            COUNT_TOKENS_UNAVAILABLE,
            "count_tokens_unavailable",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::invites_retry;

    fn answer(body: &str) -> ErrorReply {
        count_tokens(body.as_bytes(), &RequestLimits::default())
    }

    #[test]
    fn a_valid_body_is_refused_honestly_and_for_good() {
        // A count_tokens body has no max_tokens and no stream.
        let body = r#"{"model":"claude-opus-5-5","system":[{"type":"text","text":"s"}],
            "messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Read","input_schema":{"type":"object"}}],
            "thinking":{"type":"adaptive"}}"#;
        let reply = answer(body);
        assert_eq!(
            (reply.status(), reply.retryable(), reply.code),
            (404, false, "count_tokens_unavailable")
        );
        assert!(!invites_retry(&reply.message), "{}", reply.message);
        let mut out = Vec::new();
        super::super::write_error(&reply, &mut out);
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(json["error"]["type"], "not_found_error");
    }

    #[test]
    fn a_bad_body_gets_the_400_naming_the_field() {
        let reply = answer(r#"{"model":"m","messages":[{"role":"robot","content":"x"}]}"#);
        assert_eq!(
            (reply.status(), reply.param.as_deref(), reply.retryable()),
            (400, Some("messages[0].role"), false)
        );
        assert_eq!(
            answer(r#"{"model":"m"}"#).param.as_deref(),
            Some("messages")
        );
        let tiny = RequestLimits {
            max_body_bytes: 4,
            ..RequestLimits::default()
        };
        assert_eq!(count_tokens(b"{\"model\":1}", &tiny).status(), 413);
    }
}
