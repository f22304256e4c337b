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
//!
//! The parts, one a file:
//! - `connection.rs`: the [`Connection`] callers drive, and the agent's lifecycle;
//! - `route.rs`: where each line the agent writes goes, and what each answer to a
//!   request of ours does;
//! - `rpc.rs`: our request ids, the requests awaiting answers and their deadlines, the
//!   bytes for the agent's stdin; `message.rs`: the JSON-RPC messages themselves;
//! - `handshake.rs`: `initialize` and what its answer tells;
//! - `turn.rs`: one client request ([`TurnId`]), its phases and its link to a session;
//! - `session.rs`: one session, its models and how one is set; `pool.rs`: the sessions
//!   held apart from turns (made ahead of need, retired after use);
//! - `schedule.rs`: which queued turn runs next, on which session, and how it starts;
//! - `prompt.rs`: a turn's prompt and what its answer makes of the response;
//! - `update.rs`: `session/update` notifications as neutral events; `usage.rs`: the
//!   usage each agent reports;
//! - `permission.rs`: the agent's requests, answered by policy; `config.rs`: the
//!   settings ([`AcpConfig`]);
//! - `profile.rs`: what differs between agents given a client's tools; `launch.rs`: how
//!   to start one with its own tools off.

mod config;
mod connection;
mod conversations;
mod handshake;
mod launch;
mod message;
mod permission;
mod pool;
mod profile;
mod prompt;
mod route;
mod rpc;
mod schedule;
mod session;
mod turn;
mod update;
mod usage;

pub use config::{AcpConfig, ExtensionPolicy, NativeTools, PermissionChoice};
pub use connection::{Connection, ConnectionError, Decision};
pub use conversations::{McpExchange, McpRefusal};
pub use launch::{AgentLaunch, LaunchError, LaunchFile, launch_without_native_tools};
pub use turn::TurnId;
