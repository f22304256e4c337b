//! The OpenAI Chat Completions dialect: request bodies → a [`ChatRequest`] carrying a
//! [`Conversation`](crate::conversation::Conversation) ([`request`]), the prompt the agent
//! is given ([`prompt`]), events → `chat.completion.chunk` frames ([`ChunkEncoder`]) or
//! one `chat.completion` body ([`CompletionBuilder`]), and OpenAI error bodies
//! ([`ApiError`]).
//!
//! The wire rules followed here, and which real client breaks on each violation, are in
//! the project's research notes on the OpenAI wire contract.

mod chunk;
mod completion;
mod error;
mod notes;
mod options;
pub mod prompt;
pub mod request;
mod surrogates;
mod wire;

pub use chunk::ChunkEncoder;
pub use completion::CompletionBuilder;
pub use error::ApiError;
pub use options::{OutputOptions, ReasoningField, ResponseMeta};
pub use request::{ChatRequest, RequestLimits};
