//! The Anthropic error body: `{"type":"error","error":{"type","message"}}`, with the
//! `type` Anthropic's clients map to their exception classes.

use std::borrow::Cow;

use crate::api::invites_retry;
use crate::api::json::write_str;
use crate::api::{ErrorKind, ErrorReply};

/// The Anthropic `error.type` of an error class.
fn error_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest
        | ErrorKind::MethodNotAllowed
        | ErrorKind::UnsupportedMediaType => "invalid_request_error",
        ErrorKind::Authentication => "authentication_error",
        ErrorKind::PermissionDenied => "permission_error",
        ErrorKind::NotFound => "not_found_error",
        ErrorKind::RequestTooLarge => "request_too_large",
        // Anthropic has no type of its own for a used-up quota; `x-should-retry: false`
        // is what keeps its SDKs (and Claude Code) from retrying it.
        ErrorKind::RateLimited | ErrorKind::UsageLimit => "rate_limit_error",
        ErrorKind::Timeout => "timeout_error",
        ErrorKind::Unavailable => "overloaded_error",
        ErrorKind::Internal | ErrorKind::AgentFailed => "api_error",
    }
}

/// Appends the Anthropic error body for `reply` (sent with `reply.status()`, and
/// `reply.retryable()` as `x-should-retry`): also the data of an in-stream `event: error`.
///
/// The body has no `param` field, so the offending parameter leads the message, as in the
/// API's own errors (`messages[1].content[0].tool_use_id: Each 'tool_result' must …`) —
/// unless the path itself would make a client retry (a message index such as `500`),
/// where the message goes alone.
pub fn write_error(reply: &ErrorReply, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"type\":\"error\",\"error\":{\"type\":\"");
    out.extend_from_slice(error_type(reply.kind).as_bytes());
    out.extend_from_slice(b"\",\"message\":");
    write_str(out, &message(reply));
    out.extend_from_slice(b"}}");
}

/// The message, led by the parameter it is about.
fn message(reply: &ErrorReply) -> Cow<'_, str> {
    match &reply.param {
        Some(param) if !param.is_empty() && !reply.message.contains(param.as_str()) => {
            let led = format!("{param}: {}", reply.message);
            if invites_retry(&led) {
                Cow::Borrowed(&reply.message)
            } else {
                Cow::Owned(led)
            }
        }
        _ => Cow::Borrowed(&reply.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RequestError;
    use crate::event::{Failure, FailureKind};

    #[test]
    fn body_shape_and_types() {
        let cases = [
            (FailureKind::NotAuthenticated, 401, "authentication_error"),
            (FailureKind::ModelUnavailable, 404, "not_found_error"),
            (FailureKind::RateLimited, 429, "rate_limit_error"),
            (FailureKind::UsageLimit, 429, "rate_limit_error"),
            (FailureKind::Misconfigured, 500, "api_error"),
            (FailureKind::AgentCrashed, 502, "api_error"),
            (FailureKind::Unavailable, 503, "overloaded_error"),
            (FailureKind::Timeout, 504, "timeout_error"),
        ];
        for (kind, status, error_type) in cases {
            let reply = ErrorReply::from_failure(&Failure::new(kind, "m \"q\""));
            let mut out = Vec::new();
            write_error(&reply, &mut out);
            let body: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(reply.status(), status);
            assert_eq!(
                body,
                serde_json::json!({"type":"error","error":{"type": error_type,"message":"m \"q\""}})
            );
        }
    }

    #[test]
    fn an_adapters_own_refusals() {
        // What a proxy answers itself on a Messages route, before any agent.
        let cases = [
            (ErrorKind::Authentication, 401, "authentication_error"),
            (ErrorKind::PermissionDenied, 403, "permission_error"),
            (ErrorKind::NotFound, 404, "not_found_error"),
            (ErrorKind::MethodNotAllowed, 405, "invalid_request_error"),
            (ErrorKind::RequestTooLarge, 413, "request_too_large"),
            (
                ErrorKind::UnsupportedMediaType,
                415,
                "invalid_request_error",
            ),
            (ErrorKind::RateLimited, 429, "rate_limit_error"),
            (ErrorKind::Unavailable, 503, "overloaded_error"),
        ];
        for (kind, status, error_type) in cases {
            let reply = ErrorReply::refusal(kind, "no");
            let mut out = Vec::new();
            write_error(&reply, &mut out);
            let body: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(
                (reply.status(), body["error"]["type"].as_str()),
                (status, Some(error_type))
            );
        }
    }

    fn message_of(reply: &ErrorReply) -> String {
        let mut out = Vec::new();
        write_error(reply, &mut out);
        let body: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        body["error"]["message"].as_str().unwrap().to_owned()
    }

    #[test]
    fn the_message_names_the_param() {
        let reply = ErrorReply::from(&RequestError::missing(
            "Missing 'max_tokens'.",
            "max_tokens",
        ));
        assert_eq!(message_of(&reply), "Missing 'max_tokens'.", "already named");
        let reply = ErrorReply::from(&RequestError::invalid_type("messages[0]", "an object"));
        assert_eq!(
            message_of(&reply),
            "Invalid type for 'messages[0]': expected an object."
        );
        let reply = ErrorReply::from(&RequestError::invalid_value(
            "Invalid role.",
            "messages[3].role",
        ));
        assert_eq!(message_of(&reply), "messages[3].role: Invalid role.");
        // A path that would read as a transient failure is left out.
        let reply = ErrorReply::from(&RequestError::invalid_value(
            "Invalid role.",
            "messages[500].role",
        ));
        assert_eq!(message_of(&reply), "Invalid role.");
    }
}
