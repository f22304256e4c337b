//! The `tool_call` payload of `tool_call/started` and `tool_call/completed`, and the cache
//! of calls in flight.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use super::json::raw_str;
use super::line::for_each_entry;
use crate::event::ToolOutcome;

/// Most calls kept in flight per turn; beyond it new starts are not cached (their
/// completions then report no cached arguments). Bounds memory on hostile output.
const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// Longest activity summary, in bytes.
const MAX_SUMMARY: usize = 160;

/// The variant of one `tool_call` object.
pub(crate) struct ToolCallPayload<'a> {
    /// `shellToolCall` → `shell`.
    pub(crate) tool: Cow<'a, str>,
    pub(crate) args: Option<&'a RawValue>,
    pub(crate) outcome: Option<ToolOutcome>,
}

impl<'a> ToolCallPayload<'a> {
    /// Finds the variant by its `ToolCall` suffix, never by key order: since 2026.08 the
    /// object also holds `toolCallId`, `startedAtMs` and other siblings.
    pub(crate) fn parse(raw: &'a RawValue) -> Option<Self> {
        let mut variant = None;
        for_each_entry(raw, |key, value| {
            if variant.is_none() && key.len() > "ToolCall".len() && key.ends_with("ToolCall") {
                variant = Some((tool_name(key), value));
            }
        });
        let (tool, body) = variant?;
        let mut args = None;
        let mut outcome = None;
        for_each_entry(body, |key, value| match key {
            "args" if value.get().starts_with('{') => args = Some(value),
            "result" => outcome = Some(result_outcome(value)),
            _ => {}
        });
        Some(ToolCallPayload {
            tool: Cow::Owned(tool),
            args,
            outcome,
        })
    }
}

/// `shellToolCall` → `shell`, `WriteToolCall` → `write`.
fn tool_name(key: &str) -> String {
    let stem = &key[..key.len() - "ToolCall".len()];
    let mut chars = stem.chars();
    let mut name = String::with_capacity(stem.len());
    if let Some(first) = chars.next() {
        name.extend(first.to_lowercase());
    }
    name.push_str(chars.as_str());
    name
}

/// A result is a one-of object: `success`, `rejected`, `failure`, `error`,
/// `permissionDenied`, `writePermissionDenied` (shell adds a sibling `isBackground`).
fn result_outcome(result: &RawValue) -> ToolOutcome {
    let mut outcome = ToolOutcome::Unknown;
    for_each_entry(result, |key, _| {
        let this = match key {
            "success" => ToolOutcome::Success,
            "rejected" => ToolOutcome::Rejected,
            "failure" | "error" => ToolOutcome::Error,
            "permissionDenied" | "writePermissionDenied" => ToolOutcome::PermissionDenied,
            _ => return,
        };
        if outcome == ToolOutcome::Unknown {
            outcome = this;
        }
    });
    outcome
}

/// Appends a one-line summary of a call's arguments (`cat sample.txt`, a path, a URL) to
/// `out`: the first present field among those that say what the call is about.
pub(crate) fn append_summary(tool: &str, args: Option<&RawValue>, out: &mut String) {
    const FIELDS: &[&str] = &[
        "command",
        "path",
        "filePath",
        "url",
        "searchTerm",
        "query",
        "pattern",
        "globPattern",
        "title",
        "toolName",
        "name",
        "description",
    ];
    let Some(args) = args else { return };
    let mut best: Option<(usize, Cow<'_, str>)> = None;
    let preferred = match tool {
        "mcp" => Some("toolName"),
        _ => None,
    };
    for_each_entry(args, |key, value| {
        let rank = if Some(key) == preferred {
            0
        } else {
            match FIELDS.iter().position(|f| *f == key) {
                Some(at) => at + 1,
                None => return,
            }
        };
        if best.as_ref().is_some_and(|(r, _)| *r <= rank) {
            return;
        }
        if let Some(text) = raw_str(value).filter(|t| !t.trim().is_empty()) {
            best = Some((rank, text));
        }
    });
    let Some((_, text)) = best else { return };
    let start = out.len();
    for c in text.trim().chars() {
        if out.len() - start + c.len_utf8() > MAX_SUMMARY {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
}

/// A call announced by `tool_call/started`, kept until its completion.
#[derive(Debug)]
pub(crate) struct InFlight {
    /// Arguments as JSON text: completions of rejected calls omit them.
    pub(crate) args: Option<String>,
}

/// Calls in flight, by the agent's call id.
#[derive(Debug, Default)]
pub(crate) struct InFlightCalls {
    calls: HashMap<String, InFlight>,
}

impl InFlightCalls {
    pub(crate) fn start(&mut self, call_id: &str, args: Option<&RawValue>) {
        if self.calls.len() >= MAX_CALLS_IN_FLIGHT && !self.calls.contains_key(call_id) {
            return;
        }
        let call = InFlight {
            args: args.map(|a| a.get().to_owned()),
        };
        self.calls.insert(call_id.to_owned(), call);
    }

    pub(crate) fn complete(&mut self, call_id: &str) -> Option<InFlight> {
        self.calls.remove(call_id)
    }

    pub(crate) fn clear(&mut self) {
        self.calls.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn variant_found_by_suffix_not_position() {
        let value = raw(
            r#"{"completedAtMs":"1","toolCallId":"x","readToolCall":{"args":{"path":"a.txt"},"result":{"success":{}}}}"#,
        );
        let call = ToolCallPayload::parse(&value).unwrap();
        assert_eq!(call.tool, "read");
        assert_eq!(call.args.unwrap().get(), r#"{"path":"a.txt"}"#);
        assert_eq!(call.outcome, Some(ToolOutcome::Success));
    }

    #[test]
    fn outcomes() {
        for (result, outcome) in [
            (r#"{"rejected":{"reason":""}}"#, ToolOutcome::Rejected),
            (
                r#"{"isBackground":false,"success":{}}"#,
                ToolOutcome::Success,
            ),
            (r#"{"failure":{}}"#, ToolOutcome::Error),
            (r#"{"error":{}}"#, ToolOutcome::Error),
            (r#"{"permissionDenied":{}}"#, ToolOutcome::PermissionDenied),
            (
                r#"{"writePermissionDenied":{"error":"x"}}"#,
                ToolOutcome::PermissionDenied,
            ),
            (r#"{"weird":{}}"#, ToolOutcome::Unknown),
            ("12", ToolOutcome::Unknown),
        ] {
            assert_eq!(result_outcome(&raw(result)), outcome, "{result}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(tool_name("shellToolCall"), "shell");
        assert_eq!(tool_name("WriteToolCall"), "write");
        assert_eq!(tool_name("webFetchToolCall"), "webFetch");
        assert!(ToolCallPayload::parse(&raw(r#"{"ToolCall":{}}"#)).is_none());
        assert!(ToolCallPayload::parse(&raw(r#"{"toolCallId":"x"}"#)).is_none());
        assert!(ToolCallPayload::parse(&raw(r#"[1]"#)).is_none());
    }

    #[test]
    fn summaries() {
        let summary = |tool: &str, args: &str| {
            let mut out = String::new();
            append_summary(tool, Some(&raw(args)), &mut out);
            out
        };
        assert_eq!(
            summary("shell", r#"{"workingDirectory":"","command":"cat a\nb"}"#),
            "cat a b"
        );
        assert_eq!(
            summary("webSearch", r#"{"searchTerm":"rust","toolCallId":"t"}"#),
            "rust"
        );
        assert_eq!(
            summary("mcp", r#"{"name":"srv","toolName":"query"}"#),
            "query"
        );
        assert_eq!(summary("x", r#"{"other":1}"#), "");
        let long = summary("shell", &format!(r#"{{"command":"{}"}}"#, "é".repeat(200)));
        assert!(long.len() <= MAX_SUMMARY + 3 && long.ends_with('…'));
    }
}
