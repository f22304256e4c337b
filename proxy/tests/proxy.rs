//! The example proxies over real sockets and real processes: `tokio_proxy` and
//! `blocking_proxy`, each started on a loopback port with `replay_agent` standing in for
//! cursor-agent, and held to the same behaviour — answers, errors, abuse, cancellation and
//! process hygiene (every agent's process group gone and reaped, every slot free).
//!
//! Nothing here sleeps to let things settle: waits are for an event
//! (a process gone, a counter at zero) with a deadline as a safety net.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentwire_testkit::messages;
use support::responses::{check_responses_body, check_responses_stream};
use support::{check_stream, expected_result};

/// The repository root (this package is `proxy/` in it).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

// ---------------------------------------------------------------------------------------
// Binaries, agents, proxies.

/// A binary of this package (cargo builds them before the tests).
fn example(name: &str) -> PathBuf {
    let path = PathBuf::from(match name {
        "tokio_proxy" => env!("CARGO_BIN_EXE_tokio_proxy"),
        "blocking_proxy" => env!("CARGO_BIN_EXE_blocking_proxy"),
        "replay_agent" => env!("CARGO_BIN_EXE_replay_agent"),
        "acp_agent" => env!("CARGO_BIN_EXE_acp_agent"),
        _ => panic!("no binary {name}"),
    });
    assert!(path.is_file(), "{} missing", path.display());
    path
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tokio,
    Blocking,
}

impl Kind {
    fn binary(self) -> PathBuf {
        example(match self {
            Kind::Tokio => "tokio_proxy",
            Kind::Blocking => "blocking_proxy",
        })
    }

    /// The module of its tests (the `both!` macro's).
    fn module(self) -> &'static str {
        match self {
            Kind::Tokio => "tokio_proxy",
            Kind::Blocking => "blocking_proxy",
        }
    }
}

/// A scratch directory for one test, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("agentwire-proxy-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// An agent: a script running replay_agent with `flags` before cursor-agent's own.
    fn agent(&self, flags: &[&str]) -> PathBuf {
        let replay = example("replay_agent");
        let quoted: Vec<String> = flags.iter().map(|f| format!("'{f}'")).collect();
        let script = format!(
            "#!/bin/sh\nexec '{}' {} \"$@\"\n",
            replay.display(),
            quoted.join(" ")
        );
        self.script("agent.sh", &script)
    }

    fn script(&self, name: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn log(&self) -> PathBuf {
        self.path("replay.log")
    }

    /// The runs the agent logged: (pid, child pid, argv, prompt).
    fn runs(&self) -> Vec<AgentRun> {
        let Ok(text) = std::fs::read_to_string(self.log()) else {
            return Vec::new();
        };
        text.lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                AgentRun {
                    pid: v["pid"].as_u64().unwrap() as u32,
                    child: v["child_pid"].as_u64().map(|p| p as u32),
                    argv: v["argv"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_owned())
                        .collect(),
                    prompt: v["prompt"].as_str().unwrap().to_owned(),
                }
            })
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Debug)]
struct AgentRun {
    pid: u32,
    child: Option<u32>,
    argv: Vec<String>,
    prompt: String,
}

fn transcript(name: &str) -> String {
    format!("{ROOT}/tests/fixtures/{name}")
}

/// A running proxy on a loopback port.
struct Proxy {
    child: Child,
    addr: SocketAddr,
    banner: String,
    kind: Kind,
}

impl Proxy {
    fn start(kind: Kind, agent: &Path, scratch: &Scratch, extra: &[&str]) -> Proxy {
        let mut args = vec!["--agent-bin".to_owned(), agent.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        Proxy::start_with(kind, &args, scratch)
    }

    fn start_with(kind: Kind, args: &[String], scratch: &Scratch) -> Proxy {
        Proxy::launch(kind, args, scratch, &[], None)
    }

    /// Starts a proxy with `env` added to its environment and, with `nofile`, that
    /// descriptor limit.
    fn launch(
        kind: Kind,
        args: &[String],
        scratch: &Scratch,
        env: &[(&str, &str)],
        nofile: Option<u32>,
    ) -> Proxy {
        let mut command = match nofile {
            None => Command::new(kind.binary()),
            Some(n) => {
                let mut sh = Command::new("sh");
                sh.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\"")])
                    .arg(kind.binary());
                sh
            }
        };
        let mut child = command
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("AGENTWIRE_REPLAY_LOG", scratch.log())
            .env_remove("AGENTWIRE_API_KEY")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        stdout.read_line(&mut banner).unwrap();
        let addr = banner
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("{kind:?}: no address in {banner:?}"));
        // The rest of the banner (the demo's curl line), without waiting for more.
        if args.iter().any(|a| a == "--demo") {
            for _ in 0..2 {
                stdout.read_line(&mut banner).unwrap();
            }
        }
        Proxy {
            child,
            addr,
            banner,
            kind,
        }
    }

    fn connect(&self) -> Conn {
        Conn::open(self.addr)
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut conn = self.connect();
        conn.send(&raw(method, path, headers, body));
        conn.reply()
    }

    /// A streaming request whose 200 head has arrived.
    fn open_stream(&self) -> Conn {
        let mut conn = self.connect();
        conn.post_chat(&stream_body("hi"));
        let (status, _) = conn.head();
        assert_eq!(status, 200);
        conn
    }

    /// A JSON `body` posted to `path`.
    fn post_json(&self, path: &str, headers: &[(&str, &str)], body: &serde_json::Value) -> Reply {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.request("POST", path, &all, body.to_string().as_bytes())
    }

    fn chat(&self, body: &str) -> Reply {
        self.request(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
    }

    fn health(&self) -> serde_json::Value {
        let reply = self.request("GET", "/health", &[], b"");
        assert_eq!(reply.status, 200, "{:?}", reply.text());
        reply.json()
    }

    fn in_flight(&self) -> u64 {
        self.health()["in_flight"].as_u64().unwrap()
    }

    fn wait_idle(&self) {
        assert!(
            wait_until(Duration::from_secs(10), || self.in_flight() == 0),
            "{:?}: slots still taken: {}",
            self.kind,
            self.health()
        );
    }

    /// SIGTERM, then the exit within a bound.
    fn stop(&mut self) -> std::process::ExitStatus {
        signal(self.child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "{:?} did not stop", self.kind);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proxy {
    /// Shuts the proxy down as an operator would (SIGTERM: it stops every agent group it
    /// still has); SIGKILL only if that fails, which would orphan those groups.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let child = &mut self.child;
        if !wait_until(Duration::from_secs(15), || {
            child.try_wait().ok().flatten().is_some()
        }) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Polls `done` until it holds or `limit` passes; whether it held.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---------------------------------------------------------------------------------------
// Processes, from /proc.

/// (state, parent, process group) of every process.
fn processes() -> Vec<(u32, char, u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp …": comm may hold anything, so split after its ')'.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let state = fields[0].chars().next().unwrap_or('?');
        out.push((
            pid,
            state,
            fields[1].parse().unwrap_or(0),
            fields[2].parse().unwrap_or(0),
        ));
    }
    out
}

/// Live (not zombie) processes in any of `groups`.
fn alive_in(groups: &HashSet<u32>) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(_, state, _, group)| groups.contains(group) && *state != 'Z')
        .map(|(pid, ..)| pid)
        .collect()
}

/// Zombie children of `parent`.
fn zombies_of(parent: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(_, state, ppid, _)| *ppid == parent && *state == 'Z')
        .map(|(pid, ..)| pid)
        .collect()
}

fn assert_groups_gone(groups: &HashSet<u32>, limit: Duration, what: &str) {
    assert!(
        wait_until(limit, || alive_in(groups).is_empty()),
        "{what}: processes of the agents' groups still alive: {:?}",
        alive_in(groups)
    );
}

// ---------------------------------------------------------------------------------------
// A small HTTP/1.1 client with full control of the socket.

fn raw(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    raw_to(Some("localhost"), method, path, headers, body)
}

/// A request naming `host` in its Host header (none without one).
fn raw_to(
    host: Option<&str>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nconnection: close\r\n");
    if let Some(host) = host {
        out.push_str(&format!("host: {host}\r\n"));
    }
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        out.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.text()))
    }

    /// An OpenAI error body's code, after checking its shape.
    fn error_code(&self) -> String {
        let body = self.json();
        let error = &body["error"];
        assert!(error["message"].is_string(), "{body}");
        assert!(error["type"].is_string(), "{body}");
        assert!(error.get("param").is_some(), "{body}");
        error["code"].as_str().unwrap_or_default().to_owned()
    }
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        Conn::from(TcpStream::connect(addr).unwrap())
    }

    fn from(stream: TcpStream) -> Conn {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// A connection whose receive window is as small as the kernel allows, so a server
    /// writing to it is soon blocked when it is not read.
    fn open_small_window(addr: SocketAddr) -> Conn {
        use nix::sys::socket::{
            AddressFamily, SockFlag, SockType, SockaddrIn, connect, setsockopt, socket, sockopt,
        };
        use std::os::fd::AsRawFd;
        let SocketAddr::V4(v4) = addr else {
            panic!("loopback v4 expected: {addr}")
        };
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .unwrap();
        setsockopt(&fd, sockopt::RcvBuf, &1024).unwrap();
        connect(fd.as_raw_fd(), &SockaddrIn::from(v4)).unwrap();
        Conn::from(TcpStream::from(fd))
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    fn post_chat(&mut self, body: &str) {
        self.send(&raw(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body.as_bytes(),
        ));
    }

    /// Reads more; false at end of stream (or a reset).
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    fn head(&mut self) -> (u16, Vec<(String, String)>) {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&self.buf).expect("a valid response head") {
                httparse::Status::Complete(len) => {
                    let status = response.code.unwrap();
                    let headers = response
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_ascii_lowercase(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect();
                    self.buf.drain(..len);
                    return (status, headers);
                }
                httparse::Status::Partial => {
                    assert!(self.fill(), "connection closed before a response head")
                }
            }
        }
    }

    /// The next chunk of a chunked body; `None` after the last.
    fn chunk(&mut self) -> Option<Vec<u8>> {
        loop {
            match httparse::parse_chunk_size(&self.buf) {
                Ok(httparse::Status::Complete((start, size))) => {
                    let size = size as usize;
                    if size == 0 {
                        return None;
                    }
                    while self.buf.len() < start + size + 2 {
                        assert!(self.fill(), "connection closed inside a chunk");
                    }
                    let data = self.buf[start..start + size].to_vec();
                    self.buf.drain(..start + size + 2);
                    return Some(data);
                }
                Ok(httparse::Status::Partial) => {
                    if !self.fill() {
                        return None;
                    }
                }
                Err(e) => panic!("bad chunk: {e:?}"),
            }
        }
    }

    fn reply(&mut self) -> Reply {
        let (status, headers) = self.head();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let body = if header("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
            let mut body = Vec::new();
            while let Some(chunk) = self.chunk() {
                body.extend_from_slice(&chunk);
            }
            body
        } else if let Some(length) = header("content-length") {
            let length: usize = length.parse().unwrap();
            while self.buf.len() < length {
                assert!(self.fill(), "connection closed inside the body");
            }
            self.buf[..length].to_vec()
        } else {
            while self.fill() {}
            std::mem::take(&mut self.buf)
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Whether the server closed the connection (end of stream or reset) within `limit`.
    fn closed_within(&mut self, limit: Duration) -> bool {
        self.stream.set_read_timeout(Some(limit)).unwrap();
        let mut chunk = [0u8; 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return false;
                }
                Err(_) => return true,
            }
        }
    }
}

/// The head of a chunked chat request.
const CHUNKED_HEAD: &[u8] = b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";

fn stream_body(content: &str) -> String {
    serde_json::json!({"model": "auto", "stream": true, "messages": [{"role": "user", "content": content}]})
        .to_string()
}

fn plain_body(content: &str) -> String {
    serde_json::json!({"model": "auto", "messages": [{"role": "user", "content": content}]})
        .to_string()
}

/// Generates one test per proxy from `fn name(kind: Kind)`.
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod tokio_proxy {
            $(#[test] fn $name() { super::$name(super::Kind::Tokio) })*
        }
        mod blocking_proxy {
            $(#[test] fn $name() { super::$name(super::Kind::Blocking) })*
        }
    };
}

both!(
    answers_streaming_and_whole,
    routes_and_errors,
    client_gone_mid_stream_stops_the_group,
    client_gone_before_the_answer_stops_the_group,
    random_cancellations_leak_nothing,
    silent_agent_times_out_with_504,
    slow_head_is_dropped,
    body_over_the_limit_gets_413,
    malformed_requests_leave_it_healthy,
    api_key_is_required,
    excess_requests_get_429,
    models_are_listed_cached_and_served_stale,
    shutdown_ends_streams_in_band,
    demo_answers_with_nothing_else_built,
    startup_refusals,
    web_pages_cannot_drive_the_agent,
    allowed_origins_get_cors,
    a_client_that_stops_reading_is_let_go,
    max_duration_ends_a_busy_stream,
    request_bodies_have_a_deadline,
    connections_beyond_the_cap,
    models_are_listed_one_at_a_time,
    the_agent_gets_none_of_the_proxys_secrets,
    escaped_descendants_do_not_hold_the_response,
    orphans_are_reaped,
    request_framing_is_strict,
    http_1_details,
    every_dialect_on_its_route,
    dialect_errors_and_probes,
    acp_one_warm_process_serves_every_dialect,
    acp_concurrent_turns_interleave_on_one_pipe,
    acp_client_gone_cancels_the_session_only,
    acp_agent_dying_mid_turn_is_restarted,
    acp_shutdown_leaves_no_process,
    acp_shutdown_stops_what_the_agent_detached,
    acp_scripted_failures_reach_the_client,
    acp_stand_in_plays_the_recorded_agents,
    acp_an_agent_that_never_serves_fails_requests_fast,
    acp_models_are_the_agents_list_in_both_shapes,
    acp_models_follow_a_restarted_agent,
    acp_prompt_cap_queues_then_fails_with_503_in_the_routes_dialect,
    acp_health_shows_the_warm_agent_to_authenticated_callers,
    acp_finished_sessions_are_closed_when_the_agent_offers_it,
    acp_a_client_that_reads_late_still_gets_everything,
    acp_without_a_pool_the_models_are_known_after_a_first_request,
);

// ---------------------------------------------------------------------------------------
// Behaviour.

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

/// Starts a stream whose agent paces its lines and keeps a child in its group; reads the
/// first content frame, then hangs up.
/// The Messages and Responses routes: each dialect's stream and body, with the key as
/// its clients send it, the model aliased, and `request-id` on the Messages routes.
fn every_dialect_on_its_route(kind: Kind) {
    let scratch = Scratch::new("dialects");
    let fixture = transcript("partial_recaps.jsonl");
    let expected = expected_result(&std::fs::read(&fixture).unwrap()).unwrap();
    let agent = scratch.agent(&["--transcript", &fixture]);
    let flags = [
        "--api-key",
        "sk-test",
        "--model-alias",
        "claude-*haiku*=composer-2.5",
        "--model-alias",
        "claude-*=auto",
    ];
    let proxy = Proxy::start(kind, &agent, &scratch, &flags);
    let anthropic = [
        ("x-api-key", "sk-test"),
        ("content-type", "application/json"),
        ("anthropic-version", "2023-06-01"),
    ];
    let openai = [
        ("authorization", "Bearer sk-test"),
        ("content-type", "application/json"),
    ];
    let message = |model: &str, stream: bool| {
        serde_json::json!({"model": model, "max_tokens": 1024, "stream": stream,
            "messages": [{"role": "user", "content": "Check notes.txt"}]})
        .to_string()
    };
    let is_request_id = |reply: &Reply| {
        reply.header("request-id").is_some_and(|id| {
            id.strip_prefix("req_")
                .is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        })
    };

    // Claude Code's request line, its model aliased to the agent's.
    let reply = proxy.request(
        "POST",
        "/v1/messages?beta=true",
        &anthropic,
        message("claude-opus-5-5", true).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert!(is_request_id(&reply), "{:?}", reply.headers);
    let stream = messages::check_stream(&reply.body, "auto");
    assert_eq!(stream.text(), expected);
    assert!(stream.error.is_none());
    let reply = proxy.request(
        "POST",
        "/v1/messages",
        &anthropic,
        message("claude-haiku-4-5", false).as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(is_request_id(&reply));
    let body = reply.json();
    messages::check_body(&body, "composer-2.5");
    assert_eq!(body["content"][0]["text"], expected.as_str());

    // Codex's: the Responses API, stream and body; a model no rule matches is kept.
    let response = |stream: bool| {
        serde_json::json!({"model": "gpt-5", "stream": stream, "input": "Check notes.txt"})
            .to_string()
    };
    let reply = proxy.request("POST", "/v1/responses", &openai, response(true).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("request-id"), None);
    let summary = check_responses_stream(&reply.body);
    assert_eq!(summary.terminal, "response.completed");
    assert_eq!(summary.text, expected);
    let reply = proxy.request("POST", "/responses", &openai, response(false).as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(check_responses_body(&reply.json()), expected);

    // Each request ran the agent once, with the model it mapped to.
    let models: Vec<String> = scratch
        .runs()
        .iter()
        .map(|run| {
            run.argv
                .windows(2)
                .find(|w| w[0] == "--model")
                .map(|w| w[1].clone())
                .unwrap()
        })
        .collect();
    assert_eq!(models, ["auto", "composer-2.5", "gpt-5", "gpt-5"]);
}

/// What the Messages and Responses routes answer without an agent: `count_tokens`, the
/// probe, and every refusal in the route's own error shape.
fn dialect_errors_and_probes(kind: Kind) {
    let scratch = Scratch::new("dialect-errors");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--api-key", "sk-test"]);
    let json = ("content-type", "application/json");
    let key = ("x-api-key", "sk-test");
    let anthropic_error = |reply: &Reply, status: u16, kind: &str| {
        assert_eq!(reply.status, status, "{}", reply.text());
        let body = reply.json();
        messages::check_error_object(&body);
        assert_eq!(body["error"]["type"], kind, "{body}");
        assert!(
            reply
                .header("request-id")
                .is_some_and(|id| id.starts_with("req_"))
        );
    };
    let valid = br#"{"model":"auto","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}"#;

    // count_tokens: an honest 404 for a valid body, the field for a bad one.
    let reply = proxy.request(
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &[key, json],
        valid,
    );
    anthropic_error(&reply, 404, "not_found_error");
    let reply = proxy.request(
        "POST",
        "/v1/messages/count_tokens",
        &[key, json],
        br#"{"model":"auto","messages":5}"#,
    );
    anthropic_error(&reply, 400, "invalid_request_error");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages")
    );

    // Refusals on the Messages routes, in its shape.
    for (headers, path) in [
        (vec![json], "/v1/messages"),
        (vec![json, ("x-api-key", "sk-wrong")], "/v1/messages"),
        (
            vec![json, ("authorization", "Bearer sk-wrong")],
            "/v1/messages/count_tokens",
        ),
    ] {
        let reply = proxy.request("POST", path, &headers, valid);
        anthropic_error(&reply, 401, "authentication_error");
    }
    let reply = proxy.request(
        "POST",
        "/v1/messages",
        &[key, ("content-type", "text/plain")],
        valid,
    );
    anthropic_error(&reply, 415, "invalid_request_error");
    let reply = proxy.request("GET", "/v1/messages", &[key], b"");
    anthropic_error(&reply, 405, "invalid_request_error");
    let no_max_tokens = br#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;
    let reply = proxy.request("POST", "/v1/messages", &[key, json], no_max_tokens);
    anthropic_error(&reply, 400, "invalid_request_error");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens"),
        "{}",
        reply.text()
    );

    // The Responses route's refusals are OpenAI's; its bad bodies name the field.
    let reply = proxy.request(
        "POST",
        "/v1/responses",
        &[json],
        br#"{"model":"auto","input":"hi"}"#,
    );
    assert_eq!(reply.status, 401);
    assert_eq!(reply.error_code(), "invalid_api_key");
    assert_eq!(reply.header("request-id"), None);
    let bearer = ("authorization", "Bearer sk-test");
    let stored = br#"{"model":"auto","input":"hi","previous_response_id":"resp_1"}"#;
    let reply = proxy.request("POST", "/v1/responses", &[bearer, json], stored);
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.json()["error"]["param"], "previous_response_id");

    // Claude Code's probe needs no key and gets an empty 200.
    for method in ["HEAD", "GET"] {
        let reply = proxy.request(method, "/api/hello", &[], b"");
        assert_eq!(reply.status, 200, "{method}");
        assert!(reply.body.is_empty(), "{method}");
    }
    assert!(scratch.runs().is_empty(), "no request above runs the agent");
}

fn client_gone_mid_stream_stops_the_group(kind: Kind) {
    let scratch = Scratch::new("gone-mid-stream");
    let agent = scratch.agent(&[
        "--transcript",
        &transcript("partial_recaps.jsonl"),
        "--delay-ms",
        "40",
        "--spawn-child",
        "--hang",
    ]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut conn = proxy.open_stream();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("\"content\"") {
        seen.extend(conn.chunk().expect("frames before the end"));
    }
    let runs = scratch.runs();
    assert_eq!(runs.len(), 1);
    let child = runs[0].child.expect("the agent's child");
    let groups = HashSet::from([runs[0].pid]);
    assert!(
        alive_in(&groups).contains(&child),
        "the child runs in the agent's group"
    );
    drop(conn);
    assert_groups_gone(&groups, Duration::from_secs(1), "client gone mid-stream");
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

/// A non-streaming request (and a stream before its head) whose agent says nothing: the
/// hang-up alone must stop the group.
fn client_gone_before_the_answer_stops_the_group(kind: Kind) {
    let scratch = Scratch::new("gone-early");
    let agent = scratch.agent(&["--hang", "--spawn-child"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    for (i, body) in [plain_body("hi"), stream_body("hi")].iter().enumerate() {
        let mut conn = proxy.connect();
        conn.post_chat(body);
        assert!(
            wait_until(Duration::from_secs(10), || scratch.runs().len() > i),
            "the agent started"
        );
        let run = &scratch.runs()[i];
        let groups = HashSet::from([run.pid]);
        assert!(wait_until(Duration::from_secs(5), || alive_in(&groups)
            .len()
            == 2));
        drop(conn);
        assert_groups_gone(
            &groups,
            Duration::from_secs(1),
            "client gone before any answer",
        );
    }
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

/// The environment variable that replays a randomised test with the seed it printed.
const SEED_VAR: &str = "AGENTWIRE_TEST_SEED";

/// The seed of a randomised test: `AGENTWIRE_TEST_SEED` when set (to replay a failure),
/// else a new one from the clock. Never zero, which xorshift would stay at.
fn test_seed() -> u64 {
    let seed = match std::env::var(SEED_VAR) {
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("{SEED_VAR}={text:?}: {e}")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    seed | 1
}

/// Says, when the test it lives in fails, how to rerun it with the same seed.
struct RerunHint {
    test: String,
    seed: u64,
}

impl Drop for RerunHint {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "rerun with the same seed: {SEED_VAR}={} cargo test -p agentwire-proxy --test proxy -- --exact {}",
                self.seed, self.test
            );
        }
    }
}

fn random_cancellations_leak_nothing(kind: Kind) {
    let scratch = Scratch::new("cancel");
    let agent = scratch.agent(&[
        "--transcript",
        &transcript("partial_recaps.jsonl"),
        "--delay-ms",
        "1",
        "--spawn-child",
    ]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-concurrent", "64"]);
    let seed = test_seed();
    let _rerun = RerunHint {
        test: format!("{}::random_cancellations_leak_nothing", kind.module()),
        seed,
    };
    eprintln!("{kind:?}: cancellation seed {seed}");
    const REQUESTS: u64 = 200;
    const WORKERS: u64 = 8;
    std::thread::scope(|scope| {
        for worker in 0..WORKERS {
            let proxy = &proxy;
            scope.spawn(move || {
                let mut x = seed ^ (worker + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut random = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for i in (worker..REQUESTS).step_by(WORKERS as usize) {
                    let body = if i % 3 == 0 {
                        plain_body("hi")
                    } else {
                        stream_body("hi")
                    };
                    let mut conn = proxy.connect();
                    let request = raw(
                        "POST",
                        "/v1/chat/completions",
                        &[("content-type", "application/json")],
                        body.as_bytes(),
                    );
                    match random() % 4 {
                        // Mid-request: part of the body, then gone.
                        0 => conn.send(&request[..request.len() - 1 - (random() % 8) as usize]),
                        // Request sent, gone before the answer.
                        1 => conn.send(&request),
                        // Gone after a few chunks (or at the end).
                        2 => {
                            conn.send(&request);
                            let (status, headers) = conn.head();
                            assert_eq!(status, 200);
                            let chunked = headers
                                .iter()
                                .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
                            for _ in 0..if chunked { random() % 12 } else { 0 } {
                                if conn.chunk().is_none() {
                                    break;
                                }
                            }
                        }
                        // Read to the end.
                        _ => {
                            conn.send(&request);
                            assert_eq!(conn.reply().status, 200);
                        }
                    }
                    if random() % 2 == 0 {
                        // Reset rather than close.
                        let linger = nix::libc::linger {
                            l_onoff: 1,
                            l_linger: 0,
                        };
                        let _ = nix::sys::socket::setsockopt(
                            &conn.stream,
                            nix::sys::socket::sockopt::Linger,
                            &linger,
                        );
                    }
                    let _ = conn.stream.shutdown(Shutdown::Both);
                }
            });
        }
    });
    proxy.wait_idle();
    let groups: HashSet<u32> = scratch.runs().iter().map(|r| r.pid).collect();
    assert!(
        groups.len() > REQUESTS as usize / 4,
        "many requests started an agent"
    );
    assert_groups_gone(&groups, Duration::from_secs(5), "after 200 cancellations");
    assert!(zombies_of(proxy.child.id()).is_empty(), "no zombie");
    let health = proxy.health();
    assert_eq!(health["in_flight"], 0);
    // And it still answers.
    assert_eq!(proxy.chat(&stream_body("hi")).status, 200);
    proxy.wait_idle();
}

fn silent_agent_times_out_with_504(kind: Kind) {
    let scratch = Scratch::new("hang");
    let agent = scratch.agent(&["--hang", "--spawn-child"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--idle-timeout-ms", "300"]);
    for body in [plain_body("hi"), stream_body("hi")] {
        let started = Instant::now();
        let reply = proxy.chat(&body);
        assert_eq!(reply.status, 504, "{}", reply.text());
        assert_eq!(reply.error_code(), "agent_timeout");
        assert_eq!(reply.header("x-should-retry"), Some("true"));
        // Not at once: at the idle timeout (the clock has millisecond resolution).
        assert!(started.elapsed() >= Duration::from_millis(250));
    }
    let groups: HashSet<u32> = scratch.runs().iter().map(|r| r.pid).collect();
    assert_eq!(groups.len(), 2);
    assert_groups_gone(&groups, Duration::from_secs(5), "after the idle timeout");
    proxy.wait_idle();
}

fn slow_head_is_dropped(kind: Kind) {
    let scratch = Scratch::new("slow-head");
    let agent = scratch.agent(&["--hang"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--header-timeout-ms", "300"]);
    let mut conn = proxy.connect();
    conn.send(b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-le");
    assert!(
        conn.closed_within(Duration::from_secs(10)),
        "the slow client was dropped"
    );
    // Others are served meanwhile and after.
    assert_eq!(proxy.health()["status"], "ok");
    assert!(scratch.runs().is_empty());
}

fn body_over_the_limit_gets_413(kind: Kind) {
    let scratch = Scratch::new("too-large");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-body-bytes", "1024"]);
    let big = plain_body(&"x".repeat(4096));
    // Declared too large: refused without reading it.
    let mut conn = proxy.connect();
    let request = raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        big.as_bytes(),
    );
    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    conn.send(&request[..head_end]);
    let reply = conn.reply();
    assert_eq!(reply.status, 413);
    assert_eq!(reply.error_code(), "request_too_large");
    // Chunked, with no length to go by.
    let mut conn = proxy.connect();
    let mut chunked = CHUNKED_HEAD.to_vec();
    for piece in big.as_bytes().chunks(500) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    conn.send(&chunked);
    let reply = conn.reply();
    assert_eq!(reply.status, 413);
    // A chunk declared over the limit: refused on its size line, without waiting for
    // the bytes (the connection stays open meanwhile).
    let mut conn = proxy.connect();
    conn.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.send(&[CHUNKED_HEAD, b"100000\r\n{\"model\""].concat());
    let reply = conn.reply();
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert_eq!(reply.error_code(), "request_too_large");
    // Under the limit, chunked: served.
    let small = plain_body("hi");
    let mut conn = proxy.connect();
    conn.send(
        format!(
            "{}{:x}\r\n{small}\r\n0\r\n\r\n",
            String::from_utf8_lossy(CHUNKED_HEAD),
            small.len()
        )
        .as_bytes(),
    );
    assert_eq!(conn.reply().status, 200);
    assert_eq!(
        scratch.runs().len(),
        1,
        "only the request within the limit ran"
    );
}

fn malformed_requests_leave_it_healthy(kind: Kind) {
    let scratch = Scratch::new("malformed");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--header-timeout-ms", "2000"]);
    let json = |body: &[u8]| {
        raw(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body,
        )
    };
    let cases: Vec<Vec<u8>> = vec![
        b"\x00\x01\x02\x03\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 7\r\n\r\nhello".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nbad header\r\n\r\n".to_vec(),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        [b"GET /".as_slice(), &vec![b'a'; 70_000], b" HTTP/1.1\r\n\r\n"].concat(),
        json(b"{"),
        json(b"[]"),
        json(b"null"),
        json(b"{\"model\":\"auto\",\"messages\":\"hi\"}"),
        json(b"{\"model\":\"\xff\xfe\",\"messages\":[]}"),
        json(b"{\"model\":\"--force\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}"),
        json("{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}".as_bytes()),
        json(&[b'{'; 5000]),
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..1000 {
        let request = if i < cases.len() * 10 {
            cases[i % cases.len()].clone()
        } else {
            // Random bytes, sometimes after a valid request line.
            let len = 1 + (x % 300) as usize;
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if i % 2 == 0 {
                bytes.splice(
                    0..0,
                    b"POST /v1/chat/completions HTTP/1.1\r\n".iter().copied(),
                );
            }
            bytes.extend_from_slice(b"\r\n\r\n");
            bytes
        };
        let mut conn = proxy.connect();
        let _ = conn.stream.write_all(&request);
        let _ = conn.stream.shutdown(Shutdown::Write);
        // Whatever the answer (a 4xx, or a closed connection), it comes promptly.
        assert!(
            conn.closed_within(Duration::from_secs(10)),
            "request {i} left hanging"
        );
        if conn.buf.starts_with(b"HTTP/1.1 2") {
            panic!(
                "request {i} was accepted: {:?}",
                String::from_utf8_lossy(&request)
            );
        }
    }
    proxy.wait_idle();
    let reply = proxy.chat(&stream_body("hi"));
    assert_eq!(reply.status, 200);
    // The answer can reach the client before its agent is reaped; the slot is freed after.
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

fn api_key_is_required(kind: Kind) {
    let scratch = Scratch::new("auth");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--api-key", "sk-test"]);
    for headers in [
        vec![],
        vec![("authorization", "Bearer sk-wrong")],
        vec![("authorization", "Bearer sk-tes")],
        vec![("authorization", "sk-test")],
    ] {
        for path in [
            "/v1/chat/completions",
            "/v1/models",
            "/health",
            "/v1/unknown",
        ] {
            let reply = proxy.request("POST", path, &headers, plain_body("hi").as_bytes());
            assert_eq!(reply.status, 401, "{path} {headers:?}");
            assert_eq!(reply.error_code(), "invalid_api_key");
        }
    }
    assert!(scratch.runs().is_empty());
    // Preflights carry no credentials.
    assert_eq!(
        proxy
            .request("OPTIONS", "/v1/chat/completions", &[], b"")
            .status,
        204
    );
    // `/health` tells a caller without the key that the server is up, and nothing more.
    for headers in [vec![], vec![("authorization", "Bearer sk-wrong")]] {
        let reply = proxy.request("GET", "/health", &headers, b"");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json(), serde_json::json!({"status": "ok"}));
    }
    let reply = proxy.request(
        "GET",
        "/health",
        &[("authorization", "Bearer sk-test")],
        b"",
    );
    assert_eq!(reply.json()["in_flight"], 0);
    let auth = [
        ("authorization", "Bearer sk-test"),
        ("content-type", "application/json"),
    ];
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &auth,
        plain_body("hi").as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
}

fn excess_requests_get_429(kind: Kind) {
    let scratch = Scratch::new("busy");
    let agent = scratch.agent(&["--hang"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-concurrent", "1"]);
    let mut first = proxy.connect();
    first.post_chat(&stream_body("hi"));
    assert!(wait_until(Duration::from_secs(10), || scratch.runs().len() == 1));
    assert_eq!(proxy.in_flight(), 1);
    let reply = proxy.chat(&stream_body("hi"));
    assert_eq!(reply.status, 429);
    assert_eq!(reply.error_code(), "rate_limit_exceeded");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(reply.header("x-should-retry"), Some("true"));
    drop(first);
    proxy.wait_idle();
    assert_eq!(scratch.runs().len(), 1);
}

/// A stand-in whose `models` counts its calls, fails while `fail` exists, and (made with
/// `hold`) answers only once `release` exists.
struct ModelsAgent {
    path: PathBuf,
    count: PathBuf,
    fail: PathBuf,
    release: PathBuf,
}

impl ModelsAgent {
    fn new(scratch: &Scratch, hold: bool) -> ModelsAgent {
        let listing = format!("{ROOT}/tests/fixtures/models/coloured.txt");
        let (count, fail, release) = (
            scratch.path("count"),
            scratch.path("fail"),
            scratch.path("release"),
        );
        let wait = if hold {
            format!(
                "while [ ! -e '{}' ]; do sleep 0.01; done; ",
                release.display()
            )
        } else {
            String::new()
        };
        let path = scratch.script(
            "agent.sh",
            &format!(
                "#!/bin/sh\ncase \"$1\" in\n--version) echo 2026.01.01-test ;;\nmodels) echo x >> '{}'; {wait}[ -e '{}' ] && exit 3; cat '{listing}' ;;\n*) exit 1 ;;\nesac\n",
                count.display(),
                fail.display()
            ),
        );
        ModelsAgent {
            path,
            count,
            fail,
            release,
        }
    }

    fn calls(&self) -> usize {
        std::fs::read_to_string(&self.count)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

fn models_are_listed_cached_and_served_stale(kind: Kind) {
    let scratch = Scratch::new("models");
    let models = ModelsAgent::new(&scratch, false);
    let (agent, fail) = (&models.path, &models.fail);
    let calls = || models.calls();
    let ids = |reply: &Reply| -> Vec<String> {
        reply.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let expected = ["auto", "gpt-5", "sonnet-4.5-thinking", "grok"];
    // Cached for the TTL: two requests, one listing.
    let proxy = Proxy::start(kind, agent, &scratch, &[]);
    assert_eq!(proxy.health()["agent"]["version"], "2026.01.01-test");
    for _ in 0..2 {
        let reply = proxy.request("GET", "/v1/models", &[], b"");
        assert_eq!(reply.status, 200);
        assert_eq!(ids(&reply), expected);
        assert_eq!(reply.json()["object"], "list");
    }
    assert_eq!(calls(), 1);
    drop(proxy);
    // TTL 0: every request lists again; when the CLI fails, the last list is served.
    let proxy = Proxy::start(kind, agent, &scratch, &["--models-ttl-secs", "0"]);
    assert_eq!(ids(&proxy.request("GET", "/v1/models", &[], b"")), expected);
    std::fs::write(fail, "").unwrap();
    let reply = proxy.request("GET", "/v1/models", &[], b"");
    assert_eq!(reply.status, 200);
    assert_eq!(ids(&reply), expected, "stale list");
    assert_eq!(calls(), 3);
    drop(proxy);
    // Failing with nothing cached: an OpenAI-shaped 503.
    let proxy = Proxy::start(kind, agent, &scratch, &[]);
    let reply = proxy.request("GET", "/v1/models", &[], b"");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.error_code(), "models_unavailable");
}

fn shutdown_ends_streams_in_band(kind: Kind) {
    let scratch = Scratch::new("shutdown");
    let agent = scratch.agent(&[
        "--transcript",
        &transcript("partial_recaps.jsonl"),
        "--delay-ms",
        "30",
        "--spawn-child",
        "--hang",
    ]);
    let mut proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut conn = proxy.open_stream();
    let body = conn.chunk().expect("a first frame");
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    assert_shutdown_in_band(&mut conn, body);
    let groups: HashSet<u32> = scratch.runs().iter().map(|r| r.pid).collect();
    assert_groups_gone(&groups, Duration::from_secs(1), "after shutdown");
}

/// The rest of a stream cut by shutdown: one in-band error, the bridge's own shutdown
/// failure (retryable, not a crash of the agent), then `[DONE]`.
fn assert_shutdown_in_band(conn: &mut Conn, mut body: Vec<u8>) {
    while let Some(chunk) = conn.chunk() {
        body.extend(chunk);
    }
    let summary = check_stream(&body);
    let text = String::from_utf8_lossy(&body);
    assert_eq!(summary.errors.len(), 1, "{text}");
    assert_eq!(summary.done, 1);
    assert_eq!(
        summary.errors[0]["code"], "agent_unavailable",
        "{:?}",
        summary.errors
    );
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

// ---------------------------------------------------------------------------------------
// What a web page, a slow client or a careless agent must not be able to do.

/// The issue's repro and its relatives: a page's cross-origin request, a DNS-rebinding
/// page's request (its own name in `Host`), and bodies a page can send without a
/// preflight. None may run the agent.
fn web_pages_cannot_drive_the_agent(kind: Kind) {
    let scratch = Scratch::new("web-pages");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let body = plain_body("hi");
    let chat = |host: Option<&str>, headers: &[(&str, &str)]| {
        let mut conn = proxy.connect();
        conn.send(&raw_to(
            host,
            "POST",
            "/v1/chat/completions",
            headers,
            body.as_bytes(),
        ));
        conn.reply()
    };
    let evil = ("origin", "http://evil.example");
    for content_type in ["text/plain", "application/json"] {
        let reply = chat(Some("localhost"), &[evil, ("content-type", content_type)]);
        assert_eq!(reply.status, 403, "{content_type}: {}", reply.text());
        assert_eq!(reply.error_code(), "origin_not_allowed");
        assert_eq!(reply.header("access-control-allow-origin"), None);
    }
    let preflight = proxy.request(
        "OPTIONS",
        "/v1/chat/completions",
        &[evil, ("access-control-request-method", "POST")],
        b"",
    );
    assert_eq!(preflight.status, 403);
    assert_eq!(preflight.header("access-control-allow-origin"), None);
    // Without an Origin, bodies a form or `sendBeacon` can send are refused too.
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let headers: Vec<_> = content_type
            .map(|t| ("content-type", t))
            .into_iter()
            .collect();
        let reply = chat(Some("localhost"), &headers);
        assert_eq!(reply.status, 415, "{content_type:?}");
        assert_eq!(reply.error_code(), "unsupported_media_type");
    }
    // DNS rebinding: the page's own name arrives as the Host.
    let json = [("content-type", "application/json")];
    for host in [
        "evil.example",
        "evil.example:32124",
        "127.0.0.1.evil.example",
    ] {
        let reply = chat(Some(host), &json);
        assert_eq!(reply.status, 400, "{host}");
        assert_eq!(reply.error_code(), "invalid_host");
    }
    let mut conn = proxy.connect();
    conn.send(&raw_to(
        None,
        "POST",
        "http://evil.example/v1/chat/completions",
        &json,
        body.as_bytes(),
    ));
    assert_eq!(
        conn.reply().status,
        400,
        "an absolute-form target names the host"
    );
    // HTTP/1.1 needs exactly one Host.
    assert_eq!(chat(None, &json).status, 400);
    assert_eq!(
        chat(Some("localhost"), &[json[0], ("host", "localhost")]).status,
        400
    );
    assert!(scratch.runs().is_empty(), "no agent ran");
    // What a local client names the server by is fine.
    let port = proxy.addr.port().to_string();
    for host in [
        "localhost",
        "127.0.0.1",
        "[::1]",
        "app.localhost",
        "192.168.1.20",
    ] {
        let mut conn = proxy.connect();
        let host = format!("{host}:{port}");
        conn.send(&raw_to(Some(&host), "GET", "/health", &[], b""));
        assert_eq!(conn.reply().status, 200, "{host}");
    }
    assert_eq!(chat(Some("localhost"), &json).status, 200);
    proxy.wait_idle();
}

/// `--cors-origin` lets one page in on purpose; `--allowed-host` names a host.
fn allowed_origins_get_cors(kind: Kind) {
    let scratch = Scratch::new("cors");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &[
            "--api-key",
            "sk-test",
            "--cors-origin",
            "http://localhost:3000",
            "--allowed-host",
            "proxy.test",
        ],
    );
    let origin = ("origin", "http://localhost:3000");
    let key = ("authorization", "Bearer sk-test");
    let json = ("content-type", "application/json");
    let reply = proxy.request(
        "OPTIONS",
        "/v1/chat/completions",
        &[
            origin,
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization, content-type, x-stainless-os",
            ),
        ],
        b"",
    );
    assert_eq!(reply.status, 204);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    assert_eq!(reply.header("vary"), Some("origin"));
    assert!(
        reply
            .header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert!(
        reply
            .header("access-control-allow-headers")
            .unwrap()
            .contains("x-stainless-os")
    );
    let body = plain_body("hi");
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &[origin, key, json],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    // The page can read why it was refused.
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &[origin, json],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    let other = ("origin", "http://localhost:3001");
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &[other, key, json],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 403);
    let mut conn = proxy.connect();
    conn.send(&raw_to(
        Some("PROXY.test:8080"),
        "GET",
        "/health",
        &[key],
        b"",
    ));
    assert_eq!(conn.reply().json()["status"], "ok");
    assert_eq!(scratch.runs().len(), 1);
}

/// A large transcript of text deltas, written as fast as the pipe takes it.
fn large_transcript(scratch: &Scratch, mib: usize) -> String {
    let text = "x".repeat(4000);
    let mut out = String::new();
    for i in 0..mib * 1024 * 1024 / 4100 {
        out.push_str(&format!(
            "{{\"type\":\"assistant\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}},\"session_id\":\"s\",\"timestamp_ms\":{}}}\n",
            1_790_000_000_000u64 + i as u64
        ));
    }
    let path = scratch.path("large.jsonl");
    std::fs::write(&path, out).unwrap();
    path.display().to_string()
}

/// A streaming client that reads the head and then nothing: the agent is paused, and
/// still stopped (its slot freed) by `--max-duration-ms`, or by `--write-timeout-ms` when
/// there is no total limit.
fn a_client_that_stops_reading_is_let_go(kind: Kind) {
    let scratch = Scratch::new("stops-reading");
    let large = large_transcript(&scratch, 16);
    let agent = scratch.agent(&["--transcript", &large, "--delay-ms", "0"]);
    let grace = Duration::from_millis(300);
    let limits = [
        ("--max-duration-ms", Duration::from_millis(1500)),
        ("--write-timeout-ms", Duration::from_millis(1000)),
    ];
    for (i, (flag, limit)) in limits.into_iter().enumerate() {
        let proxy = Proxy::start(
            kind,
            &agent,
            &scratch,
            &[
                "--max-concurrent",
                "1",
                "--kill-grace-ms",
                &grace.as_millis().to_string(),
                flag,
                &limit.as_millis().to_string(),
            ],
        );
        let mut conn = Conn::open_small_window(proxy.addr);
        let started = Instant::now();
        conn.post_chat(&stream_body("hi"));
        assert_eq!(conn.head().0, 200);
        assert!(wait_until(Duration::from_secs(10), || scratch.runs().len() > i));
        let groups = HashSet::from([scratch.runs()[i].pid]);
        // The agent and its slot are let go in time (a loaded machine's scheduling aside),
        // the client still connected.
        let bound = limit + grace + Duration::from_secs(10);
        assert_groups_gone(&groups, bound.saturating_sub(started.elapsed()), flag);
        assert!(
            wait_until(bound.saturating_sub(started.elapsed()), || proxy
                .in_flight()
                == 0),
            "{flag}: the slot is still taken"
        );
        // The next request is served, not told 429.
        let mut next = proxy.connect();
        next.post_chat(&stream_body("hi"));
        assert_eq!(next.head().0, 200, "{flag}");
        drop((conn, next));
        proxy.wait_idle();
    }
}

/// The head of a chat request whose body, of `length` bytes, is still to come.
fn upload_head(length: usize) -> Vec<u8> {
    let mut head = raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        b"",
    );
    let declared = format!("content-length: {length}\r\n\r\n");
    let end = head.len() - "content-length: 0\r\n\r\n".len();
    head.truncate(end);
    head.extend_from_slice(declared.as_bytes());
    head
}

/// An agent that always has output ready (it writes as fast as the pipe takes it) is
/// still stopped at `--max-duration-ms`, mid-stream, with the timeout in-band.
fn max_duration_ends_a_busy_stream(kind: Kind) {
    let scratch = Scratch::new("busy-stream");
    let large = large_transcript(&scratch, 64);
    let agent = scratch.agent(&["--transcript", &large, "--delay-ms", "0"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-duration-ms", "300"]);
    let reply = proxy.chat(&stream_body("hi"));
    assert_eq!(reply.status, 200);
    let summary = check_stream(&reply.body);
    assert_eq!(summary.errors.len(), 1, "the stream ran to its end");
    assert_eq!(summary.errors[0]["code"], "agent_timeout");
    assert_eq!(summary.done, 1);
    proxy.wait_idle();
}

/// The whole request, head and body, within `--request-timeout-ms` of its first byte —
/// however the bytes trickle in.
fn request_bodies_have_a_deadline(kind: Kind) {
    let scratch = Scratch::new("request-timeout");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let timeout = Duration::from_millis(1000);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--request-timeout-ms", "1000"]);
    let head = upload_head(100_000);
    for trickle in [false, true] {
        let mut conn = proxy.connect();
        let started = Instant::now();
        conn.send(&head);
        conn.send(b"{\"model\":");
        // One byte every 50 ms: never a long silence, yet the request never completes.
        let mut writer = conn.stream.try_clone().unwrap();
        let trickler = trickle.then(|| {
            std::thread::spawn(move || {
                while writer.write_all(b" ").is_ok() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        });
        let reply = conn.reply();
        assert_eq!(reply.status, 408, "trickle {trickle}: {}", reply.text());
        assert_eq!(reply.error_code(), "request_timeout");
        assert!(started.elapsed() >= timeout - Duration::from_millis(50));
        let _ = conn.stream.shutdown(Shutdown::Both);
        if let Some(trickler) = trickler {
            trickler.join().unwrap();
        }
    }
    assert!(scratch.runs().is_empty());
}

/// Past `--max-connections`, new connections are refused at once (503), `/health` is
/// still answered; and under a descriptor limit the cap is lowered to fit, so uploads
/// that never finish do not lock everyone out.
fn connections_beyond_the_cap(kind: Kind) {
    let scratch = Scratch::new("max-connections");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let held = |proxy: &Proxy, n: usize| -> Vec<Conn> {
        let head = upload_head(1000);
        (0..n)
            .map(|_| {
                let mut conn = proxy.connect();
                conn.send(&head);
                conn
            })
            .collect()
    };
    let health_answers = |proxy: &Proxy| {
        let Ok(stream) = TcpStream::connect(proxy.addr) else {
            return false;
        };
        let mut conn = Conn::from(stream);
        if conn
            .stream
            .write_all(&raw("GET", "/health", &[], b""))
            .is_err()
        {
            return false;
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.reply().status))
            .is_ok_and(|status| status == 200)
    };
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &["--max-connections", "2", "--request-timeout-ms", "30000"],
    );
    let uploads = held(&proxy, 2);
    // Wait until both are being read (a request that gets through is answered 200).
    assert!(wait_until(Duration::from_secs(10), || {
        let reply = proxy.chat(&plain_body("hi"));
        reply.status == 503
    }));
    let reply = proxy.chat(&plain_body("hi"));
    assert_eq!(reply.status, 503);
    assert_eq!(reply.error_code(), "too_many_connections");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert!(health_answers(&proxy));
    drop(uploads);
    assert!(wait_until(Duration::from_secs(10), || proxy
        .chat(&plain_body("hi"))
        .status
        == 200));
    assert!(scratch.runs().len() == 1);
    proxy.wait_idle();
    drop(proxy);

    // 150 uploads that never end, under a limit of 128 descriptors.
    let proxy = Proxy::launch(
        kind,
        &[
            "--agent-bin".to_owned(),
            agent.display().to_string(),
            "--max-concurrent".to_owned(),
            "2".to_owned(),
            "--request-timeout-ms".to_owned(),
            "30000".to_owned(),
        ],
        &scratch,
        &[],
        Some(128),
    );
    let uploads = held(&proxy, 150);
    assert!(
        wait_until(Duration::from_secs(10), || health_answers(&proxy)),
        "/health unanswerable"
    );
    drop(uploads);
    assert!(wait_until(Duration::from_secs(10), || proxy
        .chat(&plain_body("hi"))
        .status
        == 200));
    proxy.wait_idle();
}

/// `/v1/models` starts at most one listing at a time; a failed one is remembered briefly.
fn models_are_listed_one_at_a_time(kind: Kind) {
    let scratch = Scratch::new("models-single-flight");
    let models = ModelsAgent::new(&scratch, true);
    let (agent, fail, release) = (&models.path, &models.fail, &models.release);
    let calls = || models.calls();
    let proxy = Proxy::start(kind, agent, &scratch, &["--max-concurrent", "1"]);
    let mut conns: Vec<Conn> = (0..20)
        .map(|_| {
            let mut conn = proxy.connect();
            conn.send(&raw("GET", "/v1/models", &[], b""));
            conn
        })
        .collect();
    assert!(wait_until(Duration::from_secs(10), || calls() >= 1));
    std::fs::write(release, "").unwrap();
    for conn in &mut conns {
        let reply = conn.reply();
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["data"][0]["id"], "auto");
    }
    assert_eq!(calls(), 1, "twenty requests, one listing");
    drop(proxy);
    // A failing CLI with nothing cached: 503, and the failure is remembered.
    std::fs::write(fail, "").unwrap();
    let proxy = Proxy::start(kind, agent, &scratch, &[]);
    for _ in 0..3 {
        let reply = proxy.request("GET", "/v1/models", &[], b"");
        assert_eq!(reply.status, 503);
        assert_eq!(reply.error_code(), "models_unavailable");
    }
    assert_eq!(calls(), 2, "one more listing for three requests");
}

/// The proxy's API key, from its environment, does not reach the agent's (nor does any
/// variable holding it).
fn the_agent_gets_none_of_the_proxys_secrets(kind: Kind) {
    // The per-request agent, and the warm ACP agent.
    let stand_ins = [
        (
            example("replay_agent"),
            format!("--transcript '{}'", transcript("no_usage.jsonl")),
            None,
        ),
        (
            example("acp_agent"),
            format!("--recording '{}'", two_prompts()),
            Some("acp"),
        ),
    ];
    for (stand_in, flags, protocol) in stand_ins {
        let scratch = Scratch::new("env");
        let env = scratch.path("env.txt");
        let agent = scratch.script(
            "agent.sh",
            &format!(
                "#!/bin/sh\nenv > '{}'\nexec '{}' {flags} \"$@\"\n",
                env.display(),
                stand_in.display(),
            ),
        );
        let secret = "sk-env-secret-7f3a";
        let mut args = vec!["--agent-bin".to_owned(), agent.display().to_string()];
        if let Some(protocol) = protocol {
            args.extend(["--agent-protocol".to_owned(), protocol.to_owned()]);
        }
        let proxy = Proxy::launch(
            kind,
            &args,
            &scratch,
            &[
                ("AGENTWIRE_API_KEY", secret),
                ("COPY_OF_THE_KEY", secret),
                ("PROXY_TEST_MARKER", "passed-on"),
            ],
            None,
        );
        let bearer = format!("Bearer {secret}");
        let reply = proxy.request(
            "POST",
            "/v1/chat/completions",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            plain_body("Ask alpha: print your environment").as_bytes(),
        );
        assert_eq!(reply.status, 200, "{protocol:?}: {}", reply.text());
        let seen = std::fs::read_to_string(&env).unwrap();
        assert!(seen.contains("PROXY_TEST_MARKER=passed-on"), "{seen}");
        assert!(!seen.contains(secret), "{protocol:?}: {seen}");
        assert!(!seen.contains("AGENTWIRE_API_KEY"), "{protocol:?}: {seen}");
    }
}

/// An agent that first starts `sleep 60` in a session of its own, holding its stdout and
/// stderr, and appends its pid to the file returned; then fails without a word (exit
/// code 3), so its run's end depends on its exit.
fn escaping_agent(scratch: &Scratch) -> (PathBuf, PathBuf) {
    let pids = scratch.path("escaped.pids");
    let empty = scratch.path("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.display().to_string();
    let flags = ["--transcript", &empty, "--exit", "3"];
    let quoted: Vec<String> = flags.iter().map(|f| format!("'{f}'")).collect();
    let script = format!(
        "#!/bin/sh\n\
         if [ \"$1\" != --version ]; then\n\
         \tsetsid sleep 60 &\n\
         \t# Out of the group before the agent can exit (and its group be killed).\n\
         \tuntil [ \"$(cut -d' ' -f6 /proc/$!/stat)\" = \"$!\" ]; do :; done\n\
         \techo $! >> '{}'\n\
         fi\n\
         exec '{}' {} \"$@\"\n",
        pids.display(),
        example("replay_agent").display(),
        quoted.join(" ")
    );
    (scratch.script("agent.sh", &script), pids)
}

/// The pids listed in `file`, one a line.
fn pids_in(file: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines().map(|l| l.parse().unwrap()).collect()
}

/// The agent's own failure, with the exit code its waiter got.
fn assert_failed_with_exit_3(reply: &Reply) {
    let message = reply.json()["error"]["message"].to_string();
    assert!(
        message.contains("exit code 3"),
        "{}: {message}",
        reply.status
    );
}

/// An agent whose descendant left its process group (`setsid`) keeping stdout open: the
/// response still ends when the agent does, not at the idle timeout. (An answer that
/// ends with a `result` line ends the response by itself; a run that fails without one
/// needs the agent's exit.)
fn escaped_descendants_do_not_hold_the_response(kind: Kind) {
    let scratch = Scratch::new("escaped");
    let (agent, pids) = escaping_agent(&scratch);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    for body in [plain_body("hi"), stream_body("hi")] {
        let reply = proxy.chat(&body);
        assert_failed_with_exit_3(&reply);
    }
    proxy.wait_idle();
    let escaped = pids_in(&pids);
    assert_eq!(escaped.len(), 2);
    for pid in escaped {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(zombies_of(proxy.child.id()).is_empty());
}

/// With `--reap-orphans` (on by itself as PID 1) the proxy adopts what its agents leave
/// behind and reaps it when it exits; its own agents' statuses stay their waiters'.
fn orphans_are_reaped(kind: Kind) {
    let scratch = Scratch::new("orphans");
    let (agent, pids) = escaping_agent(&scratch);
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &["--reap-orphans", "--max-concurrent", "8"],
    );
    let ppid = |pid: u32| {
        processes()
            .into_iter()
            .find(|(p, ..)| *p == pid)
            .map(|(_, _, ppid, _)| ppid)
    };
    // The agents' own exit statuses still reach their runs (the error names the code),
    // while orphans come and go around them.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..3 {
                    let reply = proxy.chat(&plain_body("hi"));
                    assert_failed_with_exit_3(&reply);
                }
            });
        }
    });
    proxy.wait_idle();
    let orphans = pids_in(&pids);
    assert_eq!(orphans.len(), 12);
    for &pid in &orphans {
        assert_eq!(ppid(pid), Some(proxy.child.id()), "adopted by the proxy");
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        wait_until(Duration::from_secs(10), || orphans
            .iter()
            .all(|&pid| ppid(pid).is_none())),
        "orphans left as zombies: {:?}",
        zombies_of(proxy.child.id())
    );
}

/// Request framing read strictly (RFC 9112 §6): what a front proxy could read otherwise
/// is refused, and the connection closed.
fn request_framing_is_strict(kind: Kind) {
    let scratch = Scratch::new("framing");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let body = plain_body("hi");
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let length = format!("content-length: {}\r\n", body.len());
    let cases: Vec<(String, String, u16)> = vec![
        (format!("content-length: 5\r\n{length}"), body.clone(), 400),
        (
            format!("content-length: +{}\r\n", body.len()),
            body.clone(),
            400,
        ),
        (
            "transfer-encoding: chunked, identity\r\n".into(),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n".into(),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: xchunked\r\n".into(),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: gzip, chunked\r\n".into(),
            chunked.clone(),
            501,
        ),
        (
            format!("transfer-encoding: chunked\r\n{length}"),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: chunked\r\n".into(),
            format!("{:x}\r\n{body}XX0\r\n\r\n", body.len()),
            400,
        ),
        (
            "transfer-encoding: chunked\r\n".into(),
            format!("{:x};a\nb\r\n{body}\r\n0\r\n\r\n", body.len()),
            400,
        ),
        (
            "transfer-encoding: chunked\r\n".into(),
            chunked.clone(),
            200,
        ),
        (length.clone(), body.clone(), 200),
    ];
    let mut served = 0;
    for (headers, body, status) in cases {
        let mut conn = proxy.connect();
        conn.send(
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n{headers}\r\n{body}"
            )
            .as_bytes(),
        );
        let reply = conn.reply();
        assert_eq!(
            reply.status,
            status,
            "{headers:?} {body:?}: {}",
            reply.text()
        );
        if status == 200 {
            served += 1;
        } else {
            assert!(
                conn.closed_within(Duration::from_secs(10)),
                "{headers:?}: still open"
            );
        }
    }
    // Transfer-Encoding in HTTP/1.0.
    let mut conn = proxy.connect();
    conn.send(
        format!(
            "POST /v1/chat/completions HTTP/1.0\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{chunked}"
        )
        .as_bytes(),
    );
    assert_eq!(conn.reply().status, 400);
    assert_eq!(scratch.runs().len(), served);
}

/// `Expect: 100-continue`, HTTP/1.0 clients and absolute-form targets.
fn http_1_details(kind: Kind) {
    let scratch = Scratch::new("http-1");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let body = stream_body("hi");
    // The client waits for the go-ahead before it sends the body.
    let mut conn = proxy.connect();
    conn.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = raw(
        "POST",
        "/v1/chat/completions",
        &[
            ("content-type", "application/json"),
            ("expect", "100-continue"),
        ],
        body.as_bytes(),
    );
    head.truncate(head.len() - body.len());
    conn.send(&head);
    assert_eq!(conn.head().0, 100);
    conn.send(body.as_bytes());
    let reply = conn.reply();
    assert_eq!(reply.status, 200);
    assert_eq!(check_stream(&reply.body).done, 1);
    // HTTP/1.0: no chunked coding; the stream ends with the connection.
    let mut conn = proxy.connect();
    conn.send(
        format!(
            "POST /v1/chat/completions HTTP/1.0\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let reply = conn.reply();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), None);
    let summary = check_stream(&reply.body);
    assert_eq!((summary.done, summary.content.as_str()), (1, "Hi there!"));
    // An absolute-form target is routed by its path.
    let reply = proxy.request(
        "POST",
        "http://localhost/v1/chat/completions",
        &[("content-type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(scratch.runs().len(), 3);
    proxy.wait_idle();
}

// ---------------------------------------------------------------------------------------
// The replay agent on its own.

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

// ---------------------------------------------------------------------------------------
// `--agent-protocol acp`: one warm agent (the `acp_agent` stand-in) for the server.

/// A proxy whose warm ACP agent is `acp_agent` playing `recording` with `flags`.
fn acp_proxy(kind: Kind, scratch: &Scratch, recording: &str, flags: &[&str]) -> Proxy {
    acp_proxy_with(kind, scratch, recording, flags, &[])
}

/// [`acp_proxy`] with `proxy_flags` for the proxy.
fn acp_proxy_with(
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

fn two_prompts() -> String {
    format!("{ROOT}/proxy/tests/fixtures/acp-two-prompts.jsonl")
}

/// The stand-in's log lines of `event`.
fn acp_events(scratch: &Scratch, event: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(scratch.log()).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|v| v["event"] == event)
        .collect()
}

fn acp_groups(scratch: &Scratch) -> HashSet<u32> {
    acp_events(scratch, "start")
        .iter()
        .map(|v| v["pid"].as_u64().unwrap() as u32)
        .collect()
}

/// A request whose prompt crashes the agent (the stand-in's `--once` crash): its
/// failure, once the agent was restarted.
fn acp_crash_and_restart(proxy: &Proxy, scratch: &Scratch) -> Reply {
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

fn chat_content(reply: &Reply) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let summary = check_stream(&reply.body);
    assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    assert_eq!(summary.finish_reasons, ["stop"]);
    summary.content
}

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
    let Some(fixtures) = support::shared::fixtures("the stand-in playing the ACP recordings")
    else {
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

/// The ids `/v1/models` lists.
fn model_ids(proxy: &Proxy) -> Vec<String> {
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

/// Every line of the stand-ins' log.
fn acp_events_all(scratch: &Scratch) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(scratch.log()).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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

/// An agent that offers `session/close` is told to close each session whose turn is
/// over, once.
fn acp_finished_sessions_are_closed_when_the_agent_offers_it(kind: Kind) {
    let scratch = Scratch::new("acp-close");
    let flags = ["--delay-ms", "1", "--session-close"];
    let proxy = acp_proxy(kind, &scratch, &two_prompts(), &flags);
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
