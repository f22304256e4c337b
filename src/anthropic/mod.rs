//! The Anthropic Messages dialect (`POST /v1/messages`, what Claude Code speaks): its
//! error body ([`write_error`]); the rest is not implemented yet, and
//! [`Dialect::Messages`](crate::bridge::Dialect::Messages) answers every request with a
//! 501 in that body.
//!
//! What goes here (the project's research notes on the two new dialects, §1–§2,
//! §6.2, §6.4):
//! - `parse_request(body, &RequestLimits) -> Result<Request, RequestError>`: `system` as a
//!   first system message (without Claude Code's billing header block), `role: "system"`
//!   turns in place, text / image / document / `tool_use` / `tool_result` (with
//!   `is_error`) blocks, thinking blocks dropped, tools with `input_schema`, server tools
//!   dropped, `tool_choice` and `disable_parallel_tool_use`, `thinking` and
//!   `output_config` into [`Reasoning`](crate::api::Reasoning) and
//!   [`OutputFormat`](crate::conversation::OutputFormat); `max_tokens` required.
//! - A [`StreamEncoder`](crate::api::StreamEncoder): `event:` lines, the block state
//!   machine, usage in `message_delta`, `event: ping` as keep-alive, `event: error` for an
//!   in-band failure.
//! - A [`BodyBuilder`](crate::api::BodyBuilder): one `message` object.

mod error;

pub use error::write_error;
