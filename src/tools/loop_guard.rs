//! Refusing to hand the client the same call again and again.
//!
//! Agents loop: the same read of a missing file, the same failing command. The guard is
//! rebuilt for every request from its history (the assistant tool calls and their
//! `role: "tool"` results), so it needs no state between requests. A call is identified by
//! its tool name and its arguments in canonical form (JSON with object keys sorted at every
//! level and no white space; arguments that are not JSON count as their trimmed text).
//!
//! # Failed results
//!
//! A tool result counts as a failure when (all matching case-insensitive):
//!
//! - its first non-blank line (its first 300 bytes) contains one of [`FAILURE_WORDS`] as
//!   whole words: `error`, `errors`, `failed`, `failure`, `fatal`, `exception`,
//!   `traceback`, `not found`, `no such file`, `permission denied`, `access denied`,
//!   `timed out`, `enoent`, `eacces`. Only the first line, because a successful read of a
//!   source file is full of these words, while tools report their own failure up front
//!   (`Error: File not found: …`);
//! - or its first or last 2 KiB state a non-zero exit status: `exit code 2`,
//!   `exit code: 1`, `exit status 127`, `exited with code 1`, `"exit_code": 1`,
//!   `exitCode=1`.
//!
//! This is a heuristic; a wrong "failure" only lowers the limit for that exact call from
//! `max_repeats` to `max_failed_repeats`.

use std::collections::HashMap;

use serde_json::Value;

use crate::conversation::{Message, Role};

/// Repeat limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopGuardConfig {
    /// A call whose earlier results were failures is not made again once it failed this
    /// many times (default 2).
    pub max_failed_repeats: u32,
    /// No call is made again once it was made this many times, whatever its results
    /// (default 6).
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

/// Words that mark a tool result as a failure when its first line contains them.
pub const FAILURE_WORDS: &[&str] = &[
    "error",
    "errors",
    "failed",
    "failure",
    "fatal",
    "exception",
    "traceback",
    "not found",
    "no such file",
    "permission denied",
    "access denied",
    "timed out",
    "enoent",
    "eacces",
];

/// Phrases followed by an exit status (after `_` is read as a space).
const EXIT_PHRASES: &[&str] = &[
    "exit code",
    "exitcode",
    "exit status",
    "exited with code",
    "exited with status",
];

/// How much of the first line is looked at.
const FIRST_LINE_BYTES: usize = 300;
/// How much of each end of a result is searched for an exit status.
const EXIT_WINDOW_BYTES: usize = 2048;

/// Counts of earlier identical calls, from the request history.
#[derive(Debug, Clone, Default)]
pub struct LoopGuard {
    config: LoopGuardConfig,
    /// Canonical call → (times made, times failed).
    seen: HashMap<String, (u32, u32)>,
}

impl LoopGuard {
    /// Builds the guard from the conversation: every assistant tool call is counted, and
    /// counted as failed when the `role: "tool"` result with its id looks like a failure.
    #[must_use]
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
            let failed = results
                .get(call.id.as_str())
                .is_some_and(|result| is_failure(result));
            let entry = seen
                .entry(canonical(&call.name, &call.arguments))
                .or_default();
            entry.0 = entry.0.saturating_add(1);
            entry.1 = entry.1.saturating_add(u32::from(failed));
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

/// Whether a tool result looks like a failure (see the module docs).
#[must_use]
pub fn is_failure(result: &str) -> bool {
    let first_line = result
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    let first_line = prefix(first_line, FIRST_LINE_BYTES).to_ascii_lowercase();
    if FAILURE_WORDS
        .iter()
        .any(|word| contains_word(&first_line, word))
    {
        return true;
    }
    let head = prefix(result, EXIT_WINDOW_BYTES);
    let tail = suffix(result, EXIT_WINDOW_BYTES);
    non_zero_exit(head) || non_zero_exit(tail)
}

/// Whether `text` states a non-zero exit status.
fn non_zero_exit(text: &str) -> bool {
    let text = text.to_ascii_lowercase().replace('_', " ");
    EXIT_PHRASES.iter().any(|phrase| {
        text.match_indices(phrase).any(|(at, _)| {
            let boundary_before = text[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_ascii_alphanumeric());
            let rest =
                text[at + phrase.len()..].trim_start_matches([' ', ':', '=', '"', '\'', '\t']);
            let rest = rest.strip_prefix('-').unwrap_or(rest);
            let digits: &str = &rest[..rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len())];
            boundary_before && !digits.is_empty() && digits.bytes().any(|d| d != b'0')
        })
    })
}

/// Whether `word` occurs in `text` as a word: not inside a longer word, a path or a file
/// name (`errors.rs`, `/src/error/`, `on_error`), but followed by punctuation or a
/// sentence's full stop.
fn contains_word(text: &str, word: &str) -> bool {
    let joins = |c: char| c.is_alphanumeric() || matches!(c, '_' | '/' | '\\' | '-');
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let mut after = text[at + word.len()..].chars();
        let next = after.next();
        let file_name = next == Some('.') && after.next().is_some_and(char::is_alphanumeric);
        before.is_none_or(|c| !joins(c) && c != '.') && next.is_none_or(|c| !joins(c)) && !file_name
    })
}

/// At most `max` bytes from the start, cut at a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// At most `max` bytes from the end, cut at a character boundary.
fn suffix(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `name` + arguments in canonical form.
fn canonical(name: &str, arguments: &str) -> String {
    let mut out = String::with_capacity(name.len() + arguments.len() + 1);
    out.push_str(name);
    out.push('\u{0}');
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => write_canonical(&value, &mut out),
        Err(_) => out.push_str(arguments.trim()),
    }
    out
}

/// JSON with object keys sorted at every level, whatever order the map keeps.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::HistoryToolCall;

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
    fn failure_detection() {
        for failed in [
            "Error: File not found: /a/b",
            "\n\n  ENOENT: no such file or directory, open '/x'",
            "bash: foo: command not found",
            "Permission denied",
            "Traceback (most recent call last):",
            "build output\n...\nProcess exited with code 2",
            "<bash_metadata>\nexit_code: 127\n</bash_metadata>",
            r#"{"stdout":"","exitCode":1}"#,
            "Command timed out after 30000 ms",
        ] {
            assert!(is_failure(failed), "{failed:?}");
        }
        for fine in [
            "<path>/a/errors.rs</path>\n<content>\n1: fn error() { panic!(\"failed\") }\n</content>",
            "ok",
            "",
            "exit code 0",
            "exit code: 00",
            "terrorism",
            "src/on_error/mod.rs:1: x",
            "Found 3 matches",
        ] {
            assert!(!is_failure(fine), "{fine:?}");
        }
        assert!(!contains_word("terrors", "error"));
        assert!(!contains_word("an error-free run", "error"));
        assert!(contains_word("file not found.", "not found"));
        assert!(contains_word("[error] x", "error"));
        let long = format!("{}\nexit code 1", "x\n".repeat(10_000));
        assert!(is_failure(&long), "the end of a long result is searched");
        let middle = format!("{}exit code 1{}", "x".repeat(5000), "y".repeat(5000));
        assert!(!is_failure(&middle), "the middle of a long result is not");
    }

    #[test]
    fn canonical_arguments() {
        assert_eq!(
            canonical("read", r#"{"b":{"y":1,"x":[{"q":1,"p":2}]},"a":"é"}"#),
            "read\u{0}{\"a\":\"é\",\"b\":{\"x\":[{\"p\":2,\"q\":1}],\"y\":1}}"
        );
        assert_eq!(canonical("read", "  not json "), "read\u{0}not json");
        assert_ne!(canonical("a", "{}"), canonical("b", "{}"));
    }

    #[test]
    fn limits_come_from_the_configuration() {
        let history: Vec<Message> = (0..3)
            .flat_map(|i| turn(&i.to_string(), "{}", "Error: boom"))
            .collect();
        let lenient = LoopGuardConfig {
            max_failed_repeats: 4,
            max_repeats: 10,
        };
        assert!(
            LoopGuard::from_history(&history, &lenient)
                .check("read", "{}")
                .is_ok()
        );
        let strict = LoopGuardConfig {
            max_failed_repeats: 3,
            max_repeats: 10,
        };
        assert!(
            LoopGuard::from_history(&history, &strict)
                .check("read", "{}")
                .is_err()
        );
        assert!(
            LoopGuard::from_history(&[], &strict)
                .check("read", "{}")
                .is_ok()
        );
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
