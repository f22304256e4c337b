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

// Hostile input and the rules one by one.

/// The recorded tools and one of each other kind: freeform, a schema that is not an
/// object's, a namespace's tool.
fn all_tools() -> Vec<ToolSpec> {
    let mut tools = recorded_tools();
    tools.push(ToolSpec::freeform(
        "apply_patch",
        "Apply a patch.",
        Some(Grammar {
            syntax: "lark".into(),
            definition: "start: /.+/s".into(),
        }),
    ));
    tools.push(ToolSpec::function("count", "", json!({"type": "integer"})));
    tools.push(ToolSpec::function(
        "files.read",
        "Read a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    ));
    tools
}

fn message(id: Value, method: &str, params: Value) -> Vec<u8> {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if !params.is_null() {
        message["params"] = params;
    }
    serde_json::to_vec(&message).unwrap()
}

fn initialize(version: &str) -> Vec<u8> {
    message(
        json!(0),
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}

const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call_message(id: Value, tool: &str, arguments: Value) -> Vec<u8> {
    message(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// An initialized HTTP session (protocol `version`).
fn http_session(config: &Config, version: &str) -> Driver {
    let mut driver = Driver::new(Server::new(&all_tools(), config, SESSION.into()));
    let init = driver.http(&post(None, &initialize(version)), 0);
    let head = driver.response(init).head.clone().unwrap();
    assert_eq!(
        (head.status, head.session_id.as_deref()),
        (200, Some(SESSION))
    );
    let done = driver.http(&post(Some(SESSION), INITIALIZED), 1);
    assert_eq!(driver.response(done).status(), 202);
    driver
}

/// An initialized stdio session.
fn stdio_session(config: &Config, version: &str) -> Driver {
    let mut driver = Driver::new(Server::new(&all_tools(), config, SESSION.into()));
    let mut input = initialize(version);
    input.push(b'\n');
    input.extend_from_slice(INITIALIZED);
    input.push(b'\n');
    driver.stdio(&input, 0);
    assert_eq!(driver.take_lines().len(), 1);
    driver
}

/// A call of `bash` with id 2, pending on its own exchange.
fn pending_http_call(driver: &mut Driver) -> (ExchangeId, CallId) {
    let body = call_message(json!(2), "bash", json!({"command": "sleep 600"}));
    let exchange = driver.http(&post(Some(SESSION), &body), 5);
    let [McpEvent::Call { call, tool: 0, .. }] = driver.take_events()[..] else {
        panic!("{:?}", driver.events);
    };
    assert_eq!(driver.response(exchange).status(), 200);
    (exchange, call)
}

fn small_config() -> Config {
    Config {
        max_body_bytes: 1024,
        ..Config::default()
    }
}

/// A bad JSON-RPC input, in a POST body or a stdio line, and how it is answered.
struct Hostile {
    what: &'static str,
    input: Vec<u8>,
    /// The HTTP status.
    status: u16,
    /// The JSON-RPC error code; `None`: no answer (202, or no line); `Some(0)`: a tool
    /// result with `isError`.
    code: Option<i64>,
    /// The id the error is answered under.
    id: Value,
}

impl Hostile {
    fn new(
        what: &'static str,
        input: Vec<u8>,
        status: u16,
        code: Option<i64>,
        id: Value,
    ) -> Hostile {
        Hostile {
            what,
            input,
            status,
            code,
            id,
        }
    }
}

fn hostile_messages() -> Vec<Hostile> {
    let huge = call_message(json!(9), "bash", json!({"command": "x".repeat(2000)}));
    vec![
        Hostile::new(
            "not JSON",
            br#"{"jsonrpc":"#.to_vec(),
            400,
            Some(-32700),
            Value::Null,
        ),
        Hostile::new(
            "not UTF-8",
            b"{\"a\":\"\xff\"}".to_vec(),
            400,
            Some(-32700),
            Value::Null,
        ),
        Hostile::new(
            "JSON, not a message",
            b"7".to_vec(),
            400,
            Some(-32600),
            Value::Null,
        ),
        Hostile::new(
            "jsonrpc 1.0",
            br#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#.to_vec(),
            400,
            Some(-32600),
            json!(9),
        ),
        Hostile::new(
            "no jsonrpc",
            br#"{"id":9,"method":"ping"}"#.to_vec(),
            400,
            Some(-32600),
            json!(9),
        ),
        Hostile::new(
            "a null id",
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_vec(),
            400,
            Some(-32600),
            Value::Null,
        ),
        Hostile::new(
            "an object id",
            br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#.to_vec(),
            400,
            Some(-32600),
            Value::Null,
        ),
        Hostile::new(
            "a method not a string",
            br#"{"jsonrpc":"2.0","id":9,"method":1}"#.to_vec(),
            400,
            Some(-32600),
            json!(9),
        ),
        Hostile::new(
            "a repeated member",
            br#"{"jsonrpc":"2.0","id":9,"id":10,"method":"ping"}"#.to_vec(),
            400,
            Some(-32600),
            Value::Null,
        ),
        Hostile::new(
            "neither request nor response",
            br#"{"jsonrpc":"2.0","id":9}"#.to_vec(),
            400,
            Some(-32600),
            json!(9),
        ),
        Hostile::new(
            "an unknown method",
            message(json!(9), "resources/list", Value::Null),
            200,
            Some(-32601),
            json!(9),
        ),
        Hostile::new(
            "params not an object",
            message(json!(9), "tools/list", json!([1])),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "params a string",
            message(json!("s"), "tools/call", json!("bash")),
            200,
            Some(-32602),
            json!("s"),
        ),
        Hostile::new(
            "tools/call without params",
            message(json!(9), "tools/call", Value::Null),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "tools/call without a name",
            message(json!(9), "tools/call", json!({"arguments": {}})),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "a name not a string",
            message(json!(9), "tools/call", json!({"name": 1})),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "an unknown tool",
            call_message(json!(9), "rm_rf", json!({})),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "a tool by its client-side name",
            call_message(json!(9), "files.read", json!({})),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "arguments not an object",
            call_message(json!(9), "bash", json!(["ls"])),
            200,
            Some(-32602),
            json!(9),
        ),
        Hostile::new(
            "a freeform input not a string",
            call_message(json!(9), "apply_patch", json!({"input": 3})),
            200,
            Some(0),
            json!(9),
        ),
        Hostile::new(
            "a wrapped input missing",
            call_message(json!(9), "count", json!({})),
            200,
            Some(0),
            json!(9),
        ),
        Hostile::new(
            "the pending call's id again",
            call_message(json!(2), "read_file", json!({"path": "/etc/passwd"})),
            200,
            Some(-32600),
            json!(2),
        ),
        Hostile::new(
            "initialize again",
            initialize("2025-06-18"),
            200,
            Some(-32600),
            json!(0),
        ),
        Hostile::new(
            "a batch outside 2025-03-26",
            br#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#.to_vec(),
            400,
            Some(-32600),
            Value::Null,
        ),
        Hostile::new(
            "an empty batch",
            b"[]".to_vec(),
            400,
            Some(-32600),
            Value::Null,
        ),
        Hostile::new(
            "a result for a request never sent",
            br#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_vec(),
            202,
            None,
            Value::Null,
        ),
        Hostile::new(
            "an error for a request never sent",
            br#"{"jsonrpc":"2.0","id":77,"error":{"code":1,"message":"x"}}"#.to_vec(),
            202,
            None,
            Value::Null,
        ),
        Hostile::new(
            "an unknown notification",
            br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#.to_vec(),
            202,
            None,
            Value::Null,
        ),
        Hostile::new(
            "a cancellation of no call",
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#
                .to_vec(),
            202,
            None,
            Value::Null,
        ),
        Hostile::new(
            "a cancellation of the call as a string",
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"2"}}"#
                .to_vec(),
            202,
            None,
            Value::Null,
        ),
        Hostile::new(
            "a malformed cancellation",
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"2"}"#.to_vec(),
            202,
            None,
            Value::Null,
        ),
        Hostile::new("huge arguments", huge, 413, Some(-32000), Value::Null),
    ]
}

/// The pending call is as it was: still pending, its stream open and silent, and it
/// answers as before.
fn assert_call_intact(driver: &mut Driver, exchange: ExchangeId, call: CallId, what: &str) {
    assert_eq!(driver.server.pending_calls(), 1, "{what}");
    assert!(driver.take_events().is_empty(), "{what}");
    let response = driver.response(exchange);
    assert!(response.ends == 0 && response.events().is_empty(), "{what}");
    driver
        .server
        .answer_call(call, &ToolOutcome::text("done", false), 20)
        .unwrap();
    driver.drain();
    let response = driver.response(exchange);
    assert_eq!(response.ends, 1, "{what}");
    let events = response.events();
    assert_eq!(events.len(), 1, "{what}");
    assert_eq!(events[0]["id"], 2, "{what}");
    assert_eq!(events[0]["result"]["content"][0]["text"], "done", "{what}");
}

fn assert_error(message: &Value, code: Option<i64>, id: &Value, what: &str) {
    assert_eq!(&message["id"], id, "{what}: {message}");
    match code {
        Some(0) => assert_eq!(message["result"]["isError"], true, "{what}: {message}"),
        Some(code) => {
            assert_eq!(message["error"]["code"], code, "{what}: {message}");
            assert!(
                message["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty())
            );
        }
        None => panic!("{what}: an answer where none is due: {message}"),
    }
}

#[test]
fn hostile_posts_get_their_error_and_change_no_pending_call() {
    for Hostile {
        what,
        input: body,
        status,
        code,
        id,
    } in hostile_messages()
    {
        let mut driver = http_session(&small_config(), "2025-06-18");
        let (exchange, call) = pending_http_call(&mut driver);
        let answer = driver.http(&post(Some(SESSION), &body), 10);
        let response = driver.response(answer);
        assert_eq!(response.status(), status, "{what}");
        assert_eq!(response.ends, 1, "{what}");
        match code {
            None => assert!(response.body.is_empty(), "{what}"),
            Some(_) => {
                assert_eq!(
                    response.head.as_ref().unwrap().content_type,
                    Some("application/json")
                );
                assert_error(&response.json(), code, &id, what);
            }
        }
        assert_call_intact(&mut driver, exchange, call, what);
    }
}

#[test]
fn hostile_stdio_lines_get_their_error_and_change_no_pending_call() {
    let mut lines = hostile_messages();
    lines.push(Hostile::new(
        "a line of a non-JSON word",
        b"hello".to_vec(),
        400,
        Some(-32700),
        Value::Null,
    ));
    for Hostile {
        what,
        input: line,
        status,
        code,
        id,
    } in lines
    {
        let code = if status == 413 { Some(-32600) } else { code };
        let mut driver = stdio_session(&small_config(), "2025-06-18");
        let mut input = call_message(json!(2), "bash", json!({"command": "sleep 600"}));
        input.push(b'\n');
        driver.stdio(&input, 5);
        let [McpEvent::Call { call: pending, .. }] = driver.take_events()[..] else {
            panic!("{what}");
        };
        let mut input = line.clone();
        input.push(b'\n');
        driver.stdio(&input, 10);
        let answers = driver.take_lines();
        match code {
            None => assert!(answers.is_empty(), "{what}: {answers:?}"),
            Some(_) => {
                assert_eq!(answers.len(), 1, "{what}");
                assert_error(&answers[0], code, &id, what);
            }
        }
        assert_eq!(driver.server.pending_calls(), 1, "{what}");
        assert!(driver.take_events().is_empty(), "{what}");
        driver
            .server
            .answer_call(pending, &ToolOutcome::text("done", false), 20)
            .unwrap();
        driver.drain();
        let answers = driver.take_lines();
        assert_eq!(answers.len(), 1, "{what}");
        assert_eq!(
            (
                &answers[0]["id"],
                &answers[0]["result"]["content"][0]["text"]
            ),
            (&json!(2), &json!("done")),
            "{what}"
        );
    }
}

#[test]
fn hostile_requests_get_their_status_and_change_no_pending_call() {
    let ping = message(json!(9), "ping", Value::Null);
    let ok = post(Some(SESSION), &ping);
    let cases: Vec<(&str, HttpRequest<'_>, u16)> = vec![
        (
            "text/plain",
            HttpRequest {
                content_type: Some("text/plain"),
                ..ok
            },
            415,
        ),
        (
            "no content type",
            HttpRequest {
                content_type: None,
                ..ok
            },
            415,
        ),
        (
            "accepting JSON only",
            HttpRequest {
                accept: Some("application/json"),
                ..ok
            },
            406,
        ),
        (
            "accepting SSE only",
            HttpRequest {
                accept: Some("text/event-stream"),
                ..ok
            },
            406,
        ),
        ("no Accept", HttpRequest { accept: None, ..ok }, 406),
        (
            "no session id",
            HttpRequest {
                session_id: None,
                ..ok
            },
            400,
        ),
        (
            "another session id",
            HttpRequest {
                session_id: Some("5f0c1d2e-session-under-tesT"),
                ..ok
            },
            404,
        ),
        (
            "a prefix of the session id",
            HttpRequest {
                session_id: Some("5f0c1d2e"),
                ..ok
            },
            404,
        ),
        (
            "an unsupported version",
            HttpRequest {
                protocol_version: Some("2024-11-05"),
                ..ok
            },
            400,
        ),
        (
            "a garbage version",
            HttpRequest {
                protocol_version: Some("latest\r\n"),
                ..ok
            },
            400,
        ),
        (
            "GET",
            HttpRequest {
                method: "GET",
                body: b"",
                ..ok
            },
            405,
        ),
        (
            "PUT",
            HttpRequest {
                method: "PUT",
                ..ok
            },
            405,
        ),
        (
            "a lower-case post",
            HttpRequest {
                method: "post",
                ..ok
            },
            405,
        ),
        (
            "DELETE without a session id",
            HttpRequest {
                method: "DELETE",
                session_id: None,
                body: b"",
                ..ok
            },
            400,
        ),
        (
            "DELETE of another session",
            HttpRequest {
                method: "DELETE",
                session_id: Some("other"),
                body: b"",
                ..ok
            },
            404,
        ),
        (
            "DELETE with an unsupported version",
            HttpRequest {
                method: "DELETE",
                protocol_version: Some("1.0"),
                body: b"",
                ..ok
            },
            400,
        ),
    ];
    for (what, request, status) in cases {
        let mut driver = http_session(&small_config(), "2025-06-18");
        let (exchange, call) = pending_http_call(&mut driver);
        let answer = driver.http(&request, 10);
        let response = driver.response(answer);
        let head = response.head.clone().unwrap();
        assert_eq!(head.status, status, "{what}");
        assert_eq!(head.session_id, None, "{what}: no session id on a refusal");
        assert_eq!(
            head.allow,
            (status == 405).then_some("POST, DELETE"),
            "{what}"
        );
        if status != 405 {
            assert_error(&response.json(), Some(-32000), &Value::Null, what);
        }
        assert_call_intact(&mut driver, exchange, call, what);
    }
    // The supported versions all pass, and no header means the negotiated one.
    for version in PROTOCOL_VERSIONS.into_iter().map(Some).chain([None]) {
        let mut driver = http_session(&small_config(), "2025-06-18");
        let request = HttpRequest {
            protocol_version: version,
            ..post(Some(SESSION), &ping)
        };
        let answer = driver.http(&request, 10);
        assert_eq!(
            driver.response(answer).json()["result"],
            json!({}),
            "{version:?}"
        );
    }
}

#[test]
fn an_over_long_stdio_line_is_refused_and_the_next_line_served() {
    let mut driver = stdio_session(&small_config(), "2025-06-18");
    let mut input = call_message(json!(5), "bash", json!({"command": "y".repeat(5000)}));
    input.push(b'\n');
    input.extend_from_slice(&message(json!(6), "ping", Value::Null));
    input.push(b'\n');
    for chunk in input.chunks(700) {
        driver.stdio(chunk, 3);
    }
    let answers = driver.take_lines();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_error(&answers[0], Some(-32600), &Value::Null, "over-long");
    assert_eq!(
        (&answers[1]["id"], &answers[1]["result"]),
        (&json!(6), &json!({}))
    );
    assert!(driver.take_events().is_empty());
}

#[test]
fn before_initialize_only_initialize_and_ping_are_served() {
    let mut driver = Driver::new(Server::new(
        &all_tools(),
        &Config::default(),
        SESSION.into(),
    ));
    assert!(!driver.server.is_initialized() && driver.server.protocol_version().is_none());
    let mut input = message(json!(1), "tools/list", Value::Null);
    input.push(b'\n');
    input.extend_from_slice(&message(json!(2), "ping", Value::Null));
    input.push(b'\n');
    input.extend_from_slice(br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#);
    input.push(b'\n');
    driver.stdio(&input, 0);
    let answers = driver.take_lines();
    assert_error(&answers[0], Some(-32600), &json!(1), "tools/list first");
    assert_eq!(answers[1]["result"], json!({}));
    assert_error(&answers[2], Some(-32600), &Value::Null, "a batch first");
    // Over HTTP a session id cannot be known yet: 404; a request without one but
    // `initialize`: 400.
    let ping = message(json!(4), "ping", Value::Null);
    let answer = driver.http(&post(Some(SESSION), &ping), 1);
    assert_eq!(driver.response(answer).status(), 404);
    let answer = driver.http(&post(None, &ping), 1);
    assert_eq!(driver.response(answer).status(), 400);
    let answer = driver.http(&post(Some(SESSION), &initialize("2025-11-25")), 1);
    assert_eq!(
        driver.response(answer).status(),
        404,
        "initialize with a session id"
    );
    assert!(!driver.server.is_initialized());
}

#[test]
fn the_protocol_version_is_the_clients_when_served_else_the_latest() {
    for (asked, agreed) in [
        (json!("2025-11-25"), Some("2025-11-25")),
        (json!("2025-06-18"), Some("2025-06-18")),
        (json!("2025-03-26"), Some("2025-03-26")),
        (json!("2024-11-05"), Some("2025-11-25")),
        (json!("2099-01-01"), Some("2025-11-25")),
        (json!(20250618), None),
        (Value::Null, None),
    ] {
        let mut driver = Driver::new(Server::new(
            &all_tools(),
            &Config::default(),
            SESSION.into(),
        ));
        let mut params = json!({"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        if !asked.is_null() {
            params["protocolVersion"] = asked.clone();
        }
        let answer = driver.http(&post(None, &message(json!(0), "initialize", params)), 0);
        let response = driver.response(answer);
        assert_eq!(response.status(), 200);
        let body = response.json();
        match agreed {
            Some(version) => {
                assert_eq!(body["result"]["protocolVersion"], version, "{asked}");
                assert_eq!(
                    body["result"]["capabilities"],
                    json!({"tools": {"listChanged": false}})
                );
                assert_eq!(body["result"]["serverInfo"]["name"], "agentwire");
                assert_eq!(driver.server.protocol_version(), Some(version));
                assert_eq!(
                    response.head.as_ref().unwrap().session_id.as_deref(),
                    Some(SESSION)
                );
            }
            None => {
                assert_error(&body, Some(-32602), &json!(0), "no version");
                assert!(!driver.server.is_initialized());
                assert_eq!(response.head.as_ref().unwrap().session_id, None);
            }
        }
    }
}

#[test]
fn tools_are_listed_and_called_under_agent_safe_names() {
    let mut driver = http_session(&Config::default(), "2025-11-25");
    let answer = driver.http(
        &post(Some(SESSION), &message(json!(1), "tools/list", json!({}))),
        2,
    );
    let list = driver.response(answer).json()["result"]["tools"].clone();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["bash", "read_file", "apply_patch", "count", "files__read"]
    );
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|t| t["inputSchema"]["type"] == "object")
    );
    assert_eq!(
        list[3]["inputSchema"]["properties"]["input"],
        json!({"type": "integer"})
    );
    for (id, tool, arguments, index, input) in [
        (
            10,
            "files__read",
            json!({"path": "a.rs"}),
            4,
            r#"{"path":"a.rs"}"#,
        ),
        (
            11,
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** End Patch"}),
            2,
            "*** Begin Patch\n*** End Patch",
        ),
        (12, "count", json!({"input": 7}), 3, "7"),
        (13, "bash", Value::Null, 0, "{}"),
    ] {
        let mut params = json!({"name": tool});
        if !arguments.is_null() {
            params["arguments"] = arguments;
        }
        let exchange = driver.http(
            &post(Some(SESSION), &message(json!(id), "tools/call", params)),
            3,
        );
        let events = driver.take_events();
        let [
            McpEvent::Call {
                call,
                tool,
                ref arguments,
            },
        ] = events[..]
        else {
            panic!("{events:?}");
        };
        assert_eq!((tool, arguments.as_str()), (index, input));
        let outcome = ToolOutcome {
            content: vec![
                Part::Text("a".into()),
                Part::Attachment(Attachment {
                    kind: AttachmentKind::Image,
                    media_type: Some("image/png".into()),
                    size: Some(3),
                    name: None,
                }),
            ],
            is_error: false,
        };
        driver.server.answer_call(call, &outcome, 4).unwrap();
        driver.drain();
        let events = driver.response(exchange).events();
        assert_eq!(
            events,
            [json!({"jsonrpc": "2.0", "id": id, "result": {"content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "[image not shown (image/png, 3 bytes): only text reaches you]"}
            ], "isError": false}})]
        );
    }
    assert_eq!(driver.server.pending_calls(), 0);
}

#[test]
fn a_pending_stream_is_kept_busy_and_a_call_limit_reported_once() {
    let config = Config {
        call_limit_ms: Some(50_000),
        ..Config::default()
    };
    let mut driver = http_session(&config, "2025-06-18");
    let (exchange, call) = pending_http_call(&mut driver);
    // Called at 5: comments at 15 005, 30 005, 45 005; the limit at 50 005.
    assert_eq!(driver.server.poll_timeout(), Some(15_005));
    driver.advance(49_000);
    assert_eq!(driver.response(exchange).keep_alives(), 3);
    assert!(driver.take_events().is_empty());
    assert_eq!(driver.server.poll_timeout(), Some(50_005));
    driver.advance(50_005);
    assert_eq!(driver.take_events(), [McpEvent::CallLimit { call }]);
    driver.advance(200_000);
    assert!(driver.take_events().is_empty(), "once");
    assert_eq!(driver.response(exchange).keep_alives(), 13);
    // Spurious timeouts do nothing.
    driver.server.handle_timeout(200_001);
    driver.drain();
    assert_eq!(driver.response(exchange).keep_alives(), 13);
    driver
        .server
        .answer_call(call, &ToolOutcome::text("ok", false), 200_002)
        .unwrap();
    driver.drain();
    assert_eq!(driver.response(exchange).ends, 1);
    assert_eq!(driver.server.poll_timeout(), None);

    // Keep-alives off: nothing scheduled.
    let config = Config {
        keep_alive_ms: 0,
        ..Config::default()
    };
    let mut driver = http_session(&config, "2025-06-18");
    pending_http_call(&mut driver);
    assert_eq!(driver.server.poll_timeout(), None);
}

#[test]
fn answering_a_call_that_is_not_pending_changes_nothing() {
    let mut driver = http_session(&Config::default(), "2025-06-18");
    let (exchange, call) = pending_http_call(&mut driver);
    let outcome = ToolOutcome::text("ok", false);
    assert_eq!(driver.server.answer_call(call, &outcome, 6), Ok(()));
    driver.drain();
    assert_eq!(
        driver.server.answer_call(call, &outcome, 7),
        Err(McpError::NotPending(call))
    );
    // A handle this server never gave: another server's second call.
    let mut other = http_session(&Config::default(), "2025-06-18");
    pending_http_call(&mut other);
    let body = call_message(json!(3), "bash", json!({}));
    other.http(&post(Some(SESSION), &body), 6);
    let [McpEvent::Call { call: never, .. }] = other.take_events()[..] else {
        panic!();
    };
    assert_eq!(
        driver.server.answer_call(never, &outcome, 8),
        Err(McpError::UnknownCall(never))
    );
    assert_eq!(
        McpError::UnknownCall(never).to_string(),
        "no call 1 was made"
    );
    driver.drain();
    assert!(driver.take_events().is_empty());
    assert_eq!(driver.response(exchange).events().len(), 1);
}

#[test]
fn a_closed_connection_cancels_the_calls_it_was_to_answer() {
    let mut driver = http_session(&Config::default(), "2025-06-18");
    let (exchange, call) = pending_http_call(&mut driver);
    let other = driver.http(&post(Some(SESSION), &call_of_id(3)), 6);
    let [McpEvent::Call { call: second, .. }] = driver.take_events()[..] else {
        panic!();
    };
    driver.gone(exchange, 60_000);
    assert_eq!(
        driver.take_events(),
        [McpEvent::Cancelled {
            call,
            reason: CancelReason::Disconnected
        }]
    );
    assert!(driver.server.poll_exchange(exchange).is_none());
    let outcome = ToolOutcome::text("late", false);
    assert_eq!(
        driver.server.answer_call(call, &outcome, 60_001),
        Err(McpError::NotPending(call))
    );
    // The other call and its stream are untouched; a gone exchange twice is nothing.
    driver.gone(exchange, 60_002);
    assert!(driver.take_events().is_empty());
    assert_eq!(driver.server.pending_calls(), 1);
    driver.server.answer_call(second, &outcome, 60_003).unwrap();
    driver.drain();
    assert_eq!(driver.response(other).events()[0]["id"], 3);
    assert_eq!(driver.response(other).ends, 1);
}

fn call_of_id(id: u64) -> Vec<u8> {
    call_message(json!(id), "read_file", json!({"path": "notes.txt"}))
}

#[test]
fn a_cancellation_ends_the_calls_stream_without_an_answer() {
    let mut driver = http_session(&Config::default(), "2025-06-18");
    let (exchange, call) = pending_http_call(&mut driver);
    let cancel = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"McpError: MCP error -32001: Request timed out"}}"#;
    let answer = driver.http(&post(Some(SESSION), cancel), 60_000);
    assert_eq!(driver.response(answer).status(), 202);
    assert_eq!(
        driver.take_events(),
        [McpEvent::Cancelled {
            call,
            reason: CancelReason::Requested(Some(
                "McpError: MCP error -32001: Request timed out".into()
            ))
        }]
    );
    let response = driver.response(exchange);
    assert!(response.events().is_empty());
    assert_eq!((response.ends, response.keep_alives()), (1, 3));
    assert_eq!(driver.server.pending_calls(), 0);
    // The id is free again.
    driver.http(
        &post(Some(SESSION), &call_message(json!(2), "bash", json!({}))),
        60_001,
    );
    assert!(matches!(driver.take_events()[..], [McpEvent::Call { .. }]));
}

#[test]
fn delete_ends_the_session_and_every_call() {
    let mut driver = http_session(&Config::default(), "2025-11-25");
    let (exchange, call) = pending_http_call(&mut driver);
    let delete = HttpRequest {
        method: "DELETE",
        accept: None,
        content_type: None,
        session_id: Some(SESSION),
        protocol_version: Some("2025-11-25"),
        body: b"",
    };
    let answer = driver.http(&delete, 7);
    let response = driver.response(answer);
    assert_eq!(
        (response.status(), response.body.len(), response.ends),
        (200, 0, 1)
    );
    assert_eq!(
        driver.take_events(),
        [
            McpEvent::Cancelled {
                call,
                reason: CancelReason::SessionDeleted
            },
            McpEvent::Closed
        ]
    );
    assert_eq!(driver.response(exchange).ends, 1, "the open stream ended");
    assert!(driver.server.is_closed() && !driver.server.is_initialized());
    assert_eq!(driver.server.pending_calls(), 0);
    for request in [
        delete,
        post(Some(SESSION), INITIALIZED),
        post(None, &initialize("2025-11-25")),
    ] {
        let answer = driver.http(&request, 8);
        assert_eq!(driver.response(answer).status(), 404);
    }
    assert!(driver.take_events().is_empty());
    driver.assert_all_ended();
}

#[test]
fn close_ends_every_exchange_and_drops_every_call() {
    let mut driver = http_session(&Config::default(), "2025-06-18");
    let (exchange, call) = pending_http_call(&mut driver);
    // An exchange whose head was not taken yet still gives it, then its end.
    let late = driver
        .server
        .handle_http(&post(Some(SESSION), &call_of_id(3)), 6);
    driver.server.close(7);
    assert_eq!(driver.server.pending_calls(), 0);
    driver.responses.entry(late).or_default();
    driver.drain();
    assert_eq!(driver.response(late).status(), 200);
    assert_eq!(driver.response(exchange).ends, 1);
    assert_eq!(driver.response(late).ends, 1);
    assert!(
        matches!(driver.take_events()[..], [McpEvent::Call { .. }]),
        "no event for the drop"
    );
    let outcome = ToolOutcome::default();
    assert_eq!(
        driver.server.answer_call(call, &outcome, 8),
        Err(McpError::NotPending(call))
    );
    driver.stdio(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", 8);
    assert!(driver.take_lines().is_empty());
    let answer = driver.http(&post(Some(SESSION), INITIALIZED), 9);
    assert_eq!(driver.response(answer).status(), 404);
    assert_eq!(driver.server.poll_timeout(), None);
    driver.assert_all_ended();
}

#[test]
fn batches_are_served_under_2025_03_26() {
    let mut driver = http_session(&Config::default(), "2025-03-26");
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"1.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}]"#;
    let answer = driver.http(&post(Some(SESSION), batch), 2);
    let response = driver.response(answer);
    assert_eq!(response.status(), 200);
    let replies = response.json();
    assert_eq!(replies[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_error(&replies[1], Some(-32601), &json!(2), "unknown in a batch");
    assert_error(&replies[2], Some(-32600), &json!(3), "invalid in a batch");
    assert_error(
        &replies[3],
        Some(-32600),
        &json!(4),
        "initialize in a batch",
    );
    assert_eq!(replies.as_array().unwrap().len(), 4);
    // Only notifications and responses: 202.
    let quiet = br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":9,"result":{}}]"#;
    let answer = driver.http(&post(Some(SESSION), quiet), 3);
    assert_eq!(driver.response(answer).status(), 202);
    // With a call: a stream, the immediate answers at once, the call's when answered.
    let mixed = format!(
        "[{},{}]",
        String::from_utf8(message(json!(5), "ping", Value::Null)).unwrap(),
        String::from_utf8(call_of_id(6)).unwrap()
    );
    let answer = driver.http(&post(Some(SESSION), mixed.as_bytes()), 4);
    let [McpEvent::Call { call, .. }] = driver.take_events()[..] else {
        panic!();
    };
    let response = driver.response(answer);
    assert_eq!(
        response.head.as_ref().unwrap().content_type,
        Some("text/event-stream")
    );
    assert_eq!(
        response.events(),
        [json!({"jsonrpc": "2.0", "id": 5, "result": {}})]
    );
    driver
        .server
        .answer_call(call, &ToolOutcome::text("x", false), 5)
        .unwrap();
    driver.drain();
    let response = driver.response(answer);
    assert_eq!(response.events()[1]["id"], 6);
    assert_eq!(response.ends, 1);
    // Over stdio, a batch's immediate answers are one array line; a call's comes alone.
    let mut driver = stdio_session(&Config::default(), "2025-03-26");
    let mut line = mixed.into_bytes();
    line.push(b'\n');
    driver.stdio(&line, 6);
    assert_eq!(
        driver.take_lines(),
        [json!([{"jsonrpc": "2.0", "id": 5, "result": {}}])]
    );
    let [McpEvent::Call { call, .. }] = driver.take_events()[..] else {
        panic!();
    };
    driver
        .server
        .answer_call(call, &ToolOutcome::text("x", true), 7)
        .unwrap();
    driver.drain();
    let lines = driver.take_lines();
    assert_eq!(
        (&lines[0]["id"], &lines[0]["result"]["isError"]),
        (&json!(6), &json!(true))
    );
}

#[test]
fn limits_on_pending_calls_and_open_exchanges() {
    let config = Config {
        max_pending_calls: 2,
        max_exchanges: 3,
        ..Config::default()
    };
    let mut driver = http_session(&config, "2025-06-18");
    driver.http(&post(Some(SESSION), &call_of_id(1)), 2);
    driver.http(&post(Some(SESSION), &call_of_id(2)), 2);
    let third = driver.http(&post(Some(SESSION), &call_of_id(3)), 2);
    assert_error(
        &driver.response(third).json(),
        Some(-32000),
        &json!(3),
        "a third call",
    );
    assert_eq!(driver.server.pending_calls(), 2);
    // Two streams open, and a third exchange not drained: the next is 503.
    let held = driver
        .server
        .handle_http(&post(Some(SESSION), INITIALIZED), 3);
    let refused = driver.http(&post(Some(SESSION), INITIALIZED), 3);
    assert_eq!(driver.response(refused).status(), 503);
    assert_eq!(driver.response(held).status(), 202);
    let accepted = driver.http(&post(Some(SESSION), INITIALIZED), 3);
    assert_eq!(driver.response(accepted).status(), 202);
    assert_eq!(driver.take_events().len(), 2);
}

#[test]
fn heads_carry_the_session_id_from_the_initialize_answer_on() {
    let mut driver = Driver::new(Server::new(
        &all_tools(),
        &Config::default(),
        SESSION.into(),
    ));
    let get = HttpRequest {
        method: "GET",
        accept: Some("text/event-stream"),
        body: b"",
        ..post(None, b"")
    };
    let refused = driver.http(&get, 0);
    assert_eq!(
        driver.response(refused).head.clone().unwrap().session_id,
        None
    );
    let init = driver.http(&post(None, &initialize("2025-11-25")), 1);
    assert_eq!(driver.server.session_id(), SESSION);
    for exchange in [init, driver.http(&post(Some(SESSION), INITIALIZED), 2)] {
        let head = driver.response(exchange).head.clone().unwrap();
        assert_eq!(head.session_id.as_deref(), Some(SESSION));
    }
    let get = HttpRequest {
        session_id: Some(SESSION),
        protocol_version: Some("2025-11-25"),
        ..get
    };
    let refused = driver.http(&get, 3);
    let head = driver.response(refused).head.clone().unwrap();
    assert_eq!(
        (head.status, head.allow, head.content_type),
        (405, Some("POST, DELETE"), None)
    );
}

#[test]
#[should_panic(expected = "visible ASCII")]
fn a_session_id_must_be_a_header_value() {
    let _ = Server::new(&[], &Config::default(), "a b".into());
}
