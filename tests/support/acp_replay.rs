//! Replays an ACP recording (`{"dir","t_ms","msg"}` a line, as in the real captures and
//! `tests/fixtures/acp/`) through an `acp::Connection` as the recorded client drove its
//! agent: a turn starts where the client opened a session, the client hangs up where it
//! cancelled, the agent's lines are pushed in a chosen chunking with the ids the connection
//! chose, deadlines that fall due between records are handled, and the agent exits at the
//! end. The one driver of `tests/acp.rs` and of the `acp` example (its scripts for the C
//! and Python tests, its JSON steps for the JavaScript tests), each of which observes the
//! connection after every input in its own way.
// Each user takes the part it needs.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use agentwire::acp::{AcpConfig, Connection, TurnId};
use agentwire::bridge::{BridgeParams, Config, Dialect};
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

/// Reads a recording.
pub fn load(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let record: Value = serde_json::from_str(line)
                .map_err(|e| format!("{}: bad record {line}: {e}", path.display()))?;
            Ok(Record {
                to_agent: record["dir"] == "client→agent",
                raw: record["raw"].as_str().map(Into::into),
                exit_stderr: (record["dir"] == "exit")
                    .then(|| record["stderr"].as_str().unwrap_or("").into()),
                t_ms: record["t_ms"].as_u64().unwrap_or(0),
                msg: record["msg"].clone(),
            })
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

/// The dialects a replay speaks, by the names the examples and bindings use.
const DIALECTS: [(Dialect, &str); 3] = [
    (Dialect::ChatCompletions, "chat-completions"),
    (Dialect::Responses, "responses"),
    (Dialect::Messages, "messages"),
];

pub fn parse_dialect(name: &str) -> Result<Dialect, String> {
    DIALECTS
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(dialect, _)| *dialect)
        .ok_or_else(|| format!("unknown dialect {name:?}"))
}

pub fn dialect_name(dialect: Dialect) -> &'static str {
    DIALECTS
        .iter()
        .find(|(d, _)| *d == dialect)
        .map_or("?", |(_, name)| name)
}

/// How each agent line is cut into pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Whole,
    /// Pieces of this many bytes (the last one shorter).
    Chunks(usize),
    /// At this offset (clamped to the line's length).
    At(usize),
    /// This many bytes before the line's end (its newline included).
    FromEnd(usize),
}

impl Split {
    fn pieces(self, line: &[u8]) -> Vec<&[u8]> {
        let offset = match self {
            Split::Whole => return vec![line],
            Split::Chunks(n) => return line.chunks(n.max(1)).collect(),
            Split::At(offset) => offset.min(line.len()),
            Split::FromEnd(back) => line.len().saturating_sub(back),
        };
        let (head, tail) = line.split_at(offset);
        [head, tail].into_iter().filter(|p| !p.is_empty()).collect()
    }
}

/// One input to a connection.
#[derive(Debug, Clone)]
pub enum Input {
    /// A connection with the defaults but its pool size and working directory.
    New {
        now: u64,
        pool: usize,
        cwd: String,
    },
    Start {
        dialect: Dialect,
        body: Vec<u8>,
        params: BridgeParams,
    },
    Stdout {
        now: u64,
        bytes: Vec<u8>,
    },
    Stderr {
        now: u64,
        bytes: Vec<u8>,
    },
    Exit {
        now: u64,
        code: i32,
    },
    /// The client of the `turn`-th turn started (from 0) hung up.
    Gone {
        turn: usize,
        now: u64,
    },
    Timeout {
        now: u64,
    },
    Shutdown {
        now: u64,
    },
}

impl Input {
    /// Makes this input on `connection`, whose turns so far are `turns`.
    pub fn apply(
        &self,
        connection: &mut Connection,
        turns: &mut Vec<TurnId>,
    ) -> Result<(), String> {
        match self {
            Input::New { now, pool, cwd } => {
                let config = AcpConfig {
                    cwd: cwd.clone(),
                    pool_size: *pool,
                    ..AcpConfig::default()
                };
                *connection = Connection::new(config, *now);
            }
            Input::Start {
                dialect,
                body,
                params,
            } => turns.push(connection.start_turn(*dialect, body, &Config::default(), *params)),
            Input::Stdout { now, bytes } => {
                connection
                    .push_stdout(bytes, *now)
                    .map_err(|e| e.to_string())?;
            }
            Input::Stderr { now, bytes } => {
                connection
                    .push_stderr(bytes, *now)
                    .map_err(|e| e.to_string())?;
            }
            Input::Exit { now, code } => connection
                .agent_exited(ExitStatus::Code(*code), *now)
                .map_err(|e| e.to_string())?,
            Input::Gone { turn, now } => {
                let turn = *turns.get(*turn).ok_or("gone: an unknown turn")?;
                connection.client_gone(turn, *now);
            }
            Input::Timeout { now } => connection.handle_timeout(*now),
            Input::Shutdown { now } => connection.shutdown(*now),
        }
        Ok(())
    }
}

/// What a replay wrote for the agent and where it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    /// Every message the connection wrote, parsed, but `session/close` (which the recorded
    /// agents offer and the recorded clients never sent).
    pub written: Vec<Value>,
    /// The recorded client message each of the first `written` took the place of: indices
    /// into the records.
    pub matched: Vec<usize>,
    /// The sessions the connection closed, in order.
    pub closed: Vec<String>,
    /// Where the replay stopped early (the agent exited, or the connection's policy departs
    /// from the recorded client's), if it did.
    pub stopped: Option<&'static str>,
}

pub const PROMPT_AFTER_CANCEL: &str = "prompt after cancel goes to a fresh session";

struct Driver<O> {
    connection: Connection,
    turns: Vec<TurnId>,
    observe: O,
    replayed: Replayed,
}

impl<O: FnMut(&mut Connection, &[TurnId], &Input) -> Vec<u8>> Driver<O> {
    fn input(&mut self, input: Input) -> Result<(), String> {
        input.apply(&mut self.connection, &mut self.turns)?;
        let bytes = (self.observe)(&mut self.connection, &self.turns, &input);
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let msg: Value =
                serde_json::from_slice(line).map_err(|e| format!("the connection wrote {e}"))?;
            if msg["method"] == "session/close" {
                let session = msg["params"]["sessionId"]
                    .as_str()
                    .ok_or("a close without a session")?;
                self.replayed.closed.push(session.to_owned());
            } else {
                self.replayed.written.push(msg);
            }
        }
        Ok(())
    }

    fn tick(&mut self, now: u64) -> Result<(), String> {
        while let Some(due) = self.connection.poll_timeout().filter(|&due| due <= now) {
            self.input(Input::Timeout { now: due })?;
        }
        Ok(())
    }

    fn push(&mut self, line: &[u8], split: Split, now: u64) -> Result<(), String> {
        for piece in split.pieces(line) {
            let bytes = piece.to_vec();
            self.input(Input::Stdout { now, bytes })?;
        }
        Ok(())
    }

    fn start(&mut self, dialect: Dialect, model: &str, now_ms: u64) -> Result<(), String> {
        let params = BridgeParams {
            now_ms,
            created_unix: 1_700_000_000,
            id_seed: self.turns.len() as u64 + 1,
        };
        let body = request(dialect, model);
        self.input(Input::Start {
            dialect,
            body,
            params,
        })
    }
}

/// Replays `records` with every turn's request in `dialect` and the agent's lines cut as
/// `split` says, calling `observe` after each input with the connection, its turns and the
/// input; `observe` takes everything the connection output and returns the bytes it wrote
/// for the agent (every `poll_transmit`).
pub fn replay<O>(
    records: &[Record],
    dialect: Dialect,
    split: Split,
    observe: O,
) -> Result<Replayed, String>
where
    O: FnMut(&mut Connection, &[TurnId], &Input) -> Vec<u8>,
{
    // A recording that sets a model was made asking for one the agent does not list.
    let sets_model = records.iter().any(|r| {
        r.to_agent
            && matches!(
                r.msg["method"].as_str(),
                Some("session/set_config_option" | "session/set_model")
            )
    });
    let model = if sets_model {
        "no-such-model"
    } else {
        "default"
    };
    let mut driver = Driver {
        // Replaced by the first input.
        connection: Connection::new(AcpConfig::default(), 0),
        turns: Vec::new(),
        observe,
        replayed: Replayed {
            written: Vec::new(),
            matched: Vec::new(),
            closed: Vec::new(),
            stopped: None,
        },
    };
    // Sessions on demand, as the recorded clients made them.
    driver.input(Input::New {
        now: 0,
        pool: 0,
        cwd: "/home/user/project".into(),
    })?;
    // Recorded client id → the connection's id, for the agent's answers.
    let mut ids: HashMap<String, Value> = HashMap::new();
    let (mut sessions, mut cancelled) = (0, false);
    for (index, record) in records.iter().enumerate() {
        driver.tick(record.t_ms)?;
        let now = record.t_ms;
        let msg = &record.msg;
        if let Some(stderr) = &record.exit_stderr {
            let bytes = stderr.as_bytes().to_vec();
            driver.input(Input::Stderr { now, bytes })?;
            driver.input(Input::Exit { now, code: 1 })?;
            driver.replayed.stopped = Some("the agent exited");
            return Ok(driver.replayed);
        }
        if let Some(raw) = &record.raw {
            driver.push(format!("{raw}\n").as_bytes(), split, now)?;
            continue;
        }
        if !record.to_agent {
            let mut msg = msg.clone();
            if msg.get("method").is_none() {
                let recorded = msg["id"].to_string();
                msg["id"] = ids
                    .get(&recorded)
                    .cloned()
                    .ok_or_else(|| format!("a response to an unsent id {recorded}"))?;
            }
            let mut line = serde_json::to_vec(&msg).unwrap();
            line.push(b'\n');
            driver.push(&line, split, now)?;
            continue;
        }
        match kind(msg).as_str() {
            "request session/new" => {
                sessions += 1;
                if driver.turns.len() < sessions {
                    driver.start(dialect, model, now)?;
                }
            }
            "request session/set_config_option" | "request session/set_model" => {
                // The model is not in the agent's list: refused before anything.
                driver.replayed.stopped = Some("unknown model refused before set_* was sent");
                break;
            }
            "request session/prompt" if cancelled => {
                // The recorded client prompted the cancelled session again; the connection
                // retires it and prompts a fresh one instead.
                driver.start(dialect, model, now)?;
                driver.replayed.stopped = Some(PROMPT_AFTER_CANCEL);
                break;
            }
            "notification session/cancel" => {
                let turn = driver
                    .turns
                    .len()
                    .checked_sub(1)
                    .ok_or("a cancel without a turn")?;
                driver.input(Input::Gone { turn, now })?;
                cancelled = true;
            }
            _ => {}
        }
        let replayed = &mut driver.replayed;
        let written = replayed
            .written
            .get(replayed.matched.len())
            .ok_or_else(|| format!("the connection wrote nothing where the recording has {msg}"))?;
        replayed.matched.push(index);
        if let (Some(recorded), Some(ours), Some(_)) =
            (msg.get("id"), written.get("id"), msg.get("method"))
        {
            ids.insert(recorded.to_string(), ours.clone());
        }
    }
    // What the adapter does last: the process exits.
    let end = records.last().map_or(0, |r| r.t_ms) + 1;
    driver.tick(end)?;
    driver.input(Input::Exit { now: end, code: 0 })?;
    Ok(driver.replayed)
}
