//! Decoder events as JSON, in the shape of the package's `AgentEvent` union.
//!
//! Tags and field names are camelCase, and so are the names of the core's enums (module
//! `names`); a field that is absent in Rust (`None`) is left out, so it reads as
//! `undefined`. Counts are JSON numbers: exact below 2^53, far beyond any
//! token count.

use agentwire::event::{
    ActivityPhase, Event, FailureKind, FinishReason, Progress, ProgressKind, ToolOutcome, Usage,
};
use serde::Serialize;

use crate::names::Camel;

/// Appends `event` to `out` as one JSON object. An event kind added to the core without a
/// form here is left out (the package's tests compare every event with the Rust
/// decoder's, so such a gap shows).
pub(crate) fn write(out: &mut Vec<u8>, event: &Event<'_>) -> bool {
    let Some(event) = JsEvent::of(event) else {
        return false;
    };
    serde_json::to_writer(out, &event).expect("writing to a Vec cannot fail");
    true
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum JsEvent<'a> {
    TextDelta {
        text: &'a str,
    },
    ReasoningDelta {
        text: &'a str,
    },
    ToolCall {
        index: u32,
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    AgentActivity {
        call_id: &'a str,
        tool: &'a str,
        phase: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<Camel<ToolOutcome>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        started_seen: Option<bool>,
        summary: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        model_call_id: Option<&'a str>,
    },
    Progress {
        kind: Camel<ProgressKind>,
        #[serde(skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
    },
    #[serde(rename_all = "camelCase")]
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_write_tokens: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_tokens: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        prompt_tokens: u64,
        total_tokens: u64,
    },
    Finish {
        reason: Camel<FinishReason>,
    },
    Failed {
        kind: Camel<FailureKind>,
        message: &'a str,
    },
}

impl<'a> JsEvent<'a> {
    fn of(event: &'a Event<'a>) -> Option<JsEvent<'a>> {
        Some(match event {
            Event::TextDelta(text) => JsEvent::TextDelta { text },
            Event::ReasoningDelta(text) => JsEvent::ReasoningDelta { text },
            Event::ToolCall(call) => JsEvent::ToolCall {
                index: call.index,
                id: call.id,
                name: call.name,
                arguments: call.arguments,
            },
            Event::AgentActivity(activity) => {
                let (phase, outcome, started_seen) = match activity.phase {
                    ActivityPhase::Started => ("started", None, None),
                    ActivityPhase::Completed {
                        outcome,
                        started_seen,
                    } => ("completed", Some(Camel(outcome)), Some(started_seen)),
                    _ => return None,
                };
                JsEvent::AgentActivity {
                    call_id: activity.call_id,
                    tool: activity.tool,
                    phase,
                    outcome,
                    started_seen,
                    summary: activity.summary,
                    arguments: activity.arguments,
                    model_call_id: activity.model_call_id,
                }
            }
            Event::Progress(progress) => {
                let attempt = match *progress {
                    Progress::Reconnecting { attempt } | Progress::Retrying { attempt } => {
                        Some(attempt)
                    }
                    _ => None,
                };
                JsEvent::Progress {
                    kind: Camel(progress.kind()),
                    attempt,
                }
            }
            Event::Usage(usage) => usage_event(usage),
            Event::Finish(reason) => JsEvent::Finish {
                reason: Camel(*reason),
            },
            Event::Failed(failure) => JsEvent::Failed {
                kind: Camel(failure.kind),
                message: &failure.message,
            },
            _ => return None,
        })
    }
}

fn usage_event(usage: &Usage) -> JsEvent<'static> {
    JsEvent::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        reasoning_tokens: usage.reasoning_tokens,
        cost: usage.cost,
        prompt_tokens: usage.prompt_tokens(),
        total_tokens: usage.total_tokens(),
    }
}

#[cfg(test)]
mod tests {
    use agentwire::event::{AgentActivity, Failure, ToolCall};

    use super::*;

    fn json(event: &Event<'_>) -> String {
        let mut out = Vec::new();
        assert!(write(&mut out, event));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn events_have_the_shapes_of_the_typescript_union() {
        assert_eq!(
            json(&Event::TextDelta("a\"b")),
            r#"{"type":"textDelta","text":"a\"b"}"#
        );
        assert_eq!(
            json(&Event::ToolCall(ToolCall {
                index: 1,
                id: "call_1",
                name: "bash",
                arguments: "{}"
            })),
            r#"{"type":"toolCall","index":1,"id":"call_1","name":"bash","arguments":"{}"}"#
        );
        let started = AgentActivity {
            call_id: "c",
            tool: "shell",
            phase: ActivityPhase::Started,
            summary: "ls",
            arguments: None,
            model_call_id: Some("m"),
        };
        assert_eq!(
            json(&Event::AgentActivity(started.clone())),
            r#"{"type":"agentActivity","callId":"c","tool":"shell","phase":"started","summary":"ls","modelCallId":"m"}"#
        );
        let completed = AgentActivity {
            phase: ActivityPhase::Completed {
                outcome: ToolOutcome::PermissionDenied,
                started_seen: false,
            },
            arguments: Some("{}"),
            ..started
        };
        assert_eq!(
            json(&Event::AgentActivity(completed)),
            r#"{"type":"agentActivity","callId":"c","tool":"shell","phase":"completed","outcome":"permissionDenied","startedSeen":false,"summary":"ls","arguments":"{}","modelCallId":"m"}"#
        );
        assert_eq!(
            json(&Event::Progress(Progress::Reconnected)),
            r#"{"type":"progress","kind":"reconnected"}"#
        );
        assert_eq!(
            json(&Event::Progress(Progress::Retrying { attempt: 2 })),
            r#"{"type":"progress","kind":"retrying","attempt":2}"#
        );
        let usage = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cache_read_tokens: 3,
            cache_write_tokens: 4,
            reasoning_tokens: None,
            cost: Some(0.5),
        };
        assert_eq!(
            json(&Event::Usage(usage)),
            r#"{"type":"usage","inputTokens":1,"outputTokens":2,"cacheReadTokens":3,"cacheWriteTokens":4,"cost":0.5,"promptTokens":8,"totalTokens":10}"#
        );
        assert_eq!(
            json(&Event::Finish(FinishReason::ToolCalls)),
            r#"{"type":"finish","reason":"toolCalls"}"#
        );
        assert_eq!(
            json(&Event::Failed(Failure::new(
                FailureKind::RateLimited,
                "slow down"
            ))),
            r#"{"type":"failed","kind":"rateLimited","message":"slow down"}"#
        );
    }
}
