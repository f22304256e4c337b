//! `--agent-protocol acp`: one warm agent (the `acp_agent` stand-in) serving every
//! request, in every dialect, concurrently; cancellation, crashes, restarts, scripted
//! failures, shutdown, the prompt cap, closed sessions and a client that reads late.

mod support;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use support::acp::{
    acp_crash_and_restart, acp_events, acp_events_all, acp_groups, acp_proxy, acp_proxy_with,
    chat_content, model_ids, two_prompts,
};
use support::both;
use support::checks::responses::check_responses_stream;
use support::checks::{self, check_stream};
use support::client::Conn;
use support::messages;
use support::processes::{alive_in, assert_groups_gone, pids_in, zombies_of};
use support::{
    Kind, Proxy, ROOT, Scratch, assert_shutdown_in_band, example, plain_body, stream_body,
    wait_until,
};

both!(
    acp_one_warm_process_serves_every_dialect,
    acp_concurrent_turns_interleave_on_one_pipe,
    acp_client_gone_cancels_the_session_only,
    acp_agent_dying_mid_turn_is_restarted,
    acp_shutdown_leaves_no_process,
    acp_shutdown_stops_what_the_agent_detached,
    acp_scripted_failures_reach_the_client,
    acp_stand_in_plays_the_recorded_agents,
    acp_an_agent_that_never_serves_fails_requests_fast,
    acp_prompt_cap_queues_then_fails_with_503_in_the_routes_dialect,
    acp_finished_sessions_are_closed_when_the_agent_offers_it,
    acp_a_client_that_reads_late_still_gets_everything,
);

/// Requests in sequence, in every dialect, streamed and whole: one agent process, one
/// prompt each, each its own answer.
fn acp_one_warm_process_serves_every_dialect(kind: Kind) {
    let scratch = Scratch::new("acp-warm");
    let proxy = acp_proxy(kind, &scratch, &two_prompts(), &["--delay-ms", "1"]);
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask alpha"))),
        "Alpha one, first."
    );
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask beta"))),
        "Beta two, second."
    );
    let reply = proxy.chat(&plain_body("Ask beta"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "Beta two, second."
    );

    let message = serde_json::json!({"model": "default", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "Ask alpha"}]});
    let reply = proxy.post_json("/v1/messages", &[], &message);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let stream = messages::check_stream(&reply.body, "default");
    assert_eq!(stream.text(), "Alpha one, first.");
    assert!(stream.error.is_none());
    let response = serde_json::json!({"model": "default", "stream": true, "input": "Ask beta"});
    let reply = proxy.post_json("/v1/responses", &[], &response);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let summary = check_responses_stream(&reply.body);
    assert_eq!(summary.terminal, "response.completed");
    assert_eq!(summary.text, "Beta two, second.");

    // The recording's session offers `default` alone; `auto` is accepted besides.
    assert_eq!(model_ids(&proxy), ["default", "auto"]);
    assert!(
        acp_events(&scratch, "close").is_empty(),
        "no session/close for an agent that does not offer it"
    );

    assert_eq!(acp_events(&scratch, "start").len(), 1, "one warm process");
    assert_eq!(
        acp_events(&scratch, "prompt").len(),
        5,
        "one prompt per request"
    );
    let argv = &acp_events(&scratch, "start")[0]["argv"];
    assert!(
        argv.as_array().unwrap().iter().any(|a| a == "acp"),
        "{argv}"
    );
    proxy.wait_idle();
}

/// Two streams at once: both prompts run on the one process before either is answered,
/// and each client gets its own answer.
fn acp_concurrent_turns_interleave_on_one_pipe(kind: Kind) {
    let scratch = Scratch::new("acp-concurrent");
    let proxy = acp_proxy(kind, &scratch, &two_prompts(), &["--delay-ms", "30"]);
    std::thread::scope(|s| {
        let proxy = &proxy;
        let alpha = s.spawn(move || chat_content(&proxy.chat(&stream_body("Ask alpha"))));
        let beta = s.spawn(move || chat_content(&proxy.chat(&stream_body("Ask beta"))));
        assert_eq!(alpha.join().unwrap(), "Alpha one, first.");
        assert_eq!(beta.join().unwrap(), "Beta two, second.");
    });
    assert_eq!(acp_events(&scratch, "start").len(), 1);
    let text = std::fs::read_to_string(scratch.log()).unwrap();
    let order: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].to_string())
        .filter(|e| e != "\"start\"")
        .collect();
    assert_eq!(
        order,
        ["\"prompt\"", "\"prompt\"", "\"answered\"", "\"answered\""],
        "both prompts ran at once"
    );
    proxy.wait_idle();
}

/// A client hanging up mid-stream: its session is cancelled, the process stays and
/// answers the next request.
fn acp_client_gone_cancels_the_session_only(kind: Kind) {
    let scratch = Scratch::new("acp-gone");
    let proxy = acp_proxy(kind, &scratch, &two_prompts(), &["--delay-ms", "200"]);
    let mut conn = proxy.open_stream();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("\"content\"") {
        seen.extend(conn.chunk().expect("frames before the end"));
    }
    drop(conn);
    assert!(
        wait_until(Duration::from_secs(10), || acp_events(&scratch, "cancel")
            .len()
            == 1),
        "session/cancel sent"
    );
    assert!(acp_events(&scratch, "answered").is_empty());
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask beta"))),
        "Beta two, second."
    );
    assert_eq!(acp_events(&scratch, "start").len(), 1, "the process stayed");
    proxy.wait_idle();
}

/// The agent exits mid-turn: that request fails (a status, as its head had not gone),
/// the process is restarted and the next request answered.
fn acp_agent_dying_mid_turn_is_restarted(kind: Kind) {
    let scratch = Scratch::new("acp-dies");
    let crash = format!("{ROOT}/tests/fixtures/acp/synthetic__exit-mid-turn.jsonl");
    let proxy = acp_proxy(
        kind,
        &scratch,
        &two_prompts(),
        &["--delay-ms", "1", "--once", &crash],
    );
    let reply = acp_crash_and_restart(&proxy, &scratch);
    assert!(reply.text().contains("out of memory"), "{}", reply.text());
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask alpha"))),
        "Alpha one, first."
    );
    let first = acp_events(&scratch, "start")[0]["pid"].as_u64().unwrap() as u32;
    assert_groups_gone(
        &HashSet::from([first]),
        Duration::from_secs(5),
        "the dead agent",
    );
    assert!(zombies_of(proxy.child.id()).is_empty());
    proxy.wait_idle();
}

/// Shutdown mid-stream: the stream ends in-band, the agent's group is stopped and
/// reaped.
fn acp_shutdown_leaves_no_process(kind: Kind) {
    let scratch = Scratch::new("acp-shutdown");
    let mut proxy = acp_proxy(kind, &scratch, &two_prompts(), &["--delay-ms", "200"]);
    let mut conn = proxy.open_stream();
    let body = conn.chunk().expect("a first frame");
    let groups = acp_groups(&scratch);
    assert_eq!(groups.len(), 1);
    assert!(!alive_in(&groups).is_empty());
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    assert_shutdown_in_band(&mut conn, body);
    assert_groups_gone(&groups, Duration::from_secs(1), "after shutdown");
}

/// A warm agent runs commands a prompt asked for, some detached into groups of their own
/// (Claude Code's shell tool), some of them dropped by their parent while the agent runs on
/// (a session's process gone): stopping the agent stops them too.
fn acp_shutdown_stops_what_the_agent_detached(kind: Kind) {
    let scratch = Scratch::new("acp-detached");
    let pids = scratch.path("detached.pids");
    let script = format!(
        "#!/bin/sh\n\
         if [ \"$1\" != --version ]; then\n\
         \tsetsid sleep 60 &\n\
         \t# Out of the group before the proxy can stop the agent.\n\
         \tuntil [ \"$(cut -d' ' -f6 /proc/$!/stat)\" = \"$!\" ]; do :; done\n\
         \techo $! >> '{pids}'\n\
         \t# And one whose parent exits at once: an orphan while the agent lives.\n\
         \tsh -c 'setsid sleep 60 & until [ \"$(cut -d\" \" -f6 /proc/$!/stat)\" = \"$!\" ]; do :; done; echo $! >> {pids}'\n\
         fi\n\
         exec '{}' --recording '{}' \"$@\"\n",
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
    let reply = proxy.chat(&plain_body("Ask alpha"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let detached: HashSet<u32> = pids_in(&pids).into_iter().collect();
    assert_eq!(detached.len(), 2);
    assert_eq!(alive_in(&detached).len(), 2, "groups of their own, running");
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    assert_groups_gone(&detached, Duration::from_secs(5), "after shutdown");
}

/// The stand-in's scripted failures through the proxy: an agent not logged in, malformed
/// lines among its output, and a crash after the stream's head (in-band).
fn acp_scripted_failures_reach_the_client(kind: Kind) {
    let fixture = |name: &str| format!("{ROOT}/tests/fixtures/acp/synthetic__{name}.jsonl");

    let scratch = Scratch::new("acp-login");
    let proxy = acp_proxy(kind, &scratch, &fixture("not-logged-in"), &[]);
    let reply = proxy.chat(&plain_body("hi"));
    assert!(reply.status >= 400, "{} {}", reply.status, reply.text());
    assert!(reply.text().contains("not logged in"), "{}", reply.text());
    drop(proxy);

    let scratch = Scratch::new("acp-malformed");
    let proxy = acp_proxy(
        kind,
        &scratch,
        &fixture("malformed-line"),
        &["--delay-ms", "0"],
    );
    assert_eq!(chat_content(&proxy.chat(&stream_body("hi"))), "Still fine.");
    drop(proxy);

    let scratch = Scratch::new("acp-crash-in-band");
    let crash = fixture("exit-mid-turn");
    let flags = ["--delay-ms", "1", "--once", crash.as_str()];
    let proxy = acp_proxy(kind, &scratch, &two_prompts(), &flags);
    let reply = proxy.chat(&stream_body("Ask alpha"));
    assert_eq!(reply.status, 200, "the head went with the first words");
    let summary = check_stream(&reply.body);
    assert_eq!(summary.content, "Half an");
    assert_eq!(summary.errors.len(), 1, "{}", reply.text());
    assert!(summary.errors[0].to_string().contains("out of memory"));
    assert!(wait_until(Duration::from_secs(10), || {
        acp_events(&scratch, "start").len() == 2
    }));
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask beta"))),
        "Beta two, second."
    );
    proxy.wait_idle();
}

/// The stand-in playing the real agents' recordings (`fixtures/acp` of the real captures)
/// through the proxy: each answer is the recorded agent's message text.
fn acp_stand_in_plays_the_recorded_agents(kind: Kind) {
    let Some(fixtures) = checks::shared::fixtures("the stand-in playing the ACP recordings") else {
        return;
    };
    let recordings: Vec<PathBuf> = fixtures
        .files("acp", ".jsonl")
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".jsonl")
                && ["__text", "__tool-read", "__permission"]
                    .iter()
                    .any(|k| name.contains(k))
        })
        .collect();
    assert!(recordings.len() >= 9, "{recordings:?}");
    for recording in recordings {
        let text = std::fs::read_to_string(&recording).unwrap();
        let expected: String = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["dir"] == "agent→client")
            .filter(|v| v["msg"]["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|v| {
                v["msg"]["params"]["update"]["content"]["text"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        let scratch = Scratch::new("acp-recorded");
        let proxy = acp_proxy(
            kind,
            &scratch,
            &recording.display().to_string(),
            &["--delay-ms", "0"],
        );
        let name = recording
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let reply = proxy.chat(&stream_body("What does notes.txt say?"));
        assert_eq!(chat_content(&reply), expected, "{name}");
    }
}

/// An agent that exits at once, every time: requests fail with a retryable error instead
/// of waiting, the proxy keeps restarting it (with back-off) and leaves nothing behind.
fn acp_an_agent_that_never_serves_fails_requests_fast(kind: Kind) {
    let scratch = Scratch::new("acp-never");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\necho '{{\"event\":\"start\",\"pid\":'$$'}}' >> '{}'\necho 'cannot start: no credentials' >&2\nexit 1\n",
        scratch.log().display()
    );
    let agent = scratch.script("acp.sh", &script);
    let mut proxy = Proxy::start(kind, &agent, &scratch, &["--agent-protocol", "acp"]);
    assert!(
        wait_until(Duration::from_secs(10), || {
            acp_events(&scratch, "start").len() >= 2
        }),
        "restarted"
    );
    for _ in 0..3 {
        let reply = proxy.chat(&plain_body("hi"));
        assert!(reply.status >= 500, "{} {}", reply.status, reply.text());
        assert_eq!(
            reply.header("x-should-retry"),
            Some("true"),
            "{}",
            reply.text()
        );
    }
    let groups = acp_groups(&scratch);
    assert!(proxy.stop().success());
    assert_groups_gone(&groups, Duration::from_secs(1), "after shutdown");
}

/// `--acp-max-prompts 1`: a second request waits for the first prompt to end, then runs;
/// with a short `--acp-queue-timeout-ms` it fails with 503 in its route's dialect.
fn acp_prompt_cap_queues_then_fails_with_503_in_the_routes_dialect(kind: Kind) {
    let scratch = Scratch::new("acp-cap");
    let proxy = acp_proxy_with(
        kind,
        &scratch,
        &two_prompts(),
        &["--delay-ms", "300"],
        &["--acp-max-prompts", "1", "--api-key", "sk-cap"],
    );
    let auth = ("authorization", "Bearer sk-cap");
    let json = ("content-type", "application/json");
    let detail = || proxy.request("GET", "/health", &[auth], b"").json()["acp"].clone();
    let ask = |text: &str| {
        let body = plain_body(text);
        let reply = proxy.request(
            "POST",
            "/v1/chat/completions",
            &[json, auth],
            body.as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()["choices"][0]["message"]["content"].clone()
    };
    std::thread::scope(|s| {
        let first = s.spawn(|| ask("Ask alpha"));
        assert!(
            wait_until(Duration::from_secs(10), || acp_events(&scratch, "prompt")
                .len()
                == 1),
            "the first prompt runs"
        );
        let second = s.spawn(|| ask("Ask beta"));
        assert!(
            wait_until(Duration::from_secs(10), || detail()["queued_turns"] == 1),
            "the second waits: {}",
            detail()
        );
        assert_eq!(detail()["active_turns"], 2);
        assert_eq!(first.join().unwrap(), "Alpha one, first.");
        assert_eq!(second.join().unwrap(), "Beta two, second.");
    });
    let order: Vec<String> = acp_events_all(&scratch)
        .iter()
        .filter(|e| e["event"] == "prompt" || e["event"] == "answered")
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        order,
        ["prompt", "answered", "prompt", "answered"],
        "one at a time"
    );
    drop(proxy);

    let scratch = Scratch::new("acp-cap-timeout");
    let proxy = acp_proxy_with(
        kind,
        &scratch,
        &two_prompts(),
        &["--delay-ms", "400"],
        &["--acp-max-prompts", "1", "--acp-queue-timeout-ms", "100"],
    );
    let mut held = proxy.open_stream();
    let chat = proxy.chat(&plain_body("Ask beta"));
    assert_eq!(chat.status, 503, "{}", chat.text());
    assert!(chat.text().contains("prompt slots"), "{}", chat.text());
    assert!(
        chat.json()["error"]["message"].is_string(),
        "OpenAI's shape"
    );
    let message = serde_json::json!({"model": "auto", "max_tokens": 10,
        "messages": [{"role": "user", "content": "Ask beta"}]});
    let reply = proxy.post_json("/v1/messages", &[], &message);
    assert_eq!(reply.status, 503, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["type"], "error", "Anthropic's shape: {body}");
    assert!(body["error"]["type"].is_string(), "{body}");
    let response = serde_json::json!({"model": "auto", "input": "Ask beta"});
    let reply = proxy.post_json("/v1/responses", &[], &response);
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert!(
        reply.json()["error"]["message"].is_string(),
        "{}",
        reply.text()
    );
    assert_eq!(
        acp_events(&scratch, "prompt").len(),
        1,
        "none of them reached the agent"
    );
    while held.chunk().is_some() {}
    proxy.wait_idle();
}

/// An agent that offers `session/close` is told to close each session whose turn is
/// over, once. (With conversations on, an answered session is parked for a follow-up
/// instead, and closed when it is let go: see `acp_conversations.rs`.)
fn acp_finished_sessions_are_closed_when_the_agent_offers_it(kind: Kind) {
    let scratch = Scratch::new("acp-close");
    let flags = ["--delay-ms", "1", "--session-close"];
    let proxy = acp_proxy_with(
        kind,
        &scratch,
        &two_prompts(),
        &flags,
        &["--conversations", "off"],
    );
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask alpha"))),
        "Alpha one, first."
    );
    let reply = proxy.chat(&plain_body("Ask beta"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let session = |e: &serde_json::Value| e["session"].as_str().unwrap().to_owned();
    assert!(
        wait_until(Duration::from_secs(10), || acp_events(&scratch, "close")
            .len()
            == 2),
        "{:?}",
        acp_events_all(&scratch)
    );
    let prompted: Vec<String> = acp_events(&scratch, "prompt").iter().map(session).collect();
    let closed: Vec<String> = acp_events(&scratch, "close").iter().map(session).collect();
    assert_eq!(closed, prompted);
    proxy.wait_idle();
    assert_eq!(proxy.health()["acp"]["sessions_closed"], 2);
}

/// A client that reads nothing until the agent has answered the whole prompt (megabytes,
/// more than the socket holds): its turn waits in the connection while the client cannot
/// take more, and is drained whole once it reads again. Only turns with output are woken,
/// so this checks that a turn left undrained is not forgotten.
fn acp_a_client_that_reads_late_still_gets_everything(kind: Kind) {
    let scratch = Scratch::new("acp-reads-late");
    let piece = "x".repeat(64 * 1024);
    let pieces = 48;
    let mut lines = vec![
        serde_json::json!({"dir": "client→agent", "msg": {"jsonrpc": "2.0", "id": 0, "method": "initialize"}}),
        serde_json::json!({"dir": "agent→client", "msg": {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}}),
        serde_json::json!({"dir": "client→agent", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/new"}}),
        serde_json::json!({"dir": "agent→client", "msg": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s-1"}}}),
        serde_json::json!({"dir": "client→agent", "msg": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": "s-1", "prompt": [{"type": "text", "text": "Ask big"}]}}}),
    ];
    for _ in 0..pieces {
        lines.push(serde_json::json!({"dir": "agent→client", "msg": {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s-1", "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": piece}}}}}));
    }
    lines.push(serde_json::json!({"dir": "agent→client", "msg": {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}}));
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let recording = scratch.0.join("big.jsonl");
    std::fs::write(&recording, text.join("\n")).unwrap();
    let proxy = acp_proxy(
        kind,
        &scratch,
        recording.to_str().unwrap(),
        &["--delay-ms", "0"],
    );
    let mut conn = Conn::open_small_window(proxy.addr);
    conn.post_chat(&stream_body("Ask big"));
    assert_eq!(conn.head().0, 200);
    assert!(
        wait_until(Duration::from_secs(20), || acp_events(&scratch, "answered")
            .len()
            == 1),
        "the agent answered while the client read nothing"
    );
    let mut body = Vec::new();
    while let Some(chunk) = conn.chunk() {
        body.extend_from_slice(&chunk);
    }
    let summary = check_stream(&body);
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    assert_eq!(summary.finish_reasons, ["stop"]);
    assert_eq!(summary.content.len(), piece.len() * pieces);
    proxy.wait_idle();
}
