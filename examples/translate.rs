//! Replays a cursor-agent stream-json transcript through agentwire and writes exactly the
//! HTTP response body a client would receive.
//!
//! ```text
//! translate [--chunk N] [--no-stream] [--include-usage] [--request REQUEST.json]
//!           [--created UNIX] TRANSCRIPT
//! ```
//!
//! The transcript is read and fed in N-byte chunks (default 4096), so memory stays bounded
//! whatever its size. The body goes to stdout; the first line of stderr is `status: NNN`.
//! Without `--request` the request is
//! `{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}`, with
//! `--no-stream` and `--include-usage` applied to it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use agentwire::cursor::Decoder;
use agentwire::event::Event;
use agentwire::openai::{ApiError, ChunkEncoder, CompletionBuilder, OutputOptions, ResponseMeta};

struct Args {
    chunk: usize,
    no_stream: bool,
    include_usage: bool,
    request: Option<String>,
    created: u64,
    transcript: String,
}

const USAGE: &str = "usage: translate [--chunk N] [--no-stream] [--include-usage] [--request REQUEST.json] [--created UNIX] TRANSCRIPT";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        chunk: 4096,
        no_stream: false,
        include_usage: false,
        request: None,
        created: 1_700_000_000,
        transcript: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
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

/// What the translate tool needs from the request body.
struct RequestInfo {
    model: String,
    stream: bool,
    include_usage: bool,
}

fn read_request(args: &Args) -> Result<RequestInfo, String> {
    let body = match &args.request {
        Some(path) => std::fs::read(path).map_err(|e| format!("{path}: {e}"))?,
        None => br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#
            .to_vec(),
    };
    let value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("request: {e}"))?;
    let model = value["model"].as_str().unwrap_or("auto");
    let model = model.rsplit('/').next().unwrap_or(model).to_owned();
    let stream = value["stream"].as_bool().unwrap_or(false) && !args.no_stream;
    let include_usage = value["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false)
        || args.include_usage;
    Ok(RequestInfo {
        model,
        stream,
        include_usage,
    })
}

/// The response being written: a stream whose head waits for the first answer event, or a
/// body assembled to the end.
enum Response {
    Stream {
        encoder: ChunkEncoder,
        head: Option<u16>,
        pending: Vec<u8>,
    },
    Body(CompletionBuilder),
}

impl Response {
    fn push(&mut self, event: &Event<'_>, out: &mut impl Write) -> io::Result<()> {
        match self {
            Response::Body(builder) => builder.push(event),
            Response::Stream {
                encoder,
                head,
                pending,
            } => {
                if head.is_none() {
                    if let Event::Failed(failure) = event {
                        // Nothing sent yet: the failure gets its true status.
                        let error = ApiError::from_failure(failure);
                        *head = Some(error.status);
                        print_status(error.status);
                        pending.clear();
                        error.write_json(pending);
                        out.write_all(pending)?;
                        pending.clear();
                        encoder.fail(failure, &mut Vec::new());
                        return Ok(());
                    }
                }
                encoder.encode(event, pending);
                if head.is_none() && event.is_answer() {
                    *head = Some(200);
                    print_status(200);
                }
                if head.is_some() {
                    out.write_all(pending)?;
                    pending.clear();
                }
            }
        }
        Ok(())
    }

    fn finish(self, out: &mut impl Write) -> io::Result<()> {
        match self {
            Response::Body(builder) => {
                print_status(builder.status());
                let mut body = Vec::new();
                builder.write_body(&mut body);
                out.write_all(&body)
            }
            Response::Stream { head, pending, .. } => {
                if head.is_none() {
                    print_status(200);
                }
                out.write_all(&pending)
            }
        }
    }
}

fn print_status(status: u16) {
    eprintln!("status: {status}");
}

fn run(args: &Args) -> Result<(), String> {
    let request = read_request(args)?;
    let meta = ResponseMeta::new(0, args.created, request.model);
    let options = OutputOptions {
        include_usage: request.include_usage,
        ..OutputOptions::default()
    };
    let mut response = if request.stream {
        Response::Stream {
            encoder: ChunkEncoder::new(&meta, &options),
            head: None,
            pending: Vec::new(),
        }
    } else {
        Response::Body(CompletionBuilder::new(&meta, &options))
    };
    let mut file = File::open(&args.transcript).map_err(|e| format!("{}: {e}", args.transcript))?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut decoder = Decoder::default();
    let mut buf = vec![0u8; args.chunk];
    let io_err = |e: io::Error| e.to_string();
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("{}: {e}", args.transcript)),
        };
        decoder.push_stdout(&buf[..n]).map_err(|e| e.to_string())?;
        while let Some(event) = decoder.poll_event() {
            response.push(&event, &mut out).map_err(io_err)?;
        }
    }
    decoder.push_eof().map_err(|e| e.to_string())?;
    while let Some(event) = decoder.poll_event() {
        response.push(&event, &mut out).map_err(io_err)?;
    }
    response.finish(&mut out).map_err(io_err)?;
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
