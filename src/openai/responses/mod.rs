//! The OpenAI Responses dialect (`POST /v1/responses`, what Codex speaks): request bodies
//! → a neutral [`Request`](crate::api::Request) ([`parse_request`]), events →
//! `response.*` stream events ([`EventEncoder`]) or one `response` object
//! ([`ResponseBuilder`]); errors are [`ApiError`](super::ApiError) bodies, as for Chat
//! Completions.
//!
//! # Requests
//!
//! `input` as a string or as items — messages of every role in place (Codex sends its
//! whole system prompt as `developer` messages and no `instructions`), tool calls and
//! their outputs, reasoning items echoed back (dropped), `additional_tools` — and
//! `instructions` as a first system message; see [`parse_request`] for the fields and the
//! item and tool tables for what each kind becomes. Function and custom (freeform) tools
//! become the neutral tools; a namespace's tools are flattened to `<namespace>.<name>`
//! and split back into `namespace` and `name` on the calls that come out; hosted tools
//! are dropped. Nothing is stored: a field that needs stored state
//! (`previous_response_id`, `conversation`, a stored `prompt`, `background`) is a 400
//! naming it, and an `item_reference` in `input` is dropped.
//!
//! # Responses
//!
//! The item state machine of [`EventEncoder`] (its docs list every guarantee), and the
//! same machine's end as the non-streaming body. What the Responses clients break on, and
//! what it does instead:
//! - usage is complete (every field Codex deserialises) or absent, never partial — a
//!   usage without `total_tokens` makes Codex reconnect five times and fail;
//! - every item is `added` and `done`, with its whole content in `done`: Codex records and
//!   runs only `output_item.done` items, and text deltas without an added item break it;
//! - the stream ends with `response.completed` (Codex waits for it, openai-python takes the
//!   final response from it);
//! - a failure after the head is `response.failed` with `response.error`, which Codex
//!   acts on (a bare `error` event is invisible to it), preceded by an `error` event
//!   that makes openai-python raise;
//! - `event:` lines and `type` in the data, a `sequence_number` on every event.
//!
//! # Client tools
//!
//! A call of a function tool is a `function_call` item (`call_id` separate from its item
//! `id`); a call of a custom tool is a `custom_tool_call` item carrying the raw text the
//! model wrote in a text envelope (`"input": "…"`). The agent's own edits never become a
//! freeform call: the agent cannot express them as the client's patch format, so they
//! stay the agent's (under the default tool strategy it runs read-only and the model is
//! taught the envelope instead).

mod body;
mod input;
mod options;
mod request;
mod stream;
mod tools;
mod wire;

pub use body::ResponseBuilder;
pub use options::{OutputOptions, ResponseMeta};
pub use request::parse_request;
pub use stream::EventEncoder;
