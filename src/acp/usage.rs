//! Turn usage from what each agent reports, only where it is exact.
//!
//! | Agent (recorded) | Reports | Mapped |
//! |---|---|---|
//! | claude-agent-acp 0.23.1 | prompt result `usage` {input, output, cachedRead, cachedWrite, total}; `usage_update.cost` (USD) | all, cost included |
//! | codex-acp 0.16.0 | `usage_update` {used, size}: context fill, not the turn's tokens | nothing |
//! | gemini-cli 0.61.0 | prompt result `_meta.quota.token_count` {input_tokens, output_tokens} (summed over its model calls, router included) | input (the whole prompt: the cache split is not reported) and output |
//!
//! A session serves one request, so a session's cumulative cost is the turn's cost.

use serde::Deserialize;

use crate::event::Usage;

/// The fields of a `session/prompt` result agentwire reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptResult {
    #[serde(default)]
    pub(crate) stop_reason: String,
    #[serde(default)]
    usage: Option<AcpUsage>,
    #[serde(default, rename = "_meta")]
    meta: Option<Meta>,
}

/// ACP's (unstable) `PromptResponse.usage`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AcpUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_read_tokens: u64,
    #[serde(default)]
    cached_write_tokens: u64,
    #[serde(default)]
    thought_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Meta {
    #[serde(default)]
    quota: Option<Quota>,
}

#[derive(Debug, Deserialize)]
struct Quota {
    token_count: Option<TokenCount>,
}

#[derive(Debug, Deserialize)]
struct TokenCount {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

impl PromptResult {
    /// The turn's usage, with `cost` (from `usage_update`) when tokens were reported too:
    /// a cost alone would need invented token counts.
    pub(crate) fn usage(&self, cost: Option<f64>) -> Option<Usage> {
        if let Some(usage) = &self.usage {
            return Some(Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cache_read_tokens: usage.cached_read_tokens,
                cache_write_tokens: usage.cached_write_tokens,
                reasoning_tokens: usage.thought_tokens,
                cost,
            });
        }
        let count = self.meta.as_ref()?.quota.as_ref()?.token_count.as_ref()?;
        Some(Usage {
            input_tokens: count.input_tokens,
            output_tokens: count.output_tokens,
            cost,
            ..Usage::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(result: &str, cost: Option<f64>) -> Option<Usage> {
        serde_json::from_str::<PromptResult>(result)
            .unwrap()
            .usage(cost)
    }

    #[test]
    fn each_agents_report_maps_and_none_is_invented() {
        let claude = usage(
            r#"{"stopReason":"end_turn","usage":{"inputTokens":240,"outputTokens":84,"cachedReadTokens":6000,"cachedWriteTokens":20,"totalTokens":6344}}"#,
            Some(0.5),
        )
        .unwrap();
        assert_eq!(claude.total_tokens(), 6344);
        assert_eq!(claude.cost, Some(0.5));
        let gemini = usage(
            r#"{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":240,"output_tokens":20}}}}"#,
            None,
        )
        .unwrap();
        assert_eq!((gemini.prompt_tokens(), gemini.output_tokens), (240, 20));
        assert_eq!(usage(r#"{"stopReason":"end_turn"}"#, Some(1.0)), None);
    }
}
