//! A checker of Anthropic Messages responses: the stream's event and block state machine,
//! the `message` body, and the error body. Every check panics with a message naming the
//! rule it saw broken.

use serde_json::{Value, json};

/// What a well-formed stream held, accumulated the way anthropic-python accumulates it.
#[derive(Debug, Default)]
pub struct MessagesStream {
    /// `message_start.message`.
    pub message: Value,
    /// The content blocks, as a `message` body would hold them (`tool_use` inputs parsed).
    pub content: Vec<Value>,
    /// `message_delta.delta.stop_reason`, when the stream completed.
    pub stop_reason: Option<String>,
    /// The usage of `message_start`, overridden field by field by `message_delta`'s.
    pub usage: Value,
    /// The `event: error` data, when the stream ended with one.
    pub error: Option<Value>,
    /// `ping` events.
    pub pings: usize,
}

impl MessagesStream {
    /// The text of every `text` block, concatenated.
    pub fn text(&self) -> String {
        self.blocks_of("text", "text")
    }

    /// The text of every `thinking` block, concatenated.
    pub fn thinking(&self) -> String {
        self.blocks_of("thinking", "thinking")
    }

    fn blocks_of(&self, kind: &str, key: &str) -> String {
        self.content
            .iter()
            .filter(|b| b["type"] == kind)
            .map(|b| b[key].as_str().unwrap())
            .collect()
    }

    /// The `tool_use` blocks: id, name, input.
    pub fn tool_uses(&self) -> Vec<(String, String, Value)> {
        self.content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                (
                    b["id"].as_str().unwrap().to_owned(),
                    b["name"].as_str().unwrap().to_owned(),
                    b["input"].clone(),
                )
            })
            .collect()
    }
}

const STOP_REASONS: &[&str] = &[
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
];

const ERROR_TYPES: &[&str] = &[
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "timeout_error",
    "overloaded_error",
];

/// `^[a-zA-Z0-9_-]+$`, what the API requires of a `tool_use` id.
pub fn safe_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The block open in the stream.
struct OpenBlock {
    index: u64,
    block: Value,
    partial_json: String,
}

/// Parses a complete Messages stream and asserts its state machine:
/// - every event is exactly `event: <type>` and one `data:` line of JSON whose `type` is
///   the same, ended by a blank line;
/// - `message_start` first and once, with a `msg_` id, `model` equal to `model`, empty
///   content, null stop reason and zero usage;
/// - blocks opened with indices 0, 1, 2… in order, at most one open, each started empty
///   (`text: ""`, `thinking: ""` with a `signature`, `tool_use` with `input: {}` and an id
///   matching `^[a-zA-Z0-9_-]+$`), its deltas of the block's own type and index, then
///   stopped; no delta or stop for a block that is not open; a `tool_use` block's
///   `partial_json` fragments make one JSON object;
/// - then either `message_delta` (no block open; a known stop reason, `tool_use` exactly
///   when `tool_use` blocks were sent; usage with `output_tokens`) and `message_stop`
///   last, or `event: error` last (a known error type and a message), with nothing after;
/// - `ping` anywhere after `message_start`.
pub fn check_stream(body: &[u8], model: &str) -> MessagesStream {
    let text = std::str::from_utf8(body).expect("the stream is UTF-8");
    assert!(
        text.ends_with("\n\n"),
        "the stream ends at an event boundary: {text:?}"
    );
    let mut out = MessagesStream::default();
    let mut open: Option<OpenBlock> = None;
    let mut next_index = 0u64;
    let mut started = false;
    let mut delta_seen = false;
    let mut ended = false;
    let frames: Vec<&str> = text[..text.len() - 2].split("\n\n").collect();
    for (i, frame) in frames.iter().enumerate() {
        assert!(!ended, "event {i} after the end: {frame:?}");
        let mut lines = frame.split('\n');
        let name = lines
            .next()
            .and_then(|l| l.strip_prefix("event: "))
            .unwrap_or_else(|| panic!("event {i} has no `event:` line first: {frame:?}"));
        let data = lines
            .next()
            .and_then(|l| l.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("event {i} has no `data:` line second: {frame:?}"));
        assert!(
            lines.next().is_none(),
            "event {i} has extra lines: {frame:?}"
        );
        let data: Value = serde_json::from_str(data)
            .unwrap_or_else(|e| panic!("event {i} data is not JSON ({e}): {data}"));
        assert_eq!(
            data["type"], name,
            "event {i}: the data's type names the event"
        );
        if name != "message_start" {
            assert!(started, "event {i} ({name}) before message_start");
        }
        match name {
            "message_start" => {
                assert!(!started, "a second message_start at {i}");
                started = true;
                let message = &data["message"];
                assert!(message["id"].as_str().unwrap().starts_with("msg_"));
                assert_eq!(message["type"], "message");
                assert_eq!(message["role"], "assistant");
                assert_eq!(message["model"], model);
                assert_eq!(message["content"], json!([]));
                assert!(message["stop_reason"].is_null() && message["stop_sequence"].is_null());
                assert_eq!(
                    message["usage"],
                    json!({"input_tokens": 0, "output_tokens": 0})
                );
                out.usage = message["usage"].clone();
                out.message = message.clone();
            }
            "ping" => out.pings += 1,
            "content_block_start" => {
                assert!(!delta_seen, "a block after message_delta at {i}");
                assert!(
                    open.is_none(),
                    "block {} started at {i} while {} is open",
                    data["index"],
                    open.as_ref().map_or(0, |o| o.index)
                );
                assert_eq!(data["index"], next_index, "block indices in order at {i}");
                let block = data["content_block"].clone();
                match block["type"].as_str() {
                    Some("text") => assert_eq!(block, json!({"type": "text", "text": ""})),
                    Some("thinking") => {
                        assert_eq!(block["thinking"], "", "an empty thinking start at {i}");
                        assert!(block["signature"].is_string(), "a signature field");
                    }
                    Some("tool_use") => {
                        assert!(safe_tool_id(block["id"].as_str().unwrap()), "{block}");
                        assert!(block["name"].as_str().is_some_and(|n| !n.is_empty()));
                        assert_eq!(block["input"], json!({}), "an empty input at {i}");
                    }
                    other => panic!("unknown block type {other:?} at {i}"),
                }
                open = Some(OpenBlock {
                    index: next_index,
                    block,
                    partial_json: String::new(),
                });
                next_index += 1;
            }
            "content_block_delta" => {
                let block = open
                    .as_mut()
                    .unwrap_or_else(|| panic!("a delta at {i} with no block open"));
                assert_eq!(
                    data["index"], block.index,
                    "a delta for another block at {i}"
                );
                let delta = &data["delta"];
                match (
                    block.block["type"].as_str().unwrap(),
                    delta["type"].as_str(),
                ) {
                    ("text", Some("text_delta")) => {
                        let text = delta["text"].as_str().unwrap();
                        assert!(!text.is_empty(), "an empty text delta at {i}");
                        let whole = block.block["text"].as_str().unwrap().to_owned() + text;
                        block.block["text"] = Value::String(whole);
                    }
                    ("thinking", Some("thinking_delta")) => {
                        let text = delta["thinking"].as_str().unwrap();
                        let whole = block.block["thinking"].as_str().unwrap().to_owned() + text;
                        block.block["thinking"] = Value::String(whole);
                    }
                    ("thinking", Some("signature_delta")) => {
                        panic!("a signature at {i}: none is ever invented")
                    }
                    ("tool_use", Some("input_json_delta")) => {
                        block
                            .partial_json
                            .push_str(delta["partial_json"].as_str().unwrap());
                    }
                    (kind, delta) => panic!("a {delta:?} delta in a {kind} block at {i}"),
                }
            }
            "content_block_stop" => {
                let mut block = open
                    .take()
                    .unwrap_or_else(|| panic!("a stop at {i} with no block open"));
                assert_eq!(
                    data["index"], block.index,
                    "a stop for another block at {i}"
                );
                if block.block["type"] == "tool_use" {
                    let input: Value = serde_json::from_str(&block.partial_json)
                        .unwrap_or_else(|e| panic!("tool input is not JSON ({e}) at {i}"));
                    assert!(input.is_object(), "tool input is an object at {i}");
                    block.block["input"] = input;
                }
                out.content.push(block.block);
            }
            "message_delta" => {
                assert!(!delta_seen, "a second message_delta at {i}");
                delta_seen = true;
                assert!(open.is_none(), "message_delta at {i} with a block open");
                let reason = data["delta"]["stop_reason"].as_str().unwrap();
                assert!(STOP_REASONS.contains(&reason), "{reason}");
                assert!(data["delta"]["stop_sequence"].is_null());
                let tools = out.content.iter().any(|b| b["type"] == "tool_use");
                assert_eq!(reason == "tool_use", tools, "tool_use iff tool_use blocks");
                let usage = data["usage"].as_object().expect("message_delta has usage");
                assert!(usage["output_tokens"].is_u64(), "output_tokens is required");
                for (key, value) in usage {
                    assert!(value.is_u64(), "usage.{key}");
                    out.usage[key] = value.clone();
                }
                out.stop_reason = Some(reason.to_owned());
            }
            "message_stop" => {
                assert!(delta_seen, "message_stop without message_delta at {i}");
                assert_eq!(
                    frames[i - 1].split('\n').next(),
                    Some("event: message_delta")
                );
                ended = true;
            }
            "error" => {
                check_error_object(&data);
                out.error = Some(data);
                ended = true;
            }
            other => panic!("unknown event {other:?} at {i}"),
        }
    }
    assert!(ended, "the stream ends with message_stop or error");
    out
}

/// Checks an Anthropic error body (or an `event: error`'s data).
pub fn check_error_object(body: &Value) {
    assert_eq!(body["type"], "error", "{body}");
    let kind = body["error"]["type"].as_str().unwrap();
    assert!(ERROR_TYPES.contains(&kind), "{kind}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// Checks a `message` body: its identity, blocks, stop reason and usage.
pub fn check_body(body: &Value, model: &str) {
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["model"], model);
    let content = body["content"].as_array().unwrap();
    for block in content {
        match block["type"].as_str() {
            Some("text") => assert!(block["text"].as_str().is_some_and(|t| !t.is_empty())),
            Some("thinking") => {
                assert!(block["thinking"].is_string() && block["signature"] == "")
            }
            Some("tool_use") => {
                assert!(safe_tool_id(block["id"].as_str().unwrap()));
                assert!(block["input"].is_object());
            }
            other => panic!("unknown block {other:?}"),
        }
    }
    let reason = body["stop_reason"].as_str().unwrap();
    assert!(STOP_REASONS.contains(&reason));
    let tools = content.iter().any(|b| b["type"] == "tool_use");
    assert_eq!(reason == "tool_use", tools);
    assert!(body["usage"]["input_tokens"].is_u64() && body["usage"]["output_tokens"].is_u64());
}
