//! The ACP core against real recordings (`../shared/fixtures/acp`, when present) and the
//! project's own fixtures (`tests/fixtures/acp`): the client messages the core writes,
//! in kind and order, and every turn's response through every dialect, in every
//! chunking of the agent's stdout.

#[path = "support/acp.rs"]
mod acp_replay;
mod support;

use std::path::Path;

use acp_replay::{
    Outcome, Split, load, project_fixtures, recorded_answers, replay, shared_recordings,
};
use agentwire::acp::{AcpConfig, Connection, Decision, NativeTools, PermissionChoice};
use agentwire::bridge::{BridgeParams, Config, Dialect, Output};
use agentwire_testkit::messages;
use serde_json::{Value, json};
use support::check_stream;
use support::responses::check_responses_stream;

const DIALECTS: [Dialect; 3] = [
    Dialect::ChatCompletions,
    Dialect::Responses,
    Dialect::Messages,
];

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// The answer text of a 200 stream in `dialect`, checked by that dialect's checker, and
/// whether it carried usage.
fn answer(dialect: Dialect, body: &[u8]) -> (String, bool) {
    match dialect {
        Dialect::ChatCompletions => {
            let summary = check_stream(body);
            assert!(summary.errors.is_empty(), "{:?}", summary.errors);
            assert_eq!(summary.finish_reasons, ["stop"]);
            (summary.content, !summary.usage_chunks.is_empty())
        }
        Dialect::Responses => {
            let summary = check_responses_stream(body);
            assert_eq!(summary.terminal, "response.completed");
            let usage = !summary.response["usage"].is_null();
            (summary.text, usage)
        }
        Dialect::Messages => {
            let stream = messages::check_stream(body, "default");
            assert_eq!(stream.stop_reason.as_deref(), Some("end_turn"));
            let usage = stream.usage["input_tokens"].as_u64().unwrap_or(0) > 0;
            (stream.text(), usage)
        }
        other => panic!("{other:?}"),
    }
}

/// Checks one recording's outcome: answers, usage per agent, cancel and model refusal.
fn check_recording(
    file: &str,
    records: &[acp_replay::Record],
    dialect: Dialect,
    outcome: &Outcome,
) {
    let answers = recorded_answers(records);
    if file.contains("unknown-model") {
        assert_eq!(outcome.turns.len(), 1);
        assert_eq!(
            outcome.turns[0].status,
            Some(404),
            "{file}: an unknown model is a 404 before the head"
        );
        assert!(String::from_utf8_lossy(&outcome.turns[0].body).contains("no-such-model"));
        return;
    }
    let mut turns = outcome.turns.iter();
    let mut answers = answers.iter();
    if file.contains("cancel") {
        let cancelled = turns.next().unwrap();
        answers.next();
        assert_eq!(cancelled.ends, 1, "{file}");
        // The client was gone: nothing was written for it after the cancel.
        assert!(
            outcome
                .written
                .iter()
                .any(|m| m["method"] == "session/cancel"),
            "{file}"
        );
        assert!(outcome.stopped.is_some(), "{file}");
        return;
    }
    for (turn, expected) in turns.zip(answers) {
        assert_eq!(
            turn.status,
            Some(200),
            "{file} {dialect:?}: {}",
            String::from_utf8_lossy(&turn.body)
        );
        assert_eq!(turn.ends, 1);
        let (text, usage) = answer(dialect, &turn.body);
        assert_eq!(&text, expected, "{file} {dialect:?}");
        // Usage only where the agent reports it exactly: never for codex-acp.
        let reports_usage = !file.starts_with("codex-acp");
        if dialect != Dialect::Messages {
            assert_eq!(usage, reports_usage, "{file} {dialect:?}: usage");
        }
    }
    assert_eq!(
        outcome.restarts, 1,
        "the exit at the end decides one restart"
    );
    // Agents that offer `session/close` are told to close each answered session, once.
    let offers_close = records.iter().any(|r| {
        !r.to_agent
            && r.msg["result"]["agentCapabilities"]["sessionCapabilities"]["close"].is_object()
    });
    let prompted: Vec<&Value> = records
        .iter()
        .filter(|r| r.to_agent && r.msg["method"] == "session/prompt")
        .map(|r| &r.msg["params"]["sessionId"])
        .collect();
    let mut closed = outcome.closed.clone();
    closed.dedup();
    assert_eq!(closed.len(), outcome.closed.len(), "{file}: each once");
    if offers_close && outcome.stopped.is_none() {
        let answered = outcome
            .turns
            .iter()
            .filter(|t| t.status == Some(200))
            .count();
        assert_eq!(
            outcome.closed.len(),
            answered,
            "{file}: {:?}",
            outcome.closed
        );
        assert!(
            outcome
                .closed
                .iter()
                .all(|s| prompted.iter().any(|p| *p == s))
        );
    } else if !offers_close {
        assert!(outcome.closed.is_empty(), "{file}");
    }
}

#[test]
fn every_recording_replays_through_every_dialect() {
    let Some(files) = shared_recordings() else {
        return;
    };
    assert_eq!(
        files.len(),
        21,
        "the recordings ../shared/fixtures/PROVENANCE.md names"
    );
    for path in files {
        let file = name(&path);
        let records = load(&path);
        for dialect in DIALECTS {
            let outcome = replay(&records, dialect, Split::Whole);
            check_recording(&file, &records, dialect, &outcome);
        }
    }
}

/// The offsets each agent line is split at: every one of the first 160 bytes (the
/// envelope, method, id and session id), every 37th after, and the last three before each
/// line's end. Every offset of every line of the recordings (up to ~5 KB a line, each
/// replay pushing every line) costs minutes in a debug build; the project's fixtures are
/// split at every offset.
fn split_points(longest: usize) -> Vec<Split> {
    let mut points: Vec<Split> = (1..longest.min(160)).map(Split::At).collect();
    points.extend((160..longest).step_by(37).map(Split::At));
    points.extend((1..=3).map(Split::FromEnd));
    points
}

#[test]
fn every_recording_gives_the_same_outcome_byte_at_a_time_and_split_anywhere() {
    let Some(files) = shared_recordings() else {
        return;
    };
    for path in files {
        let records = load(&path);
        let whole = replay(&records, Dialect::ChatCompletions, Split::Whole);
        assert_eq!(
            replay(&records, Dialect::ChatCompletions, Split::Chunks(1)),
            whole,
            "{}",
            name(&path)
        );
        let longest = records
            .iter()
            .filter(|r| !r.to_agent)
            .map(|r| r.msg.to_string().len() + 1)
            .max()
            .unwrap();
        for split in split_points(longest) {
            assert_eq!(
                replay(&records, Dialect::ChatCompletions, split),
                whole,
                "{} {split:?}",
                name(&path)
            );
        }
    }
}

fn project(name: &str) -> Vec<acp_replay::Record> {
    let path = project_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(name))
        .unwrap();
    load(&path)
}

fn every_chunking(records: &[acp_replay::Record], dialect: Dialect) -> Outcome {
    let whole = replay(records, dialect, Split::Whole);
    assert_eq!(replay(records, dialect, Split::Chunks(1)), whole);
    let longest = records
        .iter()
        .map(|r| r.msg.to_string().len() + 1)
        .max()
        .unwrap();
    for offset in 1..longest {
        assert_eq!(
            replay(records, dialect, Split::At(offset)),
            whole,
            "at {offset}"
        );
    }
    whole
}

#[test]
fn interleaved_sessions_each_get_their_own_answer() {
    let records = project("interleaved-sessions");
    for dialect in DIALECTS {
        let outcome = every_chunking(&records, dialect);
        let texts: Vec<String> = outcome
            .turns
            .iter()
            .map(|t| answer(dialect, &t.body).0)
            .collect();
        assert_eq!(texts, ["Alpha one.", "Beta two."], "{dialect:?}");
    }
}

#[test]
fn a_malformed_line_and_a_stray_response_are_ignored() {
    let outcome = every_chunking(&project("malformed-line"), Dialect::ChatCompletions);
    assert_eq!(
        answer(Dialect::ChatCompletions, &outcome.turns[0].body).0,
        "Still fine."
    );
}

#[test]
fn the_agents_exit_mid_turn_fails_the_turn_with_the_stderr_tail() {
    for dialect in DIALECTS {
        let outcome = every_chunking(&project("exit-mid-turn"), dialect);
        let turn = &outcome.turns[0];
        assert_eq!(
            turn.status,
            Some(200),
            "the head was sent at the first text"
        );
        assert_eq!(turn.ends, 1);
        assert!(
            String::from_utf8_lossy(&turn.body).contains("fatal: out of memory"),
            "{dialect:?}"
        );
        assert_eq!(outcome.restarts, 1);
    }
}

#[test]
fn a_cancel_answers_late_permissions_cancelled_and_ignores_updates_after_it() {
    let outcome = every_chunking(&project("cancel-updates-after"), Dialect::ChatCompletions);
    let turn = &outcome.turns[0];
    assert_eq!(turn.ends, 1);
    assert!(
        !String::from_utf8_lossy(&turn.body).contains("are "),
        "nothing after the client left"
    );
}

#[test]
fn ids_with_newlines_are_echoed_and_permissions_chosen_by_kind() {
    let outcome = every_chunking(&project("ids-with-newlines"), Dialect::ChatCompletions);
    assert_eq!(
        answer(Dialect::ChatCompletions, &outcome.turns[0].body).0,
        "It printed hi."
    );
    let answer = outcome
        .written
        .iter()
        .find(|m| m["id"] == "req\n0")
        .unwrap();
    assert_eq!(
        answer["result"]["outcome"]["optionId"], "allow-once",
        "never allow_always"
    );
}

#[test]
fn not_logged_in_is_a_401_that_says_what_to_do() {
    for dialect in DIALECTS {
        let outcome = every_chunking(&project("not-logged-in"), dialect);
        assert_eq!(outcome.turns[0].status, Some(401), "{dialect:?}");
        assert!(String::from_utf8_lossy(&outcome.turns[0].body).contains("login"));
    }
}

// Policies without a recording.

fn ready(config: AcpConfig) -> Connection {
    ready_with(config, r#"{"protocolVersion":1}"#)
}

/// A connection whose agent answered `initialize` with `result`.
fn ready_with(config: AcpConfig, result: &str) -> Connection {
    let mut connection = Connection::new(config, 0);
    let init = connection.poll_transmit().unwrap().to_vec();
    assert!(String::from_utf8_lossy(&init).contains("\"initialize\""));
    let answer = format!("{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{result}}}\n");
    connection.push_stdout(answer.as_bytes(), 1).unwrap();
    assert!(connection.is_ready());
    connection
}

fn written(connection: &mut Connection) -> Vec<Value> {
    let mut all = Vec::new();
    while let Some(bytes) = connection.poll_transmit() {
        for line in std::str::from_utf8(bytes).unwrap().lines() {
            all.push(serde_json::from_str(line).unwrap());
        }
    }
    all
}

fn params(now_ms: u64) -> BridgeParams {
    BridgeParams {
        now_ms,
        created_unix: 1_700_000_000,
        id_seed: 7,
    }
}

fn drain_turn(
    connection: &mut Connection,
    turn: agentwire::acp::TurnId,
) -> (Option<u16>, Vec<u8>, usize) {
    let (mut status, mut body, mut ends) = (None, Vec::new(), 0);
    while let Some(output) = connection.poll_output(turn) {
        match output {
            Output::Head(head) => status = Some(head.status),
            Output::Body(bytes) => body.extend_from_slice(bytes),
            Output::StopAgent | Output::Respawn => panic!("never"),
            Output::End => ends += 1,
        }
    }
    (status, body, ends)
}

#[test]
fn client_tools_are_a_400_naming_tools_and_nothing_is_sent() {
    let mut connection = ready(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    let body = json!({"model": "default", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]});
    let turn = connection.start_turn(
        Dialect::ChatCompletions,
        &serde_json::to_vec(&body).unwrap(),
        &Config::default(),
        params(2),
    );
    let (status, body, ends) = drain_turn(&mut connection, turn);
    assert_eq!((status, ends), (Some(400), 1));
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["param"], "tools");
    assert!(written(&mut connection).is_empty());
}

#[test]
fn native_tools_off_is_asked_per_session_only_of_an_agent_that_takes_it() {
    let claude = r#"{"protocolVersion":1,"agentInfo":{"name":"@zed-industries/claude-agent-acp","version":"0.23.1"}}"#;
    let codex = r#"{"protocolVersion":1,"agentInfo":{"name":"codex-acp","version":"0.16.0"}}"#;
    let meta_of = |result: &str, native_tools: NativeTools| {
        let config = AcpConfig {
            native_tools,
            ..AcpConfig::default()
        };
        let mut connection = ready_with(config, result);
        let sent = written(&mut connection);
        assert_eq!(sent[0]["method"], "session/new");
        assert_eq!(sent[0]["params"]["mcpServers"], json!([]));
        sent[0]["params"]["_meta"].clone()
    };
    // Claude's own tools off in a session without the client's tools: none at all.
    assert_eq!(
        meta_of(claude, NativeTools::Off),
        json!({"claudeCode": {"options": {"tools": []}}})
    );
    assert_eq!(meta_of(claude, NativeTools::Keep), Value::Null);
    // Codex takes it at launch only (`launch_without_native_tools`).
    assert_eq!(meta_of(codex, NativeTools::Off), Value::Null);
    assert_eq!(
        meta_of(r#"{"protocolVersion":1}"#, NativeTools::Off),
        Value::Null
    );
}

#[test]
fn the_pool_is_filled_ahead_and_prompts_above_the_cap_wait_then_fail_with_503() {
    let config = AcpConfig {
        pool_size: 1,
        max_concurrent_prompts: 1,
        queue_timeout_ms: 100,
        ..AcpConfig::default()
    };
    let mut connection = ready(config);
    let sent = written(&mut connection);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["method"], "session/new", "a session ahead of need");
    connection
        .push_stdout(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s1\"}}\n",
            2,
        )
        .unwrap();
    let request = acp_replay::request(Dialect::ChatCompletions, "auto");
    let first = connection.start_turn(
        Dialect::ChatCompletions,
        &request,
        &Config::default(),
        params(3),
    );
    let sent = written(&mut connection);
    assert_eq!(sent[0]["method"], "session/prompt");
    assert_eq!(sent[1]["method"], "session/new", "the pool refills");
    let second = connection.start_turn(
        Dialect::ChatCompletions,
        &request,
        &Config::default(),
        params(4),
    );
    assert!(written(&mut connection).is_empty(), "above the cap: queued");
    let due = connection.poll_timeout().unwrap();
    assert!(due <= 104);
    connection.handle_timeout(104);
    let (status, _, ends) = drain_turn(&mut connection, second);
    assert_eq!((status, ends), (Some(503), 1));
    assert_eq!(
        drain_turn(&mut connection, first).2,
        0,
        "the first still runs"
    );
}

/// A ready connection (sessions on demand) with one Chat Completions turn prompting on
/// session `s1`.
fn prompting(config: AcpConfig) -> (Connection, agentwire::acp::TurnId) {
    prompting_on(ready(config))
}

/// [`prompting`] on a ready `connection`.
fn prompting_on(mut connection: Connection) -> (Connection, agentwire::acp::TurnId) {
    let request = acp_replay::request(Dialect::ChatCompletions, "auto");
    let turn = connection.start_turn(
        Dialect::ChatCompletions,
        &request,
        &Config::default(),
        params(2),
    );
    assert_eq!(written(&mut connection)[0]["method"], "session/new");
    connection
        .push_stdout(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"sessionId\":\"s1\"}}\n",
            3,
        )
        .unwrap();
    assert_eq!(written(&mut connection)[0]["method"], "session/prompt");
    (connection, turn)
}

#[test]
fn a_slow_client_over_its_budget_is_cancelled_with_a_clear_error() {
    let config = AcpConfig {
        pool_size: 0,
        turn_output_budget: 64,
        ..AcpConfig::default()
    };
    let (mut connection, turn) = prompting(config);
    let chunk = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a long enough piece of text"}}}}"#;
    for _ in 0..4 {
        connection.push_stdout(chunk, 4).unwrap();
        connection.push_stdout(b"\n", 4).unwrap();
    }
    let sent = written(&mut connection);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "session/cancel");
    let (_, body, ends) = drain_turn(&mut connection, turn);
    assert_eq!(ends, 1);
    assert!(String::from_utf8_lossy(&body).contains("too slowly"));
}

#[test]
fn a_cancel_never_answered_gives_the_slot_up_and_all_slots_stuck_restart() {
    let config = AcpConfig {
        pool_size: 0,
        max_concurrent_prompts: 1,
        cancel_timeout_ms: 50,
        permission: PermissionChoice::RejectOnce,
        ..AcpConfig::default()
    };
    let (mut connection, turn) = prompting(config);
    connection.client_gone(turn, 10);
    assert_eq!(written(&mut connection)[0]["method"], "session/cancel");
    connection
        .push_stdout(br#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","options":[{"optionId":"r","kind":"reject_once"}]}}"#, 11)
        .unwrap();
    connection.push_stdout(b"\n", 11).unwrap();
    assert_eq!(
        written(&mut connection)[0]["result"]["outcome"]["outcome"],
        "cancelled"
    );
    connection.handle_timeout(60);
    assert!(matches!(
        connection.poll_decision(),
        Some(Decision::Restart { .. })
    ));
    assert!(connection.is_dead());
}

#[test]
fn an_unanswered_initialize_fails_queued_turns_and_restarts() {
    let mut connection = Connection::new(AcpConfig::default(), 0);
    let _ = connection.poll_transmit();
    let request = acp_replay::request(Dialect::Messages, "auto");
    let turn = connection.start_turn(Dialect::Messages, &request, &Config::default(), params(1));
    let due = connection.poll_timeout().unwrap();
    assert_eq!(due, 10_000);
    connection.handle_timeout(due);
    let (status, _, ends) = drain_turn(&mut connection, turn);
    assert_eq!((status, ends), (Some(504), 1));
    assert!(matches!(
        connection.poll_decision(),
        Some(Decision::Restart { .. })
    ));
}

#[test]
fn the_bridges_idle_timeout_cancels_the_session_and_fails_in_band() {
    let (mut connection, turn) = prompting(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    let idle = Config::default().idle_timeout_ms;
    let mut now = 3;
    // Keep-alive and head deadlines come first; the idle timeout ends it.
    while let Some(due) = connection.poll_timeout() {
        assert!(due <= 2 + idle, "no deadline past the idle timeout");
        now = due;
        connection.handle_timeout(due);
        if !written(&mut connection).is_empty() {
            break;
        }
    }
    assert_eq!(now, 2 + idle, "the turn started at 2");
    let (status, body, ends) = drain_turn(&mut connection, turn);
    assert_eq!(ends, 1);
    assert_eq!(status, Some(200), "the head went out at its deadline");
    assert!(String::from_utf8_lossy(&body).contains("no output"));
}

#[test]
fn shutdown_ends_every_turn_retryable_and_cancels_its_prompt() {
    let (mut connection, turn) = prompting(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    connection.shutdown(5);
    assert_eq!(written(&mut connection)[0]["method"], "session/cancel");
    let (status, _, ends) = drain_turn(&mut connection, turn);
    assert_eq!((status, ends), (Some(503), 1));
}

#[test]
fn a_non_streaming_answer_is_one_body_with_the_agents_usage() {
    let mut connection = ready(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    let body = json!({"model": "default", "messages": [{"role": "user", "content": "hi"}]});
    let turn = connection.start_turn(
        Dialect::ChatCompletions,
        &serde_json::to_vec(&body).unwrap(),
        &Config::default(),
        params(2),
    );
    written(&mut connection);
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Thinking."}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello."}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"usage_update","used":null,"size":1,"cost":{"amount":0.25,"currency":"USD"}}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"max_tokens","usage":{"inputTokens":3,"outputTokens":4,"cachedReadTokens":5,"cachedWriteTokens":6,"totalTokens":18}}}"#,
    ];
    for line in lines {
        connection.push_stdout(line.as_bytes(), 3).unwrap();
        connection.push_stdout(b"\n", 3).unwrap();
    }
    let (status, body, ends) = drain_turn(&mut connection, turn);
    assert_eq!((status, ends), (Some(200), 1));
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Hello.");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["usage"]["prompt_tokens"], 14);
    assert_eq!(body["usage"]["completion_tokens"], 4);
}

#[test]
fn an_agent_that_cancels_by_itself_fails_the_turn() {
    let (mut connection, turn) = prompting(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    connection
        .push_stdout(
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"cancelled\"}}\n",
            4,
        )
        .unwrap();
    let (status, body, ends) = drain_turn(&mut connection, turn);
    assert_eq!((status, ends), (Some(502), 1));
    assert!(String::from_utf8_lossy(&body).contains("cancelled"));
    assert!(
        written(&mut connection).is_empty(),
        "nothing left to cancel"
    );
}

#[test]
fn the_agents_models_are_known_from_its_first_session() {
    let mut connection = ready(AcpConfig::default());
    assert_eq!(connection.models(), None, "no session yet");
    assert_eq!(written(&mut connection)[0]["method"], "session/new");
    connection
        .push_stdout(
            br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","configOptions":[{"id":"model","category":"model","currentValue":"gpt-5.5","options":[{"value":"gpt-5.5"},{"value":"gpt-5.4"}]}]}}
"#,
            2,
        )
        .unwrap();
    assert_eq!(
        connection.models(),
        Some(&["gpt-5.5".to_string(), "gpt-5.4".to_string()][..])
    );
    assert_eq!(connection.current_model(), Some("gpt-5.5"));
}

#[test]
fn poll_ready_names_each_turn_with_output_once_per_input() {
    let mut connection = ready(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    assert_eq!(connection.poll_ready(), None);
    let request = acp_replay::request(Dialect::ChatCompletions, "auto");
    let turns: Vec<_> = (0..3)
        .map(|i| {
            connection.start_turn(
                Dialect::ChatCompletions,
                &request,
                &Config::default(),
                params(2 + i),
            )
        })
        .collect();
    assert!(turns.windows(2).all(|w| w[0].get() < w[1].get()));
    assert_eq!(connection.poll_ready(), None, "nothing to say yet");
    let _ = written(&mut connection);
    for (i, id) in [1, 2, 3].iter().enumerate() {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"s{i}"}}}}"#);
        connection
            .push_stdout(format!("{line}\n").as_bytes(), 5)
            .unwrap();
    }
    let _ = written(&mut connection);
    // The first and last sessions speak; the middle one does not.
    for session in ["s0", "s2"] {
        let update = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"hi"}}}}}}}}"#
        );
        connection
            .push_stdout(format!("{update}\n").as_bytes(), 6)
            .unwrap();
    }
    assert_eq!(connection.poll_ready(), Some(turns[0]));
    assert_eq!(
        connection.poll_ready(),
        Some(turns[2]),
        "the idle turn is skipped"
    );
    assert_eq!(
        connection.poll_ready(),
        None,
        "each once, even left undrained"
    );
    let (status, body, _) = drain_turn(&mut connection, turns[2]);
    assert_eq!(status, Some(200));
    assert!(!body.is_empty());
    connection.handle_timeout(7);
    assert_eq!(
        connection.poll_ready(),
        Some(turns[0]),
        "undrained: named after the next input"
    );
    assert_eq!(connection.poll_ready(), None);
}

#[test]
fn an_agent_offering_session_close_is_told_to_close_each_finished_session() {
    for offered in [true, false] {
        let capabilities = if offered {
            r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"close":{}}}}"#
        } else {
            r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"close":null}}}"#
        };
        let config = AcpConfig {
            pool_size: 0,
            ..AcpConfig::default()
        };
        let (mut connection, turn) = prompting_on(ready_with(config, capabilities));
        let sent = written(&mut connection);
        assert!(
            sent.iter().all(|m| m["method"] != "session/close"),
            "not while the prompt runs"
        );
        connection
            .push_stdout(
                b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"end_turn\"}}\n",
                4,
            )
            .unwrap();
        let (status, _, ends) = drain_turn(&mut connection, turn);
        assert_eq!((status, ends), (Some(200), 1));
        let sent = written(&mut connection);
        let closes: Vec<_> = sent
            .iter()
            .filter(|m| m["method"] == "session/close")
            .collect();
        if offered {
            assert_eq!(closes.len(), 1, "{sent:?}");
            assert_eq!(closes[0]["params"]["sessionId"], "s1");
            assert_eq!(connection.sessions_closed(), 1);
            // Its answer (an error too) changes nothing, and no deadline is left behind.
            let id = closes[0]["id"].as_u64().unwrap();
            let answer = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32603,\"message\":\"gone\"}}}}\n"
            );
            connection.push_stdout(answer.as_bytes(), 5).unwrap();
            assert!(connection.is_ready());
            assert_eq!(connection.poll_timeout(), None);
        } else {
            assert!(closes.is_empty(), "{sent:?}");
            assert_eq!(connection.sessions_closed(), 0);
        }
    }
}

#[test]
fn a_turn_whose_client_left_is_forgotten_without_being_polled() {
    let (mut connection, turn) = prompting(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    connection
        .push_stdout(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}
"#, 4)
        .unwrap();
    assert_eq!(connection.active_turns(), 1);
    connection.client_gone(turn, 5);
    assert_eq!(connection.active_turns(), 0, "its client is gone");
    assert_eq!(written(&mut connection)[0]["method"], "session/cancel");
    assert!(
        format!("{connection:?}").contains("turns: 1"),
        "the session still runs"
    );
    connection
        .push_stdout(
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"cancelled\"}}\n",
            6,
        )
        .unwrap();
    assert!(
        format!("{connection:?}").contains("turns: 0"),
        "forgotten once the agent is done, though never polled: {connection:?}"
    );
}

#[test]
fn a_client_gone_while_the_model_is_set_is_never_prompted() {
    let mut connection = ready(AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    });
    let request = acp_replay::request(Dialect::ChatCompletions, "gpt-5.4");
    let turn = connection.start_turn(
        Dialect::ChatCompletions,
        &request,
        &Config::default(),
        params(2),
    );
    assert_eq!(written(&mut connection)[0]["method"], "session/new");
    connection
        .push_stdout(
            br#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","configOptions":[{"id":"model","category":"model","currentValue":"gpt-5.5","options":[{"value":"gpt-5.5"},{"value":"gpt-5.4"}]}]}}
"#,
            3,
        )
        .unwrap();
    assert_eq!(
        written(&mut connection)[0]["method"],
        "session/set_config_option"
    );
    connection.client_gone(turn, 4);
    connection
        .push_stdout(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n", 5)
        .unwrap();
    let sent = written(&mut connection);
    assert!(
        sent.iter().all(|m| m["method"] != "session/prompt"),
        "{sent:?}"
    );
    assert!(
        format!("{connection:?}").contains("turns: 0"),
        "{connection:?}"
    );
}

#[test]
fn an_agent_ending_the_turn_over_a_refused_permission_says_so() {
    let (mut connection, turn) = prompting(AcpConfig {
        pool_size: 0,
        permission: PermissionChoice::RejectOnce,
        ..AcpConfig::default()
    });
    // codex-acp's shape: a string id, then the turn ended `cancelled`.
    connection
        .push_stdout(br#"{"jsonrpc":"2.0","id":"5b0c","method":"session/request_permission","params":{"sessionId":"s1","options":[{"optionId":"approved","kind":"allow_once"},{"optionId":"abort","kind":"reject_once"}]}}
"#, 4)
        .unwrap();
    let answer = written(&mut connection);
    assert_eq!(answer[0]["id"], "5b0c");
    assert_eq!(answer[0]["result"]["outcome"]["optionId"], "abort");
    connection
        .push_stdout(
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"stopReason\":\"cancelled\"}}\n",
            5,
        )
        .unwrap();
    let (status, body, ends) = drain_turn(&mut connection, turn);
    assert_eq!((status, ends), (Some(502), 1));
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("permission") && body.contains("reject_once"),
        "{body}"
    );
}

#[test]
fn a_program_that_cannot_start_is_a_misconfiguration_with_the_install_hint() {
    for code in [126, 127] {
        let mut connection = Connection::new(AcpConfig::default(), 0);
        let request = acp_replay::request(Dialect::ChatCompletions, "auto");
        let turn = connection.start_turn(
            Dialect::ChatCompletions,
            &request,
            &Config::default(),
            params(1),
        );
        connection
            .push_stderr(b"could not start gemini: No such file or directory\n", 2)
            .unwrap();
        connection
            .agent_exited(agentwire::cursor::ExitStatus::Code(code), 3)
            .unwrap();
        let (status, body, ends) = drain_turn(&mut connection, turn);
        assert_eq!((status, ends), (Some(500), 1), "exit {code}");
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("cursor.com/install"), "{body}");
        assert!(body.contains("could not start gemini"), "{body}");
        assert!(body.contains("agent_misconfigured"), "{body}");
    }
    // Once the agent answered `initialize`, 127 is an exit like any other.
    let mut connection = ready(AcpConfig::default());
    let request = acp_replay::request(Dialect::ChatCompletions, "auto");
    let turn = connection.start_turn(
        Dialect::ChatCompletions,
        &request,
        &Config::default(),
        params(2),
    );
    connection
        .agent_exited(agentwire::cursor::ExitStatus::Code(127), 3)
        .unwrap();
    let (status, _, _) = drain_turn(&mut connection, turn);
    assert_eq!(status, Some(502));
}

#[test]
fn a_turn_on_a_dead_connection_fails_without_stopping_an_agent() {
    let mut connection = Connection::new(AcpConfig::default(), 0);
    connection
        .agent_exited(agentwire::cursor::ExitStatus::Code(1), 1)
        .unwrap();
    let request = acp_replay::request(Dialect::ChatCompletions, "auto");
    let turn = connection.start_turn(
        Dialect::ChatCompletions,
        &request,
        &Config::default(),
        params(2),
    );
    let mut outputs = Vec::new();
    while let Some(output) = connection.poll_output(turn) {
        outputs.push(match output {
            Output::Head(head) => format!("head {}", head.status),
            Output::Body(_) => "body".into(),
            Output::StopAgent => "stop".into(),
            Output::Respawn => "respawn".into(),
            Output::End => "end".into(),
        });
    }
    assert_eq!(outputs, ["head 503", "body", "end"]);
}
