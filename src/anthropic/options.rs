//! What every event of one Messages response shares: its identity and output options.

use crate::api::json::seeded_hex;
use crate::api::{Reasoning, ReasoningDisplay, Thinking};

/// Identity fields of one response (`id`, `model`). The caller supplies them: the core
/// draws no random numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseMeta {
    /// `msg_…`.
    pub id: String,
    /// The model name echoed to the client: the request's `model` as sent.
    pub model: String,
}

impl ResponseMeta {
    /// Meta with an id derived from `id_seed` (any number unique per request):
    /// `msg_` and 24 hex digits.
    pub fn new(id_seed: u64, model: impl Into<String>) -> Self {
        ResponseMeta {
            id: format!("msg_{}", seeded_hex(id_seed)),
            model: model.into(),
        }
    }
}

/// The `request-id` an adapter sends with every Messages response (`req_` and 24 hex
/// digits, from the same seed as the message id): Anthropic's SDKs read it into their
/// errors' `request_id`.
#[must_use]
pub fn request_id(id_seed: u64) -> String {
    format!("req_{}", seeded_hex(id_seed))
}

/// How a response is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputOptions {
    /// Whether the model's reasoning is sent as `thinking` blocks: only when the request
    /// asked for thinking and did not ask for it to be omitted ([`shows_thinking`]).
    pub thinking: bool,
    /// Whether the agent's own tool use and reconnects are shown as short notes in those
    /// `thinking` blocks (only when `thinking` is on: never as text, which is the answer,
    /// nor as `tool_use`, which the client would run).
    pub activity_notes: bool,
}

/// Whether a request's [`Reasoning`] asks for reasoning to be shown: thinking `enabled`
/// or `adaptive`, and no `display: "omitted"`. Claude Code 2.1.330 always sends
/// `display: "omitted"`, so it is never sent thinking blocks — which keeps its sessions
/// free of unsigned thinking that the real API would refuse if the session moved there.
#[must_use]
pub fn shows_thinking(reasoning: &Reasoning) -> bool {
    matches!(reasoning.thinking, Thinking::On | Thinking::Adaptive)
        && reasoning.display != Some(ReasoningDisplay::Omitted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_thinking() {
        let meta = ResponseMeta::new(1, "m");
        assert!(meta.id.starts_with("msg_") && meta.id.len() == 4 + 24);
        assert_eq!(request_id(1)[4..], meta.id[4..]);
        let shown = |thinking, display| {
            shows_thinking(&Reasoning {
                thinking,
                display,
                ..Reasoning::default()
            })
        };
        assert!(shown(Thinking::On, None));
        assert!(shown(
            Thinking::Adaptive,
            Some(ReasoningDisplay::Summarized)
        ));
        assert!(!shown(Thinking::Adaptive, Some(ReasoningDisplay::Omitted)));
        assert!(!shown(Thinking::On, Some(ReasoningDisplay::Omitted)));
        assert!(!shown(Thinking::Off, None));
        assert!(!shown(Thinking::Unspecified, None));
    }
}
