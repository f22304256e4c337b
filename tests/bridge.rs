//! The Bridge driven with simulated time: head and status decisions, keep-alives, idle
//! timeout, client hang-up, failure classes from real stderr texts, client tool calls.

mod support;

use std::path::Path;

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use serde_json::Value;
use support::check_stream;

/// What an adapter saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Head(u16, &'static str),
    Body(Vec<u8>),
    Stop,
    End,
}

struct Run {
    bridge: Bridge,
    seen: Vec<Seen>,
}

impl Run {
    fn new(body: &[u8], config: &Config) -> Run {
        let params = BridgeParams {
            now_ms: 0,
            created_unix: 1_700_000_000,
            id_seed: 42,
        };
        let mut run = Run {
            bridge: Bridge::new(Dialect::ChatCompletions, body, config, params),
            seen: Vec::new(),
        };
        run.drain();
        run
    }

    fn drain(&mut self) {
        while let Some(output) = self.bridge.poll_output() {
            let seen = match output {
                Output::Head(head) => Seen::Head(head.status, head.content_type),
                Output::Body(bytes) => {
                    assert!(!bytes.is_empty());
                    Seen::Body(bytes.to_vec())
                }
                Output::StopAgent => Seen::Stop,
                Output::End => Seen::End,
            };
            assert!(
                !self.seen.contains(&Seen::End),
                "nothing after End: {seen:?}"
            );
            self.seen.push(seen);
        }
    }

    fn stdout(&mut self, bytes: &[u8], now: u64) {
        self.bridge.push_stdout(bytes, now).unwrap();
        self.drain();
    }

    fn stderr(&mut self, bytes: &[u8], now: u64) {
        self.bridge.push_stderr(bytes, now).unwrap();
        self.drain();
    }

    fn exit(&mut self, status: ExitStatus, now: u64) {
        self.bridge.agent_exited(status, now).unwrap();
        self.drain();
    }

    /// Advances time to `until`, firing every deadline on the way.
    fn advance(&mut self, until: u64) {
        while let Some(deadline) = self.bridge.poll_timeout() {
            if deadline > until {
                break;
            }
            self.bridge.handle_timeout(deadline);
            self.drain();
        }
    }

    fn heads(&self) -> Vec<(u16, &'static str)> {
        self.seen
            .iter()
            .filter_map(|s| {
                if let Seen::Head(a, b) = s {
                    Some((*a, *b))
                } else {
                    None
                }
            })
            .collect()
    }

    fn body(&self) -> Vec<u8> {
        self.seen
            .iter()
            .flat_map(|s| {
                if let Seen::Body(b) = s {
                    b.clone()
                } else {
                    Vec::new()
                }
            })
            .collect()
    }

    fn ends(&self) -> usize {
        self.seen.iter().filter(|s| **s == Seen::End).count()
    }

    fn stops(&self) -> usize {
        self.seen.iter().filter(|s| **s == Seen::Stop).count()
    }

    fn json_body(&self) -> Value {
        serde_json::from_slice(&self.body()).unwrap()
    }
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(path),
    )
    .unwrap()
}

fn shared(name: &str) -> Option<Vec<u8>> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/cursor-agent")
            .join(name),
    )
    .ok()
}

const STREAM: &[u8] = br#"{"model":"auto","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#;
const PLAIN: &[u8] = br#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;

#[test]
fn agent_mode_stream_in_order() {
    let mut run = Run::new(STREAM, &Config::default());
    let inv = run.bridge.invocation().unwrap().clone();
    assert!(
        inv.args.contains(&"--trust".to_string()) && !inv.args.contains(&"--force".to_string())
    );
    assert!(
        !inv.args.iter().any(|a| a == "--mode"),
        "agent mode may use the agent's tools"
    );
    assert!(String::from_utf8(inv.stdin).unwrap().contains("hi"));
    assert!(run.seen.is_empty(), "nothing before evidence");
    let transcript = fixture("partial_recaps.jsonl");
    for (i, chunk) in transcript.chunks(100).enumerate() {
        run.stdout(chunk, 10 + i as u64);
    }
    assert_eq!(run.heads(), [(200, "text/event-stream")]);
    assert_eq!(
        run.seen.first(),
        Some(&Seen::Head(200, "text/event-stream"))
    );
    assert_eq!(run.seen.last(), Some(&Seen::End));
    assert_eq!(run.stops(), 0, "the agent finished by itself");
    let summary = check_stream(&run.body());
    assert_eq!(summary.finish_reasons, ["stop"]);
    assert_eq!(summary.usage_chunks.len(), 1);
    run.exit(ExitStatus::Code(0), 1000);
    assert_eq!(run.ends(), 1);
    assert!(run.bridge.poll_timeout().is_none());
}

#[test]
fn non_streaming_body_comes_at_the_end_with_its_status() {
    let mut run = Run::new(PLAIN, &Config::default());
    let transcript = fixture("partial_recaps.jsonl");
    let (head, tail) = transcript.split_at(transcript.len() - 10);
    run.stdout(head, 5);
    assert!(run.seen.is_empty());
    run.stdout(tail, 6);
    assert_eq!(run.heads(), [(200, "application/json")]);
    let body = run.json_body();
    assert_eq!(body["object"], "chat.completion");
    assert!(
        body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Let me check")
    );
    assert_eq!(run.ends(), 1);
}

#[test]
fn head_deadline_then_keep_alives() {
    let config = Config {
        head_deadline_ms: 30_000,
        keep_alive_ms: 15_000,
        ..Config::default()
    };
    let mut run = Run::new(STREAM, &config);
    // Only progress (reconnects) for a while: no head yet.
    run.stdout(
        b"{\"type\":\"connection\",\"subtype\":\"reconnecting\",\"attempt\":1}\n",
        1_000,
    );
    run.advance(29_999);
    assert!(run.heads().is_empty());
    run.advance(30_000);
    assert_eq!(run.heads(), [(200, "text/event-stream")]);
    // The buffered progress note goes out with the head.
    assert!(
        String::from_utf8(run.body())
            .unwrap()
            .contains("reconnecting (attempt 1)")
    );
    let before = run.seen.len();
    run.advance(44_999);
    assert_eq!(run.seen.len(), before, "no keep-alive before the interval");
    run.advance(45_000);
    assert_eq!(
        run.seen.last(),
        Some(&Seen::Body(b": keep-alive\n\n".to_vec()))
    );
    run.advance(75_000);
    let keep_alives = run
        .seen
        .iter()
        .filter(|s| **s == Seen::Body(b": keep-alive\n\n".to_vec()))
        .count();
    assert_eq!(keep_alives, 3);
    // Output resets the keep-alive clock.
    run.stdout(
        b"{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"hm\"}\n",
        80_000,
    );
    run.advance(94_999);
    assert_eq!(
        run.seen
            .iter()
            .filter(|s| **s == Seen::Body(b": keep-alive\n\n".to_vec()))
            .count(),
        3
    );
    run.advance(95_000);
    assert_eq!(
        run.seen
            .iter()
            .filter(|s| **s == Seen::Body(b": keep-alive\n\n".to_vec()))
            .count(),
        4
    );
}

#[test]
fn idle_timeout_before_and_after_the_head() {
    let config = Config {
        idle_timeout_ms: 60_000,
        head_deadline_ms: 120_000,
        ..Config::default()
    };
    // Before the head: a real 504.
    let mut run = Run::new(STREAM, &config);
    run.advance(59_999);
    assert!(run.seen.is_empty());
    run.advance(60_000);
    assert_eq!(run.heads(), [(504, "application/json")]);
    assert_eq!(run.json_body()["error"]["code"], "agent_timeout");
    assert_eq!(run.stops(), 1);
    assert_eq!(run.seen.last(), Some(&Seen::End));
    // After the head: an in-band error frame, [DONE], stop, end.
    let mut run = Run::new(STREAM, &config);
    run.stdout(
        b"{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":\"hm\"}\n",
        10_000,
    );
    run.advance(69_999);
    assert_eq!(run.ends(), 0);
    run.advance(70_000);
    let summary = check_stream(&run.body());
    assert_eq!(summary.errors.len(), 1);
    assert_eq!(summary.done, 1);
    assert_eq!(run.stops(), 1);
    assert_eq!(run.ends(), 1);
    assert!(run.bridge.poll_timeout().is_none());
}

#[test]
fn client_gone_stops_the_agent_and_ends_quietly() {
    let mut run = Run::new(STREAM, &Config::default());
    run.stdout(b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n", 5);
    let bytes = run.body().len();
    run.bridge.client_gone(6);
    run.drain();
    assert_eq!(&run.seen[run.seen.len() - 2..], [Seen::Stop, Seen::End]);
    run.stdout(b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"more\"}]}}\n", 7);
    assert_eq!(
        run.body().len(),
        bytes,
        "nothing written after the client left"
    );
    run.exit(ExitStatus::Signal(15), 8);
    assert_eq!(run.ends(), 1);
}

/// Runs a failed agent: stdout, stderr, exit code.
fn failed(request: &[u8], stdout: &[u8], stderr: &[u8], exit: i32) -> Run {
    let mut run = Run::new(request, &Config::default());
    run.stdout(stdout, 1);
    run.stderr(stderr, 2);
    run.exit(ExitStatus::Code(exit), 3);
    assert_eq!(run.ends(), 1);
    run
}

#[test]
fn failure_classes_get_their_status_before_the_head() {
    let cases: [(&str, u16, &str); 5] = [
        ("trust_gate.txt", 500, "--trust"),
        ("not_logged_in.txt", 401, "cursor-agent login"),
        (
            "unknown_model.txt",
            404,
            "Available models: auto, composer-2.5, gpt-5",
        ),
        ("usage_limit.txt", 429, "usage"),
        ("crash.txt", 502, "Segmentation fault"),
    ];
    for (stderr, status, needle) in cases {
        for request in [STREAM, PLAIN] {
            let run = failed(request, b"", &fixture(&format!("stderr/{stderr}")), 1);
            assert_eq!(run.heads(), [(status, "application/json")], "{stderr}");
            let body = run.json_body();
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(needle), "{stderr}: {message}");
            assert_eq!(run.stops(), 0, "the agent already exited");
        }
    }
}

#[test]
fn real_trust_gate_stderr_is_a_configuration_error() {
    let Some(stderr) =
        shared("dungle-scrubs-harness-cli-normalizer__2026.09.15-d2fe57e__trust-01.stderr.txt")
    else {
        println!("skipped: ../shared fixtures absent");
        return;
    };
    let run = failed(STREAM, b"", &stderr, 1);
    assert_eq!(run.heads(), [(500, "application/json")]);
}

#[test]
fn real_failure_transcript_is_a_configuration_error() {
    let Some(stdout) = shared("cagase-dsh-cursor__stream-json-system-prompt-failure.jsonl") else {
        println!("skipped: ../shared fixtures absent");
        return;
    };
    let run = failed(STREAM, &stdout, b"", 1);
    assert_eq!(run.heads(), [(500, "application/json")]);
    assert!(
        run.json_body()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown option")
    );
}

#[test]
fn connection_failure_is_unavailable() {
    let run = failed(PLAIN, &fixture("failure_no_result.jsonl"), b"", 1);
    assert_eq!(run.heads(), [(503, "application/json")]);
}

#[test]
fn failure_after_the_head_is_in_band() {
    let stdout = b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"partial\"}]}}\n";
    let run = failed(STREAM, stdout, b"Segmentation fault\n", 139);
    assert_eq!(run.heads(), [(200, "text/event-stream")]);
    let summary = check_stream(&run.body());
    assert_eq!(summary.content, "partial");
    assert_eq!(summary.errors.len(), 1);
    assert!(
        summary.errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("exit code 139")
    );
    assert!(summary.finish_reasons.is_empty());
}

#[test]
fn clean_exit_without_result_is_a_crash() {
    let run = failed(
        PLAIN,
        b"{\"type\":\"system\",\"subtype\":\"init\"}\n",
        b"",
        0,
    );
    assert_eq!(run.heads(), [(502, "application/json")]);
}

#[test]
fn invalid_request_is_rejected_without_spawning() {
    for body in [
        &b"{"[..],
        b"[]",
        br#"{"model":"auto","messages":[]}"#,
        br#"{"model":"--force","messages":[{"role":"user","content":"x"}]}"#,
    ] {
        let mut run = Run::new(body, &Config::default());
        assert!(run.bridge.invocation().is_none());
        assert_eq!(run.heads(), [(400, "application/json")]);
        assert_eq!(run.json_body()["error"]["type"], "invalid_request_error");
        assert_eq!(run.seen.last(), Some(&Seen::End));
        run.stdout(b"{}\n", 1);
        assert_eq!(run.ends(), 1);
        assert!(run.bridge.poll_timeout().is_none());
    }
}

#[test]
fn attachments_reach_the_agent_as_placeholders_or_are_refused() {
    let body = br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":[
        {"type":"text","text":"What is this?"},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}"#;
    let run = Run::new(body, &Config::default());
    let prompt = String::from_utf8(run.bridge.invocation().unwrap().stdin.clone()).unwrap();
    assert!(
        prompt.contains(
            "What is this?\n[image not shown (image/png, 8 bytes): only text reaches you]\n"
        ),
        "{prompt}"
    );
    let mut config = Config::default();
    config.request_limits.reject_attachments = true;
    let run = Run::new(body, &config);
    assert!(run.bridge.invocation().is_none());
    assert_eq!(run.heads(), [(400, "application/json")]);
    let error = &run.json_body()["error"];
    assert_eq!(
        (error["code"].as_str(), error["param"].as_str()),
        (Some("unsupported_content"), Some("messages[0].content[1]"))
    );
}

#[test]
fn misuse_is_reported() {
    let mut run = Run::new(STREAM, &Config::default());
    run.exit(ExitStatus::Code(1), 1);
    assert_eq!(
        run.bridge.push_stdout(b"x", 2),
        Err(agentwire::bridge::BridgeError::AfterExit)
    );
    assert_eq!(
        run.bridge.agent_exited(ExitStatus::Code(1), 3),
        Err(agentwire::bridge::BridgeError::ExitedTwice)
    );
}

fn client_request(stream: bool) -> Vec<u8> {
    fixture(if stream {
        "requests/client_tools.json"
    } else {
        "requests/client_tools_nostream.json"
    })
}

/// Tool calls in a stream body: (index, id, name, arguments).
fn tool_calls(body: &[u8]) -> Vec<(u64, String, String, Value)> {
    let text = String::from_utf8(body.to_vec()).unwrap();
    let mut calls = Vec::new();
    for frame in text.split("\n\n") {
        let Some(data) = frame.strip_prefix("data: ") else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        for call in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            calls.push((
                call["index"].as_u64().unwrap(),
                call["id"].as_str().unwrap().to_owned(),
                call["function"]["name"].as_str().unwrap().to_owned(),
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap(),
            ));
        }
    }
    calls
}

#[test]
fn client_mode_runs_the_agent_read_only() {
    let run = Run::new(&client_request(true), &Config::default());
    let inv = run.bridge.invocation().unwrap();
    let args = inv.args.join(" ");
    assert!(
        args.contains("--mode ask") && !args.contains("--force"),
        "{args}"
    );
    let prompt = String::from_utf8(inv.stdin.clone()).unwrap();
    assert!(
        prompt.contains("write") && prompt.contains("Look at the project"),
        "{prompt}"
    );
}

#[test]
fn parallel_native_calls_become_one_batch() {
    let transcript = fixture("client_native_batch.jsonl");
    for chunk in [1, 13, 4096] {
        let mut run = Run::new(&client_request(true), &Config::default());
        for (i, piece) in transcript.chunks(chunk).enumerate() {
            run.stdout(piece, 1 + i as u64 / 1000);
        }
        let calls = tool_calls(&run.body());
        let names: Vec<(u64, &str)> = calls.iter().map(|(i, _, n, _)| (*i, n.as_str())).collect();
        assert_eq!(names, [(0, "bash"), (1, "read")], "chunk {chunk}");
        assert_eq!(calls[0].3["command"], "ls -la");
        assert_eq!(calls[1].3["filePath"], "/home/dev/project/NOTES.md");
        for (_, id, _, _) in &calls {
            assert!(id.starts_with("call_") && !id.contains('\n'), "{id}");
        }
        let summary = check_stream(&run.body());
        assert_eq!(summary.finish_reasons, ["tool_calls"]);
        assert_eq!(summary.content, "Let me look around.");
        // Calls, finish, [DONE], then stop, then end.
        let n = run.seen.len();
        assert_eq!(&run.seen[n - 2..], [Seen::Stop, Seen::End], "chunk {chunk}");
        assert!(
            String::from_utf8(run.body())
                .unwrap()
                .ends_with("data: [DONE]\n\n")
        );
    }
}

#[test]
fn batch_closes_after_its_window() {
    let config = Config {
        batch_window_ms: 250,
        ..Config::default()
    };
    let mut run = Run::new(&client_request(true), &config);
    let transcript = fixture("client_native_batch.jsonl");
    // Feed up to and including the second `started` only.
    let needle = br#""subtype":"started""#;
    let upto = transcript
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .nth(1)
        .unwrap();
    let end = upto + transcript[upto..].iter().position(|b| *b == b'\n').unwrap() + 1;
    run.stdout(&transcript[..end], 100);
    assert!(
        tool_calls(&run.body()).is_empty(),
        "the batch is still open"
    );
    assert_eq!(run.bridge.poll_timeout(), Some(350));
    run.advance(350);
    assert_eq!(tool_calls(&run.body()).len(), 2);
    assert_eq!(run.stops(), 1);
    assert_eq!(run.ends(), 1);
}

#[test]
fn envelope_split_across_chunks_becomes_a_tool_call() {
    let transcript = fixture("client_envelope.jsonl");
    for chunk in [1, 5, 64, 4096] {
        let mut run = Run::new(&client_request(true), &Config::default());
        for piece in transcript.chunks(chunk) {
            run.stdout(piece, 1);
        }
        let body = run.body();
        let summary = check_stream(&body);
        assert_eq!(
            summary.content, "I'll write the fix.\n",
            "chunk {chunk}: no envelope text leaks"
        );
        let calls = tool_calls(&body);
        assert_eq!(calls.len(), 1, "chunk {chunk}");
        assert_eq!(calls[0].2, "write");
        assert_eq!(calls[0].3["filePath"], "/home/dev/project/src/lib.rs");
        assert_eq!(
            calls[0].3["content"],
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
        );
        assert_eq!(summary.finish_reasons, ["tool_calls"]);
        assert_eq!(run.stops(), 1);
    }
}

#[test]
fn non_streaming_tool_calls() {
    let mut run = Run::new(&client_request(false), &Config::default());
    run.stdout(&fixture("client_native_batch.jsonl"), 1);
    assert_eq!(run.heads(), [(200, "application/json")]);
    let body = run.json_body();
    let message = &body["choices"][0]["message"];
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(message["tool_calls"][1]["function"]["name"], "read");
}

#[test]
fn real_shell_capture_becomes_a_bash_call() {
    let Some(transcript) = shared("saurabh7481-maestro__02_shell_tool_call.jsonl") else {
        println!("skipped: ../shared fixtures absent");
        return;
    };
    let mut run = Run::new(&client_request(true), &Config::default());
    run.stdout(&transcript, 1);
    let calls = tool_calls(&run.body());
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].2, "bash");
    assert!(calls[0].3["command"].is_string());
}

#[test]
fn real_path_only_edit_is_agent_activity() {
    let Some(transcript) =
        shared("dungle-scrubs-harness-cli-normalizer__2026.09.15-d2fe57e__probe-13.jsonl")
    else {
        println!("skipped: ../shared fixtures absent");
        return;
    };
    let mut run = Run::new(&client_request(true), &Config::default());
    run.stdout(&transcript, 1);
    // The read is intercepted; the {path}-only edit never becomes a call.
    let calls = tool_calls(&run.body());
    assert!(
        calls.iter().all(|(_, _, name, _)| name != "edit"),
        "{calls:?}"
    );
}

#[test]
fn tool_choice_none_is_agent_mode() {
    let mut body: Value = serde_json::from_slice(&client_request(true)).unwrap();
    body["tool_choice"] = "none".into();
    let mut run = Run::new(&serde_json::to_vec(&body).unwrap(), &Config::default());
    assert!(
        !run.bridge
            .invocation()
            .unwrap()
            .args
            .iter()
            .any(|a| a == "ask")
    );
    run.stdout(&fixture("client_native_batch.jsonl"), 1);
    assert!(tool_calls(&run.body()).is_empty());
    assert_eq!(check_stream(&run.body()).finish_reasons, ["stop"]);
}

#[test]
fn client_mode_never_forces_even_when_allowed() {
    for strategy in [
        agentwire::tools::ToolStrategy::ReadOnly,
        agentwire::tools::ToolStrategy::Native,
    ] {
        let config = Config {
            allow_force: true,
            tool_strategy: strategy,
            ..Config::default()
        };
        let run = Run::new(&client_request(true), &config);
        assert!(
            !run.bridge
                .invocation()
                .unwrap()
                .args
                .iter()
                .any(|a| a == "--force"),
            "{strategy:?}"
        );
    }
    let config = Config {
        allow_force: true,
        ..Config::default()
    };
    let run = Run::new(STREAM, &config);
    assert!(
        run.bridge
            .invocation()
            .unwrap()
            .args
            .iter()
            .any(|a| a == "--force"),
        "agent mode may"
    );
}

#[test]
fn error_results_get_their_true_status_streaming_or_not() {
    let auth = br#"{"type":"system","subtype":"init","session_id":"s","model":"Auto"}
{"type":"result","subtype":"error","is_error":true,"result":"Authentication required. Please run 'cursor-agent login' first.","session_id":"s"}
"#;
    for (stdout, status, needle) in [
        (fixture("error_result.jsonl"), 429, "usage limit"),
        (auth.to_vec(), 401, "cursor-agent login"),
    ] {
        for request in [STREAM, PLAIN] {
            let mut run = Run::new(request, &Config::default());
            // The head is decided by the result line itself, before the agent exits.
            run.stdout(&stdout, 1);
            assert_eq!(run.heads(), [(status, "application/json")], "{needle}");
            let body = run.json_body();
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(needle), "{message}");
            assert!(body.get("choices").is_none(), "no answer content: {body}");
            run.exit(ExitStatus::Code(1), 2);
            assert_eq!(run.ends(), 1);
        }
    }
}

#[test]
fn shutdown_ends_the_response_as_a_retryable_failure() {
    // Before the head: a 503 the client may retry.
    for request in [STREAM, PLAIN] {
        let mut run = Run::new(request, &Config::default());
        run.bridge.shutdown(5);
        run.drain();
        assert_eq!(run.heads(), [(503, "application/json")]);
        assert!(
            run.json_body()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("shutting down")
        );
        assert_eq!((run.stops(), run.ends()), (1, 1));
        assert!(run.bridge.poll_timeout().is_none());
    }
    // After the head: an in-band error and [DONE], then the agent is stopped.
    let mut run = Run::new(STREAM, &Config::default());
    run.stdout(
        b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n",
        1,
    );
    run.bridge.shutdown(2);
    run.drain();
    assert_eq!(run.heads(), [(200, "text/event-stream")]);
    let summary = check_stream(&run.body());
    assert_eq!(summary.content, "Hi");
    assert_eq!(summary.errors.len(), 1);
    assert_eq!(summary.errors[0]["code"], "agent_unavailable");
    assert_eq!(run.seen[run.seen.len() - 2..], [Seen::Stop, Seen::End]);
    // Once ended, nothing more happens.
    run.bridge.shutdown(3);
    run.exit(ExitStatus::Signal(15), 4);
    assert_eq!(run.ends(), 1);
}

#[test]
fn every_chunk_echoes_the_validated_model() {
    // A 1 MiB provider prefix is a 400 whose body does not echo it, and nothing runs.
    let mib = "p".repeat(1 << 20);
    let body = format!(
        r#"{{"model":"{mib}/auto","stream":true,"messages":[{{"role":"user","content":"x"}}]}}"#
    );
    let run = Run::new(body.as_bytes(), &Config::default());
    assert!(run.bridge.invocation().is_none());
    assert_eq!(run.heads(), [(400, "application/json")]);
    assert_eq!(run.json_body()["error"]["param"], "model");
    assert!(run.body().len() < 1024, "{} bytes", run.body().len());
    // A valid name, provider prefix and all, is in every chunk.
    let body =
        br#"{"model":"cursor/gpt-5","stream":true,"messages":[{"role":"user","content":"x"}]}"#;
    let mut run = Run::new(body, &Config::default());
    run.stdout(
        b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n\
          {\"type\":\"result\",\"subtype\":\"success\",\"result\":\"Hi\"}\n",
        1,
    );
    let text = String::from_utf8(run.body()).unwrap();
    let chunks = text.matches("data: {").count();
    assert!(chunks >= 2, "{text}");
    assert_eq!(
        text.matches(r#""model":"cursor/gpt-5""#).count(),
        chunks,
        "{text}"
    );
}
