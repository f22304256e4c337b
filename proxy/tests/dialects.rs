//! The Anthropic Messages and OpenAI Responses routes: each dialect's stream and body,
//! and what those routes answer without an agent (`count_tokens`, Claude Code's probe,
//! every refusal in the route's own error shape).

mod support;

use support::both;
use support::checks::expected_result;
use support::checks::responses::{check_responses_body, check_responses_stream};
use support::client::Reply;
use support::messages;
use support::{Kind, Proxy, Scratch, transcript};

both!(every_dialect_on_its_route, dialect_errors_and_probes,);

/// The Messages and Responses routes: each dialect's stream and body, with the key as
/// its clients send it, the model aliased, and `request-id` on the Messages routes.
fn every_dialect_on_its_route(kind: Kind) {
    let scratch = Scratch::new("dialects");
    let fixture = transcript("partial_recaps.jsonl");
    let expected = expected_result(&std::fs::read(&fixture).unwrap()).unwrap();
    let agent = scratch.agent(&["--transcript", &fixture]);
    let flags = [
        "--api-key",
        "sk-test",
        "--model-alias",
        "claude-*haiku*=composer-2.5",
        "--model-alias",
        "claude-*=auto",
    ];
    let proxy = Proxy::start(kind, &agent, &scratch, &flags);
    let anthropic = [
        ("x-api-key", "sk-test"),
        ("content-type", "application/json"),
        ("anthropic-version", "2023-06-01"),
    ];
    let openai = [
        ("authorization", "Bearer sk-test"),
        ("content-type", "application/json"),
    ];
    let message = |model: &str, stream: bool| {
        serde_json::json!({"model": model, "max_tokens": 1024, "stream": stream,
            "messages": [{"role": "user", "content": "Check notes.txt"}]})
        .to_string()
    };
    let is_request_id = |reply: &Reply| {
        reply.header("request-id").is_some_and(|id| {
            id.strip_prefix("req_")
                .is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        })
    };

    // Claude Code's request line, its model aliased to the agent's.
    let reply = proxy.request(
        "POST",
        "/v1/messages?beta=true",
        &anthropic,
        message("claude-opus-5-5", true).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert!(is_request_id(&reply), "{:?}", reply.headers);
    let stream = messages::check_stream(&reply.body, "auto");
    assert_eq!(stream.text(), expected);
    assert!(stream.error.is_none());
    let reply = proxy.request(
        "POST",
        "/v1/messages",
        &anthropic,
        message("claude-haiku-4-5", false).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(is_request_id(&reply));
    let body = reply.json();
    messages::check_body(&body, "composer-2.5");
    assert_eq!(body["content"][0]["text"], expected.as_str());

    // Codex's: the Responses API, stream and body; a model no rule matches is kept.
    let response = |stream: bool| {
        serde_json::json!({"model": "gpt-5", "stream": stream, "input": "Check notes.txt"})
            .to_string()
    };
    let reply = proxy.request("POST", "/v1/responses", &openai, response(true).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("request-id"), None);
    let summary = check_responses_stream(&reply.body);
    assert_eq!(summary.terminal, "response.completed");
    assert_eq!(summary.text, expected);
    let reply = proxy.request("POST", "/responses", &openai, response(false).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(check_responses_body(&reply.json()), expected);

    // Each request ran the agent once, with the model it mapped to.
    let models: Vec<String> = scratch
        .runs()
        .iter()
        .map(|run| {
            run.argv
                .windows(2)
                .find(|w| w[0] == "--model")
                .map(|w| w[1].clone())
                .unwrap()
        })
        .collect();
    assert_eq!(models, ["auto", "composer-2.5", "gpt-5", "gpt-5"]);
}

/// What the Messages and Responses routes answer without an agent: `count_tokens`, the
/// probe, and every refusal in the route's own error shape.
fn dialect_errors_and_probes(kind: Kind) {
    let scratch = Scratch::new("dialect-errors");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--api-key", "sk-test"]);
    let json = ("content-type", "application/json");
    let key = ("x-api-key", "sk-test");
    let anthropic_error = |reply: &Reply, status: u16, kind: &str| {
        assert_eq!(reply.status, status, "{}", reply.text());
        let body = reply.json();
        messages::check_error_object(&body);
        assert_eq!(body["error"]["type"], kind, "{body}");
        assert!(
            reply
                .header("request-id")
                .is_some_and(|id| id.starts_with("req_"))
        );
    };
    let valid = br#"{"model":"auto","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}"#;

    // count_tokens: an honest 404 for a valid body, the field for a bad one.
    let reply = proxy.request(
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &[key, json],
        valid,
    );
    anthropic_error(&reply, 404, "not_found_error");
    let reply = proxy.request(
        "POST",
        "/v1/messages/count_tokens",
        &[key, json],
        br#"{"model":"auto","messages":5}"#,
    );
    anthropic_error(&reply, 400, "invalid_request_error");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages")
    );

    // Refusals on the Messages routes, in its shape.
    for (headers, path) in [
        (vec![json], "/v1/messages"),
        (vec![json, ("x-api-key", "sk-wrong")], "/v1/messages"),
        (
            vec![json, ("authorization", "Bearer sk-wrong")],
            "/v1/messages/count_tokens",
        ),
    ] {
        let reply = proxy.request("POST", path, &headers, valid);
        anthropic_error(&reply, 401, "authentication_error");
    }
    let reply = proxy.request(
        "POST",
        "/v1/messages",
        &[key, ("content-type", "text/plain")],
        valid,
    );
    anthropic_error(&reply, 415, "invalid_request_error");
    let reply = proxy.request("GET", "/v1/messages", &[key], b"");
    anthropic_error(&reply, 405, "invalid_request_error");
    let no_max_tokens = br#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;
    let reply = proxy.request("POST", "/v1/messages", &[key, json], no_max_tokens);
    anthropic_error(&reply, 400, "invalid_request_error");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens"),
        "{}",
        reply.text()
    );

    // The Responses route's refusals are OpenAI's; its bad bodies name the field.
    let reply = proxy.request(
        "POST",
        "/v1/responses",
        &[json],
        br#"{"model":"auto","input":"hi"}"#,
    );
    assert_eq!(reply.status, 401);
    assert_eq!(reply.error_code(), "invalid_api_key");
    assert_eq!(reply.header("request-id"), None);
    let bearer = ("authorization", "Bearer sk-test");
    let stored = br#"{"model":"auto","input":"hi","previous_response_id":"resp_1"}"#;
    let reply = proxy.request("POST", "/v1/responses", &[bearer, json], stored);
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.json()["error"]["param"], "previous_response_id");

    // Claude Code's probe needs no key and gets an empty 200.
    for method in ["HEAD", "GET"] {
        let reply = proxy.request(method, "/api/hello", &[], b"");
        assert_eq!(reply.status, 200, "{method}");
        assert!(reply.body.is_empty(), "{method}");
    }
    assert!(scratch.runs().is_empty(), "no request above runs the agent");
}
