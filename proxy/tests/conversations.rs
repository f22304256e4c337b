//! Conversations on the stream-json path, in both proxies: a request whose history extends
//! an answer the proxy gave resumes the agent's chat (`--resume`) with a prompt holding
//! only what is new; whenever it cannot (conversations off, expiry, a restart, another
//! key, a client that left, a chat the agent lost) the request runs fresh with the whole
//! history and is answered just the same. `replay_agent --chat-dir` plays the agent: a
//! tool loop whose rounds it counts per chat, so a resumed run that was not given its
//! chat's state would answer the wrong round.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::both;
use support::client::raw;
use support::processes::{assert_groups_gone, zombies_of};
use support::tool_loop::{Answer, MessagesClient, TASK, command, output_of};
use support::{AgentRun, Kind, Proxy, Scratch, wait_until};

both!(
    a_tool_loop_resumes_one_chat_with_prompts_the_size_of_the_delta,
    without_conversations_every_prompt_is_the_whole_history,
    a_follow_up_turn_resumes_the_chat,
    a_chat_the_agent_lost_is_answered_by_a_fresh_run_unseen,
    a_chat_whose_resume_fails_is_answered_by_a_fresh_run_unseen,
    parked_chats_expire_and_the_next_request_is_fresh,
    after_a_restart_the_next_request_is_fresh,
    one_key_never_resumes_another_keys_chat,
    a_client_gone_during_a_resumed_request_releases_its_chat,
    shutdown_with_parked_chats_exits_cleanly_and_leaves_no_agent,
    a_messages_tool_loop_resumes_by_claude_codes_session_header,
    a_responses_tool_loop_resumes,
);

/// A resumed round's prompt (the agent's last answer and the tool's result, fenced) is
/// never larger than this, whatever the round.
const DELTA_BOUND: usize = 1024;

/// The system text of the loops: long, so a whole history is easily told from a delta.
fn system_text() -> String {
    "You are a careful coding agent working in a large repository. ".repeat(40)
}

/// An agent playing a tool loop of `rounds` tool rounds, its chats in the scratch
/// directory; `extra` flags after.
fn loop_agent(scratch: &Scratch, rounds: u32, extra: &[&str]) -> std::path::PathBuf {
    let chats = scratch.path("chats");
    std::fs::create_dir_all(&chats).unwrap();
    let rounds = rounds.to_string();
    let mut flags = vec![
        "--chat-dir",
        chats.to_str().unwrap(),
        "--tool-rounds",
        &rounds,
        "--delay-ms",
        "0",
    ];
    flags.extend_from_slice(extra);
    scratch.agent(&flags)
}

/// The answer after `rounds` tool rounds.
fn done(rounds: u32) -> Answer {
    Answer::Text(format!("Done after {rounds} tool rounds."))
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
                json!({"role": "system", "content": system_text()}),
                json!({"role": "user", "content": TASK}),
            ],
        }
    }

    fn body(&self) -> Value {
        json!({
            "model": "auto",
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
            .post_json("/v1/chat/completions", &self.headers, &self.body());
        assert_eq!(reply.status, 200, "{:?}: {}", self.proxy.kind, reply.text());
        self.take(reply.json())
    }

    /// Takes a completion's answer into the conversation.
    fn take(&mut self, completion: Value) -> Answer {
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
}

/// The proxy's conversation counters.
fn counters(proxy: &Proxy) -> Value {
    proxy.health()["conversations"].clone()
}

/// Waits (bounded) until the agent has logged `n` runs; returns them.
fn runs_at_least(scratch: &Scratch, n: usize) -> Vec<AgentRun> {
    assert!(
        wait_until(Duration::from_secs(10), || scratch.runs().len() >= n),
        "{} runs logged, {n} expected",
        scratch.runs().len()
    );
    scratch.runs()
}

/// The prompt sizes of `runs`, for the report.
fn sizes(runs: &[AgentRun]) -> Vec<usize> {
    runs.iter().map(|run| run.stdin_bytes).collect()
}

fn a_tool_loop_resumes_one_chat_with_prompts_the_size_of_the_delta(kind: Kind) {
    const ROUNDS: u32 = 19;
    let scratch = Scratch::new("conv-loop");
    let agent = loop_agent(&scratch, ROUNDS, &[]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    for round in 0..ROUNDS {
        assert_eq!(client.round(), command(round), "round {round}");
    }
    assert_eq!(client.round(), done(ROUNDS));
    let runs = scratch.runs();
    assert_eq!(runs.len(), ROUNDS as usize + 1, "one run per request");
    let chat = runs[0].chat.clone().expect("the first run's chat");
    assert_eq!(runs[0].resumed(), None);
    assert!(runs[0].prompt.contains(TASK) && runs[0].prompt.contains(&system_text()));
    for (i, run) in runs.iter().enumerate().skip(1) {
        assert_eq!(run.resumed(), Some(chat.as_str()), "request {}", i + 1);
        assert_eq!(run.chat.as_deref(), Some(chat.as_str()));
        // Only the delta: the agent's last answer and the result of its call.
        assert!(
            !run.prompt.contains(TASK),
            "request {}: {}",
            i + 1,
            run.prompt
        );
        let round = i as u32 - 1;
        assert!(
            run.prompt
                .contains(&output_of(&format!("echo round-{round}"))),
            "{}",
            run.prompt
        );
    }
    let sizes = sizes(&runs);
    eprintln!("{kind:?}: prompt bytes per request, conversations on: {sizes:?}");
    let deltas = &sizes[1..];
    let (min, max) = (*deltas.iter().min().unwrap(), *deltas.iter().max().unwrap());
    assert!(
        max <= DELTA_BOUND,
        "a delta over {DELTA_BOUND} bytes: {sizes:?}"
    );
    // Rounds differ only in their numbers: no growth with the conversation.
    assert!(max - min <= 8, "deltas grow: {sizes:?}");
    assert!(sizes[0] > 2 * max + system_text().len() / 2, "{sizes:?}");
    let counters = counters(&proxy);
    assert_eq!(counters["resumed"], ROUNDS, "{counters}");
    assert_eq!(counters["fresh"]["no_session"], 1, "{counters}");
    assert_eq!(
        (counters["parked"].as_u64(), counters["busy"].as_u64()),
        (Some(1), Some(0))
    );
    proxy.wait_idle();
}

fn without_conversations_every_prompt_is_the_whole_history(kind: Kind) {
    const ROUNDS: u32 = 19;
    let scratch = Scratch::new("conv-off");
    let agent = loop_agent(&scratch, ROUNDS, &[]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--conversations", "off"]);
    let mut client = ChatClient::new(&proxy, &[]);
    for round in 0..ROUNDS {
        assert_eq!(client.round(), command(round), "round {round}");
    }
    assert_eq!(client.round(), done(ROUNDS));
    let runs = scratch.runs();
    assert_eq!(runs.len(), ROUNDS as usize + 1);
    let chats: HashSet<_> = runs.iter().map(|run| run.chat.clone().unwrap()).collect();
    assert_eq!(chats.len(), runs.len(), "a new chat every time");
    for run in &runs {
        assert_eq!(run.resumed(), None);
        assert!(run.prompt.contains(TASK) && run.prompt.contains(&system_text()));
    }
    let sizes = sizes(&runs);
    eprintln!("{kind:?}: prompt bytes per request, conversations off: {sizes:?}");
    for pair in sizes.windows(2) {
        assert!(
            pair[1] > pair[0] + 100,
            "every round adds its history: {sizes:?}"
        );
    }
    let counters = counters(&proxy);
    assert_eq!(counters["enabled"], false);
    assert_eq!(counters["fresh"]["disabled"], ROUNDS + 1, "{counters}");
    assert_eq!(
        (counters["resumed"].as_u64(), counters["parked"].as_u64()),
        (Some(0), Some(0))
    );
}

fn a_follow_up_turn_resumes_the_chat(kind: Kind) {
    let scratch = Scratch::new("conv-follow-up");
    let agent = loop_agent(&scratch, 1, &[]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    assert_eq!(client.round(), done(1));
    let follow_up = "Now run the whole suite, please.";
    client
        .messages
        .push(json!({"role": "user", "content": follow_up}));
    // The chat has had two runs: it answers from its own count, not the prompt's.
    assert_eq!(client.round(), done(2));
    let runs = scratch.runs();
    assert_eq!(runs.len(), 3);
    let chat = runs[0].chat.clone().unwrap();
    let last = &runs[2];
    assert_eq!(last.resumed(), Some(chat.as_str()));
    assert!(last.prompt.contains(follow_up), "{}", last.prompt);
    for earlier in [TASK, "Done after 1 tool rounds.", "round-0 (exit 0)"] {
        assert!(!last.prompt.contains(earlier), "{}", last.prompt);
    }
    assert!(last.stdin_bytes < DELTA_BOUND, "{:?}", sizes(&runs));
}

/// A lost chat played as `mode`: the resumed run fails or answers under another chat, and
/// the client sees only the fresh run's answer.
fn lost_chat(kind: Kind, mode: &str) {
    let scratch = Scratch::new("conv-lost");
    let agent = loop_agent(&scratch, 2, &["--lost-chat", mode]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    let chat = scratch.runs()[0].chat.clone().unwrap();
    // The agent forgets the chat.
    std::fs::remove_file(scratch.path("chats").join(&chat)).unwrap();
    assert_eq!(client.round(), command(1), "a normal answer");
    let runs = scratch.runs();
    assert_eq!(runs.len(), 3, "the resume, then one fresh run");
    assert_eq!(runs[1].resumed(), Some(chat.as_str()));
    assert_eq!(runs[2].resumed(), None);
    assert!(runs[2].prompt.contains(TASK), "the whole history");
    let fresh = runs[2].chat.clone().unwrap();
    assert_ne!(fresh, chat);
    // The conversation goes on in the fresh run's chat.
    assert_eq!(client.round(), done(2));
    let runs = scratch.runs();
    assert_eq!(runs.len(), 4);
    assert_eq!(runs[3].resumed(), Some(fresh.as_str()));
    let counters = counters(&proxy);
    assert_eq!(counters["resumed"], 2, "{counters}");
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

fn a_chat_the_agent_lost_is_answered_by_a_fresh_run_unseen(kind: Kind) {
    lost_chat(kind, "new-id");
}

fn a_chat_whose_resume_fails_is_answered_by_a_fresh_run_unseen(kind: Kind) {
    lost_chat(kind, "fail");
}

fn parked_chats_expire_and_the_next_request_is_fresh(kind: Kind) {
    let scratch = Scratch::new("conv-expiry");
    let agent = loop_agent(&scratch, 1, &[]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--conversation-ttl-secs", "1"]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    assert_eq!(counters(&proxy)["parked"], 1);
    assert!(
        wait_until(Duration::from_secs(10), || counters(&proxy)["parked"] == 0),
        "not expired: {}",
        counters(&proxy)
    );
    assert_eq!(counters(&proxy)["expired"], 1);
    assert_eq!(client.round(), done(1));
    let runs = scratch.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].resumed(), None, "fresh after the expiry");
    assert!(runs[1].prompt.contains(TASK));
}

fn after_a_restart_the_next_request_is_fresh(kind: Kind) {
    let scratch = Scratch::new("conv-restart");
    let agent = loop_agent(&scratch, 1, &[]);
    let mut first = Proxy::start(kind, &agent, &scratch, &[]);
    let mut client = ChatClient::new(&first, &[]);
    assert_eq!(client.round(), command(0));
    let messages = client.messages;
    assert!(first.stop().success());
    let second = Proxy::start(kind, &agent, &scratch, &[]);
    let mut client = ChatClient::new(&second, &[]);
    client.messages = messages;
    // Never a 409 for a chat the new process cannot see: the whole history, fresh.
    assert_eq!(client.round(), done(1));
    let runs = scratch.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].resumed(), None);
    assert!(runs[1].prompt.contains(TASK));
    assert_eq!(counters(&second)["fresh"]["no_session"], 1);
}

fn one_key_never_resumes_another_keys_chat(kind: Kind) {
    let scratch = Scratch::new("conv-owners");
    let agent = loop_agent(&scratch, 2, &[]);
    // Two keys in one flag, a third in another: three owners.
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &["--api-key", "sk-one,sk-two", "--api-key", "sk-three"],
    );
    let one = [("authorization", "Bearer sk-one")];
    let mut client = ChatClient::new(&proxy, &one);
    assert_eq!(client.round(), command(0));
    let chat = scratch.runs()[0].chat.clone().unwrap();
    let after_first = client.messages.clone();
    // The same conversation, continued with another key: fresh, and correct.
    for (n, key) in [
        ("x-api-key", "sk-two"),
        ("authorization", "Bearer sk-three"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut other = ChatClient::new(&proxy, &[(key.0, key.1)]);
        other.messages = after_first.clone();
        assert_eq!(other.round(), command(1));
        let run = &scratch.runs()[n + 1];
        assert_eq!(run.resumed(), None, "{key:?} resumed the chat of sk-one");
        assert!(run.prompt.contains(TASK));
    }
    // Its own key resumes it.
    assert_eq!(client.round(), command(1));
    let runs = scratch.runs();
    assert_eq!(runs.len(), 4);
    assert_eq!(runs[3].resumed(), Some(chat.as_str()));
    let counters = proxy.post_json("/v1/chat/completions", &[], &client.body());
    assert_eq!(counters.status, 401, "no key, no run");
}

fn a_client_gone_during_a_resumed_request_releases_its_chat(kind: Kind) {
    let scratch = Scratch::new("conv-gone");
    let agent = loop_agent(&scratch, 1, &["--hang-on-resume", "--spawn-child"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut client = ChatClient::new(&proxy, &[]);
    assert_eq!(client.round(), command(0));
    let chat = scratch.runs()[0].chat.clone().unwrap();
    let mut conn = proxy.connect();
    let body = client.body().to_string();
    conn.send(&raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        body.as_bytes(),
    ));
    let runs = runs_at_least(&scratch, 2);
    assert_eq!(runs[1].resumed(), Some(chat.as_str()));
    let counters_now = counters(&proxy);
    assert_eq!(
        (
            counters_now["busy"].as_u64(),
            counters_now["parked"].as_u64()
        ),
        (Some(1), Some(0)),
        "{counters_now}"
    );
    drop(conn);
    let groups = HashSet::from([runs[1].pid]);
    assert_groups_gone(&groups, Duration::from_secs(5), "client gone while resumed");
    assert!(
        wait_until(Duration::from_secs(10), || {
            let c = counters(&proxy);
            c["busy"] == 0 && c["parked"] == 0
        }),
        "the chat is still held: {}",
        counters(&proxy)
    );
    // The same request again: fresh (the chat may not hold what the client has), and right.
    assert_eq!(client.round(), done(1));
    let runs = scratch.runs();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[2].resumed(), None);
    assert!(runs[2].prompt.contains(TASK));
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

fn shutdown_with_parked_chats_exits_cleanly_and_leaves_no_agent(kind: Kind) {
    let scratch = Scratch::new("conv-shutdown");
    let agent = loop_agent(&scratch, 3, &["--hang-on-resume", "--spawn-child"]);
    let mut proxy = Proxy::start(kind, &agent, &scratch, &[]);
    // Two conversations parked (different tasks), and a third request holding one chat.
    let mut first = ChatClient::new(&proxy, &[]);
    assert_eq!(first.round(), command(0));
    let mut second = ChatClient::new(&proxy, &[]);
    second.messages[1] = json!({"role": "user", "content": "Update the changelog."});
    assert_eq!(second.round(), command(0));
    assert_eq!(counters(&proxy)["parked"], 2);
    let mut conn = proxy.connect();
    let body = first.body().to_string();
    conn.send(&raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        body.as_bytes(),
    ));
    let runs = runs_at_least(&scratch, 3);
    assert!(runs[2].resumed().is_some());
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    // The request in flight was told the server is going away.
    let reply = conn.reply();
    assert_eq!(reply.status, 503, "{}", reply.text());
    let groups: HashSet<u32> = scratch.runs().iter().map(|run| run.pid).collect();
    assert_groups_gone(&groups, Duration::from_secs(5), "after shutdown");
}

/// A Messages request for `messages`, as Claude Code sends them (its `Bash` tool).
/// The Messages client of the loop, as Claude Code sends it.
fn client() -> MessagesClient {
    MessagesClient {
        system: system_text(),
        bash_properties: json!({"command": {"type": "string"}}),
    }
}

fn a_messages_tool_loop_resumes_by_claude_codes_session_header(kind: Kind) {
    const ROUNDS: u32 = 3;
    let scratch = Scratch::new("conv-messages");
    let agent = loop_agent(&scratch, ROUNDS, &[]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let session = (
        "x-claude-code-session-id",
        "6f0c1d8e-2b4a-4c3d-9e5f-7a8b9c0d1e2f",
    );
    let (mut messages, answers) = client().run(&proxy, &[session], ROUNDS);
    let expected: Vec<Answer> = (0..ROUNDS).map(command).chain([done(ROUNDS)]).collect();
    assert_eq!(answers, expected);
    let runs = scratch.runs();
    let chat = runs[0].chat.clone().unwrap();
    assert_eq!(runs[0].resumed(), None);
    for run in &runs[1..] {
        assert_eq!(run.resumed(), Some(chat.as_str()));
        assert!(run.stdin_bytes < DELTA_BOUND && !run.prompt.contains(TASK));
    }
    eprintln!(
        "{kind:?}: Messages prompt bytes per request: {:?}",
        sizes(&runs)
    );
    assert_eq!(counters(&proxy)["resumed"], ROUNDS);
    // A follow-up without the header is another conversation's: it does not resume; with
    // it, the chat (undisturbed) does.
    messages.push(json!({"role": "user", "content": "Thanks. Anything else?"}));
    let body = client().body(&messages, false);
    for (headers, resumes) in [(&[][..], None), (&[session][..], Some(chat.as_str()))] {
        let reply = proxy.post_json("/v1/messages", headers, &body);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let last = scratch.runs().pop().unwrap();
        assert_eq!(last.resumed(), resumes, "{headers:?}");
    }
}

fn a_responses_tool_loop_resumes(kind: Kind) {
    const ROUNDS: u32 = 3;
    let scratch = Scratch::new("conv-responses");
    let agent = loop_agent(&scratch, ROUNDS, &[]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut input = vec![json!({"role": "user", "content": TASK})];
    let mut answers = Vec::new();
    for _ in 0..=ROUNDS {
        let body = json!({
            "model": "auto",
            "instructions": system_text(),
            "input": input,
            "tools": [{"type": "function", "name": "bash", "description": "Run a shell command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}],
        });
        let reply = proxy.post_json("/v1/responses", &[], &body);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let response = reply.json();
        let output = response["output"].as_array().unwrap().clone();
        input.extend(output.iter().cloned());
        let calls: Vec<&Value> = output
            .iter()
            .filter(|item| item["type"] == "function_call")
            .collect();
        match calls.as_slice() {
            [call] => {
                let arguments: Value =
                    serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
                let command = arguments["command"].as_str().unwrap().to_owned();
                input.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": output_of(&command)}));
                answers.push(Answer::Tool(command));
            }
            [] => {
                let text: String = output
                    .iter()
                    .filter(|item| item["type"] == "message")
                    .flat_map(|item| item["content"].as_array().unwrap().iter())
                    .map(|part| part["text"].as_str().unwrap())
                    .collect();
                answers.push(Answer::Text(text));
            }
            _ => panic!("{response}"),
        }
    }
    let expected: Vec<Answer> = (0..ROUNDS).map(command).chain([done(ROUNDS)]).collect();
    assert_eq!(answers, expected);
    let runs = scratch.runs();
    let chat = runs[0].chat.clone().unwrap();
    for run in &runs[1..] {
        assert_eq!(run.resumed(), Some(chat.as_str()));
        assert!(run.stdin_bytes < DELTA_BOUND && !run.prompt.contains(TASK));
    }
    eprintln!(
        "{kind:?}: Responses prompt bytes per request: {:?}",
        sizes(&runs)
    );
    assert_eq!(counters(&proxy)["resumed"], ROUNDS);
}
