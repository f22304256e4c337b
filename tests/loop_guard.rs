//! The loop guard through the Bridge, from request bodies: ordinary workflows that repeat a
//! call (rerunning a test after each edit, checking the status between writes, the user
//! asking again) are never refused; the same call made again and again with nothing in
//! between is, with a plain answer and `finish_reason: "stop"`.

mod support;

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use serde_json::{Value, json};
use support::check_stream;

/// The project's client-mode request (OpenCode's tools) with `messages` as its history.
fn request(messages: &[Value]) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/requests/client_tools.json");
    let mut body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    body["messages"] = Value::Array(messages.to_vec());
    serde_json::to_vec(&body).unwrap()
}

fn user(text: &str) -> Value {
    json!({"role":"user","content": text})
}

/// One assistant turn calling `tool` with `arguments`, and the client's result.
fn round(id: &str, tool: &str, arguments: Value, result: &str) -> [Value; 2] {
    [
        json!({"role":"assistant","content":"","tool_calls":[{"id": id,"type":"function",
            "function":{"name": tool,"arguments": arguments.to_string()}}]}),
        json!({"role":"tool","tool_call_id": id,"content": result}),
    ]
}

const TEST_FAILED: &str =
    "error[E0308]: mismatched types\n --> src/lib.rs:3:5\n\nerror: could not compile `demo`";
const TEST_PASSED: &str = "running 3 tests\ntest result: ok. 3 passed; 0 failed";
const STATUS: &str = "On branch main\nChanges not staged for commit:\n\tmodified: src/lib.rs";
const EDITED: &str = "Edit applied successfully.";

fn test_run(id: &str, result: &str) -> [Value; 2] {
    round(id, "bash", json!({"command":"cargo test"}), result)
}

fn edit(id: &str) -> [Value; 2] {
    round(
        id,
        "edit",
        json!({"filePath":"/home/dev/project/src/lib.rs","oldString":"a","newString":"b"}),
        EDITED,
    )
}

/// The agent's stdout: parallel shell starts of one model call, one per command, then its
/// result.
fn agent_runs(commands: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let line = json!({"type":"tool_call","subtype":"started","call_id": format!("call_run{i}\nfc_{i}"),
            "tool_call":{"shellToolCall":{"args":{"command": command}}},"model_call_id":"m-1"});
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(br#"{"type":"result","subtype":"success","is_error":false,"result":""}"#);
    out.push(b'\n');
    out
}

/// What the client receives: the tool calls' commands, the answer text and the finish
/// reasons.
#[derive(Debug)]
struct Answer {
    commands: Vec<String>,
    content: String,
    finish_reasons: Vec<String>,
}

fn answer(messages: &[Value], stdout: &[u8], config: &Config) -> Answer {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 7,
    };
    let mut bridge = Bridge::new(Dialect::ChatCompletions, &request(messages), config, params);
    assert!(bridge.invocation().is_some(), "a valid request");
    let mut body = Vec::new();
    for byte in stdout.chunks(64) {
        bridge.push_stdout(byte, 1).unwrap();
        while let Some(output) = bridge.poll_output() {
            match output {
                Output::Head(head) => assert_eq!(head.status, 200),
                Output::Body(bytes) => body.extend_from_slice(bytes),
                Output::StopAgent | Output::End => {}
            }
        }
    }
    assert!(bridge.is_ended());
    let summary = check_stream(&body);
    let mut commands = Vec::new();
    for frame in String::from_utf8(body).unwrap().split("\n\n") {
        let Some(chunk) = frame
            .strip_prefix("data: ")
            .and_then(|data| serde_json::from_str::<Value>(data).ok())
        else {
            continue;
        };
        for call in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert_eq!(call["function"]["name"], "bash");
            let arguments: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            commands.push(arguments["command"].as_str().unwrap().to_owned());
        }
    }
    Answer {
        commands,
        content: summary.content,
        finish_reasons: summary.finish_reasons,
    }
}

/// The answer when the agent, given `messages`, runs the tests (default limits).
fn rerun(messages: &[Value]) -> Answer {
    answer(messages, &agent_runs(&["cargo test"]), &Config::default())
}

/// The user's request, then the tests failing twice in a row.
fn two_failures() -> Vec<Value> {
    let mut messages = vec![user("Make the tests pass.")];
    messages.extend(test_run("t0", TEST_FAILED));
    messages.extend(test_run("t1", TEST_FAILED));
    messages
}

fn assert_allowed(answer: &Answer, commands: &[&str]) {
    assert_eq!(answer.commands, commands, "{answer:?}");
    assert_eq!(answer.finish_reasons, ["tool_calls"], "{answer:?}");
}

fn assert_refused(answer: &Answer, why: &str) {
    assert!(answer.commands.is_empty(), "{answer:?}");
    assert_eq!(answer.finish_reasons, ["stop"], "{answer:?}");
    // What was refused (the tool and its arguments) and why, in plain words.
    assert!(
        answer.content.contains("`bash`") && answer.content.contains(r#""command":"cargo test""#),
        "{}",
        answer.content
    );
    assert!(answer.content.contains(why), "{}", answer.content);
}

#[test]
fn fail_edit_rerun_is_never_refused() {
    let mut messages = vec![user("Make the tests pass.")];
    for round in 0..5 {
        let answer = rerun(&messages);
        assert_allowed(&answer, &["cargo test"]);
        messages.extend(test_run(&format!("t{round}"), TEST_FAILED));
        messages.extend(edit(&format!("e{round}")));
    }
    let answer = rerun(&messages);
    assert_allowed(&answer, &["cargo test"]);
}

#[test]
fn status_checks_between_writes_are_never_refused() {
    let mut messages = vec![user("Clean up the module, checking the status as you go.")];
    for round in 0..12 {
        messages.extend(status_check(&format!("s{round}")));
        messages.extend(edit(&format!("e{round}")));
    }
    let answer = answer(&messages, &agent_runs(&["git status"]), &Config::default());
    assert_allowed(&answer, &["git status"]);
}

fn status_check(id: &str) -> [Value; 2] {
    round(id, "bash", json!({"command":"git status"}), STATUS)
}

#[test]
fn the_same_failing_call_a_third_time_in_a_row_is_refused() {
    let mut messages = vec![user("Make the tests pass.")];
    messages.extend(test_run("t0", TEST_FAILED));
    let answer_after_one = rerun(&messages);
    assert_allowed(&answer_after_one, &["cargo test"]);
    messages.extend(test_run("t1", TEST_FAILED));
    let refused = rerun(&messages);
    assert_refused(&refused, "failed the last 2 times");
}

#[test]
fn the_user_insisting_after_a_refusal_is_allowed() {
    let mut messages = two_failures();
    let refused = rerun(&messages);
    assert_refused(&refused, "failed the last 2 times");
    // The refusal becomes the assistant's message; the user fixes something and insists.
    messages.push(json!({"role":"assistant","content": refused.content}));
    messages.push(user("I fixed the linker setup. Run the tests again."));
    let answer = rerun(&messages);
    assert_allowed(&answer, &["cargo test"]);
}

#[test]
fn a_success_in_between_resets_the_failures() {
    let mut messages = vec![user("The test is flaky; find out why.")];
    messages.extend(test_run("t0", TEST_FAILED));
    messages.extend(test_run("t1", TEST_PASSED));
    messages.extend(test_run("t2", TEST_FAILED));
    let answer = rerun(&messages);
    assert_allowed(&answer, &["cargo test"]);
}

#[test]
fn an_eighth_identical_call_in_a_row_is_refused() {
    let mut messages = vec![user("Wait for the deployment to finish.")];
    for i in 0..6 {
        messages.extend(test_run(&format!("p{i}"), TEST_PASSED));
    }
    let seventh = rerun(&messages);
    assert_allowed(&seventh, &["cargo test"]);
    messages.extend(test_run("p6", TEST_PASSED));
    let eighth = rerun(&messages);
    assert_refused(&eighth, "7 times in a row");
    // The same count within one batch of parallel calls: the seventh is handed over, the
    // eighth closes the batch without it.
    messages.truncate(messages.len() - 2);
    let batch = answer(
        &messages,
        &agent_runs(&["cargo test", "cargo test"]),
        &Config::default(),
    );
    assert_allowed(&batch, &["cargo test"]);
}

#[test]
fn only_the_current_turn_counts() {
    // Two failures in an earlier turn: a new user message starts clean.
    let mut messages = two_failures();
    messages.push(json!({"role":"assistant","content":"The tests fail to compile."}));
    messages.push(user("Try once more."));
    let answer = rerun(&messages);
    assert_allowed(&answer, &["cargo test"]);
}

#[test]
fn limits_come_from_the_configuration() {
    let messages = two_failures();
    let lenient = Config {
        loop_guard: agentwire::tools::loop_guard::LoopGuardConfig {
            max_failed_repeats: 3,
            max_repeats: 7,
        },
        ..Config::default()
    };
    let answer = answer(&messages, &agent_runs(&["cargo test"]), &lenient);
    assert_allowed(&answer, &["cargo test"]);
}
