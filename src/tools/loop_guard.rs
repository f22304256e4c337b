//! Refusing to hand the client the same call again and again — and only then.
//!
//! Agents loop: the same read of a missing file, the same failing command with nothing
//! changed in between. Agents also work, and work repeats calls: a test is rerun after
//! every edit, `git status` is checked between writes, the user fixes something and asks
//! for the same command again. The guard stops the first and never the second:
//!
//! - **Only the current turn counts**: the calls after the last `user` message
//!   ([`Conversation::current_turn`]). A new user message always starts clean — after a
//!   refusal, the user asking again is enough.
//! - **Only consecutive identical calls count**: the same tool with the same arguments,
//!   with no other call in between. Any other call (an edit, another command) resets the
//!   count, because it may have changed what the repeated call will find.
//! - A call is refused when its last [`max_failed_repeats`](LoopGuardConfig::max_failed_repeats)
//!   identical calls in a row all failed (default: a third identical call after two
//!   failures), or when it was already made [`max_repeats`](LoopGuardConfig::max_repeats)
//!   times in a row (default: an eighth after seven).
//!
//! The guard is rebuilt for every request from its history (the assistant tool calls of
//! the current turn and their `role: "tool"` results), so it needs no state between
//! requests; within one response it also counts the calls it lets through
//! ([`LoopGuard::admit`]), so a batch of identical parallel calls is bounded too. A call
//! is identified by its tool name and its arguments in canonical form (JSON with object
//! keys sorted at every level and no white space; arguments that are not JSON count as
//! their trimmed text).
//!
//! # Failed results
//!
//! A tool result counts as a failure when the client marked it as one (Anthropic's
//! `is_error`), or when (all matching case-insensitive):
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
//! This is a heuristic; a wrong "failure" only lowers the limit for that exact call, made
//! again with nothing in between, from `max_repeats` to `max_failed_repeats`.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::conversation::{Conversation, Role};

/// Repeat limits. Both count identical calls (same tool, same arguments) made in a row in
/// the current turn, with no other call in between; `0` turns a limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopGuardConfig {
    /// A call is refused when its last `max_failed_repeats` identical calls in a row all
    /// failed (default 2: after two failures, a third is refused).
    ///
    /// Why two: one failure can be chance (a flaky test, a race, a service starting up),
    /// so one identical retry is allowed; when that fails too with nothing done in
    /// between, a third run would fail the same way — the model is stuck, not working.
    /// Anything done in between (an edit) resets the count, so fix-and-rerun never trips
    /// it.
    pub max_failed_repeats: u32,
    /// A call is refused when it was already made `max_repeats` times in a row, whatever
    /// its results (default 7: an eighth identical call is refused).
    ///
    /// Why seven: polling legitimately repeats a call with nothing in between (waiting for
    /// a build, a deployment or a growing log), a few times; seven identical calls in a
    /// row is past any polling a reply needs and is a loop that burns the user's quota.
    pub max_repeats: u32,
}

impl Default for LoopGuardConfig {
    fn default() -> Self {
        LoopGuardConfig {
            max_failed_repeats: 2,
            max_repeats: 7,
        }
    }
}

/// Why the guard refused a call.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The call's last `times` identical calls in a row all failed.
    Failing {
        /// How many identical calls in a row failed.
        times: u32,
    },
    /// The call was already made `times` times in a row.
    Repeating {
        /// How many identical calls were made in a row.
        times: u32,
    },
}

/// How much of the arguments a refusal quotes.
const QUOTED_ARGUMENTS_BYTES: usize = 300;

impl Refusal {
    /// The answer that ends the turn instead of the call: which call was refused (`tool`
    /// and its `arguments`, quoted up to 300 bytes) and why, in plain words, with what
    /// lets it through.
    #[must_use]
    pub fn answer(&self, tool: &str, arguments: &str) -> String {
        let mut quoted = prefix(arguments.trim(), QUOTED_ARGUMENTS_BYTES).to_owned();
        if quoted.len() < arguments.trim().len() {
            quoted.push('…');
        }
        let mut out = format!("I did not call `{tool}` with {quoted} again: ");
        let _ = match *self {
            Refusal::Failing { times } => write!(
                out,
                "it failed the last {times} times in a row with exactly these arguments and \
                 nothing changed in between, so it would fail the same way. Something has \
                 to change first; tell me what to try, or ask me to run it again."
            ),
            Refusal::Repeating { times } => write!(
                out,
                "it already ran {times} times in a row with exactly these arguments and \
                 nothing else in between, which looks like a loop. Ask me to run it again \
                 if that is what you want."
            ),
        };
        out
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

/// The run of identical calls at the end of the current turn, from the request history
/// and the calls let through since.
#[derive(Debug, Clone, Default)]
pub struct LoopGuard {
    config: LoopGuardConfig,
    /// The last call of the turn in canonical form; `None` before any.
    last: Option<String>,
    /// How many times in a row it was made (at least 1 once `last` is set).
    repeats: u32,
    /// How many of the latest of those, in a row, failed.
    failures: u32,
}

impl LoopGuard {
    /// Builds the guard from the conversation's current turn: its assistant tool calls, in
    /// order, each failed when the tool result with its id is marked as an error or looks
    /// like a failure.
    #[must_use]
    pub fn new(conversation: &Conversation, config: &LoopGuardConfig) -> LoopGuard {
        let turn = conversation.current_turn();
        // Whether each answered call failed: the client said so, or its text says so.
        let mut results: HashMap<&str, bool> = HashMap::new();
        for message in turn.iter().filter(|m| m.role == Role::Tool) {
            if let Some(id) = &message.tool_call_id {
                results.insert(id.as_str(), message.is_error || is_failure(&message.text()));
            }
        }
        let mut guard = LoopGuard {
            config: *config,
            ..LoopGuard::default()
        };
        for call in turn
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.tool_calls)
        {
            let failed = results.get(call.id.as_str()).copied().unwrap_or(false);
            guard.push(canonical(&call.name, &call.arguments), failed);
        }
        guard
    }

    /// Whether this call may be made next; why not when it may not.
    pub fn check(&self, name: &str, arguments: &str) -> Result<(), Refusal> {
        self.check_canonical(&canonical(name, arguments))
    }

    /// Checks the call ([`check`](Self::check)) and, when it may be made, counts it as the
    /// turn's next call (its result unknown, so not a failure).
    pub fn admit(&mut self, name: &str, arguments: &str) -> Result<(), Refusal> {
        let call = canonical(name, arguments);
        self.check_canonical(&call)?;
        self.push(call, false);
        Ok(())
    }

    fn check_canonical(&self, call: &str) -> Result<(), Refusal> {
        if self.last.as_deref() != Some(call) {
            return Ok(());
        }
        let LoopGuardConfig {
            max_failed_repeats,
            max_repeats,
        } = self.config;
        if max_failed_repeats > 0 && self.failures >= max_failed_repeats {
            return Err(Refusal::Failing {
                times: self.failures,
            });
        }
        if max_repeats > 0 && self.repeats >= max_repeats {
            return Err(Refusal::Repeating {
                times: self.repeats,
            });
        }
        Ok(())
    }

    /// One more call of the turn.
    fn push(&mut self, call: String, failed: bool) {
        if self.last.as_deref() == Some(call.as_str()) {
            self.repeats = self.repeats.saturating_add(1);
            self.failures = if failed {
                self.failures.saturating_add(1)
            } else {
                0
            };
        } else {
            self.last = Some(call);
            self.repeats = 1;
            self.failures = u32::from(failed);
        }
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
    use crate::conversation::tests::message;
    use crate::conversation::{HistoryToolCall, Message};

    /// An assistant call of `name` with `args`, and its result.
    fn call(id: &str, name: &str, args: &str, result: &str) -> [Message; 2] {
        let mut assistant = message(Role::Assistant, "");
        assistant.tool_calls.push(HistoryToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        });
        let mut tool = message(Role::Tool, result);
        tool.tool_call_id = Some(id.into());
        [assistant, tool]
    }

    fn read(id: &str, args: &str, result: &str) -> [Message; 2] {
        call(id, "read", args, result)
    }

    fn guard(messages: &[Message], config: &LoopGuardConfig) -> LoopGuard {
        let conversation = Conversation {
            messages: messages.to_vec(),
            ..Conversation::default()
        };
        LoopGuard::new(&conversation, config)
    }

    fn default_guard(messages: &[Message]) -> LoopGuard {
        guard(messages, &LoopGuardConfig::default())
    }

    #[test]
    fn results_the_client_marks_as_errors_are_failures() {
        let mut history = vec![message(Role::User, "go")];
        for id in ["1", "2"] {
            let [assistant, mut result] = read(id, "{}", "12 lines of output");
            result.is_error = true;
            history.extend([assistant, result]);
        }
        assert_eq!(
            default_guard(&history).check("read", "{}"),
            Err(Refusal::Failing { times: 2 })
        );
        history.truncate(1);
        history.extend(read("1", "{}", "12 lines of output"));
        history.extend(read("2", "{}", "12 lines of output"));
        assert!(default_guard(&history).check("read", "{}").is_ok());
    }

    #[test]
    fn two_failures_in_a_row_refuse_a_third() {
        let mut history = vec![message(Role::User, "go")];
        history.extend(read("1", r#"{"a":1,"b":2}"#, "Error: ENOENT no such file"));
        assert!(
            default_guard(&history)
                .check("read", r#"{"b":2,"a":1}"#)
                .is_ok()
        );
        history.extend(read("2", r#"{"b":2, "a":1}"#, "File not found"));
        let guard = default_guard(&history);
        assert_eq!(
            guard.check("read", r#"{"a":1,"b":2}"#),
            Err(Refusal::Failing { times: 2 })
        );
        assert!(guard.check("read", r#"{"a":2}"#).is_ok());
        assert!(guard.check("bash", r#"{"a":1,"b":2}"#).is_ok());
    }

    #[test]
    fn any_other_call_in_between_resets() {
        /// After the user's message, `rounds` times: `repeated` with `result`, then
        /// another call.
        fn alternating(rounds: usize, repeated: &str, result: &str) -> Vec<Message> {
            let mut history = vec![message(Role::User, "go")];
            for round in 0..rounds {
                history.extend(call(&format!("r{round}"), "bash", repeated, result));
                history.extend(call(
                    &format!("o{round}"),
                    "edit",
                    r#"{"filePath":"a"}"#,
                    "ok",
                ));
            }
            history
        }
        // Fail, edit, rerun.
        let test = r#"{"command":"cargo test"}"#;
        let history = alternating(5, test, "error: could not compile");
        assert!(default_guard(&history).check("bash", test).is_ok());
        // A status check between writes, many times over.
        let status = r#"{"command":"git status"}"#;
        let history = alternating(20, status, "clean");
        assert!(default_guard(&history).check("bash", status).is_ok());
    }

    #[test]
    fn a_success_resets_the_failures_but_not_the_repeats() {
        let mut history = vec![message(Role::User, "go")];
        history.extend(read("1", "{}", "Error: boom"));
        history.extend(read("2", "{}", "fine"));
        history.extend(read("3", "{}", "Error: boom"));
        assert!(default_guard(&history).check("read", "{}").is_ok());
        history.extend(read("4", "{}", "Error: boom"));
        assert_eq!(
            default_guard(&history).check("read", "{}"),
            Err(Refusal::Failing { times: 2 })
        );
    }

    #[test]
    fn a_new_user_message_starts_clean() {
        let mut history = vec![message(Role::User, "go")];
        history.extend(read("1", "{}", "Error: boom"));
        history.extend(read("2", "{}", "Error: boom"));
        assert!(default_guard(&history).check("read", "{}").is_err());
        history.push(message(Role::Assistant, "I did not call `read` again"));
        history.push(message(Role::User, "fixed it, read it again"));
        assert!(default_guard(&history).check("read", "{}").is_ok());
    }

    #[test]
    fn seven_in_a_row_refuse_an_eighth() {
        let history: Vec<Message> = std::iter::once(message(Role::User, "wait for it"))
            .chain((0..7).flat_map(|i| read(&i.to_string(), "{}", "not yet")))
            .collect();
        let guard = default_guard(&history[..13]);
        assert!(guard.check("read", "{}").is_ok(), "a seventh");
        let guard = default_guard(&history);
        assert_eq!(
            guard.check("read", "{}"),
            Err(Refusal::Repeating { times: 7 })
        );
    }

    #[test]
    fn admitted_calls_count_within_the_response() {
        let history: Vec<Message> = std::iter::once(message(Role::User, "go"))
            .chain((0..5).flat_map(|i| read(&i.to_string(), "{}", "ok")))
            .collect();
        let mut guard = default_guard(&history);
        assert!(guard.admit("read", "{}").is_ok());
        assert!(guard.admit("read", "{ }").is_ok());
        assert_eq!(
            guard.admit("read", "{}"),
            Err(Refusal::Repeating { times: 7 })
        );
        // Refused calls are not counted; another call resets.
        assert!(guard.admit("bash", "{}").is_ok());
        assert!(guard.admit("read", "{}").is_ok());
    }

    #[test]
    fn parallel_calls_in_one_message_are_consecutive() {
        let mut assistant = message(Role::Assistant, "");
        let mut results = Vec::new();
        for id in ["a", "b"] {
            assistant.tool_calls.push(HistoryToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: "{}".into(),
            });
            let mut tool = message(Role::Tool, "Error: gone");
            tool.tool_call_id = Some(id.into());
            results.push(tool);
        }
        let mut history = vec![message(Role::User, "go"), assistant];
        history.extend(results);
        assert_eq!(
            default_guard(&history).check("read", "{}"),
            Err(Refusal::Failing { times: 2 })
        );
    }

    #[test]
    fn refusals_say_what_and_why() {
        let answer = Refusal::Failing { times: 2 }.answer("bash", r#"{"command":"cargo test"}"#);
        assert!(
            answer.contains(r#"`bash` with {"command":"cargo test"}"#),
            "{answer}"
        );
        assert!(
            answer.contains("failed the last 2 times in a row"),
            "{answer}"
        );
        assert!(!answer.contains("  ") && !answer.contains('\n'), "{answer}");
        let answer = Refusal::Repeating { times: 7 }.answer("read", "{}");
        assert!(answer.contains("ran 7 times in a row"), "{answer}");
        assert!(!answer.contains("  ") && !answer.contains('\n'), "{answer}");
        // Long arguments are cut, on a character boundary.
        let long = format!(r#"{{"content":"{}"}}"#, "é".repeat(1000));
        let answer = Refusal::Repeating { times: 7 }.answer("write", &long);
        assert!(answer.len() < 700 && answer.contains("é…"), "{answer}");
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
        let history: Vec<Message> = std::iter::once(message(Role::User, "go"))
            .chain((0..3).flat_map(|i| read(&i.to_string(), "{}", "Error: boom")))
            .collect();
        let lenient = LoopGuardConfig {
            max_failed_repeats: 4,
            max_repeats: 10,
        };
        assert!(guard(&history, &lenient).check("read", "{}").is_ok());
        let strict = LoopGuardConfig {
            max_failed_repeats: 3,
            max_repeats: 10,
        };
        assert!(guard(&history, &strict).check("read", "{}").is_err());
        assert!(guard(&[], &strict).check("read", "{}").is_ok());
        let repeats = LoopGuardConfig {
            max_failed_repeats: 0,
            max_repeats: 3,
        };
        assert_eq!(
            guard(&history, &repeats).check("read", "{}"),
            Err(Refusal::Repeating { times: 3 })
        );
        let off = LoopGuardConfig {
            max_failed_repeats: 0,
            max_repeats: 0,
        };
        assert!(guard(&history, &off).check("read", "{}").is_ok());
    }
}
