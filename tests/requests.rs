//! Real request bodies: parsed into the neutral request, and the prompts the agent is
//! given for them — the project's Chat Completions bodies against their golden prompts in
//! `tests/fixtures/prompts`, the real OpenCode bodies read back block by block.

mod support;

use std::path::Path;

use agentwire::api::{Request, RequestLimits};
use agentwire::conversation::{Role, ToolChoice};
use agentwire::cursor::prompt::{read_blocks, render_prompt};
use agentwire::openai::chat::parse_request;
use agentwire::tools::{ToolPlan, ToolStrategy};
use support::opencode_bodies;

fn render(request: &Request) -> String {
    render_prompt(
        &request.conversation,
        &ToolPlan::new(&request.conversation.tools, ToolStrategy::ReadOnly),
    )
}

/// How a body reads back: a final newline is added when missing.
fn fenced(content: &str) -> String {
    if content.ends_with('\n') {
        content.to_owned()
    } else {
        format!("{content}\n")
    }
}

#[test]
fn project_bodies_match_their_golden_prompts() {
    // Set AGENTWIRE_BLESS=1 to rewrite the golden files after an intended change.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for name in ["agent_stream", "client_tools", "client_tools_nostream"] {
        let body = std::fs::read(root.join(format!("requests/{name}.json"))).unwrap();
        let request = parse_request(&body, &RequestLimits::default()).unwrap();
        let prompt = render(&request);
        assert_eq!(prompt, render(&request.clone()), "deterministic");
        let last_user = request
            .conversation
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .unwrap();
        assert!(prompt.contains(last_user.text().as_ref()));
        let golden = root.join(format!("prompts/{name}.txt"));
        if std::env::var_os("AGENTWIRE_BLESS").is_some() {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &prompt).unwrap();
        }
        let expected = std::fs::read_to_string(&golden).unwrap();
        assert_eq!(prompt, expected, "{name}: rendered prompt changed");
    }
}

#[test]
fn real_opencode_bodies_parse() {
    let Some(bodies) = opencode_bodies() else {
        return;
    };
    let mut requests = Vec::new();
    for body in bodies {
        let request = parse_request(&body, &RequestLimits::default()).unwrap();
        assert!(request.stream && request.include_usage);
        assert_eq!(request.conversation.tools.len(), 10);
        assert_eq!(request.conversation.tool_choice, ToolChoice::Auto);
        assert!(request.ignored.contains(&"max_tokens"));
        requests.push(request);
    }
    // The tool round: an assistant turn with `content: ""` and calls, then one result
    // per call, in order.
    let round = requests.last().unwrap();
    let roles: Vec<Role> = round.conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool
        ]
    );
    let calls: Vec<&str> = round.conversation.messages[2]
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let answered: Vec<&str> = round.conversation.messages[3..]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(calls, answered);
}

#[test]
fn real_opencode_prompts() {
    let Some(bodies) = opencode_bodies() else {
        return;
    };
    let mut prompts = Vec::new();
    for body in bodies {
        let request = parse_request(&body, &RequestLimits::default()).unwrap();
        let prompt = render(&request);
        assert_eq!(prompt, render(&request), "deterministic");
        let blocks: Vec<(&str, &str)> = read_blocks(&prompt).map(|b| (b.label, b.body)).collect();
        // Every message's text comes back exactly from its block.
        let system = &request.conversation.messages[0];
        assert_eq!(blocks[0], ("instructions", fenced(&system.text()).as_str()));
        for (message, (label, body)) in request.conversation.messages[1..].iter().zip(&blocks[1..])
        {
            match message.role {
                Role::User => {
                    assert_eq!((*label, *body), ("user", fenced(&message.text()).as_str()))
                }
                Role::Tool => {
                    let id = message.tool_call_id.as_deref().unwrap();
                    assert!(
                        label.starts_with(&format!("tool result for {id} (")),
                        "{label}"
                    );
                    assert_eq!(*body, fenced(&message.text()));
                }
                Role::Assistant => assert!(body.contains("Tool calls:\n- ")),
                Role::System | Role::Developer => unreachable!("one system message"),
            }
        }
        let (label, tools) = blocks.last().unwrap();
        assert_eq!(*label, "tools");
        for tool in &request.conversation.tools {
            assert!(
                tools.contains(&format!("\n- {}", tool.name)),
                "{}",
                tool.name
            );
        }
        assert!(tools.contains("<tool_call>"));
        prompts.push(prompt);
    }
    assert!(!prompts[0].contains("Continue the task"));
    assert!(
        prompts[1].ends_with(
            "The tool results above answer your earlier tool calls. Continue the task.\n"
        )
    );
}

/// The tools of the first request in a real client capture of `../shared/fixtures/clients`
/// (`input_schema` or `parameters`; tools of other types left out), or `None` when absent.
fn client_tools(file: &str) -> Option<Vec<agentwire::conversation::ToolSpec>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/clients")
        .join(file);
    let Ok(text) = std::fs::read_to_string(path) else {
        println!("skipped: ../shared fixtures absent");
        return None;
    };
    let body = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["body"].is_object())?["body"]
        .clone();
    let tools = body["tools"].as_array()?.iter().filter_map(|tool| {
        let schema = tool
            .get("input_schema")
            .or_else(|| tool.get("parameters"))?;
        Some(agentwire::conversation::ToolSpec::function(
            tool["name"].as_str()?,
            tool["description"].as_str().unwrap_or_default(),
            schema.clone(),
        ))
    });
    Some(tools.collect())
}

#[test]
fn real_claude_code_and_codex_tools_reach_the_agents_own() {
    let (Some(claude), Some(codex)) = (
        client_tools("claude-code-2.1.330-requests.jsonl"),
        client_tools("codex-0.169.0-requests.jsonl"),
    ) else {
        return;
    };
    let natives = |tools: &[agentwire::conversation::ToolSpec]| -> Vec<String> {
        ToolPlan::new(tools, ToolStrategy::ReadOnly)
            .catalogue()
            .filter(|entry| matches!(entry.delivery, agentwire::tools::Delivery::Native { .. }))
            .map(|entry| entry.name.to_owned())
            .collect()
    };
    assert_eq!(natives(&claude), ["Bash", "Read"]);
    let plan = ToolPlan::new(&claude, ToolStrategy::ReadOnly);
    let read = plan
        .map_native("read", Some(r#"{"path":"/w/notes.txt","limit":20}"#))
        .unwrap();
    assert_eq!(
        (read.name.as_str(), read.arguments.as_str()),
        ("Read", r#"{"file_path":"/w/notes.txt","limit":20}"#)
    );
    let bash = plan
        .map_native("shell", Some(r#"{"command":"ls"}"#))
        .unwrap();
    assert_eq!(
        (bash.name.as_str(), bash.arguments.as_str()),
        ("Bash", r#"{"command":"ls"}"#)
    );
    // Codex's shell tool takes `cmd` (and `workdir`).
    assert_eq!(natives(&codex), ["exec_command"]);
    let plan = ToolPlan::new(&codex, ToolStrategy::ReadOnly);
    let shell = plan
        .map_native(
            "shell",
            Some(r#"{"command":"cat notes.txt","workingDirectory":"/w"}"#),
        )
        .unwrap();
    assert_eq!(
        (shell.name.as_str(), shell.arguments.as_str()),
        ("exec_command", r#"{"cmd":"cat notes.txt","workdir":"/w"}"#)
    );
}
