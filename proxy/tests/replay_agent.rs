//! `replay_agent`, the stand-in for cursor-agent the proxy tests run, on its own: the
//! turn of a scenario the prompt is at, the models listing, its flags.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::{Scratch, example};

#[test]
fn replay_agent_plays_the_turn_the_prompt_is_at() {
    use agentwire::api::RequestLimits;
    use agentwire::cursor::prompt::render_prompt;
    use agentwire::openai::chat::parse_request;
    use agentwire::tools::{ToolPlan, ToolStrategy};

    let scratch = Scratch::new("scenario");
    let dir = scratch.path("scenario");
    std::fs::create_dir_all(&dir).unwrap();
    for turn in 1..=3 {
        std::fs::write(
            dir.join(format!("turn-{turn}.jsonl")),
            format!("{{\"turn\":{turn}}}\n"),
        )
        .unwrap();
    }
    let call = |id: &str| serde_json::json!({"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}});
    let result = |id: &str| serde_json::json!({"role": "tool", "tool_call_id": id, "content": "<<< not a block >>>"});
    let conversations = [
        serde_json::json!([{"role": "user", "content": "tool result for x"}]),
        serde_json::json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]}, result("a")]),
        serde_json::json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]}, result("a"), result("b")]),
    ];
    for (i, messages) in conversations.iter().enumerate() {
        let body = serde_json::json!({"model": "auto", "messages": messages});
        let request =
            parse_request(body.to_string().as_bytes(), &RequestLimits::default()).unwrap();
        let prompt = render_prompt(
            &request.conversation,
            &ToolPlan::new(&[], ToolStrategy::ReadOnly),
        );
        let mut child = Command::new(example("replay_agent"))
            .args(["--print", "--model", "auto", "--scenario"])
            .arg(&dir)
            .args(["--delay-ms", "0"])
            .env("AGENTWIRE_REPLAY_LOG", scratch.log())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            format!("{{\"turn\":{}}}\n", i + 1)
        );
        assert_eq!(scratch.runs()[i].prompt, prompt);
    }
    // A turn the scenario does not have: a clear failure.
    let mut child = Command::new(example("replay_agent"))
        .arg("--scenario")
        .arg(scratch.path("empty"))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("turn-1.jsonl"));
    for args in [&["models"][..], &["--print", "--list-models"]] {
        let listing = Command::new(example("replay_agent"))
            .args(args)
            .output()
            .unwrap();
        let models = agentwire::cursor::parse_models(&listing.stdout);
        assert_eq!(models.len(), 4, "{args:?}");
        assert!(models[0].is_default && models[1].is_current);
    }
    // The transcript from the environment, with cursor-agent's flags ignored.
    let mut child = Command::new(example("replay_agent"))
        .args([
            "--print",
            "--output-format",
            "stream-json",
            "--model",
            "gpt-5",
            "--delay-ms",
            "0",
        ])
        .env("AGENTWIRE_REPLAY_TRANSCRIPT", dir.join("turn-2.jsonl"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "{\"turn\":2}\n");
    let version = Command::new(example("replay_agent"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("agentwire-replay-agent "));
}
