//! Replays a cursor-agent stream-json transcript through agentwire's [`Bridge`] and writes
//! exactly the HTTP response body a client would receive.
//!
//! ```text
//! translate [--api chat-completions|responses|messages] [--chunk N] [--no-stream]
//!           [--include-usage] [--request REQUEST.json] [--stderr FILE] [--exit CODE]
//!           [--created UNIX] TRANSCRIPT
//! ```
//!
//! The transcript is read and fed in N-byte chunks (default 4096), so memory stays bounded
//! whatever its size. `--stderr` and `--exit` replay a failed run (the agent's stderr and
//! exit code; default exit 0). The body goes to stdout; the first line of stderr is
//! `status: NNN`. `--api` names the dialect of the request (default `chat-completions`).
//! Without `--request` the request is the dialect's smallest saying "hi" (for Chat
//! Completions `{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}`);
//! `--no-stream` sets `stream` to false in whichever request is used, and `--include-usage`
//! sets Chat Completions' `stream_options.include_usage`.

use std::fs::File;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;

struct Args {
    dialect: Dialect,
    chunk: usize,
    no_stream: bool,
    include_usage: bool,
    request: Option<String>,
    stderr: Option<String>,
    exit: i32,
    created: u64,
    transcript: String,
}

const USAGE: &str = "usage: translate [--api chat-completions|responses|messages] [--chunk N] [--no-stream] [--include-usage] [--request REQUEST.json] [--stderr FILE] [--exit CODE] [--created UNIX] TRANSCRIPT";

/// The request used without `--request`: the dialect's smallest, as a stream.
fn default_request(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Responses => r#"{"model":"auto","stream":true,"input":"hi"}"#,
        Dialect::Messages => {
            r#"{"model":"auto","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#
        }
        _ => r#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
    }
}

fn parse_dialect(name: &str) -> Result<Dialect, String> {
    name.parse()
        .map_err(|e: agentwire::names::UnknownName| format!("--api: {e}"))
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dialect: Dialect::ChatCompletions,
        chunk: 4096,
        no_stream: false,
        include_usage: false,
        request: None,
        stderr: None,
        exit: 0,
        created: 1_700_000_000,
        transcript: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--api" => args.dialect = parse_dialect(&value("--api")?)?,
            "--chunk" => {
                args.chunk = value("--chunk")?
                    .parse()
                    .map_err(|e| format!("--chunk: {e}"))?;
                if args.chunk == 0 {
                    return Err("--chunk must be at least 1".into());
                }
            }
            "--no-stream" => args.no_stream = true,
            "--include-usage" => args.include_usage = true,
            "--request" => args.request = Some(value("--request")?),
            "--stderr" => args.stderr = Some(value("--stderr")?),
            "--exit" => {
                args.exit = value("--exit")?
                    .parse()
                    .map_err(|e| format!("--exit: {e}"))?
            }
            "--created" => {
                args.created = value("--created")?
                    .parse()
                    .map_err(|e| format!("--created: {e}"))?
            }
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            other => {
                if !args.transcript.is_empty() {
                    return Err("only one transcript".into());
                }
                args.transcript = other.to_owned();
            }
        }
    }
    if args.transcript.is_empty() {
        return Err("no transcript given".into());
    }
    Ok(args)
}

/// The request body, with `--no-stream` / `--include-usage` applied. A body that is not
/// a JSON object is passed on untouched: the bridge answers it with a 400.
fn request_body(args: &Args) -> Result<Vec<u8>, String> {
    let body = match &args.request {
        Some(path) => std::fs::read(path).map_err(|e| format!("{path}: {e}"))?,
        None => default_request(args.dialect).as_bytes().to_vec(),
    };
    if !args.no_stream && !args.include_usage {
        return Ok(body);
    }
    let Ok(serde_json::Value::Object(mut request)) = serde_json::from_slice(&body) else {
        return Ok(body);
    };
    if args.no_stream {
        request.insert("stream".into(), false.into());
        request.remove("stream_options");
    } else if args.include_usage && args.dialect == Dialect::ChatCompletions {
        request.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    serde_json::to_vec(&request).map_err(|e| e.to_string())
}

/// Hands the bridge's outputs to stdout (body) and stderr (status). Returns whether the
/// response ended.
fn drain(bridge: &mut Bridge, out: &mut impl Write) -> io::Result<bool> {
    while let Some(output) = bridge.poll_output() {
        match output {
            Output::Head(head) => eprintln!("status: {}", head.status),
            Output::Body(bytes) => out.write_all(bytes)?,
            // A bridge made by `Bridge::new` never respawns: it serves no conversation.
            Output::StopAgent | Output::Respawn => {}
            Output::End => return Ok(true),
        }
    }
    Ok(false)
}

fn run(args: &Args) -> Result<(), String> {
    let body = request_body(args)?;
    let params = BridgeParams {
        now_ms: 0,
        created_unix: args.created,
        id_seed: 0,
    };
    let mut bridge = Bridge::new(args.dialect, &body, &Config::default(), params);
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let io_err = |e: io::Error| e.to_string();
    let mut ended = drain(&mut bridge, &mut out).map_err(io_err)?;
    if bridge.invocation().is_some() {
        let mut file =
            File::open(&args.transcript).map_err(|e| format!("{}: {e}", args.transcript))?;
        let mut buf = vec![0u8; args.chunk];
        while !ended {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("{}: {e}", args.transcript)),
            };
            bridge
                .push_stdout(&buf[..n], 0)
                .map_err(|e| e.to_string())?;
            ended = drain(&mut bridge, &mut out).map_err(io_err)?;
        }
        if let Some(path) = &args.stderr {
            let stderr = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
            bridge.push_stderr(&stderr, 0).map_err(|e| e.to_string())?;
        }
        bridge
            .agent_exited(ExitStatus::Code(args.exit), 0)
            .map_err(|e| e.to_string())?;
        drain(&mut bridge, &mut out).map_err(io_err)?;
    }
    out.flush().map_err(io_err)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("translate: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("translate: {message}");
            ExitCode::FAILURE
        }
    }
}
