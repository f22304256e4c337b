//! Replays an ACP recording (`{"dir","t_ms","msg"}` a line, as in the shared captures and
//! `tests/fixtures/acp/`) through an `acp::Connection`: the agent's messages are pushed
//! in a chosen chunking, and each client message the core writes is checked against the
//! recorded one in kind and order (ids and timings aside).

use std::path::{Path, PathBuf};

#[path = "acp_replay.rs"]
mod driver;

pub use driver::{PROMPT_AFTER_CANCEL, Record, Split, kind, request};

use agentwire::acp::{Connection, TurnId};
use agentwire::bridge::{Dialect, Output};
use serde_json::Value;

/// One turn's response as an adapter would see it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TurnResponse {
    pub status: Option<u16>,
    pub body: Vec<u8>,
    pub ends: usize,
}

/// What a replay produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Every message the core wrote, parsed.
    pub written: Vec<Value>,
    pub turns: Vec<TurnResponse>,
    /// Where the replay stopped early (the core's policy departs from the recorded
    /// client's there), if it did.
    pub stopped: Option<&'static str>,
    pub restarts: usize,
    /// The sessions the core closed (`session/close`, which the recorded agents offer
    /// and the recorded clients never sent), in order.
    pub closed: Vec<String>,
}

/// The real ACP recordings (`fixtures/acp` of the real captures), found by the one finder
/// (`tests/support/shared.rs`): `None` when they are absent and the test is skipped; a
/// failure when they are required but absent, or present but unreadable or empty.
pub fn shared_recordings() -> Option<Vec<PathBuf>> {
    let fixtures = crate::support::shared::fixtures("the ACP recordings")?;
    Some(fixtures.files("acp", ".jsonl"))
}

/// The project's own ACP fixtures.
pub fn project_fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

pub fn load(path: &Path) -> Vec<Record> {
    driver::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Replays `records` with every turn's request in `dialect`, checking each client message
/// the core writes against the recorded one in kind and order (ids and timings aside).
pub fn replay(records: &[Record], dialect: Dialect, split: Split) -> Outcome {
    let mut turns: Vec<TurnResponse> = Vec::new();
    let mut restarts = 0;
    let observe = |connection: &mut Connection, ids: &[TurnId], _: &driver::Input| {
        let mut written = Vec::new();
        while let Some(bytes) = connection.poll_transmit() {
            assert!(bytes.ends_with(b"\n"), "every message ends its line");
            written.extend_from_slice(bytes);
        }
        while connection.poll_decision().is_some() {
            restarts += 1;
        }
        turns.resize_with(ids.len(), TurnResponse::default);
        for (&turn, response) in ids.iter().zip(&mut turns) {
            while let Some(output) = connection.poll_output(turn) {
                assert_eq!(response.ends, 0, "nothing after End");
                match output {
                    Output::Head(head) => {
                        assert!(response.status.is_none(), "one head");
                        response.status = Some(head.status);
                    }
                    Output::Body(bytes) => {
                        assert!(response.status.is_some(), "head before body");
                        response.body.extend_from_slice(bytes);
                    }
                    Output::StopAgent => panic!("a turn never stops the process"),
                    Output::Respawn => panic!("a turn never respawns the process"),
                    Output::End => response.ends += 1,
                }
            }
        }
        written
    };
    let replayed =
        driver::replay(records, dialect, split, observe).unwrap_or_else(|e| panic!("{e}"));
    for (written, &index) in replayed.written.iter().zip(&replayed.matched) {
        let msg = &records[index].msg;
        let expected = kind(msg);
        assert_eq!(
            kind(written),
            expected,
            "the core's message in the recording's order: {written}"
        );
        match expected.as_str() {
            "request session/prompt" => {
                let text = written["params"]["prompt"][0]["text"].as_str().unwrap();
                assert!(
                    text.contains("What does notes.txt say?"),
                    "the prompt renders the conversation: {text}"
                );
            }
            "response" | "error" => {
                assert_eq!(
                    written["result"], msg["result"],
                    "the same answer to the agent"
                );
                assert_eq!(written["id"], msg["id"], "the agent's id echoed as it was");
                assert_eq!(written["error"]["code"], msg["error"]["code"]);
            }
            "request initialize" => {
                assert_eq!(written["params"]["protocolVersion"], 1);
                assert_eq!(written["params"]["clientCapabilities"]["terminal"], false);
            }
            "request session/new" => assert_eq!(written["params"], msg["params"]),
            _ => {}
        }
    }
    let unread = &replayed.written[replayed.matched.len()..];
    match replayed.stopped {
        None => assert!(
            unread.is_empty(),
            "the core wrote more than the recording: {unread:?}"
        ),
        Some(PROMPT_AFTER_CANCEL) => assert_eq!(
            unread.first().map(kind).as_deref(),
            Some("request session/new"),
            "a cancelled session is never reused"
        ),
        Some(_) => {}
    }
    Outcome {
        written: replayed.written,
        turns,
        stopped: replayed.stopped,
        restarts,
        closed: replayed.closed,
    }
}

/// The agent's message text for each prompt, in order: the expected answers.
pub fn recorded_answers(records: &[Record]) -> Vec<String> {
    let mut prompts: Vec<(String, String)> = Vec::new();
    for record in records {
        let msg = &record.msg;
        if record.to_agent && msg["method"] == "session/prompt" {
            prompts.push((
                msg["params"]["sessionId"].as_str().unwrap().into(),
                String::new(),
            ));
        }
        if !record.to_agent && msg["method"] == "session/update" {
            let update = &msg["params"]["update"];
            if update["sessionUpdate"] == "agent_message_chunk" {
                let session = msg["params"]["sessionId"].as_str().unwrap();
                if let Some(prompt) = prompts.iter_mut().rev().find(|(s, _)| s == session) {
                    prompt
                        .1
                        .push_str(update["content"]["text"].as_str().unwrap_or(""));
                }
            }
        }
    }
    prompts.into_iter().map(|(_, text)| text).collect()
}
