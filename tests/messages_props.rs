//! Property tests of the Messages writers: for any sequence of events (text, reasoning,
//! the agent's own tool use, progress, usage, keep-alives, then client tool calls and an
//! end), whatever the output options, the stream keeps the block state machine
//! (`agentwire_testkit::messages`), holds exactly the events' text, reasoning and calls, and a
//! non-streaming body of the same events holds the same content.

use agentwire::anthropic::{MessageBuilder, MessageStreamEncoder, OutputOptions, ResponseMeta};
use agentwire::event::{
    ActivityPhase, AgentActivity, Event, Failure, FailureKind, FinishReason, Progress, ToolCall,
    ToolOutcome, Usage,
};
use agentwire_testkit::messages;
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Step {
    Text(String),
    Reasoning(String),
    /// The agent's own tool: started, finished (no note), rejected without a start.
    Activity {
        phase: u8,
        summary: String,
    },
    Progress(u32),
    Usage(u64, u64, u64, u64),
    KeepAlive,
}

#[derive(Debug, Clone)]
enum End {
    Finish(FinishReason),
    Failed(FailureKind),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,6}",
        Just("\n".to_owned()),
        Just("\"quoted\"\\".to_owned()),
        Just("é—😀\u{1}".to_owned()),
        Just("</script>\r\n\n\nevent: x".to_owned()),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => text().prop_map(Step::Text),
        3 => text().prop_map(Step::Reasoning),
        1 => (0u8..3, ".{0,6}").prop_map(|(phase, summary)| Step::Activity { phase, summary }),
        1 => (1u32..4).prop_map(Step::Progress),
        1 => (0u64..99_999, 0u64..999, 0u64..99_999, 0u64..99).prop_map(|(a, b, c, d)| Step::Usage(a, b, c, d)),
        1 => Just(Step::KeepAlive),
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("{}".to_owned()),
        Just(r#"{"command":"ls -la"}"#.to_owned()),
        ".{0,8}".prop_map(|s| json!({"file_path": s, "limit": 3}).to_string()),
    ]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        3 => prop_oneof![
            Just(FinishReason::Stop),
            Just(FinishReason::Length),
            Just(FinishReason::ToolCalls),
            Just(FinishReason::ContentFilter),
        ].prop_map(End::Finish),
        1 => prop_oneof![
            Just(FailureKind::AgentCrashed),
            Just(FailureKind::Timeout),
            Just(FailureKind::Unavailable),
            Just(FailureKind::RateLimited),
            Just(FailureKind::UsageLimit),
        ].prop_map(End::Failed),
    ]
}

/// Feeds the steps, the calls and the end to a stream encoder and a body builder.
fn run(
    steps: &[Step],
    calls: &[String],
    end: &End,
    options: OutputOptions,
) -> (Vec<u8>, MessageBuilder) {
    let meta = ResponseMeta::new(9, "claude-x");
    let mut encoder = MessageStreamEncoder::new(&meta, &options);
    let mut builder = MessageBuilder::new(&meta, &options);
    let mut out = Vec::new();
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{i:024x}")).collect();
    let mut events: Vec<Event<'_>> = Vec::new();
    let mut keep_alive_at = Vec::new();
    for step in steps {
        let event = match step {
            Step::Text(text) => Event::TextDelta(text),
            Step::Reasoning(text) => Event::ReasoningDelta(text),
            Step::Activity { phase, summary } => Event::AgentActivity(AgentActivity {
                call_id: "c\n1",
                tool: "shell",
                phase: match phase {
                    0 => ActivityPhase::Started,
                    1 => ActivityPhase::Completed {
                        outcome: ToolOutcome::Success,
                        started_seen: true,
                    },
                    _ => ActivityPhase::Completed {
                        outcome: ToolOutcome::Rejected,
                        started_seen: false,
                    },
                },
                summary,
                arguments: None,
                model_call_id: None,
            }),
            Step::Progress(attempt) => Event::Progress(Progress::Retrying { attempt: *attempt }),
            Step::Usage(input, output, read, write) => Event::Usage(Usage {
                input_tokens: *input,
                output_tokens: *output,
                cache_read_tokens: *read,
                cache_write_tokens: *write,
                ..Usage::default()
            }),
            Step::KeepAlive => {
                keep_alive_at.push(events.len());
                continue;
            }
        };
        events.push(event);
    }
    for (i, (arguments, id)) in calls.iter().zip(&ids).enumerate() {
        events.push(Event::ToolCall(ToolCall {
            index: i as u32,
            id,
            name: "Read",
            arguments,
        }));
    }
    events.push(match end {
        End::Finish(reason) => Event::Finish(*reason),
        End::Failed(kind) => Event::Failed(Failure::new(*kind, "it broke")),
    });
    // Events after the end are ignored.
    events.push(Event::TextDelta("after the end"));
    for (i, event) in events.iter().enumerate() {
        for _ in keep_alive_at.iter().filter(|at| **at == i) {
            encoder.keep_alive(&mut out);
        }
        encoder.encode(event, &mut out);
        builder.push(event);
    }
    encoder.keep_alive(&mut out);
    (out, builder)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn every_stream_is_well_formed_and_matches_the_body(
        steps in proptest::collection::vec(step(), 0..24),
        calls in proptest::collection::vec(arguments(), 0..4),
        end in end(),
        thinking in any::<bool>(),
        activity_notes in any::<bool>(),
    ) {
        let options = OutputOptions { thinking, activity_notes };
        let (out, builder) = run(&steps, &calls, &end, options);
        let stream = messages::check_stream(&out, "claude-x");
        let sent_text: String = steps.iter().filter_map(|s| match s {
            Step::Text(t) => Some(t.as_str()),
            _ => None,
        }).collect();
        let sent_reasoning: String = steps.iter().filter_map(|s| match s {
            Step::Reasoning(t) => Some(t.as_str()),
            _ => None,
        }).collect();
        match end {
            End::Failed(_) => {
                prop_assert!(stream.error.is_some());
                prop_assert!(builder.failure().is_some());
                // Everything before the failure was streamed as it came.
                prop_assert!(sent_text.starts_with(&stream.text()));
            }
            End::Finish(reason) => {
                prop_assert!(stream.error.is_none());
                prop_assert_eq!(stream.text(), sent_text);
                let shown = stream.thinking();
                if !thinking {
                    prop_assert_eq!(shown, "");
                } else if !activity_notes {
                    prop_assert_eq!(shown, sent_reasoning);
                }
                let inputs: Vec<Value> = stream.tool_uses().into_iter().map(|(_, _, input)| input).collect();
                let expected: Vec<Value> = calls.iter().map(|a| {
                    if a.is_empty() { json!({}) } else { serde_json::from_str(a).unwrap() }
                }).collect();
                prop_assert_eq!(inputs, expected);
                let expected_reason = match (reason, calls.is_empty()) {
                    (_, false) => "tool_use",
                    (FinishReason::Length, true) => "max_tokens",
                    (FinishReason::ContentFilter, true) => "refusal",
                    _ => "end_turn",
                };
                prop_assert_eq!(stream.stop_reason.as_deref(), Some(expected_reason));
                // The last usage reported, as is; none reported: zeros.
                let last_usage = steps.iter().rev().find_map(|s| match s {
                    Step::Usage(i, o, r, w) => Some(json!({"input_tokens": i, "output_tokens": o,
                        "cache_read_input_tokens": r, "cache_creation_input_tokens": w})),
                    _ => None,
                }).unwrap_or(json!({"input_tokens": 0, "output_tokens": 0}));
                prop_assert_eq!(&stream.usage, &last_usage);
                let mut body = Vec::new();
                builder.write_body(&mut body);
                let body: Value = serde_json::from_slice(&body).unwrap();
                messages::check_body(&body, "claude-x");
                prop_assert_eq!(&body["content"], &json!(stream.content));
                prop_assert_eq!(body["stop_reason"].as_str(), stream.stop_reason.as_deref());
                prop_assert_eq!(&body["usage"], &stream.usage);
            }
        }
    }
}
