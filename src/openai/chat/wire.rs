//! The JSON fragments Chat Completions chunks and bodies share: usage and finish reasons.

use crate::api::json::write_u64;
use crate::event::{FinishReason, Usage};

/// Appends an OpenAI `usage` object: `prompt_tokens` counts fresh, cache-read and
/// cache-written input; `prompt_tokens_details` has the cache reads as `cached_tokens` and
/// the cache writes as `cache_write_tokens` (the name OpenRouter and LiteLLM use, which
/// cost trackers read); reasoning tokens only when the agent reported them; `cost` only
/// when the agent reported one. Clients keep fields they do not know.
pub(crate) fn write_usage(out: &mut Vec<u8>, usage: &Usage) {
    out.extend_from_slice(b"{\"prompt_tokens\":");
    write_u64(out, usage.prompt_tokens());
    out.extend_from_slice(b",\"completion_tokens\":");
    write_u64(out, usage.output_tokens);
    out.extend_from_slice(b",\"total_tokens\":");
    write_u64(out, usage.total_tokens());
    out.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
    write_u64(out, usage.cache_read_tokens);
    out.extend_from_slice(b",\"cache_write_tokens\":");
    write_u64(out, usage.cache_write_tokens);
    out.push(b'}');
    if let Some(cost) = usage.cost.filter(|c| c.is_finite()) {
        out.extend_from_slice(b",\"cost\":");
        // serde_json writes the shortest text that reads back as the same f64.
        serde_json::to_writer(&mut *out, &cost).expect("a finite f64 serializes into a Vec");
    }
    if let Some(reasoning) = usage.reasoning_tokens {
        out.extend_from_slice(b",\"completion_tokens_details\":{\"reasoning_tokens\":");
        write_u64(out, reasoning);
        out.push(b'}');
    }
    out.push(b'}');
}

/// The wire name of a finish reason.
pub(crate) fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_mapping() {
        let usage = Usage {
            input_tokens: 6,
            output_tokens: 258,
            cache_read_tokens: 19705,
            cache_write_tokens: 19965,
            reasoning_tokens: None,
            cost: None,
        };
        let mut out = Vec::new();
        write_usage(&mut out, &usage);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"prompt_tokens": 39676, "completion_tokens": 258, "total_tokens": 39934,
                               "prompt_tokens_details": {"cached_tokens": 19705, "cache_write_tokens": 19965}})
        );
        let mut out = Vec::new();
        write_usage(
            &mut out,
            &Usage {
                reasoning_tokens: Some(7),
                output_tokens: 9,
                ..Usage::default()
            },
        );
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["completion_tokens_details"]["reasoning_tokens"], 7);
        assert_eq!(value["total_tokens"], 9);
        assert!(value.get("cost").is_none(), "a cost is never invented");
        let mut out = Vec::new();
        write_usage(
            &mut out,
            &Usage {
                cost: Some(0.0123),
                ..Usage::default()
            },
        );
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["cost"], 0.0123);
        assert!(
            std::str::from_utf8(&out)
                .unwrap()
                .contains("\"cost\":0.0123}")
        );
    }
}
