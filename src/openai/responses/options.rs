//! What every event of one Responses answer shares: the response's identity, what it
//! echoes of the request, and how it is written.

use crate::api::json::seeded_hex;
use crate::api::{ReasoningDisplay, Request, Thinking};
use crate::conversation::ToolChoice;

/// The identity of one response and what its `response` object echoes of the request.
/// The caller supplies the seed and the time: the core reads no clock and draws no random
/// numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseMeta {
    /// `resp_…`.
    pub id: String,
    /// Unix seconds.
    pub created_at: u64,
    /// The model name echoed to the client.
    pub model: String,
    /// The request's tool choice, echoed.
    pub tool_choice: ToolChoice,
    /// The request's `parallel_tool_calls`, echoed.
    pub parallel_tool_calls: bool,
    /// The tools whose calls carry raw text (`custom_tool_call` items) rather than JSON
    /// arguments (`function_call` items).
    pub freeform_tools: Vec<String>,
}

impl ResponseMeta {
    /// Meta for the response to `request`, with an id derived from `id_seed` (any number
    /// unique per request): `resp_` and 24 hex digits.
    #[must_use]
    pub fn new(id_seed: u64, created_at: u64, request: &Request) -> Self {
        let conversation = &request.conversation;
        ResponseMeta {
            id: format!("resp_{}", seeded_hex(id_seed)),
            created_at,
            model: request.response_model.clone(),
            tool_choice: conversation.tool_choice.clone(),
            parallel_tool_calls: conversation.parallel_tool_calls,
            freeform_tools: conversation
                .tools
                .iter()
                .filter(|tool| tool.is_freeform())
                .map(|tool| tool.name.clone())
                .collect(),
        }
    }
}

/// How a response is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputOptions {
    /// Whether the agent's reasoning is sent, as `reasoning` items with a summary text.
    pub reasoning_summary: bool,
    /// Whether the agent's own tool use and reconnects are shown as short notes in the
    /// reasoning summary (only when reasoning is sent). Never as tool calls.
    pub activity_notes: bool,
}

impl OutputOptions {
    /// The options for `request`: reasoning is sent when the request asks for a summary
    /// (`reasoning.summary`, which Codex always sends) and does not turn reasoning off,
    /// as the Responses API itself returns reasoning summaries only when asked;
    /// `activity_notes` is the bridge's setting, as for Chat Completions.
    #[must_use]
    pub fn new(request: &Request, activity_notes: bool) -> Self {
        let reasoning = &request.reasoning;
        OutputOptions {
            reasoning_summary: reasoning.display == Some(ReasoningDisplay::Summarized)
                && reasoning.thinking != Thinking::Off,
            activity_notes,
        }
    }
}
