//! The error reply every dialect renders in its own body: one for a rejected request, a
//! failed answer, or an adapter's own refusal (unknown route, busy, not authenticated).

use super::request::RequestError;
use crate::event::{Failure, FailureKind};
use crate::names::named;

/// An error response in no dialect's terms: its class (which decides the HTTP status and
/// whether a client may retry), a message, the offending parameter, and a stable machine
/// code. Each dialect renders it in its own error body; adapters send
/// [`retryable`](Self::retryable) as the `x-should-retry` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    /// The class.
    pub kind: ErrorKind,
    /// A human message; says what to do when something can be done.
    pub message: String,
    /// The offending request parameter, for request errors.
    pub param: Option<String>,
    /// A stable machine code (`invalid_value`, `model_not_found`, `agent_timeout`, …).
    pub code: &'static str,
}

/// Classes of error reply, from the client's point of view. Each has one HTTP status.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// 400: the request is invalid.
    InvalidRequest,
    /// 401: not authenticated (the agent is not logged in, or the client's key is wrong).
    Authentication,
    /// 403: not allowed.
    PermissionDenied,
    /// 404: the model (or the route) does not exist.
    NotFound,
    /// 405: the route does not take this method.
    MethodNotAllowed,
    /// 413: the request body is too large.
    RequestTooLarge,
    /// 415: the request body is not of a media type the route takes (not declared JSON).
    UnsupportedMediaType,
    /// 429: a rate limit was hit, or every agent slot is taken.
    RateLimited,
    /// 500: the agent or the bridge is misconfigured; retrying will not help until someone
    /// fixes it.
    Internal,
    /// 502: the agent failed, crashed, or produced output that could not be understood.
    AgentFailed,
    /// 503: the agent's service is unreachable, or the server is shutting down.
    Unavailable,
    /// 504: the agent was silent for too long, or ran past the time limit.
    Timeout,
    /// 429, not retryable: the account's usage limit or quota is used up.
    UsageLimit,
}

named!(ErrorKind, "error kind" {
    InvalidRequest => "invalid_request",
    Authentication => "authentication",
    PermissionDenied => "permission_denied",
    NotFound => "not_found",
    MethodNotAllowed => "method_not_allowed",
    RequestTooLarge => "request_too_large",
    UnsupportedMediaType => "unsupported_media_type",
    RateLimited => "rate_limited",
    Internal => "internal",
    AgentFailed => "agent_failed",
    Unavailable => "unavailable",
    Timeout => "timeout",
    UsageLimit => "usage_limit",
});

impl ErrorKind {
    /// The HTTP status.
    #[must_use]
    pub fn status(self) -> u16 {
        match self {
            ErrorKind::InvalidRequest => 400,
            ErrorKind::Authentication => 401,
            ErrorKind::PermissionDenied => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::MethodNotAllowed => 405,
            ErrorKind::RequestTooLarge => 413,
            ErrorKind::UnsupportedMediaType => 415,
            ErrorKind::RateLimited | ErrorKind::UsageLimit => 429,
            ErrorKind::Internal => 500,
            ErrorKind::AgentFailed => 502,
            ErrorKind::Unavailable => 503,
            ErrorKind::Timeout => 504,
        }
    }

    /// The class's own machine code, for a reply that has nothing more specific to say
    /// (an adapter's refusal built with [`ErrorReply::refusal`]).
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Authentication => "invalid_api_key",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::NotFound => "not_found",
            ErrorKind::MethodNotAllowed => "method_not_allowed",
            ErrorKind::RequestTooLarge => "request_too_large",
            ErrorKind::UnsupportedMediaType => "unsupported_media_type",
            ErrorKind::RateLimited => "rate_limit_exceeded",
            // OpenAI's code for it, which Codex explains to its user instead of retrying.
            ErrorKind::UsageLimit => "insufficient_quota",
            ErrorKind::Internal => "internal_error",
            ErrorKind::AgentFailed => "agent_error",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Timeout => "timeout",
        }
    }

    /// Whether a client may usefully retry: the trouble is transient, not something only a
    /// person can fix.
    #[must_use]
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimited
                | ErrorKind::AgentFailed
                | ErrorKind::Unavailable
                | ErrorKind::Timeout
        )
    }
}

impl ErrorReply {
    /// A reply of `kind` with `message` and `code`, about no parameter.
    pub fn new(kind: ErrorKind, message: impl Into<String>, code: &'static str) -> Self {
        ErrorReply {
            kind,
            message: message.into(),
            param: None,
            code,
        }
    }

    /// An adapter's own refusal of `kind` (not authenticated, unknown route, busy, …) with
    /// the class's own [`code`](ErrorKind::code): what the bindings build for their
    /// callers, who name a class and a message.
    pub fn refusal(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorReply::new(kind, message, kind.code())
    }

    /// The reply for a failed answer: its class decides the status.
    #[must_use]
    pub fn from_failure(failure: &Failure) -> Self {
        let (kind, code) = match failure.kind {
            FailureKind::InvalidRequest => (ErrorKind::InvalidRequest, "invalid_request"),
            FailureKind::NotAuthenticated => (ErrorKind::Authentication, "not_authenticated"),
            FailureKind::ModelUnavailable => (ErrorKind::NotFound, "model_not_found"),
            FailureKind::RateLimited => (ErrorKind::RateLimited, "rate_limit_exceeded"),
            FailureKind::UsageLimit => (ErrorKind::UsageLimit, "insufficient_quota"),
            FailureKind::Misconfigured => (ErrorKind::Internal, "agent_misconfigured"),
            FailureKind::Unavailable => (ErrorKind::Unavailable, "agent_unavailable"),
            FailureKind::Timeout => (ErrorKind::Timeout, "agent_timeout"),
            FailureKind::AgentError => (ErrorKind::AgentFailed, "agent_error"),
            FailureKind::AgentCrashed => (ErrorKind::AgentFailed, "agent_crashed"),
            FailureKind::BadOutput => (ErrorKind::AgentFailed, "agent_bad_output"),
        };
        ErrorReply::new(kind, failure.message.clone(), code)
    }

    /// The HTTP status.
    #[must_use]
    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    /// Whether a client may usefully retry (the `x-should-retry` header).
    #[must_use]
    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }
}

impl From<&RequestError> for ErrorReply {
    fn from(error: &RequestError) -> Self {
        use super::request::RequestProblem;
        let kind = match error.problem {
            RequestProblem::BodyTooLarge => ErrorKind::RequestTooLarge,
            _ => ErrorKind::InvalidRequest,
        };
        ErrorReply {
            kind,
            message: error.message.clone(),
            param: error.param.clone(),
            code: error.problem.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RequestProblem;

    #[test]
    fn failures_get_their_class_status_and_retry_advice() {
        let cases = [
            (FailureKind::InvalidRequest, 400, false),
            (FailureKind::NotAuthenticated, 401, false),
            (FailureKind::ModelUnavailable, 404, false),
            (FailureKind::RateLimited, 429, true),
            (FailureKind::UsageLimit, 429, false),
            (FailureKind::Misconfigured, 500, false),
            (FailureKind::AgentError, 502, true),
            (FailureKind::AgentCrashed, 502, true),
            (FailureKind::BadOutput, 502, true),
            (FailureKind::Unavailable, 503, true),
            (FailureKind::Timeout, 504, true),
        ];
        for (kind, status, retryable) in cases {
            let reply = ErrorReply::from_failure(&Failure::new(kind, "m"));
            assert_eq!(
                (reply.status(), reply.retryable()),
                (status, retryable),
                "{kind:?}"
            );
            assert_eq!(
                (reply.message.as_str(), reply.param.as_deref()),
                ("m", None)
            );
        }
    }

    #[test]
    fn refusals_carry_their_class_status_and_code() {
        let kinds = [
            (ErrorKind::InvalidRequest, 400),
            (ErrorKind::Authentication, 401),
            (ErrorKind::PermissionDenied, 403),
            (ErrorKind::NotFound, 404),
            (ErrorKind::MethodNotAllowed, 405),
            (ErrorKind::RequestTooLarge, 413),
            (ErrorKind::UnsupportedMediaType, 415),
            (ErrorKind::RateLimited, 429),
            (ErrorKind::Internal, 500),
            (ErrorKind::AgentFailed, 502),
            (ErrorKind::Unavailable, 503),
            (ErrorKind::Timeout, 504),
            (ErrorKind::UsageLimit, 429),
        ];
        let mut codes = std::collections::HashSet::new();
        for (kind, status) in kinds {
            let reply = ErrorReply::refusal(kind, "no");
            assert_eq!(
                (reply.status(), reply.code, reply.param.as_deref()),
                (status, kind.code(), None)
            );
            assert!(codes.insert(kind.code()), "{kind:?} shares its code");
            assert!(
                kind.code()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_')
            );
        }
    }

    #[test]
    fn request_errors_keep_their_param_and_code() {
        let error = RequestError::invalid_value("no", "messages");
        let reply = ErrorReply::from(&error);
        assert_eq!(
            (
                reply.status(),
                reply.param.as_deref(),
                reply.code,
                reply.retryable()
            ),
            (400, Some("messages"), "invalid_value", false)
        );
        let big = ErrorReply::from(&RequestError::new(
            RequestProblem::BodyTooLarge,
            "big",
            None,
        ));
        assert_eq!(
            (big.kind, big.status(), big.code),
            (ErrorKind::RequestTooLarge, 413, "body_too_large")
        );
    }
}
