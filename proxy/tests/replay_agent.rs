//! `replay_agent`, the stand-in for cursor-agent the proxy tests run, on its own: the
//! turn of a scenario the prompt is at, the models listing, its flags, resumed chats and
//! tool loops.

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

/// How a run of [`play`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    /// By itself: its exit code.
    Exits,
    /// It waits for a tool's result: stopped once its lines are read.
    Waits,
}

/// Runs replay_agent with `args` and `prompt` on stdin; its stdout lines (up to `lines`),
/// its exit code (`None` when it was stopped) and its stderr.
fn play(
    scratch: &Scratch,
    args: &[&str],
    prompt: &str,
    lines: usize,
    ends: Ends,
) -> (Vec<serde_json::Value>, Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(example("replay_agent"))
        .args(args)
        .args(["--delay-ms", "0"])
        .env("AGENTWIRE_REPLAY_LOG", scratch.log())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut read = Vec::new();
    while read.len() < lines {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        read.push(serde_json::from_str(&line).unwrap());
    }
    let exited = ends == Ends::Exits
        && support::wait_until(std::time::Duration::from_secs(10), || {
            child.try_wait().unwrap().is_some()
        });
    if !exited {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (read, status.code().filter(|_| exited), stderr)
}

#[test]
fn replay_agent_plays_resumed_chats_and_tool_loops() {
    let scratch = Scratch::new("chats");
    let chats = scratch.path("chats");
    std::fs::create_dir_all(&chats).unwrap();
    let dir = chats.to_str().unwrap();
    let tool_loop = ["--chat-dir", dir, "--tool-rounds", "2"];
    // A fresh run: a new chat, round 0 (its prompt holds no tool result).
    let (lines, code, _) = play(&scratch, &tool_loop, "go", 3, Ends::Waits);
    assert_eq!(code, None);
    let chat = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(agentwire::cursor::is_chat_id(&chat), "{chat}");
    assert!(lines.iter().all(|l| l["session_id"] == chat.as_str()));
    assert_eq!(
        lines[2]["tool_call"]["shellToolCall"]["args"]["command"],
        "echo round-0"
    );
    // Resumed: the chat's next round, then its answer, under the same id.
    let resume: Vec<&str> = tool_loop
        .iter()
        .copied()
        .chain(["--resume", &chat])
        .collect();
    let (lines, _, _) = play(&scratch, &resume, "results", 3, Ends::Waits);
    assert_eq!(
        lines[2]["tool_call"]["shellToolCall"]["args"]["command"],
        "echo round-1"
    );
    let (lines, code, _) = play(&scratch, &resume, "results", 3, Ends::Exits);
    assert_eq!(code, Some(0));
    assert_eq!(lines[2]["type"], "result");
    assert_eq!(lines[2]["result"], "Done after 2 tool rounds.");
    assert!(lines.iter().all(|l| l["session_id"] == chat.as_str()));
    // A chat not in the directory is lost: a new id, or a failure.
    let lost: Vec<&str> = tool_loop
        .iter()
        .copied()
        .chain(["--resume", "gone-chat"])
        .collect();
    let (lines, _, _) = play(&scratch, &lost, "x", 1, Ends::Waits);
    assert_ne!(lines[0]["session_id"], "gone-chat");
    let failing: Vec<&str> = lost
        .iter()
        .copied()
        .chain(["--lost-chat", "fail"])
        .collect();
    let (lines, code, stderr) = play(&scratch, &failing, "x", 1, Ends::Exits);
    assert!(lines.is_empty());
    assert_eq!(code, Some(1));
    assert!(stderr.contains("chat gone-chat not found"), "{stderr}");
    // A transcript replayed in a resumed chat carries its id.
    let transcript = support::transcript("e2e/read_file/turn-2.jsonl");
    let (lines, code, _) = play(
        &scratch,
        &["--transcript", &transcript, "--resume", "chat-7"],
        "x",
        usize::MAX,
        Ends::Exits,
    );
    assert_eq!(code, Some(0));
    assert!(lines.len() > 3 && lines.iter().all(|l| l["session_id"] == "chat-7"));
    // Every run logged what it was given and the chat it answered under.
    let runs = scratch.runs();
    assert_eq!(runs.len(), 6);
    assert_eq!((runs[0].stdin_bytes, runs[1].stdin_bytes), (2, 7));
    assert_eq!(runs[0].chat.as_deref(), Some(chat.as_str()));
    assert_eq!(runs[1].resumed(), Some(chat.as_str()));
    // A lost chat that fails answers under none.
    assert_eq!(runs[4].chat, None);
    assert_eq!(runs[5].chat.as_deref(), Some("chat-7"));
}
