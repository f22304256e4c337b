//! Drives an [`acp::Connection`](agentwire::acp::Connection) from a script of inputs and
//! writes everything it outputs, so that the C and Python bindings, running the same
//! script, can be compared with the Rust API byte for byte.
//!
//! ```text
//! acp script [--api chat-completions|responses|messages] [--chunk N] RECORDING > SCRIPT
//! acp run SCRIPT > TRANSCRIPT
//! ```
//!
//! `script` replays an ACP recording (`{"dir","t_ms","msg"}` a line, as in
//! `tests/fixtures/acp/` and the real captures) against a live connection: a turn starts
//! where the recorded client opened a session, the client hangs up where it cancelled, the
//! agent's lines are pushed in N-byte chunks (default 4096) with the ids the connection
//! chose, deadlines that fall due between records are handled, and the agent exits at the
//! end. It writes the inputs it made, one a line (payloads length-prefixed):
//!
//! ```text
//! new NOW POOL_SIZE CWD                   the connection (its config: pool size and cwd)
//! start API NOW CREATED SEED LEN\nBODY\n  a request of dialect API; turns count from 0
//! stdout NOW LEN\nBYTES\n                 agent stdout
//! stderr NOW LEN\nBYTES\n                 agent stderr
//! exit NOW CODE                           the agent exited
//! gone TURN NOW                           the turn's client hung up
//! timeout NOW                             a deadline passed
//! shutdown NOW                            the program shuts down
//! ```
//!
//! `run` makes those inputs and, after each, writes `> ` and the input's line, then
//! drains the connection: `transmit LEN\nBYTES\n` for every `poll_transmit`,
//! `decision restart REASON` for every `poll_decision`, and for every turn `poll_ready`
//! names its outputs until none (`turn T head STATUS CONTENT_TYPE RETRYABLE` with
//! RETRYABLE `-`, `true` or `false`; `turn T body LEN\nBYTES\n`; `turn T end`); then
//! `state ready=0|1 dead=0|1 active=N malformed=N timeout=MS|none`. Last come the models:
//! `models N` (or `models none`), `model ID` for each, and `current ID` (or `current
//! none`).

use std::collections::HashMap;
use std::io::{self, Write};
use std::process::ExitCode;

use agentwire::acp::{AcpConfig, Connection, Decision, TurnId};
use agentwire::bridge::{BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use serde_json::{Value, json};

const USAGE: &str = "usage: acp script [--api chat-completions|responses|messages] [--chunk N] RECORDING\n       acp run SCRIPT";

/// One input of a script.
enum Input {
    New {
        now: u64,
        pool: usize,
        cwd: String,
    },
    Start {
        api: String,
        now: u64,
        created: u64,
        seed: u64,
        body: Vec<u8>,
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
    Gone {
        turn: u64,
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
    /// The script line, and the payload that follows it.
    fn line(&self) -> (String, Option<&[u8]>) {
        match self {
            Input::New { now, pool, cwd } => (format!("new {now} {pool} {cwd}"), None),
            Input::Start {
                api,
                now,
                created,
                seed,
                body,
            } => (
                format!("start {api} {now} {created} {seed} {}", body.len()),
                Some(body),
            ),
            Input::Stdout { now, bytes } => (format!("stdout {now} {}", bytes.len()), Some(bytes)),
            Input::Stderr { now, bytes } => (format!("stderr {now} {}", bytes.len()), Some(bytes)),
            Input::Exit { now, code } => (format!("exit {now} {code}"), None),
            Input::Gone { turn, now } => (format!("gone {turn} {now}"), None),
            Input::Timeout { now } => (format!("timeout {now}"), None),
            Input::Shutdown { now } => (format!("shutdown {now}"), None),
        }
    }

    fn write_to(&self, out: &mut Vec<u8>) {
        let (line, payload) = self.line();
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        if let Some(payload) = payload {
            out.extend_from_slice(payload);
            out.push(b'\n');
        }
    }
}

fn parse_dialect(name: &str) -> Result<Dialect, String> {
    match name {
        "chat-completions" => Ok(Dialect::ChatCompletions),
        "responses" => Ok(Dialect::Responses),
        "messages" => Ok(Dialect::Messages),
        other => Err(format!("unknown dialect {other:?}")),
    }
}

/// Parses a script into its inputs.
fn parse_script(mut script: &[u8]) -> Result<Vec<Input>, String> {
    let mut inputs = Vec::new();
    while !script.is_empty() {
        let end = script
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("a script line without its newline")?;
        let line = std::str::from_utf8(&script[..end]).map_err(|e| e.to_string())?;
        script = &script[end + 1..];
        let words: Vec<&str> = line.splitn(3, ' ').collect();
        let word = |i: usize| words.get(i).copied().ok_or(format!("short line {line:?}"));
        let fields: Vec<&str> = line.split(' ').collect();
        let field = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .ok_or(format!("short line {line:?}"))?
                .parse()
                .map_err(|e| format!("{line:?}: {e}"))
        };
        let mut payload = |len: u64| -> Result<Vec<u8>, String> {
            let len = len as usize;
            if script.len() < len + 1 || script[len] != b'\n' {
                return Err(format!("{line:?}: the payload is cut short"));
            }
            let bytes = script[..len].to_vec();
            script = &script[len + 1..];
            Ok(bytes)
        };
        inputs.push(match word(0)? {
            "new" => Input::New {
                now: field(1)?,
                pool: field(2)? as usize,
                cwd: line.splitn(4, ' ').nth(3).ok_or("new needs a cwd")?.into(),
            },
            "start" => Input::Start {
                api: fields.get(1).ok_or("start needs an api")?.to_string(),
                now: field(2)?,
                created: field(3)?,
                seed: field(4)?,
                body: payload(field(5)?)?,
            },
            "stdout" => Input::Stdout {
                now: field(1)?,
                bytes: payload(field(2)?)?,
            },
            "stderr" => Input::Stderr {
                now: field(1)?,
                bytes: payload(field(2)?)?,
            },
            "exit" => Input::Exit {
                now: field(1)?,
                code: word(2)?.parse().map_err(|e| format!("{e}"))?,
            },
            "gone" => Input::Gone {
                turn: field(1)?,
                now: field(2)?,
            },
            "timeout" => Input::Timeout { now: field(1)? },
            "shutdown" => Input::Shutdown { now: field(1)? },
            other => return Err(format!("unknown input {other:?}")),
        });
    }
    Ok(inputs)
}

/// A connection driven by inputs, with what it wrote.
struct Runner {
    connection: Option<Connection>,
    transcript: Vec<u8>,
    /// Every message the connection wrote to the agent, parsed.
    written: Vec<Value>,
    turns: Vec<TurnId>,
}

impl Runner {
    fn new() -> Runner {
        Runner {
            connection: None,
            transcript: Vec::new(),
            written: Vec::new(),
            turns: Vec::new(),
        }
    }

    fn connection(&mut self) -> &mut Connection {
        self.connection
            .as_mut()
            .expect("the script starts with `new`")
    }

    fn apply(&mut self, input: &Input) -> Result<(), String> {
        let (line, _) = input.line();
        writeln!(self.transcript, "> {line}").unwrap();
        match input {
            Input::New { now, pool, cwd } => {
                let config = AcpConfig {
                    cwd: cwd.clone(),
                    pool_size: *pool,
                    ..AcpConfig::default()
                };
                self.connection = Some(Connection::new(config, *now));
            }
            Input::Start {
                api,
                now,
                created,
                seed,
                body,
            } => {
                let params = BridgeParams {
                    now_ms: *now,
                    created_unix: *created,
                    id_seed: *seed,
                };
                let dialect = parse_dialect(api)?;
                let turn = self
                    .connection()
                    .start_turn(dialect, body, &Config::default(), params);
                self.turns.push(turn);
            }
            Input::Stdout { now, bytes } => {
                self.connection()
                    .push_stdout(bytes, *now)
                    .map_err(|e| e.to_string())?;
            }
            Input::Stderr { now, bytes } => {
                self.connection()
                    .push_stderr(bytes, *now)
                    .map_err(|e| e.to_string())?;
            }
            Input::Exit { now, code } => {
                self.connection()
                    .agent_exited(ExitStatus::Code(*code), *now)
                    .map_err(|e| e.to_string())?;
            }
            Input::Gone { turn, now } => {
                let turn = *self
                    .turns
                    .get(*turn as usize)
                    .ok_or("gone: an unknown turn")?;
                self.connection().client_gone(turn, *now);
            }
            Input::Timeout { now } => self.connection().handle_timeout(*now),
            Input::Shutdown { now } => self.connection().shutdown(*now),
        }
        self.drain();
        Ok(())
    }

    fn drain(&mut self) {
        let connection = self
            .connection
            .as_mut()
            .expect("the script starts with `new`");
        let out = &mut self.transcript;
        while let Some(bytes) = connection.poll_transmit() {
            writeln!(out, "transmit {}", bytes.len()).unwrap();
            out.extend_from_slice(bytes);
            out.push(b'\n');
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                self.written
                    .push(serde_json::from_slice(line).expect("the core writes JSON"));
            }
        }
        while let Some(decision) = connection.poll_decision() {
            match decision {
                Decision::Restart { reason } => writeln!(out, "decision restart {reason}").unwrap(),
                other => writeln!(out, "decision {other:?}").unwrap(),
            }
        }
        while let Some(turn) = connection.poll_ready() {
            let t = turn.get();
            while let Some(output) = connection.poll_output(turn) {
                match output {
                    Output::Head(head) => {
                        let retryable = head
                            .retryable
                            .map_or("-", |r| if r { "true" } else { "false" });
                        writeln!(
                            out,
                            "turn {t} head {} {} {retryable}",
                            head.status, head.content_type
                        )
                        .unwrap();
                    }
                    Output::Body(bytes) => {
                        writeln!(out, "turn {t} body {}", bytes.len()).unwrap();
                        out.extend_from_slice(bytes);
                        out.push(b'\n');
                    }
                    Output::StopAgent => writeln!(out, "turn {t} stop-agent").unwrap(),
                    Output::End => writeln!(out, "turn {t} end").unwrap(),
                }
            }
        }
        let timeout = connection
            .poll_timeout()
            .map_or("none".into(), |t| t.to_string());
        writeln!(
            out,
            "state ready={} dead={} active={} malformed={} timeout={timeout}",
            u8::from(connection.is_ready()),
            u8::from(connection.is_dead()),
            connection.active_turns(),
            connection.malformed_lines(),
        )
        .unwrap();
    }

    fn finish(mut self) -> Vec<u8> {
        if let Some(connection) = &self.connection {
            let out = &mut self.transcript;
            match connection.models() {
                Some(models) => {
                    writeln!(out, "models {}", models.len()).unwrap();
                    for model in models {
                        writeln!(out, "model {model}").unwrap();
                    }
                }
                None => writeln!(out, "models none").unwrap(),
            }
            writeln!(
                out,
                "current {}",
                connection.current_model().unwrap_or("none")
            )
            .unwrap();
        }
        self.transcript
    }
}

/// The request of every turn: what the recorded client asked.
fn request(dialect: Dialect, model: &str) -> Vec<u8> {
    let ask = "What does notes.txt say?";
    let body = match dialect {
        Dialect::Responses => json!({"model": model, "stream": true, "input": ask}),
        Dialect::Messages => json!({"model": model, "max_tokens": 1024, "stream": true,
            "messages": [{"role": "user", "content": ask}]}),
        _ => json!({"model": model, "stream": true,
            "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": ask}]}),
    };
    serde_json::to_vec(&body).unwrap()
}

/// A message's kind: `request <method>`, `notification <method>`, or `answer`.
fn kind(msg: &Value) -> String {
    match (
        msg.get("id").is_some_and(|id| !id.is_null()),
        msg["method"].as_str(),
    ) {
        (true, Some(method)) => format!("request {method}"),
        (false, Some(method)) => format!("notification {method}"),
        _ => "answer".into(),
    }
}

/// A replay that writes the inputs it makes as a script.
struct Recorder {
    runner: Runner,
    script: Vec<u8>,
    chunk: usize,
}

impl Recorder {
    fn input(&mut self, input: Input) -> Result<(), String> {
        input.write_to(&mut self.script);
        self.runner.apply(&input)
    }

    /// Agent stdout, in chunks.
    fn push(&mut self, line: &[u8], now: u64) -> Result<(), String> {
        for piece in line.chunks(self.chunk.max(1)) {
            self.input(Input::Stdout {
                now,
                bytes: piece.to_vec(),
            })?;
        }
        Ok(())
    }
}

/// The script of a recording (see the module's documentation).
fn script(api: &str, chunk: usize, recording: &str) -> Result<Vec<u8>, String> {
    let text = std::fs::read_to_string(recording).map_err(|e| format!("{recording}: {e}"))?;
    let records: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{recording}: {e}")))
        .collect::<Result<_, _>>()?;
    let dialect = parse_dialect(api)?;
    let to_agent = |r: &Value| r["dir"] == "client→agent";
    // A recording that sets a model asked for one the agent lacks.
    let sets_model = records.iter().any(|r| {
        to_agent(r)
            && matches!(
                r["msg"]["method"].as_str(),
                Some("session/set_config_option" | "session/set_model")
            )
    });
    let model = if sets_model {
        "no-such-model"
    } else {
        "default"
    };
    let mut recorder = Recorder {
        runner: Runner::new(),
        script: Vec::new(),
        chunk,
    };
    recorder.input(Input::New {
        now: 0,
        pool: 0,
        cwd: "/home/user/project".into(),
    })?;
    // Recorded client id → the connection's id, for the agent's answers.
    let mut ids: HashMap<String, Value> = HashMap::new();
    let (mut sessions, mut unread, mut cancelled, mut exited, mut last) = (0, 0, false, false, 0);
    for record in &records {
        let now = record["t_ms"].as_u64().unwrap_or(0);
        last = now;
        while let Some(due) = recorder
            .runner
            .connection()
            .poll_timeout()
            .filter(|&due| due <= now)
        {
            recorder.input(Input::Timeout { now: due })?;
        }
        let msg = &record["msg"];
        if record["dir"] == "exit" {
            let bytes = record["stderr"].as_str().unwrap_or("").as_bytes().to_vec();
            recorder.input(Input::Stderr { now, bytes })?;
            recorder.input(Input::Exit { now, code: 1 })?;
            exited = true;
            break;
        }
        if let Some(raw) = record["raw"].as_str() {
            recorder.push(format!("{raw}\n").as_bytes(), now)?;
            continue;
        }
        if !to_agent(record) {
            let mut msg = msg.clone();
            if msg.get("method").is_none() {
                let Some(ours) = ids.get(&msg["id"].to_string()) else {
                    break;
                };
                msg["id"] = ours.clone();
            }
            let mut line = serde_json::to_vec(&msg).unwrap();
            line.push(b'\n');
            recorder.push(&line, now)?;
            continue;
        }
        let start = |recorder: &mut Recorder| {
            let seed = recorder.runner.turns.len() as u64 + 1;
            let body = request(dialect, model);
            recorder.input(Input::Start {
                api: api.into(),
                now,
                created: 1_700_000_000,
                seed,
                body,
            })
        };
        match kind(msg).as_str() {
            "request session/new" => {
                sessions += 1;
                if recorder.runner.turns.len() < sessions {
                    start(&mut recorder)?;
                }
            }
            // Where the core departs from the recorded client (an unknown model refused
            // before anything is sent; a cancelled session never prompted again), the
            // recording has nothing more to say.
            "request session/set_config_option" | "request session/set_model" => break,
            "request session/prompt" if cancelled => {
                start(&mut recorder)?;
                break;
            }
            "notification session/cancel" => {
                let turn = recorder
                    .runner
                    .turns
                    .len()
                    .checked_sub(1)
                    .ok_or("a cancel without a turn")?;
                recorder.input(Input::Gone {
                    turn: turn as u64,
                    now,
                })?;
                cancelled = true;
            }
            _ => {}
        }
        let Some(written) = recorder.runner.written.get(unread).cloned() else {
            break;
        };
        unread += 1;
        if let (Some(recorded), Some(ours), Some(_)) =
            (msg.get("id"), written.get("id"), msg.get("method"))
        {
            ids.insert(recorded.to_string(), ours.clone());
        }
    }
    if !exited {
        recorder.input(Input::Exit {
            now: last + 1,
            code: 0,
        })?;
    }
    Ok(recorder.script)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("script") => {
            let (mut api, mut chunk, mut recording) = ("chat-completions".to_string(), 4096, None);
            let mut it = args[1..].iter();
            let mut parsed = Ok(());
            while let Some(arg) = it.next() {
                match arg.as_str() {
                    "--api" => api = it.next().cloned().unwrap_or_default(),
                    "--chunk" => match it.next().and_then(|n| n.parse().ok()) {
                        Some(n) => chunk = n,
                        None => parsed = Err("--chunk needs a number".to_string()),
                    },
                    _ => recording = Some(arg.clone()),
                }
            }
            parsed
                .and_then(|()| recording.ok_or_else(|| USAGE.to_string()))
                .and_then(|recording| script(&api, chunk, &recording))
        }
        Some("run") if args.len() == 2 => std::fs::read(&args[1])
            .map_err(|e| format!("{}: {e}", args[1]))
            .and_then(|script| parse_script(&script))
            .and_then(|inputs| {
                let mut runner = Runner::new();
                for input in &inputs {
                    runner.apply(input)?;
                }
                Ok(runner.finish())
            }),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(bytes) => {
            io::stdout().write_all(&bytes).unwrap();
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("acp: {message}");
            ExitCode::FAILURE
        }
    }
}
