//! A cursor-agent chat kept live across requests (`live_chat::LiveChat`): the client's
//! tools reach the agent as MCP tools, a call ends the response with the client's tool
//! call while the agent waits inside it, and the next request's result answers the call
//! so that the same process goes on into that request's response. Also: the agent's own
//! record of the call kept out of the answer, a call answered with a note before
//! cursor-agent's limit (the chat then resumed with `--resume`), the agent gone while
//! suspended, a resumed chat the agent does not know replaced by a fresh run, and the
//! MCP endpoint's bearer check.

use agentwire::bridge::{BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;
use agentwire::live_chat::{LiveChat, LiveConfig, McpDenied, cli_json, mcp_json};
use agentwire::mcp::{ExchangeId, ExchangeOutput, HttpRequest};
use agentwire::registry::{Decision, Owner, Registry, RegistryConfig};
use serde_json::{Value, json};

const CHAT: &str = "5a0c7e1d-bbbb-4ccc-8ddd-0123456789ab";

fn params(seed: u64, now: u64) -> BridgeParams {
    BridgeParams {
        now_ms: now,
        created_unix: 1_800_000_000,
        id_seed: seed,
    }
}

fn tools() -> Value {
    json!([{"type":"function","function":{"name":"bash","description":"Run a shell command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}])
}

fn chat_body(messages: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({"model":"auto","messages":messages,"tools":tools()})).unwrap()
}

fn init(chat: &str) -> String {
    json!({"type":"system","subtype":"init","session_id":chat,"model":"Auto"}).to_string()
}

fn text(chat: &str, text: &str) -> String {
    json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":text}]},"session_id":chat}).to_string()
}

/// cursor-agent's own record of a call of an MCP server's tool.
fn own_call(chat: &str, id: &str, server: &str, subtype: &str) -> String {
    let args = json!({"name":format!("{server}-bash"),"args":{"command":"ls"},"toolCallId":id,"providerIdentifier":server,"toolName":"bash","serverIdentifier":server});
    let mut call = json!({"mcpToolCall":{"args":args}});
    if subtype == "completed" {
        call["mcpToolCall"]["result"] =
            json!({"success":{"content":[{"text":{"text":"a.txt"}}],"isError":false}});
    }
    json!({"type":"tool_call","subtype":subtype,"call_id":id,"tool_call":call,"session_id":chat})
        .to_string()
}

fn result(chat: &str, text: &str) -> String {
    json!({"type":"result","subtype":"success","is_error":false,"result":text,"session_id":chat,"usage":{"inputTokens":3,"outputTokens":2}}).to_string()
}

/// What the adapter saw of the chat's responses and decisions.
#[derive(Debug, Default)]
struct Seen {
    status: u16,
    body: Vec<u8>,
    stops: usize,
    respawns: usize,
    ended: bool,
}

fn drain(chat: &mut LiveChat, seen: &mut Seen) {
    while let Some(output) = chat.poll_output() {
        match output {
            Output::Head(head) => seen.status = head.status,
            Output::Body(bytes) => seen.body.extend_from_slice(bytes),
            Output::StopAgent => seen.stops += 1,
            Output::Respawn => seen.respawns += 1,
            Output::End => seen.ended = true,
        }
    }
}

/// Pushes `lines` whole or a byte at a time.
fn push(chat: &mut LiveChat, seen: &mut Seen, lines: &[String], bytewise: bool, now: u64) {
    for line in lines {
        let bytes = format!("{line}\n").into_bytes();
        if bytewise {
            for byte in bytes.chunks(1) {
                chat.push_stdout(byte, now).unwrap();
            }
        } else {
            chat.push_stdout(&bytes, now).unwrap();
        }
        drain(chat, seen);
    }
}

/// One MCP exchange: its status, body and `Mcp-Session-Id`, as far as it has gone.
struct Exchange {
    id: ExchangeId,
    status: u16,
    body: Vec<u8>,
    session: Option<String>,
    ended: bool,
}

fn poll_exchange(chat: &mut LiveChat, exchange: &mut Exchange) {
    while let Some(output) = chat.poll_mcp_output(exchange.id) {
        match output {
            ExchangeOutput::Head(head) => {
                exchange.status = head.status;
                exchange.session = head.session_id.map(str::to_owned);
            }
            ExchangeOutput::Body(bytes) => exchange.body.extend_from_slice(bytes),
            ExchangeOutput::End => exchange.ended = true,
        }
    }
}

fn mcp(
    chat: &mut LiveChat,
    bearer: &str,
    session: Option<&str>,
    message: Value,
    now: u64,
) -> Result<Exchange, McpDenied> {
    let body = message.to_string();
    let authorization = format!("Bearer {bearer}");
    let request = HttpRequest {
        method: "POST",
        accept: Some("application/json, text/event-stream"),
        content_type: Some("application/json"),
        session_id: session,
        protocol_version: None,
        body: body.as_bytes(),
    };
    let id = chat.handle_mcp(Some(authorization.as_bytes()), &request, now)?;
    let mut exchange = Exchange {
        id,
        status: 0,
        body: Vec::new(),
        session: None,
        ended: false,
    };
    poll_exchange(chat, &mut exchange);
    Ok(exchange)
}

/// The agent's MCP session: `initialize`, `notifications/initialized`, `tools/list`; the
/// session id.
fn connect(chat: &mut LiveChat, bearer: &str, now: u64) -> String {
    let init = mcp(
        chat,
        bearer,
        None,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cursor","version":"1"}}}),
        now,
    )
    .unwrap();
    assert_eq!(init.status, 200);
    let session = init.session.expect("a session id");
    let initialized = mcp(
        chat,
        bearer,
        Some(&session),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        now,
    )
    .unwrap();
    assert_eq!(initialized.status, 202);
    let list = mcp(
        chat,
        bearer,
        Some(&session),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        now,
    )
    .unwrap();
    let listed = String::from_utf8(list.body).unwrap();
    assert!(listed.contains("\"bash\""), "{listed}");
    session
}

fn call(chat: &mut LiveChat, bearer: &str, session: &str, id: u64, now: u64) -> Exchange {
    mcp(
        chat,
        bearer,
        Some(session),
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"bash","arguments":{"command":"ls"}}}),
        now,
    )
    .unwrap()
}

fn start(registry: &mut Registry, messages: &[Value], now: u64) -> LiveChat {
    let config = Config::default();
    let body = chat_body(messages);
    let prepared = Dialect::ChatCompletions
        .prepare(&body, &config, &params(now, now))
        .unwrap();
    let decision = registry.decide(Owner::LOCAL, &Default::default(), &prepared.request, now);
    LiveChat::start(
        Dialect::ChatCompletions,
        prepared,
        decision,
        &config,
        &LiveConfig::default(),
        params(now, now),
        [7; 32],
    )
}

fn first_messages() -> Vec<Value> {
    vec![
        json!({"role":"system","content":"You are a careful coding agent."}),
        json!({"role":"user","content":"List the files."}),
    ]
}

/// A fresh request whose agent calls the client's `bash` through the MCP server: the
/// response ends with the client's call, the agent suspended inside it.
fn suspended(registry: &mut Registry, bytewise: bool) -> (LiveChat, Seen, String, Exchange) {
    let mut chat = start(registry, &first_messages(), 0);
    let invocation = chat.invocation().unwrap().clone();
    assert!(invocation.args.iter().any(|a| a == "--approve-mcps"));
    assert!(invocation.args.windows(2).any(|w| w == ["--mode", "ask"]));
    let bearer = chat.bearer();
    assert_eq!(
        invocation.env,
        [("AGENTWIRE_MCP_TOKEN".to_owned(), bearer.clone())]
    );
    let prompt = String::from_utf8(invocation.stdin).unwrap();
    assert!(prompt.contains("List the files."));
    assert!(
        !prompt.contains("Run a shell command."),
        "the tools reach the agent as MCP tools, not in the prompt: {prompt}"
    );
    let mut seen = Seen::default();
    push(
        &mut chat,
        &mut seen,
        &[init(CHAT), text(CHAT, "Listing.")],
        bytewise,
        1,
    );
    let session = connect(&mut chat, &bearer, 2);
    push(
        &mut chat,
        &mut seen,
        &[own_call(CHAT, "mcp-1", "agentwire", "started")],
        bytewise,
        3,
    );
    assert!(seen.body.is_empty(), "nothing to say of it");
    let mut held = call(&mut chat, &bearer, &session, 2, 3);
    assert_eq!(held.status, 200, "the call is held in an SSE answer");
    assert!(!held.ended);
    // The batch window closes.
    let due = chat.poll_timeout().unwrap();
    chat.handle_timeout(due);
    drain(&mut chat, &mut seen);
    poll_exchange(&mut chat, &mut held);
    assert!(seen.ended, "the response ended with the client's call");
    assert_eq!(seen.stops, 0, "the agent is not stopped");
    assert!(chat.is_suspended());
    assert!(!held.ended, "the agent still waits inside the call");
    (chat, seen, bearer, held)
}

/// The client's call in a (non-streaming) Chat Completions answer.
fn client_call(seen: &Seen) -> Value {
    let body: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls", "{body}");
    body["choices"][0]["message"].clone()
}

#[test]
fn a_call_suspends_the_agent_and_the_next_request_goes_on_in_the_same_process() {
    for bytewise in [false, true] {
        let mut registry = Registry::new(RegistryConfig::default());
        let (mut chat, seen, _bearer, mut held) = suspended(&mut registry, bytewise);
        let message = client_call(&seen);
        let calls = message["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0]["function"]["name"], "bash");
        let arguments: Value =
            serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({"command":"ls"}));
        assert_eq!(
            message["content"], "Listing.",
            "the agent's own record is not text"
        );
        assert_eq!(
            message.get("reasoning_content"),
            None,
            "nor is it the agent's activity: {message}"
        );
        assert!(chat.end_conversation_turn(&mut registry, 4), "parked");

        // The next request: the result of the call.
        let mut messages = first_messages();
        messages.push(message.clone());
        messages
            .push(json!({"role":"tool","tool_call_id":calls[0]["id"],"content":"a.txt\nb.txt"}));
        let config = Config::default();
        let body = chat_body(&messages);
        let prepared = Dialect::ChatCompletions
            .prepare(&body, &config, &params(9, 5))
            .unwrap();
        let decision = registry.decide(Owner::LOCAL, &Default::default(), &prepared.request, 5);
        assert!(
            matches!(&decision, Decision::Resume { resume, .. } if resume.agent_session == CHAT)
        );
        chat.attach(
            Dialect::ChatCompletions,
            prepared,
            decision,
            &config,
            params(9, 5),
        )
        .unwrap();
        assert!(!chat.is_suspended());
        // The call is answered with the client's result.
        poll_exchange(&mut chat, &mut held);
        assert!(held.ended);
        let answer = String::from_utf8(held.body.clone()).unwrap();
        assert!(answer.contains("a.txt\\nb.txt"), "{answer}");
        // The agent goes on into the new response.
        let mut next = Seen::default();
        push(
            &mut chat,
            &mut next,
            &[
                own_call(CHAT, "mcp-1", "agentwire", "completed"),
                text(CHAT, "Two files: a.txt and b.txt."),
                result(CHAT, "Two files: a.txt and b.txt."),
            ],
            bytewise,
            6,
        );
        assert!(next.ended);
        assert_eq!(next.status, 200);
        let body: Value = serde_json::from_slice(&next.body).unwrap();
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            "Two files: a.txt and b.txt."
        );
        assert_eq!(next.stops, 0, "a finished agent exits by itself");
        assert!(chat.end_conversation_turn(&mut registry, 7));
        chat.agent_exited(ExitStatus::Code(0), 8).unwrap();
        drain(&mut chat, &mut next);
        assert_eq!((next.stops, next.respawns), (0, 0));
    }
}

#[test]
fn a_call_near_cursor_agents_limit_is_answered_with_a_note_and_the_chat_resumed_later() {
    let mut registry = Registry::new(RegistryConfig::default());
    let (mut chat, seen, _bearer, mut held) = suspended(&mut registry, false);
    let message = client_call(&seen);
    assert!(chat.end_conversation_turn(&mut registry, 4));
    // Nothing comes for 50 s: the call is answered before cursor-agent's 60 s.
    let mut now = 4;
    while !held.ended {
        let due = chat
            .poll_timeout()
            .expect("a deadline while the call waits");
        assert!(due <= 60_000, "answered before the agent's limit ({due})");
        now = due;
        chat.handle_timeout(now);
        poll_exchange(&mut chat, &mut held);
    }
    let note = String::from_utf8(held.body.clone()).unwrap();
    assert!(note.contains("still running on the user's side"), "{note}");
    assert!(now >= 40_000, "kept waiting as long as it may ({now})");
    assert!(!chat.is_suspended(), "the process cannot take the result");
    // The result comes: this process hands the request back; the chat is resumed.
    let mut messages = first_messages();
    let id = message["tool_calls"][0]["id"].clone();
    messages.push(message);
    messages.push(json!({"role":"tool","tool_call_id":id,"content":"a.txt"}));
    let config = Config::default();
    let body = chat_body(&messages);
    let prepared = Dialect::ChatCompletions
        .prepare(&body, &config, &params(9, now))
        .unwrap();
    let decision = registry.decide(Owner::LOCAL, &Default::default(), &prepared.request, now);
    let back = chat
        .attach(
            Dialect::ChatCompletions,
            prepared,
            decision,
            &config,
            params(9, now),
        )
        .unwrap_err();
    let resumed = LiveChat::start(
        Dialect::ChatCompletions,
        back.prepared,
        back.decision,
        &config,
        &LiveConfig::default(),
        params(9, now),
        [8; 32],
    );
    let invocation = resumed.invocation().unwrap();
    assert!(invocation.args.windows(2).any(|w| w == ["--resume", CHAT]));
    let prompt = String::from_utf8(invocation.stdin.clone()).unwrap();
    assert!(
        prompt.contains("a.txt") && !prompt.contains("List the files."),
        "{prompt}"
    );
}

#[test]
fn an_agent_gone_while_suspended_leaves_the_chat_to_resume() {
    let mut registry = Registry::new(RegistryConfig::default());
    let (mut chat, seen, _bearer, mut held) = suspended(&mut registry, false);
    assert!(chat.end_conversation_turn(&mut registry, 4));
    chat.agent_exited(ExitStatus::Signal(9), 5).unwrap();
    poll_exchange(&mut chat, &mut held);
    assert!(held.ended, "the held call ends with its server");
    assert!(!chat.is_suspended());
    let mut after = Seen::default();
    drain(&mut chat, &mut after);
    assert!(
        after.body.is_empty() && !after.ended,
        "nothing more for the old response"
    );
    // The chat is still the conversation's: the next request resumes it.
    let message = client_call(&seen);
    let mut messages = first_messages();
    let id = message["tool_calls"][0]["id"].clone();
    messages.push(message);
    messages.push(json!({"role":"tool","tool_call_id":id,"content":"a.txt"}));
    let config = Config::default();
    let body = chat_body(&messages);
    let prepared = Dialect::ChatCompletions
        .prepare(&body, &config, &params(9, 6))
        .unwrap();
    let decision = registry.decide(Owner::LOCAL, &Default::default(), &prepared.request, 6);
    assert!(matches!(decision, Decision::Resume { .. }));
    assert!(
        chat.attach(
            Dialect::ChatCompletions,
            prepared,
            decision,
            &config,
            params(9, 6)
        )
        .is_err()
    );
}

#[test]
fn a_resumed_chat_the_agent_does_not_know_is_replaced_by_a_fresh_run() {
    let mut registry = Registry::new(RegistryConfig::default());
    // A first answer parks the chat.
    let mut chat = start(&mut registry, &first_messages(), 0);
    let mut seen = Seen::default();
    push(
        &mut chat,
        &mut seen,
        &[
            init(CHAT),
            text(CHAT, "Nothing to list."),
            result(CHAT, "Nothing to list."),
        ],
        false,
        1,
    );
    assert!(seen.ended);
    assert!(chat.end_conversation_turn(&mut registry, 2));
    chat.agent_exited(ExitStatus::Code(0), 2).unwrap();
    // A follow-up: `--resume`, but the agent starts another chat.
    let mut messages = first_messages();
    messages.push(json!({"role":"assistant","content":"Nothing to list."}));
    messages.push(json!({"role":"user","content":"Look again."}));
    let mut chat = start(&mut registry, &messages, 3);
    let args = chat.invocation().unwrap().args.clone();
    assert!(args.windows(2).any(|w| w == ["--resume", CHAT]));
    let mut seen = Seen::default();
    push(&mut chat, &mut seen, &[init("another-chat")], false, 4);
    assert_eq!(seen.stops, 1, "the run is given up");
    chat.agent_exited(ExitStatus::Signal(15), 5).unwrap();
    drain(&mut chat, &mut seen);
    assert_eq!(seen.respawns, 1);
    let invocation = chat.invocation().unwrap();
    assert!(!invocation.args.iter().any(|a| a == "--resume"));
    assert!(invocation.args.iter().any(|a| a == "--approve-mcps"));
    let prompt = String::from_utf8(invocation.stdin.clone()).unwrap();
    assert!(prompt.contains("List the files.") && prompt.contains("Look again."));
    push(
        &mut chat,
        &mut seen,
        &[
            init(CHAT),
            text(CHAT, "Found one."),
            result(CHAT, "Found one."),
        ],
        false,
        6,
    );
    assert!(seen.ended && seen.status == 200);
    let body: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Found one.");
}

#[test]
fn a_call_of_another_mcp_server_is_the_agents_own_activity() {
    let mut registry = Registry::new(RegistryConfig::default());
    let mut chat = start(&mut registry, &first_messages(), 0);
    let mut seen = Seen::default();
    push(
        &mut chat,
        &mut seen,
        &[
            init(CHAT),
            own_call(CHAT, "mcp-9", "docs", "started"),
            own_call(CHAT, "mcp-9", "docs", "completed"),
            text(CHAT, "Read the docs."),
            result(CHAT, "Read the docs."),
        ],
        false,
        1,
    );
    let body: Value = serde_json::from_slice(&seen.body).unwrap();
    let reasoning = body["choices"][0]["message"]["reasoning_content"]
        .as_str()
        .unwrap_or_default();
    assert!(reasoning.contains("bash"), "reported as activity: {body}");
}

#[test]
fn the_mcp_endpoint_takes_only_this_chats_bearer() {
    let mut registry = Registry::new(RegistryConfig::default());
    let mut chat = start(&mut registry, &first_messages(), 0);
    let bearer = chat.bearer();
    assert!(bearer.starts_with(chat.token()));
    let (token, secret) = bearer.split_once('.').unwrap();
    let forged = [
        format!("{token}.{}", "0".repeat(secret.len())),
        format!("{token}{secret}"),
        secret.to_owned(),
        String::new(),
    ];
    for wrong in forged {
        let ping = json!({"jsonrpc":"2.0","id":0,"method":"ping"});
        assert!(matches!(
            mcp(&mut chat, &wrong, None, ping, 1),
            Err(McpDenied::Unauthorized)
        ));
    }
    connect(&mut chat, &bearer, 1);
}

#[test]
fn the_configuration_files_name_the_server_and_allow_its_calls() {
    let config = LiveConfig::default();
    let mcp: Value =
        serde_json::from_str(&mcp_json("http://127.0.0.1:8080/mcp/cursor", &config)).unwrap();
    assert_eq!(
        mcp,
        json!({"mcpServers":{"agentwire":{"url":"http://127.0.0.1:8080/mcp/cursor","headers":{"Authorization":"Bearer ${env:AGENTWIRE_MCP_TOKEN}"}}}})
    );
    let cli: Value = serde_json::from_str(&cli_json(&config)).unwrap();
    assert_eq!(cli["permissions"]["allow"], json!(["Mcp(agentwire:*)"]));
}
