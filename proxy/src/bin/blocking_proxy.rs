//! The same server as `tokio_proxy` (the OpenAI Chat Completions, OpenAI Responses and
//! Anthropic Messages APIs on top of cursor-agent or a warm ACP agent), with std threads,
//! `std::process` and `std::net` (and `httparse` for request heads) — the shape for
//! programs without an async runtime.
//!
//! ```text
//! cargo run --release -p agentwire-proxy --bin blocking_proxy -- --demo
//! cargo run --release -p agentwire-proxy --bin blocking_proxy -- [--listen ADDR] [--api-key KEY] [--agent-bin PATH] …
//! ```
//!
//! Same flags, routes (one per API, `count_tokens`, the models list, the probes), errors in
//! the route's API's shape, and behaviour as `tokio_proxy` (both are built on this
//! package's library).
//!
//! One thread per connection, one request per connection (responses close it). The head
//! must arrive within `--header-timeout-ms` and the whole request within
//! `--request-timeout-ms` of its first byte; its body is read by the strict decoder of
//! [`agentwire_proxy::framing`], with `100 Continue` sent when the client waits for it.
//!
//! For an agent run, small helper threads turn the blocking sources into messages on one
//! channel — stdout and stderr (one thread polling both, which the run can cancel), the
//! leader's exit, the client's socket closing, server shutdown — and the connection thread
//! waits on that channel until the bridge's next deadline ([`Bridge::poll_timeout`], the
//! only timer), feeds the bridge, and writes what it yields. Writes never block past a
//! deadline: while the client does not take them, the thread stops taking messages (so
//! the agent waits on a full pipe) and writes with a timeout up to the next deadline,
//! serving each as it comes; a write that makes no progress for `--write-timeout-ms` means
//! the client is gone. Every run ends the same way: the group is stopped if it still runs
//! (SIGTERM, SIGKILL after a grace period), the leader is reaped, the slot is freed, then
//! what is left of the response is written and the request logged. The bridge is built
//! through the proxy's conversation registry ([`agentwire_proxy::conversations`]), and the
//! request's turn in its conversation ends once the response has (before the client can
//! see its end); a resumed chat the agent cannot continue is replaced by the bridge's
//! fresh run (`Output::Respawn`), whose helper threads report under a new generation so
//! that nothing of the old process reaches it. A thread lets parked chats expire. With
//! `--agent-protocol acp` the request is instead a turn on the one warm agent, in its
//! conversation ([`agentwire_proxy::acp`]), and the connection thread blocks on the turn's
//! outputs; the agent's requests to the MCP endpoint (`/mcp/<token>`, where it calls a
//! request's client tools: [`agentwire_proxy::mcp`]) are served the same way, an SSE
//! answer written chunk by chunk as the core gives it.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, ChildStderr, ChildStdout, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use agentwire::acp::McpRefusal;
use agentwire::bridge::{Bridge, Dialect, Head, Output};
use agentwire::mcp::ExchangeOutput;
use agentwire_proxy::acp::{Ticket, Warm};
use agentwire_proxy::agent::{self, exit_status, signal_group};
use agentwire_proxy::connections::{Admitted, Connections, Lane, OVERFLOW_TIMEOUT};
use agentwire_proxy::conversations::{CallerIds, Continuation, Conversations};
use agentwire_proxy::framing::{BodyDecoder, BodyLength, Version, body_length};
use agentwire_proxy::http::{self, Outcome, Reply, RequestHead, ResponseContext, Target};
use agentwire_proxy::lifecycle::{Action, Lifecycle};
use agentwire_proxy::mcp;
use agentwire_proxy::models::ModelCache;
use agentwire_proxy::record::{AgentEnd, RequestRecord, ResponseEnd};
use agentwire_proxy::scan::{MAX_HEAD, MAX_HEADERS, may_end_head};
use agentwire_proxy::{Clock, RequestIds, Settings, reaper};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// Bytes read from a client at a time.
const CLIENT_READ: usize = 16 * 1024;
/// Bytes read from the agent's stdout at a time.
const STDOUT_READ: usize = 32 * 1024;
/// Bytes read from its stderr at a time.
const STDERR_READ: usize = 4 * 1024;
/// Pipe chunks in flight between the pipe thread and the connection thread: a slow
/// client slows the agent down instead of filling memory.
const PIPE_CHUNKS: usize = 8;
/// Stack of the small helper threads.
const HELPER_STACK: usize = 64 * 1024;
/// Longest a blocked write waits before looking at the server's shutdown again.
const WRITE_SLICE: Duration = Duration::from_millis(100);
/// Longest the connection thread waits for the pipe thread to end once reading stops. It
/// only takes what the pipes hold then, without waiting: a safety net.
const PIPES_CLOSE: Duration = Duration::from_secs(5);

struct Server {
    settings: Settings,
    clock: Clock,
    ids: RequestIds,
    slots: Slots,
    models: ModelCache,
    shutting_down: AtomicBool,
    /// Every run in progress, to tell it about shutdown.
    runs: Mutex<HashMap<u64, SyncSender<Event>>>,
    /// With `--agent-protocol acp`: the warm agent every request runs on.
    warm: Option<Arc<Warm>>,
    /// The agent chats parked between the requests of their conversations.
    conversations: Conversations,
}

fn main() -> ExitCode {
    let settings = match agentwire_proxy::start("blocking_proxy") {
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
    let connections = Connections::new(settings.max_connections);
    let clock = Clock::new();
    let warm = match Warm::for_settings(&settings, bound, clock) {
        Ok(warm) => warm,
        Err(e) => {
            eprintln!("blocking_proxy: cannot start the ACP agent's supervisor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = Arc::new(Server {
        slots: Slots::new(settings.max_concurrent),
        models: ModelCache::new(settings.models_ttl),
        conversations: Conversations::new(settings.conversations.clone(), clock),
        settings,
        clock,
        ids: RequestIds::new(),
        shutting_down: AtomicBool::new(false),
        runs: Mutex::new(HashMap::new()),
        warm,
    });
    if let Err(e) = watch_signals(Arc::clone(&server), bound) {
        eprintln!("blocking_proxy: cannot install signal handlers: {e}");
        return ExitCode::FAILURE;
    }
    // Parked chats expire on a thread of their own (it ends with the process).
    let expiring = Arc::clone(&server);
    let expiry = std::thread::Builder::new()
        .name("expiry".into())
        .stack_size(HELPER_STACK)
        .spawn(move || expiring.conversations.expire_on_this_thread());
    if let Err(e) = expiry {
        eprintln!("blocking_proxy: cannot start the expiry thread: {e}");
        return ExitCode::FAILURE;
    }
    for stream in listener.incoming() {
        if server.shutting_down.load(Ordering::SeqCst) {
            break;
        }
        match stream {
            // Over every lane: closed now, so its descriptor is free again at once.
            Ok(stream) => match connections.admit() {
                Some(admitted) => {
                    let server = Arc::clone(&server);
                    let spawned = std::thread::Builder::new()
                        .name("connection".into())
                        .spawn(move || connection(&server, stream, admitted));
                    if let Err(e) = spawned {
                        tracing::warn!(%e, "cannot start a connection thread");
                    }
                }
                None => drop(stream),
            },
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
    if let Some(warm) = &server.warm {
        if !warm.wait_stopped(limit) {
            tracing::warn!("the ACP agent still running after {limit:?}");
        }
    }
    // Every run has ended its turn: the chats still parked are let go.
    server.conversations.clear();
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
            if let Some(warm) = &server.warm {
                warm.shutdown();
            }
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
struct ReadHead {
    method: String,
    target: String,
    version: Version,
    headers: Vec<(String, Vec<u8>)>,
    /// When its first byte arrived.
    started: Instant,
    /// Bytes read past the head: the start of the body.
    rest: Vec<u8>,
}

impl ReadHead {
    fn fields(&self) -> Vec<(&str, &[u8])> {
        self.headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_slice()))
            .collect()
    }
}

/// Why a request could not be read.
enum ReadError {
    /// The peer closed or failed: drop the connection without a word.
    Gone,
    /// A malformed or late request: answer this and close.
    Reply(Reply),
}

/// What a response is written for: the request's version (HTTP/1.0 clients get no
/// chunked coding) and what every response to it carries.
struct Answer {
    version: Version,
    context: ResponseContext,
}

fn connection(server: &Server, mut stream: TcpStream, admitted: Admitted) {
    let lane = admitted.lane();
    let settings = &server.settings;
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(settings.write_timeout));
    let request_timeout = match lane {
        Lane::Served => settings.request_timeout,
        Lane::Overflow => OVERFLOW_TIMEOUT,
    };
    let head_deadline = Instant::now() + settings.header_timeout.min(request_timeout);
    let number = server.ids.next();
    let mut answer = Answer {
        version: Version::Http11,
        context: ResponseContext::default(),
    };
    let mut head = match read_head(&mut stream, head_deadline) {
        Ok(head) => head,
        Err(ReadError::Gone) => return,
        Err(ReadError::Reply(reply)) => {
            let mut record = RequestRecord::new(number, "-", "-");
            write_reply(&mut stream, reply, false, &answer, &mut record);
            return;
        }
    };
    answer.version = head.version;
    let Some(target) = Target::parse(&head.target) else {
        let mut record = RequestRecord::new(number, &head.method, "-");
        let reply = http::bad_request("Invalid request target.");
        write_reply(&mut stream, reply, false, &answer, &mut record);
        return;
    };
    let mut record = RequestRecord::new(number, &head.method, target.path);
    let rest = std::mem::take(&mut head.rest);
    let fields = head.fields();
    let request = RequestHead {
        method: &head.method,
        target,
        version: head.version,
        headers: &fields,
    };
    let checked = http::check(settings, &request, lane, server.ids.seed(number));
    answer.context = checked.context;
    let caller = CallerIds::new(checked.owner.unwrap_or_default(), &request);
    let deadline = head.started + request_timeout;
    let reply = match checked.outcome {
        Outcome::Reply(reply) => reply,
        Outcome::Run(dialect) => {
            let arriving = Arriving {
                stream,
                request: &request,
                rest,
                deadline,
                answer,
            };
            return run(server, arriving, dialect, &caller, record);
        }
        Outcome::CountTokens => {
            let mut arriving = Arriving {
                stream,
                request: &request,
                rest,
                deadline,
                answer,
            };
            let limits = &server.settings.config.request_limits;
            let reply = match arriving.read(server, limits.max_body_bytes) {
                Ok(body) => http::count_tokens(&body, limits),
                Err(ReadError::Gone) => return,
                Err(ReadError::Reply(reply)) => reply,
            };
            let Arriving {
                mut stream, answer, ..
            } = arriving;
            return write_reply(&mut stream, reply, false, &answer, &mut record);
        }
        Outcome::Models => match &server.warm {
            Some(warm) => warm.models_reply(),
            None => models(server),
        },
        Outcome::Mcp { token } => {
            let fields = mcp::Fields::of(&request);
            let arriving = Arriving {
                stream,
                request: &request,
                rest,
                deadline,
                answer,
            };
            return mcp_exchange(server, arriving, &token, &fields, record);
        }
        Outcome::Health { detailed } => {
            let warm = Warm::health_of(server.warm.as_ref(), detailed);
            let conversations = detailed.then(|| match &server.warm {
                Some(warm) => warm.conversations_health(),
                None => server.conversations.health(),
            });
            let in_flight = server.slots.in_flight();
            http::health(settings, detailed, in_flight, warm, conversations)
        }
    };
    write_reply(
        &mut stream,
        reply,
        head.method == "HEAD",
        &answer,
        &mut record,
    );
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

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<ReadHead, ReadError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut started = None;
    loop {
        let n = read_until(stream, &mut chunk, deadline).map_err(|_| ReadError::Gone)?;
        if n == 0 {
            return Err(ReadError::Gone);
        }
        let before = buf.len();
        buf.extend_from_slice(&chunk[..n]);
        // Blank lines before the request line are skipped, as hyper does.
        let blank = buf
            .iter()
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        buf.drain(..blank);
        if buf.is_empty() {
            continue;
        }
        let started = *started.get_or_insert_with(Instant::now);
        if !may_end_head(&buf, before.saturating_sub(blank)) {
            if buf.len() > MAX_HEAD {
                return Err(ReadError::Reply(http::bad_request(
                    "Request head too large.",
                )));
            }
            continue;
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                return Ok(ReadHead {
                    method: request.method.unwrap_or_default().to_owned(),
                    target: request.path.unwrap_or_default().to_owned(),
                    version: match request.version {
                        Some(0) => Version::Http10,
                        _ => Version::Http11,
                    },
                    headers: request
                        .headers
                        .iter()
                        .map(|h| (h.name.to_owned(), h.value.to_vec()))
                        .collect(),
                    started,
                    rest: buf[len..].to_vec(),
                });
            }
            Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => {}
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

/// Reads the request body framed as `length` (`rest` is what came with the head), at
/// most `limit` bytes, before `deadline`.
fn read_body(
    stream: &mut TcpStream,
    rest: &[u8],
    length: BodyLength,
    limit: u64,
    deadline: Instant,
) -> Result<Vec<u8>, ReadError> {
    let mut decoder = BodyDecoder::new(length, limit);
    let mut body = Vec::new();
    let mut chunk = vec![0u8; CLIENT_READ];
    let mut input = rest;
    loop {
        if !input.is_empty() {
            decoder
                .decode(input, |data| body.extend_from_slice(data))
                .map_err(|e| ReadError::Reply(e.reply()))?;
        }
        if decoder.is_done() {
            return Ok(body);
        }
        let n = match read_until(stream, &mut chunk, deadline) {
            Ok(0) => return Err(ReadError::Gone),
            Ok(n) => n,
            Err(e) if is_timeout(&e) => return Err(ReadError::Reply(http::request_timeout())),
            Err(_) => return Err(ReadError::Gone),
        };
        input = &chunk[..n];
    }
}

/// Writes a complete reply and closes the connection.
fn write_reply(
    stream: &mut TcpStream,
    reply: Reply,
    head_only: bool,
    answer: &Answer,
    record: &mut RequestRecord,
) {
    let reply = reply.render(&answer.context);
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

/// The status line, the given headers and `connection: close`; the caller adds the
/// framing header and the blank line.
fn status_line(status: u16, headers: &[(&'static str, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", http::reason(status)).into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"connection: close\r\n");
    out
}

fn models(server: &Server) -> Reply {
    let agent = &server.settings.agent;
    match server
        .models
        .get(agent::PROBE_TIMEOUT * 2, || agent.list_models())
    {
        Ok(body) => Reply::json(200, body.to_vec()),
        Err(why) => http::models_unavailable(&why),
    }
}

/// What the helper threads of a run report.
enum Event {
    /// From the run's agent process of this generation (0, then 1 for the fresh run that
    /// replaces a resumed chat the agent could not continue).
    Agent(u32, AgentEvent),
    ClientGone,
    Shutdown,
}

/// What an agent process's helper threads report.
enum AgentEvent {
    Stdout(Vec<u8>),
    StdoutEof,
    Stderr(Vec<u8>),
    StderrEof,
    /// The pipe thread ended: everything it read was sent before.
    PipesClosed,
    Exited(std::process::ExitStatus),
}

/// A request whose head was checked and whose body is still to be read.
struct Arriving<'a> {
    stream: TcpStream,
    request: &'a RequestHead<'a>,
    /// What was read past the head.
    rest: Vec<u8>,
    /// The whole request's deadline.
    deadline: Instant,
    answer: Answer,
}

impl Arriving<'_> {
    /// The body, at most `limit` bytes, or why it cannot be had (framing, size, deadline,
    /// shutdown, the client gone).
    fn read(&mut self, server: &Server, limit: usize) -> Result<Vec<u8>, ReadError> {
        let request = self.request;
        let length = body_length(request.version, request.headers, limit as u64)
            .map_err(|e| ReadError::Reply(e.reply()))?;
        if server.shutting_down.load(Ordering::SeqCst) {
            return Err(ReadError::Reply(http::shutting_down()));
        }
        // The client waits for a go-ahead before sending the body.
        if request.expects_continue() && self.rest.is_empty() && length != BodyLength::Length(0) {
            let go = format!("HTTP/1.1 100 {}\r\n\r\n", http::reason(100));
            self.stream
                .write_all(go.as_bytes())
                .map_err(|_| ReadError::Gone)?;
        }
        read_body(
            &mut self.stream,
            &self.rest,
            length,
            limit as u64,
            self.deadline,
        )
    }
}

/// An agent run for a request in `dialect` from `caller`.
fn run(
    server: &Server,
    mut arriving: Arriving<'_>,
    dialect: Dialect,
    caller: &CallerIds,
    mut record: RequestRecord,
) {
    let body = arriving.read(server, server.settings.config.request_limits.max_body_bytes);
    let Arriving {
        mut stream, answer, ..
    } = arriving;
    let body = match body {
        Ok(body) => body,
        Err(ReadError::Gone) => return,
        Err(ReadError::Reply(reply)) => {
            return write_reply(&mut stream, reply, false, &answer, &mut record);
        }
    };
    let Some(slot) = server.slots.try_take() else {
        let reply = http::busy(server.settings.max_concurrent);
        return write_reply(&mut stream, reply, false, &answer, &mut record);
    };
    let body = server.settings.model_aliases.apply(&body);
    let params = server.ids.params(record.number, &server.clock);
    if let Some(warm) = &server.warm {
        record.agent = AgentEnd::Warm;
        let config = &server.settings.config;
        let (ticket, how) = match warm.start_turn(dialect, &body, config, params, caller) {
            Ok(started) => started,
            Err(reply) => return write_reply(&mut stream, reply, false, &answer, &mut record),
        };
        record.conversation = Some(how);
        let turn = AcpTurn {
            server,
            warm,
            ticket,
            stream,
            answer,
            record,
            sink: Sink::default(),
        };
        turn.serve();
        drop(slot);
        return;
    }
    let config = &server.settings.config;
    let (bridge, how) = server
        .conversations
        .bridge(dialect, &body, config, params, caller);
    record.conversation = Some(how);
    let (events_tx, events) = mpsc::sync_channel(PIPE_CHUNKS);
    let number = record.number;
    server
        .runs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(number, events_tx.clone());
    let mut run = Run {
        server,
        bridge,
        stream,
        answer,
        lifecycle: Lifecycle::new(server.settings.kill_grace),
        agent: None,
        generation: 0,
        // Only a resumed chat may be replaced by a fresh run.
        respawn_events: (how == Continuation::Resumed).then(|| events_tx.clone()),
        events,
        record,
        sink: Sink::default(),
        written: 0,
        stalled_since: None,
        ended: false,
        client_gone: false,
        shutting_down: false,
    };
    run.start(&events_tx);
    drop(events_tx);
    run.serve();
    // The response is over (or its client gone): the chat is parked for the
    // conversation's next request, or let go — before the client can have the end.
    server.conversations.end_turn(&mut run.bridge);
    // What the client can take now goes before the agent is reaped and the slot freed
    // (once the slot is free, a server shutting down may exit); the rest after.
    run.write_ready();
    run.finish_agent();
    server
        .runs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&number);
    drop(slot);
    run.finish_response();
}

/// One request's turn on the warm ACP agent, on the connection's thread.
struct AcpTurn<'a> {
    server: &'a Server,
    warm: &'a Warm,
    ticket: Ticket,
    stream: TcpStream,
    answer: Answer,
    record: RequestRecord,
    sink: Sink,
}

impl AcpTurn<'_> {
    /// Writes the turn's outputs as they come until its end; a client gone (hung up, or
    /// a write failed or stalled past `--write-timeout-ms`) cancels the session.
    fn serve(mut self) {
        let gone = watch_hang_up(&self.stream, self.server.warm.clone(), self.ticket);
        let _ = self
            .stream
            .set_write_timeout(Some(self.server.settings.write_timeout));
        loop {
            let (sink, answer, record) = (&mut self.sink, &self.answer, &mut self.record);
            let ended = self.warm.poll(&self.ticket, |output| {
                sink.frame(output, answer, record, false);
            });
            if !self.sink.out.is_empty() {
                let written = self.stream.write_all(&self.sink.out);
                self.sink.out.clear();
                if written.is_err() && !ended {
                    self.gone();
                    break;
                }
            }
            if ended {
                break;
            }
            if gone.load(Ordering::SeqCst) {
                self.gone();
                break;
            }
            self.warm.wait(&self.ticket, Instant::now() + WRITE_SLICE);
        }
        let _ = self.stream.shutdown(Shutdown::Both);
        self.record.log();
    }

    fn gone(&mut self) {
        self.record.end = ResponseEnd::ClientGone;
        self.warm.client_gone(&self.ticket);
    }
}

/// A request of the warm agent to a session's MCP server: its body read (bounded, before
/// the request's deadline), then its response written as the core gives it — whole, or
/// an SSE stream that stays open while a call waits (no request deadline cuts it; the
/// core's keep-alives and the session's end bound it, `--write-timeout-ms` every write).
fn mcp_exchange(
    server: &Server,
    mut arriving: Arriving<'_>,
    token: &str,
    fields: &mcp::Fields,
    mut record: RequestRecord,
) {
    let body = arriving.read(server, mcp::body_limit(&server.settings));
    let Arriving {
        mut stream, answer, ..
    } = arriving;
    let body = match body {
        Ok(body) => body,
        Err(ReadError::Gone) => return,
        Err(ReadError::Reply(reply)) => {
            return write_reply(&mut stream, reply, false, &answer, &mut record);
        }
    };
    let ticket = match &server.warm {
        Some(warm) => warm.mcp_request(
            token,
            fields.authorization.as_deref(),
            &fields.request(&body),
        ),
        None => Err(McpRefusal::NotFound),
    };
    let (Some(warm), Ok(ticket)) = (&server.warm, ticket) else {
        let reply = mcp::refused(ticket.err().unwrap_or(McpRefusal::NotFound));
        return write_reply(&mut stream, reply, false, &answer, &mut record);
    };
    let exchange = McpAnswer {
        server,
        warm,
        ticket,
        stream,
        answer,
        record,
        head: None,
        streaming: false,
        body: Vec::new(),
        out: Vec::new(),
    };
    exchange.serve();
}

/// One MCP exchange of the warm agent, on the connection's thread.
struct McpAnswer<'a> {
    server: &'a Server,
    warm: &'a Warm,
    ticket: Ticket,
    stream: TcpStream,
    answer: Answer,
    record: RequestRecord,
    /// The head of a whole answer, held until its body is complete.
    head: Option<mcp::ResponseHead>,
    /// The head of an SSE stream went: body bytes are written as they come.
    streaming: bool,
    /// A whole answer's body.
    body: Vec<u8>,
    /// Bytes for the agent.
    out: Vec<u8>,
}

impl McpAnswer<'_> {
    /// Writes the exchange's outputs as they come until its end; the agent hanging up
    /// (or a write failing or stalling past `--write-timeout-ms`) gives up its call.
    fn serve(mut self) {
        let gone = watch_hang_up(&self.stream, self.server.warm.clone(), self.ticket);
        let _ = self
            .stream
            .set_write_timeout(Some(self.server.settings.write_timeout));
        let mut started = false;
        loop {
            let mut outputs = Vec::new();
            let ended = self.warm.poll_mcp(&self.ticket, |output| {
                outputs.push(match output {
                    ExchangeOutput::Head(head) => {
                        McpOutput::Head(mcp::ResponseHead::of(&head, &self.answer.context))
                    }
                    ExchangeOutput::Body(bytes) => McpOutput::Body(bytes.to_vec()),
                    ExchangeOutput::End => McpOutput::End,
                });
            });
            for output in outputs {
                started |= matches!(output, McpOutput::Head(..));
                self.frame(output);
            }
            if ended && !started {
                // Its session ended before it was answered.
                let reply = mcp::refused(McpRefusal::NotFound);
                let (stream, answer, record) = (&mut self.stream, &self.answer, &mut self.record);
                return write_reply(stream, reply, false, answer, record);
            }
            if ended {
                // Ended by its server going: the body as it stands.
                self.frame(McpOutput::End);
            }
            if !self.out.is_empty() {
                let written = self.stream.write_all(&self.out);
                self.out.clear();
                if written.is_err() && !ended {
                    self.gone();
                    break;
                }
            }
            if ended {
                break;
            }
            if gone.load(Ordering::SeqCst) {
                self.gone();
                break;
            }
            self.warm.wait(&self.ticket, Instant::now() + WRITE_SLICE);
        }
        let _ = self.stream.shutdown(Shutdown::Both);
        self.record.log();
    }

    /// Adds one output to what goes to the agent: an SSE stream's head and chunks as
    /// they come, a whole answer at its end.
    fn frame(&mut self, output: McpOutput) {
        let chunked = self.answer.version == Version::Http11;
        match output {
            McpOutput::Head(head) => {
                self.record.status = head.status;
                if head.stream {
                    self.streaming = true;
                    self.out
                        .extend_from_slice(&status_line(head.status, &head.headers));
                    if chunked {
                        self.out
                            .extend_from_slice(b"transfer-encoding: chunked\r\n");
                    }
                    self.out.extend_from_slice(b"\r\n");
                } else {
                    self.head = Some(head);
                }
            }
            McpOutput::Body(bytes) if self.streaming => {
                self.record.bytes_out += bytes.len() as u64;
                if chunked {
                    let size = format!("{:x}\r\n", bytes.len());
                    self.out.extend_from_slice(size.as_bytes());
                }
                self.out.extend_from_slice(&bytes);
                if chunked {
                    self.out.extend_from_slice(b"\r\n");
                }
            }
            McpOutput::Body(bytes) => self.body.extend_from_slice(&bytes),
            McpOutput::End => {
                if let Some(head) = self.head.take() {
                    self.out
                        .extend_from_slice(&status_line(head.status, &head.headers));
                    let length = format!("content-length: {}\r\n\r\n", self.body.len());
                    self.out.extend_from_slice(length.as_bytes());
                    self.out.extend_from_slice(&self.body);
                    self.record.bytes_out = self.body.len() as u64;
                } else if self.streaming && chunked {
                    self.streaming = false;
                    self.out.extend_from_slice(b"0\r\n\r\n");
                }
            }
        }
    }

    fn gone(&mut self) {
        self.record.end = ResponseEnd::ClientGone;
        self.warm.mcp_gone(&self.ticket);
    }
}

/// An MCP exchange's output, owned.
enum McpOutput {
    Head(mcp::ResponseHead),
    Body(Vec<u8>),
    End,
}

/// One request's agent and bridge, on the connection's thread.
struct Run<'a> {
    server: &'a Server,
    bridge: Bridge,
    stream: TcpStream,
    answer: Answer,
    /// The agent process's life: what to signal, when its exit goes to the bridge.
    lifecycle: Lifecycle,
    agent: Option<Agent>,
    /// Which agent process `agent` is: events of an earlier one are dropped.
    generation: u32,
    /// Where a replacement process's helpers report, while one may be needed.
    respawn_events: Option<SyncSender<Event>>,
    events: Receiver<Event>,
    record: RequestRecord,
    /// The response as bytes for the client.
    sink: Sink,
    /// `sink.out` is written from here on.
    written: usize,
    /// Since when the writes of `out` have made no progress.
    stalled_since: Option<Instant>,
    ended: bool,
    client_gone: bool,
    shutting_down: bool,
}

/// The agent process of a run; the child itself belongs to its waiter thread, its pipes
/// to the pipe thread.
struct Agent {
    /// Dropping it stops the pipe thread, which takes what the pipes hold and closes them.
    cancel: Option<OwnedFd>,
    /// Whether the pipe thread may still send (until [`AgentEvent::PipesClosed`]).
    pumping: bool,
}

impl Run<'_> {
    /// Spawns the agent and its helper threads, and the client watcher.
    fn start(&mut self, events: &SyncSender<Event>) {
        if let Some(invocation) = self.bridge.invocation() {
            self.record.set_model(invocation);
        }
        self.spawn(events);
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

    /// Starts the agent run the bridge's invocation describes (if any) as the leader of a
    /// process group of its own, with a lifecycle of its own and helper threads that
    /// report to `events` under the run's current generation.
    fn spawn(&mut self, events: &SyncSender<Event>) {
        let Some(invocation) = self.bridge.invocation() else {
            return;
        };
        self.lifecycle = Lifecycle::new(self.server.settings.kill_grace);
        self.agent = None;
        let generation = self.generation;
        let prompt = invocation.stdin.clone();
        let mut command = self.server.settings.agent.command(invocation);
        let spawned = reaper::spawn(|child: &Child| Some(child.id()), || command.spawn())
            .and_then(|child| Ok((child, nix::unistd::pipe()?)));
        match spawned {
            Ok((mut child, (cancelled, cancel))) => {
                let group = child.id();
                if let Some(mut stdin) = child.stdin.take() {
                    // Apart from the reads: a large prompt must not block them.
                    helper(move || {
                        let _ = stdin.write_all(&prompt);
                    });
                }
                let mut pumping = false;
                if let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) {
                    let tx = events.clone();
                    pumping = helper(move || pump(stdout, stderr, cancelled, &tx, generation));
                }
                let tx = events.clone();
                helper(move || {
                    let status = child.wait().unwrap_or_default();
                    reaper::release(group);
                    let _ = tx.send(Event::Agent(generation, AgentEvent::Exited(status)));
                });
                self.lifecycle.handle_spawned(group);
                self.agent = Some(Agent {
                    cancel: Some(cancel),
                    pumping,
                });
            }
            Err(e) => {
                let program = &self.server.settings.agent.path;
                self.lifecycle.handle_spawn_failed(program, &e);
            }
        }
    }

    /// The bridge replaces a resumed chat the agent could not continue by a fresh run.
    /// The run it replaces was reported exited, so it is reaped, its group signalled, its
    /// pipes read to their end or given up: the new one starts, as a new generation whose
    /// helpers report alone.
    fn respawn(&mut self) {
        debug_assert!(self.lifecycle.agent_end().is_some());
        // Held for every resumed run, the only kind the bridge replaces.
        debug_assert!(self.respawn_events.is_some());
        let Some(events) = self.respawn_events.take() else {
            return;
        };
        if let Some(agent) = &mut self.agent {
            agent.cancel = None;
        }
        self.record.respawns += 1;
        self.generation += 1;
        self.spawn(&events);
    }

    /// Feeds the bridge until its end (or the client's).
    fn serve(&mut self) {
        while !self.ended && !self.client_gone {
            if self.overdue() {
                // Before more messages: an agent that always has output ready must not
                // keep `--max-duration-ms` (or the stop sequence, or the end of the exit
                // drain) from being served.
                self.timers();
            } else if self.written < self.sink.out.len() {
                self.write_pending();
            } else {
                self.lifecycle.resume_reading(Instant::now());
                match recv_until(&self.events, self.next_due()) {
                    Ok(event) => self.handle(event),
                    Err(RecvTimeoutError::Timeout) => self.timers(),
                    Err(RecvTimeoutError::Disconnected) => {
                        // Nothing can report any more (no agent): end by the bridge's rules.
                        self.bridge.client_gone(self.server.clock.now_ms());
                        self.client_gone = true;
                    }
                }
            }
            self.drain();
        }
    }

    /// Writes what is waiting for the client until it is all out or a deadline comes,
    /// then serves the deadline. The agent's messages wait meanwhile (it is paused).
    fn write_pending(&mut self) {
        let now = Instant::now();
        let stall_at = *self.stalled_since.get_or_insert(now) + self.server.settings.write_timeout;
        // The agent's output waits meanwhile, and so does the end of the exit drain.
        self.lifecycle.pause_reading();
        let due = self
            .next_due()
            .map_or(stall_at, |due| due.min(stall_at))
            .min(now + WRITE_SLICE);
        let timeout = due
            .saturating_duration_since(now)
            .max(Duration::from_millis(1));
        let _ = self.stream.set_write_timeout(Some(timeout));
        match self.stream.write(&self.sink.out[self.written..]) {
            Ok(0) => self.gone(),
            Ok(n) => {
                self.written += n;
                self.stalled_since = None;
                if self.written == self.sink.out.len() {
                    self.sink.out.clear();
                    self.written = 0;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {
                if Instant::now() >= stall_at {
                    // It has not read for --write-timeout-ms: as good as gone.
                    self.gone();
                    return;
                }
                if self.server.shutting_down.load(Ordering::SeqCst) {
                    self.shutdown();
                }
                self.timers();
            }
            Err(_) => self.gone(),
        }
    }

    /// Writes what the socket takes without waiting.
    fn write_ready(&mut self) {
        use nix::sys::socket::{MsgFlags, send};
        use std::os::fd::AsRawFd;
        while !self.client_gone && self.written < self.sink.out.len() {
            let pending = &self.sink.out[self.written..];
            match send(
                self.stream.as_raw_fd(),
                pending,
                MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
            ) {
                Ok(n) if n > 0 => self.written += n,
                Err(nix::errno::Errno::EINTR) => {}
                // Full (the rest waits) or failed (the final write sees it).
                _ => return,
            }
        }
    }

    /// The earliest of the bridge's deadline and the lifecycle's.
    fn next_due(&self) -> Option<Instant> {
        let bridge = self
            .bridge
            .poll_timeout()
            .map(|ms| self.server.clock.instant(ms));
        [bridge, self.lifecycle.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether the bridge's deadline or the lifecycle's has passed.
    fn overdue(&self) -> bool {
        self.next_due().is_some_and(|at| Instant::now() >= at)
    }

    /// Serves the bridge's deadline and the lifecycle's, if they have passed.
    fn timers(&mut self) {
        self.bridge.handle_timeout(self.server.clock.now_ms());
        self.lifecycle.handle_timeout(Instant::now());
    }

    fn handle(&mut self, event: Event) {
        let now = self.server.clock.now_ms();
        let event = match event {
            Event::ClientGone => return self.gone(),
            Event::Shutdown => return self.shutdown(),
            // A process this run replaced: it is done with.
            Event::Agent(generation, _) if generation != self.generation => return,
            Event::Agent(_, event) => event,
        };
        match event {
            // Read before the pipes were closed, after the exit was reported: dropped.
            AgentEvent::Stdout(_) | AgentEvent::Stderr(_) if !self.lifecycle.wants_output() => {}
            AgentEvent::Stdout(bytes) => {
                let _ = self.bridge.push_stdout(&bytes, now);
            }
            AgentEvent::Stderr(bytes) => {
                let _ = self.bridge.push_stderr(&bytes, now);
            }
            AgentEvent::StdoutEof => self.lifecycle.handle_stdout_eof(),
            AgentEvent::StderrEof => self.lifecycle.handle_stderr_eof(),
            AgentEvent::PipesClosed => {
                if let Some(agent) = &mut self.agent {
                    agent.pumping = false;
                }
            }
            AgentEvent::Exited(status) => {
                let status = exit_status(status);
                self.lifecycle.handle_exit(status, Instant::now());
            }
        }
    }

    /// The server shuts down.
    fn shutdown(&mut self) {
        if self.shutting_down {
            return;
        }
        self.shutting_down = true;
        self.record.end = ResponseEnd::Shutdown;
        // The bridge ends the response (in-band after the head, 503 before it) and asks
        // for the agent to be stopped.
        self.bridge.shutdown(self.server.clock.now_ms());
    }

    /// The client hung up, a write to it failed, or it stopped reading.
    fn gone(&mut self) {
        if self.ended || self.client_gone {
            return;
        }
        self.client_gone = true;
        self.sink.out.clear();
        self.written = 0;
        if self.record.end == ResponseEnd::Complete {
            self.record.end = ResponseEnd::ClientGone;
        }
        self.bridge.client_gone(self.server.clock.now_ms());
        self.drain();
    }

    /// Takes every output of the bridge, as bytes for the client, and carries out what
    /// the lifecycle asks, until neither has more.
    fn drain(&mut self) {
        loop {
            let (mut stop, mut respawn) = (false, false);
            while let Some(output) = self.bridge.poll_output() {
                let framed =
                    self.sink
                        .frame(output, &self.answer, &mut self.record, self.client_gone);
                match framed {
                    Framed::Stop => stop = true,
                    Framed::Respawn => respawn = true,
                    Framed::End => self.ended = true,
                    Framed::More => {}
                }
            }
            if stop {
                self.lifecycle.stop(Instant::now());
            }
            if respawn {
                self.respawn();
            }
            if !self.act() {
                return;
            }
        }
    }

    /// Carries out what the lifecycle asks; whether the bridge got an input.
    fn act(&mut self) -> bool {
        let mut fed = false;
        while let Some(action) = self.lifecycle.poll_action() {
            let now = self.server.clock.now_ms();
            match action {
                Action::Signal { group, signal } => signal_group(group, signal),
                Action::StopReading => {
                    // The leader is gone; what still holds the pipes (a descendant out of
                    // the group's reach) does not hold the response. What the leader wrote
                    // is what the pipe thread read and what the pipes still hold: it takes
                    // the latter and ends, however late it runs.
                    if let Some(agent) = &mut self.agent {
                        agent.cancel = None;
                    }
                    self.wait_pipes_closed();
                    fed = true;
                }
                Action::Stderr(text) => {
                    let _ = self.bridge.push_stderr(text.as_bytes(), now);
                    fed = true;
                }
                Action::Exited(status) => {
                    let _ = self.bridge.agent_exited(status, now);
                    fed = true;
                }
            }
        }
        fed
    }

    /// Handles the run's events until the pipe thread has sent everything it read and
    /// ended (bounded by [`PIPES_CLOSE`]).
    fn wait_pipes_closed(&mut self) {
        let until = Instant::now() + PIPES_CLOSE;
        while self.agent.as_ref().is_some_and(|agent| agent.pumping) {
            let left = until.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => self.handle(event),
                Err(_) => {
                    tracing::warn!("the agent's pipe thread did not end within {PIPES_CLOSE:?}");
                    return;
                }
            }
        }
    }

    /// After the response: stops the agent if it still runs, and reaps it.
    fn finish_agent(&mut self) {
        if let Some(agent) = &mut self.agent {
            // Nobody reads the pipes any more.
            agent.cancel = None;
            self.lifecycle.release(Instant::now());
            loop {
                while let Some(action) = self.lifecycle.poll_action() {
                    // Released: nothing but signals comes.
                    if let Action::Signal { group, signal } = action {
                        signal_group(group, signal);
                    }
                }
                if self.lifecycle.has_exited() {
                    break;
                }
                let event = recv_until(&self.events, self.lifecycle.poll_timeout());
                let status = match event {
                    Ok(Event::Agent(generation, AgentEvent::Exited(status)))
                        if generation == self.generation =>
                    {
                        status
                    }
                    Ok(_) => continue,
                    Err(RecvTimeoutError::Timeout) => {
                        self.lifecycle.handle_timeout(Instant::now());
                        continue;
                    }
                    // Nothing can report its exit any more.
                    Err(RecvTimeoutError::Disconnected) => Default::default(),
                };
                self.lifecycle
                    .handle_exit(exit_status(status), Instant::now());
            }
        }
        if let Some(end) = self.lifecycle.agent_end() {
            self.record.agent = end;
        }
    }

    /// Writes what is left for the client (it has `--write-timeout-ms` between
    /// progress), closes the connection and logs the request.
    fn finish_response(mut self) {
        if !self.client_gone && self.written < self.sink.out.len() {
            let _ = self
                .stream
                .set_write_timeout(Some(self.server.settings.write_timeout));
            if self
                .stream
                .write_all(&self.sink.out[self.written..])
                .is_err()
            {
                self.record.end = ResponseEnd::ClientGone;
            }
        }
        let _ = self.stream.shutdown(Shutdown::Both);
        self.record.log();
    }
}

/// A response as bytes for the client: a stream's chunks as they come, a whole body at
/// its end.
#[derive(Default)]
struct Sink {
    /// The head, held back for a body that is sent whole (not a stream).
    head: Option<Head>,
    /// A whole body being assembled.
    body: Vec<u8>,
    /// Bytes for the client.
    out: Vec<u8>,
}

/// What an output asks of the caller.
enum Framed {
    More,
    /// Stop the agent.
    Stop,
    /// Start the agent again with the bridge's new invocation.
    Respawn,
    /// The response is complete.
    End,
}

impl Sink {
    /// Adds one output of a bridge (or an ACP turn) to what goes to the client.
    fn frame(
        &mut self,
        output: Output<'_>,
        answer: &Answer,
        record: &mut RequestRecord,
        client_gone: bool,
    ) -> Framed {
        let chunked = answer.version == Version::Http11;
        match output {
            Output::Head(head) => {
                record.status = head.status;
                if is_stream(&head) {
                    let headers = http::head_headers(&head, &answer.context);
                    let line = status_line(head.status, &headers);
                    self.out.extend_from_slice(&line);
                    // HTTP/1.0 clients read to the end of the connection instead.
                    if chunked {
                        self.out
                            .extend_from_slice(b"transfer-encoding: chunked\r\n");
                    }
                    self.out.extend_from_slice(b"\r\n");
                } else {
                    self.head = Some(head);
                }
            }
            Output::Body(bytes) => {
                if self.head.is_some() {
                    self.body.extend_from_slice(bytes);
                } else if !client_gone {
                    record.bytes_out += bytes.len() as u64;
                    if chunked {
                        self.out
                            .extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
                    }
                    self.out.extend_from_slice(bytes);
                    if chunked {
                        self.out.extend_from_slice(b"\r\n");
                    }
                }
            }
            Output::StopAgent => return Framed::Stop,
            Output::Respawn => return Framed::Respawn,
            Output::End => {
                if client_gone {
                    return Framed::End;
                }
                if let Some(head) = self.head.take() {
                    let headers = http::head_headers(&head, &answer.context);
                    let line = status_line(head.status, &headers);
                    self.out.extend_from_slice(&line);
                    self.out.extend_from_slice(
                        format!("content-length: {}\r\n\r\n", self.body.len()).as_bytes(),
                    );
                    self.out.extend_from_slice(&self.body);
                    record.bytes_out = self.body.len() as u64;
                } else if chunked {
                    self.out.extend_from_slice(b"0\r\n\r\n");
                }
                return Framed::End;
            }
        }
        Framed::More
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

/// Watches `stream` for its peer hanging up, on a helper thread: the request was read
/// whole, so end of stream is a hang-up. Then the flag it returns is set and the waiter
/// of `ticket` on the warm agent is woken.
fn watch_hang_up(stream: &TcpStream, warm: Option<Arc<Warm>>, ticket: Ticket) -> Arc<AtomicBool> {
    let gone = Arc::new(AtomicBool::new(false));
    if let (Ok(mut watch), Some(warm)) = (stream.try_clone(), warm) {
        let _ = watch.set_read_timeout(None);
        let flag = Arc::clone(&gone);
        helper(move || {
            let mut sink = [0u8; 512];
            while matches!(watch.read(&mut sink), Ok(n) if n > 0) {}
            flag.store(true, Ordering::SeqCst);
            warm.wake(&ticket);
        });
    }
    gone
}

/// Starts a small helper thread; whether it started.
fn helper(f: impl FnOnce() + Send + 'static) -> bool {
    match std::thread::Builder::new()
        .stack_size(HELPER_STACK)
        .spawn(f)
    {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(%e, "cannot start a helper thread");
            false
        }
    }
}

/// Reads the agent's stdout and stderr until both end or `cancelled` is closed (its
/// other end dropped), sending each chunk as the agent process `generation`'s, then
/// [`AgentEvent::PipesClosed`]. Cancelled, it first takes what the pipes hold at that
/// moment ([`agent::read_held`]): all the leader wrote before its exit that was not read.
fn pump(
    stdout: ChildStdout,
    stderr: ChildStderr,
    cancelled: OwnedFd,
    events: &SyncSender<Event>,
    generation: u32,
) {
    read_pipes(stdout, stderr, &cancelled, events, generation);
    let _ = events.send(Event::Agent(generation, AgentEvent::PipesClosed));
}

/// [`pump`]'s reading.
fn read_pipes(
    stdout: ChildStdout,
    stderr: ChildStderr,
    cancelled: &OwnedFd,
    events: &SyncSender<Event>,
    generation: u32,
) {
    let mut stdout = Some(stdout);
    let mut stderr = Some(stderr);
    let mut out_buf = vec![0u8; STDOUT_READ];
    let mut err_buf = vec![0u8; STDERR_READ];
    while stdout.is_some() || stderr.is_some() {
        let (out_ready, err_ready) = {
            let mut fds = vec![PollFd::new(cancelled.as_fd(), PollFlags::POLLIN)];
            fds.extend(
                stdout
                    .as_ref()
                    .map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN)),
            );
            fds.extend(
                stderr
                    .as_ref()
                    .map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN)),
            );
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
            if ready(&fds[0]) {
                if let Some(pipe) = &stdout {
                    agent::read_held(pipe, &mut out_buf, |bytes| {
                        let chunk = AgentEvent::Stdout(bytes.to_vec());
                        let _ = events.send(Event::Agent(generation, chunk));
                    });
                }
                if let Some(pipe) = &stderr {
                    agent::read_held(pipe, &mut err_buf, |bytes| {
                        let chunk = AgentEvent::Stderr(bytes.to_vec());
                        let _ = events.send(Event::Agent(generation, chunk));
                    });
                }
                return;
            }
            let out_ready = stdout.is_some() && ready(&fds[1]);
            let err_ready = stderr.is_some() && ready(&fds[fds.len() - 1]);
            (out_ready, err_ready)
        };
        if out_ready
            && !read_pipe(
                &mut stdout,
                &mut out_buf,
                events,
                generation,
                AgentEvent::Stdout,
                AgentEvent::StdoutEof,
            )
        {
            return;
        }
        if err_ready
            && !read_pipe(
                &mut stderr,
                &mut err_buf,
                events,
                generation,
                AgentEvent::Stderr,
                AgentEvent::StderrEof,
            )
        {
            return;
        }
    }
}

/// One read from a pipe that poll found ready, sent on; the pipe is closed at its end.
/// False when nobody listens any more.
fn read_pipe(
    pipe: &mut Option<impl Read>,
    buf: &mut [u8],
    events: &SyncSender<Event>,
    generation: u32,
    chunk: fn(Vec<u8>) -> AgentEvent,
    eof: AgentEvent,
) -> bool {
    let Some(reader) = pipe else {
        return true;
    };
    let event = match reader.read(buf) {
        Ok(0) => eof,
        Ok(n) => chunk(buf[..n].to_vec()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => return true,
        Err(_) => eof,
    };
    if matches!(event, AgentEvent::StdoutEof | AgentEvent::StderrEof) {
        *pipe = None;
    }
    events.send(Event::Agent(generation, event)).is_ok()
}
