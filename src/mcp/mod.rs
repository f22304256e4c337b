//! A Model Context Protocol (MCP) server offering an agent the client's own tools: one
//! [`Server`] per agent session, which answers the protocol itself and hands each
//! `tools/call` to its owner as an [`McpEvent::Call`], holding the agent inside the call
//! until the owner answers it with what the client's tool returned.
//!
//! ```text
//!  conversation::ToolSpec ──► Server::new ──► tools/list (name, description, inputSchema)
//!  HTTP request ──► handle_http ─► ExchangeId ─┐                  ┌──► poll_event: Call / Cancelled / CallLimit / Closed
//!  stdio bytes ───► push_stdio ─► LineFramer ──┼──► JSON-RPC ─────┤
//!  the client's tool result ──► answer_call ───┘                  ├──► poll_exchange(id): Head / Body (JSON, SSE) / End
//!  time ──► handle_timeout (keep-alives, call limits)             └──► poll_transmit: stdio lines
//! ```
//!
//! Nothing here opens a socket or reads a clock: the adapter serves the MCP endpoint
//! (after its own Host, Origin and secret checks, the secret compared with
//! [`secret_matches`]) or the stdio pipes, hands requests and bytes in, and writes what
//! comes out. The session id and the current time are the caller's.
//!
//! What the recorded agents (Claude Code 2.1 through claude-agent-acp, codex-acp 0.16,
//! Gemini CLI 0.61) do, and what follows here:
//! - They ask for protocol version 2025-11-25 (Claude Code) or 2025-06-18 (Codex, Gemini),
//!   and none sends a batch. Gemini sends no `MCP-Protocol-Version` header at all, so its
//!   absence means the negotiated version.
//! - Claude Code and Gemini open a `GET` stream after initializing; it is refused (405)
//!   and they carry on. Codex probes OAuth discovery paths (`GET /.well-known/…`) before
//!   `initialize`; those are not the MCP endpoint and never reach the server.
//! - A `tools/call` answered as plain JSON is cut by Claude Code and Gemini at about 60 s;
//!   an SSE answer with a comment every 15 s kept them waiting for the 330 s measured,
//!   hence every pending call's answer is an SSE stream.

mod config;
mod content;
mod http;
pub(crate) mod link;
mod rpc;
mod server;
mod tools;

pub use config::Config;
pub use content::ToolOutcome;
pub use http::{ExchangeId, ExchangeOutput, Head, HttpRequest};
pub use server::{CallId, CancelReason, McpError, McpEvent, Server, is_valid_session_id};
pub use tools::{ArgumentShape, Tool, ToolSet};

/// The protocol versions served, latest first: the one answered to a client asking for
/// another.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The one version with JSON-RPC batches (2025-06-18 removed them).
const BATCH_VERSION: &str = "2025-03-26";

/// Whether `given` equals `expected`, in a time that does not depend on where they
/// differ: for comparing a secret (a bearer token, a session id) with what a request
/// carries. A length mismatch returns at once (the length is not the secret).
#[must_use]
pub fn secret_matches(expected: &[u8], given: &[u8]) -> bool {
    if expected.len() != given.len() {
        return false;
    }
    let difference = expected
        .iter()
        .zip(given)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    // Keeps the fold from being turned into an early exit.
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_match_only_when_equal() {
        assert!(secret_matches(b"s3cret", b"s3cret"));
        assert!(secret_matches(b"", b""));
        assert!(!secret_matches(b"s3cret", b"s3creT"));
        assert!(!secret_matches(b"s3cret", b"s3cre"));
        assert!(!secret_matches(b"s3cret", b"x3cret"));
    }
}
