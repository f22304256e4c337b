//! `--agent-protocol acp`: a proxy whose one warm agent is the `acp_agent` stand-in, and
//! what the stand-in logs.

use std::collections::HashSet;
use std::time::Duration;

use super::checks::check_stream;
use super::client::Reply;
use super::{Kind, Proxy, ROOT, Scratch, example, plain_body, wait_until};

/// A proxy whose warm ACP agent is `acp_agent` playing `recording` with `flags`.
pub fn acp_proxy(kind: Kind, scratch: &Scratch, recording: &str, flags: &[&str]) -> Proxy {
    acp_proxy_with(kind, scratch, recording, flags, &[])
}

/// [`acp_proxy`] with `proxy_flags` for the proxy.
pub fn acp_proxy_with(
    kind: Kind,
    scratch: &Scratch,
    recording: &str,
    flags: &[&str],
    proxy_flags: &[&str],
) -> Proxy {
    let quoted: Vec<String> = flags.iter().map(|f| format!("'{f}'")).collect();
    let script = format!(
        "#!/bin/sh\nexec '{}' --recording '{recording}' {} \"$@\"\n",
        example("acp_agent").display(),
        quoted.join(" ")
    );
    let agent = scratch.script("acp.sh", &script);
    let mut flags = vec!["--agent-protocol", "acp", "--agent-arg", "acp"];
    flags.extend_from_slice(proxy_flags);
    Proxy::start(kind, &agent, scratch, &flags)
}

pub fn two_prompts() -> String {
    format!("{ROOT}/proxy/tests/fixtures/acp-two-prompts.jsonl")
}

/// The stand-in's log lines of `event`.
pub fn acp_events(scratch: &Scratch, event: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(scratch.log()).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|v| v["event"] == event)
        .collect()
}

/// Every line of the stand-ins' log.
pub fn acp_events_all(scratch: &Scratch) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(scratch.log()).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn acp_groups(scratch: &Scratch) -> HashSet<u32> {
    acp_events(scratch, "start")
        .iter()
        .map(|v| v["pid"].as_u64().unwrap() as u32)
        .collect()
}

/// A request whose prompt crashes the agent (the stand-in's `--once` crash): its
/// failure, once the agent was restarted.
pub fn acp_crash_and_restart(proxy: &Proxy, scratch: &Scratch) -> Reply {
    let reply = proxy.chat(&plain_body("Ask alpha"));
    assert!(reply.status >= 500, "{} {}", reply.status, reply.text());
    assert!(
        wait_until(Duration::from_secs(10), || acp_events(scratch, "start")
            .len()
            == 2),
        "restarted"
    );
    reply
}

pub fn chat_content(reply: &Reply) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let summary = check_stream(&reply.body);
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    assert_eq!(summary.finish_reasons, ["stop"]);
    summary.content
}

/// The ids `/v1/models` lists.
pub fn model_ids(proxy: &Proxy) -> Vec<String> {
    let reply = proxy.request("GET", "/v1/models", &[], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["object"], "list", "{body}");
    assert_eq!(body["has_more"], false, "{body}");
    let data = body["data"].as_array().unwrap();
    for model in data {
        // What the OpenAI and the Anthropic SDKs read of each.
        assert_eq!(model["object"], "model");
        assert_eq!(model["type"], "model");
        assert!(model["created"].is_u64() && model["created_at"].is_string());
        assert_eq!(model["display_name"], model["id"]);
    }
    assert_eq!(body["first_id"], data[0]["id"]);
    assert_eq!(body["last_id"], data[data.len() - 1]["id"]);
    data.iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}
