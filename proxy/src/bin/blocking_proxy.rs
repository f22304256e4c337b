//! The same OpenAI-compatible server as `tokio_proxy`, with std threads, `std::process`
//! and `std::net` (and `httparse` for request heads) — the shape for programs without an
//! async runtime.
//!
//! ```text
//! cargo run --release -p agentwire-proxy --bin blocking_proxy -- --demo
//! cargo run --release -p agentwire-proxy --bin blocking_proxy -- [--listen ADDR] [--api-key KEY] [--agent-bin PATH] …
//! ```
//!
//! Same flags, routes and behaviour as `tokio_proxy` (both are built on this package's library).
//!
//! One thread per connection. The request head must arrive within `--header-timeout-ms`
//! (slow clients are dropped). Responses close the connection. For an agent run, small
//! helper threads turn the blocking sources into messages on one channel — stdout and
//! stderr reads, the leader's exit, the client's socket closing, server shutdown — and
//! the connection thread waits on that channel until the bridge's next deadline
//! ([`Bridge::poll_timeout`], the only timer), feeds the bridge, and writes each body
//! chunk and flushes it at once. A failed write means the client is gone. Every run ends
//! the same way: the group is stopped if it still runs (SIGTERM, SIGKILL after a grace
//! period), the leader is reaped, the request is logged, and only then is the slot freed.

use agentwire_proxy as common;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use agentwire::bridge::{Bridge, Head, Output};
use agentwire::cursor::ExitStatus;

use common::agent::{Signal, Stopper, exit_status, signal_group};
use common::http::{self, Reply, Route};
use common::models::ModelCache;
use common::record::{AgentEnd, RequestRecord, ResponseEnd};
use common::{Clock, RequestIds, Settings};

/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Most request headers accepted.
const MAX_HEADERS: usize = 64;
/// Bytes read from the agent's stdout at a time.
const STDOUT_READ: usize = 32 * 1024;
/// Stdout chunks in flight between the reader thread and the connection thread: a slow
/// client slows the agent down instead of filling memory.
const PIPE_CHUNKS: usize = 8;
/// Stack of the small helper threads.
const HELPER_STACK: usize = 64 * 1024;

struct Server {
    settings: Settings,
    clock: Clock,
    ids: RequestIds,
    slots: Slots,
    models: ModelCache,
    shutting_down: AtomicBool,
    /// Every run in progress, to tell it about shutdown.
    runs: Mutex<HashMap<u64, SyncSender<Event>>>,
}

fn main() -> ExitCode {
    let settings = match common::start("blocking_proxy") {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let listener = match TcpListener::bind(settings.listen) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("blocking_proxy: cannot listen on {}: {e}", settings.listen);
            return ExitCode::FAILURE;
        }
    };
    let bound = listener.local_addr().unwrap_or(settings.listen);
    println!("{}", settings.banner(bound));
    let _ = io::stdout().flush();
    let server = Arc::new(Server {
        slots: Slots::new(settings.max_concurrent),
        models: ModelCache::new(settings.models_ttl),
        settings,
        clock: Clock::new(),
        ids: RequestIds::new(),
        shutting_down: AtomicBool::new(false),
        runs: Mutex::new(HashMap::new()),
    });
    if let Err(e) = watch_signals(Arc::clone(&server), bound) {
        eprintln!("blocking_proxy: cannot install signal handlers: {e}");
        return ExitCode::FAILURE;
    }
    for stream in listener.incoming() {
        if server.shutting_down.load(Ordering::SeqCst) {
            break;
        }
        match stream {
            Ok(stream) => {
                let server = Arc::clone(&server);
                let spawned = std::thread::Builder::new()
                    .name("connection".into())
                    .spawn(move || connection(&server, stream));
                if let Err(e) = spawned {
                    tracing::warn!(%e, "cannot start a connection thread");
                }
            }
            Err(e) => {
                // Out of descriptors, most likely: back off instead of spinning.
                tracing::warn!(%e, "accept failed");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    drop(listener);
    let limit = server.settings.kill_grace * 2 + Duration::from_secs(5);
    if !server.slots.wait_idle(limit) {
        tracing::warn!("agents still running after {limit:?}");
    }
    ExitCode::SUCCESS
}

/// On SIGINT or SIGTERM: stop accepting, tell every run, and wake the accept loop.
fn watch_signals(server: Arc<Server>, bound: SocketAddr) -> io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if signals.forever().next().is_none() {
                return;
            }
            tracing::info!("shutting down: ending open responses and stopping every agent");
            server.shutting_down.store(true, Ordering::SeqCst);
            let runs = server.runs.lock().unwrap_or_else(|e| e.into_inner());
            for events in runs.values() {
                // A run's channel may be full: deliver without holding up the others.
                let events = events.clone();
                helper(move || {
                    let _ = events.send(Event::Shutdown);
                });
            }
            drop(runs);
            // The accept loop is blocked in accept(): one connection wakes it.
            let mut wake = bound;
            if wake.ip().is_unspecified() {
                wake.set_ip(match wake {
                    SocketAddr::V4(_) => [127, 0, 0, 1].into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        })?;
    Ok(())
}

/// Agent runs in progress, bounded by `--max-concurrent`.
struct Slots {
    max: u32,
    used: Mutex<u32>,
    freed: Condvar,
}

/// A taken slot, given back when dropped.
struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(max: u32) -> Slots {
        Slots {
            max,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn try_take(&self) -> Option<Slot<'_>> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if *used >= self.max {
            return None;
        }
        *used += 1;
        Some(Slot(self))
    }

    fn in_flight(&self) -> u32 {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until no slot is taken; false if `limit` passed first.
    fn wait_idle(&self, limit: Duration) -> bool {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let (used, _) = self
            .freed
            .wait_timeout_while(used, limit, |used| *used > 0)
            .unwrap_or_else(|e| e.into_inner());
        *used == 0
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut used = self.0.used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= 1;
        self.0.freed.notify_all();
    }
}

/// A parsed request head.
struct RequestHead {
    method: String,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
    /// Bytes read past the head: the start of the body.
    rest: Vec<u8>,
}

impl RequestHead {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }
}

/// Why a request could not be read.
enum ReadError {
    /// The peer closed, timed out or failed: drop the connection without a word.
    Gone,
    /// A malformed request: answer this and close.
    Reply(Reply),
}

fn connection(server: &Server, mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let number = server.ids.next();
    let deadline = Instant::now() + server.settings.header_timeout;
    let head = match read_head(&mut stream, deadline) {
        Ok(head) => head,
        Err(ReadError::Gone) => return,
        Err(ReadError::Reply(reply)) => {
            let mut record = RequestRecord::new(number, "-", "-");
            write_reply(&mut stream, reply, false, &mut record);
            return;
        }
    };
    let mut record = RequestRecord::new(number, &head.method, &head.path);
    let route = http::route(&head.method, &head.path);
    let reply = if route == Route::Preflight {
        http::preflight(head.header_str("access-control-request-headers"))
    } else if !server.settings.auth.allows(head.header("authorization")) {
        http::unauthorized()
    } else {
        match route {
            Route::Chat => return chat(server, stream, head, record),
            Route::Models => models(server),
            Route::Health => http::health(&server.settings, server.slots.in_flight()),
            Route::NotFound => http::not_found(&head.method, &head.path),
            Route::MethodNotAllowed(allow) => {
                http::method_not_allowed(&head.method, &head.path, allow)
            }
            Route::Preflight => unreachable!("answered above"),
        }
    };
    write_reply(&mut stream, reply, head.method == "HEAD", &mut record);
}

/// Reads bytes into `buf` before `deadline`: the count, 0 at end of stream.
fn read_until(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    stream.set_read_timeout(Some(left))?;
    stream.read(buf)
}

fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<RequestHead, ReadError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = read_until(stream, &mut chunk, deadline).map_err(|_| ReadError::Gone)?;
        if n == 0 {
            return Err(ReadError::Gone);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                return Ok(RequestHead {
                    method: request.method.unwrap_or_default().to_owned(),
                    path: request
                        .path
                        .unwrap_or_default()
                        .split(['?', '#'])
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                    headers: request
                        .headers
                        .iter()
                        .map(|h| (h.name.to_owned(), h.value.to_vec()))
                        .collect(),
                    rest: buf[len..].to_vec(),
                });
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(ReadError::Reply(http::bad_request(
                    "Request head too large.",
                )));
            }
            Err(e) => {
                return Err(ReadError::Reply(http::bad_request(&format!(
                    "Malformed request: {e}."
                ))));
            }
        }
    }
}

/// Reads the request body (`Content-Length` or chunked), at most `limit` bytes.
fn read_body(
    stream: &mut TcpStream,
    head: &mut RequestHead,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, ReadError> {
    let mut pending = std::mem::take(&mut head.rest);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut more = |stream: &mut TcpStream, pending: &mut Vec<u8>| -> Result<(), ReadError> {
        match read_until(stream, &mut chunk, Instant::now() + timeout) {
            Ok(0) | Err(_) => Err(ReadError::Gone),
            Ok(n) => {
                pending.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    };
    let chunked = head
        .header_str("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    if !chunked {
        let length = match head.header_str("content-length") {
            None => 0,
            Some(value) => value
                .trim()
                .parse::<usize>()
                .map_err(|_| ReadError::Reply(http::bad_request("Invalid Content-Length.")))?,
        };
        if length > limit {
            return Err(ReadError::Reply(http::too_large(limit)));
        }
        while pending.len() < length {
            more(stream, &mut pending)?;
        }
        pending.truncate(length);
        return Ok(pending);
    }
    let mut body = Vec::new();
    loop {
        match httparse::parse_chunk_size(&pending) {
            Ok(httparse::Status::Complete((start, size))) => {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if size == 0 {
                    return Ok(body);
                }
                if body.len().saturating_add(size) > limit {
                    return Err(ReadError::Reply(http::too_large(limit)));
                }
                let end = start + size + 2;
                while pending.len() < end {
                    more(stream, &mut pending)?;
                }
                body.extend_from_slice(&pending[start..start + size]);
                pending.drain(..end);
            }
            Ok(httparse::Status::Partial) if pending.len() < MAX_HEAD => {
                more(stream, &mut pending)?
            }
            _ => {
                return Err(ReadError::Reply(http::bad_request(
                    "Malformed chunked body.",
                )));
            }
        }
    }
}

/// Writes a complete reply and closes the connection.
fn write_reply(stream: &mut TcpStream, reply: Reply, head_only: bool, record: &mut RequestRecord) {
    let mut out = status_line(reply.status, &reply.headers);
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", reply.body.len()).as_bytes());
    if !head_only {
        out.extend_from_slice(&reply.body);
    }
    record.status = reply.status;
    if stream.write_all(&out).and_then(|()| stream.flush()).is_ok() {
        record.bytes_out = reply.body.len() as u64;
    } else {
        record.end = ResponseEnd::ClientGone;
    }
    let _ = stream.shutdown(Shutdown::Write);
    linger(stream);
    record.log();
}

/// Reads (and drops) what the client still sends, briefly, before the connection is
/// closed: closing with unread bytes resets the connection, and the client could lose the
/// reply it has not read yet (a 413 sent before the body it is still writing).
fn linger(stream: &mut TcpStream) {
    let until = Instant::now() + Duration::from_millis(250);
    let mut sink = [0u8; 16 * 1024];
    let mut left = 1024 * 1024usize;
    while left > 0 {
        match read_until(stream, &mut sink, until) {
            Ok(n) if n > 0 => left = left.saturating_sub(n),
            _ => return,
        }
    }
}

/// The status line, the given headers, the CORS headers and `connection: close`; the
/// caller adds the framing header and the blank line.
fn status_line(status: u16, headers: &[(&'static str, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status)).into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    for (name, value) in http::CORS_HEADERS {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"connection: close\r\n");
    out
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

fn models(server: &Server) -> Reply {
    let now = Instant::now();
    if let Some(body) = server.models.fresh(now) {
        return Reply::json(200, body.to_vec());
    }
    let listing = server.settings.agent.list_models();
    match server.models.update(Instant::now(), listing) {
        Ok(body) => Reply::json(200, body.to_vec()),
        Err(why) => http::models_unavailable(&why),
    }
}

/// What the helper threads of a run report.
enum Event {
    Stdout(Vec<u8>),
    StdoutEof,
    Stderr(Vec<u8>),
    StderrEof,
    Exited(std::process::ExitStatus),
    ClientGone,
    Shutdown,
}

fn chat(server: &Server, mut stream: TcpStream, mut head: RequestHead, mut record: RequestRecord) {
    let limit = server.settings.config.request_limits.max_body_bytes;
    let body = match read_body(
        &mut stream,
        &mut head,
        limit,
        server.settings.header_timeout,
    ) {
        Ok(body) => body,
        Err(ReadError::Gone) => return,
        Err(ReadError::Reply(reply)) => return write_reply(&mut stream, reply, false, &mut record),
    };
    if server.shutting_down.load(Ordering::SeqCst) {
        return write_reply(&mut stream, http::shutting_down(), false, &mut record);
    }
    let Some(slot) = server.slots.try_take() else {
        let reply = http::busy(server.settings.max_concurrent);
        return write_reply(&mut stream, reply, false, &mut record);
    };
    let params = server.ids.params(record.number, &server.clock);
    let bridge = Bridge::new(&body, &server.settings.config, params);
    let (events_tx, events) = mpsc::sync_channel(PIPE_CHUNKS);
    server
        .runs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(record.number, events_tx.clone());
    let number = record.number;
    let mut run = Run {
        server,
        bridge,
        stream,
        agent: None,
        events,
        record,
        head: None,
        body: Vec::new(),
        frame: Vec::new(),
        ended: false,
        client_gone: false,
    };
    run.start(&events_tx);
    drop(events_tx);
    run.serve();
    run.finish();
    server
        .runs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&number);
    drop(slot);
}

/// One request's agent and bridge, on the connection's thread.
struct Run<'a> {
    server: &'a Server,
    bridge: Bridge,
    stream: TcpStream,
    agent: Option<Agent>,
    events: Receiver<Event>,
    record: RequestRecord,
    /// The head, held back for a body that is sent whole (not a stream).
    head: Option<Head>,
    /// A whole body being assembled.
    body: Vec<u8>,
    /// Reused buffer for one chunk of a stream.
    frame: Vec<u8>,
    ended: bool,
    client_gone: bool,
}

/// The agent process of a run; the child itself belongs to its waiter thread.
struct Agent {
    group: u32,
    stdout_open: bool,
    stderr_open: bool,
    status: Option<std::process::ExitStatus>,
    reported: bool,
    stopper: Stopper,
}

impl Run<'_> {
    /// Spawns the agent and its helper threads, and the client watcher.
    fn start(&mut self, events: &SyncSender<Event>) {
        if let Some(invocation) = self.bridge.invocation() {
            self.record.set_model(invocation);
            let prompt = invocation.stdin.clone();
            match self.server.settings.agent.command(invocation).spawn() {
                Ok(mut child) => {
                    let group = child.id();
                    if let Some(mut stdin) = child.stdin.take() {
                        // Apart from the reads: a large prompt must not block them.
                        helper(move || {
                            let _ = stdin.write_all(&prompt);
                        });
                    }
                    if let Some(stdout) = child.stdout.take() {
                        let tx = events.clone();
                        helper(move || {
                            pump(stdout, STDOUT_READ, &tx, Event::Stdout, Event::StdoutEof)
                        });
                    }
                    if let Some(stderr) = child.stderr.take() {
                        let tx = events.clone();
                        helper(move || pump(stderr, 4096, &tx, Event::Stderr, Event::StderrEof));
                    }
                    let tx = events.clone();
                    helper(move || {
                        let status = child.wait().unwrap_or_default();
                        let _ = tx.send(Event::Exited(status));
                    });
                    self.agent = Some(Agent {
                        group,
                        stdout_open: true,
                        stderr_open: true,
                        status: None,
                        reported: false,
                        stopper: Stopper::new(self.server.settings.kill_grace),
                    });
                }
                Err(e) => {
                    self.record.agent = AgentEnd::SpawnFailed;
                    let now = self.server.clock.now_ms();
                    let message = format!(
                        "could not start {}: {e}\n",
                        self.server.settings.agent.path.display()
                    );
                    let _ = self.bridge.push_stderr(message.as_bytes(), now);
                    let _ = self.bridge.agent_exited(ExitStatus::Code(127), now);
                }
            }
        }
        // A hang-up is seen as end of stream on the socket (the request was read whole).
        if let Ok(mut watch) = self.stream.try_clone() {
            let _ = watch.set_read_timeout(None);
            let tx = events.clone();
            helper(move || {
                let mut sink = [0u8; 512];
                while matches!(watch.read(&mut sink), Ok(n) if n > 0) {}
                let _ = tx.send(Event::ClientGone);
            });
        }
        self.drain();
    }

    /// Feeds the bridge until its end (or the client's).
    fn serve(&mut self) {
        while !self.ended && !self.client_gone {
            let clock = self.server.clock;
            let due = self.next_due();
            let event = recv_until(&self.events, due);
            let now = clock.now_ms();
            match event {
                Ok(event) => self.handle(event),
                Err(RecvTimeoutError::Timeout) => {
                    self.bridge.handle_timeout(now);
                    self.stop_when_due();
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // Nothing can report any more (no agent): end by the bridge's rules.
                    self.bridge.client_gone(now);
                    self.client_gone = true;
                }
            }
            if let Some(agent) = &mut self.agent {
                if let Some(exit) = agent.status {
                    if !agent.stdout_open && !agent.stderr_open && !agent.reported {
                        agent.reported = true;
                        let _ = self.bridge.agent_exited(exit_status(exit), clock.now_ms());
                    }
                }
            }
            self.drain();
        }
    }

    /// The earliest of the bridge's deadline and the stop sequence's.
    fn next_due(&self) -> Option<Instant> {
        let bridge = self
            .bridge
            .poll_timeout()
            .map(|ms| self.server.clock.instant(ms));
        let stop = self.agent.as_ref().and_then(|a| a.stopper.deadline());
        match (bridge, stop) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn stop_when_due(&mut self) {
        if let Some(agent) = &mut self.agent {
            if let Some(signal) = agent.stopper.on_deadline(Instant::now()) {
                signal_group(agent.group, signal);
            }
        }
    }

    fn handle(&mut self, event: Event) {
        let now = self.server.clock.now_ms();
        let Some(agent) = &mut self.agent else {
            if matches!(event, Event::ClientGone) {
                self.gone();
            }
            return;
        };
        match event {
            Event::Stdout(bytes) => {
                let _ = self.bridge.push_stdout(&bytes, now);
            }
            Event::Stderr(bytes) => {
                let _ = self.bridge.push_stderr(&bytes, now);
            }
            Event::StdoutEof => agent.stdout_open = false,
            Event::StderrEof => agent.stderr_open = false,
            Event::Exited(status) => {
                agent.status = Some(status);
                agent.stopper.exited();
                // Whatever the leader left behind (children holding the pipes) goes too.
                signal_group(agent.group, Signal::Kill);
            }
            Event::ClientGone => self.gone(),
            Event::Shutdown => {
                self.record.end = ResponseEnd::Shutdown;
                // The bridge ends the response (in-band after the head, 503 before it)
                // and asks for the agent to be stopped.
                self.bridge.shutdown(now);
            }
        }
    }

    /// The client hung up or a write to it failed.
    fn gone(&mut self) {
        if self.ended || self.client_gone {
            return;
        }
        self.client_gone = true;
        if self.record.end == ResponseEnd::Complete {
            self.record.end = ResponseEnd::ClientGone;
        }
        self.bridge.client_gone(self.server.clock.now_ms());
        self.drain();
    }

    /// Takes every output of the bridge and writes it.
    fn drain(&mut self) {
        while let Some(output) = self.bridge.poll_output() {
            let written = match output {
                Output::Head(head) => {
                    self.record.status = head.status;
                    if is_stream(&head) {
                        let mut out = status_line(head.status, &http::head_headers(&head));
                        out.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
                        write_flush(&mut self.stream, &out)
                    } else {
                        self.head = Some(head);
                        Ok(())
                    }
                }
                Output::Body(bytes) => {
                    if self.head.is_some() {
                        self.body.extend_from_slice(bytes);
                        Ok(())
                    } else if self.client_gone {
                        Ok(())
                    } else {
                        self.record.bytes_out += bytes.len() as u64;
                        self.frame.clear();
                        self.frame
                            .extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
                        self.frame.extend_from_slice(bytes);
                        self.frame.extend_from_slice(b"\r\n");
                        write_flush(&mut self.stream, &self.frame)
                    }
                }
                Output::StopAgent => {
                    if let Some(agent) = &mut self.agent {
                        if let Some(signal) = agent.stopper.stop(Instant::now()) {
                            signal_group(agent.group, signal);
                        }
                    }
                    Ok(())
                }
                Output::End => {
                    self.ended = true;
                    if self.client_gone {
                        Ok(())
                    } else if let Some(head) = self.head.take() {
                        let mut out = status_line(head.status, &http::head_headers(&head));
                        out.extend_from_slice(
                            format!("content-length: {}\r\n\r\n", self.body.len()).as_bytes(),
                        );
                        out.extend_from_slice(&self.body);
                        self.record.bytes_out = self.body.len() as u64;
                        write_flush(&mut self.stream, &out)
                    } else {
                        write_flush(&mut self.stream, b"0\r\n\r\n")
                    }
                }
            };
            if written.is_err() {
                // A failed write is a client gone: nothing more is written.
                if self.ended {
                    self.client_gone = true;
                    self.record.end = ResponseEnd::ClientGone;
                } else {
                    self.gone();
                }
                return;
            }
        }
    }

    /// After the response: stop the agent if it still runs, reap it, log the request.
    fn finish(mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(agent) = &mut self.agent {
            agent.stopper.response_over(Instant::now());
            while agent.status.is_none() {
                let event = recv_until(&self.events, agent.stopper.deadline());
                match event {
                    // Stdout and stderr are read to their end and dropped: nobody listens.
                    Ok(Event::Exited(status)) => {
                        agent.status = Some(status);
                        agent.stopper.exited();
                    }
                    Ok(_) => {}
                    Err(RecvTimeoutError::Timeout) => {
                        if let Some(signal) = agent.stopper.on_deadline(Instant::now()) {
                            signal_group(agent.group, signal);
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            signal_group(agent.group, Signal::Kill);
            let status = exit_status(agent.status.unwrap_or_default());
            self.record.agent = match agent.stopper.signalled() {
                Some(signal) => AgentEnd::Stopped(signal, status),
                None => AgentEnd::Exited(status),
            };
        }
        self.record.log();
    }
}

/// The next event, waiting until `due` at the most (forever without one).
fn recv_until(events: &Receiver<Event>, due: Option<Instant>) -> Result<Event, RecvTimeoutError> {
    match due {
        Some(at) => events.recv_timeout(at.saturating_duration_since(Instant::now())),
        None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
    }
}

fn is_stream(head: &Head) -> bool {
    head.content_type == "text/event-stream" && head.status == 200
}

fn write_flush(stream: &mut TcpStream, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}

/// Starts a small helper thread.
fn helper(f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new()
        .stack_size(HELPER_STACK)
        .spawn(f)
    {
        tracing::warn!(%e, "cannot start a helper thread");
    }
}

/// Reads `pipe` until its end, sending each chunk.
fn pump(
    mut pipe: impl Read,
    size: usize,
    events: &SyncSender<Event>,
    chunk: fn(Vec<u8>) -> Event,
    eof: Event,
) {
    let mut buf = vec![0u8; size];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if events.send(chunk(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = events.send(eof);
}
