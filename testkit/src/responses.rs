//! The checker of OpenAI Responses streams: the item state machine every stream must
//! follow, and what it carried.

use serde_json::{Value, json};

/// What a Responses stream carried, after every check passed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ResponsesSummary {
    /// Every event's data, in order.
    pub events: Vec<Value>,
    /// The type of the last event: `response.completed`, `response.incomplete` or
    /// `response.failed`.
    pub terminal: String,
    /// The terminal event's `response`.
    pub response: Value,
    /// The items of every `response.output_item.done`, in order.
    pub done_items: Vec<Value>,
    /// Every `output_text.delta`, concatenated (items that never finished included).
    pub text: String,
    /// Every reasoning summary delta, concatenated.
    pub reasoning: String,
    /// The `error` event, for a failed stream.
    pub error: Option<Value>,
    /// SSE comments (keep-alives).
    pub comments: usize,
}

/// Where the open item is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Added; its part (message, reasoning) not yet added.
    Added,
    /// Deltas may come.
    Streaming,
    /// Its text (or arguments, or input) is done.
    TextDone,
    /// Its part is done: only `output_item.done` may follow.
    PartDone,
}

struct OpenItem {
    item: Value,
    index: u64,
    phase: Phase,
    deltas: String,
}

fn kind_prefix(kind: &str) -> &'static str {
    match kind {
        "message" => "msg_",
        "reasoning" => "rs_",
        "function_call" => "fc_",
        "custom_tool_call" => "ctc_",
        other => panic!("unexpected item type {other}"),
    }
}

/// Checks a usage object: absent, or every field, consistent.
pub fn check_usage(usage: Option<&Value>) {
    let Some(usage) = usage else { return };
    let int = |pointer: &str| {
        usage
            .pointer(pointer)
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("usage{pointer} is a whole number: {usage}"))
    };
    let input = int("/input_tokens");
    let cached = int("/input_tokens_details/cached_tokens");
    let written = int("/input_tokens_details/cache_write_tokens");
    let output = int("/output_tokens");
    let reasoning = int("/output_tokens_details/reasoning_tokens");
    assert_eq!(int("/total_tokens"), input + output, "{usage}");
    assert!(cached + written <= input && reasoning <= output, "{usage}");
}

/// Checks the `response` object every lifecycle event carries.
fn check_response_object(response: &Value, id: &mut Option<String>) {
    let this = response["id"].as_str().expect("response.id");
    assert!(this.starts_with("resp_"), "{this}");
    match id {
        None => *id = Some(this.to_owned()),
        Some(first) => assert_eq!(first, this, "one response id"),
    }
    assert_eq!(response["object"], "response");
    assert!(response["created_at"].is_u64() && response["model"].is_string());
    assert!(response["parallel_tool_calls"].is_boolean());
    assert!(response["tools"].is_array() && response["output"].is_array());
    assert!(response["tool_choice"].is_string() || response["tool_choice"].is_object());
}

/// Parses an SSE body and asserts the Responses item state machine: every event an
/// `event:` line and a `data:` line of the same `type`; `sequence_number` from 0, one
/// more per event; `response.created` then `response.in_progress` first; items added in
/// `output_index` order, one open at a time, each with its part added before its deltas
/// and every done event after them, carrying exactly the deltas concatenated; one terminal
/// event last, whose `output` is the done items; usage all or nothing; a failure
/// announced by an `error` event.
pub fn check_responses_stream(body: &[u8]) -> ResponsesSummary {
    let text = std::str::from_utf8(body).expect("stream is UTF-8");
    assert!(text.ends_with("\n\n"), "every frame ends with a blank line");
    let mut summary = ResponsesSummary::default();
    let mut id = None;
    let mut open: Option<OpenItem> = None;
    for frame in text[..text.len() - 2].split("\n\n") {
        if frame.starts_with(':') {
            assert!(!frame.contains('\n'), "a comment is one line");
            summary.comments += 1;
            continue;
        }
        assert!(
            summary.terminal.is_empty(),
            "nothing after the terminal event: {frame}"
        );
        let (event_line, data_line) = frame
            .split_once('\n')
            .unwrap_or_else(|| panic!("an event line and a data line: {frame:?}"));
        let kind = event_line.strip_prefix("event: ").expect("an event line");
        let data = data_line.strip_prefix("data: ").expect("a data line");
        assert!(!data.contains('\n'), "one line of data");
        let event: Value =
            serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"));
        assert_eq!(event["type"], kind, "event line and data agree");
        let sequence = summary.events.len() as u64;
        assert_eq!(event["sequence_number"], sequence, "{data}");
        match (sequence, kind) {
            (0, "response.created") | (1, "response.in_progress") => {
                assert_eq!(event["response"]["status"], "in_progress");
                assert_eq!(event["response"]["output"], json!([]));
                check_response_object(&event["response"], &mut id);
            }
            (0 | 1, other) => panic!("the stream begins with created, in_progress: {other}"),
            (_, "response.created" | "response.in_progress") => panic!("{kind} once, first"),
            _ => {}
        }
        let item_ref = |open: &Option<OpenItem>| {
            let open = open
                .as_ref()
                .unwrap_or_else(|| panic!("{kind} with no open item"));
            assert_eq!(event["item_id"], open.item["id"], "{data}");
            assert_eq!(event["output_index"], open.index, "{data}");
        };
        match kind {
            "response.created" | "response.in_progress" => {}
            "response.output_item.added" => {
                assert!(open.is_none(), "an item is added only when none is open");
                let item = event["item"].clone();
                let index = summary.done_items.len() as u64;
                assert_eq!(event["output_index"], index, "output_index in order");
                let item_kind = item["type"].as_str().expect("item type");
                let item_id = item["id"].as_str().expect("item id");
                assert!(item_id.starts_with(kind_prefix(item_kind)), "{item}");
                let phase = match item_kind {
                    "message" => {
                        assert_eq!(
                            (&item["content"], &item["role"], &item["status"]),
                            (&json!([]), &json!("assistant"), &json!("in_progress"))
                        );
                        Phase::Added
                    }
                    "reasoning" => {
                        assert_eq!(item["summary"], json!([]));
                        Phase::Added
                    }
                    "function_call" | "custom_tool_call" => {
                        let call_id = item["call_id"].as_str().expect("call_id");
                        assert_ne!(call_id, item_id, "call_id is not the item id");
                        assert!(
                            call_id
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                            "{call_id}"
                        );
                        assert!(item["name"].is_string());
                        let input = if item_kind == "function_call" {
                            "arguments"
                        } else {
                            "input"
                        };
                        assert_eq!(item[input], "", "{item}");
                        Phase::Streaming
                    }
                    other => panic!("item type {other}"),
                };
                open = Some(OpenItem {
                    item,
                    index,
                    phase,
                    deltas: String::new(),
                });
            }
            "response.content_part.added" | "response.reasoning_summary_part.added" => {
                item_ref(&open);
                let item = open.as_mut().unwrap();
                assert_eq!(item.phase, Phase::Added, "{data}");
                let expected = if kind == "response.content_part.added" {
                    assert_eq!(item.item["type"], "message");
                    assert_eq!(event["content_index"], 0);
                    json!({"type": "output_text", "text": "", "annotations": []})
                } else {
                    assert_eq!(item.item["type"], "reasoning");
                    assert_eq!(event["summary_index"], 0);
                    json!({"type": "summary_text", "text": ""})
                };
                assert_eq!(event["part"], expected);
                item.phase = Phase::Streaming;
            }
            "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta" => {
                item_ref(&open);
                let item = open.as_mut().unwrap();
                assert_eq!(item.phase, Phase::Streaming, "{data}");
                let expected_type = match kind {
                    "response.output_text.delta" => {
                        assert_eq!(event["content_index"], 0);
                        assert_eq!(event["logprobs"], json!([]));
                        "message"
                    }
                    "response.reasoning_summary_text.delta" => {
                        assert_eq!(event["summary_index"], 0);
                        "reasoning"
                    }
                    "response.function_call_arguments.delta" => "function_call",
                    _ => "custom_tool_call",
                };
                assert_eq!(item.item["type"], expected_type, "{data}");
                let delta = event["delta"].as_str().expect("delta");
                assert!(!delta.is_empty(), "no empty delta");
                item.deltas.push_str(delta);
                match expected_type {
                    "message" => summary.text.push_str(delta),
                    "reasoning" => summary.reasoning.push_str(delta),
                    _ => {}
                }
            }
            "response.output_text.done"
            | "response.reasoning_summary_text.done"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.done" => {
                item_ref(&open);
                let item = open.as_mut().unwrap();
                assert_eq!(item.phase, Phase::Streaming, "{data}");
                let field = match kind {
                    "response.function_call_arguments.done" => {
                        assert_eq!(event["name"], item.item["name"]);
                        "arguments"
                    }
                    "response.custom_tool_call_input.done" => "input",
                    _ => "text",
                };
                assert_eq!(event[field], item.deltas.as_str(), "done = the deltas");
                item.phase = if field == "text" {
                    Phase::TextDone
                } else {
                    Phase::PartDone
                };
            }
            "response.content_part.done" | "response.reasoning_summary_part.done" => {
                item_ref(&open);
                let item = open.as_mut().unwrap();
                assert_eq!(item.phase, Phase::TextDone, "{data}");
                let expected = if kind == "response.content_part.done" {
                    json!({"type": "output_text", "text": item.deltas, "annotations": []})
                } else {
                    json!({"type": "summary_text", "text": item.deltas})
                };
                assert_eq!(event["part"], expected);
                item.phase = Phase::PartDone;
            }
            "response.output_item.done" => {
                let item = open.take().expect("done with an open item");
                assert_eq!(item.phase, Phase::PartDone, "{data}");
                assert_eq!(event["output_index"], item.index);
                let done = &event["item"];
                let mut expected = item.item.clone();
                match done["type"].as_str().unwrap() {
                    "message" => {
                        expected["status"] = json!("completed");
                        expected["content"] = json!([{"type": "output_text", "text": item.deltas, "annotations": []}]);
                    }
                    "reasoning" => {
                        expected["summary"] =
                            json!([{"type": "summary_text", "text": item.deltas}]);
                    }
                    "function_call" => {
                        expected["status"] = json!("completed");
                        expected["arguments"] = json!(item.deltas);
                    }
                    _ => {
                        expected["status"] = json!("completed");
                        expected["input"] = json!(item.deltas);
                    }
                }
                assert_eq!(done, &expected, "the done item is the added item, whole");
                summary.done_items.push(done.clone());
            }
            "error" => {
                assert!(event["message"].is_string() && event["code"].is_string());
                assert_eq!(event["error"]["message"], event["message"]);
                summary.error = Some(event.clone());
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = &event["response"];
                check_response_object(response, &mut id);
                assert_eq!(
                    response["output"],
                    Value::Array(summary.done_items.clone()),
                    "the terminal output is the done items"
                );
                check_usage(response.get("usage"));
                match kind {
                    "response.completed" => {
                        assert!(open.is_none(), "no item open at completion");
                        assert_eq!(response["status"], "completed");
                        assert!(response["error"].is_null());
                        assert!(summary.error.is_none());
                    }
                    "response.incomplete" => {
                        assert!(open.is_none(), "no item open at the end");
                        assert_eq!(response["status"], "incomplete");
                        assert!(response["incomplete_details"]["reason"].is_string());
                    }
                    _ => {
                        assert_eq!(response["status"], "failed");
                        let error = summary.error.as_ref().expect("an error event first");
                        assert_eq!(response["error"]["code"], error["code"]);
                        assert_eq!(response["error"]["message"], error["message"]);
                    }
                }
                summary.terminal = kind.to_owned();
                summary.response = response.clone();
            }
            other => panic!("unknown event type {other}"),
        }
        summary.events.push(event);
    }
    assert!(!summary.terminal.is_empty(), "a terminal event");
    summary
}

/// Checks a non-streaming `response` object: a finished response whose items are
/// complete, usage all or nothing. Returns its output text (every `output_text`).
pub fn check_responses_body(body: &Value) -> String {
    assert_eq!(body["object"], "response");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    assert!(matches!(
        body["status"].as_str(),
        Some("completed" | "incomplete")
    ));
    check_usage(body.get("usage"));
    let mut text = String::new();
    for item in body["output"].as_array().expect("output") {
        let kind = item["type"].as_str().unwrap();
        assert!(item["id"].as_str().unwrap().starts_with(kind_prefix(kind)));
        if kind == "message" {
            assert_eq!(item["status"], "completed");
            text.push_str(item["content"][0]["text"].as_str().unwrap());
        }
    }
    text
}
