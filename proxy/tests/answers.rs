//! What both proxies answer, with `replay_agent` standing in for cursor-agent: a stream
//! and a whole body on the Chat Completions route, the other routes and their errors, the
//! `--demo`, and the command lines they refuse to start with.

mod support;

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::both;
use support::checks::{check_stream, expected_result};
use support::processes::{assert_groups_gone, zombies_of};
use support::{Kind, Proxy, Scratch, plain_body, stream_body, transcript};

both!(
    answers_streaming_and_whole,
    routes_and_errors,
    demo_answers_with_nothing_else_built,
    startup_refusals,
);

fn answers_streaming_and_whole(kind: Kind) {
    let scratch = Scratch::new("answers");
    let fixture = transcript("partial_recaps.jsonl");
    let expected = expected_result(&std::fs::read(&fixture).unwrap()).unwrap();
    let agent = scratch.agent(&["--transcript", &fixture, "--delay-ms", "1"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);

    let reply = proxy.chat(&stream_body("Check notes.txt"));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("cache-control"), Some("no-cache"));
    assert_eq!(reply.header("x-accel-buffering"), Some("no"));
    assert_eq!(
        reply.header("access-control-allow-origin"),
        None,
        "no CORS by default"
    );
    let summary = check_stream(&reply.body);
    assert_eq!(summary.content, expected);
    assert_eq!((summary.done, summary.finish_reasons.len()), (1, 1));

    let reply = proxy.request(
        "POST",
        "/chat/completions",
        &[("content-type", "application/json")],
        plain_body("Check notes.txt").as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body = reply.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["content"], expected.as_str());

    // The agent got the invocation's flags and the rendered prompt on stdin.
    let runs = scratch.runs();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert!(
            run.argv.windows(2).any(|w| w == ["--model", "auto"]),
            "{:?}",
            run.argv
        );
        assert!(run.argv.iter().any(|a| a == "stream-json"));
        assert!(run.prompt.contains("Check notes.txt"));
    }
    let groups: HashSet<u32> = runs.iter().map(|r| r.pid).collect();
    assert_groups_gone(&groups, Duration::from_secs(5), "finished runs");
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

fn routes_and_errors(kind: Kind) {
    let scratch = Scratch::new("routes");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);

    let reply = proxy.request("GET", "/v1/nothing", &[], b"");
    assert_eq!(reply.status, 404);
    assert_eq!(reply.error_code(), "unknown_url");
    let reply = proxy.request("GET", "/v1/chat/completions", &[], b"");
    assert_eq!(reply.status, 405);
    assert_eq!(reply.error_code(), "method_not_allowed");
    assert!(reply.header("allow").unwrap().contains("POST"));
    let reply = proxy.request("DELETE", "/health", &[], b"");
    assert_eq!(reply.status, 405);

    // OPTIONS without an Origin is no preflight: what the server allows, no CORS.
    let reply = proxy.request("OPTIONS", "*", &[], b"");
    assert_eq!(reply.status, 204);
    assert!(reply.header("allow").unwrap().contains("POST"));
    assert_eq!(reply.header("access-control-allow-origin"), None);

    // A body the bridge refuses: its 400, and no agent started.
    let reply = proxy.chat("{not json");
    assert_eq!(reply.status, 400);
    assert_eq!(reply.error_code(), "invalid_json");
    let reply = proxy.chat(r#"{"model":"auto","messages":[]}"#);
    assert_eq!(reply.status, 400);
    assert!(scratch.runs().is_empty());

    let models = proxy.request("GET", "/v1/models", &[], b"").json();
    assert_eq!(models["data"][0]["id"], "auto", "{models}");

    let health = proxy.health();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["agentwire"], env!("CARGO_PKG_VERSION"));
    assert!(
        health["agent"]["version"]
            .as_str()
            .unwrap()
            .starts_with("agentwire-replay-agent")
    );
    assert_eq!(health["in_flight"], 0);
    // Where the agent binary lives is nobody's business.
    let agent = agent.display().to_string();
    assert!(!health.to_string().contains(&agent), "{health}");
}

fn demo_answers_with_nothing_else_built(kind: Kind) {
    let scratch = Scratch::new("demo");
    let proxy = Proxy::start_with(kind, &["--demo".to_owned()], &scratch);
    assert!(proxy.banner.contains("curl -N http://"), "{}", proxy.banner);
    // The request the banner shows.
    let data = proxy
        .banner
        .split("-d '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap();
    let reply = proxy.chat(data);
    assert_eq!(reply.status, 200);
    let summary = check_stream(&reply.body);
    assert!(
        summary
            .content
            .starts_with("Hello! This answer comes from agentwire's demo"),
        "{}",
        summary.content
    );
    assert!(!summary.reasoning.is_empty());
    let models = proxy.request("GET", "/v1/models", &[], b"").json();
    assert_eq!(models["data"][0]["id"], "auto");
    proxy.wait_idle();
}

fn startup_refusals(kind: Kind) {
    let run = |args: &[&str]| {
        let output = Command::new(kind.binary())
            .args(args)
            .env_remove("AGENTWIRE_API_KEY")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // Not loopback and no key: refused before binding anything.
    let (code, stderr) = run(&["--listen", "0.0.0.0:0", "--demo"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--api-key"), "{stderr}");
    let (code, stderr) = run(&["--listen", "[::]:0", "--demo"]);
    assert_eq!(code, Some(2), "{stderr}");
    // No agent binary: the install hint.
    let (code, stderr) = run(&["--agent-bin", "agentwire-no-such-agent"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("not found") && stderr.contains("Install"),
        "{stderr}"
    );
    assert!(stderr.contains("--demo"), "{stderr}");
    // ACP flags that do not go together.
    let (code, stderr) = run(&["--agent-arg", "acp", "--demo"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--agent-protocol acp"), "{stderr}");
    let (code, stderr) = run(&["--agent-protocol", "acp", "--demo"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--demo"), "{stderr}");
}
