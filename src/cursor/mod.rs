//! The cursor-agent side: what the agent is given and what it says.
//!
//! - Its input: the command line ([`Invocation`]) and the prompt written to its stdin
//!   ([`prompt`]), rendered from the neutral conversation and the tool plan, whatever API
//!   dialect the request came in.
//! - Its output: `--output-format stream-json` stdout decoded into
//!   [`Event`](crate::event::Event)s ([`Decoder`]), what a failed run left behind
//!   classified into a [`Failure`](crate::event::Failure) ([`diagnose`]), and the model
//!   catalogue it lists ([`parse_models`]).
//!
//! The facts of the CLI's protocol each part relies on (its event catalogue, recaps,
//! tool-call quirks, usage, failures) are stated where they are used.

mod decoder;
pub mod diagnose;
mod invocation;
mod json;
mod line;
mod models;
pub mod prompt;
mod tool_call;

pub use decoder::{Decoder, DecoderConfig, DecoderError, DecoderStats};
pub use diagnose::{Evidence, ExitStatus};
pub use invocation::{AgentMode, Invocation, InvocationSpec, is_chat_id};
pub use models::{ModelEntry, parse_models};
