//! A stand-in for `cursor-agent`: reads the prompt from stdin, then replays a recorded
//! stream-json transcript to stdout with pacing and scripted failures. The proxies' tests,
//! benchmarks and end-to-end runs use it in place of the real CLI.
//!
//! ```text
//! replay_agent [--transcript FILE | --scenario DIR | --chat-dir DIR [--tool-rounds N]
//!               | --mcp-rounds N] [--lost-chat new-id|fail] [--hang-on-resume]
//!              [--delay-ms N] [--stderr FILE] [--exit CODE] [--hang] [--spawn-child]
//!              [--version] [cursor-agent flags…]
//! ```
//!
//! - `--transcript FILE` (or env `AGENTWIRE_REPLAY_TRANSCRIPT`): the NDJSON to replay.
//! - `--scenario DIR`: a multi-turn conversation, `DIR/turn-1.jsonl`, `turn-2.jsonl`, …;
//!   the turn played is 1 + the number of tool-result blocks in the prompt received (read
//!   with agentwire's own prompt reader), so each request of a tool round gets the next turn.
//!   A resumed chat's prompt holds only the latest results: past turn 2, use `--chat-dir`.
//! - `--resume CHAT` (cursor-agent's own flag): the run continues chat CHAT, and every
//!   line it writes carries `"session_id":"CHAT"`, as cursor-agent's do.
//! - `--chat-dir DIR`: plays an agent that keeps its chats in DIR (one file per chat id,
//!   holding how many runs the chat has had) and answers a tool loop: a chat's first
//!   `--tool-rounds N` runs (default 0) each write `system/init`, a line of text and a
//!   started `shellToolCall` whose command is unique to the round (`echo round-R`, R from
//!   0), then wait for the tool's result until stopped (at most 5 minutes); later runs
//!   answer with text and a `result`. A fresh run (no `--resume`) starts a new chat whose
//!   round is the number of tool results in its prompt (a whole conversation); a resumed
//!   one takes the round its chat is at. A `--resume` of a chat not in DIR is a lost chat.
//! - `--mcp-rounds N`: plays cursor-agent with a model, given the client's tools as an MCP
//!   server. With `--approve-mcps` on the command line, the first server of
//!   `WORKSPACE/.cursor/mcp.json` (`--workspace`, else the working directory) is connected
//!   to before anything is written: its `url`, and its `headers` with `${env:VAR}`
//!   expanded (a variable not set, a bad `mcp.json` or a server that cannot be reached:
//!   an error on stderr and exit 1). Plain HTTP/1.1 on a connection per request:
//!   `initialize`, `notifications/initialized`, `tools/list`. The run answers under the
//!   `--resume` chat, else a new id: `system/init`, the prompt as a `user` line, then for
//!   each round K from 1 to N a text line (``Running `echo round-K`.``), an
//!   `mcpToolCall` started, a `tools/call` of the first listed tool (every string
//!   parameter it requires set to `echo round-K`, other required ones a default of
//!   their type), its answer read from the SSE stream (or JSON) however long it takes,
//!   and the `mcpToolCall` completed with the answer's text (a call that fails: an error
//!   on stderr and exit 1); then
//!   `Done after N tool rounds. Last result: …` and a `result`. Rounds the prompt quotes
//!   (`echo round-K`, up to the largest K: a resumed chat's or a whole conversation's) count
//!   as played. Without `--approve-mcps`, a server or a tool, no round is played. Every
//!   other mode's flags are then ignored.
//! - `--lost-chat new-id|fail`: what a lost chat does — every `--resume` without
//!   `--chat-dir`, one of a chat not in DIR with it. `new-id` (what cursor-agent does, and
//!   the default with `--chat-dir`) answers under a new chat id; `fail` writes
//!   `Error: chat CHAT not found` to stderr and exits 1 without answering.
//! - `--hang-on-resume`: a run given `--resume` reads its prompt, logs, and never answers.
//! - `--delay-ms N`: pause between lines (default 5; 0 writes as fast as the pipe takes it).
//! - `--stderr FILE`: written to stderr after the transcript.
//! - `--exit CODE`: the exit code (default 0).
//! - `--hang`: after the transcript, stop writing and never exit.
//! - `--spawn-child`: first start a long-sleeping child (sharing stdout and the process
//!   group), so tests can see that the whole group is stopped.
//! - `--version`: print a version line and exit.
//! - `models` (the subcommand) or `--list-models`: print a model listing in the
//!   CLI's format and exit.
//! - Every other argument (the flags cursor-agent takes, and their values) is ignored.
//!
//! With env `AGENTWIRE_REPLAY_LOG=FILE`, each run appends one JSON line to FILE:
//! `{"pid":…,"child_pid":…|null,"argv":[…],"prompt":"…","stdin_bytes":…,"chat_id":…|null}`,
//! written after the whole prompt was read and before the first line is replayed.
//! `chat_id` is the chat the run answers under (`null` for a transcript's own, and for a
//! lost chat that fails). With `--mcp-rounds`, events follow it:
//! `{"event":"mcp_session","pid":…,"url":…,"authorization":…|null,"tools":[…]}` once the
//! server is connected to (`"error":…` instead of `tools` when there is none to use or it
//! failed), `{"event":"tool_call","pid":…,"round":…,"name":…,"arguments":…}` per
//! `tools/call` and `{"event":"tool_result","pid":…,"round":…,"text":…,"is_error":…}` per
//! answer (`"error":…` when the call failed).
//!
//! With env `AGENTWIRE_REPLAY_TIMES=FILE`, each run appends
//! `{"pid":…,"started_unix_ns":…,"first_line_unix_ns":…}` once its first line is out: when
//! the process started and when it began writing its first line, on the system clock every
//! process shares (benches/proxy.sh measures the proxies' latency against them).

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentwire::cursor::prompt::read_blocks;
use serde_json::{Value, json};

#[path = "support/mcp_client.rs"]
mod mcp_client;

use mcp_client::{McpClient, arguments_for};

/// What `models` prints: the CLI's listing format, markers included.
const MODELS: &str = "Available models\n\nauto - Auto (default)\ncomposer-2.5 - Composer 2.5 (current)\ngpt-5 - GPT-5\nsonnet-4.5-thinking - Claude 4.5 Sonnet (Thinking)\n\nTip: use --model <id> to switch.\n";

/// The hidden mode of the child `--spawn-child` starts.
const SLEEPER: &str = "--replay-agent-sleeper";

#[derive(Debug)]
struct Args {
    transcript: Option<PathBuf>,
    scenario: Option<PathBuf>,
    delay: Duration,
    stderr: Option<PathBuf>,
    exit: u8,
    hang: bool,
    spawn_child: bool,
    /// `--resume`: the chat to continue.
    resume: Option<String>,
    chat_dir: Option<PathBuf>,
    tool_rounds: u32,
    lost_chat: Option<LostChat>,
    hang_on_resume: bool,
    /// `--mcp-rounds`: the tool rounds to play through the workspace's MCP server.
    mcp_rounds: Option<u32>,
    /// `--approve-mcps` (cursor-agent's own flag): the MCP servers configured may be used.
    approve_mcps: bool,
    /// `--workspace` (cursor-agent's own flag): where `.cursor/mcp.json` is.
    workspace: Option<PathBuf>,
}

/// What a run resuming a chat the agent does not know does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LostChat {
    /// Answers under a new chat id.
    NewId,
    /// Fails with "chat not found".
    Fail,
}

/// The longest a tool round waits for its result before giving up.
const TOOL_WAIT: Duration = Duration::from_secs(300);

enum Parsed {
    Run(Args),
    Version,
    Models,
    Sleeper,
}

fn parse_args(argv: &[String]) -> Result<Parsed, String> {
    let mut args = Args {
        transcript: std::env::var_os("AGENTWIRE_REPLAY_TRANSCRIPT").map(PathBuf::from),
        scenario: None,
        delay: Duration::from_millis(5),
        stderr: None,
        exit: 0,
        hang: false,
        spawn_child: false,
        resume: None,
        chat_dir: None,
        tool_rounds: 0,
        lost_chat: None,
        hang_on_resume: false,
        mcp_rounds: None,
        approve_mcps: false,
        workspace: None,
    };
    // The `models` subcommand, wherever wrapper flags put it (not a `--model` value).
    let subcommand = argv
        .iter()
        .enumerate()
        .any(|(i, a)| a == "models" && (i == 0 || argv[i - 1] != "--model"));
    if subcommand {
        return Ok(Parsed::Models);
    }
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            SLEEPER => return Ok(Parsed::Sleeper),
            "--version" => return Ok(Parsed::Version),
            "--list-models" => return Ok(Parsed::Models),
            "--transcript" => args.transcript = Some(value("--transcript")?.into()),
            "--scenario" => args.scenario = Some(value("--scenario")?.into()),
            "--delay-ms" => {
                let ms = value("--delay-ms")?;
                let ms: u64 = ms.parse().map_err(|e| format!("--delay-ms {ms}: {e}"))?;
                args.delay = Duration::from_millis(ms);
            }
            "--stderr" => args.stderr = Some(value("--stderr")?.into()),
            "--exit" => {
                let code = value("--exit")?;
                args.exit = code.parse().map_err(|e| format!("--exit {code}: {e}"))?;
            }
            "--hang" => args.hang = true,
            "--spawn-child" => args.spawn_child = true,
            "--resume" => args.resume = Some(value("--resume")?),
            "--chat-dir" => args.chat_dir = Some(value("--chat-dir")?.into()),
            "--tool-rounds" => {
                let n = value("--tool-rounds")?;
                args.tool_rounds = n.parse().map_err(|e| format!("--tool-rounds {n}: {e}"))?;
            }
            "--lost-chat" => {
                args.lost_chat = Some(match value("--lost-chat")?.as_str() {
                    "new-id" => LostChat::NewId,
                    "fail" => LostChat::Fail,
                    other => return Err(format!("--lost-chat {other}: new-id or fail")),
                })
            }
            "--hang-on-resume" => args.hang_on_resume = true,
            "--mcp-rounds" => {
                let n = value("--mcp-rounds")?;
                args.mcp_rounds = Some(n.parse().map_err(|e| format!("--mcp-rounds {n}: {e}"))?);
            }
            "--approve-mcps" => args.approve_mcps = true,
            "--workspace" => args.workspace = Some(value("--workspace")?.into()),
            // cursor-agent's own flags and their values.
            _ => {}
        }
    }
    if args.transcript.is_none()
        && args.scenario.is_none()
        && args.chat_dir.is_none()
        && args.mcp_rounds.is_none()
        && !args.hang
    {
        return Err(
            "nothing to replay: give --transcript FILE (or AGENTWIRE_REPLAY_TRANSCRIPT), --scenario DIR, --chat-dir DIR, --mcp-rounds N or --hang"
                .into(),
        );
    }
    if args.tool_rounds > 0 && args.chat_dir.is_none() {
        return Err("--tool-rounds needs --chat-dir".into());
    }
    Ok(Parsed::Run(args))
}

/// The transcript for this prompt: the scenario's turn, else `--transcript`.
fn transcript_for(args: &Args, prompt: &str) -> Result<Option<PathBuf>, String> {
    let Some(dir) = &args.scenario else {
        return Ok(args.transcript.clone());
    };
    let turn = 1 + read_blocks(prompt).filter(|b| b.is_tool_result()).count();
    let path = dir.join(format!("turn-{turn}.jsonl"));
    if !path.is_file() {
        return Err(format!(
            "scenario {}: no turn-{turn}.jsonl for a prompt with {} tool results",
            dir.display(),
            turn - 1
        ));
    }
    Ok(Some(path))
}

fn append_log(
    path: &Path,
    argv: &[String],
    prompt: &str,
    stdin_bytes: usize,
    child: Option<u32>,
    chat: Option<&str>,
) -> io::Result<()> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "pid": std::process::id(),
        "child_pid": child,
        "argv": argv,
        "prompt": prompt,
        "stdin_bytes": stdin_bytes,
        "chat_id": chat,
    }))
    .map_err(io::Error::other)?;
    line.push(b'\n');
    // One write of the whole line: concurrent runs append whole lines.
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&line)
}

fn unix_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `AGENTWIRE_REPLAY_TIMES`: where this run's start and first-line times go.
struct Times {
    file: PathBuf,
    started_unix_ns: u128,
}

impl Times {
    fn first_line(&self, at_unix_ns: u128) -> io::Result<()> {
        let line = format!(
            "{{\"pid\":{},\"started_unix_ns\":{},\"first_line_unix_ns\":{at_unix_ns}}}\n",
            std::process::id(),
            self.started_unix_ns
        );
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)?
            .write_all(line.as_bytes())
    }
}

/// Writes `lines` to stdout, `delay` apart, each under the chat id `chat` when one is
/// given.
fn write_lines(
    lines: impl Iterator<Item = io::Result<Vec<u8>>>,
    delay: Duration,
    times: Option<&Times>,
    chat: Option<&str>,
) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut first = true;
    for line in lines {
        let line = line?;
        if !first && !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let at = unix_ns();
        let line = match chat {
            Some(chat) => in_chat(&line, chat),
            None => Cow::Borrowed(line.as_slice()),
        };
        out.write_all(&line)?;
        out.flush()?;
        if first && let Some(times) = times {
            times.first_line(at)?;
        }
        first = false;
    }
    Ok(())
}

fn replay(
    path: &Path,
    delay: Duration,
    times: Option<&Times>,
    chat: Option<&str>,
) -> io::Result<()> {
    let file = File::open(path)?;
    if delay.is_zero() && chat.is_none() {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let at = unix_ns();
        io::copy(&mut BufReader::with_capacity(64 * 1024, file), &mut out)?;
        out.flush()?;
        return times.map_or(Ok(()), |t| t.first_line(at));
    }
    let mut reader = BufReader::new(file);
    let lines = std::iter::from_fn(move || {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => None,
            Ok(_) => Some(Ok(line)),
            Err(e) => Some(Err(e)),
        }
    });
    write_lines(lines, delay, times, chat)
}

/// `line` with its `session_id`, if it has one, set to `chat`.
fn in_chat<'a>(line: &'a [u8], chat: &str) -> Cow<'a, [u8]> {
    let Ok(serde_json::Value::Object(mut event)) = serde_json::from_slice(line) else {
        return Cow::Borrowed(line);
    };
    let Some(serde_json::Value::String(id)) = event.get("session_id") else {
        return Cow::Borrowed(line);
    };
    if id == chat {
        return Cow::Borrowed(line);
    }
    // The recorded bytes, but for the id (a recording's own formatting is kept).
    let old = format!("\"session_id\":\"{id}\"");
    let text = String::from_utf8_lossy(line);
    if text.matches(&old).count() == 1 {
        let new = format!("\"session_id\":\"{chat}\"");
        return Cow::Owned(text.replace(&old, &new).into_bytes());
    }
    event.insert("session_id".into(), chat.into());
    let mut out = serde_json::to_vec(&event).unwrap_or_else(|_| line.to_vec());
    out.push(b'\n');
    Cow::Owned(out)
}

/// A new chat id, shaped as cursor-agent's (a UUID).
fn new_chat_id() -> String {
    let mut hasher = DefaultHasher::new();
    hasher.write_u32(std::process::id());
    hasher.write_u128(unix_ns());
    let a = hasher.finish();
    hasher.write_u8(1);
    let b = hasher.finish();
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// The chat a run answers under, once `--resume` and `--lost-chat` are taken into account.
enum Chat {
    /// The transcript's own ids.
    Recorded,
    /// This chat: a resumed one, or a new one.
    Id { id: String, resumed: bool },
    /// The resumed chat is lost and the run fails.
    Lost(String),
}

fn chat_for(args: &Args) -> Chat {
    if args.mcp_rounds.is_some() {
        return Chat::Id {
            id: args.resume.clone().unwrap_or_else(new_chat_id),
            resumed: args.resume.is_some(),
        };
    }
    let Some(resumed) = &args.resume else {
        return match args.chat_dir {
            Some(_) => Chat::Id {
                id: new_chat_id(),
                resumed: false,
            },
            None => Chat::Recorded,
        };
    };
    let lost = match &args.chat_dir {
        Some(dir) => !dir.join(resumed).is_file(),
        None => args.lost_chat.is_some(),
    };
    if !lost {
        return Chat::Id {
            id: resumed.clone(),
            resumed: true,
        };
    }
    match args.lost_chat.unwrap_or(LostChat::NewId) {
        LostChat::NewId => Chat::Id {
            id: new_chat_id(),
            resumed: false,
        },
        LostChat::Fail => Chat::Lost(resumed.clone()),
    }
}

/// `--chat-dir`: the round this run of `chat` is at, counted in `dir` (a resumed chat's
/// runs so far; for a new chat, the tool results in its prompt), then counted.
fn take_round(dir: &Path, chat: &str, resumed: bool, prompt: &str) -> Result<u32, String> {
    let file = dir.join(chat);
    let round = if resumed {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        text.trim()
            .parse()
            .map_err(|e| format!("{}: {e}", file.display()))?
    } else {
        read_blocks(prompt).filter(|b| b.is_tool_result()).count() as u32
    };
    std::fs::write(&file, format!("{}\n", round + 1))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(round)
}

/// The lines of round `round` of a tool loop of `rounds` in `chat`: a tool call while
/// rounds remain, else the answer.
fn tool_loop_lines(chat: &str, round: u32, rounds: u32) -> Vec<Vec<u8>> {
    let init = serde_json::json!({"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","session_id":chat,"model":"Auto","permissionMode":"default"});
    let text = |text: &str| serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":text}]},"session_id":chat});
    let mut lines = vec![init];
    if round < rounds {
        lines.push(text(&format!("Round {round}: running a command.")));
        lines.push(serde_json::json!({"type":"tool_call","subtype":"started","call_id":format!("call-{round}"),"tool_call":{"shellToolCall":{"args":{"command":format!("echo round-{round}")}}},"model_call_id":format!("model-call-{round}"),"session_id":chat}));
    } else {
        let answer = format!("Done after {round} tool rounds.");
        lines.push(text(&answer));
        lines.push(serde_json::json!({"type":"result","subtype":"success","is_error":false,"duration_ms":10,"result":answer,"session_id":chat,"usage":{"inputTokens":30,"outputTokens":7}}));
    }
    lines
        .into_iter()
        .map(|line| {
            let mut bytes = line.to_string().into_bytes();
            bytes.push(b'\n');
            bytes
        })
        .collect()
}

/// `--mcp-rounds`: the MCP server the run may use, or why there is none.
enum McpConfig {
    Server(McpServer),
    Unused(String),
}

/// A server of `.cursor/mcp.json`, its `${env:VAR}`s expanded.
struct McpServer {
    name: String,
    url: String,
    headers: Vec<(String, String)>,
}

/// The server of the workspace's `.cursor/mcp.json` a run with `--approve-mcps` uses: the
/// first one; an error for a file that cannot be used or a variable not set.
fn mcp_config(args: &Args) -> Result<McpConfig, String> {
    if !args.approve_mcps {
        return Ok(McpConfig::Unused("no --approve-mcps".into()));
    }
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?,
    };
    let path = workspace.join(".cursor").join("mcp.json");
    let bad = |what: &dyn std::fmt::Display| format!("{}: {what}", path.display());
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(McpConfig::Unused(bad(&"not found")));
        }
        Err(e) => return Err(bad(&e)),
    };
    let document: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_str(&text).map_err(|e| bad(&e))?;
    let Some(servers) = document.get("mcpServers") else {
        return Ok(McpConfig::Unused(bad(&"no mcpServers")));
    };
    let listed: serde_json::Map<String, Value> =
        serde_json::from_str(servers.get()).map_err(|e| bad(&format!("mcpServers: {e}")))?;
    // The first as written: a map gives its keys back sorted.
    let Some((name, server)) = first_key(servers.get()).and_then(|n| listed.get_key_value(&n))
    else {
        return Ok(McpConfig::Unused(bad(&"no server in mcpServers")));
    };
    let not_set = |what: &str, var: String| {
        bad(&format!(
            "server {name}: {what}: ${{env:{var}}} is not set in the environment"
        ))
    };
    let url = server["url"]
        .as_str()
        .ok_or_else(|| bad(&format!("server {name}: no url")))?;
    let url = expand_env(url).map_err(|var| not_set("url", var))?;
    let mut headers = Vec::new();
    for (header, value) in server["headers"].as_object().into_iter().flatten() {
        let value = value
            .as_str()
            .ok_or_else(|| bad(&format!("server {name}: header {header} is not a string")))?;
        let value = expand_env(value).map_err(|var| not_set(&format!("header {header}"), var))?;
        headers.push((header.clone(), value));
    }
    Ok(McpConfig::Server(McpServer {
        name: name.clone(),
        url,
        headers,
    }))
}

/// The first key of the JSON object `object`.
fn first_key(object: &str) -> Option<String> {
    let rest = object.trim_start().strip_prefix('{')?;
    serde_json::Deserializer::from_str(rest)
        .into_iter::<String>()
        .next()?
        .ok()
}

/// `text` with every `${env:VAR}` replaced by VAR's value; the name of one not set.
fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${env:") {
        let Some(end) = rest[at..].find('}') else {
            break;
        };
        let name = &rest[at + "${env:".len()..at + end];
        out.push_str(&rest[..at]);
        out.push_str(&std::env::var(name).map_err(|_| name.to_owned())?);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The largest K of the `echo round-K` a prompt quotes: the rounds its conversation played.
fn largest_round_quoted(text: &str) -> u32 {
    text.split("echo round-")
        .skip(1)
        .filter_map(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            rest[..digits].parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Appends `event` to `AGENTWIRE_REPLAY_LOG`, if set.
fn log_event(event: &Value) {
    let Some(path) = std::env::var_os("AGENTWIRE_REPLAY_LOG") else {
        return;
    };
    let mut line = event.to_string();
    line.push('\n');
    // One write of the whole line: concurrent runs append whole lines.
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = file.write_all(line.as_bytes());
    }
}

/// How a `--mcp-rounds` run fails.
enum Failure {
    /// Writing stdout.
    Io(io::Error),
    /// The MCP server or its configuration: the message for stderr.
    Run(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

/// A `--mcp-rounds` run: its stream-json lines, under `chat`.
struct McpRun<'a> {
    chat: &'a str,
    /// The workspace, as `system/init` reports it.
    cwd: PathBuf,
    delay: Duration,
    times: Option<&'a Times>,
    started: Instant,
    /// Whether a line was written yet.
    written: bool,
}

impl McpRun<'_> {
    /// Connects to the server of `config`, then plays the rounds left of `rounds`.
    fn play(
        mut self,
        config: Result<McpConfig, String>,
        rounds: u32,
        prompt: &str,
    ) -> Result<(), Failure> {
        let pid = std::process::id();
        let server = match config {
            Ok(McpConfig::Server(server)) => Some(server),
            Ok(McpConfig::Unused(why)) => {
                log_event(&json!({"event": "mcp_session", "pid": pid, "error": why}));
                None
            }
            Err(e) => {
                log_event(&json!({"event": "mcp_session", "pid": pid, "error": e}));
                return Err(Failure::Run(e));
            }
        };
        let mut connected = None;
        if let Some(server) = server {
            let authorization = server
                .headers
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                .map(|(_, value)| value.clone());
            let mut entry = json!({"event": "mcp_session", "pid": pid, "url": server.url,
                "authorization": authorization});
            match McpClient::connect(&server.url, server.headers, "replay_agent") {
                Ok(client) => {
                    entry["tools"] = json!(client.tools.iter().map(|(n, _)| n).collect::<Vec<_>>());
                    log_event(&entry);
                    connected = Some((server.name, client));
                }
                Err(e) => {
                    entry["error"] = json!(e);
                    log_event(&entry);
                    let message = format!("MCP server {} at {}: {e}", server.name, server.url);
                    return Err(Failure::Run(message));
                }
            }
        }
        let chat = self.chat;
        self.write(
            &json!({"type": "system", "subtype": "init", "apiKeySource": "login",
            "cwd": self.cwd, "session_id": chat,
            "model": "Auto", "permissionMode": "default"}),
        )?;
        self.write(&json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "text", "text": prompt}]}, "session_id": chat}))?;
        let mut played = largest_round_quoted(prompt);
        let mut last_result = None;
        let tool = connected
            .as_ref()
            .and_then(|(server, client)| Some((server, client, client.tools.first()?)));
        if let Some((server, client, (tool, schema))) = tool {
            for round in played + 1..=rounds {
                let command = format!("echo round-{round}");
                self.text(&format!("Running `{command}`."))?;
                let arguments = arguments_for(schema, &command);
                let call = format!("call-{chat}-{round}");
                let args = json!({"name": format!("{server}-{tool}"), "args": arguments,
                    "toolCallId": call, "providerIdentifier": server, "toolName": tool,
                    "serverIdentifier": server});
                self.write(
                    &json!({"type": "tool_call", "subtype": "started", "call_id": call,
                    "tool_call": {"mcpToolCall": {"args": args}}, "session_id": chat}),
                )?;
                log_event(&json!({"event": "tool_call", "pid": pid, "round": round,
                    "name": tool, "arguments": arguments}));
                let (text, is_error) = match client.call(round, tool, &arguments, None) {
                    Ok(answer) => answer,
                    Err(e) => {
                        log_event(&json!({"event": "tool_result", "pid": pid, "round": round,
                            "error": e}));
                        return Err(Failure::Run(format!("tools/call {tool}: {e}")));
                    }
                };
                log_event(&json!({"event": "tool_result", "pid": pid, "round": round,
                    "text": text, "is_error": is_error}));
                let success = json!({"content": [{"text": {"text": text}}], "isError": is_error});
                self.write(
                    &json!({"type": "tool_call", "subtype": "completed", "call_id": call,
                    "tool_call": {"mcpToolCall": {"args": args, "result": {"success": success}}},
                    "session_id": chat}),
                )?;
                played = round;
                last_result = Some(text);
            }
        }
        let answer = format!(
            "Done after {played} tool rounds. Last result: {}",
            last_result.as_deref().unwrap_or("(none)")
        );
        self.text(&answer)?;
        let ms = self.started.elapsed().as_millis() as u64;
        self.write(
            &json!({"type": "result", "subtype": "success", "duration_ms": ms,
            "duration_api_ms": ms, "is_error": false, "result": answer, "session_id": chat,
            "usage": {"inputTokens": 30, "outputTokens": 7}}),
        )?;
        Ok(())
    }

    /// Writes an assistant line of `text`.
    fn text(&mut self, text: &str) -> io::Result<()> {
        self.write(
            &json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}]}, "session_id": self.chat}),
        )
    }

    /// Writes `line`, `--delay-ms` after the one before.
    fn write(&mut self, line: &Value) -> io::Result<()> {
        if self.written && !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        let at = unix_ns();
        let stdout = io::stdout();
        let mut out = stdout.lock();
        out.write_all(&bytes)?;
        out.flush()?;
        if !self.written
            && let Some(times) = self.times
        {
            times.first_line(at)?;
        }
        self.written = true;
        Ok(())
    }
}

/// Plays the run; its exit code.
fn run(args: &Args, argv: &[String], times: Option<&Times>) -> Result<u8, String> {
    let mut stdin = Vec::new();
    io::stdin()
        .read_to_end(&mut stdin)
        .map_err(|e| format!("reading the prompt: {e}"))?;
    let prompt = String::from_utf8_lossy(&stdin);
    let child = if args.spawn_child {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .arg(SLEEPER)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("--spawn-child: {e}"))?;
        Some(child.id())
    } else {
        None
    };
    let chat = chat_for(args);
    if let Some(log) = std::env::var_os("AGENTWIRE_REPLAY_LOG") {
        let id = match &chat {
            Chat::Id { id, .. } => Some(id.as_str()),
            Chat::Recorded | Chat::Lost(_) => None,
        };
        append_log(Path::new(&log), argv, &prompt, stdin.len(), child, id)
            .map_err(|e| format!("AGENTWIRE_REPLAY_LOG: {e}"))?;
    }
    if args.hang_on_resume && args.resume.is_some() {
        sleep_forever();
    }
    let written = match &chat {
        Chat::Lost(id) => {
            let _ = writeln!(io::stderr(), "Error: chat {id} not found");
            return Ok(1);
        }
        Chat::Id { id, .. } if args.mcp_rounds.is_some() => {
            let run = McpRun {
                chat: id,
                cwd: match &args.workspace {
                    Some(dir) => dir.clone(),
                    None => std::env::current_dir().unwrap_or_default(),
                },
                delay: args.delay,
                times,
                started: Instant::now(),
                written: false,
            };
            match run.play(mcp_config(args), args.mcp_rounds.unwrap_or(0), &prompt) {
                Ok(()) => Ok(false),
                Err(Failure::Io(e)) => Err(e),
                Err(Failure::Run(message)) => return Err(message),
            }
        }
        Chat::Id { id, resumed } if args.chat_dir.is_some() => {
            let dir = args.chat_dir.as_deref().expect("checked");
            let round = take_round(dir, id, *resumed, &prompt)?;
            let lines = tool_loop_lines(id, round, args.tool_rounds);
            write_lines(lines.into_iter().map(Ok), args.delay, times, None)
                .map(|()| round < args.tool_rounds)
        }
        Chat::Id { id, .. } => match transcript_for(args, &prompt)? {
            Some(path) => replay(&path, args.delay, times, Some(id)).map(|()| false),
            None => Ok(false),
        },
        Chat::Recorded => match transcript_for(args, &prompt)? {
            Some(path) => replay(&path, args.delay, times, None).map(|()| false),
            None => Ok(false),
        },
    };
    let waits_for_tool = match written {
        Ok(waits) => waits,
        // The reader hung up: nobody is listening any more.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(args.exit),
        Err(e) => return Err(e.to_string()),
    };
    if waits_for_tool {
        // As the CLI, waiting for the shell call's approval; the proxy stops it.
        std::thread::sleep(TOOL_WAIT);
        return Err("no result for the tool call".into());
    }
    if let Some(path) = &args.stderr {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let _ = io::stderr().write_all(&bytes);
    }
    if args.hang {
        sleep_forever();
    }
    Ok(args.exit)
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn main() -> ExitCode {
    let times = std::env::var_os("AGENTWIRE_REPLAY_TIMES").map(|file| Times {
        file: file.into(),
        started_unix_ns: unix_ns(),
    });
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Version) => {
            println!("agentwire-replay-agent {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Models) => {
            print!("{MODELS}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Sleeper) => sleep_forever(),
        Err(message) => {
            eprintln!("replay_agent: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&args, &argv, times.as_ref()) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("replay_agent: {message}");
            ExitCode::FAILURE
        }
    }
}
