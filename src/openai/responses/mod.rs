//! The OpenAI Responses dialect (`POST /v1/responses`, what Codex speaks): not
//! implemented yet. [`Dialect::Responses`](crate::bridge::Dialect::Responses) answers
//! every request with a 501 in the OpenAI error shape.
//!
//! What goes here (the project's research notes on the two new dialects, §3–§4, §6.3–§6.4):
//! - `parse_request(body, &RequestLimits) -> Result<Request, RequestError>`: `input` as a
//!   string or items (messages of every role with their parts, `function_call` /
//!   `function_call_output`, `custom_tool_call` / `custom_tool_call_output` for
//!   [freeform](crate::conversation::ToolKind::Freeform) tools, reasoning items dropped),
//!   `instructions` as a first system message, `function` / `custom` / `namespace` tools
//!   (a namespace's functions flattened to qualified names, restored on the way out),
//!   hosted tools dropped, `tool_choice`, `parallel_tool_calls`, `reasoning`,
//!   `text.format`; `previous_response_id` is a 400 naming it.
//! - A [`StreamEncoder`](crate::api::StreamEncoder): the item state machine with
//!   `sequence_number` from 0, every item `added` … `done` with its full content in
//!   `done`, `response.completed` with the whole `output[]` and a complete usage (or
//!   none), `response.failed` for an in-band failure.
//! - A [`BodyBuilder`](crate::api::BodyBuilder): the `response` object.
//! - Errors: [`ApiError`](super::ApiError), the body Chat Completions sends too.
//!
//! Call ids: a neutral call id (`call_…`) is the `call_id`; an item id (`fc_…`, `ctc_…`)
//! is derived from it, so both are stable across a conversation's requests.
