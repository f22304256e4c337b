//! The request validator fed hostile bodies: any bytes, and real-shaped bodies with
//! fields replaced by arbitrary JSON, give a request or an OpenAI-shaped 400/413, never a
//! panic.

use agentwire::openai::{ChatRequest, RequestLimits};
use proptest::prelude::*;
use serde_json::{Value, json};

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        Just(json!("--force")),
        Just(json!("tool")),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn check(body: &[u8]) {
    match ChatRequest::parse(body, &RequestLimits::default()) {
        Ok(request) => assert!(!request.messages.is_empty() && !request.model.starts_with('-')),
        Err(error) => {
            assert!(
                error.status == 400 || error.status == 413,
                "{}",
                error.status
            );
            let body: Value = serde_json::from_slice(&error.to_json()).unwrap();
            assert!(body["error"]["message"].is_string());
            assert_eq!(body["error"]["type"], "invalid_request_error");
        }
    }
}

const FIELDS: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "stream",
    "stream_options",
    "n",
    "cursorModel",
    "parallel_tool_calls",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        check(&body);
    }

    #[test]
    fn real_shapes_with_hostile_fields(field in 0..FIELDS.len(), value in arbitrary_json(), message_field in "[a-z_]{1,12}", message_value in arbitrary_json()) {
        let mut body = json!({
            "model": "auto", "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                         {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
        });
        body[FIELDS[field]] = value;
        check(&serde_json::to_vec(&body).unwrap());
        if let Some(messages) = body["messages"].as_array_mut() {
            if let Some(Value::Object(first)) = messages.get_mut(1) {
                first.insert(message_field, message_value);
            }
        }
        check(&serde_json::to_vec(&body).unwrap());
    }
}
