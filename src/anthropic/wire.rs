//! The JSON fragments a Messages stream and a `message` body share: the message's head,
//! usage, stop reasons and content blocks' openings.

use super::options::ResponseMeta;
use crate::api::json::{write_str, write_u64};
use crate::event::{FinishReason, Usage};

/// Appends `{"id":…,"type":"message","role":"assistant","model":…,"content":[` — the
/// caller writes the content and the rest.
pub(super) fn write_message_head(out: &mut Vec<u8>, meta: &ResponseMeta) {
    out.extend_from_slice(b"{\"id\":");
    write_str(out, &meta.id);
    out.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    write_str(out, &meta.model);
    out.extend_from_slice(b",\"content\":[");
}

/// Appends a usage object. Anthropic's `input_tokens` is the *uncached* input, with cache
/// reads and writes apart — cursor-agent's own convention, so the numbers go across as
/// reported. Without a report, only the fields the clients require are sent, as zeros:
/// `output_tokens` in a stream's `message_delta` (anthropic-python fails on a
/// `message_delta` without usage), `input_tokens` and `output_tokens` in a body.
pub(super) fn write_usage(out: &mut Vec<u8>, usage: Option<&Usage>, in_body: bool) {
    let Some(usage) = usage else {
        out.extend_from_slice(if in_body {
            b"{\"input_tokens\":0,\"output_tokens\":0}"
        } else {
            b"{\"output_tokens\":0}"
        });
        return;
    };
    out.extend_from_slice(b"{\"input_tokens\":");
    write_u64(out, usage.input_tokens);
    out.extend_from_slice(b",\"cache_creation_input_tokens\":");
    write_u64(out, usage.cache_write_tokens);
    out.extend_from_slice(b",\"cache_read_input_tokens\":");
    write_u64(out, usage.cache_read_tokens);
    out.extend_from_slice(b",\"output_tokens\":");
    write_u64(out, usage.output_tokens);
    out.push(b'}');
}

/// The `stop_reason` of an answer that ended for `reason`: `tool_use` exactly when
/// `tool_use` blocks were sent (a client handed calls under `end_turn` does not run
/// them, and one told `tool_use` without calls waits for them).
pub(super) fn stop_reason(reason: FinishReason, tool_calls: bool) -> &'static str {
    match (reason, tool_calls) {
        (_, true) => "tool_use",
        (FinishReason::Length, false) => "max_tokens",
        (FinishReason::ContentFilter, false) => "refusal",
        _ => "end_turn",
    }
}

/// Appends the opening of a `tool_use` block: `{"type":"tool_use","id":…,"name":…,"input":`.
pub(super) fn write_tool_use_head(out: &mut Vec<u8>, id: &str, name: &str) {
    out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
    write_str(out, id);
    out.extend_from_slice(b",\"name\":");
    write_str(out, name);
    out.extend_from_slice(b",\"input\":");
}

/// A call's input as JSON text: its arguments, or `{}` when it has none.
pub(super) fn input_json(arguments: &str) -> &str {
    if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_json(usage: Option<&Usage>, in_body: bool) -> serde_json::Value {
        let mut out = Vec::new();
        write_usage(&mut out, usage, in_body);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn usage_goes_across_as_reported() {
        // A real result line's numbers (cursor-agent: inputTokens 6, outputTokens 258,
        // cacheReadTokens 19705, cacheWriteTokens 19965).
        let usage = Usage {
            input_tokens: 6,
            output_tokens: 258,
            cache_read_tokens: 19705,
            cache_write_tokens: 19965,
            reasoning_tokens: Some(3),
            cost: Some(0.5),
        };
        let expected = serde_json::json!({"input_tokens": 6, "cache_creation_input_tokens": 19965,
            "cache_read_input_tokens": 19705, "output_tokens": 258});
        assert_eq!(usage_json(Some(&usage), false), expected);
        assert_eq!(usage_json(Some(&usage), true), expected);
        assert_eq!(
            usage_json(None, false),
            serde_json::json!({"output_tokens": 0})
        );
        assert_eq!(
            usage_json(None, true),
            serde_json::json!({"input_tokens": 0, "output_tokens": 0})
        );
    }

    #[test]
    fn stop_reasons() {
        let cases = [
            (FinishReason::Stop, false, "end_turn"),
            (FinishReason::ToolCalls, false, "end_turn"),
            (FinishReason::Length, false, "max_tokens"),
            (FinishReason::ContentFilter, false, "refusal"),
            (FinishReason::Stop, true, "tool_use"),
            (FinishReason::ToolCalls, true, "tool_use"),
            (FinishReason::Length, true, "tool_use"),
        ];
        for (reason, calls, expected) in cases {
            assert_eq!(stop_reason(reason, calls), expected, "{reason:?} {calls}");
        }
        assert_eq!(input_json(" "), "{}");
        assert_eq!(input_json(r#"{"a":1}"#), r#"{"a":1}"#);
    }
}
