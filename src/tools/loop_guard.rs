//! Refusing to hand the client the same call again and again.
//!
//! Agents loop: the same read of a missing file, the same failing command. The guard is
//! rebuilt for every request from its history (the assistant tool calls and their
//! `role: "tool"` results), so it needs no state between requests. A call is identified by
//! its tool name and its arguments in canonical form (JSON with sorted keys).

use std::collections::HashMap;

use serde_json::Value;

use crate::openai::request::{Message, Role};

/// Repeat limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopGuardConfig {
    /// A call whose earlier results were failures is not made again after this many
    /// (default 2).
    pub max_failed_repeats: u32,
    /// No call is made again after this many, whatever its results (default 6).
    pub max_repeats: u32,
}

impl Default for LoopGuardConfig {
    fn default() -> Self {
        LoopGuardConfig {
            max_failed_repeats: 2,
            max_repeats: 6,
        }
    }
}

/// Words that mark a tool result as a failure (matched case-insensitively).
const FAILURE_WORDS: &[&str] = &[
    "error",
    "failed",
    "failure",
    "not found",
    "no such file",
    "permission denied",
    "denied",
    "exception",
    "traceback",
    "exit code 1",
    "exit code: 1",
    "non-zero exit",
    "invalid",
];

/// Counts of earlier identical calls, from the request history.
#[derive(Debug, Clone, Default)]
pub struct LoopGuard {
    config: LoopGuardConfig,
    /// Canonical call → (times made, times failed).
    seen: HashMap<String, (u32, u32)>,
}

impl LoopGuard {
    /// Builds the guard from the conversation.
    pub fn from_history(messages: &[Message], config: &LoopGuardConfig) -> LoopGuard {
        let mut results: HashMap<&str, &str> = HashMap::new();
        for message in messages.iter().filter(|m| m.role == Role::Tool) {
            if let Some(id) = &message.tool_call_id {
                results.insert(id.as_str(), message.content.as_str());
            }
        }
        let mut seen: HashMap<String, (u32, u32)> = HashMap::new();
        for call in messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.tool_calls)
        {
            let failed = results.get(call.id.as_str()).is_some_and(|r| is_failure(r));
            let entry = seen
                .entry(canonical(&call.name, &call.arguments))
                .or_default();
            entry.0 += 1;
            entry.1 += u32::from(failed);
        }
        LoopGuard {
            config: *config,
            seen,
        }
    }

    /// Whether this call may be made again; the reason when not.
    pub fn check(&self, name: &str, arguments: &str) -> Result<(), String> {
        let Some(&(made, failed)) = self.seen.get(&canonical(name, arguments)) else {
            return Ok(());
        };
        if failed >= self.config.max_failed_repeats {
            return Err(format!(
                "the same `{name}` call already failed {failed} times with these arguments; it needs a different approach"
            ));
        }
        if made >= self.config.max_repeats {
            return Err(format!(
                "the same `{name}` call was already made {made} times with these arguments"
            ));
        }
        Ok(())
    }
}

fn is_failure(result: &str) -> bool {
    let lower = result.to_lowercase();
    FAILURE_WORDS.iter().any(|w| lower.contains(w))
}

/// `name` + arguments with sorted keys (`serde_json`'s map is ordered by key).
fn canonical(name: &str, arguments: &str) -> String {
    let args = serde_json::from_str::<Value>(arguments)
        .map_or_else(|_| arguments.trim().to_owned(), |v| v.to_string());
    format!("{name}\u{0}{args}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::request::HistoryToolCall;

    fn turn(id: &str, args: &str, result: &str) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: String::new(),
                tool_calls: vec![HistoryToolCall {
                    id: id.into(),
                    name: "read".into(),
                    arguments: args.into(),
                }],
                tool_call_id: None,
                name: None,
            },
            Message {
                role: Role::Tool,
                content: result.into(),
                tool_calls: vec![],
                tool_call_id: Some(id.into()),
                name: None,
            },
        ]
    }

    #[test]
    fn failing_repeats_are_refused() {
        let mut history = Vec::new();
        history.extend(turn("1", r#"{"a":1,"b":2}"#, "Error: ENOENT no such file"));
        let guard = LoopGuard::from_history(&history, &LoopGuardConfig::default());
        assert!(guard.check("read", r#"{"b":2,"a":1}"#).is_ok());
        history.extend(turn("2", r#"{"b":2, "a":1}"#, "File not found"));
        let guard = LoopGuard::from_history(&history, &LoopGuardConfig::default());
        let reason = guard.check("read", r#"{"a":1,"b":2}"#).unwrap_err();
        assert!(reason.contains("failed 2 times"), "{reason}");
        assert!(guard.check("read", r#"{"a":2}"#).is_ok());
        assert!(guard.check("bash", r#"{"a":1,"b":2}"#).is_ok());
    }

    #[test]
    fn successful_repeats_hit_the_higher_limit() {
        let history: Vec<Message> = (0..6)
            .flat_map(|i| turn(&i.to_string(), "{}", "ok"))
            .collect();
        let guard = LoopGuard::from_history(&history[..10], &LoopGuardConfig::default());
        assert!(guard.check("read", "{}").is_ok());
        let guard = LoopGuard::from_history(&history, &LoopGuardConfig::default());
        assert!(guard.check("read", "{}").is_err());
    }
}
