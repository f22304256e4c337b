//! `--agent-protocol acp`: `/v1/models` is the warm agent's own list (in both of its
//! shapes, after a restart, without a session pool), and `/health` shows the agent to
//! authenticated callers.

mod support;

use std::time::Duration;

use support::acp::{
    acp_crash_and_restart, acp_events, acp_proxy, acp_proxy_with, chat_content, model_ids,
    two_prompts,
};
use support::both;
use support::client::raw;
use support::{Kind, ROOT, Scratch, plain_body, stream_body, wait_until};

both!(
    acp_models_are_the_agents_list_in_both_shapes,
    acp_models_follow_a_restarted_agent,
    acp_health_shows_the_warm_agent_to_authenticated_callers,
    acp_without_a_pool_the_models_are_known_after_a_first_request,
);

/// The stand-in offers its models as a `model` config option and as the older `models`
/// table: `/v1/models` lists them (asked before the first session exists, it waits for
/// it), a listed model is served, and an unknown one is a 404 before the head in every
/// dialect, sent to no agent.
fn acp_models_are_the_agents_list_in_both_shapes(kind: Kind) {
    for shape in ["config", "table"] {
        let scratch = Scratch::new("acp-models");
        let flags = [
            "--delay-ms",
            "1",
            "--models",
            "gpt-a,gpt-b",
            "--models-shape",
            shape,
        ];
        let proxy = acp_proxy(kind, &scratch, &two_prompts(), &flags);
        assert_eq!(
            model_ids(&proxy),
            ["gpt-a", "gpt-b", "auto", "default"],
            "{shape}"
        );
        let body = serde_json::json!({"model": "gpt-b", "stream": true,
            "messages": [{"role": "user", "content": "Ask alpha"}]});
        assert_eq!(
            chat_content(&proxy.chat(&body.to_string())),
            "Alpha one, first."
        );
        for stream in [false, true] {
            let body = serde_json::json!({"model": "no-such-model", "stream": stream,
                "messages": [{"role": "user", "content": "Ask beta"}]});
            let reply = proxy.chat(&body.to_string());
            assert_eq!(reply.status, 404, "{shape} {stream}: {}", reply.text());
            assert!(reply.text().contains("gpt-a, gpt-b"), "{}", reply.text());
            let body = serde_json::json!({"model": "no-such-model", "max_tokens": 10,
                "stream": stream, "messages": [{"role": "user", "content": "Ask beta"}]});
            let reply = proxy.post_json("/v1/messages", &[], &body);
            assert_eq!(reply.status, 404, "{}", reply.text());
            assert_eq!(
                reply.json()["type"],
                "error",
                "Anthropic's shape: {}",
                reply.text()
            );
        }
        assert_eq!(
            acp_events(&scratch, "prompt").len(),
            1,
            "only the known model ran"
        );
        proxy.wait_idle();
    }
}

/// The list is the current agent's: after the agent exits and is restarted, the new
/// process's list is served (the stand-in reads it from a file at each `session/new`).
fn acp_models_follow_a_restarted_agent(kind: Kind) {
    let scratch = Scratch::new("acp-models-restart");
    let list = scratch.0.join("models.txt");
    std::fs::write(&list, "first-model").unwrap();
    let crash = format!("{ROOT}/tests/fixtures/acp/synthetic__exit-mid-turn.jsonl");
    let models = format!("@{}", list.display());
    let flags = ["--delay-ms", "1", "--models", &models, "--once", &crash];
    let proxy = acp_proxy(kind, &scratch, &two_prompts(), &flags);
    assert_eq!(model_ids(&proxy), ["first-model", "auto", "default"]);
    std::fs::write(&list, "second-model,third-model").unwrap();
    acp_crash_and_restart(&proxy, &scratch);
    assert_eq!(
        model_ids(&proxy),
        ["second-model", "third-model", "auto", "default"]
    );
    // Without --api-key every caller is authenticated, and sees the detail.
    let acp = &proxy.health()["acp"];
    assert_eq!(
        (acp["restarts"].as_u64(), acp["models"].as_u64()),
        (Some(1), Some(2))
    );
    proxy.wait_idle();
}

/// `/health` with the key: the warm agent's protocol, state, restarts, turns and model
/// count; without it: `{"status":"ok"}` and nothing else.
fn acp_health_shows_the_warm_agent_to_authenticated_callers(kind: Kind) {
    let scratch = Scratch::new("acp-health");
    let crash = format!("{ROOT}/tests/fixtures/acp/synthetic__exit-mid-turn.jsonl");
    let proxy = acp_proxy_with(
        kind,
        &scratch,
        &two_prompts(),
        &[
            "--delay-ms",
            "300",
            "--once",
            &crash,
            "--models",
            "m1,m2,m3",
        ],
        &["--api-key", "sk-health"],
    );
    let auth = ("authorization", "Bearer sk-health");
    for headers in [vec![], vec![("authorization", "Bearer sk-wrong")]] {
        let reply = proxy.request("GET", "/health", &headers, b"");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json(), serde_json::json!({"status": "ok"}));
    }
    let detail = || {
        let reply = proxy.request("GET", "/health", &[auth], b"");
        assert_eq!(reply.status, 200);
        reply.json()["acp"].clone()
    };
    assert!(
        wait_until(Duration::from_secs(10), || detail()["models"] == 3),
        "ready with its list: {}",
        detail()
    );
    let acp = detail();
    assert_eq!(acp["protocol"], "acp");
    assert_eq!(acp["status"], "ready");
    assert_eq!(acp["restarts"], 0);
    assert_eq!(
        (acp["active_turns"].as_u64(), acp["queued_turns"].as_u64()),
        (Some(0), Some(0))
    );
    // The first prompt crashes the agent: one restart, then ready again.
    let json = ("content-type", "application/json");
    let reply = proxy.post_json(
        "/v1/chat/completions",
        &[auth],
        &serde_json::from_str(&plain_body("Ask alpha")).unwrap(),
    );
    assert!(reply.status >= 500, "{}", reply.text());
    assert!(
        wait_until(Duration::from_secs(10), || {
            let acp = detail();
            acp["restarts"] == 1 && acp["status"] == "ready" && acp["models"] == 3
        }),
        "{}",
        detail()
    );
    // A turn in flight is counted.
    let mut conn = proxy.connect();
    let body = stream_body("Ask beta");
    conn.send(&raw(
        "POST",
        "/v1/chat/completions",
        &[json, auth],
        body.as_bytes(),
    ));
    let (status, _) = conn.head();
    assert_eq!(status, 200);
    assert_eq!(detail()["active_turns"], 1);
    while conn.chunk().is_some() {}
    assert!(wait_until(
        Duration::from_secs(10),
        || detail()["active_turns"] == 0
    ));
}

/// `--acp-pool-size 0`: no session is made before a request, so `/v1/models` says so at
/// once (503 with `Retry-After`), and lists the models once a request has run.
fn acp_without_a_pool_the_models_are_known_after_a_first_request(kind: Kind) {
    let scratch = Scratch::new("acp-no-pool");
    let proxy = acp_proxy_with(
        kind,
        &scratch,
        &two_prompts(),
        &["--delay-ms", "1", "--models", "only-model"],
        &["--acp-pool-size", "0"],
    );
    let reply = proxy.request("GET", "/v1/models", &[], b"");
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.error_code(), "models_unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(proxy.health()["acp"]["models"], serde_json::Value::Null);
    assert_eq!(
        chat_content(&proxy.chat(&stream_body("Ask alpha"))),
        "Alpha one, first."
    );
    assert_eq!(model_ids(&proxy), ["only-model", "auto", "default"]);
    proxy.wait_idle();
}
