//! Writes a reply that needs no agent exactly as a client receives it: the answer to
//! `POST /v1/messages/count_tokens`, or an adapter's own refusal in a dialect's shape.
//!
//! ```text
//! reply count-tokens [REQUEST.json]
//! reply error chat-completions|responses|messages KIND MESSAGE
//! ```
//!
//! The body goes to stdout; stderr holds `status: NNN` and `retryable: true|false` (the
//! `x-should-retry` header), one per line. `count-tokens` reads the request body from the
//! file, or from stdin without one. KIND is the class of the refusal: the name of an
//! `ErrorKind` (`ErrorKind::ALL`), with `-` or `_` between words (`not-found`,
//! `usage_limit`). The bindings' tests compare their own replies with this program's.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use agentwire::anthropic;
use agentwire::api::{ErrorKind, ErrorReply, RequestLimits};
use agentwire::bridge::Dialect;
use agentwire::names::UnknownName;

const USAGE: &str = "usage: reply count-tokens [REQUEST.json]\n       reply error chat-completions|responses|messages KIND MESSAGE";

fn dialect(name: &str) -> Result<Dialect, String> {
    name.parse().map_err(|e: UnknownName| e.to_string())
}

fn kind(name: &str) -> Result<ErrorKind, String> {
    name.replace('-', "_")
        .parse()
        .map_err(|e: UnknownName| e.to_string())
}

/// The reply the arguments ask for, and the dialect it is rendered in.
fn reply(args: &[String]) -> Result<(Dialect, ErrorReply), String> {
    match args {
        [command, rest @ ..] if command == "count-tokens" && rest.len() <= 1 => {
            let body = match rest.first() {
                Some(path) => std::fs::read(path).map_err(|e| format!("{path}: {e}"))?,
                None => {
                    let mut body = Vec::new();
                    io::stdin()
                        .read_to_end(&mut body)
                        .map_err(|e| e.to_string())?;
                    body
                }
            };
            let reply = anthropic::count_tokens(&body, &RequestLimits::default());
            Ok((Dialect::Messages, reply))
        }
        [command, dialect_name, kind_name, message] if command == "error" => Ok((
            dialect(dialect_name)?,
            ErrorReply::refusal(kind(kind_name)?, message.as_str()),
        )),
        _ => Err(String::new()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dialect, reply) = match reply(&args) {
        Ok(found) => found,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("reply: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut body = Vec::new();
    dialect.write_error(&reply, &mut body);
    eprintln!("status: {}", reply.status());
    eprintln!("retryable: {}", reply.retryable());
    match io::stdout().write_all(&body) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reply: {e}");
            ExitCode::FAILURE
        }
    }
}
