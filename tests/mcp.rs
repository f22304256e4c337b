//! The MCP server against the recorded traffic of three real agents
//! (`../shared/fixtures/acp/mcp/*.mcp.jsonl`, when present: every message the recorded
//! server received, with its HTTP method and headers, and every answer it gave), against
//! a table of hostile input, and in each of its rules.

#[path = "support/mcp.rs"]
mod mcp_drive;
#[path = "support/shared.rs"]
mod shared;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use agentwire::conversation::{Attachment, AttachmentKind, Grammar, Part, ToolSpec};
use agentwire::mcp::{
    CallId, CancelReason, Config, ExchangeId, HttpRequest, McpError, McpEvent, PROTOCOL_VERSIONS,
    Server, ToolOutcome,
};
use mcp_drive::{Driver, post};
use serde_json::{Value, json};

const SESSION: &str = "5f0c1d2e-session-under-test";

/// The recorded server's tools, as a client's request would give them.
fn recorded_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::function(
            "bash",
            "Run a shell command on the caller's machine and return its output.",
            json!({"type": "object", "properties": {"command": {"type": "string", "description": "The command to run"}},
                   "required": ["command"], "additionalProperties": false}),
        ),
        ToolSpec::function(
            "read_file",
            "Read a text file on the caller's machine.",
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "Path of the file"}},
                   "required": ["path"], "additionalProperties": false}),
        ),
    ]
}

// Recordings.

#[derive(Debug, Clone)]
struct Record {
    t_ms: u64,
    dir: String,
    msg: Value,
}

fn load(path: &Path) -> Vec<Record> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut records: Vec<(f64, String, Value)> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut value: Value = serde_json::from_str(line).unwrap();
        let t = value["t"].as_f64().expect("t");
        let dir = value["dir"].as_str().expect("dir").to_owned();
        records.push((t, dir, value["msg"].take()));
    }
    let t0 = records.first().map_or(0.0, |r| r.0);
    records
        .into_iter()
        .map(|(t, dir, msg)| Record {
            t_ms: ((t - t0) * 1000.0).round() as u64,
            dir,
            msg,
        })
        .collect()
}

/// The MCP server logs of the recordings, or `None` when the captures are absent.
fn recordings() -> Option<Vec<PathBuf>> {
    let fixtures = shared::fixtures("the MCP recordings")?;
    let files = fixtures.files("acp/mcp", ".mcp.jsonl");
    assert_eq!(files.len(), 28, "the MCP recordings changed: {files:?}");
    Some(files)
}

fn is_http(records: &[Record]) -> bool {
    records[0].msg["transport"] == "http"
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Our answers are the recorded server's: the same ids, results of the same shapes, the
/// same tool list, the same negotiated version, the same tool results; no error where it
/// gave none.
fn assert_equivalent(ours: &[Value], recorded: &[Value], name: &str) {
    let mut by_id: BTreeMap<String, &Value> = BTreeMap::new();
    for message in ours {
        assert_eq!(message["jsonrpc"], "2.0", "{name}: {message}");
        let previous = by_id.insert(id_key(&message["id"]), message);
        assert!(
            previous.is_none(),
            "{name}: two answers to {}",
            message["id"]
        );
    }
    let recorded: BTreeMap<String, &Value> =
        recorded.iter().map(|m| (id_key(&m["id"]), m)).collect();
    assert_eq!(
        by_id.keys().collect::<Vec<_>>(),
        recorded.keys().collect::<Vec<_>>(),
        "{name}: answered ids"
    );
    for (id, want) in recorded {
        let got = by_id[&id];
        assert!(got.get("error").is_none(), "{name}: {got}");
        let (got, want) = (&got["result"], &want["result"]);
        if let Some(version) = want.get("protocolVersion") {
            assert_eq!(&got["protocolVersion"], version, "{name}");
            assert!(got["capabilities"]["tools"].is_object(), "{name}: {got}");
            assert!(got["serverInfo"]["name"].is_string(), "{name}: {got}");
        } else if want.get("tools").is_some() {
            assert_eq!(got, want, "{name}: tools/list");
        } else {
            assert!(want.get("content").is_some(), "{name}: {want}");
            assert_eq!(got, want, "{name}: tools/call result");
        }
    }
}

/// The recorded result as the client's tool would report it.
fn outcome_of(result: &Value) -> ToolOutcome {
    let content = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            assert_eq!(item["type"], "text");
            Part::Text(item["text"].as_str().unwrap().to_owned())
        })
        .collect();
    ToolOutcome {
        content,
        is_error: result["isError"].as_bool().unwrap(),
    }
}

fn header<'a>(headers: &'a Value, name: &str) -> Option<&'a str> {
    headers
        .as_object()
        .unwrap()
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str().unwrap())
}

/// What a replay saw, for the checks common to both transports.
#[derive(Debug, Default)]
struct Seen {
    answers: Vec<Value>,
    recorded: Vec<Value>,
    calls: usize,
    cancelled: Vec<(CallId, CancelReason)>,
    /// The recorded server's notes that a cancellation found the call pending.
    recorded_cancels: usize,
    requested_version: Option<String>,
    /// The version the server agreed.
    negotiated: Option<&'static str>,
}

fn replay_http(records: &[Record], name: &str) -> Seen {
    let server = Server::new(&recorded_tools(), &Config::default(), SESSION.into());
    let mut driver = Driver::new(server);
    let mut seen = Seen::default();
    let mut recorded_session: Option<String> = None;
    // Request id → (the exchange that carried it, when it came).
    let mut requests: HashMap<String, (ExchangeId, u64)> = HashMap::new();
    let mut calls: HashMap<String, CallId> = HashMap::new();
    let mut probes = 0;
    let mut end = 0;
    for record in records {
        let now = record.t_ms;
        end = now;
        let msg = &record.msg;
        match record.dir.as_str() {
            "in" => {
                let method = msg["_http"].as_str().unwrap();
                let headers = &msg["headers"];
                if let Some(path) = msg["path"].as_str().filter(|p| *p != "/mcp") {
                    // Codex's OAuth discovery before `initialize`: other paths, the
                    // adapter's 404; never the MCP endpoint.
                    assert!(
                        method == "GET" && path.contains("/.well-known/oauth"),
                        "{name}: {msg}"
                    );
                    probes += 1;
                    continue;
                }
                let session = header(headers, "mcp-session-id").map(|given| {
                    let first = recorded_session.get_or_insert_with(|| given.to_owned());
                    assert_eq!(first, given, "{name}: one session");
                    SESSION
                });
                let body = match method {
                    "POST" => serde_json::to_vec(&msg["body"]).unwrap(),
                    _ => Vec::new(),
                };
                let request = HttpRequest {
                    method,
                    accept: header(headers, "accept"),
                    content_type: header(headers, "content-type"),
                    session_id: session,
                    protocol_version: header(headers, "mcp-protocol-version"),
                    body: &body,
                };
                let before = driver.events.len();
                let exchange = driver.http(&request, now);
                let response = driver.response(exchange);
                let head = response.head.clone().expect("a head at once");
                if method == "GET" {
                    assert_eq!(
                        (head.status, head.allow),
                        (405, Some("POST, DELETE")),
                        "{name}"
                    );
                    continue;
                }
                assert_eq!(method, "POST", "{name}");
                let body = &msg["body"];
                let Some(id) = body.get("id") else {
                    assert!(
                        body["method"]
                            .as_str()
                            .unwrap()
                            .starts_with("notifications/")
                    );
                    assert_eq!(head.status, 202, "{name}: {body}");
                    assert_eq!(head.session_id.as_deref(), Some(SESSION), "{name}");
                    assert!(response.body.is_empty() && response.ends == 1, "{name}");
                    continue;
                };
                requests.insert(id_key(id), (exchange, now));
                assert_eq!(head.status, 200, "{name}: {body}");
                assert_eq!(head.session_id.as_deref(), Some(SESSION), "{name}");
                match body["method"].as_str().unwrap() {
                    "tools/call" => {
                        assert_eq!(head.content_type, Some("text/event-stream"), "{name}");
                        let events = &driver.events[before..];
                        let [
                            McpEvent::Call {
                                call,
                                tool,
                                arguments,
                            },
                        ] = events
                        else {
                            panic!("{name}: {events:?}");
                        };
                        let params = &body["params"];
                        let tools = driver.server.tools();
                        assert_eq!(tools[*tool].name, params["name"].as_str().unwrap());
                        assert_eq!(arguments, &params["arguments"].to_string());
                        calls.insert(id_key(id), *call);
                        seen.calls += 1;
                    }
                    method => {
                        if method == "initialize" {
                            seen.requested_version = body["params"]["protocolVersion"]
                                .as_str()
                                .map(str::to_owned);
                        }
                        assert_eq!(head.content_type, Some("application/json"), "{name}");
                        assert_eq!(response.ends, 1, "{name}");
                    }
                }
            }
            "out" => {
                seen.recorded.push(msg.clone());
                let key = id_key(&msg["id"]);
                if let Some(call) = calls.get(&key) {
                    driver.advance(now);
                    driver
                        .server
                        .answer_call(*call, &outcome_of(&msg["result"]), now)
                        .unwrap();
                    driver.drain();
                    // Kept busy all along: one comment per interval waited.
                    let (exchange, asked) = requests[&key];
                    let response = driver.response(exchange);
                    assert_eq!(response.ends, 1, "{name}");
                    let waited = now - asked;
                    assert_eq!(
                        response.keep_alives() as u64,
                        waited / Config::default().keep_alive_ms,
                        "{name}: keep-alives over {waited} ms"
                    );
                }
            }
            _ => {
                if let Some(id) = msg
                    .get("id")
                    .filter(|_| msg.get("http_client_disconnected_after_s").is_some())
                {
                    let (exchange, _) = requests[&id_key(id)];
                    driver.gone(exchange, now);
                }
            }
        }
    }
    if name.starts_with("codex") {
        assert_eq!(probes, 3, "{name}: Codex's OAuth probes");
    }
    seen.negotiated = driver.server.protocol_version();
    driver.advance(end);
    driver.server.close(end);
    driver.drain();
    driver.assert_all_ended();
    for response in driver.responses.values() {
        seen.answers.extend(response.messages());
    }
    for event in driver.take_events() {
        if let McpEvent::Cancelled { call, reason } = event {
            seen.cancelled.push((call, reason));
        }
    }
    seen
}

/// A stdio recording as the agent's byte stream and what happens between its lines.
struct Script {
    input: Vec<u8>,
    steps: Vec<Step>,
}

enum Step {
    /// The input up to `end` has been written (at `t_ms`).
    Line { end: usize, t_ms: u64 },
    /// The recorded server answered request `id` (at `t_ms`).
    Answer { id: Value, result: Value, t_ms: u64 },
}

fn script(records: &[Record]) -> (Script, Seen) {
    let mut input = Vec::new();
    let mut steps = Vec::new();
    let mut seen = Seen::default();
    for record in records {
        match record.dir.as_str() {
            "in" => {
                serde_json::to_writer(&mut input, &record.msg).unwrap();
                input.push(b'\n');
                steps.push(Step::Line {
                    end: input.len(),
                    t_ms: record.t_ms,
                });
                if record.msg["method"] == "initialize" {
                    seen.requested_version = record.msg["params"]["protocolVersion"]
                        .as_str()
                        .map(str::to_owned);
                }
            }
            "out" => {
                seen.recorded.push(record.msg.clone());
                steps.push(Step::Answer {
                    id: record.msg["id"].clone(),
                    result: record.msg["result"].clone(),
                    t_ms: record.t_ms,
                });
            }
            _ => {
                if record.msg["pending"] == true {
                    seen.recorded_cancels += 1;
                }
            }
        }
    }
    (Script { input, steps }, seen)
}

/// Replays a stdio script, cutting the agent's bytes at `cuts` (and wherever a recorded
/// answer needs the input before it); every recorded tool result is given as the answer
/// of the call with its id. Returns our stdout and what was seen.
fn replay_stdio(script: &Script, base: &Seen, cuts: &[usize], name: &str) -> (Vec<u8>, Seen) {
    let server = Server::new(&recorded_tools(), &Config::default(), SESSION.into());
    let mut driver = Driver::new(server);
    let mut seen = Seen {
        recorded: base.recorded.clone(),
        recorded_cancels: base.recorded_cancels,
        requested_version: base.requested_version.clone(),
        ..Seen::default()
    };
    // The tools/call requests in the order written: the k-th Call event is the k-th.
    let mut call_ids: VecDeque<(Value, Value)> = script
        .input
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice::<Value>(l).unwrap())
        .filter(|m| m["method"] == "tools/call")
        .map(|m| (m["id"].clone(), m["params"].clone()))
        .collect();
    let mut calls: HashMap<String, CallId> = HashMap::new();
    let mut pushed = 0;
    let mut cuts = cuts.iter().copied().peekable();
    let mut stdout = Vec::new();
    let mut end = 0;
    let mut take = |driver: &mut Driver, calls: &mut HashMap<String, CallId>, seen: &mut Seen| {
        for event in driver.take_events() {
            match event {
                McpEvent::Call {
                    call,
                    tool,
                    arguments,
                } => {
                    let (id, params) = call_ids.pop_front().expect("a tools/call line");
                    assert_eq!(
                        driver.server.tools()[tool].name,
                        params["name"].as_str().unwrap()
                    );
                    assert_eq!(arguments, params["arguments"].to_string(), "{name}");
                    calls.insert(id_key(&id), call);
                    seen.calls += 1;
                }
                McpEvent::Cancelled { call, reason } => seen.cancelled.push((call, reason)),
                other => panic!("{name}: {other:?}"),
            }
        }
    };
    for step in &script.steps {
        match step {
            Step::Line {
                end: line_end,
                t_ms,
            } => {
                end = *t_ms;
                while pushed < *line_end {
                    while cuts.peek().is_some_and(|&c| c <= pushed) {
                        cuts.next();
                    }
                    let to = cuts.peek().copied().unwrap_or(script.input.len());
                    driver.stdio(&script.input[pushed..to], *t_ms);
                    pushed = to;
                    take(&mut driver, &mut calls, &mut seen);
                }
            }
            Step::Answer { id, result, t_ms } => {
                end = *t_ms;
                if let Some(call) = calls.get(&id_key(id)) {
                    driver
                        .server
                        .answer_call(*call, &outcome_of(result), *t_ms)
                        .unwrap();
                    driver.drain();
                }
            }
        }
        stdout.extend_from_slice(&driver.stdout);
        seen.answers.extend(driver.take_lines());
    }
    assert_eq!(pushed, script.input.len());
    seen.negotiated = driver.server.protocol_version();
    driver.server.close(end);
    driver.drain();
    assert!(driver.stdout.is_empty() && driver.responses.is_empty());
    assert_eq!(driver.server.pending_calls(), 0);
    (stdout, seen)
}

/// What every replay must show, whatever the transport.
fn check(seen: &Seen, name: &str) {
    assert_equivalent(&seen.answers, &seen.recorded, name);
    let requested = seen.requested_version.as_deref().unwrap();
    let want = if name.starts_with("claude") {
        "2025-11-25"
    } else {
        "2025-06-18"
    };
    assert_eq!(requested, want, "{name}: the version the agent asks for");
    assert_eq!(seen.negotiated, Some(requested), "{name}");
    assert!(seen.calls >= 1, "{name}");
    let requested_cancels = seen
        .cancelled
        .iter()
        .filter(|(_, reason)| matches!(reason, CancelReason::Requested(Some(_))))
        .count();
    assert_eq!(
        requested_cancels, seen.recorded_cancels,
        "{name}: {:?}",
        seen.cancelled
    );
}

#[test]
fn the_recorded_http_traffic_gets_the_recorded_answers() {
    let Some(files) = recordings() else {
        return;
    };
    let mut replayed = 0;
    for path in &files {
        let records = load(path);
        if !is_http(&records) {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let seen = replay_http(&records, &name);
        check(&seen, &name);
        // The recorded server noted a dropped connection for each call it could not
        // answer; each is a cancellation here.
        let dropped = records
            .iter()
            .filter(|r| r.msg.get("http_client_disconnected_after_s").is_some())
            .count();
        assert_eq!(
            seen.cancelled
                .iter()
                .filter(|(_, r)| *r == CancelReason::Disconnected)
                .count(),
            dropped,
            "{name}"
        );
        replayed += 1;
    }
    assert_eq!(replayed, 9);
}

#[test]
fn the_recorded_stdio_traffic_gets_the_recorded_answers_in_every_chunking() {
    let Some(files) = recordings() else {
        return;
    };
    let mut replayed = 0;
    for path in &files {
        let records = load(path);
        if is_http(&records) {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (script, base) = script(&records);
        let lines: Vec<usize> = script
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Line { end, .. } => Some(*end),
                Step::Answer { .. } => None,
            })
            .collect();
        let (stdout, seen) = replay_stdio(&script, &base, &lines, &name);
        check(&seen, &name);
        // Whole, byte at a time, and cut once at every offset: the same bytes out.
        let whole = replay_stdio(&script, &base, &[], &name).0;
        assert_eq!(whole, stdout, "{name}: whole");
        let every: Vec<usize> = (1..script.input.len()).collect();
        assert_eq!(
            replay_stdio(&script, &base, &every, &name).0,
            stdout,
            "{name}: bytes"
        );
        for cut in 1..script.input.len() {
            let (out, seen) = replay_stdio(&script, &base, &[cut], &name);
            assert_eq!(out, stdout, "{name}: cut at {cut}");
            assert_eq!(seen.calls, base_calls(&script), "{name}: cut at {cut}");
        }
        replayed += 1;
    }
    assert_eq!(replayed, 19);
}

fn base_calls(script: &Script) -> usize {
    script
        .input
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter(|l| serde_json::from_slice::<Value>(l).unwrap()["method"] == "tools/call")
        .count()
}
