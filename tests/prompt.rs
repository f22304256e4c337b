//! The prompts the agent is given for real request bodies: the project's Chat Completions
//! bodies against their golden prompts in `tests/fixtures/prompts`, and the real OpenCode
//! bodies read back block by block.

use std::path::Path;

use agentwire::api::{Request, RequestLimits};
use agentwire::conversation::Role;
use agentwire::cursor::prompt::{read_blocks, render_prompt};
use agentwire::openai::chat::parse_request;
use agentwire::tools::{ToolPlan, ToolStrategy};

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

/// The real OpenCode request bodies in `../shared/fixtures/opencode`, or `None` (with a
/// line saying the test was skipped) when the shared fixtures are absent.
fn opencode_bodies() -> Option<Vec<Vec<u8>>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/opencode/opencode-1.18.33-requests-toolround.jsonl");
    let Ok(text) = std::fs::read_to_string(path) else {
        println!("skipped: ../shared fixtures absent");
        return None;
    };
    let bodies = text.lines().map(|line| {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        serde_json::to_vec(&record["body"]).unwrap()
    });
    Some(bodies.collect())
}

#[test]
fn real_opencode_bodies() {
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
