//! What the proxy tests share: the two proxies started on loopback ports with a stand-in
//! agent, scratch directories, and the [`both!`] macro that runs a case against both
//! proxies; the HTTP client with full control of the socket ([`client`]), the processes
//! read from `/proc` ([`processes`]), the warm ACP agent ([`acp`]) and the seed of the
//! randomised tests ([`seed`]).
//!
//! Nothing here sleeps to let things settle: waits are for an event (a process gone, a
//! counter at zero) with a deadline as a safety net.
#![allow(dead_code)]

pub mod acp;
pub mod client;
pub mod processes;
pub mod seed;
pub mod tool_loop;

/// The library's own test support: the chunk and Responses stream checkers, what a
/// transcript answers, the real captures.
#[path = "../../../tests/support/mod.rs"]
pub mod checks;
/// The Anthropic Messages checkers of the library's tests (not every test file uses them).
#[allow(unused_imports)]
pub use agentwire_testkit::messages;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use checks::check_stream;
use client::{Conn, Reply, raw};

/// Generates one test per proxy from `fn name(kind: Kind)`: `tokio_proxy::name` and
/// `blocking_proxy::name`. (Unused where a file has no case for the proxies.)
#[allow(unused_macros)]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod tokio_proxy {
            $(#[test] fn $name() { super::$name($crate::support::Kind::Tokio) })*
        }
        mod blocking_proxy {
            $(#[test] fn $name() { super::$name($crate::support::Kind::Blocking) })*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use both;

// ---------------------------------------------------------------------------------------
// Binaries, agents, proxies.

/// The repository root (this package is `proxy/` in it).
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// A binary of this package (cargo builds them before the tests).
pub fn example(name: &str) -> PathBuf {
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

/// Which of the two proxies a case runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tokio,
    Blocking,
}

impl Kind {
    pub fn binary(self) -> PathBuf {
        example(match self {
            Kind::Tokio => "tokio_proxy",
            Kind::Blocking => "blocking_proxy",
        })
    }

    /// The module of its tests (the `both!` macro's).
    pub fn module(self) -> &'static str {
        match self {
            Kind::Tokio => "tokio_proxy",
            Kind::Blocking => "blocking_proxy",
        }
    }
}

/// A scratch directory for one test, removed at the end.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("agentwire-proxy-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// An agent: a script running replay_agent with `flags` before cursor-agent's own.
    pub fn agent(&self, flags: &[&str]) -> PathBuf {
        let replay = example("replay_agent");
        let quoted: Vec<String> = flags.iter().map(|f| format!("'{f}'")).collect();
        let script = format!(
            "#!/bin/sh\nexec '{}' {} \"$@\"\n",
            replay.display(),
            quoted.join(" ")
        );
        self.script("agent.sh", &script)
    }

    pub fn script(&self, name: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    pub fn log(&self) -> PathBuf {
        self.path("replay.log")
    }

    /// The runs the agent logged: pid, child pid, argv, prompt, its size, chat id.
    pub fn runs(&self) -> Vec<AgentRun> {
        let Ok(text) = std::fs::read_to_string(self.log()) else {
            return Vec::new();
        };
        text.lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            // The other lines are events of a run (its MCP calls).
            .filter(|v| v.get("event").is_none())
            .map(|v| AgentRun {
                pid: v["pid"].as_u64().unwrap() as u32,
                child: v["child_pid"].as_u64().map(|p| p as u32),
                argv: v["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect(),
                prompt: v["prompt"].as_str().unwrap().to_owned(),
                stdin_bytes: v["stdin_bytes"].as_u64().unwrap() as usize,
                chat: v["chat_id"].as_str().map(str::to_owned),
            })
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run of the replay agent, as it logged it.
#[derive(Debug)]
pub struct AgentRun {
    pub pid: u32,
    pub child: Option<u32>,
    pub argv: Vec<String>,
    pub prompt: String,
    /// The prompt's size in bytes, as read from stdin.
    pub stdin_bytes: usize,
    /// The chat the run answered under (with `--chat-dir`, or a resumed one).
    pub chat: Option<String>,
}

impl AgentRun {
    /// The chat it was told to continue (`--resume`).
    pub fn resumed(&self) -> Option<&str> {
        let at = self.argv.iter().position(|a| a == "--resume")?;
        self.argv.get(at + 1).map(String::as_str)
    }
}

/// The path of a transcript of the library's fixtures (`tests/fixtures`).
pub fn transcript(name: &str) -> String {
    format!("{ROOT}/tests/fixtures/{name}")
}

/// A running proxy on a loopback port.
pub struct Proxy {
    pub child: Child,
    pub addr: SocketAddr,
    pub banner: String,
    pub kind: Kind,
}

impl Proxy {
    pub fn start(kind: Kind, agent: &Path, scratch: &Scratch, extra: &[&str]) -> Proxy {
        let mut args = vec!["--agent-bin".to_owned(), agent.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        Proxy::start_with(kind, &args, scratch)
    }

    pub fn start_with(kind: Kind, args: &[String], scratch: &Scratch) -> Proxy {
        Proxy::launch(kind, args, scratch, &[], None)
    }

    /// Starts a proxy with `env` added to its environment and, with `nofile`, that
    /// descriptor limit.
    pub fn launch(
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

    pub fn connect(&self) -> Conn {
        Conn::open(self.addr)
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut conn = self.connect();
        conn.send(&raw(method, path, headers, body));
        conn.reply()
    }

    /// A streaming request whose 200 head has arrived.
    pub fn open_stream(&self) -> Conn {
        let mut conn = self.connect();
        conn.post_chat(&stream_body("hi"));
        let (status, _) = conn.head();
        assert_eq!(status, 200);
        conn
    }

    /// A JSON `body` posted to `path`.
    pub fn post_json(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &serde_json::Value,
    ) -> Reply {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.request("POST", path, &all, body.to_string().as_bytes())
    }

    pub fn chat(&self, body: &str) -> Reply {
        self.request(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
    }

    pub fn health(&self) -> serde_json::Value {
        let reply = self.request("GET", "/health", &[], b"");
        assert_eq!(reply.status, 200, "{:?}", reply.text());
        reply.json()
    }

    pub fn in_flight(&self) -> u64 {
        self.health()["in_flight"].as_u64().unwrap()
    }

    pub fn wait_idle(&self) {
        assert!(
            wait_until(Duration::from_secs(10), || self.in_flight() == 0),
            "{:?}: slots still taken: {}",
            self.kind,
            self.health()
        );
    }

    /// SIGTERM, then the exit within a bound.
    pub fn stop(&mut self) -> std::process::ExitStatus {
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

/// Sends signal `name` (`TERM`, `KILL`…) to `pid`.
pub fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Polls `done` until it holds or `limit` passes; whether it held.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
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

/// A streaming Chat Completions request asking `content`.
pub fn stream_body(content: &str) -> String {
    serde_json::json!({"model": "auto", "stream": true, "messages": [{"role": "user", "content": content}]})
        .to_string()
}

/// A non-streaming Chat Completions request asking `content`.
pub fn plain_body(content: &str) -> String {
    serde_json::json!({"model": "auto", "messages": [{"role": "user", "content": content}]})
        .to_string()
}

/// A large transcript of text deltas, written as fast as the pipe takes it.
pub fn large_transcript(scratch: &Scratch, mib: usize) -> String {
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

/// The rest of a stream cut by shutdown: one in-band error, the bridge's own shutdown
/// failure (retryable, not a crash of the agent), then `[DONE]`.
pub fn assert_shutdown_in_band(conn: &mut Conn, mut body: Vec<u8>) {
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
