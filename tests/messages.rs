//! The Anthropic Messages dialect: the real Claude Code request bodies and the prompts
//! they give, hand-written streams checked against their expected bytes, a Claude Code-like
//! request (thinking shown, client tools) over every transcript, a two-turn tool round,
//! and hostile bodies.

mod support;

use std::path::Path;

use agentwire::anthropic::{self, parse_request};
use agentwire::api::{Effort, ErrorReply, ReasoningDisplay, Request, RequestLimits, Thinking};
use agentwire::bridge::Dialect;
use agentwire::conversation::{Role, ToolChoice};
use agentwire::cursor::prompt::{read_blocks, render_prompt};
use agentwire::tools::ids::call_id;
use agentwire::tools::{ToolPlan, ToolStrategy};
use agentwire_testkit::messages;
use serde_json::{Value, json};
use support::drive::{drive, every_transcript_in_every_chunking};

/// The request bodies of the real Claude Code capture (`../shared/fixtures/clients`), in
/// order, or `None` when `what` is skipped (`support::shared`).
fn claude_code_bodies(what: &str) -> Option<Vec<Value>> {
    let fixtures = support::shared::fixtures(what)?;
    Some(fixtures.request_bodies("clients/claude-code-2.1.330-requests.jsonl"))
}

fn parse(body: &Value) -> Request {
    parse_request(
        &serde_json::to_vec(body).unwrap(),
        &RequestLimits::default(),
    )
    .unwrap()
}

fn prompt(request: &Request) -> String {
    render_prompt(
        &request.conversation,
        &ToolPlan::new(&request.conversation.tools, ToolStrategy::ReadOnly),
    )
}

const CLAUDE_CODE_TOOLS: [&str; 11] = [
    "Agent",
    "Bash",
    "Edit",
    "ListAgents",
    "Read",
    "ReportFindings",
    "ScheduleWakeup",
    "Skill",
    "ToolSearch",
    "Workflow",
    "Write",
];

#[test]
fn real_claude_code_bodies_parse_into_the_conversation() {
    let Some(bodies) =
        claude_code_bodies("messages::real_claude_code_bodies_parse_into_the_conversation")
    else {
        return;
    };
    // Turn 1 and 2 of the Read round, "say hi", "say hi" with --model composer-2.5.
    assert_eq!(bodies.len(), 4);
    let requests: Vec<Request> = bodies.iter().map(parse).collect();
    for (request, body) in requests.iter().zip(&bodies) {
        assert!(request.stream && request.include_usage);
        assert_eq!(request.response_model, body["model"].as_str().unwrap());
        // The billing block is left out; Claude Code's own system prompt is the first turn.
        let system = &request.conversation.messages[0];
        assert_eq!(system.role, Role::System);
        assert!(system.text().starts_with("You are a Claude agent"));
        assert!(!system.text().contains("x-anthropic-billing-header"));
        // The environment arrives as a `role: "system"` turn after the user's.
        let roles: Vec<Role> = request.conversation.messages[..3]
            .iter()
            .map(|m| m.role)
            .collect();
        assert_eq!(roles, [Role::System, Role::User, Role::System]);
        assert!(
            request.conversation.messages[2]
                .text()
                .starts_with("# Environment\n")
        );
        // Every client tool but the deferred placeholder is offered.
        let tools: Vec<&str> = request
            .conversation
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(tools, CLAUDE_CODE_TOOLS);
        assert_eq!(request.conversation.tool_choice, ToolChoice::Auto);
        assert!(request.conversation.parallel_tool_calls);
        // Thinking asked for and to be omitted: never shown.
        assert_eq!(
            (request.reasoning.thinking, request.reasoning.display),
            (Thinking::Adaptive, Some(ReasoningDisplay::Omitted))
        );
        assert!(!anthropic::shows_thinking(&request.reasoning));
        for field in ["max_tokens", "metadata", "context_management"] {
            assert!(request.ignored.contains(&field), "{field}");
        }
    }
    assert_eq!(
        requests[0].conversation.messages[1].text(),
        format!(
            "{}\nWhat does notes.txt say? Use the Read tool.",
            bodies[0]["messages"][0]["content"][0]["text"]
                .as_str()
                .unwrap()
        )
    );
    assert_eq!(requests[0].conversation.messages.len(), 3);
    assert_eq!(requests[0].model, "claude-opus-5-5");
    assert_eq!(requests[0].reasoning.effort, Some(Effort::Medium));
    assert_eq!(
        (requests[3].model.as_str(), requests[3].reasoning.effort),
        ("composer-2.5", Some(Effort::High))
    );
    // Turn 2 carries the Read call and its result under the call's id.
    let turn = &requests[1].conversation.messages;
    let roles: Vec<Role> = turn.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::System,
            Role::Assistant,
            Role::Tool
        ]
    );
    let call = &turn[3].tool_calls[0];
    assert_eq!(
        (
            call.id.as_str(),
            call.name.as_str(),
            call.arguments.as_str()
        ),
        (
            "toolu_mock01",
            "Read",
            r#"{"file_path":"/home/user/project/notes.txt"}"#
        )
    );
    assert_eq!(turn[4].tool_call_id.as_deref(), Some("toolu_mock01"));
    assert_eq!(turn[4].text(), "1\tThe kettle in the lab is blue.\n2\t");
    assert!(!turn[4].is_error);
}

#[test]
fn real_claude_code_prompts() {
    let Some(bodies) = claude_code_bodies("messages::real_claude_code_prompts") else {
        return;
    };
    for body in &bodies {
        let request = parse(body);
        let prompt = prompt(&request);
        assert!(!prompt.contains("x-anthropic-billing-header") && !prompt.contains("cc_version"));
        assert!(!prompt.contains("DeferredToolPlaceholder"));
        let blocks: Vec<(&str, &str)> = read_blocks(&prompt).map(|b| (b.label, b.body)).collect();
        // Both system turns are instructions, in order; the user's prompt is the user block.
        let (label, instructions) = blocks[0];
        assert_eq!(label, "instructions");
        let claude = instructions.find("You are a Claude agent").unwrap();
        let environment = instructions.find("# Environment\n").unwrap();
        assert!(claude < environment);
        assert_eq!(blocks[1].0, "user");
        assert!(
            blocks[1]
                .1
                .contains(request.conversation.messages[1].text().as_ref())
        );
        let (label, tools) = blocks.last().unwrap();
        assert_eq!(*label, "tools");
        for tool in CLAUDE_CODE_TOOLS {
            assert!(tools.contains(&format!("\n- {tool}")), "{tool}");
        }
    }
    // The tool round: the call in the assistant block, the result labelled with its id
    // and the tool's name, and the agent told to go on.
    let round = prompt(&parse(&bodies[1]));
    let blocks: Vec<(&str, &str)> = read_blocks(&round).map(|b| (b.label, b.body)).collect();
    assert_eq!(blocks[2].0, "assistant");
    assert!(blocks[2].1.contains(
        "Tool calls:\n- toolu_mock01 Read {\"file_path\":\"/home/user/project/notes.txt\"}"
    ));
    assert_eq!(
        blocks[3],
        (
            "tool result for toolu_mock01 (Read)",
            "1\tThe kettle in the lab is blue.\n2\t\n"
        )
    );
    assert!(round.ends_with("Continue the task.\n"));
}

/// Claude Code's own tools, parsed from its real request: `Bash` and `Read` reach the
/// agent's shell and read tools with Claude Code's argument names; `Edit`, `Write` and
/// the rest are taught as envelopes, whose arguments in cursor's or other clients' key
/// names are renamed to Claude Code's and checked against its real schemas.
#[test]
fn real_claude_code_tools_in_the_alias_and_schema_tables() {
    let Some(bodies) =
        claude_code_bodies("messages::real_claude_code_tools_in_the_alias_and_schema_tables")
    else {
        return;
    };
    let request = parse(&bodies[0]);
    let plan = ToolPlan::new(&request.conversation.tools, ToolStrategy::ReadOnly);
    let native: Vec<&str> = plan
        .catalogue()
        .filter(|e| matches!(e.delivery, agentwire::tools::Delivery::Native { .. }))
        .map(|e| e.name)
        .collect();
    assert_eq!(native, ["Bash", "Read"]);
    let mapped = |kind: &str, args: &str| {
        let call = plan.map_native(kind, Some(args)).unwrap();
        (
            call.name,
            serde_json::from_str::<Value>(&call.arguments).unwrap(),
        )
    };
    assert_eq!(
        mapped("read", r#"{"path":"/w/a.rs","offset":10,"limit":5}"#),
        (
            "Read".to_owned(),
            json!({"file_path": "/w/a.rs", "offset": 10, "limit": 5})
        )
    );
    // Bash's timeout is in milliseconds, as cursor's is.
    assert_eq!(
        mapped(
            "shell",
            r#"{"command":"ls","workingDirectory":"","timeout":30000,"description":"list"}"#
        ),
        (
            "Bash".to_owned(),
            json!({"command": "ls", "timeout": 30000, "description": "list"})
        )
    );
    // Edits and writes are the agent's own when it makes them; written as envelopes they
    // are the client's, in its key names.
    assert!(
        plan.map_native("edit", Some(r#"{"path":"/w/a"}"#))
            .is_none()
    );
    let envelope = |name: &str, args: Value| {
        let call = plan.check_envelope(name, &args, None).unwrap();
        (
            call.name,
            serde_json::from_str::<Value>(&call.arguments).unwrap(),
        )
    };
    assert_eq!(
        envelope(
            "edit",
            json!({"path": "/w/a", "oldString": "x", "newString": "y", "replaceAll": true})
        ),
        (
            "Edit".to_owned(),
            json!({"file_path": "/w/a", "old_string": "x", "new_string": "y", "replace_all": true})
        )
    );
    assert_eq!(
        envelope("Write", json!({"filePath": "/w/b", "contents": "hi\n"})),
        (
            "Write".to_owned(),
            json!({"file_path": "/w/b", "content": "hi\n"})
        )
    );
    // Claude Code's schemas forbid other keys: a call missing a required one is refused.
    assert!(
        plan.check_envelope("Edit", &json!({"file_path": "/w/a"}), None)
            .is_err()
    );
}

/// A transcript of hand-written cursor-agent lines.
fn transcript(lines: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out.into_bytes()
}

const INIT: &str = r#"{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","session_id":"s1","model":"Auto","permissionMode":"default"}"#;

/// The response body with its message id replaced by `{ID}`, after checking its shape.
fn with_id_placeholder(body: &[u8]) -> String {
    let text = String::from_utf8(body.to_vec()).unwrap();
    let at = text.find("\"msg_").unwrap() + 1;
    let id = &text[at..at + 4 + 24];
    assert!(id[4..].bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    text.replace(id, "{ID}")
}

#[test]
fn golden_stream_thinking_then_text_with_usage() {
    let request = br#"{"model":"claude-x","max_tokens":1024,"stream":true,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi"}]}"#;
    let agent = transcript(&[
        INIT,
        r#"{"type":"thinking","subtype":"delta","text":"Plan.","session_id":"s1","timestamp_ms":1}"#,
        r#"{"type":"thinking","subtype":"completed","session_id":"s1","timestamp_ms":2}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hi"}]},"session_id":"s1","timestamp_ms":3}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":" \"there\""}]},"session_id":"s1","timestamp_ms":4}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hi \"there\""}]},"session_id":"s1"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Hi \"there\"","session_id":"s1","usage":{"inputTokens":11,"outputTokens":7,"cacheReadTokens":3,"cacheWriteTokens":5}}"#,
    ]);
    let response = drive(Dialect::Messages, request, &[&agent]);
    assert_eq!(
        (response.status, response.content_type),
        (200, "text/event-stream")
    );
    let expected = r#"event: message_start
data: {"type":"message_start","message":{"id":"{ID}","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Plan."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" \"there\""}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":11,"cache_creation_input_tokens":5,"cache_read_input_tokens":3,"output_tokens":7}}

event: message_stop
data: {"type":"message_stop"}

"#;
    assert_eq!(with_id_placeholder(&response.body), expected);
    // The same run without streaming: one message with the same blocks and usage.
    let request = String::from_utf8(request.to_vec())
        .unwrap()
        .replace("\"stream\":true", "\"stream\":false");
    let response = drive(Dialect::Messages, request.as_bytes(), &[&agent]);
    assert_eq!(
        (response.status, response.content_type),
        (200, "application/json")
    );
    let expected = r#"{"id":"{ID}","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"Plan.","signature":""},{"type":"text","text":"Hi \"there\""}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"cache_creation_input_tokens":5,"cache_read_input_tokens":3,"output_tokens":7}}"#;
    assert_eq!(with_id_placeholder(&response.body), expected);
}

#[test]
fn golden_stream_a_claude_code_read_call() {
    // Claude Code's Read schema; thinking omitted, as Claude Code asks.
    let request = json!({"model": "claude-opus-5-5", "max_tokens": 128000, "stream": true,
        "thinking": {"type": "adaptive", "display": "omitted"},
        "messages": [{"role": "user", "content": "What does notes.txt say?"}],
        "tools": [{"name": "Read", "description": "Reads a file",
            "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
                "required": ["file_path"], "additionalProperties": false}}]});
    let agent_call = "call_R3a\nfc_1b2";
    let agent = transcript(&[
        INIT,
        r#"{"type":"thinking","subtype":"delta","text":"Read it.","session_id":"s1","timestamp_ms":1}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Reading."}]},"session_id":"s1","timestamp_ms":2}"#,
        r#"{"type":"tool_call","subtype":"started","call_id":"call_R3a\nfc_1b2","tool_call":{"readToolCall":{"args":{"path":"/w/notes.txt"}}},"model_call_id":"m1","session_id":"s1","timestamp_ms":3}"#,
        r#"{"type":"tool_call","subtype":"completed","call_id":"call_R3a\nfc_1b2","tool_call":{"readToolCall":{"args":{"path":"/w/notes.txt"},"result":{"success":{"content":"blue\n"}}}},"model_call_id":"m1","session_id":"s1","timestamp_ms":4}"#,
    ]);
    let response = drive(
        Dialect::Messages,
        &serde_json::to_vec(&request).unwrap(),
        &[&agent],
    );
    assert_eq!((response.status, response.stops), (200, 1));
    let id = call_id(agent_call);
    let expected = r#"event: message_start
data: {"type":"message_start","message":{"id":"{ID}","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"CALL","name":"Read","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":\"/w/notes.txt\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":0}}

event: message_stop
data: {"type":"message_stop"}

"#
    .replace("CALL", &id);
    assert_eq!(with_id_placeholder(&response.body), expected);

    // Turn 2: Claude Code sends the call back with its result; the result reaches the
    // agent under that call, and the prompt names the tool.
    let mut turn2 = request.clone();
    turn2["messages"] = json!([
        {"role": "user", "content": "What does notes.txt say?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": "/w/notes.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "1\tblue\n"}]}
    ]);
    let request2 = parse(&turn2);
    let prompt = prompt(&request2);
    let result_block = read_blocks(&prompt)
        .find(|b| b.is_tool_result())
        .expect("a tool result block");
    assert_eq!(result_block.label, format!("tool result for {id} (Read)"));
    assert_eq!(result_block.body, "1\tblue\n");
    // The next run answers with text: the turn ends normally.
    let done = transcript(&[
        INIT,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"It says blue."}]},"session_id":"s1"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"It says blue.","session_id":"s1","usage":{"inputTokens":1,"outputTokens":2}}"#,
    ]);
    let response = drive(
        Dialect::Messages,
        &serde_json::to_vec(&turn2).unwrap(),
        &[&done],
    );
    let stream = messages::check_stream(&response.body, "claude-opus-5-5");
    assert_eq!(
        (stream.text(), stream.stop_reason.as_deref()),
        ("It says blue.".to_owned(), Some("end_turn"))
    );
}

/// A Claude Code-like request that shows thinking and offers tools, over every transcript
/// in every chunking: each stream keeps the state machine; tool calls are `tool_use`
/// blocks with safe ids.
#[test]
fn every_transcript_with_thinking_shown_and_client_tools() {
    let request = json!({"model": "claude-x", "max_tokens": 32000, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "messages": [{"role": "user", "content": "go"}],
        "tools": [
            {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"},
                "timeout": {"type": "number", "description": "Optional timeout in milliseconds"}}, "required": ["command"]}},
            {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"},
                "offset": {"type": "integer"}, "limit": {"type": "integer"}}, "required": ["file_path"]}},
            {"name": "Edit", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"},
                "old_string": {"type": "string"}, "new_string": {"type": "string"}}, "required": ["file_path", "old_string", "new_string"]}}]});
    let request = serde_json::to_vec(&request).unwrap();
    let (mut tool_uses, mut thinking) = (0, 0);
    every_transcript_in_every_chunking(Dialect::Messages, &request, |path, bytes, response| {
        if response.status != 200 {
            messages::check_error_object(&serde_json::from_slice(&response.body).unwrap());
            return;
        }
        let stream = messages::check_stream(&response.body, "claude-x");
        for (id, name, input) in stream.tool_uses() {
            assert!(id.starts_with("call_"), "{id}");
            assert!(["Bash", "Read", "Edit"].contains(&name.as_str()), "{name}");
            if name == "Read" {
                assert!(
                    input["file_path"].is_string(),
                    "{}: {input}",
                    path.display()
                );
            }
            tool_uses += 1;
        }
        if support::has_thinking(bytes) && stream.error.is_none() {
            assert!(!stream.thinking().is_empty(), "{}", path.display());
            thinking += 1;
        }
    });
    assert!(tool_uses >= 3 && thinking >= 3, "{tool_uses} {thinking}");
}

#[test]
fn a_failure_before_the_answer_gets_its_true_status() {
    // The agent never answers: no head was sent, so the failure is a status (here 503,
    // unreachable service) and the Anthropic body, not an in-stream error that Claude
    // Code would answer by running the request again.
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/failure_no_result.jsonl"),
    )
    .unwrap();
    for stream in [true, false] {
        let response = drive(
            Dialect::Messages,
            &support::drive::hello(Dialect::Messages, stream),
            &[&bytes],
        );
        assert_eq!(
            (response.status, response.content_type, response.retryable),
            (503, "application/json", Some(true))
        );
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        messages::check_error_object(&body);
        assert_eq!(body["error"]["type"], "overloaded_error");
    }
}

#[test]
fn a_json_reply_format_reaches_the_prompt() {
    // Claude Code's session-title call: no tools, a JSON schema in output_config.format.
    let body = json!({"model": "claude-x", "max_tokens": 32000, "stream": true,
        "messages": [{"role": "user", "content": "Name this session."}],
        "output_config": {"format": {"type": "json_schema", "schema": {"type": "object",
            "properties": {"title": {"type": "string"}}, "required": ["title"], "additionalProperties": false}}}});
    let prompt = prompt(&parse(&body));
    let format = read_blocks(&prompt)
        .find(|b| b.label == "reply format")
        .expect("a reply format block");
    assert!(format.body.contains("\"title\""), "{}", format.body);
}

#[test]
fn usage_is_the_agents_own() {
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/usage_with_cost.jsonl"),
    )
    .unwrap();
    let reported = bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap()["usage"]
        .clone();
    let expected = json!({"input_tokens": reported["inputTokens"],
        "cache_creation_input_tokens": reported["cacheWriteTokens"],
        "cache_read_input_tokens": reported["cacheReadTokens"],
        "output_tokens": reported["outputTokens"]});
    for stream in [true, false] {
        let response = drive(
            Dialect::Messages,
            &support::drive::hello(Dialect::Messages, stream),
            &[&bytes],
        );
        let usage = if stream {
            messages::check_stream(&response.body, "auto").usage
        } else {
            serde_json::from_slice::<Value>(&response.body).unwrap()["usage"].clone()
        };
        assert_eq!(usage, expected, "stream: {stream}");
    }
}

/// The Anthropic error body the Bridge sends for `body`, with its status.
fn rejected(body: &[u8]) -> (u16, Value) {
    let response = drive(Dialect::Messages, body, &[]);
    assert_eq!(response.stops, 0);
    (
        response.status,
        serde_json::from_slice(&response.body).unwrap(),
    )
}

#[test]
fn bad_bodies_get_the_anthropic_400_naming_the_field() {
    let cases: [(&[u8], &str); 6] = [
        (
            br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
            "max_tokens",
        ),
        (
            br#"{"model":"m","max_tokens":1,"messages":[{"role":"robot","content":"hi"}]}"#,
            "messages[0].role: ",
        ),
        (
            br#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"r"}]}]}"#,
            "messages[0].content[0].tool_use_id: ",
        ),
        (
            br#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a b","input_schema":{}}]}"#,
            "tools[0].name: ",
        ),
        (
            br#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":"lots"}}"#,
            "'thinking.budget_tokens'",
        ),
        (b"{\"model\":", "could not parse the JSON body"),
    ];
    for (body, named) in cases {
        let (status, error) = rejected(body);
        assert_eq!(status, 400);
        messages::check_error_object(&error);
        assert_eq!(error["error"]["type"], "invalid_request_error");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{message}");
    }
    // Unknown fields, betas' blocks and tool types are never a 400: the agent starts.
    let bridge = support::drive::bridge(
        Dialect::Messages,
        br#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"future_block","x":1}]}],
            "tools":[{"type":"future_tool_20990101","name":"f"}],"betas":["x"],"speed":"fast","diagnostics":{"a":1}}"#,
    );
    assert!(bridge.invocation().is_some());
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,12}".prop_map(Value::String),
            Just(json!("tool_use")),
            Just(json!("tool_result")),
            Just(json!("text")),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A Claude Code-shaped body with one place replaced by `value`.
    fn body_with(place: usize, value: Value) -> Value {
        let mut body = json!({"model": "claude-x", "max_tokens": 1024, "stream": true,
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=1;"}, {"type": "text", "text": "s"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}],
            "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
            "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}, "tool_choice": {"type": "auto"}});
        let pointers = [
            "/model",
            "/max_tokens",
            "/system",
            "/system/1",
            "/messages",
            "/messages/0",
            "/messages/0/content",
            "/messages/0/content/0",
            "/messages/1/content/0",
            "/messages/1/content/0/input",
            "/messages/2/content/0",
            "/messages/2/content/0/content",
            "/tools",
            "/tools/0",
            "/tools/0/input_schema",
            "/thinking",
            "/output_config",
            "/tool_choice",
            "/metadata",
        ];
        let pointer = pointers[place % pointers.len()];
        match body.pointer_mut(pointer) {
            Some(slot) => *slot = value,
            None => body["metadata"] = value,
        }
        body
    }

    /// Parses `body`: a request, or an Anthropic 400/413 whose body has a message.
    fn check(body: &[u8]) {
        match parse_request(body, &RequestLimits::default()) {
            Ok(request) => assert!(!request.conversation.messages.is_empty()),
            Err(error) => {
                assert!(matches!(error.status(), 400 | 413), "{error:?}");
                let mut out = Vec::new();
                anthropic::write_error(&ErrorReply::from(&error), &mut out);
                let out: Value = serde_json::from_slice(&out).unwrap();
                messages::check_error_object(&out);
            }
        }
        // count_tokens reads the same bodies, never answering 5xx.
        let reply = anthropic::count_tokens(body, &RequestLimits::default());
        assert!(matches!(reply.status(), 400 | 404 | 413) && !reply.retryable());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            check(&bytes);
        }

        #[test]
        fn real_shaped_bodies_with_a_field_replaced(place in 0usize..19, value in arbitrary_json()) {
            check(&serde_json::to_vec(&body_with(place, value)).unwrap());
        }
    }
}
