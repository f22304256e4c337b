//! agentwire: the OpenAI Chat Completions API on top of the `cursor-agent` CLI, as a
//! sans-IO protocol library.
//!
//! agentwire owns every protocol decision and no I/O. It does not spawn processes, read
//! pipes, open sockets or read a clock: OpenAI request bodies, the agent's stdout and
//! stderr bytes, its exit status and the current time (as a number the caller picks) go
//! in; SSE frames or a JSON body, the HTTP status, and "stop the agent now" decisions come
//! out. The same core therefore serves a tokio server, a blocking one, an editor plugin
//! through the C ABI, or Python.
//!
//! ```text
//!  OpenAI request body ─► openai::request ─► conversation::Conversation ─► tools::ToolPlan ─► openai::prompt ─► cursor::Invocation
//!                                                                                                              │ (adapter spawns cursor-agent)
//!  cursor-agent stdout ─► framing::LineFramer ─► cursor::Decoder ─► event::Event ─► openai::{ChunkEncoder, CompletionBuilder}
//!  stderr, exit status ─► cursor::diagnose ─► event::Failure ────────┘                    │
//!  time (now_ms) ──────► bridge::Bridge (status, keep-alive, idle timeout, client tool calls, stop) ─► SSE / JSON
//! ```
//!
//! Modules follow that flow and never import against it: [`framing`] knows nothing of
//! JSON; [`cursor`] and [`openai`] meet only at [`event`], the neutral model of what the
//! agent did; a request dialect ([`openai::request`]) parses into [`conversation`], the
//! neutral model of what the client asked, which [`tools`] (the agent's tool use mapped
//! onto the client's tools, and the loop guard) and [`openai::prompt`] read; [`bridge`]
//! composes them all into one request's state machine — the object adapters drive;
//! [`ffi`] is its C ABI (the default `capi` feature).
//!
//! The one rule every driver keeps: **after every input, drain the outputs (`poll_*`)
//! until they return `None`.** See [`bridge::Bridge`] for the whole loop, and
//! [`cursor::Decoder`] for embedders that want events and no HTTP.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
#![forbid(unused_must_use)]

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
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod openai;
pub mod tools;
