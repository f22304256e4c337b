//! `session/update` notifications → neutral [`Event`]s.
//!
//! | `sessionUpdate` | event |
//! |---|---|
//! | `agent_message_chunk` (text) | [`Event::TextDelta`] (empty chunks dropped) |
//! | `agent_thought_chunk` (text) | [`Event::ReasoningDelta`] |
//! | `tool_call` | [`Event::AgentActivity`] started (and completed if it says so) |
//! | `tool_call_update` with `status` `completed` / `failed` | [`Event::AgentActivity`] completed |
//! | `usage_update` | nothing; its `cost` is kept for the turn's usage (see `usage.rs`) |
//! | anything else (`plan`, `available_commands_update`, modes, unknown kinds) | nothing |
//!
//! Tool call ids are opaque (cursor-agent's contain a newline); a tool call may never
//! complete (codex-acp, recorded) or complete without a start (gemini-cli after a
//! permission request, recorded): both are tolerated.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::event::{ActivityPhase, AgentActivity, Event, ToolOutcome};

/// The `params` of a `session/update`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateParams<'a> {
    #[serde(borrow)]
    pub(crate) session_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) update: Update<'a>,
}

/// One update; only the fields agentwire reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Update<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    /// A content block for chunks, an array for tool calls.
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    title: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    raw_input: Option<&'a RawValue>,
    #[serde(default)]
    pub(crate) cost: Option<Cost>,
}

/// `usage_update.cost`.
#[derive(Debug, Deserialize, Clone, Copy)]
pub(crate) struct Cost {
    pub(crate) amount: f64,
}

#[derive(Deserialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// What a turn remembers of each tool call, so that a completion without the fields can
/// still be described.
#[derive(Debug, Default)]
pub(crate) struct ToolCalls {
    calls: Vec<ToolCallState>,
}

#[derive(Debug)]
struct ToolCallState {
    id: String,
    kind: String,
    title: String,
    arguments: Option<String>,
    started: bool,
    done: bool,
}

impl Update<'_> {
    /// Whether this is a `usage_update`.
    pub(crate) fn is_usage(&self) -> bool {
        self.session_update == "usage_update"
    }

    /// For a `tool_call` or `tool_call_update`: its id, title and raw input.
    pub(crate) fn tool_call_facts(&self) -> Option<(&str, &str, Option<&RawValue>)> {
        if !matches!(&*self.session_update, "tool_call" | "tool_call_update") {
            return None;
        }
        Some((
            self.tool_call_id.as_deref()?,
            self.title.as_deref().unwrap_or(""),
            self.raw_input,
        ))
    }
}

impl ToolCalls {
    /// Maps `update` to events, handing each to `emit`.
    pub(crate) fn map(&mut self, update: &Update<'_>, emit: &mut dyn FnMut(&Event<'_>)) {
        match &*update.session_update {
            "agent_message_chunk" | "agent_thought_chunk" => {
                let Some(block) = update
                    .content
                    .and_then(|raw| serde_json::from_str::<TextBlock<'_>>(raw.get()).ok())
                else {
                    return;
                };
                let text = match (&*block.kind, block.text) {
                    ("text", Some(text)) if !text.is_empty() => text,
                    _ => return,
                };
                if update.session_update == "agent_message_chunk" {
                    emit(&Event::TextDelta(&text));
                } else {
                    emit(&Event::ReasoningDelta(&text));
                }
            }
            "tool_call" | "tool_call_update" => self.tool(update, emit),
            _ => {}
        }
    }

    fn tool(&mut self, update: &Update<'_>, emit: &mut dyn FnMut(&Event<'_>)) {
        let Some(id) = update.tool_call_id.as_deref() else {
            return;
        };
        let index = match self.calls.iter().position(|call| call.id == id) {
            Some(index) => index,
            None => {
                self.calls.push(ToolCallState {
                    id: id.to_owned(),
                    kind: String::new(),
                    title: String::new(),
                    arguments: None,
                    started: false,
                    done: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[index];
        if let Some(kind) = &update.kind {
            call.kind = kind.to_string();
        }
        if let Some(title) = &update.title {
            // One line: titles are commands (`touch a && cat b`) or file names.
            call.title = title.lines().next().unwrap_or_default().to_owned();
        }
        if let Some(raw) = update.raw_input {
            // `{}` is a placeholder (claude-agent-acp fills it in an update).
            if raw.get().trim() != "{}" {
                call.arguments = Some(raw.get().to_owned());
            }
        }
        if update.session_update == "tool_call" && !call.started {
            call.started = true;
            emit(&Event::AgentActivity(activity(
                call,
                ActivityPhase::Started,
            )));
        }
        let outcome = match update.status.as_deref() {
            Some("completed") => ToolOutcome::Success,
            Some("failed") => ToolOutcome::Error,
            _ => return,
        };
        if !call.done {
            call.done = true;
            let phase = ActivityPhase::Completed {
                outcome,
                started_seen: call.started,
            };
            emit(&Event::AgentActivity(activity(call, phase)));
        }
    }
}

fn activity(call: &ToolCallState, phase: ActivityPhase) -> AgentActivity<'_> {
    AgentActivity {
        call_id: &call.id,
        tool: if call.kind.is_empty() {
            "other"
        } else {
            &call.kind
        },
        phase,
        summary: &call.title,
        arguments: call.arguments.as_deref(),
        model_call_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &[&str]) -> Vec<String> {
        let mut calls = ToolCalls::default();
        let mut seen = Vec::new();
        for line in lines {
            let params: UpdateParams<'_> = serde_json::from_str(line).unwrap();
            calls.map(&params.update, &mut |event| seen.push(format!("{event:?}")));
        }
        seen
    }

    #[test]
    fn chunks_become_deltas_and_empty_or_unknown_ones_nothing() {
        let seen = events(&[
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi\n"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"notice","whatever":1}}"#,
        ]);
        assert_eq!(seen, [r#"TextDelta("Hi\n")"#, r#"ReasoningDelta("hm")"#]);
    }

    #[test]
    fn a_tool_call_starts_once_and_completes_once_with_its_first_title_line() {
        let seen = events(&[
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c\n1","title":"a\nb","kind":"execute","status":"pending","rawInput":{}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c\n1","rawInput":{"command":"ls"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c\n1","status":"completed"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c\n1","status":"completed"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"other","status":"failed"}}"#,
        ]);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[0].contains("Started") && seen[0].contains(r#"summary: "a""#));
        assert!(seen[1].contains("Success") && seen[1].contains(r#"{\"command\":\"ls\"}"#));
        assert!(seen[2].contains("Error") && seen[2].contains("started_seen: false"));
    }
}
