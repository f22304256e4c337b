//! Replays an ACP recording (`{"dir","t_ms","msg"}` a line, as in the shared captures and
//! `tests/fixtures/acp/`) through an `acp::Connection`: the agent's messages are pushed
//! in a chosen chunking, and each client message the core writes is checked against the
//! recorded one in kind and order (ids and timings aside).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agentwire::acp::{AcpConfig, Connection, TurnId};
use agentwire::bridge::{BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use serde_json::{Value, json};

/// One recorded message.
#[derive(Debug, Clone)]
pub struct Record {
    pub to_agent: bool,
    /// A project fixture's raw stdout line (not JSON-RPC), pushed as it is.
    pub raw: Option<String>,
    /// A project fixture's end of the process: its stderr.
    pub exit_stderr: Option<String>,
    pub t_ms: u64,
    pub msg: Value,
}

/// How each agent line is cut into pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Whole,
    Bytes,
    /// At this offset (clamped to the line's length).
    At(usize),
    /// This many bytes before the line's end (its newline included).
    FromEnd(usize),
}

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
    pub stopped: Option<String>,
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
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let record: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: bad record {line}: {e}", path.display()));
            Record {
                to_agent: record["dir"] == "client→agent",
                raw: record["raw"].as_str().map(Into::into),
                exit_stderr: (record["dir"] == "exit")
                    .then(|| record["stderr"].as_str().unwrap_or("").into()),
                t_ms: record["t_ms"].as_u64().unwrap_or(0),
                msg: record["msg"].clone(),
            }
        })
        .collect()
}

/// A message's kind: `request <method>`, `notification <method>`, `response`, `error`.
pub fn kind(msg: &Value) -> String {
    match (
        msg.get("id").is_some_and(|id| !id.is_null()),
        msg.get("method"),
    ) {
        (true, Some(method)) => format!("request {}", method.as_str().unwrap_or("?")),
        (false, Some(method)) => format!("notification {}", method.as_str().unwrap_or("?")),
        _ if msg.get("error").is_some() => "error".into(),
        _ => "response".into(),
    }
}

/// The request each turn sends: asks what the recording's client asked.
pub fn request(dialect: Dialect, model: &str) -> Vec<u8> {
    let ask = "What does notes.txt say?";
    let body = match dialect {
        Dialect::ChatCompletions => json!({"model": model, "stream": true,
            "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": ask}]}),
        Dialect::Responses => json!({"model": model, "stream": true, "input": ask}),
        Dialect::Messages => json!({"model": model, "max_tokens": 1024, "stream": true,
            "messages": [{"role": "user", "content": ask}]}),
        other => panic!("no request for {other:?}"),
    };
    serde_json::to_vec(&body).unwrap()
}

/// The replay's configuration: sessions on demand (as the recorded client made them).
pub fn config() -> AcpConfig {
    AcpConfig {
        cwd: "/home/user/project".into(),
        pool_size: 0,
        ..AcpConfig::default()
    }
}

struct Driver {
    connection: Connection,
    written: Vec<Value>,
    unread: usize,
    turns: Vec<(TurnId, TurnResponse)>,
    restarts: usize,
    closed: Vec<String>,
}

impl Driver {
    fn drain(&mut self) {
        while let Some(bytes) = self.connection.poll_transmit() {
            let text = std::str::from_utf8(bytes).expect("the core writes UTF-8");
            assert!(text.ends_with('\n'), "every message ends its line");
            for line in text.lines() {
                let msg: Value = serde_json::from_str(line).expect("the core writes JSON");
                // Not in the recordings: kept apart from what is checked against them.
                if msg["method"] == "session/close" {
                    let session = msg["params"]["sessionId"].as_str().expect("a session id");
                    self.closed.push(session.to_owned());
                } else {
                    self.written.push(msg);
                }
            }
        }
        while self.connection.poll_decision().is_some() {
            self.restarts += 1;
        }
        for (turn, response) in &mut self.turns {
            while let Some(output) = self.connection.poll_output(*turn) {
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
                    Output::End => response.ends += 1,
                }
            }
        }
    }

    fn tick(&mut self, now_ms: u64) {
        while let Some(due) = self.connection.poll_timeout() {
            if due > now_ms {
                break;
            }
            self.connection.handle_timeout(due);
            self.drain();
        }
    }

    fn start(&mut self, dialect: Dialect, model: &str, now_ms: u64) {
        let params = BridgeParams {
            now_ms,
            created_unix: 1_700_000_000,
            id_seed: self.turns.len() as u64 + 1,
        };
        let turn = self.connection.start_turn(
            dialect,
            &request(dialect, model),
            &Config::default(),
            params,
        );
        self.turns.push((turn, TurnResponse::default()));
        self.drain();
    }

    /// The next message the core wrote, which must be there.
    fn next_written(&mut self, expected: &Value) -> Value {
        let written = self.written.get(self.unread).unwrap_or_else(|| {
            panic!(
                "the core wrote nothing where the recording has {}",
                expected
            )
        });
        self.unread += 1;
        written.clone()
    }
}

/// Replays `records` with every turn's request in `dialect`.
pub fn replay(records: &[Record], dialect: Dialect, split: Split) -> Outcome {
    let unknown_model = records.iter().any(|r| {
        r.to_agent
            && matches!(
                r.msg["method"].as_str(),
                Some("session/set_config_option" | "session/set_model")
            )
    });
    let model = if unknown_model {
        "no-such-model"
    } else {
        "default"
    };
    let mut driver = Driver {
        connection: Connection::new(config(), 0),
        written: Vec::new(),
        unread: 0,
        turns: Vec::new(),
        restarts: 0,
        closed: Vec::new(),
    };
    driver.drain();
    // Recorded client id → the core's id, for the agent's responses.
    let mut ids: HashMap<String, Value> = HashMap::new();
    let mut sessions_started = 0;
    let mut stopped = None;
    let mut cancelled = false;
    for record in records {
        driver.tick(record.t_ms);
        let msg = &record.msg;
        if let Some(stderr) = &record.exit_stderr {
            driver
                .connection
                .push_stderr(stderr.as_bytes(), record.t_ms)
                .unwrap();
            driver
                .connection
                .agent_exited(ExitStatus::Code(1), record.t_ms)
                .unwrap();
            driver.drain();
            stopped = Some("the agent exited".into());
            break;
        }
        if let Some(raw) = &record.raw {
            let mut line = raw.clone().into_bytes();
            line.push(b'\n');
            push(&mut driver, &line, split, record.t_ms);
            continue;
        }
        if record.to_agent {
            let expected = kind(msg);
            match expected.as_str() {
                "request session/new" => {
                    sessions_started += 1;
                    if driver.turns.len() < sessions_started {
                        driver.start(dialect, model, record.t_ms);
                    }
                }
                "request session/set_config_option" | "request session/set_model" => {
                    // The model is not in the agent's list: refused before anything.
                    stopped = Some("unknown model refused before set_* was sent".into());
                    break;
                }
                "request session/prompt" if cancelled => {
                    // The recorded client prompted the cancelled session again; the core
                    // retires it and prompts a fresh one instead.
                    driver.start(dialect, model, record.t_ms);
                    let next = driver.next_written(msg);
                    assert_eq!(
                        kind(&next),
                        "request session/new",
                        "a cancelled session is never reused"
                    );
                    stopped = Some("prompt after cancel goes to a fresh session".into());
                    break;
                }
                "notification session/cancel" => {
                    let (turn, _) = *driver.turns.last().expect("a turn to cancel");
                    driver.connection.client_gone(turn, record.t_ms);
                    driver.drain();
                    cancelled = true;
                }
                _ => {}
            }
            let written = driver.next_written(msg);
            assert_eq!(
                kind(&written),
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
            if let (Some(recorded), Some(ours)) = (msg.get("id"), written.get("id")) {
                if msg.get("method").is_some() {
                    ids.insert(recorded.to_string(), ours.clone());
                }
            }
        } else {
            let mut msg = msg.clone();
            if msg.get("method").is_none() {
                let recorded = msg["id"].to_string();
                msg["id"] = ids
                    .get(&recorded)
                    .cloned()
                    .unwrap_or_else(|| panic!("a response to an unsent id {recorded}"));
            }
            let mut line = serde_json::to_vec(&msg).unwrap();
            line.push(b'\n');
            push(&mut driver, &line, split, record.t_ms);
        }
    }
    if stopped.is_none() {
        assert_eq!(
            driver.unread,
            driver.written.len(),
            "the core wrote more than the recording: {:?}",
            &driver.written[driver.unread..]
        );
    }
    // What the adapter does last: the process exits.
    if !records.iter().any(|r| r.exit_stderr.is_some()) {
        let end = records.last().map_or(0, |r| r.t_ms) + 1;
        driver
            .connection
            .agent_exited(ExitStatus::Code(0), end)
            .unwrap();
        driver.drain();
    }
    Outcome {
        written: driver.written,
        turns: driver
            .turns
            .into_iter()
            .map(|(_, response)| response)
            .collect(),
        stopped,
        restarts: driver.restarts,
        closed: driver.closed,
    }
}

fn push(driver: &mut Driver, line: &[u8], split: Split, now_ms: u64) {
    match split {
        Split::Whole => {
            driver.connection.push_stdout(line, now_ms).unwrap();
            driver.drain();
        }
        Split::Bytes => {
            for byte in line.chunks(1) {
                driver.connection.push_stdout(byte, now_ms).unwrap();
                driver.drain();
            }
        }
        Split::At(_) | Split::FromEnd(_) => {
            let offset = match split {
                Split::At(offset) => offset.min(line.len()),
                _ => line.len().saturating_sub(match split {
                    Split::FromEnd(back) => back,
                    _ => 0,
                }),
            };
            let (head, tail) = line.split_at(offset);
            for piece in [head, tail] {
                if !piece.is_empty() {
                    driver.connection.push_stdout(piece, now_ms).unwrap();
                    driver.drain();
                }
            }
        }
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
