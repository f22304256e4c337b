//! Workloads built from transcripts, shared by the tests and the benchmarks.
//!
//! The *event mix* is every event line of a set of transcripts (everything but
//! `system`, `user` and `result` lines), repeated to a target size, behind one
//! `system/init` line and before one `result` line: one long turn with the real
//! proportions of deltas, tool calls, queries and progress events.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The transcripts a workload is built from: the real captures in
/// `../shared/fixtures/cursor-agent` when present, otherwise (or with
/// `AGENTWIRE_WORKLOAD=project`) the project's own.
pub fn workload_transcripts() -> (Vec<PathBuf>, &'static str) {
    // The repository: this package's directory, or the one above (the proxies' package
    // builds this file too).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("tests/fixtures").is_dir())
        .expect("the repository's tests/fixtures");
    let shared = root.join("../shared/fixtures/cursor-agent");
    let project_only = std::env::var("AGENTWIRE_WORKLOAD").is_ok_and(|w| w == "project");
    if shared.is_dir() && !project_only {
        (jsonl_files(&shared), "real captures")
    } else {
        (
            jsonl_files(&root.join("tests/fixtures")),
            "project transcripts",
        )
    }
}

/// The `*.jsonl` files of `dir`, sorted.
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The event mix of `files`, at least `target_len` bytes long.
pub fn event_mix(files: &[PathBuf], target_len: usize) -> Vec<u8> {
    let mut events = Vec::new();
    for file in files {
        let bytes = std::fs::read(file).unwrap();
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            let kind = value["type"].as_str().unwrap_or_default();
            if value.is_object() && !matches!(kind, "system" | "user" | "result") {
                events.extend_from_slice(line);
                events.push(b'\n');
            }
        }
    }
    assert!(!events.is_empty(), "no event lines in {files:?}");
    let mut mix = Vec::with_capacity(target_len + events.len() + 512);
    mix.extend_from_slice(INIT.as_bytes());
    while mix.len() < target_len {
        mix.extend_from_slice(&events);
    }
    mix.extend_from_slice(RESULT.as_bytes());
    mix
}

const INIT: &str = concat!(
    r#"{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","#,
    r#""session_id":"mix","model":"Composer 2","permissionMode":"default"}"#,
    "\n"
);

const RESULT: &str = concat!(
    r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1,"#,
    r#""result":"","session_id":"mix","usage":{"inputTokens":10,"outputTokens":20}}"#,
    "\n"
);

/// A transcript of `count` lines of one tool result each `line_len` bytes long (file
/// content with escapes and multibyte text), between thinking and answer deltas.
pub fn huge_line_transcript(count: usize, line_len: usize) -> Vec<u8> {
    let mut out = String::from(INIT);
    let mut content = String::with_capacity(line_len);
    let words = [
        "fn",
        "main",
        "let",
        "mut",
        "self",
        "return",
        "\"quoted\"",
        "é—😀",
        "\t",
    ];
    let mut i = 0usize;
    while content.len() < line_len {
        content.push_str(words[i % words.len()]);
        content.push(if i % 11 == 10 { '\n' } else { ' ' });
        i += 1;
    }
    let content = serde_json::to_string(&content).unwrap();
    for n in 0..count {
        out.push_str(
            r#"{"type":"thinking","subtype":"delta","text":"Reading the file","session_id":"mix"}"#,
        );
        out.push('\n');
        out.push_str(&format!(
            r#"{{"type":"tool_call","subtype":"started","call_id":"t{n}","tool_call":{{"readToolCall":{{"args":{{"path":"/w/big.rs"}}}}}},"session_id":"mix"}}"#
        ));
        out.push('\n');
        out.push_str(&format!(
            r#"{{"type":"tool_call","subtype":"completed","call_id":"t{n}","tool_call":{{"readToolCall":{{"args":{{"path":"/w/big.rs"}},"result":{{"success":{{"content":{content},"totalLines":1}}}}}}}},"session_id":"mix"}}"#
        ));
        out.push('\n');
        out.push_str(r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"The file is long. "}]},"session_id":"mix"}"#);
        out.push('\n');
    }
    out.push_str(RESULT);
    out.into_bytes()
}

/// An event owned, to replay the same events into several encoders.
#[derive(Debug, Clone)]
pub enum OwnedEvent {
    Text(String),
    Reasoning(String),
    ToolCall {
        index: u32,
        id: String,
        name: String,
        arguments: String,
    },
    Activity {
        call_id: String,
        tool: String,
        phase: agentwire::event::ActivityPhase,
        summary: String,
        arguments: Option<String>,
        model_call_id: Option<String>,
    },
    Progress(agentwire::event::Progress),
    Usage(agentwire::event::Usage),
    Finish(agentwire::event::FinishReason),
    Failed(agentwire::event::Failure),
}

impl OwnedEvent {
    /// An owned copy of `event`.
    pub fn of(event: &agentwire::event::Event<'_>) -> OwnedEvent {
        use agentwire::event::Event;
        match event {
            Event::TextDelta(text) => OwnedEvent::Text((*text).to_owned()),
            Event::ReasoningDelta(text) => OwnedEvent::Reasoning((*text).to_owned()),
            Event::ToolCall(call) => OwnedEvent::ToolCall {
                index: call.index,
                id: call.id.to_owned(),
                name: call.name.to_owned(),
                arguments: call.arguments.to_owned(),
            },
            Event::AgentActivity(a) => OwnedEvent::Activity {
                call_id: a.call_id.to_owned(),
                tool: a.tool.to_owned(),
                phase: a.phase,
                summary: a.summary.to_owned(),
                arguments: a.arguments.map(str::to_owned),
                model_call_id: a.model_call_id.map(str::to_owned),
            },
            Event::Progress(progress) => OwnedEvent::Progress(*progress),
            Event::Usage(usage) => OwnedEvent::Usage(*usage),
            Event::Finish(reason) => OwnedEvent::Finish(*reason),
            Event::Failed(failure) => OwnedEvent::Failed(failure.clone()),
            other => panic!("an event not known here: {other:?}"),
        }
    }

    /// The event, borrowing from this copy.
    pub fn as_event(&self) -> agentwire::event::Event<'_> {
        use agentwire::event::{AgentActivity, Event, ToolCall};
        match self {
            OwnedEvent::Text(text) => Event::TextDelta(text),
            OwnedEvent::Reasoning(text) => Event::ReasoningDelta(text),
            OwnedEvent::ToolCall {
                index,
                id,
                name,
                arguments,
            } => Event::ToolCall(ToolCall {
                index: *index,
                id,
                name,
                arguments,
            }),
            OwnedEvent::Activity {
                call_id,
                tool,
                phase,
                summary,
                arguments,
                model_call_id,
            } => Event::AgentActivity(AgentActivity {
                call_id,
                tool,
                phase: *phase,
                summary,
                arguments: arguments.as_deref(),
                model_call_id: model_call_id.as_deref(),
            }),
            OwnedEvent::Progress(progress) => Event::Progress(*progress),
            OwnedEvent::Usage(usage) => Event::Usage(*usage),
            OwnedEvent::Finish(reason) => Event::Finish(*reason),
            OwnedEvent::Failed(failure) => Event::Failed(failure.clone()),
        }
    }
}

/// The events the cursor decoder yields for `transcript`, owned, through its end.
pub fn decoded_events(transcript: &[u8]) -> Vec<OwnedEvent> {
    let mut decoder = agentwire::cursor::Decoder::default();
    let mut events = Vec::new();
    decoder.push_stdout(transcript).unwrap();
    decoder.push_eof().unwrap();
    while let Some(event) = decoder.poll_event() {
        events.push(OwnedEvent::of(&event));
    }
    events
}
