//! Shared helpers of the integration tests: drive the core over a transcript in a given
//! chunking, for any dialect ([`drive`]), and check a response body against the OpenAI
//! chunk contract.
#![allow(dead_code)]

pub mod drive;
pub mod mix;
pub mod shared;

// The test kit's Responses checker, as `support::responses`; not every test binary that
// includes this module uses it.
#[allow(unused_imports)]
pub use agentwire_testkit::responses;

use std::path::{Path, PathBuf};

use agentwire::cursor::Decoder;
use agentwire::event::{ActivityPhase, Event, FinishReason, ToolOutcome};
use serde_json::Value;

/// An owned copy of an [`Event`], for comparing runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owned {
    Text(String),
    Reasoning(String),
    Activity {
        call_id: String,
        tool: String,
        phase: String,
        summary: String,
        arguments: Option<String>,
    },
    Progress(String),
    Usage(String),
    Finish(FinishReason),
    Failed(String),
    Other(String),
}

pub fn own(event: &Event<'_>) -> Owned {
    match event {
        Event::TextDelta(t) => Owned::Text(t.to_string()),
        Event::ReasoningDelta(t) => Owned::Reasoning(t.to_string()),
        Event::AgentActivity(a) => Owned::Activity {
            call_id: a.call_id.into(),
            tool: a.tool.into(),
            phase: match a.phase {
                ActivityPhase::Started => "started".into(),
                ActivityPhase::Completed {
                    outcome,
                    started_seen,
                } => {
                    format!("completed:{}:{}", outcome_name(outcome), started_seen)
                }
                _ => "other".into(),
            },
            summary: a.summary.into(),
            arguments: a.arguments.map(str::to_owned),
        },
        Event::Progress(p) => Owned::Progress(p.to_string()),
        Event::Usage(u) => Owned::Usage(format!("{u:?}")),
        Event::Finish(r) => Owned::Finish(*r),
        Event::Failed(f) => Owned::Failed(format!("{:?}: {}", f.kind, f.message)),
        other => Owned::Other(format!("{other:?}")),
    }
}

fn outcome_name(outcome: ToolOutcome) -> &'static str {
    match outcome {
        ToolOutcome::Success => "success",
        ToolOutcome::Rejected => "rejected",
        ToolOutcome::Error => "error",
        ToolOutcome::PermissionDenied => "permission_denied",
        _ => "unknown",
    }
}

/// Decodes `bytes` pushed in the given pieces; returns owned events.
pub fn decode_pieces(pieces: &[&[u8]]) -> Vec<Owned> {
    let mut decoder = Decoder::default();
    let mut events = Vec::new();
    for piece in pieces {
        decoder.push_stdout(piece).unwrap();
        while let Some(event) = decoder.poll_event() {
            events.push(own(&event));
        }
    }
    decoder.push_eof().unwrap();
    while let Some(event) = decoder.poll_event() {
        events.push(own(&event));
    }
    assert!(decoder.is_finished());
    events
}

/// Decodes `bytes` in `chunk`-byte pieces (`usize::MAX`: whole).
pub fn decode(bytes: &[u8], chunk: usize) -> Vec<Owned> {
    let pieces: Vec<&[u8]> = if chunk >= bytes.len() {
        vec![bytes]
    } else {
        bytes.chunks(chunk).collect()
    };
    decode_pieces(&pieces)
}

/// The answer text deltas of decoded events, in order.
pub fn texts_of(events: &[Owned]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Owned::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Concatenated answer text of decoded events.
pub fn text_of(events: &[Owned]) -> String {
    texts_of(events).concat()
}

/// Concatenated reasoning of decoded events.
pub fn reasoning_of(events: &[Owned]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let Owned::Reasoning(t) = e {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect()
}

pub use drive::Response;

/// The HTTP response a client would get for `transcript` through the Bridge, fed in
/// `chunk`-byte pieces, the agent then exiting with code 0, for a Chat Completions request
/// saying "hi".
pub fn respond(transcript: &[u8], chunk: usize, stream: bool, include_usage: bool) -> Response {
    use agentwire::bridge::Dialect;
    let mut request = serde_json::json!({"model": "auto", "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    if stream && include_usage {
        request["stream_options"] = serde_json::json!({"include_usage": true});
    }
    drive::drive(
        Dialect::ChatCompletions,
        &serde_json::to_vec(&request).unwrap(),
        &drive::pieces(transcript, chunk),
    )
}

/// What a stream body contained, after checking every frame against the chunk contract.
#[derive(Debug, Default)]
pub struct StreamSummary {
    pub content: String,
    pub reasoning: String,
    pub finish_reasons: Vec<String>,
    pub tool_call_deltas: usize,
    pub usage_chunks: Vec<Value>,
    pub errors: Vec<Value>,
    pub done: usize,
    pub chunks: usize,
}

/// Parses an SSE body and asserts the rules real clients depend on: `data:` frames only,
/// each one line of JSON ending in a blank line; one `[DONE]`, last; the same id, created
/// and model in every chunk; `choices` always present; role exactly once, first; a finish
/// chunk with an empty delta; a usage chunk only last before `[DONE]`.
pub fn check_stream(body: &[u8]) -> StreamSummary {
    let text = std::str::from_utf8(body).expect("stream is UTF-8");
    assert!(text.ends_with("\n\n"), "every frame ends with a blank line");
    let mut summary = StreamSummary::default();
    let mut identity: Option<(Value, Value, Value)> = None;
    let mut roles = 0;
    let frames: Vec<&str> = text[..text.len() - 2].split("\n\n").collect();
    for (i, frame) in frames.iter().enumerate() {
        if frame.starts_with(':') {
            assert!(!frame.contains('\n'), "comment is one line");
            continue;
        }
        let data = frame
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("frame {i} is not a data frame: {frame:?}"));
        assert!(!data.contains('\n'), "one line of data");
        if data == "[DONE]" {
            summary.done += 1;
            assert_eq!(i, frames.len() - 1, "[DONE] is last");
            continue;
        }
        assert_eq!(summary.done, 0, "nothing after [DONE]");
        let chunk: Value = serde_json::from_str(data)
            .unwrap_or_else(|e| panic!("frame {i} is not JSON: {e}: {data}"));
        if let Some(error) = chunk.get("error") {
            assert!(error["message"].is_string() && error["type"].is_string());
            summary.errors.push(error.clone());
            continue;
        }
        summary.chunks += 1;
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert!(chunk["id"].as_str().unwrap().starts_with("chatcmpl-"));
        assert!(chunk["created"].is_u64());
        assert!(chunk["model"].is_string());
        let this = (
            chunk["id"].clone(),
            chunk["created"].clone(),
            chunk["model"].clone(),
        );
        match &identity {
            None => identity = Some(this),
            Some(first) => assert_eq!(first, &this, "stable id/created/model"),
        }
        let choices = chunk["choices"].as_array().expect("choices is an array");
        if choices.is_empty() {
            assert!(
                chunk["usage"].is_object(),
                "a choices:[] chunk carries usage"
            );
            summary.usage_chunks.push(chunk["usage"].clone());
            continue;
        }
        assert!(
            summary.usage_chunks.is_empty(),
            "the usage chunk is the last chunk"
        );
        assert_eq!(choices.len(), 1);
        let choice = &choices[0];
        assert_eq!(choice["index"], 0);
        let delta = choice["delta"].as_object().expect("delta is an object");
        if let Some(role) = delta.get("role") {
            assert_eq!(role, "assistant");
            assert_eq!(summary.chunks, 1, "role only in the first chunk");
            roles += 1;
        }
        if let Some(content) = delta.get("content") {
            summary
                .content
                .push_str(content.as_str().expect("content is a string"));
        }
        if let Some(reasoning) = delta.get("reasoning_content") {
            summary.reasoning.push_str(reasoning.as_str().unwrap());
        }
        if let Some(calls) = delta.get("tool_calls") {
            summary.tool_call_deltas += calls.as_array().unwrap().len();
        }
        match &choice["finish_reason"] {
            Value::Null => {}
            Value::String(reason) => {
                assert!(delta.is_empty(), "the finish chunk has an empty delta");
                summary.finish_reasons.push(reason.clone());
            }
            other => panic!("finish_reason {other}"),
        }
    }
    if summary.errors.is_empty() {
        assert_eq!(roles, 1, "role exactly once");
    }
    summary
}

/// The project's own transcripts.
pub fn project_fixtures() -> Vec<PathBuf> {
    mix::jsonl_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// The real cursor-agent transcripts (`cursor-agent/*.jsonl` of the real captures), or
/// `None` when `what` is skipped ([`shared`]).
pub fn shared_captures(what: &str) -> Option<Vec<PathBuf>> {
    shared::fixtures(what).map(|fixtures| fixtures.files("cursor-agent", ".jsonl"))
}

/// The real OpenCode request bodies of the real captures, or `None` when `what` is skipped
/// ([`shared`]).
pub fn opencode_bodies(what: &str) -> Option<Vec<Vec<u8>>> {
    let fixtures = shared::fixtures(what)?;
    let bodies = fixtures.request_bodies("opencode/opencode-1.18.33-requests-toolround.jsonl");
    assert_eq!(bodies.len(), 2, "the OpenCode capture's two requests");
    Some(
        bodies
            .iter()
            .map(|body| serde_json::to_vec(body).unwrap())
            .collect(),
    )
}

/// `result.result` of the transcript's `result` line, if it has one and it reports success
/// (an error result is a failure, whose text is never the answer).
pub fn expected_result(bytes: &[u8]) -> Option<String> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .filter(|v| v["is_error"] != true && v["subtype"].as_str().is_none_or(|s| s == "success"))
        .map(|v| v["result"].as_str().unwrap_or_default().to_owned())
}

/// Whether the transcript has `thinking/delta` events with text.
pub fn has_thinking(bytes: &[u8]) -> bool {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .any(|v| {
            v["type"] == "thinking"
                && v["subtype"] == "delta"
                && v["text"].as_str().is_some_and(|t| !t.is_empty())
        })
}

/// Whether the transcript has usage in its result.
pub fn has_usage(bytes: &[u8]) -> bool {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .any(|v| v["type"] == "result" && v["usage"].is_object())
}
