//! The request validator fed hostile bodies: any bytes, and real-shaped bodies with
//! fields replaced by arbitrary JSON, give a request or an OpenAI-shaped 400/413, never a
//! panic.

use agentwire::api::{ErrorReply, RequestLimits, RequestProblem};
use agentwire::openai::ApiError;
use agentwire::openai::chat::parse_request;
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
    match parse_request(body, &RequestLimits::default()) {
        Ok(request) => {
            assert!(!request.conversation.messages.is_empty() && !request.model.starts_with('-'))
        }
        Err(error) => {
            assert!(
                error.status() == 400 || error.status() == 413,
                "{}",
                error.status()
            );
            let error = ApiError::from(&ErrorReply::from(&error));
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

/// Real bodies to mutate: the project's request bodies, and the two OpenCode bodies when the
/// shared fixtures are present beside the repository.
fn real_bodies() -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bodies = Vec::new();
    for name in [
        "agent_stream.json",
        "client_tools.json",
        "client_tools_nostream.json",
    ] {
        bodies.push(std::fs::read(root.join("tests/fixtures/requests").join(name)).unwrap());
    }
    let opencode =
        root.join("../shared/fixtures/opencode/opencode-1.18.33-requests-toolround.jsonl");
    match std::fs::read_to_string(opencode) {
        Ok(text) => {
            for line in text.lines() {
                let record: Value = serde_json::from_str(line).unwrap();
                bodies.push(serde_json::to_vec(&record["body"]).unwrap());
            }
        }
        Err(_) => println!("skipped the OpenCode bodies: ../shared fixtures absent"),
    }
    bodies
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate,
    Replace(u8),
    Insert(Vec<u8>),
    Nest(usize, bool),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::Truncate),
        any::<u8>().prop_map(Mutation::Replace),
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 1..16),
            Just(b"\\u0000".to_vec()),
            Just(b"\\ud800".to_vec()),
            Just(b"\xff\xfe".to_vec()),
            Just(b"\"".to_vec()),
            Just(b"]}".to_vec()),
            Just(b"null,".to_vec()),
        ]
        .prop_map(Mutation::Insert),
        (1usize..20_000, any::<bool>()).prop_map(|(d, o)| Mutation::Nest(d, o)),
    ]
}

fn mutate(body: &[u8], at: usize, mutation: &Mutation) -> Vec<u8> {
    let at = at % (body.len() + 1);
    let mut out = body[..at].to_vec();
    match mutation {
        Mutation::Truncate => return out,
        Mutation::Replace(byte) => {
            out.push(*byte);
            out.extend_from_slice(body.get(at + 1..).unwrap_or_default());
            return out;
        }
        Mutation::Insert(bytes) => out.extend_from_slice(bytes),
        Mutation::Nest(depth, objects) => {
            let (open, close) = if *objects {
                ("{\"a\":", "}")
            } else {
                ("[", "]")
            };
            out.extend_from_slice(open.repeat(*depth).as_bytes());
            out.push(b'1');
            out.extend_from_slice(close.repeat(*depth).as_bytes());
        }
    }
    out.extend_from_slice(&body[at..]);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_real_bodies(which in any::<usize>(), at in any::<usize>(), mutation in mutation()) {
        let bodies = real_bodies();
        let body = &bodies[which % bodies.len()];
        check(&mutate(body, at, &mutation));
    }

    #[test]
    fn deep_nesting_is_a_clean_400(depth in 1usize..50_000, objects in any::<bool>(), field in 0..FIELDS.len()) {
        let (open, close) = if objects { ("{\"a\":", "}") } else { ("[", "]") };
        let body = format!(r#"{{"{}":{}1{}}}"#, FIELDS[field], open.repeat(depth), close.repeat(depth));
        let error = parse_request(body.as_bytes(), &RequestLimits::default()).unwrap_err();
        prop_assert_eq!(error.status(), 400);
        // Past the parser's depth limit it is a syntax error, shallower a wrong type.
        if depth >= 128 {
            prop_assert_eq!(error.problem, RequestProblem::InvalidJson);
        }
    }

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
