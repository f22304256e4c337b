//! The OpenAI error body, which Chat Completions and Responses share, and the `type` each
//! [`ErrorKind`] is sent as.

use serde::Serialize;

use crate::api::{ErrorKind, ErrorReply};
use crate::event::Failure;

/// An OpenAI error: `{"error":{"message","type","param","code"}}`, the shape every client
/// parses (openai-python maps the status to its exception class and reads `code`/`param`;
/// the AI SDK requires `message`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// Human message.
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `rate_limit_error`, `server_error`…
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The offending request parameter, for request errors.
    pub param: Option<String>,
    /// A stable machine code.
    pub code: Option<&'static str>,
    /// The HTTP status this error is sent with.
    #[serde(skip)]
    pub status: u16,
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: &'a ApiError,
}

/// The OpenAI `type` of an error class.
fn error_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest
        | ErrorKind::PermissionDenied
        | ErrorKind::NotFound
        | ErrorKind::MethodNotAllowed
        | ErrorKind::RequestTooLarge
        | ErrorKind::UnsupportedMediaType => "invalid_request_error",
        ErrorKind::Authentication => "authentication_error",
        ErrorKind::RateLimited => "rate_limit_error",
        ErrorKind::Internal
        | ErrorKind::AgentFailed
        | ErrorKind::Unavailable
        | ErrorKind::Timeout => "server_error",
    }
}

impl From<&ErrorReply> for ApiError {
    fn from(reply: &ErrorReply) -> Self {
        ApiError {
            message: reply.message.clone(),
            kind: error_type(reply.kind),
            param: reply.param.clone(),
            code: Some(reply.code),
            status: reply.status(),
        }
    }
}

impl ApiError {
    /// The error for a failed answer, with the status of its class.
    pub fn from_failure(failure: &Failure) -> Self {
        ApiError::from(&ErrorReply::from_failure(failure))
    }

    /// Whether a client may usefully retry: the failure is transient, not something only a
    /// person can fix. Adapters send it as the `x-should-retry` header, which openai-python
    /// honours over the status.
    pub fn retryable(&self) -> bool {
        matches!(
            self.code,
            Some(
                "rate_limit_exceeded"
                    | "agent_unavailable"
                    | "agent_timeout"
                    | "agent_crashed"
                    | "agent_error"
                    | "agent_bad_output"
            )
        )
    }

    /// Appends the JSON body.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(&mut *out, &Envelope { error: self })
            .expect("an error serializes into a Vec");
    }

    /// The JSON body as bytes.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::FailureKind;

    #[test]
    fn statuses_and_shape() {
        let cases = [
            (FailureKind::NotAuthenticated, 401),
            (FailureKind::ModelUnavailable, 404),
            (FailureKind::RateLimited, 429),
            (FailureKind::Misconfigured, 500),
            (FailureKind::AgentCrashed, 502),
            (FailureKind::Unavailable, 503),
            (FailureKind::Timeout, 504),
        ];
        for (kind, status) in cases {
            let error = ApiError::from_failure(&Failure::new(kind, "m"));
            assert_eq!(error.status, status);
            let body: serde_json::Value = serde_json::from_slice(&error.to_json()).unwrap();
            assert_eq!(body["error"]["message"], "m");
            assert!(body["error"]["type"].is_string() && body["error"]["code"].is_string());
            assert!(body["error"]["param"].is_null());
        }
        let bad = ApiError::from(&ErrorReply::from(&crate::api::RequestError::invalid_value(
            "no", "messages",
        )));
        let body: serde_json::Value = serde_json::from_slice(&bad.to_json()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"error":{"message":"no","type":"invalid_request_error","param":"messages","code":"invalid_value"}})
        );
        assert!(!bad.retryable());
    }

    #[test]
    fn every_class_has_its_openai_type() {
        let cases = [
            (
                FailureKind::InvalidRequest,
                400,
                "invalid_request_error",
                "invalid_request",
            ),
            (
                FailureKind::NotAuthenticated,
                401,
                "authentication_error",
                "not_authenticated",
            ),
            (
                FailureKind::ModelUnavailable,
                404,
                "invalid_request_error",
                "model_not_found",
            ),
            (
                FailureKind::RateLimited,
                429,
                "rate_limit_error",
                "rate_limit_exceeded",
            ),
            (
                FailureKind::Misconfigured,
                500,
                "server_error",
                "agent_misconfigured",
            ),
            (FailureKind::AgentError, 502, "server_error", "agent_error"),
            (
                FailureKind::AgentCrashed,
                502,
                "server_error",
                "agent_crashed",
            ),
            (
                FailureKind::BadOutput,
                502,
                "server_error",
                "agent_bad_output",
            ),
            (
                FailureKind::Unavailable,
                503,
                "server_error",
                "agent_unavailable",
            ),
            (FailureKind::Timeout, 504, "server_error", "agent_timeout"),
        ];
        for (kind, status, kind_name, code) in cases {
            let error = ApiError::from_failure(&Failure::new(kind, "m"));
            assert_eq!(
                (error.status, error.kind, error.code),
                (status, kind_name, Some(code))
            );
            assert_eq!(
                error.retryable(),
                ErrorReply::from_failure(&Failure::new(kind, "m")).retryable(),
                "{kind:?}: the code-based and class-based advice agree"
            );
        }
        let too_large = ApiError::from(&ErrorReply::from(&crate::api::RequestError::new(
            crate::api::RequestProblem::BodyTooLarge,
            "big",
            None,
        )));
        assert_eq!(
            (too_large.status, too_large.kind, too_large.code),
            (413, "invalid_request_error", Some("body_too_large"))
        );
    }
}
