//! `replay_agent`, the stand-in for cursor-agent the proxy tests run, on its own: the
//! turn of a scenario the prompt is at, the models listing, its flags, resumed chats and
//! tool loops.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::{Scratch, example};

#[test]
fn replay_agent_plays_the_turn_the_prompt_is_at() {
    use agentwire::api::RequestLimits;
    use agentwire::cursor::prompt::render_prompt;
    use agentwire::openai::chat::parse_request;
    use agentwire::tools::{ToolPlan, ToolStrategy};

    let scratch = Scratch::new("scenario");
    let dir = scratch.path("scenario");
    std::fs::create_dir_all(&dir).unwrap();
    for turn in 1..=3 {
        std::fs::write(
            dir.join(format!("turn-{turn}.jsonl")),
            format!("{{\"turn\":{turn}}}\n"),
        )
        .unwrap();
    }
    let call = |id: &str| serde_json::json!({"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}});
    let result = |id: &str| serde_json::json!({"role": "tool", "tool_call_id": id, "content": "<<< not a block >>>"});
    let conversations = [
        serde_json::json!([{"role": "user", "content": "tool result for x"}]),
        serde_json::json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]}, result("a")]),
        serde_json::json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]}, result("a"), result("b")]),
    ];
    for (i, messages) in conversations.iter().enumerate() {
        let body = serde_json::json!({"model": "auto", "messages": messages});
        let request =
            parse_request(body.to_string().as_bytes(), &RequestLimits::default()).unwrap();
        let prompt = render_prompt(
            &request.conversation,
            &ToolPlan::new(&[], ToolStrategy::ReadOnly),
        );
        let mut child = Command::new(example("replay_agent"))
            .args(["--print", "--model", "auto", "--scenario"])
            .arg(&dir)
            .args(["--delay-ms", "0"])
            .env("AGENTWIRE_REPLAY_LOG", scratch.log())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            format!("{{\"turn\":{}}}\n", i + 1)
        );
        assert_eq!(scratch.runs()[i].prompt, prompt);
    }
    // A turn the scenario does not have: a clear failure.
    let mut child = Command::new(example("replay_agent"))
        .arg("--scenario")
        .arg(scratch.path("empty"))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("turn-1.jsonl"));
    for args in [&["models"][..], &["--print", "--list-models"]] {
        let listing = Command::new(example("replay_agent"))
            .args(args)
            .output()
            .unwrap();
        let models = agentwire::cursor::parse_models(&listing.stdout);
        assert_eq!(models.len(), 4, "{args:?}");
        assert!(models[0].is_default && models[1].is_current);
    }
    // The transcript from the environment, with cursor-agent's flags ignored.
    let mut child = Command::new(example("replay_agent"))
        .args([
            "--print",
            "--output-format",
            "stream-json",
            "--model",
            "gpt-5",
            "--delay-ms",
            "0",
        ])
        .env("AGENTWIRE_REPLAY_TRANSCRIPT", dir.join("turn-2.jsonl"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "{\"turn\":2}\n");
    let version = Command::new(example("replay_agent"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("agentwire-replay-agent "));
}

/// How a run of [`play`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    /// By itself: its exit code.
    Exits,
    /// It waits for a tool's result: stopped once its lines are read.
    Waits,
}

/// Runs replay_agent with `args` and `prompt` on stdin; its stdout lines (up to `lines`),
/// its exit code (`None` when it was stopped) and its stderr.
fn play(
    scratch: &Scratch,
    args: &[&str],
    prompt: &str,
    lines: usize,
    ends: Ends,
) -> (Vec<serde_json::Value>, Option<i32>, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(example("replay_agent"))
        .args(args)
        .args(["--delay-ms", "0"])
        .env("AGENTWIRE_REPLAY_LOG", scratch.log())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut read = Vec::new();
    while read.len() < lines {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        read.push(serde_json::from_str(&line).unwrap());
    }
    let exited = ends == Ends::Exits
        && support::wait_until(std::time::Duration::from_secs(10), || {
            child.try_wait().unwrap().is_some()
        });
    if !exited {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (read, status.code().filter(|_| exited), stderr)
}

#[test]
fn replay_agent_plays_resumed_chats_and_tool_loops() {
    let scratch = Scratch::new("chats");
    let chats = scratch.path("chats");
    std::fs::create_dir_all(&chats).unwrap();
    let dir = chats.to_str().unwrap();
    let tool_loop = ["--chat-dir", dir, "--tool-rounds", "2"];
    // A fresh run: a new chat, round 0 (its prompt holds no tool result).
    let (lines, code, _) = play(&scratch, &tool_loop, "go", 3, Ends::Waits);
    assert_eq!(code, None);
    let chat = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(agentwire::cursor::is_chat_id(&chat), "{chat}");
    assert!(lines.iter().all(|l| l["session_id"] == chat.as_str()));
    assert_eq!(
        lines[2]["tool_call"]["shellToolCall"]["args"]["command"],
        "echo round-0"
    );
    // Resumed: the chat's next round, then its answer, under the same id.
    let resume: Vec<&str> = tool_loop
        .iter()
        .copied()
        .chain(["--resume", &chat])
        .collect();
    let (lines, _, _) = play(&scratch, &resume, "results", 3, Ends::Waits);
    assert_eq!(
        lines[2]["tool_call"]["shellToolCall"]["args"]["command"],
        "echo round-1"
    );
    let (lines, code, _) = play(&scratch, &resume, "results", 3, Ends::Exits);
    assert_eq!(code, Some(0));
    assert_eq!(lines[2]["type"], "result");
    assert_eq!(lines[2]["result"], "Done after 2 tool rounds.");
    assert!(lines.iter().all(|l| l["session_id"] == chat.as_str()));
    // A chat not in the directory is lost: a new id, or a failure.
    let lost: Vec<&str> = tool_loop
        .iter()
        .copied()
        .chain(["--resume", "gone-chat"])
        .collect();
    let (lines, _, _) = play(&scratch, &lost, "x", 1, Ends::Waits);
    assert_ne!(lines[0]["session_id"], "gone-chat");
    let failing: Vec<&str> = lost
        .iter()
        .copied()
        .chain(["--lost-chat", "fail"])
        .collect();
    let (lines, code, stderr) = play(&scratch, &failing, "x", 1, Ends::Exits);
    assert!(lines.is_empty());
    assert_eq!(code, Some(1));
    assert!(stderr.contains("chat gone-chat not found"), "{stderr}");
    // A transcript replayed in a resumed chat carries its id.
    let transcript = support::transcript("e2e/read_file/turn-2.jsonl");
    let (lines, code, _) = play(
        &scratch,
        &["--transcript", &transcript, "--resume", "chat-7"],
        "x",
        usize::MAX,
        Ends::Exits,
    );
    assert_eq!(code, Some(0));
    assert!(lines.len() > 3 && lines.iter().all(|l| l["session_id"] == "chat-7"));
    // Every run logged what it was given and the chat it answered under.
    let runs = scratch.runs();
    assert_eq!(runs.len(), 6);
    assert_eq!((runs[0].stdin_bytes, runs[1].stdin_bytes), (2, 7));
    assert_eq!(runs[0].chat.as_deref(), Some(chat.as_str()));
    assert_eq!(runs[1].resumed(), Some(chat.as_str()));
    // A lost chat that fails answers under none.
    assert_eq!(runs[4].chat, None);
    assert_eq!(runs[5].chat.as_deref(), Some("chat-7"));
}

/// One request the test's MCP server received: its headers (names in lower case) and
/// its JSON-RPC message.
#[derive(Debug)]
struct McpRequest {
    headers: std::collections::HashMap<String, String>,
    message: serde_json::Value,
}

/// A small MCP server on loopback: answers `initialize` (with a session id),
/// `notifications/initialized`, `tools/list` (two tools) and `tools/call` (`out: <command>`;
/// the second call's answer an SSE stream with a keep-alive comment first, an error),
/// then closes each connection. Sends every request it reads on `seen`.
struct McpServer {
    addr: std::net::SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl McpServer {
    fn start(seen: std::sync::mpsc::Sender<McpRequest>) -> McpServer {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopping = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut calls = 0;
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                let answer = mcp_answer(&request.message, &mut calls);
                let _ = stream.write_all(answer.as_bytes());
                let _ = seen.send(request);
            }
        });
        McpServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept.
        let _ = std::net::TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one HTTP request (head and `content-length` body), within 10 s.
fn read_request(stream: &mut std::net::TcpStream) -> Option<McpRequest> {
    use std::io::Read;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut buf).ok().filter(|&n| n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(raw[..end].to_vec()).unwrap();
    let headers: std::collections::HashMap<String, String> = head
        .split("\r\n")
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers["content-length"].parse().unwrap();
    let mut body = raw[end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).ok().filter(|&n| n > 0)?;
        body.extend_from_slice(&buf[..n]);
    }
    let message = serde_json::from_slice(&body).unwrap();
    Some(McpRequest { headers, message })
}

/// The whole HTTP answer to `message`.
fn mcp_answer(message: &serde_json::Value, calls: &mut u32) -> String {
    use serde_json::json;
    let json_answer = |result: serde_json::Value, extra: &str| {
        let body = json!({"jsonrpc": "2.0", "id": message["id"], "result": result}).to_string();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    match message["method"].as_str().unwrap_or_default() {
        "initialize" => json_answer(
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "test", "version": "1"}}),
            "mcp-session-id: mcp-session-1\r\n",
        ),
        "notifications/initialized" => {
            "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
        }
        "tools/list" => json_answer(
            json!({"tools": [
                {"name": "bash", "inputSchema": {"type": "object",
                    "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"},
                        "description": {"type": "string"}},
                    "required": ["command", "timeout"]}},
                {"name": "read", "inputSchema": {"type": "object",
                    "properties": {"path": {"type": "string"}}, "required": ["path"]}}]}),
            "",
        ),
        "tools/call" => {
            *calls += 1;
            let text = format!(
                "out: {}",
                message["params"]["arguments"]["command"]
                    .as_str()
                    .unwrap_or("?")
            );
            let result =
                json!({"content": [{"type": "text", "text": text}], "isError": *calls == 2});
            if *calls == 1 {
                return json_answer(result, "");
            }
            let event = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n: keep-alive\n\nevent: message\ndata: {event}\n\n"
            )
        }
        _ => "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
    }
}

/// Runs replay_agent with `args` in `workspace`, `prompt` on stdin and `token` as
/// `AGENTWIRE_MCP_TOKEN` (unset when `None`): its stdout lines, exit code and stderr.
fn play_mcp(
    scratch: &Scratch,
    args: &[&str],
    token: Option<&str>,
    prompt: &str,
) -> (Vec<serde_json::Value>, Option<i32>, String) {
    use std::io::Read;
    let mut command = Command::new(example("replay_agent"));
    command
        .args(args)
        .args(["--delay-ms", "0"])
        .env("AGENTWIRE_REPLAY_LOG", scratch.log())
        .env_remove("AGENTWIRE_MCP_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(token) = token {
        command.env("AGENTWIRE_MCP_TOKEN", token);
    }
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    let exited = support::wait_until(std::time::Duration::from_secs(20), || {
        child.try_wait().unwrap().is_some()
    });
    if !exited {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(exited, "replay_agent did not exit: {stderr}");
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, status.code(), stderr)
}

/// The log's events of `kind` (`mcp_session`, `tool_call`, `tool_result`).
fn events(scratch: &Scratch, kind: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(scratch.log()).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == kind)
        .collect()
}

#[test]
fn replay_agent_calls_the_workspaces_mcp_server_for_its_tool_rounds() {
    use serde_json::json;
    use std::time::Duration;
    let scratch = Scratch::new("mcp");
    let (seen_tx, seen) = std::sync::mpsc::channel();
    let server = McpServer::start(seen_tx);
    let workspace = scratch.path("workspace");
    std::fs::create_dir_all(workspace.join(".cursor")).unwrap();
    // Two servers: the first as written is used (not the first in sorted order).
    let url = format!("http://{}/mcp/cursor", server.addr);
    std::fs::write(
        workspace.join(".cursor/mcp.json"),
        format!(
            r#"{{"mcpServers":{{"agentwire":{{"url":"{url}","headers":{{"Authorization":"Bearer ${{env:AGENTWIRE_MCP_TOKEN}}"}}}},"aaa":{{"url":"http://127.0.0.1:1/none"}}}}}}"#
        ),
    )
    .unwrap();
    let dir = workspace.to_str().unwrap();
    let args = [
        "--print",
        "--output-format",
        "stream-json",
        "--approve-mcps",
        "--workspace",
        dir,
        "--mcp-rounds",
        "2",
    ];
    let (lines, code, stderr) = play_mcp(&scratch, &args, Some("token-1"), "go");
    assert_eq!(code, Some(0), "{stderr}");
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| {
            format!(
                "{}/{}",
                l["type"].as_str().unwrap(),
                l["subtype"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "system/init",
            "user/",
            "assistant/",
            "tool_call/started",
            "tool_call/completed",
            "assistant/",
            "tool_call/started",
            "tool_call/completed",
            "assistant/",
            "result/success"
        ]
    );
    let chat = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(agentwire::cursor::is_chat_id(&chat), "{chat}");
    assert!(lines.iter().all(|l| l["session_id"] == chat.as_str()));
    assert_eq!(lines[0]["cwd"], dir);
    assert_eq!(lines[1]["message"]["content"][0]["text"], "go");
    let text = |line: &serde_json::Value| line["message"]["content"][0]["text"].clone();
    for (round, at, result, is_error) in [
        (1, 2, "out: echo round-1", false),
        (2, 5, "out: echo round-2", true),
    ] {
        let command = format!("echo round-{round}");
        assert_eq!(text(&lines[at]), format!("Running `{command}`."));
        let (started, completed) = (&lines[at + 1], &lines[at + 2]);
        let call = started["call_id"].as_str().unwrap();
        assert_eq!(completed["call_id"], call);
        assert_eq!(
            started["tool_call"],
            json!({"mcpToolCall": {"args": {"name": "agentwire-bash",
                "args": {"command": command, "timeout": 0}, "toolCallId": call,
                "providerIdentifier": "agentwire", "toolName": "bash",
                "serverIdentifier": "agentwire"}}})
        );
        assert_eq!(
            completed["tool_call"]["mcpToolCall"]["result"]["success"],
            json!({"content": [{"text": {"text": result}}], "isError": is_error})
        );
    }
    let done = "Done after 2 tool rounds. Last result: out: echo round-2";
    assert_eq!(text(&lines[8]), done);
    assert_eq!(
        (&lines[9]["result"], &lines[9]["is_error"]),
        (&json!(done), &json!(false))
    );
    // What the server saw: the session, every header, the bearer from the environment.
    let requests: Vec<McpRequest> = (0..5)
        .map(|_| seen.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    let methods: Vec<&str> = requests
        .iter()
        .map(|r| r.message["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call"
        ]
    );
    assert_eq!(
        requests[0].message["params"]["protocolVersion"],
        "2025-06-18"
    );
    for (i, request) in requests.iter().enumerate() {
        let header = |name: &str| request.headers.get(name).map(String::as_str);
        assert_eq!(header("authorization"), Some("Bearer token-1"));
        assert_eq!(
            header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(header("content-type"), Some("application/json"));
        let session = (i > 0).then_some("mcp-session-1");
        assert_eq!(header("mcp-session-id"), session, "{methods:?}[{i}]");
    }
    assert_eq!(
        requests[4].message["params"],
        json!({"name": "bash", "arguments": {"command": "echo round-2", "timeout": 0}})
    );
    // The log: the session, each call and what it answered.
    let sessions = events(&scratch, "mcp_session");
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["url"], url.as_str());
    assert_eq!(sessions[0]["authorization"], "Bearer token-1");
    assert_eq!(sessions[0]["tools"], json!(["bash", "read"]));
    let calls = events(&scratch, "tool_call");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (&calls[1]["round"], &calls[1]["name"]),
        (&json!(2), &json!("bash"))
    );
    let results = events(&scratch, "tool_result");
    assert_eq!(results.len(), 2);
    assert_eq!(
        (&results[1]["text"], &results[1]["is_error"]),
        (&json!("out: echo round-2"), &json!(true))
    );

    // Resumed, its prompt quoting round 1: round 2 only, under the chat resumed.
    let mut resumed = args.to_vec();
    resumed.extend(["--resume", &chat]);
    let prompt = "The result of `echo round-1`: out: echo round-1";
    let (lines, code, stderr) = play_mcp(&scratch, &resumed, Some("token-2"), prompt);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(lines.iter().all(|l| l["session_id"] == chat.as_str()));
    assert_eq!(text(&lines[2]), "Running `echo round-2`.");
    assert_eq!(lines.len(), 7);
    let calls: Vec<McpRequest> = (0..4)
        .map(|_| seen.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(calls[0].headers["authorization"], "Bearer token-2");
    assert_eq!(
        calls[3].message["params"]["arguments"]["command"],
        "echo round-2"
    );
    // A conversation that played every round: the answer alone.
    let (lines, code, _) = play_mcp(&scratch, &args, Some("t"), "echo round-1, echo round-2");
    assert_eq!(code, Some(0));
    assert_eq!(
        text(&lines[2]),
        "Done after 2 tool rounds. Last result: (none)"
    );
    assert_eq!(lines.len(), 4);
    assert_eq!(
        events(&scratch, "tool_call").len(),
        3,
        "no call when every round is played"
    );

    // A variable not set: a clear error, exit 1, nothing written, nothing asked.
    let (lines, code, stderr) = play_mcp(&scratch, &args, None, "go");
    assert_eq!(code, Some(1));
    assert!(lines.is_empty());
    assert!(
        stderr.contains("${env:AGENTWIRE_MCP_TOKEN} is not set"),
        "{stderr}"
    );
    // Without --approve-mcps the server is not used.
    let unapproved: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--approve-mcps")
        .collect();
    let (lines, code, _) = play_mcp(&scratch, &unapproved, Some("t"), "go");
    assert_eq!(code, Some(0));
    assert_eq!(
        text(&lines[2]),
        "Done after 0 tool rounds. Last result: (none)"
    );
    let sessions = events(&scratch, "mcp_session");
    assert_eq!(sessions.len(), 5);
    assert!(
        sessions[3]["error"]
            .as_str()
            .unwrap()
            .contains("AGENTWIRE_MCP_TOKEN")
    );
    assert_eq!(sessions[4]["error"], "no --approve-mcps");
    // The last two runs and the one with every round played asked nothing more than
    // their session (three requests for the latter).
    let more: Vec<McpRequest> = seen.try_iter().collect();
    assert_eq!(more.len(), 3, "{more:?}");
    drop(server);
}
