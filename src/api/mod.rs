//! What every API dialect shares, in no dialect's terms: the request a dialect's parser
//! returns, the error it returns instead, the error reply every dialect renders in its own
//! body, and the interface of a dialect's response writers.
//!
//! ```text
//!  request body ─► <dialect>::parse_request ─► Request { model, stream, conversation, reasoning, … }
//!                                          └─► RequestError { problem, param, message } ─► ErrorReply
//!  Failure (event) ─────────────────────────────────────────────────────────────────────► ErrorReply
//!  ErrorReply ─► the dialect's error body (status, x-should-retry from the reply)
//!  Event ─► StreamEncoder (SSE frames, keep-alive, in-band failure) / BodyBuilder (one body)
//! ```
//!
//! A dialect module (`openai::chat`, `openai::responses`, `anthropic`) implements the
//! request side as a `parse_request(body, &RequestLimits) -> Result<Request, RequestError>`
//! function, the response side as a [`StreamEncoder`] and a [`BodyBuilder`], and renders
//! [`ErrorReply`]s in its own error body; the bridge chooses the dialect from the caller's
//! route and holds every decision that is not about bytes (when the head goes out, keep-alive
//! timing, timeouts, client tool batches, stopping the agent). This module sits below the
//! dialect modules and names none of them.
//!
//! Shared by the dialect parsers (crate-internal): reading a body into a JSON object within
//! the limits (lone UTF-16 surrogate escapes read as U+FFFD), the model-name rules, the
//! typed errors naming each `param`, and the sizes of inline attachments.

mod error;
pub(crate) mod json;
pub(crate) mod notes;
pub(crate) mod parse;
mod request;
mod response;
mod surrogates;

pub use error::{ErrorKind, ErrorReply};
pub use request::{
    Effort, Reasoning, ReasoningDisplay, Request, RequestError, RequestLimits, RequestProblem,
    Thinking,
};
pub use response::{BodyBuilder, StreamEncoder};
