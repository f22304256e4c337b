//! The OpenAI dialects: Chat Completions ([`chat`]) and Responses ([`responses`]), and
//! the error body both send ([`ApiError`]).
//!
//! The two APIs share one module because they share what a client of either relies on
//! beyond its frames: the `{"error":{…}}` body with its `type`, `param` and `code`, the
//! usage convention (input tokens counted with the cached ones, which are reported apart),
//! and the clients themselves (openai-python, the AI SDK's OpenAI providers).
//!
//! The wire rules each dialect follows, and which real client breaks on a violation, are
//! written on its stream encoder: [`chat::ChunkEncoder`] and [`responses::EventEncoder`].

pub mod chat;
mod error;
pub mod responses;

pub use error::ApiError;
