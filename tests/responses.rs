//! The OpenAI Responses dialect: the real Codex request bodies parsed into the
//! conversation and prompt the agent is given, hostile bodies answered with a 400 naming
//! their param, golden streams of small transcripts (written by hand from the wire rules),
//! client tools as `function_call` and `custom_tool_call` items, failures, usage, and the
//! item state machine under random event sequences.

mod support;

use std::path::Path;

use agentwire::api::{Request, RequestLimits};
use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect};
use agentwire::conversation::{Grammar, Role, ToolChoice, ToolKind};
use agentwire::cursor::ExitStatus;
use agentwire::cursor::prompt::{read_blocks, render_prompt};
use agentwire::event::{
    ActivityPhase, AgentActivity, Event, Failure, FailureKind, FinishReason, Progress, ToolCall,
    Usage,
};
use agentwire::openai::responses::{
    EventEncoder, OutputOptions, ResponseBuilder, ResponseMeta, parse_request,
};
use agentwire::tools::ids::{call_id, envelope_call_id};
use agentwire::tools::{ToolPlan, ToolStrategy};
use proptest::prelude::*;
use serde_json::{Value, json};
use support::drive::{Response, drive};
use support::responses::{ResponsesSummary, check_responses_body, check_responses_stream};

// ---------------------------------------------------------------------------------------
// Helpers.

fn parse(body: &Value) -> Result<Request, agentwire::api::RequestError> {
    parse_request(body.to_string().as_bytes(), &RequestLimits::default())
}

/// The request bodies Codex 0.169.0 sent (`../shared/fixtures/clients`), or `None` when
/// `what` is skipped (`support::shared`).
fn codex_bodies(what: &str) -> Option<Vec<Value>> {
    let fixtures = support::shared::fixtures(what)?;
    let bodies = fixtures.request_bodies("clients/codex-0.169.0-requests.jsonl");
    assert_eq!(bodies.len(), 3, "the Codex capture's three requests");
    Some(bodies)
}

fn render(request: &Request) -> String {
    render_prompt(
        &request.conversation,
        &ToolPlan::new(&request.conversation.tools, ToolStrategy::ReadOnly),
    )
}

/// A Bridge run of `request` (seed 0, so the response id is `resp_` and the pinned
/// `seeded_hex(0)`) over `stdout`, whole; the agent then exits with `exit`.
fn run(request: &Value, stdout: &[u8], exit: i32) -> Response {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 0,
    };
    let body = request.to_string();
    let bridge = Bridge::new(
        Dialect::Responses,
        body.as_bytes(),
        &Config::default(),
        params,
    );
    support::drive::respond_to(bridge, &[stdout], ExitStatus::Code(exit))
}

fn lines(events: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for event in events {
        out.extend_from_slice(event.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn text(text: &str) -> Value {
    json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":text}]},"session_id":"s"})
}

fn thinking(text: &str) -> Value {
    json!({"type":"thinking","subtype":"delta","text":text,"session_id":"s"})
}

fn shell_start(call: &str, command: &str) -> Value {
    json!({"type":"tool_call","subtype":"started","call_id":call,
        "tool_call":{"shellToolCall":{"args":{"command":command}}},"model_call_id":"m-1","session_id":"s"})
}

fn result(usage: Option<Value>) -> Value {
    let mut line =
        json!({"type":"result","subtype":"success","is_error":false,"result":"","session_id":"s"});
    if let Some(usage) = usage {
        line["usage"] = usage;
    }
    line
}

fn stream_of(response: &Response) -> ResponsesSummary {
    assert_eq!(
        (response.status, response.content_type),
        (200, "text/event-stream"),
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    check_responses_stream(&response.body)
}

fn error_of(response: &Response) -> Value {
    assert_eq!(response.content_type, "application/json");
    serde_json::from_slice(&response.body).unwrap()
}

/// Codex's shell tool, as its first request offers it (abridged schema).
fn exec_command() -> Value {
    json!({"type":"function","name":"exec_command","description":"Runs a command.","strict":false,
        "parameters":{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}},
        "required":["cmd"],"additionalProperties":false}})
}

/// A freeform patch tool with a grammar, as Codex offers `apply_patch` for catalogued
/// models (a grammar of our own, in Lark syntax).
fn apply_patch() -> Value {
    json!({"type":"custom","name":"apply_patch","description":"Edit files with a patch.",
        "format":{"type":"grammar","syntax":"lark","definition":PATCH_GRAMMAR}})
}

const PATCH_GRAMMAR: &str = "start: \"*** Begin Patch\" LF change+ \"*** End Patch\" LF?\nchange: /[^\\n]*/ LF\n%import common.LF";

// ---------------------------------------------------------------------------------------
// Real Codex request bodies.

#[test]
fn codex_bodies_parse_into_the_conversation_codex_meant() {
    let Some(bodies) =
        codex_bodies("responses::codex_bodies_parse_into_the_conversation_codex_meant")
    else {
        return;
    };
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        let request = parse(body).unwrap();
        assert!(request.stream && request.include_usage);
        assert_eq!(request.model, "composer-2.5");
        let conversation = &request.conversation;
        // Codex sends no `instructions`: its prompt is developer messages, in place.
        let roles: Vec<Role> = conversation
            .messages
            .iter()
            .take(4)
            .map(|m| m.role)
            .collect();
        assert_eq!(
            roles,
            [Role::Developer, Role::Developer, Role::User, Role::User]
        );
        assert!(
            conversation.messages[0]
                .text()
                .starts_with("You are a coding agent running in the Codex CLI")
        );
        assert!(
            conversation.messages[1]
                .text()
                .starts_with("<skills_instructions>")
        );
        let environment = conversation.messages[2].text();
        assert!(environment.starts_with("<environment_context>"));
        assert!(environment.contains("<cwd>/home/user/project</cwd>"));
        // Function tools flat, the namespace's flattened, `web_search` (hosted) dropped.
        let names: Vec<&str> = conversation.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "exec_command",
                "write_stdin",
                "request_user_input",
                "view_image",
                "multi_agent_v1.close_agent",
                "multi_agent_v1.resume_agent",
                "multi_agent_v1.send_input",
                "multi_agent_v1.spawn_agent",
                "multi_agent_v1.wait_agent",
                "get_goal",
                "create_goal",
                "update_goal"
            ]
        );
        assert!(
            conversation
                .tools
                .iter()
                .all(|t| t.kind == ToolKind::Function)
        );
        assert_eq!(conversation.tools[0].parameters["required"], json!(["cmd"]));
        assert_eq!(conversation.tool_choice, ToolChoice::Auto);
        assert!(conversation.parallel_tool_calls);
        let options = OutputOptions::new(&request, true);
        assert!(options.reasoning_summary, "reasoning.summary auto: shown");
        for field in ["store", "include", "prompt_cache_key", "client_metadata"] {
            assert!(request.ignored.contains(&field), "{field}");
        }
    }
    // The prompts: say hi, then the question, then its tool round.
    assert_eq!(
        parse(&bodies[2]).unwrap().conversation.messages[3].text(),
        "say hi"
    );
    let question = parse(&bodies[0]).unwrap();
    assert_eq!(question.conversation.messages.len(), 4);
    assert_eq!(
        question.conversation.messages[3].text(),
        "What does notes.txt say?"
    );
    let round = parse(&bodies[1]).unwrap();
    let messages = &round.conversation.messages;
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[4].role, Role::Assistant);
    let call = &messages[4].tool_calls[0];
    assert_eq!(
        (
            call.id.as_str(),
            call.name.as_str(),
            call.arguments.as_str()
        ),
        ("call_mock1", "exec_command", r#"{"cmd": "cat notes.txt"}"#)
    );
    assert_eq!(
        (messages[5].role, messages[5].tool_call_id.as_deref()),
        (Role::Tool, Some("call_mock1"))
    );
    assert!(
        messages[5]
            .text()
            .ends_with("Output:\nThe kettle in the lab is blue.\n")
    );
}

#[test]
fn codex_prompts() {
    let Some(bodies) = codex_bodies("responses::codex_prompts") else {
        return;
    };
    let round = parse(&bodies[1]).unwrap();
    let prompt = render(&round);
    let blocks: Vec<(&str, &str)> = read_blocks(&prompt).map(|b| (b.label, b.body)).collect();
    let labels: Vec<&str> = blocks.iter().map(|(label, _)| *label).collect();
    assert_eq!(
        labels,
        [
            "instructions",
            "user",
            "user",
            "assistant",
            "tool result for call_mock1 (exec_command)",
            "tools"
        ]
    );
    // Both developer messages, in order, are the instructions.
    let messages = &round.conversation.messages;
    assert_eq!(
        blocks[0].1,
        format!("{}\n\n{}\n", messages[0].text(), messages[1].text())
    );
    assert!(blocks[1].1.starts_with("<environment_context>"));
    assert_eq!(blocks[2].1, "What does notes.txt say?\n");
    assert_eq!(
        blocks[3].1,
        "Tool calls:\n- call_mock1 exec_command {\"cmd\": \"cat notes.txt\"}\n"
    );
    assert!(blocks[4].1.contains("The kettle in the lab is blue."));
    let tools = blocks[5].1;
    assert!(tools.contains("\n- exec_command: Runs a command in a PTY"));
    assert!(tools.contains("call it by using your own `shell` tool."));
    assert!(tools.contains("\n- multi_agent_v1.spawn_agent: "));
    assert!(
        tools.contains("<tool_call>"),
        "the other tools are envelopes"
    );
    assert!(
        !tools.contains("web_search"),
        "the hosted tool is not offered"
    );
    assert!(prompt.ends_with("Continue the task.\n"));
    assert!(!render(&parse(&bodies[0]).unwrap()).contains("Continue the task"));
}

#[test]
fn apply_patch_is_a_freeform_tool_with_its_grammar() {
    let Some(bodies) = codex_bodies("responses::apply_patch_is_a_freeform_tool_with_its_grammar")
    else {
        return;
    };
    // A catalogued model's first request: `apply_patch` and `tool_search` join the tools.
    let mut body = bodies[0].clone();
    let tools = body["tools"].as_array_mut().unwrap();
    tools.push(apply_patch());
    tools.push(json!({"type":"tool_search","execution":"client","description":"Find tools."}));
    let request = parse(&body).unwrap();
    let patch = request
        .conversation
        .tools
        .iter()
        .find(|t| t.name == "apply_patch")
        .unwrap();
    assert_eq!(
        patch.kind,
        ToolKind::Freeform {
            grammar: Some(Grammar {
                syntax: "lark".into(),
                definition: PATCH_GRAMMAR.into()
            })
        }
    );
    assert_eq!(
        request.conversation.tools.len(),
        13,
        "tool_search is hosted"
    );
    let prompt = render(&request);
    assert!(prompt.contains(&format!(
        "\n- apply_patch: Edit files with a patch.\n  input: free text, not JSON; it must match this lark grammar:\n{PATCH_GRAMMAR}\n  call it with a tool-call block (below)."
    )));
    assert!(prompt.contains("The input of apply_patch is free text"));
    assert_eq!(
        ResponseMeta::new(1, 2, &request).freeform_tools,
        ["apply_patch"]
    );
}

// ---------------------------------------------------------------------------------------
// Everything else a request may hold.

#[test]
fn items_of_every_kind() {
    let body = json!({
        "model": "openai/gpt-5", "instructions": "Be brief.",
        "input": [
            {"role": "system", "content": "Mid-conversation rule."},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Look:"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
                {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}],
             "content": null, "encrypted_content": null},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Calling.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "spawn_agent",
             "namespace": "agents", "arguments": "{\"task\":\"x\"}", "status": "completed"},
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "apply_patch",
             "input": "*** Begin Patch\n*** End Patch\n"},
            {"type": "function_call_output", "call_id": "call_1",
             "output": [{"type": "input_text", "text": "spawned"}, {"type": "input_image", "image_url": "https://x/y.png"}]},
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done."},
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
            {"type": "compaction", "encrypted_content": "opaque"},
            {"type": "additional_tools", "role": "developer", "tools": [
                {"type": "function", "name": "late", "parameters": {"type": "object"}}]},
            {"type": "item_reference", "id": "msg_0"},
            {"id": "rs_0"},
            {"role": "developer", "content": "Later rule."},
            {"role": "user", "content": "Go on."}],
        "tools": [
            {"type": "namespace", "name": "agents", "description": "Sub-agents.",
             "tools": [{"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}]},
            apply_patch(),
            {"type": "web_search", "external_web_access": false},
            {"type": "local_shell"}],
        "tool_choice": {"type": "custom", "name": "apply_patch"},
        "parallel_tool_calls": false,
        "reasoning": {"effort": "high", "summary": "detailed"},
        "text": {"verbosity": "low", "format": {"type": "json_schema", "name": "answer",
                 "schema": {"type": "object"}, "strict": true}},
        "max_output_tokens": 10, "store": true, "metadata": {"k": "v"}, "someday": {"new": "field"}
    });
    let request = parse(&body).unwrap();
    assert_eq!(
        (request.model.as_str(), request.response_model.as_str()),
        ("gpt-5", "openai/gpt-5")
    );
    let conversation = &request.conversation;
    let summary: Vec<(Role, String, usize, Option<&str>)> = conversation
        .messages
        .iter()
        .map(|m| {
            (
                m.role,
                m.text().into_owned(),
                m.tool_calls.len(),
                m.tool_call_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Role::System, "Be brief.".into(), 0, None),
            (Role::System, "Mid-conversation rule.".into(), 0, None),
            (Role::User, "Look:".into(), 0, None),
            (Role::Assistant, "Calling.".into(), 2, None),
            (Role::Tool, "spawned".into(), 0, Some("call_1")),
            (Role::Tool, "Done.".into(), 0, Some("call_2")),
            (Role::Developer, "Later rule.".into(), 0, None),
            (Role::User, "Go on.".into(), 0, None),
        ]
    );
    assert_eq!(
        conversation.messages[2].content.len(),
        3,
        "the attachments stay parts"
    );
    let calls = &conversation.messages[3].tool_calls;
    assert_eq!(
        (calls[0].name.as_str(), calls[0].arguments.as_str()),
        ("agents.spawn_agent", "{\"task\":\"x\"}")
    );
    assert_eq!(
        (calls[1].name.as_str(), calls[1].arguments.as_str()),
        ("apply_patch", "*** Begin Patch\n*** End Patch\n")
    );
    let names: Vec<&str> = conversation.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["agents.spawn_agent", "apply_patch", "late"]);
    assert_eq!(
        conversation.tool_choice,
        ToolChoice::Named("apply_patch".into())
    );
    assert!(!conversation.parallel_tool_calls);
    assert!(matches!(
        &conversation.output_format,
        agentwire::conversation::OutputFormat::JsonSchema { name: Some(name), .. } if name == "answer"
    ));
    assert_eq!(request.reasoning.effort, Some(agentwire::api::Effort::High));
    assert_eq!(
        request.ignored,
        [
            "max_output_tokens",
            "store",
            "metadata",
            "text.verbosity",
            "item_reference"
        ]
    );
    // The echo of a named custom tool.
    let meta = ResponseMeta::new(0, 0, &request);
    let mut encoder = EventEncoder::new(&meta, &OutputOptions::new(&request, true));
    let mut out = Vec::new();
    encoder.encode(&Event::Finish(FinishReason::Stop), &mut out);
    let summary = check_responses_stream(&out);
    assert_eq!(
        summary.response["tool_choice"],
        json!({"type": "custom", "name": "apply_patch"})
    );
    assert_eq!(summary.response["parallel_tool_calls"], false);
}

#[test]
fn tool_choices() {
    let tools = json!([{"type":"function","name":"a"},{"type":"function","name":"b"},
        {"type":"namespace","name":"n","description":"","tools":[{"type":"function","name":"c"}]}]);
    let choice = |choice: Value| {
        let request = parse(&json!({"input":"x","tools":tools,"tool_choice":choice})).unwrap();
        let names: Vec<String> = request
            .conversation
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect();
        (request.conversation.tool_choice, names)
    };
    let all = vec!["a".to_owned(), "b".into(), "n.c".into()];
    assert_eq!(
        choice(json!("required")),
        (ToolChoice::Required, all.clone())
    );
    assert_eq!(choice(json!("none")), (ToolChoice::None, all.clone()));
    assert_eq!(choice(Value::Null), (ToolChoice::Auto, all.clone()));
    assert_eq!(
        choice(json!({"type":"function","name":"b"})),
        (ToolChoice::Named("b".into()), all.clone())
    );
    assert_eq!(
        choice(json!({"type":"function","name":"c","namespace":"n"})),
        (ToolChoice::Named("n.c".into()), all.clone())
    );
    // Echoed as it was named.
    let request = parse(&json!({"input":"x","tools":tools,
        "tool_choice":{"type":"function","name":"c","namespace":"n"}}))
    .unwrap();
    let mut encoder = EventEncoder::new(
        &ResponseMeta::new(0, 0, &request),
        &OutputOptions::new(&request, true),
    );
    let mut out = Vec::new();
    encoder.encode(&Event::Finish(FinishReason::Stop), &mut out);
    assert_eq!(
        check_responses_stream(&out).response["tool_choice"],
        json!({"type":"function","name":"c","namespace":"n"})
    );
    // A hosted tool's choice: the tool is not offered here.
    assert_eq!(
        choice(json!({"type":"web_search_preview"})),
        (ToolChoice::Auto, all)
    );
    // allowed_tools keeps only the listed tools.
    assert_eq!(
        choice(
            json!({"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"b"},{"type":"mcp","server_label":"x"}]})
        ),
        (ToolChoice::Required, vec!["b".to_owned()])
    );
    assert_eq!(
        choice(json!({"type":"allowed_tools","mode":"auto","tools":[{"type":"image_generation"}]})),
        (ToolChoice::None, vec![])
    );
    // No tools: none.
    let request = parse(&json!({"input":"x"})).unwrap();
    assert_eq!(request.conversation.tool_choice, ToolChoice::None);
}

#[test]
fn reasoning_is_shown_when_a_summary_is_asked_for() {
    let stdout = lines(&[thinking("Greeting."), text("Hi."), result(None)]);
    let shown = |reasoning: Value| {
        let request = json!({"stream": true, "input": "hi", "reasoning": reasoning});
        let summary = stream_of(&run(&request, &stdout, 0));
        assert_eq!(summary.text, "Hi.");
        summary.reasoning
    };
    assert_eq!(shown(json!({"summary": "auto"})), "Greeting.");
    assert_eq!(
        shown(json!({"summary": "concise", "effort": "low"})),
        "Greeting."
    );
    assert_eq!(shown(json!({"generate_summary": "detailed"})), "Greeting.");
    assert_eq!(shown(json!({"effort": "high"})), "", "no summary asked for");
    assert_eq!(shown(Value::Null), "");
    assert_eq!(
        shown(json!({"effort": "none", "summary": "auto"})),
        "",
        "reasoning off"
    );
}

/// A body the parser refuses, the param its 400 names, and the error's code.
type Hostile = (Value, &'static str, &'static str);

#[test]
fn hostile_bodies_get_an_openai_400_naming_the_param() {
    let cases = [
        needing_stored_state(),
        bad_input_messages(),
        bad_input_tool_items(),
        bad_request_fields(),
        bad_tools(),
        bad_tool_choices(),
        bad_output_formats(),
    ]
    .concat();
    for (body, param, code) in cases {
        let error = parse(&body).unwrap_err();
        assert_eq!(
            (error.status(), error.param.as_deref(), error.problem.code()),
            (400, Some(param), code),
            "{body}"
        );
        assert!(
            !agentwire::api::invites_retry(&error.message),
            "{}",
            error.message
        );
        // Through the Bridge: the OpenAI error body, nothing spawned.
        for stream in [true, false] {
            let mut body = body.clone();
            body["stream"] = json!(stream);
            if param == "stream" {
                continue;
            }
            let response = run(&body, b"", 0);
            assert_eq!((response.status, response.retryable), (400, Some(false)));
            let error = error_of(&response);
            assert_eq!(error["error"]["param"], param, "{body}");
            assert_eq!(error["error"]["type"], "invalid_request_error");
            assert_eq!(error["error"]["code"], code);
        }
    }
}

/// Fields that need state kept on the server, which keeps none. (`previous_response_id`
/// is read: a conversation's transport continues the response it names, and a bridge on
/// its own refuses it; see tests/conversations.rs.)
fn needing_stored_state() -> Vec<Hostile> {
    vec![
        (
            json!({"input":"x","conversation":"conv_1"}),
            "conversation",
            "invalid_value",
        ),
        (
            json!({"input":"x","prompt":{"id":"pmpt_1"}}),
            "prompt",
            "invalid_value",
        ),
        (
            json!({"input":"x","background":true}),
            "background",
            "invalid_value",
        ),
        (
            json!({"input":"x","background":"yes"}),
            "background",
            "invalid_type",
        ),
    ]
}

/// `input` itself, its messages, their roles and content parts.
fn bad_input_messages() -> Vec<Hostile> {
    vec![
        (json!({"model":"x"}), "input", "missing_required_parameter"),
        (json!({"input":5}), "input", "invalid_type"),
        (json!({"input":[]}), "input", "invalid_value"),
        (json!({"input":["hi"]}), "input[0]", "invalid_type"),
        (
            json!({"input":[{"type":7}]}),
            "input[0].type",
            "invalid_type",
        ),
        (
            json!({"input":[{"content":"x"}]}),
            "input[0].role",
            "missing_required_parameter",
        ),
        (
            json!({"input":[{"role":"robot","content":"x"}]}),
            "input[0].role",
            "invalid_value",
        ),
        (
            json!({"input":[{"type":"message","content":"x"}]}),
            "input[0].role",
            "missing_required_parameter",
        ),
        (
            json!({"input":[{"role":"user","content":7}]}),
            "input[0].content",
            "invalid_type",
        ),
        (
            json!({"input":[{"role":"user","content":[{"type":"input_video"}]}]}),
            "input[0].content[0].type",
            "invalid_value",
        ),
        (
            json!({"input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}),
            "input[0].content[0].text",
            "invalid_type",
        ),
        (
            json!({"input":[{"role":"user","content":[{"text":"x"}]}]}),
            "input[0].content[0].type",
            "missing_required_parameter",
        ),
    ]
}

/// Tool calls and their outputs among the `input` items.
fn bad_input_tool_items() -> Vec<Hostile> {
    let user = json!({"role":"user","content":"x"});
    vec![
        (
            json!({"input":[user,{"type":"function_call_output","call_id":"c1","output":"x"}]}),
            "input[1].call_id",
            "invalid_value",
        ),
        (
            json!({"input":[{"type":"function_call","name":"a","arguments":"{}"}]}),
            "input[0].call_id",
            "missing_required_parameter",
        ),
        (
            json!({"input":[{"type":"function_call","call_id":"c","arguments":"{}"}]}),
            "input[0].name",
            "missing_required_parameter",
        ),
        (
            json!({"input":[{"type":"function_call","call_id":"c","name":"a","arguments":5}]}),
            "input[0].arguments",
            "invalid_type",
        ),
        (
            json!({"input":[{"type":"custom_tool_call","call_id":"c","name":"a","input":[]}]}),
            "input[0].input",
            "invalid_type",
        ),
        (
            json!({"input":[{"type":"function_call","call_id":"c","name":"a"},{"type":"function_call_output","call_id":"c","output":{"x":1}}]}),
            "input[1].output",
            "invalid_type",
        ),
        (
            json!({"input":[{"type":"additional_tools","tools":{}}]}),
            "input[0].tools",
            "invalid_type",
        ),
    ]
}

/// The request's own fields: `instructions`, `stream`, `parallel_tool_calls`, `model`.
fn bad_request_fields() -> Vec<Hostile> {
    vec![
        (
            json!({"input":"x","instructions":["a"]}),
            "instructions",
            "invalid_type",
        ),
        (
            json!({"input":"x","stream":"yes"}),
            "stream",
            "invalid_type",
        ),
        (
            json!({"input":"x","parallel_tool_calls":1}),
            "parallel_tool_calls",
            "invalid_type",
        ),
        (
            json!({"input":"x","model":"--force"}),
            "model",
            "invalid_value",
        ),
    ]
}

/// `tools`: function, custom (freeform) and namespace tools.
fn bad_tools() -> Vec<Hostile> {
    vec![
        (json!({"input":"x","tools":{}}), "tools", "invalid_type"),
        (json!({"input":"x","tools":[1]}), "tools[0]", "invalid_type"),
        (
            json!({"input":"x","tools":[{"type":5}]}),
            "tools[0].type",
            "invalid_type",
        ),
        (
            json!({"input":"x","tools":[{"type":"function"}]}),
            "tools[0].name",
            "missing_required_parameter",
        ),
        (
            json!({"input":"x","tools":[{"type":"function","name":"a b"}]}),
            "tools[0].name",
            "invalid_value",
        ),
        (
            json!({"input":"x","tools":[{"type":"function","name":"a.b"}]}),
            "tools[0].name",
            "invalid_value",
        ),
        (
            json!({"input":"x","tools":[{"type":"function","name":"a"},{"type":"custom","name":"a"}]}),
            "tools[1].name",
            "invalid_value",
        ),
        (
            json!({"input":"x","tools":[{"type":"function","name":"a","parameters":"{}"}]}),
            "tools[0].parameters",
            "invalid_type",
        ),
        (
            json!({"input":"x","tools":[{"type":"function","name":"a","description":1}]}),
            "tools[0].description",
            "invalid_type",
        ),
        (
            json!({"input":"x","tools":[{"type":"custom","name":"p","format":{"type":"grammar","syntax":"lark"}}]}),
            "tools[0].format.definition",
            "missing_required_parameter",
        ),
        (
            json!({"input":"x","tools":[{"type":"custom","name":"p","format":{"type":"regexp"}}]}),
            "tools[0].format.type",
            "invalid_value",
        ),
        (
            json!({"input":"x","tools":[{"type":"namespace","name":"n"}]}),
            "tools[0].tools",
            "invalid_type",
        ),
        (
            json!({"input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"a"},{"type":"function","name":"a"}]}]}),
            "tools[0].tools[1].name",
            "invalid_value",
        ),
    ]
}

/// `tool_choice`, and the tools it names.
fn bad_tool_choices() -> Vec<Hostile> {
    vec![
        (
            json!({"input":"x","tool_choice":"always","tools":[{"type":"function","name":"a"}]}),
            "tool_choice",
            "invalid_value",
        ),
        (
            json!({"input":"x","tool_choice":"required"}),
            "tool_choice",
            "invalid_value",
        ),
        (
            json!({"input":"x","tool_choice":1}),
            "tool_choice",
            "invalid_type",
        ),
        (
            json!({"input":"x","tool_choice":{"name":"a"}}),
            "tool_choice.type",
            "missing_required_parameter",
        ),
        (
            json!({"input":"x","tool_choice":{"type":"function","name":"b"},"tools":[{"type":"function","name":"a"}]}),
            "tool_choice.name",
            "invalid_value",
        ),
        (
            json!({"input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"z"}]},"tools":[{"type":"function","name":"a"}]}),
            "tool_choice.tools[0].name",
            "invalid_value",
        ),
        (
            json!({"input":"x","tool_choice":{"type":"allowed_tools","mode":"all","tools":[]},"tools":[{"type":"function","name":"a"}]}),
            "tool_choice.mode",
            "invalid_value",
        ),
    ]
}

/// `reasoning` and `text.format`.
fn bad_output_formats() -> Vec<Hostile> {
    vec![
        (
            json!({"input":"x","reasoning":"high"}),
            "reasoning",
            "invalid_type",
        ),
        (
            json!({"input":"x","reasoning":{"effort":3}}),
            "reasoning.effort",
            "invalid_type",
        ),
        (
            json!({"input":"x","reasoning":{"summary":true}}),
            "reasoning.summary",
            "invalid_type",
        ),
        (json!({"input":"x","text":"json"}), "text", "invalid_type"),
        (
            json!({"input":"x","text":{"format":"json"}}),
            "text.format",
            "invalid_type",
        ),
        (
            json!({"input":"x","text":{"format":{"type":"yaml"}}}),
            "text.format.type",
            "invalid_value",
        ),
        (
            json!({"input":"x","text":{"format":{"type":"json_schema","name":"a"}}}),
            "text.format.schema",
            "missing_required_parameter",
        ),
        (
            json!({"input":"x","text":{"format":{"type":"json_schema","name":1,"schema":{}}}}),
            "text.format.name",
            "invalid_type",
        ),
    ]
}

#[test]
fn hostile_bytes_and_limits() {
    let limits = RequestLimits::default();
    for bytes in [
        &b"{"[..],
        b"[]",
        b"",
        b"\xef\xbb\xbf{\"input\":\"x\"}",
        b"{\"input\":\"\xff\"}",
        br#"{"input":"x"} {}"#,
    ] {
        let error = parse_request(bytes, &limits).unwrap_err();
        assert_eq!(error.status(), 400, "{:?}", String::from_utf8_lossy(bytes));
    }
    let deep = format!(
        r#"{{"input":{}"x"{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_eq!(
        parse_request(deep.as_bytes(), &limits)
            .unwrap_err()
            .problem
            .code(),
        "invalid_json"
    );
    // A lone surrogate escape reads as U+FFFD.
    let request = parse_request(br#"{"input":"a\ud800b"}"#, &limits).unwrap();
    assert_eq!(request.conversation.messages[0].text(), "a\u{fffd}b");
    let small = RequestLimits {
        max_body_bytes: 10,
        max_messages: 2,
        max_tools: 2,
        ..RequestLimits::default()
    };
    assert_eq!(
        parse_request(br#"{"input":"hello there"}"#, &small)
            .unwrap_err()
            .status(),
        413
    );
    let roomy = RequestLimits {
        max_body_bytes: 1 << 20,
        ..small
    };
    let three = json!({"input":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]});
    let error = parse_request(three.to_string().as_bytes(), &roomy).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("input"));
    let tools = json!({"input":"x","tools":[{"type":"namespace","name":"n","tools":[
        {"type":"function","name":"a"},{"type":"function","name":"b"},{"type":"function","name":"c"}]}]});
    let error = parse_request(tools.to_string().as_bytes(), &roomy).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("tools"));
    // Attachments refused on request.
    let refusing = RequestLimits {
        reject_attachments: true,
        ..RequestLimits::default()
    };
    let image = json!({"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]}]});
    let error = parse_request(image.to_string().as_bytes(), &refusing).unwrap_err();
    assert_eq!(
        (error.param.as_deref(), error.problem.code()),
        (Some("input[0].content[0]"), "unsupported_content")
    );
}

/// Any JSON value in any place of a Codex-like body: a request or a clean 400, never a
/// panic.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z_.]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("name".to_owned()),
                    Just("role".to_owned()),
                    Just("content".to_owned()),
                    Just("call_id".to_owned()),
                    Just("tools".to_owned()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..4
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_value_anywhere_is_a_request_or_a_clean_400(
        place in 0usize..9,
        value in any_json(),
    ) {
        let mut body = json!({
            "model": "auto", "stream": true, "reasoning": {"summary": "auto"},
            "input": [{"role": "user", "content": "hi"},
                      {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "c", "output": "ok"}],
            "tools": [exec_command(), apply_patch()], "tool_choice": "auto", "text": {"format": {"type": "text"}}
        });
        let pointer = ["/input", "/input/0", "/input/1", "/input/2/output", "/tools", "/tools/1",
                       "/tool_choice", "/reasoning", "/text/format"][place];
        *body.pointer_mut(pointer).unwrap() = value;
        match parse(&body) {
            Ok(request) => { let _ = render(&request); }
            Err(error) => {
                prop_assert!(matches!(error.status(), 400 | 413));
                prop_assert!(!agentwire::api::invites_retry(&error.message));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Golden streams, written by hand from the wire rules (not recorded from the encoder).

#[test]
fn golden_text_with_reasoning_and_no_usage() {
    let request =
        json!({"model":"gpt-test","stream":true,"input":"Say hi.","reasoning":{"summary":"auto"}});
    let stdout =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/no_usage.jsonl"))
            .unwrap();
    let response = run(&request, &stdout, 0);
    let expected = r#"event: response.created
data: {"type":"response.created","response":{"id":"resp_e220a8397b1dcdafa706dd2f","object":"response","created_at":1700000000,"model":"gpt-test","status":"in_progress","error":null,"incomplete_details":null,"output":[],"parallel_tool_calls":true,"tool_choice":"none","tools":[]},"sequence_number":0}

event: response.in_progress
data: {"type":"response.in_progress","response":{"id":"resp_e220a8397b1dcdafa706dd2f","object":"response","created_at":1700000000,"model":"gpt-test","status":"in_progress","error":null,"incomplete_details":null,"output":[],"parallel_tool_calls":true,"tool_choice":"none","tools":[]},"sequence_number":1}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"id":"rs_e220a8397b1dcdafa706dd2f_0","type":"reasoning","summary":[]},"sequence_number":2}

event: response.reasoning_summary_part.added
data: {"type":"response.reasoning_summary_part.added","item_id":"rs_e220a8397b1dcdafa706dd2f_0","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""},"sequence_number":3}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","item_id":"rs_e220a8397b1dcdafa706dd2f_0","output_index":0,"summary_index":0,"delta":"Greeting.","sequence_number":4}

event: response.reasoning_summary_text.done
data: {"type":"response.reasoning_summary_text.done","item_id":"rs_e220a8397b1dcdafa706dd2f_0","output_index":0,"summary_index":0,"text":"Greeting.","sequence_number":5}

event: response.reasoning_summary_part.done
data: {"type":"response.reasoning_summary_part.done","item_id":"rs_e220a8397b1dcdafa706dd2f_0","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":"Greeting."},"sequence_number":6}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":0,"item":{"id":"rs_e220a8397b1dcdafa706dd2f_0","type":"reasoning","summary":[{"type":"summary_text","text":"Greeting."}]},"sequence_number":7}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":1,"item":{"id":"msg_e220a8397b1dcdafa706dd2f_1","type":"message","status":"in_progress","role":"assistant","content":[]},"sequence_number":8}

event: response.content_part.added
data: {"type":"response.content_part.added","item_id":"msg_e220a8397b1dcdafa706dd2f_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]},"sequence_number":9}

event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_e220a8397b1dcdafa706dd2f_1","output_index":1,"content_index":0,"delta":"Hi there!","logprobs":[],"sequence_number":10}

event: response.output_text.done
data: {"type":"response.output_text.done","item_id":"msg_e220a8397b1dcdafa706dd2f_1","output_index":1,"content_index":0,"text":"Hi there!","logprobs":[],"sequence_number":11}

event: response.content_part.done
data: {"type":"response.content_part.done","item_id":"msg_e220a8397b1dcdafa706dd2f_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"Hi there!","annotations":[]},"sequence_number":12}

event: response.output_item.done
data: {"type":"response.output_item.done","output_index":1,"item":{"id":"msg_e220a8397b1dcdafa706dd2f_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there!","annotations":[]}]},"sequence_number":13}

event: response.completed
data: {"type":"response.completed","response":{"id":"resp_e220a8397b1dcdafa706dd2f","object":"response","created_at":1700000000,"model":"gpt-test","status":"completed","error":null,"incomplete_details":null,"output":[{"id":"rs_e220a8397b1dcdafa706dd2f_0","type":"reasoning","summary":[{"type":"summary_text","text":"Greeting."}]},{"id":"msg_e220a8397b1dcdafa706dd2f_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there!","annotations":[]}]}],"parallel_tool_calls":true,"tool_choice":"none","tools":[]},"sequence_number":14}

"#;
    assert_eq!(String::from_utf8(response.body).unwrap(), expected);
    assert_eq!(response.stops, 0, "the agent finished by itself");
}

#[test]
fn golden_text_with_usage_and_its_body() {
    let stdout = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/usage_with_cost.jsonl"),
    )
    .unwrap();
    // 6 fresh + 19705 read + 19965 written input tokens; 258 output.
    let usage = r#"{"input_tokens":39676,"input_tokens_details":{"cached_tokens":19705,"cache_write_tokens":19965},"output_tokens":258,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":39934,"cost":0.0731}"#;
    let message = r#"{"id":"msg_e220a8397b1dcdafa706dd2f_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Cheap.","annotations":[]}]}"#;
    let body = format!(
        r#"{{"id":"resp_e220a8397b1dcdafa706dd2f","object":"response","created_at":1700000000,"model":"auto","status":"completed","error":null,"incomplete_details":null,"output":[{message}],"parallel_tool_calls":true,"tool_choice":"none","tools":[],"usage":{usage}}}"#
    );
    let response = run(&json!({"model":"auto","input":"How much?"}), &stdout, 0);
    assert_eq!(
        (response.status, response.content_type),
        (200, "application/json")
    );
    assert_eq!(String::from_utf8(response.body).unwrap(), body);
    // The stream ends with the same response object.
    let response = run(
        &json!({"model":"auto","stream":true,"input":"How much?"}),
        &stdout,
        0,
    );
    let text = String::from_utf8(response.body).unwrap();
    let deltas: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("data: {\"type\":\"response.output_text.delta\""))
        .collect();
    assert_eq!(
        deltas,
        [
            r#"data: {"type":"response.output_text.delta","item_id":"msg_e220a8397b1dcdafa706dd2f_0","output_index":0,"content_index":0,"delta":"Cheap","logprobs":[],"sequence_number":4}"#,
            r#"data: {"type":"response.output_text.delta","item_id":"msg_e220a8397b1dcdafa706dd2f_0","output_index":0,"content_index":0,"delta":".","logprobs":[],"sequence_number":5}"#
        ]
    );
    assert!(text.ends_with(&format!(
        "event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{body},\"sequence_number\":9}}\n\n"
    )));
}

#[test]
fn golden_client_tool_call() {
    // Codex's shell tool; the agent (read-only) starts `cat notes.txt`.
    let request = json!({"model":"auto","stream":true,"input":"What does notes.txt say?","tools":[exec_command()]});
    let agent_id = "toolu_1\nfc_1";
    let stdout = lines(&[shell_start(agent_id, "cat notes.txt"), result(None)]);
    let response = run(&request, &stdout, 0);
    let call = call_id(agent_id);
    let digits = call.strip_prefix("call_").unwrap();
    let added = format!(
        r#"{{"id":"fc_{digits}","type":"function_call","status":"in_progress","call_id":"{call}","name":"exec_command","arguments":""}}"#
    );
    let done = format!(
        r#"{{"id":"fc_{digits}","type":"function_call","status":"completed","call_id":"{call}","name":"exec_command","arguments":"{{\"cmd\":\"cat notes.txt\"}}"}}"#
    );
    let head = r#"{"id":"resp_e220a8397b1dcdafa706dd2f","object":"response","created_at":1700000000,"model":"auto","#;
    let tail = r#""parallel_tool_calls":true,"tool_choice":"auto","tools":[]"#;
    let expected = format!(
        r#"event: response.created
data: {{"type":"response.created","response":{head}"status":"in_progress","error":null,"incomplete_details":null,"output":[],{tail}}},"sequence_number":0}}

event: response.in_progress
data: {{"type":"response.in_progress","response":{head}"status":"in_progress","error":null,"incomplete_details":null,"output":[],{tail}}},"sequence_number":1}}

event: response.output_item.added
data: {{"type":"response.output_item.added","output_index":0,"item":{added},"sequence_number":2}}

event: response.function_call_arguments.delta
data: {{"type":"response.function_call_arguments.delta","item_id":"fc_{digits}","output_index":0,"delta":"{{\"cmd\":\"cat notes.txt\"}}","sequence_number":3}}

event: response.function_call_arguments.done
data: {{"type":"response.function_call_arguments.done","item_id":"fc_{digits}","output_index":0,"name":"exec_command","arguments":"{{\"cmd\":\"cat notes.txt\"}}","sequence_number":4}}

event: response.output_item.done
data: {{"type":"response.output_item.done","output_index":0,"item":{done},"sequence_number":5}}

event: response.completed
data: {{"type":"response.completed","response":{head}"status":"completed","error":null,"incomplete_details":null,"output":[{done}],{tail}}},"sequence_number":6}}

"#
    );
    assert_eq!(String::from_utf8(response.body).unwrap(), expected);
    assert_eq!(
        response.stops, 1,
        "the client runs the call: the agent is stopped"
    );
}

#[test]
fn golden_failure_after_the_head() {
    let stdout = lines(&[text("Hel")]);
    let response = run(&json!({"stream":true,"input":"hi"}), &stdout, 1);
    let text = String::from_utf8(response.body.clone()).unwrap();
    let message = "cursor-agent ended (exit code 1) without an answer";
    let tail = format!(
        r#"event: response.output_text.delta
data: {{"type":"response.output_text.delta","item_id":"msg_e220a8397b1dcdafa706dd2f_0","output_index":0,"content_index":0,"delta":"Hel","logprobs":[],"sequence_number":4}}

event: error
data: {{"type":"error","code":"agent_crashed","message":"{message}","param":null,"error":{{"message":"{message}","type":"server_error","param":null,"code":"agent_crashed"}},"sequence_number":5}}

event: response.failed
data: {{"type":"response.failed","response":{{"id":"resp_e220a8397b1dcdafa706dd2f","object":"response","created_at":1700000000,"model":"auto","status":"failed","error":{{"code":"agent_crashed","message":"{message}"}},"incomplete_details":null,"output":[],"parallel_tool_calls":true,"tool_choice":"none","tools":[]}},"sequence_number":6}}

"#
    );
    assert!(text.ends_with(&tail), "{text}");
    // The partial message never gets its done events: it must not enter Codex's history.
    let summary = stream_of(&response);
    assert_eq!(summary.terminal, "response.failed");
    assert!(summary.done_items.is_empty());
    assert!(!text.contains("output_text.done"));
}

// ---------------------------------------------------------------------------------------
// Client tools.

#[test]
fn a_freeform_envelope_becomes_a_custom_tool_call() {
    let patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";
    let envelope = format!(
        "I'll add it.\n<tool_call>\n{}\n</tool_call>",
        json!({"name":"apply_patch","input":patch})
    );
    let stdout = lines(&[text(&envelope), result(None)]);
    for stream in [true, false] {
        let request =
            json!({"stream":stream,"input":"Add hello.txt","tools":[exec_command(),apply_patch()]});
        let response = run(&request, &stdout, 0);
        let output = if stream {
            let summary = stream_of(&response);
            let kinds: Vec<&str> = summary
                .events
                .iter()
                .map(|e| e["type"].as_str().unwrap())
                .collect();
            assert!(kinds.contains(&"response.custom_tool_call_input.delta"));
            assert!(kinds.contains(&"response.custom_tool_call_input.done"));
            summary.response["output"].clone()
        } else {
            let body: Value = serde_json::from_slice(&response.body).unwrap();
            check_responses_body(&body);
            body["output"].clone()
        };
        let id = envelope_call_id(0, 0, patch);
        let expected_item = json!({"id": format!("ctc_{}", id.strip_prefix("call_").unwrap()),
            "type":"custom_tool_call","status":"completed","call_id":id,"name":"apply_patch","input":patch});
        assert_eq!(output[1], expected_item);
        assert_eq!(output[0]["content"][0]["text"], "I'll add it.\n");
    }
}

#[test]
fn a_cursor_edit_never_becomes_a_patch_call() {
    let edit = json!({"type":"tool_call","subtype":"started","call_id":"tool_e1",
        "tool_call":{"editToolCall":{"args":{"path":"/w/notes.txt","streamContent":"new"}}},"model_call_id":"m-1"});
    let stdout = lines(&[edit, text("Edited."), result(None)]);
    for strategy in [ToolStrategy::ReadOnly, ToolStrategy::Native] {
        let config = Config {
            tool_strategy: strategy,
            ..Config::default()
        };
        let request = json!({"stream":true,"input":"Edit it","tools":[apply_patch()],"reasoning":{"summary":"auto"}});
        let params = BridgeParams {
            now_ms: 0,
            created_unix: 0,
            id_seed: 0,
        };
        let bridge = Bridge::new(
            Dialect::Responses,
            request.to_string().as_bytes(),
            &config,
            params,
        );
        let response = support::drive::respond_to(bridge, &[&stdout], ExitStatus::Code(0));
        let summary = stream_of(&response);
        assert!(
            summary
                .done_items
                .iter()
                .all(|item| item["type"] != "custom_tool_call"),
            "{strategy:?}"
        );
        assert_eq!(summary.text, "Edited.");
        assert!(
            summary.reasoning.contains("[edit] /w/notes.txt"),
            "{}",
            summary.reasoning
        );
    }
}

#[test]
fn a_namespace_tool_call_carries_its_namespace() {
    let tools = json!([{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.",
        "tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object",
            "properties":{"task":{"type":"string"}},"required":["task"]}}]}]);
    let envelope = "<tool_call>\n{\"name\": \"multi_agent_v1.spawn_agent\", \"arguments\": {\"task\": \"lint\"}}\n</tool_call>";
    let stdout = lines(&[text(envelope), result(None)]);
    let response = run(
        &json!({"stream":true,"input":"Delegate","tools":tools}),
        &stdout,
        0,
    );
    let summary = stream_of(&response);
    let call = &summary.done_items[0];
    assert_eq!(
        (
            &call["type"],
            &call["name"],
            &call["namespace"],
            &call["arguments"]
        ),
        (
            &json!("function_call"),
            &json!("spawn_agent"),
            &json!("multi_agent_v1"),
            &json!("{\"task\":\"lint\"}")
        )
    );
    let done = summary
        .events
        .iter()
        .find(|e| e["type"] == "response.function_call_arguments.done")
        .unwrap();
    assert_eq!(
        (&done["name"], &done["namespace"]),
        (&json!("spawn_agent"), &json!("multi_agent_v1"))
    );
    // The next request carries the call back with its namespace: the same tool.
    let round = json!({"input":[{"role":"user","content":"Delegate"},
        {"type":"function_call","call_id":call["call_id"],"name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{\"task\":\"lint\"}"},
        {"type":"function_call_output","call_id":call["call_id"],"output":"agent 7"}],"tools":tools});
    let request = parse(&round).unwrap();
    assert_eq!(
        request.conversation.messages[1].tool_calls[0].name,
        request.conversation.tools[0].name
    );
}

#[test]
fn codex_tool_round_through_the_bridge() {
    let Some(bodies) = codex_bodies("responses::codex_tool_round_through_the_bridge") else {
        return;
    };
    // Turn 1: the agent's shell call becomes Codex's exec_command call.
    let stdout = lines(&[
        thinking("Reading the file."),
        shell_start("toolu_9\nfc_9", "cat notes.txt"),
        result(None),
    ]);
    let response = run(&bodies[0], &stdout, 0);
    let summary = stream_of(&response);
    let kinds: Vec<&str> = summary
        .done_items
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["reasoning", "function_call"]);
    let call = &summary.done_items[1];
    assert_eq!(
        (&call["name"], &call["arguments"]),
        (
            &json!("exec_command"),
            &json!("{\"cmd\":\"cat notes.txt\"}")
        )
    );
    assert_eq!(response.stops, 1);
    // Turn 2 (Codex's real second request): the answer.
    let stdout = lines(&[
        text("notes.txt says: The kettle in the lab is blue."),
        result(Some(
            json!({"inputTokens":130,"outputTokens":42,"cacheReadTokens":3000,"cacheWriteTokens":0}),
        )),
    ]);
    let summary = stream_of(&run(&bodies[1], &stdout, 0));
    assert_eq!(
        summary.text,
        "notes.txt says: The kettle in the lab is blue."
    );
    let usage = &summary.response["usage"];
    assert_eq!(
        (
            &usage["input_tokens"],
            &usage["input_tokens_details"]["cached_tokens"],
            &usage["total_tokens"]
        ),
        (&json!(3130), &json!(3000), &json!(3172))
    );
}

// ---------------------------------------------------------------------------------------
// Usage, endings, keep-alive.

#[test]
fn usage_is_complete_or_absent() {
    let request = json!({"stream":true,"input":"hi"});
    let none = stream_of(&run(&request, &lines(&[text("a"), result(None)]), 0));
    assert!(none.response.get("usage").is_none());
    let some = stream_of(&run(
        &request,
        &lines(&[
            text("a"),
            result(Some(
                json!({"inputTokens":11,"outputTokens":7,"cacheReadTokens":3,"cacheWriteTokens":0}),
            )),
        ]),
        0,
    ));
    assert_eq!(
        some.response["usage"],
        json!({"input_tokens":14,"input_tokens_details":{"cached_tokens":3,"cache_write_tokens":0},
               "output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":21})
    );
}

fn meta() -> ResponseMeta {
    ResponseMeta {
        id: "resp_1".into(),
        created_at: 7,
        model: "m".into(),
        tool_choice: ToolChoice::Auto,
        parallel_tool_calls: true,
        freeform_tools: vec!["apply_patch".into()],
    }
}

fn encode(events: &[Event<'_>], options: &OutputOptions) -> (Vec<u8>, Vec<u8>) {
    let mut encoder = EventEncoder::new(&meta(), options);
    let mut builder = ResponseBuilder::new(&meta(), options);
    let mut out = Vec::new();
    for event in events {
        encoder.encode(event, &mut out);
        builder.push(event);
    }
    let mut body = Vec::new();
    if builder.failure().is_none() {
        builder.write_body(&mut body);
    }
    (out, body)
}

#[test]
fn length_and_content_filter_are_incomplete() {
    let options = OutputOptions {
        reasoning_summary: true,
        activity_notes: true,
    };
    for (reason, expected) in [
        (FinishReason::Length, "max_output_tokens"),
        (FinishReason::ContentFilter, "content_filter"),
    ] {
        let (stream, body) = encode(&[Event::TextDelta("cut"), Event::Finish(reason)], &options);
        let summary = check_responses_stream(&stream);
        assert_eq!(summary.terminal, "response.incomplete");
        assert_eq!(summary.response["incomplete_details"]["reason"], expected);
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body, summary.response);
        assert_eq!(body["status"], "incomplete");
    }
    // An empty answer still begins and ends.
    let (stream, _) = encode(&[Event::Finish(FinishReason::Stop)], &options);
    let kinds: Vec<String> = check_responses_stream(&stream)
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.completed"
        ]
    );
}

#[test]
fn failure_before_the_head_is_a_status_and_an_openai_body() {
    let stderr_free = lines(&[
        json!({"type":"result","subtype":"error","is_error":true,"result":"Authentication required. Please run 'cursor-agent login' first."}),
    ]);
    let response = run(&json!({"stream":true,"input":"hi"}), &stderr_free, 1);
    assert_eq!(response.status, 401);
    let error = error_of(&response);
    assert_eq!(error["error"]["type"], "authentication_error");
}

#[test]
fn keep_alives_are_comments_and_the_stream_still_begins_with_created() {
    let config = Config {
        head_deadline_ms: 1_000,
        keep_alive_ms: 500,
        ..Config::default()
    };
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 0,
        id_seed: 0,
    };
    let request = json!({"stream":true,"input":"hi"}).to_string();
    let mut bridge = Bridge::new(Dialect::Responses, request.as_bytes(), &config, params);
    let mut seen = Vec::new();
    let now = support::drive::advance(&mut bridge, &mut seen, 0, 2_600);
    bridge
        .push_stdout(&lines(&[text("hi"), result(None)]), now)
        .unwrap();
    support::drive::drain_into(&mut bridge, &mut seen);
    let body = support::drive::Response::of(&seen).body;
    let summary = check_responses_stream(&body);
    assert!(summary.comments >= 3, "{}", String::from_utf8_lossy(&body));
    assert!(body.starts_with(b": keep-alive\n\n"));
    assert_eq!(summary.events[0]["type"], "response.created");
    assert_eq!(summary.text, "hi");
}

#[test]
fn every_transcript_gives_the_same_answer_streamed_and_whole() {
    let request =
        |stream: bool| json!({"stream":stream,"input":"hi","reasoning":{"summary":"auto"}});
    for path in support::drive::every_transcript() {
        let bytes = std::fs::read(&path).unwrap();
        let stream = drive(
            Dialect::Responses,
            request(true).to_string().as_bytes(),
            &[&bytes],
        );
        let body = drive(
            Dialect::Responses,
            request(false).to_string().as_bytes(),
            &[&bytes],
        );
        if stream.status != 200 {
            assert_eq!(
                (body.status, &body.body),
                (stream.status, &stream.body),
                "{}",
                path.display()
            );
            continue;
        }
        let summary = check_responses_stream(&stream.body);
        if summary.terminal == "response.failed" {
            assert!(body.status >= 400, "{}", path.display());
            continue;
        }
        let body: Value = serde_json::from_slice(&body.body).unwrap();
        assert_eq!(body, summary.response, "{}", path.display());
    }
}

// ---------------------------------------------------------------------------------------
// The item state machine under random event sequences.

#[derive(Debug, Clone)]
enum Step {
    Text(String),
    Reasoning(String),
    Activity(bool),
    Progress,
    Usage(u64, u64, u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => "[a-z \\n\"\\\\é😀<>]{0,12}".prop_map(Step::Text),
        3 => "[a-z \\n]{0,12}".prop_map(Step::Reasoning),
        1 => any::<bool>().prop_map(Step::Activity),
        1 => Just(Step::Progress),
        1 => (0u64..1000, 0u64..1000, 0u64..1000).prop_map(|(a, b, c)| Step::Usage(a, b, c)),
    ]
}

#[derive(Debug, Clone)]
enum End {
    Finish(u8),
    Calls(Vec<(bool, String)>),
    Failed,
    Unfinished,
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        (0u8..4).prop_map(End::Finish),
        proptest::collection::vec((any::<bool>(), "[a-z{}\":\\n]{0,16}"), 1..4)
            .prop_map(End::Calls),
        Just(End::Failed),
        Just(End::Unfinished),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_event_sequences_keep_the_item_state_machine(
        steps in proptest::collection::vec(step(), 0..24),
        end in end(),
        reasoning_summary in any::<bool>(),
        activity_notes in any::<bool>(),
    ) {
        let options = OutputOptions { reasoning_summary, activity_notes };
        let calls: Vec<(String, &str, String)> = match &end {
            End::Calls(calls) => calls.iter().enumerate().map(|(i, (freeform, input))| {
                let name = if *freeform { "apply_patch" } else if i % 2 == 0 { "exec_command" } else { "ns.tool" };
                (format!("call_{i:024x}"), name, input.clone())
            }).collect(),
            _ => Vec::new(),
        };
        let mut events: Vec<Event<'_>> = Vec::new();
        let mut usage = None;
        for step in &steps {
            events.push(match step {
                Step::Text(text) => Event::TextDelta(text),
                Step::Reasoning(text) => Event::ReasoningDelta(text),
                Step::Activity(started) => Event::AgentActivity(AgentActivity {
                    call_id: "c\n1", tool: "shell",
                    phase: if *started { ActivityPhase::Started } else {
                        ActivityPhase::Completed { outcome: agentwire::event::ToolOutcome::Rejected, started_seen: true }
                    },
                    summary: "ls", arguments: None, model_call_id: None,
                }),
                Step::Progress => Event::Progress(Progress::Reconnecting { attempt: 1 }),
                Step::Usage(input, output, cached) => {
                    let value = Usage { input_tokens: *input, output_tokens: *output, cache_read_tokens: *cached, ..Usage::default() };
                    usage = Some(value);
                    Event::Usage(value)
                }
            });
        }
        for (index, (id, name, input)) in calls.iter().enumerate() {
            events.push(Event::ToolCall(ToolCall { index: index as u32, id, name, arguments: input }));
        }
        let failure = Failure::new(FailureKind::AgentCrashed, "boom");
        match &end {
            End::Finish(reason) => events.push(Event::Finish([FinishReason::Stop, FinishReason::Length, FinishReason::ContentFilter, FinishReason::ToolCalls][*reason as usize])),
            End::Calls(_) => events.push(Event::Finish(FinishReason::ToolCalls)),
            End::Failed => events.push(Event::Failed(failure.clone())),
            End::Unfinished => {}
        }
        events.push(Event::TextDelta("after the end"));
        let (stream, body) = encode(&events, &options);
        if matches!(end, End::Unfinished) {
            // No terminal event yet: the checker needs one, so finish it here.
            prop_assert!(!stream.windows(18).any(|w| w == b"response.completed"));
            return Ok(());
        }
        let summary = check_responses_stream(&stream);
        let texts: String = steps.iter().filter_map(|s| if let Step::Text(t) = s { Some(t.as_str()) } else { None }).collect();
        prop_assert_eq!(&summary.text, &texts);
        let reasoning: String = steps.iter().filter_map(|s| if let Step::Reasoning(t) = s { Some(t.as_str()) } else { None }).collect();
        if !reasoning_summary {
            prop_assert_eq!(summary.reasoning.as_str(), "");
        } else if !activity_notes {
            prop_assert_eq!(&summary.reasoning, &reasoning);
        }
        let sent: Vec<(String, String, String)> = summary.done_items.iter()
            .filter(|item| item["type"] != "message" && item["type"] != "reasoning")
            .map(|item| {
                let name = match item.get("namespace") {
                    Some(namespace) => format!("{}.{}", namespace.as_str().unwrap(), item["name"].as_str().unwrap()),
                    None => item["name"].as_str().unwrap().to_owned(),
                };
                let input = item.get("arguments").or_else(|| item.get("input")).unwrap().as_str().unwrap().to_owned();
                prop_assert_eq!(item["type"] == "custom_tool_call", name == "apply_patch");
                Ok((item["call_id"].as_str().unwrap().to_owned(), name, input))
            })
            .collect::<Result<_, _>>()?;
        let expected: Vec<(String, String, String)> = calls.iter().map(|(id, name, input)| (id.clone(), (*name).to_owned(), input.clone())).collect();
        prop_assert_eq!(sent, expected);
        match &end {
            End::Failed => {
                prop_assert_eq!(summary.terminal.as_str(), "response.failed");
                prop_assert_eq!(&summary.response["error"], &json!({"code":"agent_crashed","message":"boom"}));
                prop_assert!(body.is_empty());
            }
            _ => {
                let body: Value = serde_json::from_slice(&body).unwrap();
                prop_assert_eq!(&body, &summary.response, "the body is the terminal response");
            }
        }
        match usage {
            Some(usage) => {
                prop_assert_eq!(&summary.response["usage"]["input_tokens"], &json!(usage.prompt_tokens()));
                prop_assert_eq!(&summary.response["usage"]["total_tokens"], &json!(usage.total_tokens()));
            }
            None => prop_assert!(summary.response.get("usage").is_none()),
        }
    }
}

#[test]
fn the_conversation_a_request_continues_is_read() {
    let request =
        parse(&json!({"input":"x","previous_response_id":"resp_1","prompt_cache_key":"thread-9"}))
            .unwrap();
    assert_eq!(
        request.continuation.previous_response_id.as_deref(),
        Some("resp_1")
    );
    assert_eq!(
        request.continuation.conversation_key.as_deref(),
        Some("thread-9")
    );
    let error = parse(&json!({"input":"x","previous_response_id":7})).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("previous_response_id"));
    let long = "r".repeat(1025);
    let error = parse(&json!({"input":"x","previous_response_id":long})).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("previous_response_id"));
}
