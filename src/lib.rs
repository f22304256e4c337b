//! agentwire: the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs on
//! top of coding agents — the `cursor-agent` CLI (its stream-json output) and any Agent
//! Client Protocol (ACP) agent — as a sans-IO protocol library.
//!
//! agentwire owns every protocol decision and no I/O. It does not spawn processes, read
//! pipes, open sockets or read a clock: request bodies, the agent's output (cursor-agent's
//! stdout and stderr bytes, or an ACP agent's JSON-RPC lines), its exit status and the
//! current time (as a number the caller picks) go in; SSE frames or a JSON body, the HTTP
//! status, the lines to write to an ACP agent, and "stop the agent now" decisions come out.
//! The same core therefore serves a tokio server, a blocking one, an editor plugin through
//! the C ABI, Python, or JavaScript through WebAssembly.
//!
//! ```text
//!  request body ─► <dialect>::parse_request ─► api::Request { conversation::Conversation, … }
//!      (the caller's route picks bridge::Dialect)        │
//!                                                        ├─► tools::ToolPlan ─► cursor::prompt ─► cursor::Invocation
//!                                                        │                                          │ (adapter spawns cursor-agent)
//!  cursor-agent stdout ─► framing::LineFramer ─► cursor::Decoder ─► event::Event ─► tools (client calls, loop guard)
//!  stderr, exit status ─► cursor::diagnose ─► event::Failure ─────────┘                  │
//!                                                  <dialect> api::StreamEncoder / api::BodyBuilder ─► SSE / JSON
//!  time (now_ms) ──────► bridge::Bridge (status, keep-alive, idle timeout, client tool calls, stop)
//!  ACP agent stdout ─► acp::Connection (JSON-RPC, sessions) ─► event::Event ─► a bridge::Bridge per turn
//!  api::Request, owner, keys ─► registry::Registry ─► resume a parked session with the delta, or start fresh
//!  conversation::ToolSpec, MCP requests ─► mcp::Server (the client's tools offered to an agent, calls held until answered)
//!  cursor-agent stdout, MCP requests ─► live_chat::LiveChat (one process across requests) ─► a bridge::Bridge per request
//! ```
//!
//! The modules stand in layers, each using only the layers before it (`tests/layers.rs`
//! holds them to it): names → framing → event / conversation → api → tools → cursor → [`openai`] /
//! [`anthropic`] → registry → bridge → mcp → live_chat / acp → ffi. [`names`] spells every enum's names once, for the bindings; [`framing`] knows nothing of JSON; [`event`] is the
//! neutral model of what the agent did, [`conversation`] of what the client asked; [`api`]
//! holds what every dialect shares (the neutral request, the error reply, the encoder
//! interface); [`tools`] maps the agent's tool use onto the client's tools and guards
//! against loops; [`cursor`] is the agent's side: it renders the agent's input (the
//! [`cursor::prompt`] and the [`cursor::Invocation`]) from a conversation and a tool plan,
//! and turns its output into events; a dialect module ([`openai`]: chat and responses;
//! [`anthropic`]) parses its requests into the neutral ones and writes events in its
//! frames, and nothing below it knows its names; [`registry`] decides which agent session
//! a request continues (a conversation's earlier answers are parked with the agent that
//! gave them); [`bridge`] composes them all into one
//! request's state machine — the object adapters drive, told the dialect by the route;
//! [`mcp`] offers an agent the client's tools as an MCP server and holds its calls until
//! the client answers (it knows only the conversation's tools, no dialect); [`live_chat`]
//! keeps one cursor-agent process going across a conversation's requests, the client's
//! tools its MCP tools; [`acp`] serves many requests from one warm Agent Client Protocol
//! agent through that same machine; [`ffi`] is its C ABI (the default `capi` feature).
//!
//! The one rule every driver keeps: **after every input, drain the outputs (`poll_*`)
//! until they return `None`.** See [`bridge::Bridge`] for the whole loop, and
//! [`cursor::Decoder`] for embedders that want events and no HTTP.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
#![forbid(unused_must_use)]

pub mod acp;
pub mod anthropic;
pub mod api;
pub mod bridge;
pub mod conversation;
pub mod cursor;
pub mod event;
// The C ABI: the one module allowed `unsafe` (each block says why it is sound). Behind the
// default `capi` feature, so that bindings with their own boundary do not carry it.
#[cfg(feature = "capi")]
#[allow(unsafe_code)]
pub mod ffi;
pub mod framing;
pub mod live_chat;
pub mod mcp;
pub mod names;
pub mod openai;
pub mod registry;
pub mod tools;

/// The real captures beside the repository, found as every integration test finds them.
#[cfg(test)]
#[allow(unreachable_pub)] // pub for the integration tests, which share the file
#[path = "../tests/support/shared.rs"]
mod shared_fixtures;

// The README's Rust snippets run as doc tests (`cargo test --doc`): they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
