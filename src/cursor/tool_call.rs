//! The `tool_call` payload of `tool_call/started` and `tool_call/completed`, and the cache
//! of calls in flight.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::json::{Key, for_each_entry, ignore_other_shapes, raw_str};
use crate::event::ToolOutcome;

/// Most calls kept in flight per turn; beyond it new starts are not cached (their
/// completions then report no cached arguments). Bounds memory on hostile output.
const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// Longest activity summary, in bytes.
const MAX_SUMMARY: usize = 160;

/// The `tool_call` object of one line, read in the same pass as the line: tool results can
/// be megabytes (a whole file read), so the payload is walked once, keeping only the
/// variant's name, its `args` (raw) and the kind of its `result`.
#[derive(Default)]
pub(crate) struct ToolCallPayload<'a> {
    /// The variant key (`shellToolCall`); `None` when the object has none.
    variant: Option<Cow<'a, str>>,
    /// The variant's `args` object.
    pub(crate) args: Option<&'a RawValue>,
    /// The kind of the variant's `result`, when it has one.
    pub(crate) outcome: Option<ToolOutcome>,
}

impl ToolCallPayload<'_> {
    /// Whether the object named a tool at all.
    pub(crate) fn has_variant(&self) -> bool {
        self.variant.is_some()
    }

    /// Appends the tool's name to `out`: `shellToolCall` → `shell`, `WriteToolCall` →
    /// `write`. Nothing when there is no variant.
    pub(crate) fn append_tool_name(&self, out: &mut String) {
        let Some(key) = &self.variant else { return };
        let stem = &key[..key.len() - VARIANT_SUFFIX.len()];
        let mut chars = stem.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_lowercase());
        }
        out.push_str(chars.as_str());
    }
}

/// What every variant key ends with.
const VARIANT_SUFFIX: &str = "ToolCall";

/// A variant key: found by its suffix, never by position, since 2026.08 the object also
/// holds `toolCallId`, `startedAtMs` and other siblings.
fn is_variant(key: &str) -> bool {
    key.len() > VARIANT_SUFFIX.len() && key.ends_with(VARIANT_SUFFIX)
}

impl<'de: 'a, 'a> Deserialize<'de> for ToolCallPayload<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PayloadVisitor)
    }
}

/// Visits the `tool_call` object: the first variant key is read, every other key skipped.
struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = ToolCallPayload<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tool_call object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut payload = ToolCallPayload::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if payload.variant.is_none() && is_variant(&key) {
                let body = map.next_value::<VariantBody<'de>>()?;
                payload.args = body.args;
                payload.outcome = body.outcome;
                payload.variant = Some(key);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(payload)
    }

    ignore_other_shapes!(ToolCallPayload::default());
}

/// The value under the variant key: `args` and `result`.
#[derive(Default)]
struct VariantBody<'a> {
    args: Option<&'a RawValue>,
    outcome: Option<ToolOutcome>,
}

impl<'de: 'a, 'a> Deserialize<'de> for VariantBody<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BodyVisitor;
        impl<'de> Visitor<'de> for BodyVisitor {
            type Value = VariantBody<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool call")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut body = VariantBody::default();
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    match &*key {
                        "args" => {
                            let args = map.next_value::<&'de RawValue>()?;
                            body.args = Some(args).filter(|a| a.get().starts_with('{'));
                        }
                        "result" => body.outcome = Some(map.next_value::<ResultKind>()?.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(body)
            }

            ignore_other_shapes!(VariantBody::default());
        }
        deserializer.deserialize_any(BodyVisitor)
    }
}

/// A result is a one-of object: `success`, `rejected`, `failure`, `error`,
/// `permissionDenied`, `writePermissionDenied` (shell adds a sibling `isBackground`).
/// Only its keys are read; the values (file contents, command output) are skipped.
struct ResultKind(ToolOutcome);

impl<'de> Deserialize<'de> for ResultKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ResultVisitor;
        impl<'de> Visitor<'de> for ResultVisitor {
            type Value = ResultKind;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool result")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut outcome = ToolOutcome::Unknown;
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    map.next_value::<IgnoredAny>()?;
                    if outcome == ToolOutcome::Unknown {
                        outcome = outcome_of(&key);
                    }
                }
                Ok(ResultKind(outcome))
            }

            ignore_other_shapes!(ResultKind(ToolOutcome::Unknown));
        }
        deserializer.deserialize_any(ResultVisitor)
    }
}

fn outcome_of(key: &str) -> ToolOutcome {
    match key {
        "success" => ToolOutcome::Success,
        "rejected" => ToolOutcome::Rejected,
        "failure" | "error" => ToolOutcome::Error,
        "permissionDenied" | "writePermissionDenied" => ToolOutcome::PermissionDenied,
        _ => ToolOutcome::Unknown,
    }
}

/// Appends a one-line summary of a call's arguments (`cat sample.txt`, a path, a URL) to
/// `out`: the first present field among those that say what the call is about.
/// For `mcp` calls the tool's own name (`toolName`) comes first.
pub(crate) fn append_summary(is_mcp: bool, args: Option<&str>, out: &mut String) {
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
    let preferred = is_mcp.then_some("toolName");
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

/// Calls announced by `tool_call/started` and not yet completed, by the agent's call id,
/// with their arguments: completions of rejected calls omit them.
///
/// Ids and arguments live back to back in one buffer that is reused from turn to turn, so
/// a steady stream of calls allocates nothing. Calls are few (one to a handful in flight),
/// so lookup is a scan, over a hash of each id first: a flood of calls (up to the cap)
/// costs a comparison of two numbers per call in flight, not of two strings.
#[derive(Debug, Default)]
pub(crate) struct InFlightCalls {
    text: String,
    calls: Vec<InFlight>,
    /// Bytes of `text` that no call in `calls` refers to any more.
    dead: usize,
    /// Where [`compact`](Self::compact) copies the live calls; kept for its capacity.
    spare: String,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// Hash of the id.
    hash: u64,
    /// `text[start..id_end]` is the id, `text[id_end..end]` the arguments.
    start: usize,
    id_end: usize,
    end: usize,
    has_args: bool,
}

fn id_hash(call_id: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hasher::write(&mut hasher, call_id.as_bytes());
    std::hash::Hasher::finish(&hasher)
}

/// A call taken out of [`InFlightCalls`] by its completion.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started<'a> {
    /// The arguments `started` announced, as JSON text.
    pub(crate) args: Option<&'a str>,
}

impl InFlightCalls {
    /// Records a started call (a repeated id replaces the earlier call).
    pub(crate) fn start(&mut self, call_id: &str, args: Option<&str>) {
        self.compact();
        let hash = id_hash(call_id);
        if let Some(at) = self.position(hash, call_id) {
            self.forget(at);
        }
        if self.calls.len() >= MAX_CALLS_IN_FLIGHT {
            return;
        }
        let start = self.text.len();
        self.text.push_str(call_id);
        let id_end = self.text.len();
        self.text.push_str(args.unwrap_or(""));
        self.calls.push(InFlight {
            hash,
            start,
            id_end,
            end: self.text.len(),
            has_args: args.is_some(),
        });
    }

    /// Takes the call `call_id` out, if it was started (and cached).
    pub(crate) fn complete(&mut self, call_id: &str) -> Option<Started<'_>> {
        self.compact();
        let at = self.position(id_hash(call_id), call_id)?;
        let call = self.forget(at);
        let args = call.has_args.then(|| &self.text[call.id_end..call.end]);
        Some(Started { args })
    }

    /// Forgets every call (a new turn).
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.spare.clear();
        self.calls.clear();
        self.dead = 0;
    }

    fn position(&self, hash: u64, call_id: &str) -> Option<usize> {
        self.calls
            .iter()
            .position(|c| c.hash == hash && &self.text[c.start..c.id_end] == call_id)
    }

    /// Removes a call from the list; its bytes stay until the next [`compact`](Self::compact)
    /// (a completion lends them out).
    fn forget(&mut self, at: usize) -> InFlight {
        let call = self.calls.remove(at);
        self.dead += call.end - call.start;
        call
    }

    /// Reclaims dead bytes once they are the majority, keeping memory proportional to the
    /// calls in flight. Amortized linear: each byte moves at most once per time it is
    /// outnumbered by dead bytes.
    fn compact(&mut self) {
        if self.calls.is_empty() {
            self.text.clear();
            self.dead = 0;
            return;
        }
        if self.dead * 2 <= self.text.len() {
            return;
        }
        self.spare.clear();
        for call in &mut self.calls {
            let start = self.spare.len();
            self.spare.push_str(&self.text[call.start..call.end]);
            call.id_end = start + (call.id_end - call.start);
            call.end = self.spare.len();
            call.start = start;
        }
        std::mem::swap(&mut self.text, &mut self.spare);
        self.dead = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> ToolCallPayload<'_> {
        serde_json::from_str(json).unwrap()
    }

    fn name(json: &str) -> Option<String> {
        let payload = payload(json);
        payload.has_variant().then(|| {
            let mut name = String::new();
            payload.append_tool_name(&mut name);
            name
        })
    }

    #[test]
    fn variant_found_by_suffix_not_position() {
        let json = r#"{"completedAtMs":"1","toolCallId":"x","readToolCall":{"args":{"path":"a.txt"},"result":{"success":{}}}}"#;
        let call = payload(json);
        assert_eq!(name(json).as_deref(), Some("read"));
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
            let json = format!(r#"{{"shellToolCall":{{"args":{{}},"result":{result}}}}}"#);
            assert_eq!(payload(&json).outcome, Some(outcome), "{result}");
        }
        assert_eq!(payload(r#"{"shellToolCall":{"args":{}}}"#).outcome, None);
    }

    #[test]
    fn names_and_shapes() {
        assert_eq!(name(r#"{"shellToolCall":{}}"#).as_deref(), Some("shell"));
        assert_eq!(name(r#"{"WriteToolCall":{}}"#).as_deref(), Some("write"));
        assert_eq!(
            name(r#"{"webFetchToolCall":1}"#).as_deref(),
            Some("webFetch")
        );
        assert_eq!(
            name(r#"{"\u0073hellToolCall":{}}"#).as_deref(),
            Some("shell")
        );
        assert_eq!(
            name(r#"{"aToolCall":{},"bToolCall":{}}"#).as_deref(),
            Some("a")
        );
        assert_eq!(name(r#"{"ToolCall":{}}"#), None);
        assert_eq!(name(r#"{"toolCallId":"x"}"#), None);
        assert_eq!(name(r#"[1]"#), None);
        assert_eq!(name(r#""shellToolCall""#), None);
        // `args` that are not an object are not arguments.
        assert!(payload(r#"{"shellToolCall":{"args":"ls"}}"#).args.is_none());
        // Malformed JSON inside the payload fails the whole line, as any JSON error does.
        assert!(
            serde_json::from_str::<ToolCallPayload<'_>>(r#"{"shellToolCall":{"args":}}"#).is_err()
        );
    }

    #[test]
    fn summaries() {
        let summary = |is_mcp: bool, args: &str| {
            let mut out = String::new();
            append_summary(is_mcp, Some(args), &mut out);
            out
        };
        assert_eq!(
            summary(false, r#"{"workingDirectory":"","command":"cat a\nb"}"#),
            "cat a b"
        );
        assert_eq!(
            summary(false, r#"{"searchTerm":"rust","toolCallId":"t"}"#),
            "rust"
        );
        assert_eq!(
            summary(true, r#"{"name":"srv","toolName":"query"}"#),
            "query"
        );
        assert_eq!(
            summary(false, r#"{"name":"srv","toolName":"query"}"#),
            "query"
        );
        assert_eq!(summary(false, r#"{"other":1}"#), "");
        let long = summary(false, &format!(r#"{{"command":"{}"}}"#, "é".repeat(200)));
        assert!(long.len() <= MAX_SUMMARY + 3 && long.ends_with('…'));
    }

    #[test]
    fn calls_in_flight() {
        let mut calls = InFlightCalls::default();
        calls.start("a", Some(r#"{"x":1}"#));
        calls.start("b", None);
        calls.start("c", Some("{}"));
        assert!(calls.complete("zz").is_none());
        assert_eq!(calls.complete("b").unwrap().args, None);
        assert!(calls.complete("b").is_none(), "completed once");
        // A repeated id replaces the earlier call.
        calls.start("a", Some(r#"{"x":2}"#));
        assert_eq!(calls.complete("a").unwrap().args, Some(r#"{"x":2}"#));
        assert!(calls.complete("a").is_none());
        assert_eq!(calls.complete("c").unwrap().args, Some("{}"));
        calls.clear();
        assert!(calls.complete("c").is_none());
    }

    #[test]
    fn in_flight_memory_follows_live_calls() {
        let mut calls = InFlightCalls::default();
        let args = format!(r#"{{"command":"{}"}}"#, "x".repeat(1000));
        calls.start("long-lived", Some("{}"));
        for i in 0..10_000 {
            let id = format!("call-{i}");
            calls.start(&id, Some(&args));
            assert_eq!(calls.complete(&id).unwrap().args, Some(args.as_str()));
            assert!(
                calls.text.len() <= 4 * (args.len() + 16),
                "{}",
                calls.text.len()
            );
        }
        assert_eq!(calls.complete("long-lived").unwrap().args, Some("{}"));
    }

    #[test]
    fn in_flight_is_bounded() {
        let mut calls = InFlightCalls::default();
        for i in 0..MAX_CALLS_IN_FLIGHT + 10 {
            calls.start(&i.to_string(), None);
        }
        assert!(calls.complete("0").is_some());
        assert!(
            calls
                .complete(&(MAX_CALLS_IN_FLIGHT + 5).to_string())
                .is_none()
        );
    }
}
