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
//! typed errors naming each `param`, and the sizes of inline attachments. Every error
//! message is kept clear of what makes a client retry ([`invites_retry`]).

//!
//! # Adding a dialect
//!
//! 1. Its module (`anthropic`, `openai::responses`; nothing below it changes): a
//!    `parse_request` built on the shared helpers, so that limits, model names and
//!    lone surrogates behave as in every other dialect and every error names its `param`;
//!    a [`StreamEncoder`] and a [`BodyBuilder`], which take their ids from the caller's
//!    seed (`json::seeded_hex`) and may show the agent's own activity as notes
//!    (`notes`); and its error body for an [`ErrorReply`].
//! 2. Its arms in `bridge::Dialect::prepare` (parse, then build the writer from the
//!    request and the bridge's configuration) and `bridge::Dialect::write_error`.
//! 3. Its tests: one line per response kind in `tests/dialects.rs` (every transcript and
//!    real capture, every chunking, its own stream checker), its unit tests; it is already
//!    listed in `tests/allocations.rs`, in `benches/throughput.rs` (`encoder`) and in
//!    `translate --api`, and is measured as soon as it answers.

mod error;
pub(crate) mod json;
pub(crate) mod notes;
pub(crate) mod parse;
mod request;
mod response;
mod retry;
mod surrogates;

pub use error::{ErrorKind, ErrorReply};
pub use request::{
    Continuation, Effort, Reasoning, ReasoningDisplay, Request, RequestError, RequestLimits,
    RequestProblem, Thinking,
};
pub use response::{BodyBuilder, StreamEncoder};
pub use retry::{RETRY_TRIGGERS, invites_retry};
