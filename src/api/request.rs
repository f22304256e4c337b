//! The neutral request: what every dialect's parser returns, or the typed error it returns
//! instead.

use thiserror::Error;

use super::retry::invites_retry;
use crate::conversation::Conversation;

/// Limits applied while parsing a request body, whatever its dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest body accepted (default 32 MiB).
    pub max_body_bytes: usize,
    /// Most messages accepted (default 10,000).
    pub max_messages: usize,
    /// Most tools accepted (default 512).
    pub max_tools: usize,
    /// Reject a request holding an image, audio clip or file (400
    /// `unsupported_content`) instead of passing it on as a text placeholder naming its
    /// kind, media type and size (default `false`). The agent reads text only; a
    /// placeholder keeps a conversation usable once an attachment is in its history,
    /// where a rejection would repeat on every later request.
    pub reject_attachments: bool,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_body_bytes: 32 * 1024 * 1024,
            max_messages: 10_000,
            max_tools: 512,
            reject_attachments: false,
        }
    }
}

/// A validated request, in no dialect's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The model for `--model`: `cursorModel` when non-empty, else `model` without a
    /// provider prefix (`cursor/gpt-5` → `gpt-5`), else `auto`. Letters, digits, `.`, `_`,
    /// `-`, `:` and Cursor's bracket parameters (`name[key=value,…]`), starting with a
    /// letter or digit, so that it cannot be read as a flag.
    pub model: String,
    /// The model name echoed in responses: the request's `model` as sent (trimmed), else
    /// [`model`](Self::model). Validated: at most 256 bytes, no control characters.
    pub response_model: String,
    /// Whether the response is a stream.
    pub stream: bool,
    /// The conversation, the client's tools and what the next reply may do.
    pub conversation: Conversation,
    /// What the client asked of the model's reasoning.
    pub reasoning: Reasoning,
    /// Whether a stream reports usage: asked for explicitly in some dialects (Chat
    /// Completions' `stream_options.include_usage`), always in others.
    pub include_usage: bool,
    /// Known fields present in the request that the agent cannot honour, by their names in
    /// the request's dialect.
    pub ignored: Vec<&'static str>,
    /// What the request says about the conversation it belongs to.
    pub continuation: Continuation,
}

/// What a request body says about the conversation it belongs to, besides its content:
/// what lets a later request be matched to the agent session that answered an earlier
/// one (see [`registry`](crate::registry)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Continuation {
    /// A key the client sends with every request of one conversation: the OpenAI APIs'
    /// `prompt_cache_key` (Codex sets it to its conversation id), or the session named in
    /// Anthropic's `metadata.user_id` (Claude Code's session id).
    pub conversation_key: Option<String>,
    /// The Responses API's `previous_response_id`: the request carries only what follows
    /// that response.
    pub previous_response_id: Option<String>,
}

/// What the client asked of the model's reasoning ("thinking"). The agent has no switch
/// for any of it; dialects use it to decide whether and how reasoning is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reasoning {
    /// Whether the client wants the model to reason.
    pub thinking: Thinking,
    /// How hard, when the client said.
    pub effort: Option<Effort>,
    /// A token budget for reasoning, when the client gave one.
    pub budget_tokens: Option<u64>,
    /// How the client wants reasoning shown, when it said.
    pub display: Option<ReasoningDisplay>,
}

/// Whether the client wants the model to reason.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thinking {
    /// The request does not say.
    #[default]
    Unspecified,
    /// No reasoning.
    Off,
    /// Reasoning on.
    On,
    /// Reasoning as the model sees fit.
    Adaptive,
}

/// How hard the model should reason.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effort {
    /// None at all.
    None,
    /// The least.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Higher.
    XHigh,
    /// The most.
    Max,
}

/// How the client wants reasoning shown.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningDisplay {
    /// Shown (as a summary, where the dialect distinguishes).
    Summarized,
    /// Not shown.
    Omitted,
}

/// What was wrong with a request body: the kind of problem, the parameter it is in, and a
/// message for the client. No message invites a retry (see [`RequestError::new`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct RequestError {
    /// The kind of problem.
    pub problem: RequestProblem,
    /// A human message, safe to show and free of words that make clients retry.
    pub message: String,
    /// The offending parameter, as a path in the dialect's terms (`messages[2].content`),
    /// when one is at fault.
    pub param: Option<String>,
}

/// The kinds of [`RequestError`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestProblem {
    /// The body is over [`RequestLimits::max_body_bytes`] (413).
    BodyTooLarge,
    /// The body is not JSON.
    InvalidJson,
    /// A value has the wrong type.
    InvalidType,
    /// A value has the right type but is not acceptable.
    InvalidValue,
    /// A required parameter is absent.
    MissingParameter,
    /// Content the agent cannot take (an attachment under
    /// [`RequestLimits::reject_attachments`]).
    UnsupportedContent,
}

impl RequestProblem {
    /// A stable machine code for the problem (`invalid_value`, …).
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            RequestProblem::BodyTooLarge => "body_too_large",
            RequestProblem::InvalidJson => "invalid_json",
            RequestProblem::InvalidType => "invalid_type",
            RequestProblem::InvalidValue => "invalid_value",
            RequestProblem::MissingParameter => "missing_required_parameter",
            RequestProblem::UnsupportedContent => "unsupported_content",
        }
    }
}

/// The message used instead of one that would invite a retry.
const NEUTRAL_MESSAGE: &str = "The request is invalid; 'param' and 'code' name the problem.";

impl RequestError {
    /// An error of `problem` about `param`. A message that would make a client retry (it
    /// quotes a status number or a word of transient trouble: see
    /// [`invites_retry`](crate::api::invites_retry)) is replaced by a neutral one; the
    /// `param` and the problem's code still say what is wrong.
    pub fn new(problem: RequestProblem, message: impl Into<String>, param: Option<String>) -> Self {
        let message = message.into();
        let message = if invites_retry(&message) {
            NEUTRAL_MESSAGE.to_owned()
        } else {
            message
        };
        RequestError {
            problem,
            message,
            param,
        }
    }

    /// [`RequestProblem::InvalidValue`] at `param`.
    pub fn invalid_value(message: impl Into<String>, param: impl Into<String>) -> Self {
        RequestError::new(RequestProblem::InvalidValue, message, Some(param.into()))
    }

    /// [`RequestProblem::MissingParameter`] at `param`.
    pub fn missing(message: impl Into<String>, param: impl Into<String>) -> Self {
        RequestError::new(
            RequestProblem::MissingParameter,
            message,
            Some(param.into()),
        )
    }

    /// [`RequestProblem::InvalidType`] at `param`: "Invalid type for '`param`': expected
    /// `expected`."
    pub fn invalid_type(param: &str, expected: &str) -> Self {
        RequestError::new(
            RequestProblem::InvalidType,
            format!("Invalid type for '{param}': expected {expected}."),
            Some(param.to_owned()),
        )
    }

    /// The HTTP status: 413 for an over-limit body, 400 for everything else.
    #[must_use]
    pub fn status(&self) -> u16 {
        match self.problem {
            RequestProblem::BodyTooLarge => 413,
            _ => 400,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_that_invite_retries_are_replaced() {
        let error = RequestError::invalid_value("Invalid role 'timeout'.", "messages[0].role");
        assert_eq!(error.message, NEUTRAL_MESSAGE);
        assert_eq!(error.param.as_deref(), Some("messages[0].role"));
        assert!(!invites_retry(NEUTRAL_MESSAGE));
        let error = RequestError::invalid_type("stream", "a boolean");
        assert_eq!(
            error.message,
            "Invalid type for 'stream': expected a boolean."
        );
        assert_eq!(
            (error.status(), error.problem.code()),
            (400, "invalid_type")
        );
    }

    #[test]
    fn statuses() {
        let too_large = RequestError::new(RequestProblem::BodyTooLarge, "big", None);
        assert_eq!(too_large.status(), 413);
        assert_eq!(
            RequestError::missing("m", "model").problem.code(),
            "missing_required_parameter"
        );
    }
}
