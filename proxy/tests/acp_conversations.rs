//! Conversations on the warm ACP agent, in both proxies: a request with client tools gets
//! an ACP session whose MCP server (on the proxy's listener) gives the agent those tools;
//! a tool round ends the response with the client's tool calls while the agent waits
//! inside its call, and the next request's results answer that call on the same session.
//! Whenever a session cannot continue (conversations off, expiry, a restart, another key,
//! a client gone mid-turn) the request gets a fresh session given the whole history, and
//! is answered just the same. `acp_agent --tool-rounds` plays the agent: an MCP client of
//! the session's server, asking permission before each call, counting its rounds per
//! session (and from the history a fresh session is given), so that a session that was
//! not continued would answer the wrong round.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::acp::{acp_events, acp_events_all, acp_groups, acp_proxy_with, two_prompts};
use support::both;
use support::client::{Conn, raw, raw_to};
use support::processes::{assert_groups_gone, pids_in, processes, zombies_of};
use support::tool_loop::{Answer, MessagesClient, TASK, command, output_of};
use support::{Kind, Proxy, Scratch, example, wait_until};

both!(
    acp_a_twenty_round_tool_loop_runs_on_one_session,
    acp_a_follow_up_turn_prompts_only_the_new_text,
    acp_without_conversations_every_round_is_a_fresh_session,
    acp_parked_sessions_expire_and_the_next_request_is_fresh,
    acp_after_a_restart_the_next_request_is_fresh,
    acp_one_key_never_resumes_another_keys_session,
    acp_a_client_gone_while_its_session_is_parked_changes_nothing,
    acp_a_client_gone_during_a_resumed_turn_ends_its_session,
    acp_shutdown_with_parked_sessions_exits_cleanly_and_leaves_no_agent,
    acp_the_mcp_endpoint_admits_only_its_sessions_secret,
    acp_a_messages_tool_loop_resumes_by_claude_codes_session_header,
);

/// A proxy whose warm agent plays `rounds` tool rounds per session, with `agent` flags
/// for the stand-in and `proxy` flags for the proxy.
fn tool_proxy(kind: Kind, scratch: &Scratch, rounds: u32, agent: &[&str], proxy: &[&str]) -> Proxy {
    let rounds = rounds.to_string();
    let mut flags = vec![
        "--delay-ms",
        "1",
        "--session-close",
        "--tool-rounds",
        &rounds,
    ];
    flags.extend_from_slice(agent);
    acp_proxy_with(kind, scratch, &two_prompts(), &flags, proxy)
}

/// The agent's answer after `rounds` rounds, the last of which printed `last`.
fn done(rounds: u32, last: Option<u32>) -> Answer {
    let last = last.map_or("(none)".to_owned(), |r| {
        output_of(&format!("echo round-{r}"))
    });
    Answer::Text(format!(
        "Done after {rounds} tool rounds. Last result: {last}"
    ))
}

/// A Chat Completions client in a tool loop: it sends its whole conversation each round,
/// echoes the assistant message with its tool calls, and adds its tools' results.
struct ChatClient<'a> {
    proxy: &'a Proxy,
    headers: Vec<(&'a str, &'a str)>,
    messages: Vec<Value>,
}

impl<'a> ChatClient<'a> {
    fn new(proxy: &'a Proxy, headers: &[(&'a str, &'a str)]) -> ChatClient<'a> {
        ChatClient {
            proxy,
            headers: headers.to_vec(),
            messages: vec![
                json!({"role": "system", "content": "You are a careful coding agent."}),
                json!({"role": "user", "content": TASK}),
            ],
        }
    }

    fn body(&self, stream: bool) -> Value {
        json!({
            "model": "auto",
            "stream": stream,
            "messages": self.messages,
            "tools": [{"type": "function", "function": {
                "name": "bash",
                "description": "Run a shell command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
            }}],
        })
    }

    /// Sends the conversation and takes the answer into it (with the tool's result).
    fn round(&mut self) -> Answer {
        let reply = self
            .proxy
            .post_json("/v1/chat/completions", &self.headers, &self.body(false));
        assert_eq!(reply.status, 200, "{:?}: {}", self.proxy.kind, reply.text());
        self.take(&reply.json())
    }

    /// Takes a completion's answer into the conversation.
    fn take(&mut self, completion: &Value) -> Answer {
        let choice = &completion["choices"][0];
        let message = choice["message"].clone();
        self.messages.push(message.clone());
        match choice["finish_reason"].as_str() {
            Some("tool_calls") => {
                let calls = message["tool_calls"].as_array().unwrap();
                assert_eq!(calls.len(), 1, "{message}");
                let call = &calls[0];
                assert_eq!(call["function"]["name"], "bash", "{message}");
                let arguments: Value =
                    serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
                let command = arguments["command"].as_str().unwrap().to_owned();
                assert_eq!(message["content"], format!("Running `{command}`."));
                self.messages.push(json!({
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": output_of(&command),
                }));
                Answer::Tool(command)
            }
            Some("stop") => Answer::Text(message["content"].as_str().unwrap().to_owned()),
            other => panic!("finish_reason {other:?}: {completion}"),
        }
    }

    /// The same request as [`round`](Self::round), on a connection of its own, not read.
    fn send_on(&self, conn: &mut Conn, stream: bool) {
        let body = self.body(stream).to_string();
        let mut headers = vec![("content-type", "application/json")];
        headers.extend_from_slice(&self.headers);
        conn.send(&raw(
            "POST",
            "/v1/chat/completions",
            &headers,
            body.as_bytes(),
        ));
    }
}

/// The assistant message of a Chat Completions stream (so far), as a client echoes it.
fn streamed_message(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let delta = &chunk["choices"][0]["delta"];
        content.push_str(delta["content"].as_str().unwrap_or_default());
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            if calls.len() <= index {
                calls.push(json!({"id": call["id"], "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""}}));
            }
            let more = call["function"]["arguments"].as_str().unwrap_or_default();
            let so_far = calls[index]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_owned();
            calls[index]["function"]["arguments"] = json!(so_far + more);
        }
    }
    json!({"role": "assistant", "content": content, "tool_calls": calls})
}

/// The warm agent's conversation counters.
fn counters(proxy: &Proxy, headers: &[(&str, &str)]) -> Value {
    let reply = proxy.request("GET", "/health", headers, b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["conversations"].clone()
}

/// The stand-in's log lines of `event` about `session`.
fn events_of(scratch: &Scratch, event: &str, session: &str) -> Vec<Value> {
    acp_events(scratch, event)
        .into_iter()
        .filter(|e| e["session"] == session)
        .collect()
}

/// The sessions given an MCP server, in order.
fn tool_sessions(scratch: &Scratch) -> Vec<String> {
    acp_events(scratch, "session")
        .iter()
        .map(|e| {
            assert!(e.get("error").is_none(), "the MCP server was reached: {e}");
            e["session"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// Waits (bounded) until the stand-in logged `event` for `session`.
fn wait_for_event(scratch: &Scratch, event: &str, session: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || !events_of(
            scratch, event, session
        )
        .is_empty()),
        "no {event} of {session}: {:?}",
        acp_events_all(scratch)
    );
}

fn acp_a_twenty_round_tool_loop_runs_on_one_session(kind: Kind) {
    const ROUNDS: u32 = 20;
    let scratch = Scratch::new("acp-conv-loop");
    let proxy = tool_proxy(kind, &scratch, ROUNDS, &[], &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    let mut times = Vec::new();
    for round in 0..ROUNDS {
        let started = Instant::now();
        assert_eq!(client.round(), command(round), "round {round}");
        times.push(started.elapsed());
        if round > 0 {
            // The request's result reached the agent inside its call of the round before.
            let results = acp_events(&scratch, "tool_result");
            assert_eq!(results.len(), round as usize);
            let last = &results[round as usize - 1];
            assert_eq!(last["round"], round - 1);
            assert_eq!(
                last["text"],
                output_of(&format!("echo round-{}", round - 1))
            );
        }
    }
    assert_eq!(client.round(), done(ROUNDS, Some(ROUNDS - 1)));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 1, "one session/new with the client's tools");
    let prompts = acp_events(&scratch, "prompt");
    assert_eq!(prompts.len(), 1, "one session/prompt for the whole loop");
    assert!(prompts[0]["prompt"].as_str().unwrap().contains(TASK));
    assert_eq!(prompts[0]["session"], sessions[0]);
    let allowed = acp_events(&scratch, "permission");
    assert_eq!(allowed.len(), ROUNDS as usize);
    assert!(
        allowed.iter().all(|p| p["option"] == "allow"),
        "{allowed:?}"
    );
    assert_eq!(acp_events(&scratch, "tool_call").len(), ROUNDS as usize);
    let counters = counters(&proxy, &[]);
    assert_eq!(counters["resumed"], ROUNDS, "{counters}");
    assert_eq!(counters["fresh"]["no_session"], 1, "{counters}");
    assert_eq!(
        (counters["parked"].as_u64(), counters["busy"].as_u64()),
        (Some(1), Some(0)),
        "{counters}"
    );
    let resumed = &times[1..];
    let mean = resumed.iter().sum::<Duration>() / resumed.len() as u32;
    eprintln!(
        "{kind:?}: a resumed tool round through the proxy: mean {mean:?}, max {:?}",
        resumed.iter().max().unwrap()
    );
    proxy.wait_idle();
}

fn acp_a_follow_up_turn_prompts_only_the_new_text(kind: Kind) {
    let scratch = Scratch::new("acp-conv-follow-up");
    let proxy = tool_proxy(kind, &scratch, 1, &[], &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    assert_eq!(client.round(), done(1, Some(0)));
    let follow_up = "Now run the whole suite, please.";
    client
        .messages
        .push(json!({"role": "user", "content": follow_up}));
    // The session's rounds are played: it answers from its own state, not the history.
    assert_eq!(client.round(), done(1, Some(0)));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 1);
    let prompts = acp_events(&scratch, "prompt");
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert_eq!(prompts[1]["session"], sessions[0]);
    assert_eq!(prompts[1]["prompt"], follow_up, "only the new text");
    assert_eq!(counters(&proxy, &[])["resumed"], 2);
}

fn acp_without_conversations_every_round_is_a_fresh_session(kind: Kind) {
    const ROUNDS: u32 = 3;
    let scratch = Scratch::new("acp-conv-off");
    let proxy = tool_proxy(kind, &scratch, ROUNDS, &[], &["--conversations", "off"]);
    let mut client = ChatClient::new(&proxy, &[]);
    for round in 0..ROUNDS {
        assert_eq!(client.round(), command(round), "round {round}");
    }
    // A fresh session counts the rounds in the history it is given; none came through it.
    assert_eq!(client.round(), done(ROUNDS, None));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), ROUNDS as usize + 1, "a session per request");
    let prompts = acp_events(&scratch, "prompt");
    assert!(
        prompts
            .iter()
            .all(|p| p["prompt"].as_str().unwrap().contains(TASK))
    );
    // Each session is let go with its response: its call given up, closed.
    for session in &sessions {
        wait_for_event(&scratch, "close", session);
    }
    let counters = counters(&proxy, &[]);
    assert_eq!(counters["enabled"], false);
    assert_eq!(counters["fresh"]["disabled"], ROUNDS + 1, "{counters}");
    assert_eq!(
        (counters["resumed"].as_u64(), counters["parked"].as_u64()),
        (Some(0), Some(0))
    );
    proxy.wait_idle();
}

fn acp_parked_sessions_expire_and_the_next_request_is_fresh(kind: Kind) {
    let scratch = Scratch::new("acp-conv-expiry");
    let proxy = tool_proxy(kind, &scratch, 2, &[], &["--conversation-ttl-secs", "1"]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    assert_eq!(counters(&proxy, &[])["parked"], 1);
    assert_eq!(counters(&proxy, &[])["ttl_secs"], 1);
    assert!(
        wait_until(Duration::from_secs(10), || counters(&proxy, &[])["parked"]
            == 0),
        "not expired: {}",
        counters(&proxy, &[])
    );
    assert_eq!(counters(&proxy, &[])["expired"], 1);
    // The agent, waiting in its call, is cancelled and its session closed.
    let first = tool_sessions(&scratch)[0].clone();
    wait_for_event(&scratch, "cancel", &first);
    wait_for_event(&scratch, "close", &first);
    // Fresh, and right: the new session reads round 0 in the history.
    assert_eq!(client.round(), command(1));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 2);
    let prompt = &events_of(&scratch, "prompt", &sessions[1])[0];
    let text = prompt["prompt"].as_str().unwrap();
    assert!(
        text.contains(TASK) && text.contains("round-0 (exit 0)"),
        "{text}"
    );
    assert_eq!(client.round(), done(2, Some(1)));
}

fn acp_after_a_restart_the_next_request_is_fresh(kind: Kind) {
    let scratch = Scratch::new("acp-conv-restart");
    let mut first = tool_proxy(kind, &scratch, 2, &[], &[]);
    let mut client = ChatClient::new(&first, &[]);
    assert_eq!(client.round(), command(0));
    let messages = client.messages;
    assert!(first.stop().success());
    let second = tool_proxy(kind, &scratch, 2, &[], &[]);
    let mut client = ChatClient::new(&second, &[]);
    client.messages = messages;
    // Never a 409 for a session the new process cannot see: the whole history, fresh.
    assert_eq!(client.round(), command(1));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 2);
    let starts = acp_events(&scratch, "start");
    assert_eq!(starts.len(), 2, "a process per proxy");
    let prompts = acp_events(&scratch, "prompt");
    let last = prompts.last().unwrap();
    assert_eq!(last["pid"], starts[1]["pid"]);
    assert!(last["prompt"].as_str().unwrap().contains(TASK));
    assert_eq!(counters(&second, &[])["fresh"]["no_session"], 1);
    assert_eq!(client.round(), done(2, Some(1)));
}

fn acp_one_key_never_resumes_another_keys_session(kind: Kind) {
    let scratch = Scratch::new("acp-conv-owners");
    let proxy = tool_proxy(kind, &scratch, 2, &[], &["--api-key", "sk-one,sk-two"]);
    let one = [("authorization", "Bearer sk-one")];
    let mut client = ChatClient::new(&proxy, &one);
    assert_eq!(client.round(), command(0));
    let first = tool_sessions(&scratch)[0].clone();
    // The same conversation, continued with the other key: fresh, and right.
    let mut other = ChatClient::new(&proxy, &[("x-api-key", "sk-two")]);
    other.messages = client.messages.clone();
    assert_eq!(other.round(), command(1));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 2, "sk-two resumed the session of sk-one");
    assert!(events_of(&scratch, "tool_result", &first).is_empty());
    // Its own key resumes it: the result answers its call.
    assert_eq!(client.round(), command(1));
    assert_eq!(tool_sessions(&scratch).len(), 2);
    let results = events_of(&scratch, "tool_result", &first);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["text"], output_of("echo round-0"));
    let counters = counters(&proxy, &one);
    assert_eq!(counters["resumed"], 1, "{counters}");
    assert_eq!(counters["parked"], 2, "{counters}");
    let reply = proxy.post_json("/v1/chat/completions", &[], &client.body(false));
    assert_eq!(reply.status, 401, "no key, no run");
}

fn acp_a_client_gone_while_its_session_is_parked_changes_nothing(kind: Kind) {
    let scratch = Scratch::new("acp-conv-gone-parked");
    let proxy = tool_proxy(kind, &scratch, 2, &[], &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    // A stream whose client leaves as soon as it has the tool call, before its end.
    let mut conn = proxy.connect();
    client.send_on(&mut conn, true);
    assert_eq!(conn.head().0, 200);
    let mut body = Vec::new();
    while !String::from_utf8_lossy(&body).contains("\"finish_reason\":\"tool_calls\"") {
        body.extend(conn.chunk().expect("the tool call before the end"));
    }
    drop(conn);
    let message = streamed_message(&body);
    let call = &message["tool_calls"][0];
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments["command"], "echo round-0");
    client.messages.push(message.clone());
    client.messages.push(
        json!({"role": "tool", "tool_call_id": call["id"], "content": output_of("echo round-0")}),
    );
    // And a client that leaves before its request is whole.
    let mut conn = proxy.connect();
    let mut partial = raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        client.body(false).to_string().as_bytes(),
    );
    partial.truncate(partial.len() - 10);
    conn.send(&partial);
    drop(conn);
    let session = tool_sessions(&scratch)[0].clone();
    assert!(
        wait_until(Duration::from_secs(10), || counters(&proxy, &[])["parked"]
            == 1),
        "{}",
        counters(&proxy, &[])
    );
    // The conversation goes on, on its session.
    assert_eq!(client.round(), command(1));
    assert_eq!(tool_sessions(&scratch), std::slice::from_ref(&session));
    assert!(events_of(&scratch, "cancel", &session).is_empty());
    assert_eq!(counters(&proxy, &[])["resumed"], 1);
    proxy.wait_idle();
}

fn acp_a_client_gone_during_a_resumed_turn_ends_its_session(kind: Kind) {
    let scratch = Scratch::new("acp-conv-gone-resumed");
    // After a result the agent thinks a long while: the resumed turn is running.
    let proxy = tool_proxy(kind, &scratch, 2, &["--result-delay-ms", "60000"], &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    let first = tool_sessions(&scratch)[0].clone();
    let mut conn = proxy.connect();
    client.send_on(&mut conn, false);
    wait_for_event(&scratch, "tool_result", &first);
    let now = counters(&proxy, &[]);
    assert_eq!(
        (now["busy"].as_u64(), now["parked"].as_u64()),
        (Some(1), Some(0)),
        "{now}"
    );
    drop(conn);
    // Its session is cancelled and closed: it may not hold what the client has.
    wait_for_event(&scratch, "cancel", &first);
    wait_for_event(&scratch, "close", &first);
    assert!(
        wait_until(Duration::from_secs(10), || {
            let c = counters(&proxy, &[]);
            c["busy"] == 0 && c["parked"] == 0
        }),
        "the session is still held: {}",
        counters(&proxy, &[])
    );
    // The same request again: fresh, and right.
    assert_eq!(client.round(), command(1));
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 2);
    let prompt = &events_of(&scratch, "prompt", &sessions[1])[0];
    assert!(prompt["prompt"].as_str().unwrap().contains(TASK));
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

fn acp_shutdown_with_parked_sessions_exits_cleanly_and_leaves_no_agent(kind: Kind) {
    let scratch = Scratch::new("acp-conv-shutdown");
    let pids = scratch.path("children.pids");
    // The agent starts a child of its own, as real agents start their tools.
    let script = format!(
        "#!/bin/sh\n\
         if [ \"$1\" != --version ]; then\n\
         \tsleep 60 &\n\
         \techo $! >> '{pids}'\n\
         fi\n\
         exec '{}' --recording '{}' --delay-ms 1 --session-close --tool-rounds 3 --result-delay-ms 60000 \"$@\"\n",
        example("acp_agent").display(),
        two_prompts(),
        pids = pids.display(),
    );
    let agent = scratch.script("acp.sh", &script);
    let mut proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &["--agent-protocol", "acp", "--agent-arg", "acp"],
    );
    // Two conversations parked inside their calls, and a third request on a resumed one.
    let mut first = ChatClient::new(&proxy, &[]);
    assert_eq!(first.round(), command(0));
    let mut second = ChatClient::new(&proxy, &[]);
    second.messages[1] = json!({"role": "user", "content": "Update the changelog."});
    assert_eq!(second.round(), command(0));
    assert_eq!(counters(&proxy, &[])["parked"], 2);
    let mut conn = proxy.connect();
    first.send_on(&mut conn, false);
    let session = tool_sessions(&scratch)[0].clone();
    wait_for_event(&scratch, "tool_result", &session);
    let groups = acp_groups(&scratch);
    let children = pids_in(&pids);
    let running = |pids: &[u32]| {
        processes()
            .iter()
            .filter(|(pid, state, ..)| pids.contains(pid) && *state != 'Z')
            .count()
    };
    assert_eq!(running(&children), 1, "the agent's child runs");
    let started = Instant::now();
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    eprintln!(
        "{kind:?}: shutdown with two parked sessions and a resumed turn: {:?}",
        started.elapsed()
    );
    // The request in flight was told the server is going away.
    let reply = conn.reply();
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_groups_gone(&groups, Duration::from_secs(5), "after shutdown");
    assert_eq!(running(&children), 0, "the agent's child is gone");
}

fn acp_the_mcp_endpoint_admits_only_its_sessions_secret(kind: Kind) {
    let scratch = Scratch::new("acp-conv-mcp");
    let proxy = tool_proxy(kind, &scratch, 2, &[], &["--api-key", "sk-key"]);
    let key = [("authorization", "Bearer sk-key")];
    let mut client = ChatClient::new(&proxy, &key);
    assert_eq!(client.round(), command(0));
    let session = &acp_events(&scratch, "session")[0];
    let url = session["mcp"]["url"].as_str().unwrap();
    let secret = session["mcp"]["authorization"].as_str().unwrap();
    let port = proxy.addr.port();
    let prefix = format!("http://127.0.0.1:{port}/mcp/");
    let token = url
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("the agent is given loopback and the bound port: {url}"));
    let path = format!("/mcp/{token}");
    let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
    let json = ("content-type", "application/json");
    let accept = ("accept", "application/json, text/event-stream");
    let post = |headers: &[(&str, &str)]| {
        let mut all = vec![json, accept];
        all.extend_from_slice(headers);
        proxy.request("POST", &path, &all, ping)
    };
    // The session's secret reaches its server, without the API key.
    let reply = proxy.request("GET", &path, &[("authorization", secret)], b"");
    assert_eq!(
        reply.status,
        405,
        "the server's own answer: {}",
        reply.text()
    );
    assert!(reply.header("allow").unwrap().contains("POST"));
    // Anything else does not.
    for wrong in [
        "Bearer 00000000000000000000000000000000",
        "Bearer sk-key",
        "",
    ] {
        let headers: &[(&str, &str)] = if wrong.is_empty() {
            &[]
        } else {
            &[("authorization", wrong)]
        };
        let reply = post(headers);
        assert_eq!(reply.status, 401, "{wrong:?}: {}", reply.text());
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        assert_eq!(reply.json()["jsonrpc"], "2.0");
    }
    let reply = proxy.request(
        "POST",
        "/mcp/0000000000000000",
        &[json, ("authorization", secret)],
        ping,
    );
    assert_eq!(reply.status, 404, "{}", reply.text());
    // Around the endpoint, and OAuth discovery: 404 without a key, never 401.
    for probe in [
        "/mcp",
        "/mcp/",
        &format!("{path}/x"),
        "/.well-known/oauth-authorization-server",
        &format!("/.well-known/oauth-authorization-server{path}"),
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = proxy.request("GET", probe, &[], b"");
        assert_eq!(reply.status, 404, "{probe}: {}", reply.text());
    }
    // A web page, or a rebinding name, reaches nothing.
    let reply = post(&[("authorization", secret), ("origin", "http://evil.example")]);
    assert_eq!(reply.status, 403, "{}", reply.text());
    let mut conn = proxy.connect();
    conn.send(&raw_to(
        Some("evil.example"),
        "POST",
        &path,
        &[json, accept, ("authorization", secret)],
        ping,
    ));
    assert_eq!(conn.reply().status, 400);
    // Bodies are bounded (the MCP servers' 4 MiB), refused from the declared length.
    let mut conn = proxy.connect();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\nauthorization: {secret}\r\ncontent-length: {}\r\n\r\n",
        (4 << 20) + 1
    );
    conn.send(head.as_bytes());
    assert_eq!(conn.reply().status, 413);
    // The API routes still want the key.
    let reply = proxy.post_json("/v1/chat/completions", &[], &client.body(false));
    assert_eq!(reply.status, 401);
    // None of it disturbed the session: the conversation goes on there.
    assert_eq!(client.round(), command(1));
    assert_eq!(acp_events(&scratch, "session").len(), 1);
    assert_eq!(counters(&proxy, &key)["resumed"], 1);
}

/// A Messages request for `messages`, as Claude Code sends them (its `Bash` tool).
/// The Messages client of the loop, as Claude Code sends it.
fn client() -> MessagesClient {
    MessagesClient {
        system: "You are Claude Code.".to_owned(),
        bash_properties: json!({"command": {"type": "string"}, "timeout": {"type": "number"}}),
    }
}

fn acp_a_messages_tool_loop_resumes_by_claude_codes_session_header(kind: Kind) {
    const ROUNDS: u32 = 3;
    let scratch = Scratch::new("acp-conv-messages");
    let proxy = tool_proxy(
        kind,
        &scratch,
        ROUNDS,
        &["--agent-name", "@zed-industries/claude-agent-acp"],
        &[],
    );
    let session = (
        "x-claude-code-session-id",
        "6f0c1d8e-2b4a-4c3d-9e5f-7a8b9c0d1e2f",
    );
    let (mut messages, answers) = client().run(&proxy, &[session], ROUNDS);
    let expected: Vec<Answer> = (0..ROUNDS)
        .map(command)
        .chain([done(ROUNDS, Some(ROUNDS - 1))])
        .collect();
    assert_eq!(answers, expected);
    let sessions = tool_sessions(&scratch);
    assert_eq!(sessions.len(), 1);
    assert_eq!(acp_events(&scratch, "prompt").len(), 1);
    assert_eq!(counters(&proxy, &[])["resumed"], ROUNDS);
    // A follow-up without the header is another conversation's: fresh; with it, the
    // session (undisturbed) continues.
    messages.push(json!({"role": "user", "content": "Thanks. Anything else?"}));
    let body = client().body(&messages, false);
    for (headers, resumes) in [(&[][..], false), (&[session][..], true)] {
        let reply = proxy.post_json("/v1/messages", headers, &body);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let last = acp_events(&scratch, "prompt").pop().unwrap();
        assert_eq!(
            last["session"] == sessions[0],
            resumes,
            "{headers:?}: {last}"
        );
        if resumes {
            assert_eq!(last["prompt"], "Thanks. Anything else?");
        }
    }
    assert_eq!(tool_sessions(&scratch).len(), 2);
}
