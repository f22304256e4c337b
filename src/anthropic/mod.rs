//! The Anthropic Messages dialect (`POST /v1/messages`, what Claude Code speaks): request
//! bodies → a neutral [`Request`](crate::api::Request) ([`parse_request`]), events →
//! Messages server-sent events ([`MessageStreamEncoder`]) or one `message` object
//! ([`MessageBuilder`]); errors are Anthropic error bodies ([`write_error`]);
//! `count_tokens` is answered without an agent ([`count_tokens`]).
//!
//! # What a client can rely on
//!
//! - The stream is the exact event sequence of the API (see [`MessageStreamEncoder`]):
//!   `event:` lines on every event, one `message_start`, blocks opened and closed in
//!   order with deltas of their own type and at most one open, `message_delta` with the
//!   stop reason and the agent's usage, `message_stop`; `event: ping` as keep-alive.
//! - A non-streaming answer is one `message` with the same blocks ([`MessageBuilder`]).
//! - Reasoning is shown as `thinking` blocks only when the request asks for thinking and
//!   not for it to be omitted, and never with an invented signature ([`shows_thinking`]).
//! - Client tool calls are `tool_use` blocks whose ids are the neutral call ids
//!   (`call_` and 24 hex digits, within `^[a-zA-Z0-9_-]+$`); the `tool_result` of the
//!   next request names that id, and reaches the agent as the result of that call.
//! - A failure before the response head gets its true status and the Anthropic error body
//!   (the bridge waits for the agent's first answer event before sending the head); after
//!   it, `event: error` ends the stream.
//!
//! # What the clients break on, and what it does instead
//!
//! - Claude Code sends `role: "system"` turns among the messages: they are accepted in
//!   place.
//! - `event:` lines on every event: without them Claude Code re-sends every request
//!   without streaming and anthropic-python fails.
//! - Usage zeros in `message_start`, the agent's numbers in `message_delta`, never a
//!   `message_delta` without usage; `input_tokens` is the uncached input, as cursor-agent
//!   counts it (the OpenAI dialects count the cached input in theirs).
//! - A well-formed stream, and a true status before the head where possible: a malformed
//!   stream or an in-stream `error` makes Claude Code send the request again without
//!   streaming, running the agent a second time.
//! - `count_tokens` never starts an agent ([`count_tokens`]).
//! - Ids safe for the API: cursor-agent's call ids may hold a line break, and Anthropic's
//!   must match `^[a-zA-Z0-9_-]+$`. No invented signatures (only the real API signs
//!   thinking, and it checks what a client echoes back); `display: "omitted"` honoured.
//! - `output_config.format` reaches the prompt as the reply format: Claude Code asks for
//!   its session titles as JSON, and plain text silently breaks them.
//! - Unknown fields, block types, tool types and betas are never a 400: Claude Code
//!   answers a 400 by retrying, up to six times, with features shed.
//!
//! The adapter's part (routes, `x-api-key`, `HEAD /api/hello`, model aliases, the
//! `request-id` header from [`request_id`]) is outside the core.

mod count_tokens;
mod error;
mod message;
mod options;
mod request;
mod stream;
mod wire;

pub use count_tokens::{COUNT_TOKENS_UNAVAILABLE, count_tokens};
pub use error::write_error;
pub use message::MessageBuilder;
pub use options::{OutputOptions, ResponseMeta, request_id, shows_thinking};
pub use request::parse_request;
pub use stream::MessageStreamEncoder;
