//! agentwire: the OpenAI Chat Completions API on top of the `cursor-agent` CLI, as a
//! sans-IO protocol library.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
#![forbid(unused_must_use)]

pub mod cursor;
pub mod event;
pub mod framing;
pub mod openai;
