//! The replies that need no agent: `count_tokens` (`anthropic::count_tokens`) and a
//! server's own refusals in its route's dialect (`Dialect::write_error`).
//!
//! A reply crosses as one byte string the TypeScript layer reads back into a `Reply`:
//!
//! ```text
//! status (u16 LE), retryable (0 false, 1 true), body (the rest)
//! ```

use agentwire::anthropic;
use agentwire::api::{ErrorKind, ErrorReply};
use agentwire::bridge::Dialect;
use wasm_bindgen::prelude::wasm_bindgen;

use crate::bridge::dialect;
use crate::config;
use crate::error::{Code, RawError};
use crate::names;

/// The error class of its name in the package (`ErrorReplyKind`).
fn kind(name: &str) -> Result<ErrorKind, RawError> {
    names::parse(name).ok_or_else(|| {
        RawError::new(
            Code::InvalidArgument,
            format!(
                "kind must be one of {}",
                names::choices::<ErrorKind>("", ", ")
            ),
        )
    })
}

/// `reply` rendered in `dialect`, as its record.
fn record(dialect: Dialect, reply: &ErrorReply) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&reply.status().to_le_bytes());
    out.push(u8::from(reply.retryable()));
    dialect.write_error(reply, &mut out);
    out
}

/// The reply to a `POST /v1/messages/count_tokens` body, without an agent: a 400 naming
/// the field, or a 404 saying tokens cannot be counted here. `config` is the JSON of the
/// package's `Config` (its request limits apply).
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(body: &[u8], config: Option<String>) -> Result<Vec<u8>, RawError> {
    let config = config::parse(config.as_deref())?;
    let reply = anthropic::count_tokens(body, &config.request_limits);
    Ok(record(Dialect::Messages, &reply))
}

/// A server's own refusal on a route of `dialect`: an error of class `kind` saying
/// `message`, in that dialect's body.
#[wasm_bindgen(js_name = errorReply)]
pub fn error_reply(
    dialect_name: &str,
    kind_name: &str,
    message: &str,
) -> Result<Vec<u8>, RawError> {
    let dialect = dialect(dialect_name)?;
    let reply = ErrorReply::refusal(kind(kind_name)?, message);
    Ok(record(dialect, &reply))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(record: &[u8]) -> (u16, bool, serde_json::Value) {
        let status = u16::from_le_bytes([record[0], record[1]]);
        (
            status,
            record[2] == 1,
            serde_json::from_slice(&record[3..]).unwrap(),
        )
    }

    #[test]
    fn every_kind_has_its_status_in_every_dialect() {
        let statuses = [400, 401, 403, 404, 405, 413, 415, 429, 500, 502, 503, 504];
        for (kind, status) in ErrorKind::ALL.iter().zip(statuses) {
            let name = &names::CamelCase(kind.name()).to_string();
            for dialect_name in ["chat-completions", "responses", "messages"] {
                let (got, retryable, body) =
                    parts(&error_reply(dialect_name, name, "why").unwrap());
                assert_eq!(got, status, "{name}");
                assert_eq!(retryable, matches!(status, 429 | 502 | 503 | 504), "{name}");
                // Both shapes carry the message at `error.message`; only Anthropic's
                // names itself an error at the top.
                assert_eq!(body["error"]["message"], "why");
                assert_eq!(body["type"] == "error", dialect_name == "messages");
            }
        }
    }

    #[test]
    fn count_tokens_answers_without_an_agent_within_the_limits() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let (status, retryable, json) = parts(&count_tokens(body, None).unwrap());
        assert_eq!((status, retryable), (404, false));
        assert_eq!(json["error"]["type"], "not_found_error");
        let small = Some(r#"{"requestLimits":{"maxBodyBytes":8}}"#.to_owned());
        assert_eq!(parts(&count_tokens(body, small).unwrap()).0, 413);
        assert_eq!(parts(&count_tokens(b"{", None).unwrap()).0, 400);
    }

    #[test]
    fn unknown_names_are_invalid_arguments() {
        for (dialect_name, kind_name) in [("chat", "notFound"), ("messages", "not-found")] {
            let error = error_reply(dialect_name, kind_name, "x").unwrap_err();
            assert_eq!(error.code_value(), Code::InvalidArgument);
        }
    }
}
