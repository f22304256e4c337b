//! Drives an [`acp::Connection`](agentwire::acp::Connection) from a script of inputs and
//! writes everything it outputs, so that the C and Python bindings, running the same
//! script, can be compared with the Rust API byte for byte; and writes a recording's
//! replay as JSON steps (`replay`, see `steps`), which the JavaScript tests match.
//!
//! ```text
//! acp script [--api chat-completions|responses|messages] [--chunk N] RECORDING > SCRIPT
//! acp run SCRIPT > TRANSCRIPT
//! acp replay chat-completions|responses|messages RECORDING > STEPS
//! ```
//!
//! `script` replays an ACP recording (`{"dir","t_ms","msg"}` a line, as in
//! `tests/fixtures/acp/` and the real captures) against a live connection as the recorded
//! client drove its agent (see `tests/support/acp_replay.rs`), the agent's lines pushed in
//! N-byte chunks (default 4096), and writes the inputs it made, one a line (payloads
//! length-prefixed):
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

#[path = "../tests/support/acp_replay.rs"]
mod acp_replay;

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use acp_replay::{Input, Split, dialect_name, load, parse_dialect};
use agentwire::acp::{Connection, Decision, TurnId};
use agentwire::bridge::{BridgeParams, Dialect, Output};
use serde_json::{Value, json};

const USAGE: &str = "usage: acp script [--api chat-completions|responses|messages] [--chunk N] RECORDING\n       acp run SCRIPT\n       acp replay chat-completions|responses|messages RECORDING";

/// An input's script line, and the payload that follows it.
fn line(input: &Input) -> (String, Option<&[u8]>) {
    match input {
        Input::New { now, pool, cwd } => (format!("new {now} {pool} {cwd}"), None),
        Input::Start {
            dialect,
            body,
            params,
        } => (
            format!(
                "start {} {} {} {} {}",
                dialect_name(*dialect),
                params.now_ms,
                params.created_unix,
                params.id_seed,
                body.len()
            ),
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
                dialect: parse_dialect(fields.get(1).ok_or("start needs an api")?)?,
                params: BridgeParams {
                    now_ms: field(2)?,
                    created_unix: field(3)?,
                    id_seed: field(4)?,
                },
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
                turn: field(1)? as usize,
                now: field(2)?,
            },
            "timeout" => Input::Timeout { now: field(1)? },
            "shutdown" => Input::Shutdown { now: field(1)? },
            other => return Err(format!("unknown input {other:?}")),
        });
    }
    Ok(inputs)
}

/// A connection driven by a script's inputs, with everything it output.
struct Runner {
    connection: Option<Connection>,
    transcript: Vec<u8>,
    turns: Vec<TurnId>,
}

impl Runner {
    fn apply(&mut self, input: &Input) -> Result<(), String> {
        writeln!(self.transcript, "> {}", line(input).0).unwrap();
        if let Input::New { .. } = input {
            // Made by the input itself.
            let placeholder = || Connection::new(Default::default(), 0);
            self.connection.get_or_insert_with(placeholder);
        }
        let connection = self
            .connection
            .as_mut()
            .ok_or("the script starts with `new`")?;
        input.apply(connection, &mut self.turns)?;
        drain(connection, &mut self.transcript);
        Ok(())
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

/// Writes everything `connection` outputs to `out` in the transcript's form; returns the
/// bytes it wrote for the agent.
fn drain(connection: &mut Connection, out: &mut Vec<u8>) -> Vec<u8> {
    let mut transmitted = Vec::new();
    while let Some(bytes) = connection.poll_transmit() {
        writeln!(out, "transmit {}", bytes.len()).unwrap();
        out.extend_from_slice(bytes);
        out.push(b'\n');
        transmitted.extend_from_slice(bytes);
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
                Output::Respawn => writeln!(out, "turn {t} respawn").unwrap(),
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
    transmitted
}

/// The script of a recording (see the module's documentation).
fn script(api: &str, chunk: usize, recording: &str) -> Result<Vec<u8>, String> {
    let records = load(Path::new(recording))?;
    let (mut script, mut transcript) = (Vec::new(), Vec::new());
    let observe = |connection: &mut Connection, _: &[TurnId], input: &Input| {
        let (line, payload) = line(input);
        script.extend_from_slice(line.as_bytes());
        script.push(b'\n');
        if let Some(payload) = payload {
            script.extend_from_slice(payload);
            script.push(b'\n');
        }
        transcript.clear();
        drain(connection, &mut transcript)
    };
    acp_replay::replay(&records, parse_dialect(api)?, Split::Chunks(chunk), observe)?;
    Ok(script)
}

/// The steps of a recording's replay as JSON, each agent line pushed whole:
/// `{"steps": [{"input": …, "transmit": "…", "outputs": […], "decisions": […],
/// "timeout": ms|null}, …]}`. An input is `{"op": "new"}`, `{"op": "start", "dialect",
/// "body", "nowMs", "created", "idSeed"}`, `{"op": "stdout"|"stderr", "data", "nowMs"}`,
/// `{"op": "exit", "code", "nowMs"}`, `{"op": "timeout", "nowMs"}` or `{"op": "gone",
/// "turn", "nowMs"}`; after each come the bytes written for the agent, each turn's outputs
/// in the order turns were started (`{"turn", "type": "head", "status", "contentType",
/// "retryable"}`, `{"turn", "type": "body", "data"}` with a turn's consecutive bodies
/// joined, `{"turn", "type": "end"}`), the restart reasons and the next deadline.
fn steps(dialect: Dialect, recording: &str) -> Result<Vec<u8>, String> {
    let records = load(Path::new(recording))?;
    let mut steps = Vec::new();
    let observe = |connection: &mut Connection, turns: &[TurnId], input: &Input| {
        let mut transmit = Vec::new();
        while let Some(bytes) = connection.poll_transmit() {
            transmit.extend_from_slice(bytes);
        }
        let mut decisions = Vec::new();
        while let Some(decision) = connection.poll_decision() {
            let Decision::Restart { reason } = decision else {
                panic!("an unknown decision: {decision:?}")
            };
            decisions.push(reason);
        }
        let mut outputs: Vec<Value> = Vec::new();
        for &turn in turns {
            while let Some(output) = connection.poll_output(turn) {
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
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let input = match input {
            Input::New { .. } => json!({"op": "new"}),
            Input::Start {
                dialect,
                body,
                params,
            } => json!({"op": "start", "dialect": dialect_name(*dialect), "body": text(body),
                "nowMs": params.now_ms, "created": params.created_unix, "idSeed": params.id_seed}),
            Input::Stdout { now, bytes } => {
                json!({"op": "stdout", "data": text(bytes), "nowMs": now})
            }
            Input::Stderr { now, bytes } => {
                json!({"op": "stderr", "data": text(bytes), "nowMs": now})
            }
            Input::Exit { now, code } => json!({"op": "exit", "code": code, "nowMs": now}),
            Input::Gone { turn, now } => {
                json!({"op": "gone", "turn": turns[*turn].get(), "nowMs": now})
            }
            Input::Timeout { now } => json!({"op": "timeout", "nowMs": now}),
            Input::Shutdown { now } => json!({"op": "shutdown", "nowMs": now}),
        };
        steps.push(
            json!({"input": input, "transmit": text(&transmit), "outputs": outputs,
            "decisions": decisions, "timeout": connection.poll_timeout()}),
        );
        transmit
    };
    acp_replay::replay(&records, dialect, Split::Whole, observe)?;
    Ok(format!("{}\n", json!({ "steps": steps })).into_bytes())
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
                let mut runner = Runner {
                    connection: None,
                    transcript: Vec::new(),
                    turns: Vec::new(),
                };
                for input in &inputs {
                    runner.apply(input)?;
                }
                Ok(runner.finish())
            }),
        Some("replay") if args.len() == 3 => {
            parse_dialect(&args[1]).and_then(|dialect| steps(dialect, &args[2]))
        }
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
