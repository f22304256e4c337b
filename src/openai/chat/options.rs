//! What every chunk of one Chat Completions response shares: its identity and output
//! options.

use crate::api::json::seeded_hex;
use crate::names::named;

/// Identity fields repeated in every chunk of one response (`id`, `created`, `model`).
/// The caller supplies them: the core reads no clock and draws no random numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseMeta {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model name echoed to the client.
    pub model: String,
}

impl ResponseMeta {
    /// Meta with an id derived from `id_seed` (any number unique per request, e.g. a
    /// counter mixed with the start time): `chatcmpl-` and 24 hex digits.
    pub fn new(id_seed: u64, created: u64, model: impl Into<String>) -> Self {
        ResponseMeta {
            id: format!("chatcmpl-{}", seeded_hex(id_seed)),
            created,
            model: model.into(),
        }
    }
}

/// Where reasoning ("thinking") text goes in a chunk's `delta` or a message.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningField {
    /// `reasoning_content`: read by the AI SDK, LiteLLM, DeepSeek clients (default).
    #[default]
    ReasoningContent,
    /// `reasoning`: OpenRouter's and newer vLLM's name.
    Reasoning,
    /// Not sent.
    Omitted,
}

named!(ReasoningField, "reasoning field" {
    ReasoningContent => "reasoning_content",
    Reasoning => "reasoning",
    Omitted => "omitted",
});

impl ReasoningField {
    /// The JSON key, or `None` when omitted.
    pub fn key(self) -> Option<&'static str> {
        match self {
            ReasoningField::ReasoningContent => Some("reasoning_content"),
            ReasoningField::Reasoning => Some("reasoning"),
            ReasoningField::Omitted => None,
        }
    }
}

/// How a response is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputOptions {
    /// Where reasoning goes (default `reasoning_content`).
    pub reasoning: ReasoningField,
    /// Whether the agent's own tool use and reconnects are shown as short notes in the
    /// reasoning channel (default on). Never as `tool_calls`.
    pub activity_notes: bool,
    /// Whether the stream ends with a usage chunk: the request's
    /// `stream_options.include_usage`.
    pub include_usage: bool,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            reasoning: ReasoningField::default(),
            activity_notes: true,
            include_usage: false,
        }
    }
}
