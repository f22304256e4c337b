//! What the two example proxies share: everything but their I/O model.
//!
//! `tokio_proxy` and `blocking_proxy` (in `src/bin`) are built on this library, so both have the
//! same flags, routes, error bodies, authentication, model cache, process-group handling,
//! request log and demo. Each proxy keeps only its own sockets, pipes and timers, and
//! drives [`agentwire::bridge::Bridge`] with them.
//!
//! - [`flags`]: the command line, checked (loopback unless a key is set), into [`Settings`].
//! - [`connections`]: `--max-connections`, and the lane that keeps `/health` answerable.
//! - [`framing`]: where a request body ends (RFC 9112 §6.3), strictly.
//! - [`scan`]: the same framing followed through hyper's reads, for `tokio_proxy`.
//! - [`http`]: the routes (one per API dialect, `count_tokens`, the models list, the
//!   probes), the checks every request passes (Host, Origin, preflight, key, route, media
//!   type), errors in the route's dialect, CORS, response headers.
//! - [`aliases`]: `--model-alias`, client model names mapped to the agent's.
//! - [`models`]: `/v1/models` from the CLI's listing, cached with a TTL, one listing at a
//!   time, stale on failure.
//! - [`agent`]: spawning in a process group with the proxy's secrets kept out of its
//!   environment, signalling the group.
//! - [`lifecycle`]: one agent process's life without I/O, for every driver: the stop
//!   sequence (SIGTERM, grace, SIGKILL), the exit drain, the exit reported once, a spawn
//!   failure as exit 127, how the process ended for the log line.
//! - [`conversations`]: the registry that lets a request resume the agent chat that
//!   answered its conversation, with only what is new; owners and client ids; expiry.
//! - [`acp`]: `--agent-protocol acp`, one warm agent process serving every request as
//!   an ACP session, restarted with back-off; conversations continue on its sessions.
//! - [`mcp`]: the MCP endpoint (`/mcp/<token>`) where those sessions' agents call the
//!   client's tools.
//! - [`live`]: `--cursor-mcp`, cursor-agent given the client's tools as MCP tools: the
//!   configuration files, the live chats' table, and how an MCP request finds its chat.
//! - [`reaper`]: `--reap-orphans` (PID 1 in a container): reaping what agents leave behind.
//! - [`record`]: the one log line per request, and log setup.
//! - [`demo`]: the embedded transcript `--demo` answers from.
#![warn(missing_docs)]

pub mod acp;
pub mod agent;
pub mod aliases;
pub mod connections;
pub mod conversations;
pub mod demo;
pub mod flags;
pub mod framing;
pub mod http;
pub mod lifecycle;
pub mod live;
pub mod mcp;
pub mod models;
pub mod reaper;
pub mod record;
pub mod scan;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentwire::bridge::BridgeParams;
use clap::Parser;

pub use flags::Settings;

/// What `main` does first: play the demo agent if that is this process's role, else read
/// the flags, start logging and check the settings. `Err` is the exit code to return at
/// once (the demo agent's, or 2 after printing why the flags are refused).
pub fn start(program: &str) -> Result<Settings, ExitCode> {
    if let Some(code) = demo::run_as_agent() {
        return Err(code);
    }
    let flags = flags::Flags::parse();
    record::init_logging(flags.log_format);
    let fail = |message: String| {
        eprintln!("{program}: {message}");
        ExitCode::from(2)
    };
    let mut settings = flags.settings().map_err(fail)?;
    // A warm ACP agent lives as long as the proxy, and what it detaches and then drops
    // (a shell tool's command in a group of its own, whose session process went) would
    // otherwise be init's: adopted, it is stopped with the agent.
    if settings.reap_orphans || (settings.acp.is_some() && cfg!(target_os = "linux")) {
        reaper::start().map_err(fail)?;
    }
    let (fits, warning) =
        connections::fit_descriptors(settings.max_connections, settings.max_concurrent);
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
    settings.max_connections = fits;
    Ok(settings)
}

/// The proxy's monotonic clock in milliseconds, the `now_ms` every bridge input takes.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// Milliseconds since the clock started.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// The instant of a bridge deadline given in this clock's milliseconds.
    pub fn instant(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

/// Per-request ids: a counter, mixed with the start time so ids differ across restarts.
#[derive(Debug)]
pub struct RequestIds {
    next: AtomicU64,
    salt: u64,
}

impl Default for RequestIds {
    fn default() -> RequestIds {
        RequestIds::new()
    }
}

impl RequestIds {
    /// Starts counting.
    pub fn new() -> RequestIds {
        let salt = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        RequestIds {
            next: AtomicU64::new(1),
            salt,
        }
    }

    /// The next request number (1, 2, …), for logs.
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The bridge parameters of request `number`.
    pub fn params(&self, number: u64, clock: &Clock) -> BridgeParams {
        let created_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        BridgeParams {
            now_ms: clock.now_ms(),
            created_unix,
            id_seed: self.seed(number),
        }
    }

    /// The id seed of request `number`: its response ids and `request-id` derive from it.
    pub fn seed(&self, number: u64) -> u64 {
        self.salt ^ number.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}
