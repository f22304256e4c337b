//! The Agent Client Protocol (ACP) transport: one warm agent process serving many
//! requests, each on a fresh ACP session, through the same [`Bridge`](crate::bridge::Bridge)
//! policy and dialect encoders as the per-request path.
//!
//! ```text
//!  request body ──► Connection::start_turn ─► TurnId (a Bridge inside: head, keep-alive, timeouts)
//!  agent stdout ──► push_stdout ─► LineFramer ─► JSON-RPC ─┬─► responses: handshake, sessions, prompt ends
//!  stderr, exit ──► push_stderr / agent_exited             ├─► session/update ─► event::Event ─► the turn's Bridge
//!  time ──────────► handle_timeout                         └─► agent requests ─► answered by policy
//!  poll_transmit ◄── bytes for the agent's stdin (initialize, session/new, set model, prompt, cancel, answers)
//!  poll_output(turn) ◄── Head / Body / End        poll_decision ◄── Restart
//! ```
//!
//! Nothing here knows processes or pipes: the adapter spawns the agent (`gemini --acp`,
//! `claude-agent-acp`, `codex-acp`, `cursor-agent acp`), writes what
//! [`Connection::poll_transmit`] gives, and pushes what the agent writes.

mod config;
mod connection;
mod message;
mod session;
mod update;
mod usage;

pub use config::{AcpConfig, ExtensionPolicy, PermissionChoice};
pub use connection::{Connection, ConnectionError, Decision, TurnId};
