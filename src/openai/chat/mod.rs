//! The OpenAI Chat Completions dialect (`POST /v1/chat/completions`): request bodies → a
//! neutral [`Request`](crate::api::Request) ([`parse_request`]), events →
//! `chat.completion.chunk` frames ([`ChunkEncoder`]) or one `chat.completion` body
//! ([`CompletionBuilder`]); errors are [`ApiError`](super::ApiError) bodies.

mod chunk;
mod completion;
mod options;
mod request;
mod wire;

pub use chunk::ChunkEncoder;
pub use completion::CompletionBuilder;
pub use options::{OutputOptions, ReasoningField, ResponseMeta};
pub use request::parse_request;
