//! The Anthropic error body: `{"type":"error","error":{"type","message"}}`, with the
//! `type` Anthropic's clients map to their exception classes.

use crate::api::json::write_str;
use crate::api::{ErrorKind, ErrorReply};

/// The Anthropic `error.type` of an error class.
fn error_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::MethodNotAllowed => "invalid_request_error",
        ErrorKind::Authentication => "authentication_error",
        ErrorKind::PermissionDenied => "permission_error",
        ErrorKind::NotFound => "not_found_error",
        ErrorKind::RequestTooLarge => "request_too_large",
        ErrorKind::RateLimited => "rate_limit_error",
        ErrorKind::Timeout => "timeout_error",
        ErrorKind::Unavailable => "overloaded_error",
        ErrorKind::Internal | ErrorKind::NotImplemented | ErrorKind::AgentFailed => "api_error",
    }
}

/// Appends the Anthropic error body for `reply` (sent with `reply.status()`).
pub fn write_error(reply: &ErrorReply, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"type\":\"error\",\"error\":{\"type\":\"");
    out.extend_from_slice(error_type(reply.kind).as_bytes());
    out.extend_from_slice(b"\",\"message\":");
    write_str(out, &reply.message);
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Failure, FailureKind};

    #[test]
    fn body_shape_and_types() {
        let cases = [
            (FailureKind::NotAuthenticated, 401, "authentication_error"),
            (FailureKind::ModelUnavailable, 404, "not_found_error"),
            (FailureKind::RateLimited, 429, "rate_limit_error"),
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
}
