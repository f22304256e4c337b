//! A checker of OpenAI Chat Completions responses against the wire contract: SSE streams,
//! error bodies and completion bodies. Every check panics with a message naming the rule
//! it saw broken.

use serde_json::Value;

/// Whether a stream must be whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The response ended normally: one terminal, then `[DONE]`.
    Complete,
    /// The client went away: the stream may stop anywhere between frames.
    Cut,
}

/// What a checked stream contained.
#[derive(Debug, Default)]
pub struct Stream {
    /// `delta.content`, concatenated.
    pub content: String,
    /// Tool calls: index, name, arguments.
    pub tool_calls: Vec<(u64, String, String)>,
    /// `finish_reason`s seen.
    pub finish_reasons: Vec<String>,
    /// In-band error objects.
    pub errors: Vec<Value>,
    /// Usage chunks.
    pub usage_chunks: usize,
    /// `[DONE]` frames.
    pub done: usize,
}

/// Parses an SSE body and asserts the chunk contract: `data:` frames of one line of JSON
/// (or comments), each ended by a blank line; `[DONE]` at most once and last; one
/// identity for every chunk; the role once, first; a finish chunk with an empty delta;
/// usage only after the finish; tool-call indices contiguous from 0 with JSON-object
/// arguments; `tool_calls` as finish reason iff calls were sent. With
/// [`Ending::Complete`], exactly one terminal (a finish chunk or an error frame) and
/// exactly one `[DONE]`.
pub fn stream(body: &[u8], ending: Ending) -> Stream {
    let text = std::str::from_utf8(body)
        .unwrap_or_else(|e| panic!("stream body is not UTF-8 ({e}): {body:?}"));
    let mut out = Stream::default();
    if text.is_empty() {
        assert_eq!(ending, Ending::Cut, "a complete stream is not empty");
        return out;
    }
    assert!(
        text.ends_with("\n\n"),
        "stream does not end at a frame boundary: {text:?}"
    );
    let frames: Vec<&str> = text[..text.len() - 2].split("\n\n").collect();
    let mut identity: Option<(Value, Value, Value)> = None;
    let mut chunks = 0usize;
    let mut terminal_at: Option<usize> = None;
    for (i, frame) in frames.iter().enumerate() {
        assert!(!frame.is_empty(), "frame {i} is empty (three line breaks)");
        assert!(!frame.contains('\r'), "frame {i} has a carriage return");
        if frame.starts_with(':') {
            assert!(!frame.contains('\n'), "comment {i} spans lines: {frame:?}");
            assert_eq!(out.done, 0, "comment after [DONE]");
            continue;
        }
        let data = frame
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("frame {i} is neither data nor comment: {frame:?}"));
        assert!(!data.contains('\n'), "frame {i} has more than one line");
        assert_eq!(out.done, 0, "frame {i} after [DONE]: {frame:?}");
        if data == "[DONE]" {
            out.done += 1;
            assert_eq!(i, frames.len() - 1, "[DONE] is not the last frame");
            continue;
        }
        let value: Value = serde_json::from_str(data)
            .unwrap_or_else(|e| panic!("frame {i} is not JSON ({e}): {data}"));
        if value.get("error").is_some() {
            error_body(&value);
            assert!(terminal_at.is_none(), "error frame {i} after a terminal");
            terminal_at = Some(i);
            out.errors.push(value["error"].clone());
            continue;
        }
        chunks += 1;
        assert_eq!(
            value["object"], "chat.completion.chunk",
            "frame {i}: {data}"
        );
        let id = value["id"].as_str().unwrap_or_default();
        assert!(id.starts_with("chatcmpl-"), "frame {i}: id {id:?}");
        assert!(value["created"].is_u64(), "frame {i}: created");
        assert!(value["model"].is_string(), "frame {i}: model");
        let this = (
            value["id"].clone(),
            value["created"].clone(),
            value["model"].clone(),
        );
        match &identity {
            None => identity = Some(this),
            Some(first) => assert_eq!(first, &this, "frame {i}: identity changed"),
        }
        let choices = value["choices"]
            .as_array()
            .unwrap_or_else(|| panic!("frame {i}: choices is not an array: {data}"));
        if choices.is_empty() {
            usage(&value["usage"]);
            assert!(
                terminal_at.is_some() && out.errors.is_empty(),
                "usage chunk {i} before the finish chunk"
            );
            out.usage_chunks += 1;
            assert_eq!(out.usage_chunks, 1, "second usage chunk {i}");
            continue;
        }
        assert!(
            terminal_at.is_none(),
            "chunk {i} after the terminal: {data}"
        );
        assert_eq!(choices.len(), 1, "frame {i}: one choice");
        let choice = &choices[0];
        assert_eq!(choice["index"], 0, "frame {i}: choice index");
        let delta = choice["delta"]
            .as_object()
            .unwrap_or_else(|| panic!("frame {i}: delta is not an object: {data}"));
        if let Some(role) = delta.get("role") {
            assert_eq!(role, "assistant", "frame {i}");
            assert_eq!(chunks, 1, "frame {i}: role outside the first chunk");
        } else {
            assert!(chunks > 1, "frame {i}: the first chunk has no role: {data}");
        }
        if let Some(content) = delta.get("content") {
            let content = content
                .as_str()
                .unwrap_or_else(|| panic!("frame {i}: content is not a string"));
            out.content.push_str(content);
        }
        for key in ["reasoning_content", "reasoning"] {
            if let Some(reasoning) = delta.get(key) {
                assert!(reasoning.is_string(), "frame {i}: {key} is not a string");
            }
        }
        if let Some(calls) = delta.get("tool_calls") {
            for call in calls.as_array().expect("tool_calls is an array") {
                let index = call["index"].as_u64().expect("tool call index");
                assert_eq!(
                    index as usize,
                    out.tool_calls.len(),
                    "frame {i}: tool-call indices are not contiguous"
                );
                assert!(
                    call["id"].as_str().is_some_and(|id| !id.is_empty()),
                    "frame {i}: tool call without id"
                );
                assert_eq!(call["type"], "function", "frame {i}");
                let name = call["function"]["name"].as_str().expect("function name");
                let arguments = call["function"]["arguments"]
                    .as_str()
                    .expect("function arguments");
                let parsed: Value = serde_json::from_str(arguments).unwrap_or_else(|e| {
                    panic!("frame {i}: arguments are not JSON ({e}): {arguments}")
                });
                assert!(parsed.is_object(), "frame {i}: arguments are not an object");
                out.tool_calls
                    .push((index, name.to_owned(), arguments.to_owned()));
            }
        }
        match &choice["finish_reason"] {
            Value::Null => {}
            Value::String(reason) => {
                assert!(delta.is_empty(), "frame {i}: finish chunk with a delta");
                assert!(
                    ["stop", "length", "tool_calls", "content_filter"].contains(&reason.as_str()),
                    "frame {i}: finish_reason {reason}"
                );
                terminal_at = Some(i);
                out.finish_reasons.push(reason.clone());
            }
            other => panic!("frame {i}: finish_reason {other}"),
        }
    }
    if let Some(reason) = out.finish_reasons.first() {
        assert_eq!(
            reason == "tool_calls",
            !out.tool_calls.is_empty(),
            "finish_reason {reason} with {} tool calls",
            out.tool_calls.len()
        );
    }
    if ending == Ending::Complete {
        assert_eq!(
            out.finish_reasons.len() + out.errors.len(),
            1,
            "a complete stream has exactly one terminal"
        );
        assert_eq!(out.done, 1, "a complete stream ends with one [DONE]");
    }
    out
}

/// Asserts the OpenAI error shape: `{"error":{"message":string,"type":string,
/// "param":string|null,"code":string|null}}` and nothing else.
pub fn error_body(value: &Value) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("error body is not an object: {value}"));
    assert_eq!(object.len(), 1, "error body has other members: {value}");
    let error = object["error"]
        .as_object()
        .unwrap_or_else(|| panic!("error is not an object: {value}"));
    assert!(
        error.get("message").is_some_and(Value::is_string),
        "error.message: {value}"
    );
    assert!(
        error.get("type").is_some_and(Value::is_string),
        "error.type: {value}"
    );
    for key in ["param", "code"] {
        assert!(
            error.get(key).is_some_and(|v| v.is_string() || v.is_null()),
            "error.{key} is missing or neither string nor null: {value}"
        );
    }
    assert_eq!(error.len(), 4, "error has other members: {value}");
}

/// Asserts a usage object: counts, and a total that adds up.
fn usage(value: &Value) {
    let prompt = value["prompt_tokens"]
        .as_u64()
        .expect("usage.prompt_tokens");
    let completion = value["completion_tokens"]
        .as_u64()
        .expect("usage.completion_tokens");
    assert_eq!(
        value["total_tokens"].as_u64(),
        Some(prompt.saturating_add(completion)),
        "usage.total_tokens: {value}"
    );
}

/// Asserts a non-streaming `chat.completion` body: one choice with an assistant message,
/// a finish reason, tool calls whose arguments are JSON objects, and `tool_calls` as
/// finish reason iff there are calls.
pub fn completion(value: &Value) {
    assert_eq!(value["object"], "chat.completion", "{value}");
    assert!(
        value["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("chatcmpl-")),
        "{value}"
    );
    let choices = value["choices"].as_array().expect("choices");
    assert_eq!(choices.len(), 1, "{value}");
    let message = &choices[0]["message"];
    assert_eq!(message["role"], "assistant", "{value}");
    assert!(
        message["content"].is_string() || message["content"].is_null(),
        "{value}"
    );
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(0, |calls| {
            for call in calls {
                let arguments = call["function"]["arguments"].as_str().expect("arguments");
                let parsed: Value = serde_json::from_str(arguments).expect("arguments JSON");
                assert!(parsed.is_object(), "{value}");
            }
            calls.len()
        });
    let reason = choices[0]["finish_reason"].as_str().expect("finish_reason");
    assert_eq!(reason == "tool_calls", calls > 0, "{value}");
    if let Some(u) = value.get("usage") {
        usage(u);
    }
}
