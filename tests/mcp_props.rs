//! Property tests of the MCP server: for any interleaving of HTTP requests (valid, hostile
//! or out of order), stdio bytes in any chunking, answers, closed connections, time and
//! closing, the server never panics, every exchange keeps its output contract (head
//! first, one end, nothing after it; checked on every drain by `support/mcp.rs`), every
//! exchange not reported gone ends exactly once, and every call ends at most once: an
//! answer is accepted exactly while the call is pending.

#[path = "support/mcp.rs"]
mod mcp_drive;

use std::collections::HashMap;

use agentwire::conversation::ToolSpec;
use agentwire::mcp::{
    CallId, Config, ExchangeId, HttpRequest, McpError, McpEvent, Server, ToolOutcome,
};
use mcp_drive::Driver;
use proptest::prelude::*;
use serde_json::json;

const SESSION: &str = "prop-session";

#[derive(Debug, Clone)]
enum Input {
    /// An HTTP request: a template and an id to put in it.
    Http(usize, u8),
    /// The next `n` bytes of the stdio stream.
    Stdio(usize),
    /// Answer the `k`-th call made (modulo), pending or not.
    Answer(usize),
    /// The `k`-th exchange's connection closes.
    Gone(usize),
    /// Advance the clock by this many ms, firing due deadlines.
    Wait(u64),
    Close,
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        8 => (0usize..TEMPLATES, any::<u8>()).prop_map(|(t, id)| Input::Http(t, id)),
        3 => (1usize..300).prop_map(Input::Stdio),
        4 => (0usize..64).prop_map(Input::Answer),
        2 => (0usize..64).prop_map(Input::Gone),
        2 => prop_oneof![0u64..1_000, 0u64..40_000, Just(400_000u64)].prop_map(Input::Wait),
        1 => Just(Input::Close),
    ]
}

const TEMPLATES: usize = 20;

/// The body, method, headers of template `t` with request id `id`.
fn request(
    t: usize,
    id: u8,
) -> (
    String,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
) {
    let id = id % 8;
    let ok = Some(SESSION);
    let body = |m: serde_json::Value| m.to_string();
    match t {
        0 => (
            body(
                json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}),
            ),
            "POST",
            None,
            None,
            Some("application/json, text/event-stream"),
        ),
        1 => (
            body(
                json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
            ),
            "POST",
            None,
            None,
            Some("application/json, text/event-stream"),
        ),
        2 => (
            body(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
        3 => (
            body(json!({"jsonrpc":"2.0","id":id,"method":"tools/list"})),
            "POST",
            ok,
            Some("2025-11-25"),
            Some("application/json, text/event-stream"),
        ),
        4..=6 => (
            body(
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"bash","arguments":{"command":"ls"}}}),
            ),
            "POST",
            ok,
            None,
            Some("text/event-stream, application/json"),
        ),
        7 => (
            body(
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"apply_patch","arguments":{"input":"x"}}}),
            ),
            "POST",
            ok,
            None,
            Some("*/*"),
        ),
        8 => (
            body(
                json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"r"}}),
            ),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
        9 => (
            format!(
                r#"[{{"jsonrpc":"2.0","id":{id},"method":"ping"}},{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"bash"}}}}]"#,
                id + 1
            ),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
        10 => (
            "{\"jsonrpc\":".into(),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
        11 => (String::new(), "GET", ok, None, Some("text/event-stream")),
        12 => (String::new(), "DELETE", ok, None, None),
        13 => (
            body(json!({"jsonrpc":"2.0","id":id,"method":"ping"})),
            "POST",
            None,
            None,
            Some("application/json, text/event-stream"),
        ),
        14 => (
            body(json!({"jsonrpc":"2.0","id":id,"method":"ping"})),
            "POST",
            Some("other"),
            None,
            Some("application/json, text/event-stream"),
        ),
        15 => (
            "x".repeat(3000),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
        16 => (
            body(json!({"jsonrpc":"2.0","id":id,"result":{}})),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
        17 => (
            body(json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"nope"}})),
            "POST",
            ok,
            Some("1999-01-01"),
            Some("application/json, text/event-stream"),
        ),
        18 => (
            body(json!({"jsonrpc":"2.0","id":id,"method":"ping"})),
            "POST",
            ok,
            None,
            Some("application/json"),
        ),
        _ => (
            "[]".into(),
            "POST",
            ok,
            None,
            Some("application/json, text/event-stream"),
        ),
    }
}

/// A stdio stream: a session's lines and garbage, split anywhere by the inputs.
fn stdio_stream() -> Vec<u8> {
    let mut out = Vec::new();
    for line in [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"bash","arguments":{}}}"#,
        "not json at all",
        r#"[{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"bash","arguments":{}}},{"jsonrpc":"2.0","id":102,"method":"ping"}]"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":100}}"#,
        "\u{fffd}\u{1}\t",
        r#"{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"bash","arguments":{}}}"#,
    ] {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(&[b'y'; 1500]);
    out.push(b'\n');
    out
}

/// Where each call is, as the test sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Pending,
    Answered,
    Cancelled,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn every_exchange_ends_once_and_every_call_at_most_once(
        inputs in proptest::collection::vec(input(), 0..60),
    ) {
        let tools = vec![
            ToolSpec::function("bash", "", json!({"type": "object"})),
            ToolSpec::freeform("apply_patch", "", None),
        ];
        let config = Config { max_body_bytes: 1024, max_pending_calls: 6, max_exchanges: 12, call_limit_ms: Some(30_000), ..Config::default() };
        let mut driver = Driver::new(Server::new(&tools, &config, SESSION.into()));
        let stdio = stdio_stream();
        let mut offset = 0;
        let mut now = 0u64;
        let mut calls: Vec<CallId> = Vec::new();
        let mut fates: HashMap<CallId, Fate> = HashMap::new();
        let mut exchanges: Vec<ExchangeId> = Vec::new();
        let mut closed = false;
        for input in inputs {
            match input {
                Input::Http(t, id) => {
                    let (body, method, session_id, protocol_version, accept) = request(t, id);
                    let request = HttpRequest {
                        method,
                        accept,
                        content_type: Some("application/json"),
                        session_id,
                        protocol_version,
                        body: body.as_bytes(),
                    };
                    exchanges.push(driver.http(&request, now));
                }
                Input::Stdio(n) => {
                    let end = (offset + n).min(stdio.len());
                    driver.stdio(&stdio[offset..end], now);
                    offset = if end == stdio.len() { 0 } else { end };
                }
                Input::Answer(k) => {
                    if calls.is_empty() {
                        continue;
                    }
                    let call = calls[k % calls.len()];
                    let answer = driver.server.answer_call(call, &ToolOutcome::text("out", k % 2 == 0), now);
                    let fate = fates.get_mut(&call).unwrap();
                    if *fate == Fate::Pending && !closed {
                        prop_assert_eq!(answer, Ok(()));
                        *fate = Fate::Answered;
                    } else {
                        prop_assert_eq!(answer, Err(McpError::NotPending(call)));
                    }
                    driver.drain();
                }
                Input::Gone(k) => {
                    if exchanges.is_empty() {
                        continue;
                    }
                    driver.gone(exchanges[k % exchanges.len()], now);
                }
                Input::Wait(ms) => {
                    now += ms;
                    driver.advance(now);
                }
                Input::Close => {
                    driver.server.close(now);
                    driver.drain();
                    closed = true;
                }
            }
            for event in driver.take_events() {
                match event {
                    McpEvent::Call { call, tool, .. } => {
                        prop_assert!(tool < 2);
                        prop_assert!(fates.insert(call, Fate::Pending).is_none());
                        calls.push(call);
                    }
                    McpEvent::Cancelled { call, .. } => {
                        let fate = fates.get_mut(&call).unwrap();
                        prop_assert_eq!(*fate, Fate::Pending);
                        *fate = Fate::Cancelled;
                    }
                    McpEvent::CallLimit { call } => {
                        prop_assert_eq!(fates[&call], Fate::Pending);
                    }
                    McpEvent::Closed => closed = true,
                    other => panic!("{other:?}"),
                }
            }
            if !closed {
                let pending = fates.values().filter(|f| **f == Fate::Pending).count();
                prop_assert_eq!(driver.server.pending_calls(), pending);
            }
            let _ = driver.take_lines();
        }
        driver.server.close(now);
        driver.drain();
        driver.assert_all_ended();
        prop_assert_eq!(driver.server.pending_calls(), 0);
        prop_assert_eq!(driver.server.poll_timeout(), None);
    }
}
