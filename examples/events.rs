//! Prints the decoder's events for a cursor-agent transcript, one line each, in a stable
//! text form: what the C and Python bindings' tests compare their own decoding with.
//!
//! ```text
//! events [--chunk N] TRANSCRIPT
//! ```
//!
//! Strings are quoted with every byte below 0x20, 0x7f, `"` and `\` written as `\xHH`;
//! a cost is written as the hex bits of its `f64`, so every binding prints it the same way.
//! Outcomes, progress kinds, finish reasons and failure kinds are written by their stable
//! names (`name()`), which the C and Python bindings read from the C ABI.

use std::io::{self, Write};
use std::process::ExitCode;

use agentwire::cursor::Decoder;
use agentwire::event::{ActivityPhase, Event, Progress};

fn quoted(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for &b in text.as_bytes() {
        if b < 0x20 || b == 0x7f || b == b'"' || b == b'\\' {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out.push(b'"');
}

fn optional(out: &mut Vec<u8>, label: &str, text: Option<&str>) {
    out.extend_from_slice(format!(" {label}:").as_bytes());
    match text {
        Some(text) => quoted(out, text),
        None => out.push(b'-'),
    }
}

fn line(out: &mut Vec<u8>, event: &Event<'_>) {
    match event {
        Event::TextDelta(text) => {
            out.extend_from_slice(b"text ");
            quoted(out, text);
        }
        Event::ReasoningDelta(text) => {
            out.extend_from_slice(b"reasoning ");
            quoted(out, text);
        }
        Event::ToolCall(call) => {
            out.extend_from_slice(format!("tool_call {} ", call.index).as_bytes());
            quoted(out, call.id);
            out.push(b' ');
            quoted(out, call.name);
            out.push(b' ');
            quoted(out, call.arguments);
        }
        Event::AgentActivity(activity) => {
            out.extend_from_slice(b"activity ");
            quoted(out, activity.call_id);
            out.push(b' ');
            quoted(out, activity.tool);
            match activity.phase {
                ActivityPhase::Started => out.extend_from_slice(b" started"),
                ActivityPhase::Completed {
                    outcome: o,
                    started_seen,
                } => out.extend_from_slice(
                    format!(" completed:{}:{}", o.name(), u8::from(started_seen)).as_bytes(),
                ),
                _ => out.extend_from_slice(b" other"),
            }
            out.push(b' ');
            quoted(out, activity.summary);
            optional(out, "args", activity.arguments);
            optional(out, "model_call", activity.model_call_id);
        }
        Event::Progress(progress) => {
            let attempt = match *progress {
                Progress::Reconnecting { attempt } | Progress::Retrying { attempt } => attempt,
                _ => 0,
            };
            out.extend_from_slice(
                format!("progress {} {attempt}", progress.kind().name()).as_bytes(),
            );
        }
        Event::Usage(usage) => {
            let reasoning = usage
                .reasoning_tokens
                .map_or_else(|| "-".to_owned(), |n| n.to_string());
            let cost = usage
                .cost
                .map_or_else(|| "-".to_owned(), |c| format!("{:016x}", c.to_bits()));
            out.extend_from_slice(
                format!(
                    "usage {} {} {} {} reasoning:{reasoning} cost:{cost} {} {}",
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    usage.prompt_tokens(),
                    usage.total_tokens()
                )
                .as_bytes(),
            );
        }
        Event::Finish(reason) => {
            out.extend_from_slice(format!("finish {}", reason.name()).as_bytes());
        }
        Event::Failed(failure) => {
            out.extend_from_slice(format!("failed {} ", failure.kind.name()).as_bytes());
            quoted(out, &failure.message);
        }
        _ => out.extend_from_slice(b"other"),
    }
    out.push(b'\n');
}

fn run() -> Result<(), String> {
    let mut chunk = 4096usize;
    let mut path = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--chunk" => {
                chunk = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--chunk needs a positive number")?;
            }
            _ if path.is_none() => path = Some(arg),
            _ => return Err("only one transcript".into()),
        }
    }
    let path = path.ok_or("usage: events [--chunk N] TRANSCRIPT")?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk) {
        decoder.push_stdout(piece).map_err(|e| e.to_string())?;
        while let Some(event) = decoder.poll_event() {
            line(&mut out, &event);
        }
    }
    decoder.push_eof().map_err(|e| e.to_string())?;
    while let Some(event) = decoder.poll_event() {
        line(&mut out, &event);
    }
    io::stdout().write_all(&out).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("events: {message}");
            ExitCode::FAILURE
        }
    }
}
