//! Conversations over a warm ACP agent, driven by a scripted agent: the client's tools
//! given to the agent as an MCP server of its session, a tool round that ends the HTTP
//! response while the agent stays inside its calls, the next request answering the calls
//! and streaming the continuation, follow-up turns prompted with only what is new, and
//! every way a parked session ends (client gone, expiry, shutdown, a busy session, a call
//! the agent would give up).

use agentwire::acp::{AcpConfig, Connection, McpExchange, McpRefusal, TurnId};
use agentwire::bridge::{BridgeParams, Caller, Config, Dialect, Output};
use agentwire::mcp::{ExchangeOutput, HttpRequest};
use agentwire::registry::RegistryConfig;
use serde_json::{Value, json};

const ENDPOINT: &str = "http://127.0.0.1:9999/mcp/";

fn params(seed: u64, now: u64) -> BridgeParams {
    BridgeParams {
        now_ms: now,
        created_unix: 1_800_000_000,
        id_seed: seed,
    }
}

/// A connection and what has been seen of it.
struct Harness {
    connection: Connection,
    /// Every message the core wrote to the agent, parsed.
    written: Vec<Value>,
    now: u64,
    seed: u8,
}

/// One client response.
#[derive(Debug, Default, Clone)]
struct Response {
    status: Option<u16>,
    body: Vec<u8>,
    ended: bool,
}

impl Response {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The Chat Completions stream's assistant message, as a client echoes it.
    fn echo(&self) -> Value {
        let mut content = String::new();
        let mut calls: Vec<Value> = Vec::new();
        for line in self.text().lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if data == "[DONE]" {
                continue;
            }
            let chunk: Value = serde_json::from_str(data).unwrap();
            let Some(delta) = chunk["choices"].get(0).map(|c| &c["delta"]) else {
                continue;
            };
            if let Some(text) = delta["content"].as_str() {
                content.push_str(text);
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap() as usize;
                if calls.len() <= index {
                    calls.push(json!({"id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}));
                }
                let args = call["function"]["arguments"].as_str().unwrap_or("");
                let so_far = calls[index]["function"]["arguments"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                calls[index]["function"]["arguments"] = json!(so_far + args);
            }
        }
        let mut message = json!({"role": "assistant", "content": content});
        if !calls.is_empty() {
            message["tool_calls"] = json!(calls);
        }
        message
    }

    fn finish_reason(&self) -> Option<String> {
        self.text()
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .find_map(|d| {
                let chunk: Value = serde_json::from_str(d).ok()?;
                chunk["choices"][0]["finish_reason"]
                    .as_str()
                    .map(str::to_owned)
            })
    }
}

fn tools() -> Value {
    json!([{"type":"function","function":{"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}])
}

fn chat(messages: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({"model":"auto","stream":true,"messages":messages,"tools":tools()}))
        .unwrap()
}

impl Harness {
    fn new(agent_name: &str, conversations: RegistryConfig) -> Harness {
        let config = AcpConfig {
            mcp_endpoint: Some(ENDPOINT.into()),
            pool_size: 0,
            conversations,
            ..AcpConfig::default()
        };
        let mut h = Harness {
            connection: Connection::new(config, 0),
            written: Vec::new(),
            now: 0,
            seed: 1,
        };
        let init = h.take_written();
        assert_eq!(init[0]["method"], "initialize");
        h.agent(&json!({"jsonrpc":"2.0","id":init[0]["id"],"result":{
            "protocolVersion":1,
            "agentCapabilities":{"mcpCapabilities":{"http":true,"sse":true},"sessionCapabilities":{"close":{}}},
            "agentInfo":{"name":agent_name,"version":"1"}}}));
        h
    }

    fn tick(&mut self, ms: u64) {
        self.now += ms;
        if self
            .connection
            .poll_timeout()
            .is_some_and(|due| self.now >= due)
        {
            self.connection.handle_timeout(self.now);
        }
    }

    /// A line from the agent.
    fn agent(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.connection.push_stdout(&line, self.now).unwrap();
    }

    /// Messages the core wrote since last asked.
    fn take_written(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(bytes) = self.connection.poll_transmit() {
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                out.push(serde_json::from_slice(line).unwrap());
            }
        }
        self.written.extend(out.iter().cloned());
        out
    }

    fn start(&mut self, body: &[u8], caller: Caller<'_>) -> TurnId {
        self.seed += 1;
        let entropy = [self.seed; 32];
        self.connection.start_conversation_turn(
            Dialect::ChatCompletions,
            body,
            &Config::default(),
            params(self.seed as u64, self.now),
            caller,
            entropy,
        )
    }

    fn drain(&mut self, turn: TurnId, response: &mut Response) {
        while let Some(output) = self.connection.poll_output(turn) {
            match output {
                Output::Head(head) => response.status = Some(head.status),
                Output::Body(bytes) => response.body.extend_from_slice(bytes),
                Output::End => response.ended = true,
                Output::StopAgent | Output::Respawn => panic!("never over ACP"),
            }
        }
    }

    /// A request to the session's MCP endpoint; the exchange's whole output so far.
    fn mcp(
        &mut self,
        url: &str,
        auth: &str,
        method: &str,
        body: &Value,
        session: Option<&str>,
    ) -> (McpExchange, Vec<String>) {
        let token = url.strip_prefix(ENDPOINT).unwrap();
        let body = serde_json::to_vec(body).unwrap();
        let request = HttpRequest {
            method,
            accept: Some("application/json, text/event-stream"),
            content_type: Some("application/json"),
            session_id: session,
            protocol_version: session.map(|_| "2025-11-25"),
            body: &body,
        };
        let exchange = self
            .connection
            .handle_mcp(token, Some(auth.as_bytes()), &request, self.now)
            .expect("the session's server admits its agent");
        let out = self.mcp_output(exchange);
        (exchange, out)
    }

    fn mcp_output(&mut self, exchange: McpExchange) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(output) = self.connection.poll_mcp_output(exchange) {
            out.push(match output {
                ExchangeOutput::Head(head) => {
                    format!("head {} {}", head.status, head.session_id.unwrap_or("-"))
                }
                ExchangeOutput::Body(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                ExchangeOutput::End => "end".into(),
            });
        }
        out
    }
}

/// The MCP server a `session/new` gave the agent: its URL and bearer value.
fn server_of(new_session: &Value) -> (String, String) {
    let server = &new_session["params"]["mcpServers"][0];
    assert_eq!(server["type"], "http");
    assert_eq!(server["name"], "client");
    let header = &server["headers"][0];
    assert_eq!(header["name"], "Authorization");
    (
        server["url"].as_str().unwrap().to_owned(),
        header["value"].as_str().unwrap().to_owned(),
    )
}

/// An agent's MCP client session: initialized, tools listed.
struct AgentMcp {
    url: String,
    auth: String,
    session: String,
}

impl AgentMcp {
    fn connect(h: &mut Harness, new_session: &Value) -> AgentMcp {
        let (url, auth) = server_of(new_session);
        let (_, out) = h.mcp(&url, &auth, "POST", &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}}}), None);
        let session = out[0].split(' ').nth(2).unwrap().to_owned();
        assert!(out[0].starts_with("head 200"), "{out:?}");
        let mcp = AgentMcp { url, auth, session };
        let (_, out) = h.mcp(
            &mcp.url.clone(),
            &mcp.auth.clone(),
            "POST",
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            Some(&mcp.session.clone()),
        );
        assert!(out[0].starts_with("head 202"), "{out:?}");
        let (_, out) = h.mcp(
            &mcp.url.clone(),
            &mcp.auth.clone(),
            "POST",
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            Some(&mcp.session.clone()),
        );
        assert!(out.concat().contains("\"name\":\"bash\""), "{out:?}");
        mcp
    }

    fn call(&self, h: &mut Harness, id: u64, command: &str) -> (McpExchange, Vec<String>) {
        h.mcp(&self.url, &self.auth, "POST", &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"bash","arguments":{"command":command}}}), Some(&self.session))
    }
}

/// Serves the first request of a conversation up to the tool calls: returns the turn's
/// response, the session id, the agent's prompt request id, and the MCP client.
fn first_round(
    h: &mut Harness,
    messages: &[Value],
    commands: &[&str],
) -> (Response, String, Value, AgentMcp, Vec<McpExchange>) {
    let turn = h.start(&chat(messages), Caller::default());
    let written = h.take_written();
    let new_session = written
        .iter()
        .find(|m| m["method"] == "session/new")
        .expect("a session of its own")
        .clone();
    h.agent(&json!({"jsonrpc":"2.0","id":new_session["id"],"result":{"sessionId":"s1"}}));
    let written = h.take_written();
    let prompt = written
        .iter()
        .find(|m| m["method"] == "session/prompt")
        .expect("prompted")
        .clone();
    let mcp = AgentMcp::connect(h, &new_session);
    let mut exchanges = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let (exchange, out) = mcp.call(h, 10 + i as u64, command);
        assert!(
            out[0].starts_with("head 200"),
            "an SSE answer at once: {out:?}"
        );
        exchanges.push(exchange);
    }
    // The batch window closes the response with the calls.
    h.tick(300);
    let mut response = Response::default();
    h.drain(turn, &mut response);
    (response, "s1".into(), prompt["id"].clone(), mcp, exchanges)
}

#[test]
fn a_tool_round_parks_the_session_and_the_results_continue_it() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    let mut messages = vec![
        json!({"role":"system","content":"Be careful."}),
        json!({"role":"user","content":"What is here?"}),
    ];
    let turn = h.start(&chat(&messages), Caller::default());
    let written = h.take_written();
    let new_session = &written[0];
    assert_eq!(new_session["method"], "session/new");
    // Claude gets the client's tools only, pre-authorised.
    assert_eq!(
        new_session["params"]["_meta"]["claudeCode"]["options"]["tools"],
        json!([])
    );
    assert_eq!(
        new_session["params"]["_meta"]["claudeCode"]["options"]["allowedTools"],
        json!(["mcp__client__bash"])
    );
    let (url, auth) = server_of(new_session);
    assert!(url.starts_with(ENDPOINT) && auth.starts_with("Bearer "));
    h.agent(&json!({"jsonrpc":"2.0","id":new_session["id"],"result":{"sessionId":"s1"}}));
    let prompt = h
        .take_written()
        .into_iter()
        .find(|m| m["method"] == "session/prompt")
        .unwrap();
    let prompt_text = prompt["params"]["prompt"][0]["text"].as_str().unwrap();
    assert!(
        prompt_text.contains("What is here?") && !prompt_text.contains("tool-call block"),
        "the tools come over MCP, not in the prompt: {prompt_text}"
    );
    let mcp = AgentMcp::connect(&mut h, new_session);
    // The agent's own update about the call is not the agent's activity.
    h.agent(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"mcp__client__bash","kind":"other","status":"pending","rawInput":{}}}}));
    h.agent(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Let me look."}}}}));
    let (exchange, out) = mcp.call(&mut h, 5, "ls");
    assert!(out[0].starts_with("head 200"), "{out:?}");
    h.tick(300);
    let mut response = Response::default();
    h.drain(turn, &mut response);
    assert!(response.ended, "the response ends with the calls");
    assert_eq!(response.finish_reason().as_deref(), Some("tool_calls"));
    assert!(
        !response.text().contains("mcp__client__bash"),
        "{}",
        response.text()
    );
    let echo = response.echo();
    assert_eq!(echo["content"], "Let me look.");
    assert_eq!(
        echo["tool_calls"][0]["function"]["arguments"],
        r#"{"command":"ls"}"#
    );
    assert_eq!(h.connection.parked_sessions(), 1);
    assert!(
        h.take_written()
            .iter()
            .all(|m| m["method"] != "session/cancel"),
        "the agent stays inside its call"
    );
    // Keep-alives hold the agent in the call.
    h.tick(15_000);
    assert!(
        h.mcp_output(exchange)
            .iter()
            .any(|o| o.contains(": keepalive"))
    );

    // The results continue the same session: the call is answered, nothing is prompted.
    let call_id = echo["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    messages.push(echo);
    messages.push(json!({"role":"tool","tool_call_id":call_id,"content":"a.txt b.txt"}));
    let turn = h.start(&chat(&messages), Caller::default());
    assert!(
        h.take_written().is_empty(),
        "no prompt, no session: only the call's answer"
    );
    let answer = h.mcp_output(exchange).concat();
    assert!(
        answer.contains("a.txt b.txt") && answer.ends_with("end"),
        "{answer}"
    );
    h.agent(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Two files."}}}}));
    h.agent(&json!({"jsonrpc":"2.0","id":prompt["id"],"result":{"stopReason":"end_turn"}}));
    let mut response = Response::default();
    h.drain(turn, &mut response);
    assert!(response.ended);
    assert_eq!(response.finish_reason().as_deref(), Some("stop"));
    assert_eq!(response.echo()["content"], "Two files.");
    assert_eq!(h.connection.parked_sessions(), 1);

    // A follow-up turn: a prompt on the same session holding only the new message.
    messages.push(response.echo());
    messages.push(json!({"role":"user","content":"Thanks! Which is bigger?"}));
    let turn = h.start(&chat(&messages), Caller::default());
    let written = h.take_written();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0]["method"], "session/prompt");
    assert_eq!(written[0]["params"]["sessionId"], "s1");
    assert_eq!(
        written[0]["params"]["prompt"][0]["text"],
        "Thanks! Which is bigger?"
    );
    h.agent(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b.txt"}}}}));
    h.agent(&json!({"jsonrpc":"2.0","id":written[0]["id"],"result":{"stopReason":"end_turn"}}));
    let mut response = Response::default();
    h.drain(turn, &mut response);
    assert_eq!(response.echo()["content"], "b.txt");
    let stats = h.connection.conversation_stats();
    assert_eq!(stats.resumed, 2);
}

#[test]
fn a_twenty_round_loop_runs_on_one_session_and_gives_the_agent_only_the_results() {
    let mut h = Harness::new("codex-acp", RegistryConfig::default());
    let mut messages = vec![json!({"role":"user","content":"Fix the tests."})];
    let (response, _, _prompt, mcp, mut exchanges) = first_round(&mut h, &messages, &["ls 0"]);
    let mut echo = response.echo();
    let mut sessions = 1;
    for round in 1..20u64 {
        let id = echo["tool_calls"][0]["id"].as_str().unwrap().to_owned();
        messages.push(echo);
        messages.push(json!({"role":"tool","tool_call_id":id,"content":format!("output {round}")}));
        let turn = h.start(&chat(&messages), Caller::default());
        let written = h.take_written();
        sessions += written
            .iter()
            .filter(|m| m["method"] == "session/new")
            .count();
        assert!(
            written.iter().all(|m| m["method"] != "session/prompt"),
            "round {round}: {written:?}"
        );
        let answer = h.mcp_output(exchanges.pop().unwrap()).concat();
        assert!(
            answer.contains(&format!("output {round}")),
            "round {round}: {answer}"
        );
        let (exchange, _) = mcp.call(&mut h, 100 + round, &format!("cat {round}"));
        exchanges.push(exchange);
        h.tick(300);
        let mut response = Response::default();
        h.drain(turn, &mut response);
        assert_eq!(
            response.finish_reason().as_deref(),
            Some("tool_calls"),
            "round {round}"
        );
        echo = response.echo();
    }
    assert_eq!(sessions, 1, "one agent session for the whole loop");
    assert_eq!(h.connection.conversation_stats().resumed, 19);
}

#[test]
fn parallel_calls_are_one_batch_and_a_late_call_opens_the_next_response() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    let mut messages = vec![json!({"role":"user","content":"Look around."})];
    let (response, _, _, mcp, exchanges) = first_round(&mut h, &messages, &["ls", "pwd"]);
    let echo = response.echo();
    assert_eq!(echo["tool_calls"].as_array().unwrap().len(), 2);
    // A third call arrives after the response ended.
    let (late, _) = mcp.call(&mut h, 30, "whoami");
    messages.push(echo.clone());
    for (call, out) in echo["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["x", "/home"])
    {
        messages.push(json!({"role":"tool","tool_call_id":call["id"],"content":out}));
    }
    let turn = h.start(&chat(&messages), Caller::default());
    for exchange in exchanges {
        assert!(h.mcp_output(exchange).concat().ends_with("end"));
    }
    h.tick(300);
    let mut response = Response::default();
    h.drain(turn, &mut response);
    assert_eq!(response.finish_reason().as_deref(), Some("tool_calls"));
    assert_eq!(
        response.echo()["tool_calls"][0]["function"]["arguments"],
        r#"{"command":"whoami"}"#
    );
    let _ = late;
}

#[test]
fn a_client_gone_during_a_resumed_turn_ends_the_session_and_the_next_request_is_fresh() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    let mut messages = vec![json!({"role":"user","content":"Go."})];
    let (response, _, _, _mcp, _) = first_round(&mut h, &messages, &["ls"]);
    let echo = response.echo();
    let id = echo["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    messages.push(echo);
    messages.push(json!({"role":"tool","tool_call_id":id,"content":"x"}));
    let body = chat(&messages);
    let turn = h.start(&body, Caller::default());
    h.connection.client_gone(turn, h.now);
    let written = h.take_written();
    assert!(
        written
            .iter()
            .any(|m| m["method"] == "session/cancel" && m["params"]["sessionId"] == "s1"),
        "{written:?}"
    );
    // The agent ends the cancelled prompt; the session is closed.
    let prompt_id = h
        .written
        .iter()
        .find(|m| m["method"] == "session/prompt")
        .unwrap()["id"]
        .clone();
    h.agent(&json!({"jsonrpc":"2.0","id":prompt_id,"result":{"stopReason":"cancelled"}}));
    let written = h.take_written();
    assert!(
        written
            .iter()
            .any(|m| m["method"] == "session/close" && m["params"]["sessionId"] == "s1"),
        "{written:?}"
    );
    assert_eq!(h.connection.parked_sessions(), 0);
    h.start(&body, Caller::default());
    assert!(
        h.take_written()
            .iter()
            .any(|m| m["method"] == "session/new"),
        "fresh"
    );
}

#[test]
fn a_parked_session_expires_is_cancelled_and_closed() {
    let ttl = RegistryConfig {
        ttl_ms: 60_000,
        ..RegistryConfig::default()
    };
    let mut h = Harness::new("gemini-cli", ttl);
    let messages = vec![json!({"role":"user","content":"Go."})];
    let (_, _, _, _, exchanges) = first_round(&mut h, &messages, &["ls"]);
    assert_eq!(h.connection.parked_sessions(), 1);
    assert!(h.connection.is_mcp_server_open(exchanges[0]));
    for _ in 0..5 {
        h.tick(15_000);
    }
    let written = h.take_written();
    assert!(
        written.iter().any(|m| m["method"] == "session/cancel"),
        "{written:?}"
    );
    assert!(h.connection.parked_sessions() == 0);
    assert_eq!(h.connection.conversation_stats().expired, 1);
    assert!(
        !h.connection.is_mcp_server_open(exchanges[0]),
        "the adapter ends the call's response"
    );
    let out = h.mcp_output(exchanges[0]);
    assert!(
        out.last().is_none_or(|o| o == "end"),
        "the call's stream ends: {out:?}"
    );
}

#[test]
fn shutdown_cancels_and_closes_parked_sessions() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    let (_, _, _, _, _) = first_round(&mut h, &[json!({"role":"user","content":"Go."})], &["ls"]);
    h.connection.shutdown(h.now);
    let written = h.take_written();
    assert!(
        written.iter().any(|m| m["method"] == "session/cancel"),
        "{written:?}"
    );
    assert!(
        written.iter().any(|m| m["method"] == "session/close"),
        "{written:?}"
    );
    assert_eq!(h.connection.parked_sessions(), 0);
}

#[test]
fn the_mcp_endpoint_admits_only_its_session_secret() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    let turn = h.start(
        &chat(&[json!({"role":"user","content":"Go."})]),
        Caller::default(),
    );
    let new_session = h.take_written().remove(0);
    let (url, auth) = server_of(&new_session);
    let token = url.strip_prefix(ENDPOINT).unwrap().to_owned();
    let request = HttpRequest {
        method: "POST",
        accept: Some("application/json, text/event-stream"),
        content_type: Some("application/json"),
        session_id: None,
        protocol_version: None,
        body: b"{}",
    };
    let wrong = auth.replace(|c: char| c.is_ascii_hexdigit(), "0");
    assert_eq!(
        h.connection
            .handle_mcp(&token, Some(wrong.as_bytes()), &request, 0),
        Err(McpRefusal::Unauthorized)
    );
    assert_eq!(
        h.connection.handle_mcp(&token, None, &request, 0),
        Err(McpRefusal::Unauthorized)
    );
    assert_eq!(
        h.connection
            .handle_mcp("0000000000000000", Some(auth.as_bytes()), &request, 0),
        Err(McpRefusal::NotFound)
    );
    assert_eq!(McpRefusal::Unauthorized.status(), 401);
    assert!(
        h.connection
            .handle_mcp(&token, Some(auth.as_bytes()), &request, 0)
            .is_ok()
    );
    let _ = turn;
}

#[test]
fn permissions_allow_the_clients_tools_and_refuse_the_agents_own_in_a_client_tool_session() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    h.start(
        &chat(&[json!({"role":"user","content":"Go."})]),
        Caller::default(),
    );
    let new_session = h.take_written().remove(0);
    h.agent(&json!({"jsonrpc":"2.0","id":new_session["id"],"result":{"sessionId":"s1"}}));
    h.take_written();
    let options = json!([{"kind":"allow_always","name":"Always","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}]);
    h.agent(&json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","options":options,"toolCall":{"toolCallId":"t1","title":"mcp__client__bash","rawInput":{"command":"ls"},"kind":"other"}}}));
    h.agent(&json!({"jsonrpc":"2.0","id":"p2","method":"session/request_permission","params":{"sessionId":"s1","options":options,"toolCall":{"toolCallId":"t2","title":"Bash","rawInput":{"command":"rm -rf /"},"kind":"execute"}}}));
    let answers = h.take_written();
    assert_eq!(answers[0]["result"]["outcome"]["optionId"], "allow");
    assert_eq!(answers[1]["result"]["outcome"]["optionId"], "reject");
}

#[test]
fn a_busy_session_is_not_shared_and_another_owner_never_resumes_it() {
    let mut h = Harness::new(
        "@zed-industries/claude-agent-acp",
        RegistryConfig::default(),
    );
    let mut messages = vec![json!({"role":"user","content":"Go."})];
    let (response, _, _, _, _) = first_round(&mut h, &messages, &["ls"]);
    let echo = response.echo();
    let id = echo["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    messages.push(echo);
    messages.push(json!({"role":"tool","tool_call_id":id,"content":"x"}));
    let body = chat(&messages);
    let other = Caller {
        owner: agentwire::registry::Owner::from_key(b"someone else"),
        ..Caller::default()
    };
    h.start(&body, other);
    assert!(
        h.take_written()
            .iter()
            .any(|m| m["method"] == "session/new"),
        "another owner starts fresh"
    );
    h.start(&body, Caller::default());
    assert!(h.take_written().is_empty(), "the owner resumes");
    assert_eq!(
        (h.connection.busy_sessions(), h.connection.parked_sessions()),
        (2, 0),
        "the other owner's fresh session and the resumed one"
    );
    h.start(&body, Caller::default());
    assert!(
        h.take_written()
            .iter()
            .any(|m| m["method"] == "session/new"),
        "the same request again, while the session is busy, is fresh"
    );
}

#[test]
fn a_call_codex_would_give_up_is_answered_in_time_and_its_result_prompted_later() {
    let mut h = Harness::new("codex-acp", RegistryConfig::default());
    let mut messages = vec![json!({"role":"user","content":"Run the slow build."})];
    let (response, _, prompt_id, _mcp, exchanges) = first_round(&mut h, &messages, &["make"]);
    // Before Codex's 120 s, the call is answered with a note, not a failure.
    for _ in 0..8 {
        h.tick(15_000);
    }
    let answer = h.mcp_output(exchanges[0]).concat();
    assert!(
        answer.contains("still running") && !answer.contains("\"isError\":true"),
        "{answer}"
    );
    // The agent finishes that turn by itself; no client is attached.
    h.agent(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Waiting for the build."}}}}));
    h.agent(&json!({"jsonrpc":"2.0","id":prompt_id,"result":{"stopReason":"end_turn"}}));
    // The client's result comes after 10 minutes: it is prompted on the same session.
    for _ in 0..40 {
        h.tick(15_000);
    }
    let echo = response.echo();
    let id = echo["tool_calls"][0]["id"].as_str().unwrap().to_owned();
    messages.push(echo);
    messages.push(json!({"role":"tool","tool_call_id":id,"content":"build ok"}));
    let turn = h.start(&chat(&messages), Caller::default());
    let written = h.take_written();
    let prompt = written
        .iter()
        .find(|m| m["method"] == "session/prompt")
        .expect("the result, prompted");
    assert_eq!(prompt["params"]["sessionId"], "s1");
    let text = prompt["params"]["prompt"][0]["text"].as_str().unwrap();
    assert!(text.contains("build ok") && text.contains(&id), "{text}");
    h.agent(&json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"The build passed."}}}}));
    h.agent(&json!({"jsonrpc":"2.0","id":prompt["id"],"result":{"stopReason":"end_turn"}}));
    let mut response = Response::default();
    h.drain(turn, &mut response);
    assert_eq!(response.echo()["content"], "The build passed.");
}

#[test]
fn without_an_mcp_endpoint_client_tools_are_refused_as_before() {
    let config = AcpConfig {
        pool_size: 0,
        ..AcpConfig::default()
    };
    let mut connection = Connection::new(config, 0);
    let turn = connection.start_conversation_turn(
        Dialect::ChatCompletions,
        &chat(&[json!({"role":"user","content":"x"})]),
        &Config::default(),
        params(1, 0),
        Caller::default(),
        [1; 32],
    );
    let mut status = None;
    while let Some(output) = connection.poll_output(turn) {
        if let Output::Head(head) = output {
            status = Some(head.status);
        }
    }
    assert_eq!(status, Some(400));
}
