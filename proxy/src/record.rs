//! One log line per request, written when it ends, and the log setup.

use std::fmt;
use std::io::IsTerminal;
use std::time::Instant;

use agentwire::cursor::{ExitStatus, Invocation};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

use super::agent::Signal;
use super::conversations::Continuation;
use super::flags::LogFormat;

/// Starts logging to stderr in `format`. `RUST_LOG` filters: a level (`warn`), or
/// `target=level` directives (`hyper=debug,info`); the default is `info`. (Span and field
/// filters, which would take a regex engine into the build, are not supported.)
pub fn init_logging(format: LogFormat) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|directives| directives.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO));
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let registry = tracing_subscriber::registry();
    match format {
        LogFormat::Text => registry.with(lines.with_filter(filter)).init(),
        LogFormat::Json => registry
            .with(lines.json().flatten_event(true).with_filter(filter))
            .init(),
    }
}

/// How the agent of a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentEnd {
    /// No agent ran (the request was refused or invalid).
    NotStarted,
    /// It could not be started.
    SpawnFailed,
    /// It exited by itself.
    Exited(ExitStatus),
    /// The proxy stopped its group with this signal, and it then ended so.
    Stopped(Signal, ExitStatus),
    /// The request was a turn on the warm ACP agent, which serves on.
    Warm,
}

impl fmt::Display for AgentEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentEnd::NotStarted => f.write_str("not started"),
            AgentEnd::Warm => f.write_str("warm ACP agent"),
            AgentEnd::SpawnFailed => f.write_str("spawn failed"),
            AgentEnd::Exited(status) => write!(f, "exited ({status})"),
            AgentEnd::Stopped(Signal::Term, status) => write!(f, "stopped by SIGTERM ({status})"),
            AgentEnd::Stopped(Signal::Kill, status) => write!(f, "stopped by SIGKILL ({status})"),
        }
    }
}

/// Why the response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseEnd {
    /// The whole response was written.
    Complete,
    /// The client hung up (or a write to it failed) before the end.
    ClientGone,
    /// The server shut down during it.
    Shutdown,
}

impl fmt::Display for ResponseEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResponseEnd::Complete => "complete",
            ResponseEnd::ClientGone => "client gone",
            ResponseEnd::Shutdown => "shutdown",
        })
    }
}

/// What is known about one request, logged once when it ends.
#[derive(Debug)]
pub struct RequestRecord {
    /// The proxy's request number.
    pub number: u64,
    /// `METHOD /path`.
    pub route: String,
    /// The model asked for (`--model`), once known.
    pub model: Option<String>,
    /// The response status (0 until the head is sent).
    pub status: u16,
    /// Body bytes written.
    pub bytes_out: u64,
    /// How the agent ended.
    pub agent: AgentEnd,
    /// Why the response ended.
    pub end: ResponseEnd,
    /// How its run began: resuming its conversation's chat, or fresh (and why); `None`
    /// where no conversation applies.
    pub conversation: Option<Continuation>,
    /// Fresh runs that replaced a resumed chat the agent could not continue.
    pub respawns: u32,
    started: Instant,
}

impl RequestRecord {
    /// A request starting now.
    pub fn new(number: u64, method: &str, path: &str) -> RequestRecord {
        RequestRecord {
            number,
            route: format!("{method} {path}"),
            model: None,
            status: 0,
            bytes_out: 0,
            agent: AgentEnd::NotStarted,
            end: ResponseEnd::Complete,
            conversation: None,
            respawns: 0,
            started: Instant::now(),
        }
    }

    /// Notes the model of the agent run `invocation` describes.
    pub fn set_model(&mut self, invocation: &Invocation) {
        self.model = invocation
            .args
            .iter()
            .position(|a| a == "--model")
            .and_then(|i| invocation.args.get(i + 1))
            .cloned();
    }

    /// Writes the log line.
    pub fn log(&self) {
        let conversation = self.conversation.unwrap_or(Continuation::Invalid);
        tracing::info!(
            id = self.number,
            route = %self.route,
            model = self.model.as_deref().unwrap_or("-"),
            status = self.status,
            duration_ms = self.started.elapsed().as_millis() as u64,
            bytes_out = self.bytes_out,
            agent = %self.agent,
            end = %self.end,
            conversation = %conversation,
            respawns = self.respawns,
            "request"
        );
    }
}
