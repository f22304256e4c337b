//! Conversations over cursor-agent's stream-json path: a bridge made with
//! `Bridge::in_conversation` resumes the chat that answered the conversation so far
//! (`--resume`, a prompt holding only what is new), and gives a chat the agent cannot
//! continue to a fresh run, invisibly.

use agentwire::bridge::{Bridge, BridgeParams, Caller, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use agentwire::registry::{Registry, RegistryConfig};
use serde_json::{Value, json};

fn params(seed: u64, now: u64) -> BridgeParams {
    BridgeParams {
        now_ms: now,
        created_unix: 1_800_000_000,
        id_seed: seed,
    }
}

/// What the adapter saw of one response.
#[derive(Debug, Default)]
struct Seen {
    status: u16,
    body: Vec<u8>,
    stops: usize,
    respawns: usize,
    ended: bool,
}

fn drain(bridge: &mut Bridge, seen: &mut Seen) {
    while let Some(output) = bridge.poll_output() {
        match output {
            Output::Head(head) => seen.status = head.status,
            Output::Body(bytes) => seen.body.extend_from_slice(bytes),
            Output::StopAgent => seen.stops += 1,
            Output::Respawn => seen.respawns += 1,
            Output::End => seen.ended = true,
        }
    }
}

/// One agent run: its stdout lines, then its exit (a signal when the bridge stopped it).
fn run(bridge: &mut Bridge, seen: &mut Seen, lines: &[String], now: u64) {
    let stops_before = seen.stops;
    for line in lines {
        if bridge.is_ended() || seen.stops > stops_before {
            break;
        }
        bridge
            .push_stdout(format!("{line}\n").as_bytes(), now)
            .unwrap();
        drain(bridge, seen);
    }
    let status = if seen.stops > stops_before {
        ExitStatus::Signal(15)
    } else {
        ExitStatus::Code(0)
    };
    bridge.agent_exited(status, now).unwrap();
    drain(bridge, seen);
}

fn init(chat: &str) -> String {
    json!({"type":"system","subtype":"init","session_id":chat,"model":"Auto"}).to_string()
}

fn text(chat: &str, text: &str) -> String {
    json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":text}]},"session_id":chat}).to_string()
}

fn shell(chat: &str, id: &str, command: &str) -> String {
    json!({"type":"tool_call","subtype":"started","call_id":id,"tool_call":{"shellToolCall":{"args":{"command":command}}},"model_call_id":format!("m-{id}"),"session_id":chat}).to_string()
}

fn result(chat: &str, text: &str) -> String {
    json!({"type":"result","subtype":"success","is_error":false,"result":text,"session_id":chat,"usage":{"inputTokens":3,"outputTokens":2}}).to_string()
}

fn tools() -> Value {
    json!([{"type":"function","function":{"name":"bash","description":"Run a shell command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}])
}

/// The assistant message a Chat Completions client echoes from a non-streaming response.
fn echo(seen: &Seen) -> Value {
    let body: Value = serde_json::from_slice(&seen.body).expect("a JSON body");
    body["choices"][0]["message"].clone()
}

fn chat_body(messages: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({"model":"auto","messages":messages,"tools":tools()})).unwrap()
}

fn prompt(bridge: &Bridge) -> String {
    String::from_utf8(bridge.invocation().unwrap().stdin.clone()).unwrap()
}

fn resumes(bridge: &Bridge) -> Option<String> {
    let args = &bridge.invocation().unwrap().args;
    args.iter()
        .position(|a| a == "--resume")
        .map(|at| args[at + 1].clone())
}

const CHAT: &str = "9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab";

/// A tool loop of `rounds` rounds through one registry; returns each request's prompt
/// size and whether it resumed. A resumed request's prompt is checked to hold only the
/// delta.
fn tool_loop(registry: &mut Registry, rounds: usize) -> Vec<(usize, bool)> {
    let config = Config::default();
    let mut messages = vec![
        json!({"role":"system","content":"You are a careful coding agent. ".repeat(40)}),
        json!({"role":"user","content":"Find the failing test and fix it."}),
    ];
    let mut sizes = Vec::new();
    for round in 0..rounds {
        let body = chat_body(&messages);
        let mut bridge = Bridge::in_conversation(
            Dialect::ChatCompletions,
            &body,
            &config,
            params(round as u64, round as u64 * 10),
            registry,
            Caller::default(),
        );
        sizes.push((prompt(&bridge).len(), resumes(&bridge).is_some()));
        if round > 0 && resumes(&bridge).is_some() {
            assert_eq!(
                resumes(&bridge).as_deref(),
                Some(CHAT),
                "round {round} resumes the chat"
            );
            let p = prompt(&bridge);
            assert!(
                !p.contains("Find the failing test"),
                "round {round}: only the delta: {p}"
            );
            assert!(
                p.contains(&format!("output of round {}", round - 1)),
                "round {round}: the results: {p}"
            );
        }
        let mut seen = Seen::default();
        let lines = [
            init(CHAT),
            text(CHAT, &format!("Round {round}: checking.")),
            shell(
                CHAT,
                &format!("agent-call-{round}"),
                &format!("cat file{round}"),
            ),
            text(CHAT, "never reached"),
        ];
        run(&mut bridge, &mut seen, &lines, round as u64 * 10 + 1);
        assert_eq!((seen.status, seen.ended, seen.respawns), (200, true, 0));
        bridge.end_conversation_turn(registry, round as u64 * 10 + 2);
        let answer = echo(&seen);
        let call_id = answer["tool_calls"][0]["id"].as_str().unwrap().to_owned();
        messages.push(answer);
        messages.push(json!({"role":"tool","tool_call_id":call_id,"content":format!("output of round {round}")}));
    }
    sizes
}

#[test]
fn a_tool_loop_resumes_one_chat_with_prompts_the_size_of_the_delta() {
    let mut registry = Registry::new(RegistryConfig::default());
    let sizes = tool_loop(&mut registry, 20);
    assert!(!sizes[0].1 && sizes[1..].iter().all(|(_, resumed)| *resumed));
    let first = sizes[0].0;
    let deltas: Vec<usize> = sizes[1..].iter().map(|(size, _)| *size).collect();
    let (min, max) = (deltas.iter().min().unwrap(), deltas.iter().max().unwrap());
    // Each round's prompt is its own delta: no growth with the conversation.
    assert!(max - min < 64, "delta prompts {deltas:?}");
    assert!(
        *max < first,
        "a delta ({max}) is smaller than the first full prompt ({first})"
    );
    assert_eq!(registry.stats().resumed, 19);
    // Without conversations every round renders the whole conversation.
    let mut off = Registry::new(RegistryConfig {
        enabled: false,
        ..RegistryConfig::default()
    });
    let (full, resumed): (Vec<usize>, Vec<bool>) = tool_loop(&mut off, 20).into_iter().unzip();
    assert!(resumed.iter().all(|r| !r), "nothing resumes");
    assert!(full[19] > full[1] + 18 * 40, "full renders grow: {full:?}");
}

/// A first answer parked on the chat; returns the next request's messages (the results).
fn first_round(registry: &mut Registry) -> Vec<Value> {
    let mut messages = vec![json!({"role":"user","content":"List the files."})];
    let body = chat_body(&messages);
    let mut bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(1, 0),
        registry,
        Caller::default(),
    );
    let mut seen = Seen::default();
    run(
        &mut bridge,
        &mut seen,
        &[init(CHAT), shell(CHAT, "a1", "ls"), text(CHAT, "x")],
        1,
    );
    bridge.end_conversation_turn(registry, 2);
    let answer = echo(&seen);
    let id = answer["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    messages.push(answer);
    messages.push(json!({"role":"tool","tool_call_id":id,"content":"a.txt"}));
    messages
}

#[test]
fn a_follow_up_turn_resumes_with_only_the_new_message() {
    let mut registry = Registry::new(RegistryConfig::default());
    let mut messages = first_round(&mut registry);
    let body = chat_body(&messages);
    let mut bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(2, 3),
        &mut registry,
        Caller::default(),
    );
    let mut seen = Seen::default();
    run(
        &mut bridge,
        &mut seen,
        &[
            init(CHAT),
            text(CHAT, "There is a.txt."),
            result(CHAT, "There is a.txt."),
        ],
        4,
    );
    bridge.end_conversation_turn(&mut registry, 5);
    messages.push(echo(&seen));
    messages.push(json!({"role":"user","content":"What is in it?"}));
    let body = chat_body(&messages);
    let bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(3, 6),
        &mut registry,
        Caller::default(),
    );
    assert_eq!(resumes(&bridge).as_deref(), Some(CHAT));
    let p = prompt(&bridge);
    assert!(
        p.contains("What is in it?")
            && !p.contains("There is a.txt")
            && !p.contains("List the files"),
        "{p}"
    );
}

#[test]
fn a_chat_the_agent_does_not_know_is_replaced_by_a_fresh_run_before_anything_is_sent() {
    let mut registry = Registry::new(RegistryConfig::default());
    let messages = first_round(&mut registry);
    let body = chat_body(&messages);
    let config = Config {
        head_deadline_ms: 1,
        ..Config::default()
    };
    let mut bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &config,
        params(2, 3),
        &mut registry,
        Caller::default(),
    );
    assert_eq!(resumes(&bridge).as_deref(), Some(CHAT));
    let mut seen = Seen::default();
    // cursor-agent started a new chat for an id it did not know.
    run(
        &mut bridge,
        &mut seen,
        &[
            init("11111111-2222-3333-4444-555555555555"),
            text("x", "I have no context."),
        ],
        4,
    );
    assert_eq!(
        (seen.stops, seen.respawns, seen.ended),
        (1, 1, false),
        "stopped, then replaced"
    );
    assert!(seen.body.is_empty(), "nothing reached the client");
    assert_eq!(resumes(&bridge), None);
    let p = prompt(&bridge);
    assert!(
        p.contains("List the files") && p.contains("a.txt"),
        "the whole conversation: {p}"
    );
    let fresh = "22222222-2222-3333-4444-555555555555";
    run(
        &mut bridge,
        &mut seen,
        &[
            init(fresh),
            text(fresh, "a.txt is there."),
            result(fresh, "a.txt is there."),
        ],
        5,
    );
    assert_eq!((seen.status, seen.ended, seen.respawns), (200, true, 1));
    let body: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "a.txt is there.");
    bridge.end_conversation_turn(&mut registry, 6);
    // The conversation now continues the fresh chat.
    let mut next = messages.clone();
    next.push(body["choices"][0]["message"].clone());
    next.push(json!({"role":"user","content":"thanks"}));
    let body = chat_body(&next);
    let bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(3, 7),
        &mut registry,
        Caller::default(),
    );
    assert_eq!(resumes(&bridge).as_deref(), Some(fresh));
}

#[test]
fn a_resume_that_fails_before_answering_is_retried_once_fresh() {
    let mut registry = Registry::new(RegistryConfig::default());
    let messages = first_round(&mut registry);
    let body = chat_body(&messages);
    let mut bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(2, 3),
        &mut registry,
        Caller::default(),
    );
    bridge.push_stderr(b"Error: chat not found\n", 4).unwrap();
    bridge.agent_exited(ExitStatus::Code(1), 4).unwrap();
    let mut seen = Seen::default();
    drain(&mut bridge, &mut seen);
    assert_eq!((seen.respawns, seen.stops, seen.ended), (1, 0, false));
    assert_eq!(resumes(&bridge), None);
    // The fresh run fails too: that failure is the client's answer (no second retry).
    bridge.push_stderr(b"Error: not logged in\n", 5).unwrap();
    bridge.agent_exited(ExitStatus::Code(1), 5).unwrap();
    drain(&mut bridge, &mut seen);
    assert_eq!((seen.respawns, seen.status, seen.ended), (1, 401, true));
    bridge.end_conversation_turn(&mut registry, 6);
    assert_eq!(registry.parked(), 0, "a failed answer parks nothing");
}

#[test]
fn a_resume_that_answered_is_never_retried() {
    let mut registry = Registry::new(RegistryConfig::default());
    let messages = first_round(&mut registry);
    let body = chat_body(&messages);
    let mut bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(2, 3),
        &mut registry,
        Caller::default(),
    );
    let mut seen = Seen::default();
    bridge
        .push_stdout(
            format!("{}\n{}\n", init(CHAT), text(CHAT, "Partial")).as_bytes(),
            4,
        )
        .unwrap();
    bridge.agent_exited(ExitStatus::Code(1), 5).unwrap();
    drain(&mut bridge, &mut seen);
    assert_eq!(seen.respawns, 0);
    assert!(seen.ended && seen.status >= 500);
}

#[test]
fn a_client_that_leaves_releases_the_chat() {
    let mut registry = Registry::new(RegistryConfig::default());
    let messages = first_round(&mut registry);
    assert_eq!(registry.parked(), 1);
    let body = chat_body(&messages);
    let mut bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(2, 3),
        &mut registry,
        Caller::default(),
    );
    bridge.client_gone(4);
    let mut seen = Seen::default();
    drain(&mut bridge, &mut seen);
    bridge.agent_exited(ExitStatus::Signal(15), 5).unwrap();
    bridge.end_conversation_turn(&mut registry, 6);
    assert_eq!((registry.parked(), registry.busy()), (0, 0));
    assert_eq!(
        registry.poll_released().map(|r| r.agent_session).as_deref(),
        Some(CHAT)
    );
    // The same request again is fresh, and correct.
    let bridge = Bridge::in_conversation(
        Dialect::ChatCompletions,
        &body,
        &Config::default(),
        params(3, 7),
        &mut registry,
        Caller::default(),
    );
    assert_eq!(resumes(&bridge), None);
    assert!(prompt(&bridge).contains("List the files"));
}

#[test]
fn previous_response_id_without_a_registry_is_refused_as_before() {
    let body = br#"{"model":"auto","input":"hi","previous_response_id":"resp_1"}"#;
    let mut bridge = Bridge::new(Dialect::Responses, body, &Config::default(), params(1, 0));
    assert!(bridge.invocation().is_none());
    let mut seen = Seen::default();
    drain(&mut bridge, &mut seen);
    assert_eq!(seen.status, 400);
    let error: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(error["error"]["param"], "previous_response_id");
}
