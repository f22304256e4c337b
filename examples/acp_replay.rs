//! Replays an ACP recording (`{"dir","t_ms","msg"}` a line: `tests/fixtures/acp/` and the
//! real captures) through an `acp::Connection` as the recorded client drove its agent, and
//! writes every input it made and every output that followed, as one JSON document:
//!
//! ```text
//! acp_replay chat-completions|responses|messages RECORDING.jsonl
//! ```
//!
//! `{"steps": [{"input": …, "transmit": "…", "outputs": […], "decisions": […],
//! "timeout": ms|null}, …]}`. An input is `{"op": "new"}`, `{"op": "start", "dialect",
//! "body", "nowMs", "created", "idSeed"}`, `{"op": "stdout"|"stderr", "data", "nowMs"}`,
//! `{"op": "exit", "code", "nowMs"}`, `{"op": "timeout", "nowMs"}` or `{"op": "gone",
//! "turn", "nowMs"}`; after each, the bytes written for the agent, each turn's outputs in
//! the order turns were started (`{"turn", "type": "head", "status", "contentType",
//! "retryable"}`, `{"turn", "type": "body", "data"}` with a turn's consecutive bodies
//! joined, `{"turn", "type": "end"}`), the restart reasons and the next deadline. The
//! connection has the defaults but `cwd` `/home/user/project` and `poolSize` 0 (sessions
//! on demand, as the recorded clients made them). The bindings' tests replay the inputs
//! and compare every output with this program's.

use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;

use agentwire::acp::{AcpConfig, Connection, Decision, TurnId};
use agentwire::bridge::{BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use serde_json::{Value, json};

const USAGE: &str = "usage: acp_replay chat-completions|responses|messages RECORDING.jsonl";

struct Replay {
    connection: Connection,
    dialect: (Dialect, &'static str),
    turns: Vec<TurnId>,
    /// Messages the connection wrote that no recorded client message was matched with yet.
    written: VecDeque<Value>,
    steps: Vec<Value>,
}

impl Replay {
    /// Records `input` (already applied) and everything that followed it.
    fn step(&mut self, input: Value) {
        let mut transmit = Vec::new();
        while let Some(bytes) = self.connection.poll_transmit() {
            transmit.extend_from_slice(bytes);
        }
        let text = String::from_utf8(transmit).expect("the connection writes UTF-8");
        for line in text.lines() {
            self.written
                .push_back(serde_json::from_str(line).expect("the connection writes JSON"));
        }
        let mut decisions = Vec::new();
        while let Some(decision) = self.connection.poll_decision() {
            let Decision::Restart { reason } = decision else {
                panic!("an unknown decision: {decision:?}")
            };
            decisions.push(reason);
        }
        let mut outputs: Vec<Value> = Vec::new();
        for &turn in &self.turns {
            while let Some(output) = self.connection.poll_output(turn) {
                let turn = turn.get();
                match output {
                    Output::Head(head) => outputs.push(json!({"turn": turn, "type": "head",
                        "status": head.status, "contentType": head.content_type, "retryable": head.retryable})),
                    Output::Body(bytes) => {
                        let text = std::str::from_utf8(bytes).expect("bodies are UTF-8");
                        match outputs.last_mut() {
                            Some(last) if last["type"] == "body" && last["turn"] == turn => {
                                let joined = format!("{}{text}", last["data"].as_str().unwrap());
                                last["data"] = joined.into();
                            }
                            _ => outputs.push(json!({"turn": turn, "type": "body", "data": text})),
                        }
                    }
                    Output::End => outputs.push(json!({"turn": turn, "type": "end"})),
                    other => panic!("a turn gave {other:?}"),
                }
            }
        }
        let timeout = self.connection.poll_timeout();
        self.steps
            .push(json!({"input": input, "transmit": text, "outputs": outputs,
            "decisions": decisions, "timeout": timeout}));
    }

    fn tick(&mut self, now_ms: u64) {
        while let Some(due) = self.connection.poll_timeout().filter(|&due| due <= now_ms) {
            self.connection.handle_timeout(due);
            self.step(json!({"op": "timeout", "nowMs": due}));
        }
    }

    fn start(&mut self, model: &str, now_ms: u64) {
        let ask = "What does notes.txt say?";
        let body = match self.dialect.0 {
            Dialect::Responses => json!({"model": model, "stream": true, "input": ask}),
            Dialect::Messages => json!({"model": model, "max_tokens": 1024, "stream": true,
                "messages": [{"role": "user", "content": ask}]}),
            _ => json!({"model": model, "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": ask}]}),
        }
        .to_string();
        let params = BridgeParams {
            now_ms,
            created_unix: 1_700_000_000,
            id_seed: self.turns.len() as u64 + 1,
        };
        let turn =
            self.connection
                .start_turn(self.dialect.0, body.as_bytes(), &Config::default(), params);
        self.turns.push(turn);
        self.step(
            json!({"op": "start", "dialect": self.dialect.1, "body": body, "nowMs": now_ms,
            "created": params.created_unix, "idSeed": params.id_seed}),
        );
    }

    fn push_stdout(&mut self, line: String, now_ms: u64) {
        let data = line + "\n";
        self.connection
            .push_stdout(data.as_bytes(), now_ms)
            .expect("the agent is running");
        self.step(json!({"op": "stdout", "data": data, "nowMs": now_ms}));
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dialect = match args.first().map(String::as_str) {
        Some("chat-completions") => (Dialect::ChatCompletions, "chat-completions"),
        Some("responses") => (Dialect::Responses, "responses"),
        Some("messages") => (Dialect::Messages, "messages"),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(Ok(text)) = args.get(1).map(std::fs::read_to_string) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let records: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a recording is JSON lines"))
        .collect();
    let config = AcpConfig {
        cwd: "/home/user/project".into(),
        pool_size: 0,
        ..AcpConfig::default()
    };
    let mut replay = Replay {
        connection: Connection::new(config, 0),
        dialect,
        turns: Vec::new(),
        written: VecDeque::new(),
        steps: Vec::new(),
    };
    replay.step(json!({"op": "new"}));
    // A recording that sets a model was made asking for one the agent does not list.
    let sets_model = records.iter().any(|r| {
        matches!(
            r["msg"]["method"].as_str(),
            Some("session/set_config_option" | "session/set_model")
        )
    });
    let model = if sets_model {
        "no-such-model"
    } else {
        "default"
    };
    // Recorded client request id → the connection's, for the agent's answers.
    let mut ids: HashMap<String, Value> = HashMap::new();
    let (mut sessions, mut cancelled, mut exited) = (0, false, false);
    for record in &records {
        let now_ms = record["t_ms"].as_u64().unwrap_or(0);
        replay.tick(now_ms);
        let msg = &record["msg"];
        if record["dir"] == "exit" {
            let stderr = record["stderr"].as_str().unwrap_or("");
            let connection = &mut replay.connection;
            connection.push_stderr(stderr.as_bytes(), now_ms).unwrap();
            replay.step(json!({"op": "stderr", "data": stderr, "nowMs": now_ms}));
            replay
                .connection
                .agent_exited(ExitStatus::Code(1), now_ms)
                .unwrap();
            replay.step(json!({"op": "exit", "code": 1, "nowMs": now_ms}));
            exited = true;
            break;
        }
        if let Some(raw) = record["raw"].as_str() {
            replay.push_stdout(raw.into(), now_ms);
            continue;
        }
        if record["dir"] != "client→agent" {
            let mut msg = msg.clone();
            if msg.get("method").is_none() {
                // An answer to a request the connection did not send here: nothing to push.
                let Some(ours) = ids.get(&msg["id"].to_string()) else {
                    continue;
                };
                msg["id"] = ours.clone();
            }
            replay.push_stdout(msg.to_string(), now_ms);
            continue;
        }
        match msg["method"].as_str() {
            Some("session/new") => {
                sessions += 1;
                if replay.turns.len() < sessions {
                    replay.start(model, now_ms);
                }
            }
            // The model is refused before anything is sent; a cancelled session is never
            // prompted again: where the connection departs from the recorded client, the
            // replay ends.
            Some("session/set_config_option" | "session/set_model") => break,
            Some("session/prompt") if cancelled => {
                replay.start(model, now_ms);
                break;
            }
            Some("session/cancel") => {
                let turn = *replay.turns.last().expect("a turn to cancel");
                replay.connection.client_gone(turn, now_ms);
                replay.step(json!({"op": "gone", "turn": turn.get(), "nowMs": now_ms}));
                cancelled = true;
            }
            _ => {}
        }
        let ours = replay.written.pop_front();
        if let (Some(id), true, Some(ours)) = (msg.get("id"), msg.get("method").is_some(), ours) {
            ids.insert(id.to_string(), ours["id"].clone());
        }
    }
    if !exited {
        let end = records
            .last()
            .map_or(0, |r| r["t_ms"].as_u64().unwrap_or(0))
            + 1;
        replay.tick(end);
        replay
            .connection
            .agent_exited(ExitStatus::Code(0), end)
            .unwrap();
        replay.step(json!({"op": "exit", "code": 0, "nowMs": end}));
    }
    println!("{}", json!({"steps": replay.steps}));
    ExitCode::SUCCESS
}
