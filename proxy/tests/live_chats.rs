//! `--cursor-mcp`, in both proxies: cursor-agent given the client's tools as MCP tools
//! through `.cursor/mcp.json`, one agent process for a whole tool loop — each response
//! ends with the client's call while the agent waits inside it (parked, holding no slot),
//! and the next request's result answers the call in the same process. Also: the files
//! written and removed, refused over the user's own; a parked agent stopped when its chat
//! expires and at shutdown; the MCP endpoint's bearer check; the flag's refusals.
//! `replay_agent --mcp-rounds N` plays cursor-agent: an MCP client of the server the
//! workspace's `.cursor/mcp.json` names, calling its first tool once a round.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::processes::{alive_in, assert_groups_gone};
use support::{Kind, Proxy, Scratch, both, wait_until};

both!(
    a_tool_loop_runs_in_one_agent_process_its_calls_answered_over_mcp,
    a_parked_agent_is_stopped_when_its_chat_expires,
    shutdown_stops_parked_agents_and_removes_the_files,
    the_mcp_endpoint_needs_a_live_chats_bearer,
    the_flag_is_refused_where_it_cannot_work,
);

const ROUNDS: usize = 3;

fn tools() -> Value {
    json!([{"type":"function","function":{"name":"bash","description":"Runs a shell command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}])
}

/// The workspace the proxy writes `.cursor/` into.
fn workspace(scratch: &Scratch) -> PathBuf {
    let dir = scratch.path("work");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A proxy with `--cursor-mcp` over the stand-in playing `rounds` MCP tool rounds.
fn live_proxy(kind: Kind, scratch: &Scratch, rounds: usize, extra: &[&str]) -> Proxy {
    let rounds = rounds.to_string();
    let agent = scratch.agent(&["--mcp-rounds", &rounds, "--delay-ms", "0"]);
    let work = workspace(scratch);
    let mut flags = vec!["--cursor-mcp", "--workspace", work.to_str().unwrap()];
    flags.extend_from_slice(extra);
    Proxy::start(kind, &agent, scratch, &flags)
}

/// The stand-in's log lines of `event`.
fn events(scratch: &Scratch, event: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(scratch.log()).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|v| v["event"] == event)
        .collect()
}

/// The agent processes that ran, by pid.
fn agent_pids(scratch: &Scratch) -> std::collections::HashSet<u32> {
    scratch.runs().iter().map(|run| run.pid).collect()
}

fn live_counters(proxy: &Proxy) -> (u64, u64) {
    let health = proxy.health();
    let conversations = &health["conversations"];
    (
        conversations["parked_agents"].as_u64().unwrap(),
        conversations["live_chats"].as_u64().unwrap(),
    )
}

/// One request of the loop: the messages so far; the answer's message.
fn ask(proxy: &Proxy, messages: &[Value]) -> Value {
    let body = json!({"model":"auto","messages":messages,"tools":tools()});
    let reply = proxy.post_json("/v1/chat/completions", &[], &body);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    answer["choices"][0].clone()
}

/// Runs the loop's first `rounds` rounds: each answer a call of `bash` with `echo
/// round-k`, answered with `output-k`. The messages after them.
fn rounds(proxy: &Proxy, scratch: &Scratch, rounds: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role":"user","content":"Run the rounds."})];
    for k in 1..=rounds {
        let choice = ask(proxy, &messages);
        assert_eq!(choice["finish_reason"], "tool_calls", "round {k}: {choice}");
        let message = choice["message"].clone();
        let call = &message["tool_calls"][0];
        assert_eq!(call["function"]["name"], "bash");
        let arguments: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments["command"], format!("echo round-{k}"));
        let id = call["id"].clone();
        messages.push(message);
        messages.push(json!({"role":"tool","tool_call_id":id,"content":format!("output-{k}")}));
        // Parked between rounds: the agent waits in the call, holding no slot.
        assert!(
            wait_until(Duration::from_secs(10), || live_counters(proxy) == (1, 1)),
            "round {k}: {}",
            proxy.health()
        );
        assert_eq!(proxy.in_flight(), 0, "a parked agent holds no slot");
        assert_eq!(agent_pids(scratch).len(), 1, "one agent process");
    }
    messages
}

fn a_tool_loop_runs_in_one_agent_process_its_calls_answered_over_mcp(kind: Kind) {
    let scratch = Scratch::new("live-loop");
    let mut proxy = live_proxy(kind, &scratch, ROUNDS, &[]);
    let mcp_json = workspace(&scratch).join(".cursor/mcp.json");
    let file: Value = serde_json::from_slice(&std::fs::read(&mcp_json).unwrap()).unwrap();
    let url = file["mcpServers"]["agentwire"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp/cursor"),
        "{url}"
    );
    let messages = rounds(&proxy, &scratch, ROUNDS);
    let choice = ask(&proxy, &messages);
    assert_eq!(choice["finish_reason"], "stop", "{choice}");
    let text = choice["message"]["content"].as_str().unwrap();
    assert!(
        text.contains(&format!("Done after {ROUNDS} tool rounds")) && text.contains("output-3"),
        "{text}"
    );
    // One process: given the prompt once, the results through its MCP calls.
    let runs = scratch.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].argv.iter().any(|a| a == "--approve-mcps"));
    let results: Vec<String> = events(&scratch, "tool_result")
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results, ["output-1", "output-2", "output-3"]);
    let sessions = events(&scratch, "mcp_session");
    assert_eq!(sessions.len(), 1);
    assert!(
        sessions[0]["authorization"]
            .as_str()
            .unwrap()
            .starts_with("Bearer ")
    );
    assert!(
        wait_until(Duration::from_secs(10), || live_counters(&proxy) == (0, 0)),
        "{}",
        proxy.health()
    );
    assert!(proxy.stop().success());
    assert!(!mcp_json.exists(), "the files go at exit");
}

fn a_parked_agent_is_stopped_when_its_chat_expires(kind: Kind) {
    let scratch = Scratch::new("live-expiry");
    let proxy = live_proxy(kind, &scratch, ROUNDS, &["--conversation-ttl-secs", "1"]);
    rounds(&proxy, &scratch, 1);
    let pids = agent_pids(&scratch);
    assert_eq!(alive_in(&pids).len(), 1, "parked, running");
    assert!(
        wait_until(Duration::from_secs(10), || live_counters(&proxy) == (0, 0)),
        "{}",
        proxy.health()
    );
    assert_groups_gone(&pids, Duration::from_secs(10), "after its chat expired");
    // A new conversation runs as before.
    let messages = vec![json!({"role":"user","content":"Run the rounds."})];
    let choice = ask(&proxy, &messages);
    assert_eq!(choice["finish_reason"], "tool_calls");
}

fn shutdown_stops_parked_agents_and_removes_the_files(kind: Kind) {
    let scratch = Scratch::new("live-shutdown");
    let mut proxy = live_proxy(kind, &scratch, ROUNDS, &[]);
    rounds(&proxy, &scratch, 1);
    let pids = agent_pids(&scratch);
    assert_eq!(alive_in(&pids).len(), 1);
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    assert_groups_gone(&pids, Duration::from_secs(5), "after shutdown");
    let dot_cursor = workspace(&scratch).join(".cursor");
    assert!(
        !dot_cursor.exists(),
        "removed with the files agentwire made"
    );
}

fn the_mcp_endpoint_needs_a_live_chats_bearer(kind: Kind) {
    let scratch = Scratch::new("live-bearer");
    let proxy = live_proxy(kind, &scratch, ROUNDS, &[]);
    rounds(&proxy, &scratch, 1);
    let bearer = events(&scratch, "mcp_session")[0]["authorization"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = bearer
        .strip_prefix("Bearer ")
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .to_owned();
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    let cases = [
        (None, 401),
        (Some(format!("Bearer {token}.{}", "0".repeat(32))), 401),
        (Some("Bearer nobody.secret".to_owned()), 404),
    ];
    for (authorization, status) in cases {
        let mut headers = vec![("accept", "application/json, text/event-stream")];
        if let Some(value) = &authorization {
            headers.push(("authorization", value.as_str()));
        }
        let reply = proxy.post_json("/mcp/cursor", &headers, &ping);
        assert_eq!(reply.status, status, "{authorization:?}: {}", reply.text());
    }
    // The parked agent is still waiting in its call.
    assert_eq!(live_counters(&proxy), (1, 1));
}

fn the_flag_is_refused_where_it_cannot_work(kind: Kind) {
    let scratch = Scratch::new("live-refused");
    let agent = scratch.agent(&["--mcp-rounds", "1"]);
    let work = workspace(&scratch);
    let cursor = work.join(".cursor");
    std::fs::create_dir_all(&cursor).unwrap();
    std::fs::write(cursor.join("mcp.json"), "{\"mcpServers\":{}}").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--conversations", "off"], "needs --conversations on"),
        (&["--agent-protocol", "acp"], "drop --agent-protocol acp"),
        (&[], "mcp.json exists and is not agentwire's"),
    ];
    for (extra, said) in cases {
        let mut args = vec![
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--agent-bin".to_owned(),
            agent.display().to_string(),
            "--cursor-mcp".to_owned(),
            "--workspace".to_owned(),
            work.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let output = support::processes::run_bounded(kind.binary(), &args, Duration::from_secs(15));
        assert!(!output.status.success(), "{extra:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{extra:?}: {stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(cursor.join("mcp.json")).unwrap(),
        "{\"mcpServers\":{}}",
        "the user's file untouched"
    );
}
