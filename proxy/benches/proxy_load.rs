//! The load client of `benches/proxy.sh`: streaming chat completions against a running
//! proxy (`tokio_proxy` or `blocking_proxy`) over loopback, on `ureq`.
//!
//! ```text
//! proxy_load workloads  DIR                                  writes the transcripts below
//! proxy_load latency    URL KEY MODEL REQUESTS DIR REPLAY   one request at a time
//! proxy_load concurrent URL KEY MODEL STREAMS EXPECTED_TEXT  all streams at once
//! proxy_load throughput URL KEY MODEL INPUT_BYTES            one stream, as fast as it goes
//! proxy_load acp-latency URL KEY MODEL REQUESTS DIR ACP_AGENT DELAY_MS
//!                                                            one request at a time, warm ACP agent
//! proxy_load rate       URL KEY MODEL REQUESTS CLIENTS EXPECTED_TEXT
//!                                                            CLIENTS requests at a time, REQUESTS in all
//! ```
//!
//! `workloads` writes, into DIR: `latency.jsonl` (a short answer whose very first line is
//! text, so the agent's first byte is the first content), `paced.jsonl` (init, 100 text
//! deltas and the result: about a second at 10 ms per line) with its answer in
//! `paced.txt`, and `mix.jsonl`, 64 MiB of the event mix `benches/throughput.rs` measures
//! (tests/support/mix.rs: the real captures when ../shared is present), and the same two
//! answers as ACP recordings for the `acp_agent` stand-in: `acp-latency.jsonl` (the
//! latency answer's four pieces as `agent_message_chunk` updates, then `end_turn`) and
//! `acp-paced.jsonl` (the 100 words); `latency.txt` holds the short answer's text.
//!
//! `latency` sends `DIR/latency.jsonl`'s request REQUESTS times and pairs each with the line
//! the replay agent appended to `DIR/times.jsonl` (the proxy's agents run with
//! `AGENTWIRE_REPLAY_TIMES` pointing there; requests are sequential, so lines come in
//! request order). It reports p50/p99 of: the agent's first stdout byte → the first content
//! frame read by this client, and this client sending the request → the agent running.
//! Each is shown next to its floor, measured in the same run between the requests: this
//! client spawning the agent (REPLAY) itself and relaying its stdout through a loopback TCP
//! connection, with no HTTP, JSON or SSE work. Every timestamp is `CLOCK_REALTIME`, the one
//! clock all processes on the machine share.
//!
//! `latency` also reports this client sending the request → the first content frame.
//!
//! `acp-latency` does the same against a proxy serving a warm `acp_agent` (run with
//! `--recording DIR/acp-latency.jsonl` and `AGENTWIRE_REPLAY_TIMES=DIR/times.jsonl`,
//! where it stamps each prompt's first `agent_message_chunk` as it writes it): request
//! sent → first content frame, and the agent writing its first chunk → the first content
//! frame read here (the proxy's added latency), p50/p99/max. Its floor, measured between
//! the requests: a warm ACP_AGENT spawned by this client, its stdout relayed by a thread
//! into a loopback TCP connection, each run one `session/new` and one `session/prompt`
//! written to it, timed from the same stamp to the chunk's line coming out of the socket.
//! DELAY_MS is the `--delay-ms` both agents run with.
//!
//! `rate` keeps CLIENTS requests in flight until REQUESTS were answered, checks each like
//! `concurrent`, and reports requests (sessions) per second. Both it and `acp-latency`
//! first send requests until one is answered (a warm agent may still be starting).
//!
//! `concurrent` starts every stream together and checks each: status 200, the text
//! (concatenated `delta.content`) equal to EXPECTED_TEXT, exactly one `finish_reason:
//! "stop"`, no error frame, `data: [DONE]` last. It exits non-zero unless all pass.
//!
//! `throughput` reads one response to its end and reports INPUT_BYTES (the transcript's
//! size) per second of the whole exchange.
//!
//! Run through `cargo bench -p agentwire-proxy --bench proxy_load -- MODE …` (cargo appends `--bench`, which
//! is ignored); without a mode it only says how it is used, so a plain `cargo bench` passes.

#[path = "../../tests/support/mix.rs"]
mod mix;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: proxy_load workloads DIR\n       \
                     proxy_load latency URL KEY MODEL REQUESTS DIR REPLAY\n       \
                     proxy_load concurrent URL KEY MODEL STREAMS EXPECTED_TEXT\n       \
                     proxy_load throughput URL KEY MODEL INPUT_BYTES\n       \
                     proxy_load acp-latency URL KEY MODEL REQUESTS DIR ACP_AGENT DELAY_MS\n       \
                     proxy_load rate URL KEY MODEL REQUESTS CLIENTS EXPECTED_TEXT\n\
                     (benches/proxy.sh runs it against both proxies)";

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["workloads", dir] => workloads(Path::new(dir)),
        ["latency", url, key, model, requests, dir, replay] => latency(
            &Target::new(url, key, model),
            count(requests),
            Path::new(dir),
            replay,
        ),
        ["concurrent", url, key, model, streams, expected] => {
            concurrent(&Target::new(url, key, model), count(streams), expected)
        }
        ["acp-latency", url, key, model, requests, dir, agent, delay] => acp_latency(
            &Target::new(url, key, model),
            count(requests),
            Path::new(dir),
            agent,
            delay,
        ),
        ["rate", url, key, model, requests, clients, expected] => rate(
            &Target::new(url, key, model),
            count(requests),
            count(clients),
            expected,
        ),
        ["throughput", url, key, model, input] => {
            throughput(&Target::new(url, key, model), count(input) as u64)
        }
        [] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_owned()),
    };
    if let Err(message) = result {
        eprintln!("proxy_load: {message}");
        std::process::exit(1);
    }
}

/// The short answer of `latency.jsonl` and `acp-latency.jsonl`, piece by piece.
const PIECES: [&str; 4] = ["The", " answer", " is", " 42."];

const SESSION: &str = r#""session_id":"bench""#;

fn text_line(text: &str) -> String {
    let text = serde_json::to_string(text).expect("a string serialises");
    format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":{text}}}]}},{SESSION}}}"#
    ) + "\n"
}

fn result_line(result: &str) -> String {
    let result = serde_json::to_string(result).expect("a string serialises");
    format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"duration_ms":1000,"result":{result},{SESSION},"usage":{{"inputTokens":100,"outputTokens":20}}}}"#
    ) + "\n"
}

/// An ACP recording (the fixtures' `{"dir": …, "msg": …}` lines) whose agent answers a
/// prompt with `pieces`, each an `agent_message_chunk`, then `end_turn`.
fn acp_recording(pieces: &[&str]) -> String {
    let record = |dir: &str, msg: serde_json::Value| {
        serde_json::json!({"dir": dir, "msg": msg}).to_string() + "\n"
    };
    let (to_agent, from_agent) = ("client→agent", "agent→client");
    let session = "recorded";
    let mut lines = record(
        to_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    lines += &record(
        from_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}}),
    );
    lines += &record(
        to_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}),
    );
    lines += &record(
        from_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": session}}),
    );
    lines += &record(
        to_agent,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "Say the line."}]}}),
    );
    for piece in pieces {
        lines += &record(
            from_agent,
            serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}}}}),
        );
    }
    lines
        + &record(
            from_agent,
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
        )
}

fn workloads(dir: &Path) -> Result<(), String> {
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let pieces = PIECES;
    let mut latency: String = pieces.iter().map(|p| text_line(p)).collect();
    latency += &result_line(&pieces.concat());
    write("latency.jsonl", latency.as_bytes())?;

    let mut paced = format!(
        r#"{{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w",{SESSION},"model":"Auto","permissionMode":"default"}}"#
    ) + "\n";
    let words: Vec<String> = (0..100).map(|i| format!("word{i} ")).collect();
    paced.extend(words.iter().map(|w| text_line(w)));
    paced += &result_line(&words.concat());
    write("paced.jsonl", paced.as_bytes())?;
    write("paced.txt", words.concat().as_bytes())?;
    write("latency.txt", pieces.concat().as_bytes())?;
    write("acp-latency.jsonl", acp_recording(&pieces).as_bytes())?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    write("acp-paced.jsonl", acp_recording(&words).as_bytes())?;

    let (files, source) = mix::workload_transcripts();
    write("mix.jsonl", &mix::event_mix(&files, 64 << 20))?;
    println!("  workloads written (event mix from the {source})");
    Ok(())
}

fn count(text: &str) -> usize {
    text.parse().unwrap_or_else(|_| {
        eprintln!("proxy_load: not a count: {text}\n{USAGE}");
        std::process::exit(2)
    })
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as u64
}

/// Where requests go and what they ask for.
#[derive(Clone)]
struct Target {
    agent: ureq::Agent,
    url: String,
    authorization: String,
    body: String,
}

impl Target {
    fn new(url: &str, key: &str, model: &str) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .max_idle_connections(1024)
            .max_idle_connections_per_host(1024)
            .build();
        let body = serde_json::json!({
            "model": model,
            "stream": true,
            "messages": [{"role": "user", "content": "Say the line."}],
        });
        Target {
            agent: config.into(),
            url: format!("{url}/v1/chat/completions"),
            authorization: format!("Bearer {key}"),
            body: body.to_string(),
        }
    }

    /// Sends the request and returns the response body, after checking the status.
    fn send(&self) -> Result<ureq::BodyReader<'static>, String> {
        let response = self
            .agent
            .post(&self.url)
            .header("Authorization", &self.authorization)
            .content_type("application/json")
            .send(&self.body)
            .map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        let mut body = response.into_body().into_reader();
        if status != 200 {
            let mut text = String::new();
            let _ = body.read_to_string(&mut text);
            return Err(format!("status {status}: {text}"));
        }
        Ok(body)
    }
}

/// One SSE response, read frame by frame.
#[derive(Default)]
struct Stream {
    pending: Vec<u8>,
    text: String,
    finishes: Vec<String>,
    errors: Vec<String>,
    done: bool,
    after_done: bool,
    /// When the read that completed the first frame with content returned.
    first_content_ns: Option<u64>,
}

/// Reads `body` to its end in reads of up to `size` bytes, handing each to `each`.
fn each_read(
    mut body: impl Read,
    size: usize,
    mut each: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut buf = vec![0u8; size];
    loop {
        let n = body
            .read(&mut buf)
            .map_err(|e| format!("reading the stream: {e}"))?;
        if n == 0 {
            return Ok(());
        }
        each(&buf[..n])?;
    }
}

impl Stream {
    /// Reads the whole response.
    fn read_all(body: impl Read) -> Result<Stream, String> {
        let mut stream = Stream::default();
        each_read(body, 64 * 1024, |bytes| {
            let now = unix_ns();
            stream.pending.extend_from_slice(bytes);
            stream.take_frames(now)
        })?;
        if !stream.pending.is_empty() {
            return Err(format!(
                "{} bytes after the last frame",
                stream.pending.len()
            ));
        }
        Ok(stream)
    }

    fn take_frames(&mut self, now: u64) -> Result<(), String> {
        let mut start = 0;
        while let Some(end) = memchr::memmem::find(&self.pending[start..], b"\n\n") {
            let frame = std::str::from_utf8(&self.pending[start..start + end])
                .map_err(|e| format!("a frame is not UTF-8: {e}"))?
                .to_owned();
            start += end + 2;
            self.frame(&frame, now)?;
        }
        self.pending.drain(..start);
        Ok(())
    }

    fn frame(&mut self, frame: &str, now: u64) -> Result<(), String> {
        if frame.starts_with(':') {
            return Ok(()); // keep-alive comment
        }
        let data = frame
            .strip_prefix("data: ")
            .ok_or_else(|| format!("not an SSE data frame: {frame:?}"))?;
        if self.done {
            self.after_done = true;
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: serde_json::Value =
            serde_json::from_str(data).map_err(|e| format!("frame is not JSON: {e}"))?;
        if let Some(error) = chunk.get("error") {
            self.errors.push(error.to_string());
            return Ok(());
        }
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            if let Some(content) = choice["delta"]["content"]
                .as_str()
                .filter(|c| !c.is_empty())
            {
                self.first_content_ns.get_or_insert(now);
                self.text.push_str(content);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finishes.push(reason.to_owned());
            }
        }
        Ok(())
    }

    /// Why this stream is not a correct, complete answer of `expected`, if it is not.
    fn check(&self, expected: &str) -> Result<(), String> {
        if !self.errors.is_empty() {
            return Err(format!("error frames: {:?}", self.errors));
        }
        if !self.done || self.after_done {
            return Err("data: [DONE] is not the last frame".into());
        }
        if self.finishes != ["stop"] {
            return Err(format!("finish reasons {:?}", self.finishes));
        }
        if self.text != expected {
            return Err(format!("text {:?} is not {:?}", self.text, expected));
        }
        Ok(())
    }
}

/// p50 and p99 of `values` (nanoseconds), in milliseconds.
fn percentiles(values: Vec<u64>) -> (f64, f64) {
    let (p50, p99, _) = spread(values);
    (p50, p99)
}

/// p50, p99 and the maximum of `values` (nanoseconds), in milliseconds.
fn spread(mut values: Vec<u64>) -> (f64, f64, f64) {
    values.sort_unstable();
    let at = |q: f64| {
        let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
        values[rank - 1] as f64 / 1e6
    };
    (at(0.50), at(0.99), at(1.0))
}

/// `(started_unix_ns, first_line_unix_ns)` of each run the replay agent logged in `path`.
fn agent_times(path: &Path, expected_runs: usize) -> Result<Vec<(u64, u64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut runs = Vec::with_capacity(expected_runs);
    for line in text.lines() {
        let run: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()))?;
        let stamp = |key: &str| {
            run[key]
                .as_u64()
                .ok_or_else(|| format!("{}: no {key} in {run}", path.display()))
        };
        runs.push((stamp("started_unix_ns")?, stamp("first_line_unix_ns")?));
    }
    if runs.len() != expected_runs {
        return Err(format!(
            "{expected_runs} runs expected, {} logged in {}",
            runs.len(),
            path.display()
        ));
    }
    Ok(runs)
}

/// A child whose stdout a thread relays into a loopback TCP connection: the floors' two
/// wake-ups (pipe, then socket), as through a proxy.
struct Relayed {
    child: Child,
    /// The connection's reading end.
    reader: TcpStream,
    relay: JoinHandle<std::io::Result<u64>>,
    /// When the child was spawned.
    spawned: u64,
}

impl Relayed {
    fn spawn(listener: &TcpListener, command: &mut Command) -> Result<Relayed, String> {
        let io = |e: std::io::Error| format!("floor: {e}");
        let reader = TcpStream::connect(listener.local_addr().map_err(io)?).map_err(io)?;
        let (mut writer, _) = listener.accept().map_err(io)?;
        writer.set_nodelay(true).map_err(io)?;
        let spawned = unix_ns();
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", command.get_program().to_string_lossy()))?;
        let mut stdout = child.stdout.take().expect("piped");
        let relay = std::thread::spawn(move || std::io::copy(&mut stdout, &mut writer));
        Ok(Relayed {
            child,
            reader,
            relay,
            spawned,
        })
    }
}

/// The same-run floor of what the proxy path costs: this client spawns the replay agent
/// itself (no prompt), a relay thread copies its stdout into a loopback TCP connection, and
/// the first line is timed when it comes out of the other end. Two wake-ups, as through a
/// proxy, and no HTTP, JSON or SSE work. Returns when the agent was spawned and when its
/// first line arrived.
fn floor_run(
    listener: &TcpListener,
    replay: &str,
    transcript: &str,
    times: &Path,
) -> Result<(u64, u64), String> {
    let io = |e: std::io::Error| format!("floor run: {e}");
    let mut command = Command::new(replay);
    command
        .args(["--transcript", transcript])
        .env("AGENTWIRE_REPLAY_TIMES", times)
        .stdin(Stdio::null());
    let Relayed {
        mut child,
        mut reader,
        relay,
        spawned,
    } = Relayed::spawn(listener, &mut command)?;
    let mut buf = [0u8; 4096];
    let mut first_line = None;
    loop {
        let n = reader.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        if first_line.is_none() && buf[..n].contains(&b'\n') {
            first_line = Some(unix_ns());
        }
    }
    relay.join().expect("relay thread").map_err(io)?;
    child.wait().map_err(io)?;
    Ok((spawned, first_line.ok_or("floor run: no line arrived")?))
}

/// `to[i] - from[i]` for each pair.
fn between(from: &[u64], to: &[u64]) -> Vec<u64> {
    from.iter()
        .zip(to)
        .map(|(a, b)| b.saturating_sub(*a))
        .collect()
}

fn latency(target: &Target, requests: usize, dir: &Path, replay: &str) -> Result<(), String> {
    let proxy_times = dir.join("times.jsonl");
    let floor_times = dir.join("floor-times.jsonl");
    let transcript = dir.join("latency.jsonl");
    let transcript = transcript.to_str().ok_or("a UTF-8 path")?;
    let _ = std::fs::remove_file(&proxy_times);
    let _ = std::fs::remove_file(&floor_times);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let (mut sent, mut first_content) = (Vec::new(), Vec::new());
    let (mut floor_spawned, mut floor_first_line) = (Vec::new(), Vec::new());
    // Proxy requests and floor runs alternate, so both meet the same machine load.
    for i in 0..requests {
        let at = unix_ns();
        let stream = Stream::read_all(target.send()?)?;
        let first = stream
            .first_content_ns
            .ok_or_else(|| format!("request {i}: no content frame"))?;
        sent.push(at);
        first_content.push(first);
        let (spawned, arrived) = floor_run(&listener, replay, transcript, &floor_times)?;
        floor_spawned.push(spawned);
        floor_first_line.push(arrived);
    }
    let runs = agent_times(&proxy_times, requests)?;
    let floor = agent_times(&floor_times, requests)?;
    let started: Vec<u64> = runs.iter().map(|r| r.0).collect();
    let first_line: Vec<u64> = runs.iter().map(|r| r.1).collect();
    let floor_started: Vec<u64> = floor.iter().map(|r| r.0).collect();
    let floor_line: Vec<u64> = floor.iter().map(|r| r.1).collect();
    let (o50, o99) = percentiles(between(&first_line, &first_content));
    let (f50, f99) = percentiles(between(&floor_line, &floor_first_line));
    let (s50, s99) = percentiles(between(&sent, &started));
    let (r50, r99) = percentiles(between(&sent, &first_content));
    let (g50, g99) = percentiles(between(&floor_spawned, &floor_started));
    println!(
        "  {requests} sequential streaming requests, all answered; as many floor runs between them"
    );
    println!(
        "  agent's first stdout byte -> first content frame at the client: p50 {o50:.3} ms, p99 {o99:.3} ms"
    );
    println!(
        "    floor (pipe -> relay thread -> loopback TCP, no HTTP):         p50 {f50:.3} ms, p99 {f99:.3} ms"
    );
    println!(
        "  request sent -> first content frame at the client:              p50 {r50:.3} ms, p99 {r99:.3} ms"
    );
    println!(
        "  request sent -> agent process running:                          p50 {s50:.3} ms, p99 {s99:.3} ms"
    );
    println!(
        "    floor (this client spawning the agent directly):             p50 {g50:.3} ms, p99 {g99:.3} ms"
    );
    Ok(())
}

/// `first_chunk_unix_ns` of every prompt the ACP stand-in stamped in `path` (none when it
/// does not exist yet).
fn chunk_stamps(path: &Path) -> Result<Vec<u64>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    text.lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|stamp| stamp["first_chunk_unix_ns"].as_u64())
                .ok_or_else(|| format!("{}: not a stamp: {line}", path.display()))
        })
        .collect()
}

/// The floor of the proxy's ACP path: a warm ACP agent this client drives itself, its
/// stdout relayed by a thread into a loopback TCP connection (the same two wake-ups as
/// through a proxy), with no HTTP, SSE or translation.
struct AcpFloor {
    child: Child,
    stdin: ChildStdin,
    lines: BufReader<TcpStream>,
    relay: JoinHandle<std::io::Result<u64>>,
    next_id: u64,
    line: String,
}

impl AcpFloor {
    fn start(
        listener: &TcpListener,
        agent: &str,
        recording: &Path,
        delay_ms: &str,
        times: &Path,
    ) -> Result<AcpFloor, String> {
        let mut command = Command::new(agent);
        command
            .arg("--recording")
            .arg(recording)
            .args(["--delay-ms", delay_ms])
            .env("AGENTWIRE_REPLAY_TIMES", times)
            .stdin(Stdio::piped());
        let Relayed {
            mut child,
            reader,
            relay,
            ..
        } = Relayed::spawn(listener, &mut command)?;
        let stdin = child.stdin.take().expect("piped");
        let mut floor = AcpFloor {
            child,
            stdin,
            lines: BufReader::new(reader),
            relay,
            next_id: 0,
            line: String::new(),
        };
        floor.call("initialize", serde_json::json!({"protocolVersion": 1}))?;
        floor.read_until("protocolVersion")?;
        Ok(floor)
    }

    fn call(&mut self, method: &str, params: serde_json::Value) -> Result<(), String> {
        let request = serde_json::json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.next_id += 1;
        writeln!(self.stdin, "{request}").map_err(|e| format!("ACP floor: {e}"))
    }

    /// Reads lines until one contains `needle`; returns when that line was read.
    fn read_until(&mut self, needle: &str) -> Result<u64, String> {
        loop {
            self.line.clear();
            let n = self
                .lines
                .read_line(&mut self.line)
                .map_err(|e| format!("ACP floor: {e}"))?;
            let at = unix_ns();
            if n == 0 {
                return Err(format!("ACP floor: the agent ended before {needle}"));
            }
            if self.line.contains(needle) {
                return Ok(at);
            }
        }
    }

    /// One session, as the proxy runs it: `session/new`, then a prompt answered to its
    /// end. Returns when the first chunk's line came out of the socket.
    fn run(&mut self) -> Result<u64, String> {
        self.call(
            "session/new",
            serde_json::json!({"cwd": "/", "mcpServers": []}),
        )?;
        self.read_until("sessionId")?;
        let answer: serde_json::Value =
            serde_json::from_str(&self.line).map_err(|e| format!("ACP floor: {e}"))?;
        let session = answer["result"]["sessionId"].clone();
        self.call(
            "session/prompt",
            serde_json::json!({"sessionId": session, "prompt": [{"type": "text", "text": "Say the line."}]}),
        )?;
        let first_chunk = self.read_until("agent_message_chunk")?;
        self.read_until("stopReason")?;
        Ok(first_chunk)
    }

    fn stop(self) -> Result<(), String> {
        drop(self.stdin);
        let mut child = self.child;
        child.wait().map_err(|e| format!("ACP floor: {e}"))?;
        self.relay
            .join()
            .expect("relay thread")
            .map_err(|e| format!("ACP floor: {e}"))?;
        Ok(())
    }
}

/// Sends requests until one is answered (the warm agent may still be starting: 503), for
/// up to 30 s.
fn warm_up(target: &Target, expected: &str) -> Result<(), String> {
    let began = Instant::now();
    loop {
        match target
            .send()
            .and_then(Stream::read_all)
            .and_then(|s| s.check(expected))
        {
            Ok(()) => return Ok(()),
            Err(e) if began.elapsed() > Duration::from_secs(30) => {
                return Err(format!("no answer within 30 s: {e}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn acp_latency(
    target: &Target,
    requests: usize,
    dir: &Path,
    agent: &str,
    delay_ms: &str,
) -> Result<(), String> {
    let proxy_times = dir.join("times.jsonl");
    let floor_times = dir.join("acp-floor-times.jsonl");
    // The agent opens the file for each stamp: what an earlier run left goes.
    let _ = std::fs::remove_file(&proxy_times);
    let _ = std::fs::remove_file(&floor_times);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let mut floor = AcpFloor::start(
        &listener,
        agent,
        &dir.join("acp-latency.jsonl"),
        delay_ms,
        &floor_times,
    )?;
    let expected = PIECES.concat();
    warm_up(target, &expected)?;
    let already = chunk_stamps(&proxy_times)?.len();
    let (mut sent, mut first_content, mut floor_arrived) = (Vec::new(), Vec::new(), Vec::new());
    // Proxy requests and floor runs alternate, so both meet the same machine load.
    for i in 0..requests {
        let at = unix_ns();
        let stream = Stream::read_all(target.send()?)?;
        stream
            .check(&expected)
            .map_err(|e| format!("request {i}: {e}"))?;
        sent.push(at);
        first_content.push(stream.first_content_ns.expect("checked: it has text"));
        floor_arrived.push(floor.run()?);
    }
    floor.stop()?;
    let written = chunk_stamps(&proxy_times)?.split_off(already);
    let floor_written = chunk_stamps(&floor_times)?;
    if written.len() != requests || floor_written.len() != requests {
        return Err(format!(
            "{requests} first chunks expected, {} stamped by the proxy's agent and {} by the floor's",
            written.len(),
            floor_written.len()
        ));
    }
    let (r50, r99) = percentiles(between(&sent, &first_content));
    let (a50, a99, amax) = spread(between(&written, &first_content));
    let (f50, f99, fmax) = spread(between(&floor_written, &floor_arrived));
    println!(
        "  {requests} sequential streaming requests on the warm ACP agent (--delay-ms {delay_ms}), all answered; as many floor runs between them"
    );
    println!(
        "  request sent -> first content frame at the client:              p50 {r50:.3} ms, p99 {r99:.3} ms"
    );
    println!(
        "  agent's first chunk written -> first content frame at the client: p50 {a50:.3} ms, p99 {a99:.3} ms, max {amax:.3} ms"
    );
    println!(
        "    floor (warm agent -> relay thread -> loopback TCP, no HTTP):   p50 {f50:.3} ms, p99 {f99:.3} ms, max {fmax:.3} ms"
    );
    println!(
        "    ratio to the floor: p50 {:.2}x, p99 {:.2}x",
        a50 / f50,
        a99 / f99
    );
    Ok(())
}

fn rate(
    target: &Target,
    requests: usize,
    clients: usize,
    expected_path: &str,
) -> Result<(), String> {
    let expected = Arc::new(
        std::fs::read_to_string(expected_path).map_err(|e| format!("{expected_path}: {e}"))?,
    );
    warm_up(target, &expected)?;
    let left = Arc::new(AtomicIsize::new(requests as isize));
    let began = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (left, expected, target) = (left.clone(), expected.clone(), target.clone());
            std::thread::spawn(move || {
                let (mut answered, mut errors) = (0usize, Vec::new());
                while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                    match target
                        .send()
                        .and_then(Stream::read_all)
                        .and_then(|s| s.check(&expected))
                    {
                        Ok(()) => answered += 1,
                        Err(e) => errors.push(e),
                    }
                }
                (answered, errors)
            })
        })
        .collect();
    let (mut answered, mut errors) = (0, Vec::new());
    for worker in workers {
        let (n, e) = worker.join().expect("client thread panicked");
        answered += n;
        errors.extend(e);
    }
    let wall = began.elapsed().as_secs_f64();
    println!(
        "  {requests} requests, {clients} at a time: {answered} complete and correct, {} errors; {:.0} requests/s (wall {wall:.2} s)",
        errors.len(),
        answered as f64 / wall
    );
    match errors.first() {
        None => Ok(()),
        Some(first) => Err(format!("{} requests failed; first: {first}", errors.len())),
    }
}

fn concurrent(target: &Target, streams: usize, expected_path: &str) -> Result<(), String> {
    let expected = Arc::new(
        std::fs::read_to_string(expected_path).map_err(|e| format!("{expected_path}: {e}"))?,
    );
    let start = Arc::new(Barrier::new(streams));
    let began = Instant::now();
    let workers: Vec<_> = (0..streams)
        .map(|_| {
            let (start, expected, target) = (start.clone(), expected.clone(), target.clone());
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    start.wait();
                    let began = Instant::now();
                    let stream = Stream::read_all(target.send()?)?;
                    stream.check(&expected)?;
                    Ok::<Duration, String>(began.elapsed())
                })
                .expect("spawning a client thread")
        })
        .collect();
    let mut durations = Vec::with_capacity(streams);
    let mut errors = Vec::new();
    for worker in workers {
        match worker.join().expect("client thread panicked") {
            Ok(took) => durations.push(took.as_nanos() as u64),
            Err(e) => errors.push(e),
        }
    }
    let wall = began.elapsed();
    println!(
        "  {streams} concurrent streams: {} complete and correct, {} errors, wall {:.2} s",
        durations.len(),
        errors.len(),
        wall.as_secs_f64()
    );
    if !durations.is_empty() {
        let (d50, d99) = percentiles(durations);
        println!("  stream duration: p50 {d50:.1} ms, p99 {d99:.1} ms");
    }
    match errors.first() {
        None => Ok(()),
        Some(first) => Err(format!("{} streams failed; first: {first}", errors.len())),
    }
}

fn throughput(target: &Target, input_bytes: u64) -> Result<(), String> {
    let began = Instant::now();
    let (mut received, mut tail) = (0u64, Vec::new());
    each_read(target.send()?, 256 * 1024, |bytes| {
        received += bytes.len() as u64;
        tail.extend_from_slice(bytes);
        tail.drain(..tail.len().saturating_sub(64));
        Ok(())
    })?;
    let seconds = began.elapsed().as_secs_f64();
    if !tail.ends_with(b"data: [DONE]\n\n") {
        return Err("the stream did not end with data: [DONE]".into());
    }
    println!(
        "  one stream: {:.1} MB in, {:.1} MB of SSE out, {seconds:.3} s, {:.1} MB/s of transcript",
        input_bytes as f64 / 1e6,
        received as f64 / 1e6,
        input_bytes as f64 / 1e6 / seconds
    );
    println!("seconds {seconds:.6}");
    Ok(())
}
