//! A stand-in ACP agent: speaks the Agent Client Protocol on stdio, playing the agent's
//! side of a recording (the `{"dir": …, "msg" | "raw" | "stderr": …}` JSONL of the ACP
//! fixtures) for as many sessions and prompts as arrive, interleaved on the one pipe.
//!
//! ```text
//! acp_agent --recording FILE [--delay-ms N] [--once FILE] [--models IDS|@FILE]
//!           [--models-shape config|table] [--session-close] [--tool-rounds N]
//!           [--result-delay-ms N] [--agent-name NAME] [--version] [other args…]
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
//! - `--agent-name NAME`: `initialize` names the agent NAME (`agentInfo`), as the real
//!   ones do (`@zed-industries/claude-agent-acp`, `codex-acp`, `gemini-cli`).
//! - `--tool-rounds N`: the agent acts as one with a model would when given the client's
//!   tools. `initialize` advertises HTTP MCP servers (`mcpCapabilities.http`); a
//!   `session/new` carrying one is connected to before it is answered (plain HTTP/1.1 on
//!   a connection per request: `initialize`, `notifications/initialized`, `tools/list`,
//!   with the `Authorization` header it was given). Each prompt on such a session then
//!   plays tool rounds, N per session in all: a text chunk (``Running `echo round-K`.``),
//!   a `tool_call` update titled `mcp__<server>__<tool>`, a `session/request_permission`
//!   with Claude's options (`allow_always`, `allow`, `reject`), and on `allow` a
//!   `tools/call` of the first listed tool, every string parameter it requires set to
//!   `echo round-K`, its answer read from the SSE stream (or JSON) however long it takes.
//!   After a result, `--result-delay-ms` later (default 0), the next round, or once N
//!   rounds are played the end of the turn: `Done after N tool rounds. Last result: …`.
//!   A session's first prompt that quotes earlier rounds (`echo round-K`: a whole
//!   conversation rendered for a fresh session) counts them as played. A refused
//!   permission ends the turn saying so; `session/cancel` hangs up on the call in
//!   flight and ends the prompt `cancelled`. Sessions without an MCP server play the
//!   recording as usual.
//! - End of stdin ends the process.
//!
//! With env `AGENTWIRE_REPLAY_LOG=FILE`, each process appends
//! `{"event":"start","pid":…,"argv":[…]}` when it starts,
//! `{"event":"prompt","pid":…,"session":…,"prompt":…}` per prompt and
//! `{"event":"answered","pid":…,"session":…}` when a prompt's answer is written and
//! `{"event":"cancel","pid":…,"session":…}` per cancellation and
//! `{"event":"close","pid":…,"session":…}` per `session/close`; with `--tool-rounds`,
//! `{"event":"session","pid":…,"session":…,"mcp":{"url":…,"authorization":…},"tools":[…]}`
//! per session given an MCP server (`"error"` when it could not be reached),
//! `{"event":"permission",…,"round":…,"option":…}` per answered permission request,
//! `{"event":"tool_call",…,"round":…,"name":…,"arguments":…}` per `tools/call` and
//! `{"event":"tool_result",…,"round":…,"text":…,"is_error":…}` per answer (or
//! `"error"` when the call failed).
//!
//! With env `AGENTWIRE_REPLAY_TIMES=FILE`, each prompt's first `agent_message_chunk`
//! appends `{"pid":…,"session":…,"first_chunk_unix_ns":…}`: when the process began writing
//! that line, on the system clock every process shares (benches/proxy.sh measures the
//! proxies' added latency against it).

use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::io::{self, BufRead, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "support/mcp_client.rs"]
mod mcp_client;

use mcp_client::{McpClient, arguments_for};

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
    agent_name: Option<String>,
    tool_rounds: Option<u32>,
    result_delay: Duration,
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
    let mut agent_name = None;
    let mut tool_rounds = None;
    let mut result_delay = Duration::ZERO;
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
            "--agent-name" => agent_name = Some(value("--agent-name")?),
            "--tool-rounds" => {
                let n = value("--tool-rounds")?;
                tool_rounds = Some(n.parse().map_err(|e| format!("--tool-rounds {n}: {e}"))?);
            }
            "--result-delay-ms" => {
                let ms = value("--result-delay-ms")?;
                let ms = ms
                    .parse()
                    .map_err(|e| format!("--result-delay-ms {ms}: {e}"))?;
                result_delay = Duration::from_millis(ms);
            }
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
        agent_name,
        tool_rounds,
        result_delay,
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
    agent_name: Option<String>,
    tool_rounds: Option<u32>,
    result_delay: Duration,
    sessions: u64,
    turn: usize,
    plays: Vec<Play>,
    /// Sessions given an MCP server (with `--tool-rounds`), by id.
    tool_sessions: HashMap<String, ToolSession>,
    /// Where the threads of `tools/call`s report.
    inputs: mpsc::Sender<Input>,
    out: io::Stdout,
}

/// What the main loop takes: a line from stdin, or a call's answer.
enum Input {
    Line(Vec<u8>),
    /// The `tools/call` of round `round` of `session` was answered (its text, whether an
    /// error) or failed.
    Answered {
        session: String,
        round: u32,
        outcome: Result<(String, bool), String>,
    },
}

/// A session given an MCP server, and the tool rounds played on it.
struct ToolSession {
    client: Arc<McpClient>,
    /// The server's name (`mcp__<server>__<tool>`).
    server: String,
    /// The first listed tool: its name and input schema.
    tool: Option<(String, Value)>,
    /// Tool rounds played so far.
    played: u32,
    /// Whether a prompt came yet (the first counts rounds quoted in it).
    prompted: bool,
    last_result: Option<String>,
    /// The prompt being served: its request id.
    prompt: Option<Value>,
    waiting: Waiting,
    /// The connection of the call in flight, to hang up on it.
    in_flight: Arc<Mutex<Option<TcpStream>>>,
}

/// What a tool session's prompt waits for.
#[derive(Debug, Clone, PartialEq)]
enum Waiting {
    Nothing,
    /// The answer to our permission request with this id, for round `round`.
    Permission(Value, u32),
    /// The answer of round `round`'s `tools/call`.
    Call(u32),
    /// The pause after a result (`--result-delay-ms`).
    Pause(Instant),
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
            // An answer to one of our requests.
            None => self.permission_answered(&id, &msg["result"]),
            Some("initialize") => {
                let mut answer = self.script.initialize.clone();
                if let Some(result) = answer.as_mut().and_then(|a| a.get_mut("result")) {
                    if self.session_close {
                        result["agentCapabilities"]["sessionCapabilities"]["close"] = json!({});
                    }
                    if self.tool_rounds.is_some() {
                        result["agentCapabilities"]["mcpCapabilities"]["http"] = json!(true);
                    }
                    if let Some(name) = &self.agent_name {
                        result["agentInfo"] = json!({"name": name, "version": "1.0.0"});
                    }
                }
                self.answer(&id, answer.as_ref())
            }
            Some("session/close") if self.session_close => {
                let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
                log(&json!({"event": "close", "pid": std::process::id(), "session": session}));
                if let Some(tools) = self.tool_sessions.remove(&session) {
                    tools.hang_up();
                }
                self.answer(&id, Some(&json!({"result": {}})))
            }
            Some("session/new") => {
                let mut answer = self.script.new_session.clone();
                if let Some(result) = answer.as_mut().and_then(|a| a.get_mut("result")) {
                    self.sessions += 1;
                    let session = format!("s-{}", self.sessions);
                    result["sessionId"] = json!(session);
                    if let Some(models) = &self.models {
                        models.offer(result);
                    }
                    if self.tool_rounds.is_some() {
                        self.connect_mcp(&session, params);
                    }
                }
                self.answer(&id, answer.as_ref())
            }
            Some("session/set_model" | "session/set_config_option") => {
                let answer = self.script.set_model.clone();
                self.answer(&id, answer.as_ref())
            }
            Some("session/prompt")
                if self
                    .tool_sessions
                    .contains_key(params["sessionId"].as_str().unwrap_or_default()) =>
            {
                let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
                let text = prompt_text(params);
                log(
                    &json!({"event": "prompt", "pid": std::process::id(), "session": session, "prompt": text}),
                );
                self.tool_prompt(&session, id, &text)
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
                if let Some(tools) = self.tool_sessions.get_mut(&session) {
                    tools.hang_up();
                    tools.waiting = Waiting::Nothing;
                    if let Some(prompt) = tools.prompt.take() {
                        let answer = json!({"result": {"stopReason": "cancelled"}});
                        self.answer(&prompt, Some(&answer))?;
                    }
                }
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
        let pauses = self.tool_sessions.values().filter_map(|t| match t.waiting {
            Waiting::Pause(until) => Some(until),
            _ => None,
        });
        self.plays.iter().map(|p| p.due).chain(pauses).min()
    }

    // Tool rounds (`--tool-rounds`).

    /// Connects to the HTTP MCP server `session/new` gave session `session`, if any: the
    /// session is then one of tool rounds.
    fn connect_mcp(&mut self, session: &str, params: &Value) {
        let Some(server) = params["mcpServers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["type"] == "http")
        else {
            return;
        };
        let url = server["url"].as_str().unwrap_or_default();
        let authorization = server["headers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|h| {
                h["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case("authorization"))
            })
            .and_then(|h| h["value"].as_str())
            .map(str::to_owned);
        let mut entry = json!({"event": "session", "pid": std::process::id(), "session": session,
            "mcp": {"url": url, "authorization": authorization}});
        let headers = authorization
            .iter()
            .map(|value| ("authorization".to_owned(), value.clone()))
            .collect();
        let client = match McpClient::connect(url, headers, "acp_agent") {
            Ok(client) => client,
            Err(e) => {
                entry["error"] = json!(e);
                log(&entry);
                return;
            }
        };
        entry["tools"] = json!(client.tools.iter().map(|(n, _)| n).collect::<Vec<_>>());
        log(&entry);
        let tool = client.tools.first().cloned();
        self.tool_sessions.insert(
            session.to_owned(),
            ToolSession {
                client: Arc::new(client),
                server: server["name"].as_str().unwrap_or("client").to_owned(),
                tool,
                played: 0,
                prompted: false,
                last_result: None,
                prompt: None,
                waiting: Waiting::Nothing,
                in_flight: Arc::new(Mutex::new(None)),
            },
        );
    }

    /// A prompt on a session of tool rounds.
    fn tool_prompt(&mut self, session: &str, id: Value, text: &str) -> io::Result<()> {
        let tools = self.tool_sessions.get_mut(session).expect("a tool session");
        if tools.prompt.is_some() {
            let error = json!({"error": {"code": -32602, "message": "a prompt is running on this session"}});
            return self.answer(&id, Some(&error));
        }
        if !tools.prompted {
            // A whole conversation, rendered for a fresh session: its rounds were played.
            tools.prompted = true;
            tools.played = rounds_quoted(text);
        }
        tools.prompt = Some(id);
        self.go_on(session)
    }

    /// The next round of `session`'s prompt, or the end of its turn.
    fn go_on(&mut self, session: &str) -> io::Result<()> {
        let rounds = self.tool_rounds.unwrap_or(0);
        let tools = self.tool_sessions.get_mut(session).expect("a tool session");
        let Some((name, schema)) = tools.tool.clone().filter(|_| tools.played < rounds) else {
            let text = format!(
                "Done after {} tool rounds. Last result: {}",
                tools.played,
                tools.last_result.as_deref().unwrap_or("(none)")
            );
            return self.end_turn(session, &text);
        };
        let round = tools.played;
        let arguments = arguments_for(&schema, &format!("echo round-{round}"));
        let title = format!("mcp__{}__{name}", tools.server);
        let call = format!("call-{session}-{round}");
        let permission = json!(format!("permission-{session}-{round}"));
        tools.waiting = Waiting::Permission(permission.clone(), round);
        let command = arguments
            .as_object()
            .and_then(|o| o.values().find_map(Value::as_str))
            .unwrap_or(&name)
            .to_owned();
        self.update(
            session,
            json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": format!("Running `{command}`.")}}),
        )?;
        self.update(
            session,
            json!({"sessionUpdate": "tool_call", "toolCallId": call,
            "title": title, "kind": "other", "status": "pending", "rawInput": arguments}),
        )?;
        let request = json!({"jsonrpc": "2.0", "id": permission, "method": "session/request_permission",
        "params": {"sessionId": session,
            "toolCall": {"toolCallId": call, "title": title, "kind": "other", "status": "pending", "rawInput": arguments},
            "options": [
                {"kind": "allow_always", "name": "Always Allow", "optionId": "allow_always"},
                {"kind": "allow_once", "name": "Allow", "optionId": "allow"},
                {"kind": "reject_once", "name": "Reject", "optionId": "reject"},
            ]}});
        self.write(&request.to_string())
    }

    /// The client answered a request of ours: a permission request of a tool round.
    fn permission_answered(&mut self, id: &Value, result: &Value) -> io::Result<()> {
        let Some((session, round)) =
            self.tool_sessions
                .iter()
                .find_map(|(s, t)| match &t.waiting {
                    Waiting::Permission(asked, round) if asked == id => Some((s.clone(), *round)),
                    _ => None,
                })
        else {
            return Ok(());
        };
        let option = result["outcome"]["optionId"]
            .as_str()
            .unwrap_or("cancelled")
            .to_owned();
        log(
            &json!({"event": "permission", "pid": std::process::id(), "session": session, "round": round, "option": option}),
        );
        if option != "allow" {
            return self.end_turn(&session, "The permission to run the tool was refused.");
        }
        let tools = self.tool_sessions.get_mut(&session).expect("found above");
        let Some((name, schema)) = tools.tool.clone() else {
            return Ok(());
        };
        let arguments = arguments_for(&schema, &format!("echo round-{round}"));
        log(
            &json!({"event": "tool_call", "pid": std::process::id(), "session": session, "round": round, "name": name, "arguments": arguments}),
        );
        tools.waiting = Waiting::Call(round);
        let client = Arc::clone(&tools.client);
        let in_flight = Arc::clone(&tools.in_flight);
        let inputs = self.inputs.clone();
        std::thread::spawn(move || {
            let outcome = client.call(round, &name, &arguments, Some(&in_flight));
            let _ = inputs.send(Input::Answered {
                session,
                round,
                outcome,
            });
        });
        Ok(())
    }

    /// Round `round` of `session` was answered (or its call failed).
    fn call_answered(
        &mut self,
        session: &str,
        round: u32,
        outcome: Result<(String, bool), String>,
    ) -> io::Result<()> {
        let mut entry = json!({"event": "tool_result", "pid": std::process::id(), "session": session, "round": round});
        match &outcome {
            Ok((text, is_error)) => {
                entry["text"] = json!(text);
                entry["is_error"] = json!(is_error);
            }
            Err(e) => entry["error"] = json!(e),
        }
        log(&entry);
        let pause = self.result_delay;
        let Some(tools) = self
            .tool_sessions
            .get_mut(session)
            .filter(|t| t.waiting == Waiting::Call(round))
        else {
            // A call its prompt no longer waits for (cancelled).
            return Ok(());
        };
        let Ok((text, _)) = outcome else {
            tools.waiting = Waiting::Nothing;
            return self.end_turn(session, "The tool call failed.");
        };
        tools.played += 1;
        tools.last_result = Some(text);
        let call = format!("call-{session}-{round}");
        self.update(
            session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"}),
        )?;
        let tools = self.tool_sessions.get_mut(session).expect("found above");
        if pause.is_zero() {
            tools.waiting = Waiting::Nothing;
            return self.go_on(session);
        }
        tools.waiting = Waiting::Pause(Instant::now() + pause);
        Ok(())
    }

    /// Goes on with the sessions whose pause after a result is over.
    fn pauses_due(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let due: Vec<String> = self
            .tool_sessions
            .iter()
            .filter(|(_, t)| matches!(t.waiting, Waiting::Pause(until) if until <= now))
            .map(|(s, _)| s.clone())
            .collect();
        for session in due {
            if let Some(tools) = self.tool_sessions.get_mut(&session) {
                tools.waiting = Waiting::Nothing;
            }
            self.go_on(&session)?;
        }
        Ok(())
    }

    /// Ends the prompt of `session` with `text`.
    fn end_turn(&mut self, session: &str, text: &str) -> io::Result<()> {
        let tools = self.tool_sessions.get_mut(session).expect("a tool session");
        tools.waiting = Waiting::Nothing;
        let Some(prompt) = tools.prompt.take() else {
            return Ok(());
        };
        self.update(
            session,
            json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}}),
        )?;
        self.answer(
            &prompt,
            Some(&json!({"result": {"stopReason": "end_turn"}})),
        )?;
        log(&json!({"event": "answered", "pid": std::process::id(), "session": session}));
        Ok(())
    }

    /// Writes a `session/update` of `session`.
    fn update(&mut self, session: &str, update: Value) -> io::Result<()> {
        let message = json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}});
        self.write(&message.to_string())
    }
}

impl ToolSession {
    /// Hangs up on the call in flight, if any.
    fn hang_up(&self) {
        let stream = self
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(stream) = stream {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// The rounds a prompt quotes: the distinct `K` of `echo round-K` in it.
fn rounds_quoted(text: &str) -> u32 {
    let mut rounds: Vec<&str> = text
        .split("echo round-")
        .skip(1)
        .map(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            &rest[..digits]
        })
        .filter(|k| !k.is_empty())
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds.len() as u32
}

fn run(args: Args) -> Result<u8, String> {
    let script = script(&load(&args.recording)?);
    let once = match &args.once {
        Some(path) => Some(self::script(&load(path)?)),
        None => None,
    };
    log(&json!({"event": "start", "pid": std::process::id(), "argv": args.argv}));
    let (inputs, lines) = mpsc::channel::<Input>();
    let lines_tx = inputs.clone();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut line = Vec::new();
        while matches!(stdin.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            if lines_tx
                .send(Input::Line(std::mem::take(&mut line)))
                .is_err()
            {
                return;
            }
        }
        // End of stdin ends the process, calls in flight or not.
        std::process::exit(0);
    });
    let mut agent = Agent {
        script,
        once,
        delay: args.delay,
        models: args.models,
        session_close: args.session_close,
        agent_name: args.agent_name,
        tool_rounds: args.tool_rounds,
        result_delay: args.result_delay,
        sessions: 0,
        turn: 0,
        plays: Vec::new(),
        tool_sessions: HashMap::new(),
        inputs,
        out: io::stdout(),
    };
    loop {
        let received = match agent.next_due() {
            Some(due) => lines.recv_timeout(due.saturating_duration_since(Instant::now())),
            None => lines.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let step = match received {
            Ok(Input::Line(line)) => agent.handle(&line).map(|()| Next::Go),
            Ok(Input::Answered {
                session,
                round,
                outcome,
            }) => agent
                .call_answered(&session, round, outcome)
                .map(|()| Next::Go),
            Err(RecvTimeoutError::Timeout) => agent.pauses_due().and_then(|()| agent.play_due()),
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
