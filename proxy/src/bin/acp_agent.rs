//! A stand-in ACP agent: speaks the Agent Client Protocol on stdio, playing the agent's
//! side of a recording (the `{"dir": …, "msg" | "raw" | "stderr": …}` JSONL of the ACP
//! fixtures) for as many sessions and prompts as arrive, interleaved on the one pipe.
//!
//! ```text
//! acp_agent --recording FILE [--delay-ms N] [--once FILE] [--models IDS|@FILE]
//!           [--models-shape config|table] [--session-close] [--version] [other args…]
//! ```
//!
//! - `initialize`, `session/new`, `session/set_model` and `session/set_config_option`
//!   get the recording's answers (its error too: `-32000` for an agent not logged in);
//!   each session gets a fresh id (`s-1`, `s-2`, …).
//! - `session/prompt` plays what the recording's agent wrote for one recorded prompt: the
//!   one whose text the incoming prompt contains, else the next in turn. Its session's
//!   updates and requests, `raw` lines (malformed output) and `exit` records (stderr,
//!   then exit 1 mid-turn) are written in order, `--delay-ms` apart (default 5), the
//!   prompt's answer last. Prompts on different sessions play at once, line by line.
//! - `session/cancel` ends that session's prompt at once with `stopReason: cancelled`.
//! - `--once FILE`: the first prompt over every run logged in `AGENTWIRE_REPLAY_LOG` plays
//!   FILE's first prompt instead (a crash on the first process only, say).
//! - `--models a,b`: every `session/new` answer offers these models (the first current)
//!   instead of the recording's, as a `model` config option (`--models-shape config`,
//!   the default) or as the older `models` table (`--models-shape table`);
//!   `--models @FILE` reads the list from FILE at every `session/new`, so that a test
//!   can change it between processes.
//! - `--session-close`: `initialize` advertises `sessionCapabilities.close`, and
//!   `session/close` is answered `{}`.
//! - End of stdin ends the process.
//!
//! With env `AGENTWIRE_REPLAY_LOG=FILE`, each process appends
//! `{"event":"start","pid":…,"argv":[…]}` when it starts,
//! `{"event":"prompt","pid":…,"session":…,"prompt":…}` per prompt and
//! `{"event":"answered","pid":…,"session":…}` when a prompt's answer is written and
//! `{"event":"cancel","pid":…,"session":…}` per cancellation and
//! `{"event":"close","pid":…,"session":…}` per `session/close`.
//!
//! With env `AGENTWIRE_REPLAY_TIMES=FILE`, each prompt's first `agent_message_chunk`
//! appends `{"pid":…,"session":…,"first_chunk_unix_ns":…}`: when the process began writing
//! that line, on the system clock every process shares (benches/proxy.sh measures the
//! proxies' added latency against it).

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One line of a recording.
#[derive(Debug, Clone)]
enum Record {
    ToAgent(Value),
    FromAgent(Value),
    /// A line written as it is (not JSON-RPC, or not JSON at all).
    Raw(String),
    /// The agent exits, after writing this to stderr.
    Exit(String),
}

/// One recorded prompt: its text, its request id and session, and what the agent wrote
/// for it.
#[derive(Debug, Clone)]
struct PromptScript {
    text: String,
    id: Value,
    session: Value,
    lines: Vec<Record>,
}

/// What the recording answers.
#[derive(Debug, Default)]
struct Script {
    initialize: Option<Value>,
    new_session: Option<Value>,
    set_model: Option<Value>,
    prompts: Vec<PromptScript>,
}

fn load(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut records = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        let record = match value["dir"].as_str() {
            Some("client→agent") => Record::ToAgent(value["msg"].clone()),
            Some("agent→client") => match value["raw"].as_str() {
                Some(raw) => Record::Raw(raw.to_owned()),
                None => Record::FromAgent(value["msg"].clone()),
            },
            Some("exit") => Record::Exit(value["stderr"].as_str().unwrap_or("").to_owned()),
            other => {
                return Err(format!(
                    "{}:{}: unknown dir {other:?}",
                    path.display(),
                    n + 1
                ));
            }
        };
        records.push(record);
    }
    Ok(records)
}

fn prompt_text(params: &Value) -> String {
    params["prompt"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answer the agent wrote to the client's request `id` (everything but `jsonrpc`
/// and `id`).
fn answer_to(records: &[Record], id: &Value) -> Option<Value> {
    records.iter().find_map(|r| match r {
        Record::FromAgent(msg) if msg.get("method").is_none() && &msg["id"] == id => {
            let mut answer = msg.clone();
            let object = answer.as_object_mut()?;
            object.remove("jsonrpc");
            object.remove("id");
            Some(answer)
        }
        _ => None,
    })
}

fn script(records: &[Record]) -> Script {
    let mut script = Script::default();
    for (index, record) in records.iter().enumerate() {
        let Record::ToAgent(msg) = record else {
            continue;
        };
        let id = &msg["id"];
        match msg["method"].as_str() {
            Some("initialize") if script.initialize.is_none() => {
                script.initialize = answer_to(records, id);
            }
            Some("session/new") if script.new_session.is_none() => {
                script.new_session = answer_to(records, id);
            }
            Some("session/set_model" | "session/set_config_option")
                if script.set_model.is_none() =>
            {
                script.set_model = answer_to(records, id);
            }
            Some("session/prompt") => {
                let session = &msg["params"]["sessionId"];
                let mut lines = Vec::new();
                for later in &records[index + 1..] {
                    match later {
                        Record::FromAgent(m) if m.get("method").is_none() && &m["id"] == id => {
                            lines.push(later.clone());
                            break;
                        }
                        Record::FromAgent(m) if &m["params"]["sessionId"] == session => {
                            lines.push(later.clone());
                        }
                        Record::Raw(_) | Record::Exit(_) => lines.push(later.clone()),
                        _ => {}
                    }
                }
                script.prompts.push(PromptScript {
                    text: prompt_text(&msg["params"]),
                    id: id.clone(),
                    session: session.clone(),
                    lines,
                });
            }
            _ => {}
        }
    }
    script
}

struct Args {
    recording: PathBuf,
    once: Option<PathBuf>,
    delay: Duration,
    models: Option<Models>,
    session_close: bool,
    argv: Vec<String>,
}

/// The model list `--models` offers.
#[derive(Debug, Clone)]
struct Models {
    /// `a,b`, or `@FILE` holding it.
    list: String,
    /// As the older `models` table rather than a `model` config option.
    table: bool,
}

impl Models {
    fn ids(&self) -> Vec<String> {
        let list = match self.list.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
            None => self.list.clone(),
        };
        list.split(',')
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Puts the list into a `session/new` result, in its shape.
    fn offer(&self, result: &mut Value) {
        let ids = self.ids();
        let Some(object) = result.as_object_mut() else {
            return;
        };
        object.remove("models");
        object.remove("configOptions");
        if self.table {
            let available: Vec<Value> = ids
                .iter()
                .map(|id| json!({"modelId": id, "name": id}))
                .collect();
            object.insert(
                "models".into(),
                json!({"currentModelId": ids.first(), "availableModels": available}),
            );
        } else {
            let options: Vec<Value> = ids
                .iter()
                .map(|id| json!({"value": id, "name": id}))
                .collect();
            object.insert(
                "configOptions".into(),
                json!([{"id": "model", "name": "Model", "category": "model", "type": "select",
                    "currentValue": ids.first(), "options": options}]),
            );
        }
    }
}

fn parse_args() -> Result<Option<Args>, String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut recording = None;
    let mut once = None;
    let mut delay = Duration::from_millis(5);
    let mut models = None;
    let mut table = false;
    let mut session_close = false;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--version" => return Ok(None),
            "--recording" => recording = Some(PathBuf::from(value("--recording")?)),
            "--once" => once = Some(PathBuf::from(value("--once")?)),
            "--models" => models = Some(value("--models")?),
            "--models-shape" => {
                table = match value("--models-shape")?.as_str() {
                    "config" => false,
                    "table" => true,
                    other => return Err(format!("--models-shape {other}: config or table")),
                }
            }
            "--session-close" => session_close = true,
            "--delay-ms" => {
                let ms = value("--delay-ms")?;
                delay =
                    Duration::from_millis(ms.parse().map_err(|e| format!("--delay-ms {ms}: {e}"))?);
            }
            // The real agents' own arguments (`acp`, `--acp`, …).
            _ => {}
        }
    }
    let recording = recording.ok_or("give --recording FILE")?;
    Ok(Some(Args {
        recording,
        once,
        delay,
        models: models.map(|list| Models { list, table }),
        session_close,
        argv,
    }))
}

fn log(event: &Value) {
    let Some(path) = std::env::var_os("AGENTWIRE_REPLAY_LOG") else {
        return;
    };
    let mut line = event.to_string();
    line.push('\n');
    // One write of the whole line: concurrent processes append whole lines.
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = file.write_all(line.as_bytes());
    }
}

fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `AGENTWIRE_REPLAY_TIMES`: appends that `session`'s first answer chunk began to be
/// written at `at` (ns since the epoch).
fn stamp_first_chunk(session: &str, at: u128) {
    let Some(path) = std::env::var_os("AGENTWIRE_REPLAY_TIMES") else {
        return;
    };
    let line = format!(
        "{}\n",
        json!({"pid": std::process::id(), "session": session, "first_chunk_unix_ns": at})
    );
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Whether no prompt was logged yet by any run.
fn first_prompt_ever() -> bool {
    let Some(path) = std::env::var_os("AGENTWIRE_REPLAY_LOG") else {
        return false;
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    !text.contains("\"event\":\"prompt\"")
}

/// A prompt being played.
struct Play {
    session: String,
    id: Value,
    recorded_session: Value,
    recorded_id: Value,
    lines: VecDeque<Record>,
    due: Instant,
    /// Whether its first `agent_message_chunk` was written (`AGENTWIRE_REPLAY_TIMES`).
    chunk_written: bool,
}

struct Agent {
    script: Script,
    once: Option<Script>,
    delay: Duration,
    models: Option<Models>,
    session_close: bool,
    sessions: u64,
    turn: usize,
    plays: Vec<Play>,
    out: io::Stdout,
}

/// How the process goes on after a step.
enum Next {
    Go,
    Exit(u8),
}

impl Agent {
    fn write(&mut self, line: &str) -> io::Result<()> {
        let mut out = self.out.lock();
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    }

    fn answer(&mut self, id: &Value, answer: Option<&Value>) -> io::Result<()> {
        let mut msg = answer.cloned().unwrap_or_else(|| json!({"result": {}}));
        msg["jsonrpc"] = json!("2.0");
        msg["id"] = id.clone();
        self.write(&msg.to_string())
    }

    fn handle(&mut self, line: &[u8]) -> io::Result<()> {
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            return Ok(());
        };
        let id = msg["id"].clone();
        let params = &msg["params"];
        match msg["method"].as_str() {
            None => Ok(()), // an answer to one of our requests
            Some("initialize") => {
                let mut answer = self.script.initialize.clone();
                if let Some(result) = answer
                    .as_mut()
                    .and_then(|a| a.get_mut("result"))
                    .filter(|_| self.session_close)
                {
                    result["agentCapabilities"]["sessionCapabilities"]["close"] = json!({});
                }
                self.answer(&id, answer.as_ref())
            }
            Some("session/close") if self.session_close => {
                let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
                log(&json!({"event": "close", "pid": std::process::id(), "session": session}));
                self.answer(&id, Some(&json!({"result": {}})))
            }
            Some("session/new") => {
                let mut answer = self.script.new_session.clone();
                if let Some(result) = answer.as_mut().and_then(|a| a.get_mut("result")) {
                    self.sessions += 1;
                    result["sessionId"] = json!(format!("s-{}", self.sessions));
                    if let Some(models) = &self.models {
                        models.offer(result);
                    }
                }
                self.answer(&id, answer.as_ref())
            }
            Some("session/set_model" | "session/set_config_option") => {
                let answer = self.script.set_model.clone();
                self.answer(&id, answer.as_ref())
            }
            Some("session/prompt") => {
                let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
                let text = prompt_text(params);
                let once = self.once.take().filter(|_| first_prompt_ever());
                log(
                    &json!({"event": "prompt", "pid": std::process::id(), "session": session, "prompt": text}),
                );
                let recorded = match &once {
                    Some(once) => once.prompts.first(),
                    None => self.pick(&text),
                };
                let Some(recorded) = recorded.cloned() else {
                    let error = json!({"error": {"code": -32603, "message": "the recording holds no prompt"}});
                    return self.answer(&id, Some(&error));
                };
                self.plays.push(Play {
                    session,
                    id,
                    recorded_session: recorded.session,
                    recorded_id: recorded.id,
                    lines: recorded.lines.into(),
                    due: Instant::now() + self.delay,
                    chunk_written: false,
                });
                Ok(())
            }
            Some("session/cancel") => {
                let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
                log(&json!({"event": "cancel", "pid": std::process::id(), "session": session}));
                if let Some(index) = self.plays.iter().position(|p| p.session == session) {
                    let play = self.plays.remove(index);
                    let answer = json!({"result": {"stopReason": "cancelled"}});
                    self.answer(&play.id, Some(&answer))?;
                }
                Ok(())
            }
            Some(_) if !id.is_null() => {
                let error = json!({"error": {"code": -32601, "message": "Method not found"}});
                self.answer(&id, Some(&error))
            }
            Some(_) => Ok(()),
        }
    }

    /// The recorded prompt for `text`: the one it contains, else the next in turn.
    fn pick(&mut self, text: &str) -> Option<&PromptScript> {
        let prompts = &self.script.prompts;
        if let Some(index) = prompts
            .iter()
            .position(|p| !p.text.is_empty() && text.contains(&p.text))
            .filter(|_| prompts.iter().filter(|p| text.contains(&p.text)).count() == 1)
        {
            return prompts.get(index);
        }
        if prompts.is_empty() {
            return None;
        }
        self.turn += 1;
        prompts.get((self.turn - 1) % prompts.len())
    }

    /// Writes every line that is due.
    fn play_due(&mut self) -> io::Result<Next> {
        let now = Instant::now();
        let mut index = 0;
        while index < self.plays.len() {
            if self.plays[index].due > now {
                index += 1;
                continue;
            }
            let play = &mut self.plays[index];
            let Some(record) = play.lines.pop_front() else {
                self.plays.remove(index);
                continue;
            };
            play.due = now + self.delay;
            let mut first_chunk = None;
            let line = match record {
                Record::Raw(raw) => raw,
                Record::Exit(stderr) => {
                    let _ = io::stderr().write_all(stderr.as_bytes());
                    return Ok(Next::Exit(1));
                }
                Record::FromAgent(mut msg) => {
                    if msg["params"].get("sessionId") == Some(&play.recorded_session) {
                        msg["params"]["sessionId"] = json!(play.session);
                    }
                    if msg.get("method").is_none() && msg["id"] == play.recorded_id {
                        msg["id"] = play.id.clone();
                        play.lines.clear();
                        log(
                            &json!({"event": "answered", "pid": std::process::id(), "session": play.session}),
                        );
                    }
                    if !play.chunk_written
                        && msg["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                    {
                        play.chunk_written = true;
                        first_chunk = Some(play.session.clone());
                    }
                    msg.to_string()
                }
                Record::ToAgent(_) => continue,
            };
            // Stamped before the write, logged after it: the log's own I/O is not timed.
            let at = first_chunk.is_some().then(unix_ns);
            self.write(&line)?;
            if let (Some(session), Some(at)) = (first_chunk, at) {
                stamp_first_chunk(&session, at);
            }
        }
        Ok(Next::Go)
    }

    fn next_due(&self) -> Option<Instant> {
        self.plays.iter().map(|p| p.due).min()
    }
}

fn run(args: Args) -> Result<u8, String> {
    let script = script(&load(&args.recording)?);
    let once = match &args.once {
        Some(path) => Some(self::script(&load(path)?)),
        None => None,
    };
    log(&json!({"event": "start", "pid": std::process::id(), "argv": args.argv}));
    let (lines_tx, lines) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut line = Vec::new();
        while matches!(stdin.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            if lines_tx.send(std::mem::take(&mut line)).is_err() {
                return;
            }
        }
    });
    let mut agent = Agent {
        script,
        once,
        delay: args.delay,
        models: args.models,
        session_close: args.session_close,
        sessions: 0,
        turn: 0,
        plays: Vec::new(),
        out: io::stdout(),
    };
    loop {
        let received = match agent.next_due() {
            Some(due) => lines.recv_timeout(due.saturating_duration_since(Instant::now())),
            None => lines.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let step = match received {
            Ok(line) => agent.handle(&line).map(|()| Next::Go),
            Err(RecvTimeoutError::Timeout) => agent.play_due(),
            Err(RecvTimeoutError::Disconnected) => return Ok(0),
        };
        match step {
            Ok(Next::Go) => {}
            Ok(Next::Exit(code)) => return Ok(code),
            // The client closed our stdout: nobody listens any more.
            Err(_) => return Ok(0),
        }
    }
}

fn main() -> ExitCode {
    match parse_args() {
        Ok(None) => {
            println!("agentwire-acp-agent {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Ok(Some(args)) => match run(args) {
            Ok(code) => ExitCode::from(code),
            Err(message) => {
                eprintln!("acp_agent: {message}");
                ExitCode::from(2)
            }
        },
        Err(message) => {
            eprintln!("acp_agent: {message}");
            ExitCode::from(2)
        }
    }
}
