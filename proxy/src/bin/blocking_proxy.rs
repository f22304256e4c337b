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
//!
//! With `--cursor-mcp` ([`agentwire_proxy::live`]), a request with client tools drives a
//! live chat ([`LiveChat`]) instead of a bridge: the same run, whose agent calls the tools
//! through the MCP endpoint (`/mcp/cursor`). A response that ends inside those calls
//! leaves the agent waiting in them, and the run **parks** on its connection's thread: the
//! chat is parked in the registry, the run in the table and its slot freed before the
//! client can see the end (a client sending its next request at once finds it so), then
//! the request is over — its connection closed, its line logged — while the thread goes
//! on reading the agent's pipes into the chat, serving its MCP requests and deadlines. The
//! conversation's next request is handed to it (with its slot and record); the run
//! attaches it and moves — agent, lifecycle, channel, helper threads reporting on it — to
//! that request's thread, which answers it and, at its end, may park in turn. A request
//! the chat cannot take is handed back once the agent is stopped and reaped, and runs as a
//! live chat of its own (two processes must not hold one chat). A parked agent is stopped
//! when the registry lets its chat go, at shutdown, or ends by itself; its run then leaves
//! the table, answering what was still on its way to it. Other threads reach a live chat's
//! run through its inbox (a queue, and a wake-up on the run's channel that never blocks the
//! sender): the agent's MCP requests, whose outputs go back to their connection threads
//! to be written as the warm agent's are; the attach; the release. An MCP request comes
//! on another path than the agent's output, so the run first asks the pipe thread for
//! what the pipes hold and takes the request after it: what the agent wrote before
//! calling a tool goes to the response before the call ends it. Parked agents hold no
//! slot, so shutdown also waits (bounded) for every live chat's run to end before the
//! configuration files it wrote into the workspace are removed.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, ChildStderr, ChildStdout, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use agentwire::acp::McpRefusal;
use agentwire::api::{ErrorKind, ErrorReply};
use agentwire::bridge::{Bridge, BridgeParams, Dialect, Head, Output, Prepared};
use agentwire::live_chat::{LiveChat, NotAttached};
use agentwire::mcp::{ExchangeId, ExchangeOutput};
use agentwire::registry::Decision;
use agentwire_proxy::acp::{Ticket, Warm};
use agentwire_proxy::agent::{self, exit_status, signal_group};
use agentwire_proxy::connections::{Admitted, Connections, Lane, OVERFLOW_TIMEOUT};
use agentwire_proxy::conversations::{CallerIds, Continuation, Conversations, Decided};
use agentwire_proxy::framing::{BodyDecoder, BodyLength, Version, body_length};
use agentwire_proxy::http::{self, Outcome, Reply, RequestHead, ResponseContext, Target};
use agentwire_proxy::lifecycle::{Action, Lifecycle};
use agentwire_proxy::live::{self, Driven, LiveFiles, LiveTable, McpStep};
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
    slots: Arc<Slots>,
    models: ModelCache,
    shutting_down: AtomicBool,
    /// Every run in progress (parked live chats' included), to tell it about shutdown.
    runs: Mutex<HashMap<u64, SyncSender<Event>>>,
    /// With `--agent-protocol acp`: the warm agent every request runs on.
    warm: Option<Arc<Warm>>,
    /// The agent chats parked between the requests of their conversations.
    conversations: Conversations,
    /// With `--cursor-mcp`: the live chats.
    live: Option<Arc<LiveState>>,
}

/// The live chats (`--cursor-mcp`): each a run, answering a request or parked inside a
/// tool call, reached through its [`Inbox`].
struct LiveState {
    table: LiveTable<Inbox>,
    /// Taken to signal `ended`, after the table changed.
    ending: Mutex<()>,
    /// Signalled when a live chat's run ends.
    ended: Condvar,
    /// The configuration files in the workspace, removed at exit.
    files: Mutex<Option<LiveFiles>>,
}

impl LiveState {
    /// A run left the table.
    fn run_ended(&self) {
        let _ending = self.ending.lock().unwrap_or_else(|e| e.into_inner());
        self.ended.notify_all();
    }

    /// Waits until every live chat's run has ended; false if `limit` passed first.
    fn wait_empty(&self, limit: Duration) -> bool {
        let ending = self.ending.lock().unwrap_or_else(|e| e.into_inner());
        let _ending = self
            .ended
            .wait_timeout_while(ending, limit, |_| !self.table.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        self.table.is_empty()
    }
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
    // Before the banner: a client told the proxy is up finds the files in place.
    let live = match &settings.live {
        Some(live) => {
            let url = live::url(&mcp::endpoint(bound));
            match LiveFiles::write(&live.workspace, &url, &live.config) {
                Ok(files) => Some(Arc::new(LiveState {
                    table: LiveTable::default(),
                    ending: Mutex::new(()),
                    ended: Condvar::new(),
                    files: Mutex::new(Some(files)),
                })),
                Err(e) => {
                    eprintln!("blocking_proxy: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        None => None,
    };
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
        slots: Arc::new(Slots::new(settings.max_concurrent)),
        models: ModelCache::new(settings.models_ttl),
        conversations: Conversations::new(settings.conversations.clone(), clock),
        settings,
        clock,
        ids: RequestIds::new(),
        shutting_down: AtomicBool::new(false),
        runs: Mutex::new(HashMap::new()),
        warm,
        live,
    });
    if let Some(live) = server.live.clone() {
        // A chat the registry lets go (expired, evicted) has its parked agent stopped.
        server.conversations.on_released(Box::new(move |chat| {
            if let Some(inbox) = live.table.parked_chat(chat) {
                let _ = inbox.push(LiveInput::Release, |input| input);
            }
        }));
    }
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
    if let Some(live) = &server.live {
        // Parked agents hold no slot: their runs end once they are stopped and reaped.
        if !live.wait_empty(limit) {
            tracing::warn!("parked agents still running after {limit:?}");
        }
        drop(live.files.lock().unwrap_or_else(|e| e.into_inner()).take());
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
struct Slot(Arc<Slots>);

impl Slots {
    fn new(max: u32) -> Slots {
        Slots {
            max,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if *used >= self.max {
            return None;
        }
        *used += 1;
        Some(Slot(Arc::clone(self)))
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

impl Drop for Slot {
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

fn connection(server: &Arc<Server>, mut stream: TcpStream, admitted: Admitted) {
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
            return run(server, arriving, dialect, &caller, record, admitted);
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
            return mcp_exchange(server, arriving, &token, fields, record);
        }
        Outcome::Health { detailed } => {
            let warm = Warm::health_of(server.warm.as_ref(), detailed);
            let conversations = detailed.then(|| match &server.warm {
                Some(warm) => warm.conversations_health(),
                None => {
                    let mut health = server.conversations.health();
                    if let Some(live) = &server.live {
                        live::add_health(&mut health, &live.table);
                    }
                    health
                }
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
    /// The client of the request of this number hung up.
    ClientGone(u64),
    Shutdown,
    /// A live chat's run has inputs in its [`Inbox`].
    Live,
}

/// What reaches a live chat's run from outside it.
enum LiveInput {
    /// A request of its agent to the MCP endpoint; its outputs go to `reply`.
    Mcp(Box<McpInput>),
    /// The agent hung up on this exchange.
    McpGone(ExchangeId),
    /// The conversation's next request, for a parked chat.
    Attach(Box<Attach>),
    /// The registry let the chat go: a parked agent is stopped.
    Release,
}

/// A request of a live chat's agent to the MCP endpoint, for its run.
struct McpInput {
    fields: mcp::Fields,
    body: Vec<u8>,
    context: ResponseContext,
    /// Where the exchange's outputs go.
    reply: mpsc::Sender<McpStep>,
}

/// The conversation's next request, handed to the parked run of its chat.
struct Attach {
    dialect: Dialect,
    prepared: Prepared,
    decision: Decision,
    params: BridgeParams,
    slot: Slot,
    record: RequestRecord,
    /// The run, now answering the request (the connection's thread serves it); or the
    /// request back, to run on its own.
    reply: mpsc::Sender<Result<Box<Run>, Box<Rejected>>>,
}

/// A request a parked run did not take (its agent stopped and reaped first).
struct Rejected {
    back: NotAttached,
    slot: Slot,
    record: RequestRecord,
}

/// Where a live chat's run takes inputs from other threads: they queue here, and the run
/// is woken on its channel. Closed (each input handed back) once the run ends.
#[derive(Clone)]
struct Inbox(Arc<InboxShared>);

struct InboxShared {
    queue: Mutex<Queue>,
    wake: SyncSender<Event>,
}

struct Queue {
    closed: bool,
    inputs: VecDeque<LiveInput>,
}

impl Inbox {
    fn new(wake: SyncSender<Event>) -> Inbox {
        Inbox(Arc::new(InboxShared {
            queue: Mutex::new(Queue {
                closed: false,
                inputs: VecDeque::new(),
            }),
            wake,
        }))
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `value` (as `input(value)`) for the run and wakes it; `value` back once the
    /// run has ended. Never blocks.
    fn push<T>(&self, value: T, input: impl FnOnce(T) -> LiveInput) -> Result<(), T> {
        let mut queue = self.queue();
        if queue.closed {
            return Err(value);
        }
        queue.inputs.push_back(input(value));
        drop(queue);
        // A full channel holds events the run takes first; it looks here after each.
        let _ = self.0.wake.try_send(Event::Live);
        Ok(())
    }

    /// The next input.
    fn take(&self) -> Option<LiveInput> {
        self.queue().inputs.pop_front()
    }

    /// Closes the inbox: what is still queued, to answer.
    fn close(&self) -> VecDeque<LiveInput> {
        let mut queue = self.queue();
        queue.closed = true;
        std::mem::take(&mut queue.inputs)
    }
}

/// What an agent process's helper threads report.
enum AgentEvent {
    Stdout(Vec<u8>),
    StdoutEof,
    Stderr(Vec<u8>),
    StderrEof,
    /// The pipe thread ended: everything it read was sent before.
    PipesClosed,
    /// What the pipes held when the run asked ([`Agent::sync`]) was sent before.
    Synced,
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
    server: &Arc<Server>,
    mut arriving: Arriving<'_>,
    dialect: Dialect,
    caller: &CallerIds,
    mut record: RequestRecord,
    admitted: Admitted,
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
    let (driven, slot, record) = match server
        .conversations
        .decide(dialect, &body, config, params, caller)
    {
        Decided::Invalid(bridge) => {
            record.conversation = Some(Continuation::Invalid);
            (Driven::Bridge(Box::new(bridge)), slot, record)
        }
        Decided::Parsed {
            prepared,
            decision,
            how,
        } => {
            record.conversation = Some(how);
            match &server.live {
                Some(live) if LiveChat::serves(&prepared) => {
                    let arriving = (dialect, prepared, decision, params);
                    match live_chat(server, live, arriving, slot, record) {
                        Live::Attached(mut run) => {
                            run.resume(stream, answer, admitted);
                            return answer_request(run);
                        }
                        Live::Own(chat, slot, record) => (Driven::Live(chat), slot, record),
                        Live::Failed(reply, mut record) => {
                            return write_reply(&mut stream, reply, false, &answer, &mut record);
                        }
                    }
                }
                _ => {
                    let bridge = Bridge::continuing(dialect, prepared, decision, config, params);
                    (Driven::Bridge(Box::new(bridge)), slot, record)
                }
            }
        }
    };
    let run = Run::start(server, driven, stream, answer, record, slot, admitted);
    answer_request(run);
}

/// How a request with client tools under `--cursor-mcp` goes on.
enum Live {
    /// The parked run of its chat took it, and answers it from now on.
    Attached(Box<Run>),
    /// A live chat of its own (fresh, or resuming the chat with `--resume`).
    Own(Box<LiveChat>, Slot, RequestRecord),
    /// Answered with this instead.
    Failed(Reply, RequestRecord),
}

/// A request with client tools under `--cursor-mcp`: the parked run of its chat goes on
/// into it when it can (its results answer the calls the agent waits in); otherwise a
/// live chat of its own starts, once a parked agent that could not take it has been
/// stopped and reaped (two processes must not hold one chat).
fn live_chat(
    server: &Arc<Server>,
    live: &LiveState,
    (dialect, prepared, decision, params): (Dialect, Prepared, Decision, BridgeParams),
    slot: Slot,
    record: RequestRecord,
) -> Live {
    let parked = match &decision {
        Decision::Resume { resume, .. } => live.table.parked_chat(&resume.agent_session),
        _ => None,
    };
    let (prepared, decision, slot, record) = match parked {
        None => (prepared, decision, slot, record),
        Some(inbox) => {
            let (reply, answered) = mpsc::channel();
            let (number, route) = (record.number, record.route.clone());
            let attach = Box::new(Attach {
                dialect,
                prepared,
                decision,
                params,
                slot,
                record,
                reply,
            });
            match inbox.push(attach, LiveInput::Attach) {
                // The run ended meanwhile: the request runs on its own.
                Err(attach) => {
                    let Attach {
                        prepared,
                        decision,
                        slot,
                        record,
                        ..
                    } = *attach;
                    (prepared, decision, slot, record)
                }
                // The run answers every attach it takes, within its bounded waits.
                Ok(()) => match answered.recv_timeout(attach_limit(&server.settings)) {
                    Ok(Ok(run)) => return Live::Attached(run),
                    Ok(Err(rejected)) => {
                        let Rejected { back, slot, record } = *rejected;
                        (back.prepared, back.decision, slot, record)
                    }
                    Err(_) => {
                        tracing::warn!("a parked agent's run did not take a request in time");
                        let mut record = RequestRecord::new(number, "-", "-");
                        record.route = route;
                        let error = ErrorReply::new(
                            ErrorKind::Unavailable,
                            "The agent of this conversation did not answer in time. Retry shortly.",
                            "agent_unavailable",
                        );
                        return Live::Failed(Reply::error(503, error), record);
                    }
                },
            }
        }
    };
    let entropy = match mcp::entropy() {
        Ok(entropy) => entropy,
        Err(reply) => return Live::Failed(reply, record),
    };
    let settings = &server.settings;
    let live_config = &settings.live.as_ref().expect("live chats are on").config;
    let chat = LiveChat::start(
        dialect,
        prepared,
        decision,
        &settings.config,
        live_config,
        params,
        entropy,
    );
    Live::Own(Box::new(chat), slot, record)
}

/// The longest a parked run takes to answer an attach: the tail of its last response
/// written, its agent stopped and reaped, its pipes closed.
fn attach_limit(settings: &Settings) -> Duration {
    settings.write_timeout + settings.kill_grace * 2 + PIPES_CLOSE + Duration::from_secs(5)
}

/// Answers the run's request to its end. A live chat's run whose agent waits inside the
/// client's tool calls then parks on this thread; any other run stops and reaps its
/// agent, frees its slot and ends.
fn answer_request(mut run: Box<Run>) {
    run.serve();
    // The response is over (or its client gone): the chat is parked for the
    // conversation's next request, or let go — before the client can have the end. A
    // live chat's run parks with it, also before: a client sending its next request at
    // once finds it.
    if run.end_turn() && run.parks() {
        return run.park();
    }
    // What the client can take now goes before the agent is reaped and the slot freed
    // (once the slot is free, a server shutting down may exit); the rest after.
    run.write_ready();
    run.finish_agent();
    run.unregister();
    run.slot = None;
    run.close_connection();
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
        let (warm, ticket) = (self.server.warm.clone(), self.ticket);
        let gone = watch_hang_up(&self.stream, move || {
            if let Some(warm) = warm {
                warm.wake(&ticket);
            }
        });
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
    fields: mcp::Fields,
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
    if let (live::TOKEN, Some(live)) = (token, &server.live) {
        return live_mcp(server, live, (stream, answer), body, fields, record);
    }
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
        frames: McpFrames::default(),
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
    frames: McpFrames,
}

impl McpAnswer<'_> {
    /// Writes the exchange's outputs as they come until its end; the agent hanging up
    /// (or a write failing or stalling past `--write-timeout-ms`) gives up its call.
    fn serve(mut self) {
        let (warm, ticket) = (self.server.warm.clone(), self.ticket);
        let gone = watch_hang_up(&self.stream, move || {
            if let Some(warm) = warm {
                warm.wake(&ticket);
            }
        });
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
                self.frames.frame(output, &self.answer, &mut self.record);
            }
            if ended && !started {
                // Its session ended before it was answered.
                let reply = mcp::refused(McpRefusal::NotFound);
                let (stream, answer, record) = (&mut self.stream, &self.answer, &mut self.record);
                return write_reply(stream, reply, false, answer, record);
            }
            if ended {
                // Ended by its server going: the body as it stands.
                self.frames
                    .frame(McpOutput::End, &self.answer, &mut self.record);
            }
            if !self.frames.out.is_empty() {
                let written = self.stream.write_all(&self.frames.out);
                self.frames.out.clear();
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
        self.warm.mcp_gone(&self.ticket);
    }
}

/// An MCP answer as bytes for the agent: an SSE stream's head and chunks as they come, a
/// whole answer at its end.
#[derive(Default)]
struct McpFrames {
    /// The head of a whole answer, held until its body is complete.
    head: Option<mcp::ResponseHead>,
    /// The head of an SSE stream went: body bytes are written as they come.
    streaming: bool,
    /// A whole answer's body.
    body: Vec<u8>,
    /// Bytes for the agent.
    out: Vec<u8>,
}

impl McpFrames {
    /// Adds one output to what goes to the agent.
    fn frame(&mut self, output: McpOutput, answer: &Answer, record: &mut RequestRecord) {
        let chunked = answer.version == Version::Http11;
        match output {
            McpOutput::Head(head) => {
                record.status = head.status;
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
                record.bytes_out += bytes.len() as u64;
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
                    record.bytes_out = self.body.len() as u64;
                } else if self.streaming && chunked {
                    self.streaming = false;
                    self.out.extend_from_slice(b"0\r\n\r\n");
                }
            }
        }
    }
}

/// A request of a live chat's agent to the MCP endpoint (`/mcp/cursor`), found by its
/// bearer token's chat part and answered by the chat's run (which checks the secret):
/// whole, or an SSE stream written chunk by chunk as the run hands it over, open while a
/// call waits (bounded like the warm agent's: keep-alives, the chat's end,
/// `--write-timeout-ms` every write). The agent hanging up gives up its exchange.
fn live_mcp(
    server: &Server,
    live: &LiveState,
    (mut stream, answer): (TcpStream, Answer),
    body: Vec<u8>,
    fields: mcp::Fields,
    mut record: RequestRecord,
) {
    let Some(token) = live::token_of(fields.authorization.as_deref()) else {
        let reply = mcp::refused(McpRefusal::Unauthorized);
        return write_reply(&mut stream, reply, false, &answer, &mut record);
    };
    let Some(inbox) = live.table.by_token(token) else {
        let reply = mcp::refused(McpRefusal::NotFound);
        return write_reply(&mut stream, reply, false, &answer, &mut record);
    };
    let (reply, steps) = mpsc::channel();
    let input = LiveInput::Mcp(Box::new(McpInput {
        fields,
        body,
        context: answer.context.clone(),
        reply,
    }));
    if inbox.push(input, |input| input).is_err() {
        // Its run ended meanwhile.
        let reply = mcp::refused(McpRefusal::NotFound);
        return write_reply(&mut stream, reply, false, &answer, &mut record);
    }
    let gone = watch_hang_up(&stream, || {});
    let _ = stream.set_write_timeout(Some(server.settings.write_timeout));
    let mut frames = McpFrames::default();
    let mut exchange = None;
    let mut started = false;
    loop {
        let mut ended = false;
        match steps.recv_timeout(WRITE_SLICE) {
            Ok(McpStep::Opened(id)) => exchange = Some(id),
            Ok(McpStep::Refused(reply)) => {
                return write_reply(&mut stream, reply, false, &answer, &mut record);
            }
            Ok(McpStep::Head(head)) => {
                started = true;
                frames.frame(McpOutput::Head(head), &answer, &mut record);
            }
            Ok(McpStep::Body(bytes)) => frames.frame(McpOutput::Body(bytes), &answer, &mut record),
            Ok(McpStep::End) => {
                frames.frame(McpOutput::End, &answer, &mut record);
                ended = true;
            }
            Err(RecvTimeoutError::Timeout) => {}
            // The chat ended: before answering, no server; after, the body as it stands.
            Err(RecvTimeoutError::Disconnected) if !started => {
                let reply = mcp::refused(McpRefusal::NotFound);
                return write_reply(&mut stream, reply, false, &answer, &mut record);
            }
            Err(RecvTimeoutError::Disconnected) => {
                frames.frame(McpOutput::End, &answer, &mut record);
                ended = true;
            }
        }
        let mut failed = false;
        if !frames.out.is_empty() {
            failed = stream.write_all(&frames.out).is_err();
            frames.out.clear();
        }
        if ended {
            break;
        }
        if failed || gone.load(Ordering::SeqCst) {
            record.end = ResponseEnd::ClientGone;
            if let Some(exchange) = exchange {
                let _ = inbox.push(LiveInput::McpGone(exchange), |input| input);
            }
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    record.log();
}

/// An MCP exchange's output, owned.
enum McpOutput {
    Head(mcp::ResponseHead),
    Body(Vec<u8>),
    End,
}

/// One request's agent and bridge (or live chat), on the connection's thread. A live
/// chat's run outlives its request while the agent waits inside a tool call
/// ([`park`](Run::park)), and then answers the conversation's next request on that
/// request's thread.
struct Run {
    server: Arc<Server>,
    driven: Driven,
    /// The connection of the request being answered.
    stream: TcpStream,
    answer: Answer,
    /// Its place among the connections.
    admitted: Option<Admitted>,
    /// Its slot, freed once its response is over.
    slot: Option<Slot>,
    /// Its key in [`Server::runs`].
    key: u64,
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
    /// The request's record was logged.
    logged: bool,
    /// The agent was stopped (if still running) and reaped.
    reaped: bool,
    /// A live chat's inbox and MCP exchanges.
    live: Option<LiveLink>,
    /// Parked: its response ended inside a tool call; the agent waits for the next
    /// request.
    parked: bool,
    /// The conversation's next request, taken by a parked run.
    attaching: Option<Box<Attach>>,
    /// The agent's MCP requests waiting for [`AgentEvent::Synced`].
    held: VecDeque<LiveInput>,
}

/// A live chat's run: its registration, its inputs, and the MCP exchanges it answers.
struct LiveLink {
    state: Arc<LiveState>,
    token: String,
    inbox: Inbox,
    /// Where the helpers of the connection it answers next report.
    events: SyncSender<Event>,
    exchanges: live::Exchanges<mpsc::Sender<McpStep>>,
}

/// The agent process of a run; the child itself belongs to its waiter thread, its pipes
/// to the pipe thread.
struct Agent {
    /// Dropping it stops the pipe thread, which takes what the pipes hold and closes them.
    cancel: Option<OwnedFd>,
    /// A byte written here asks the pipe thread to send what the pipes hold, then
    /// [`AgentEvent::Synced`]: the agent's MCP request is taken after what it wrote
    /// before sending it.
    sync: Option<OwnedFd>,
    /// Whether the pipe thread may still send (until [`AgentEvent::PipesClosed`]).
    pumping: bool,
}

impl Run {
    /// A run of `driven` for the request of `record`, registered (to hear of shutdown,
    /// and a live chat's in the table): its agent and helper threads spawned, and the
    /// client watcher.
    fn start(
        server: &Arc<Server>,
        driven: Driven,
        stream: TcpStream,
        answer: Answer,
        mut record: RequestRecord,
        slot: Slot,
        admitted: Admitted,
    ) -> Box<Run> {
        if let Some(invocation) = driven.invocation() {
            record.set_model(invocation);
        }
        let (events_tx, events) = mpsc::sync_channel(PIPE_CHUNKS);
        let key = record.number;
        server
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, events_tx.clone());
        let mut driven = driven;
        let live = match (driven.live(), &server.live) {
            (Some(chat), Some(state)) => {
                let inbox = Inbox::new(events_tx.clone());
                state.table.insert(chat.token(), inbox.clone());
                Some(LiveLink {
                    state: Arc::clone(state),
                    token: chat.token().to_owned(),
                    inbox,
                    events: events_tx.clone(),
                    exchanges: HashMap::new(),
                })
            }
            _ => None,
        };
        // Only a resumed chat may be replaced by a fresh run.
        let resumed = record.conversation == Some(Continuation::Resumed);
        let mut run = Box::new(Run {
            server: Arc::clone(server),
            driven,
            stream,
            answer,
            admitted: Some(admitted),
            slot: Some(slot),
            key,
            lifecycle: Lifecycle::new(server.settings.kill_grace),
            agent: None,
            generation: 0,
            respawn_events: resumed.then(|| events_tx.clone()),
            events,
            record,
            sink: Sink::default(),
            written: 0,
            stalled_since: None,
            ended: false,
            client_gone: false,
            shutting_down: false,
            logged: false,
            reaped: false,
            live,
            parked: false,
            attaching: None,
            held: VecDeque::new(),
        });
        run.spawn(&events_tx);
        run.watch_client(&events_tx);
        drop(events_tx);
        // Registered after the shutdown was told: it is told now.
        if server.shutting_down.load(Ordering::SeqCst) {
            run.shutdown();
        }
        run.drain();
        run
    }

    /// Watches the client of the request being answered for a hang-up, seen as end of
    /// stream on the socket (the request was read whole).
    fn watch_client(&self, events: &SyncSender<Event>) {
        if let Ok(mut watch) = self.stream.try_clone() {
            let _ = watch.set_read_timeout(None);
            let tx = events.clone();
            let request = self.record.number;
            helper(move || {
                let mut sink = [0u8; 512];
                while matches!(watch.read(&mut sink), Ok(n) if n > 0) {}
                let _ = tx.send(Event::ClientGone(request));
            });
        }
    }

    /// Takes over the request a parked run took (see [`park`](Run::park)): its response is
    /// written to `stream`, on this thread.
    fn resume(&mut self, stream: TcpStream, answer: Answer, admitted: Admitted) {
        self.stream = stream;
        self.answer = answer;
        self.admitted = Some(admitted);
        self.sink = Sink::default();
        self.written = 0;
        self.stalled_since = None;
        self.client_gone = false;
        if let Some(link) = &self.live {
            let events = link.events.clone();
            self.watch_client(&events);
        }
        self.drain();
    }

    /// Starts the agent run the bridge's invocation describes (if any) as the leader of a
    /// process group of its own, with a lifecycle of its own and helper threads that
    /// report to `events` under the run's current generation.
    fn spawn(&mut self, events: &SyncSender<Event>) {
        let Some(invocation) = self.driven.invocation() else {
            return;
        };
        self.lifecycle = Lifecycle::new(self.server.settings.kill_grace);
        self.agent = None;
        let generation = self.generation;
        let prompt = invocation.stdin.clone();
        let mut command = self.server.settings.agent.command(invocation);
        let spawned = reaper::spawn(|child: &Child| Some(child.id()), || command.spawn())
            .and_then(|child| Ok((child, nix::unistd::pipe()?, nix::unistd::pipe()?)));
        match spawned {
            Ok((mut child, (cancelled, cancel), (synced, sync))) => {
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
                    let pipes = Pipes {
                        stdout,
                        stderr,
                        cancelled,
                        synced,
                    };
                    pumping = helper(move || pump(pipes, &tx, generation));
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
                    sync: pumping.then_some(sync),
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
        // The replaced process's sync does not come.
        self.release_held();
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
                        self.driven.client_gone(self.server.clock.now_ms());
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
            .driven
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
        self.driven.handle_timeout(self.server.clock.now_ms());
        self.lifecycle.handle_timeout(Instant::now());
    }

    fn handle(&mut self, event: Event) {
        let now = self.server.clock.now_ms();
        let event = match event {
            // A client whose response was over (before the run parked) is not a client
            // gone.
            Event::ClientGone(request) if request == self.record.number && !self.parked => {
                return self.gone();
            }
            Event::ClientGone(_) => return,
            Event::Shutdown => return self.shutdown(),
            // Taken by `drain`.
            Event::Live => return,
            // A process this run replaced: it is done with.
            Event::Agent(generation, _) if generation != self.generation => return,
            Event::Agent(_, event) => event,
        };
        match event {
            // Read before the pipes were closed, after the exit was reported: dropped.
            AgentEvent::Stdout(_) | AgentEvent::Stderr(_) if !self.lifecycle.wants_output() => {}
            AgentEvent::Stdout(bytes) => {
                let _ = self.driven.push_stdout(&bytes, now);
            }
            AgentEvent::Stderr(bytes) => {
                let _ = self.driven.push_stderr(&bytes, now);
            }
            AgentEvent::StdoutEof => self.lifecycle.handle_stdout_eof(),
            AgentEvent::StderrEof => self.lifecycle.handle_stderr_eof(),
            AgentEvent::PipesClosed => {
                if let Some(agent) = &mut self.agent {
                    agent.pumping = false;
                }
                // No sync comes any more.
                self.release_held();
            }
            AgentEvent::Synced => self.release_held(),
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
        // for the agent to be stopped (a parked chat's is stopped).
        self.driven.shutdown(self.server.clock.now_ms());
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
        self.driven.client_gone(self.server.clock.now_ms());
        self.drain();
    }

    /// Takes a live chat's inputs and every output of the bridge, as bytes for the client
    /// (and its MCP exchanges'), and carries out what the lifecycle asks, until none has
    /// more.
    fn drain(&mut self) {
        loop {
            self.take_inputs();
            let (mut stop, mut respawn) = (false, false);
            while let Some(output) = self.driven.poll_output() {
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
            self.pump_mcp();
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
                    let _ = self.driven.push_stderr(text.as_bytes(), now);
                    fed = true;
                }
                Action::Exited(status) => {
                    let _ = self.driven.agent_exited(status, now);
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

    /// After the response (or the park): stops the agent if it still runs, and reaps it.
    /// Once; later calls do nothing.
    fn finish_agent(&mut self) {
        if std::mem::replace(&mut self.reaped, true) {
            return;
        }
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
    fn close_connection(&mut self) {
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
        self.sink = Sink::default();
        self.written = 0;
        let _ = self.stream.shutdown(Shutdown::Both);
        self.admitted = None;
        if !std::mem::replace(&mut self.logged, true) {
            self.record.log();
        }
    }

    /// The response ended: the request's turn in its conversation ends (the chat parked
    /// or let go; a live chat's run is named by its chat); whether a live chat was
    /// parked. Later calls do nothing.
    fn end_turn(&mut self) -> bool {
        let table = self
            .live
            .as_ref()
            .map(|link| (&link.state.table, link.token.as_str()));
        live::end_turn(&self.server.conversations, &mut self.driven, table)
    }

    /// Whether the response ended inside the client's tool calls with the agent waiting
    /// in them: the run parks instead of ending (not once the server shuts down, nor for
    /// a client that hung up before it could have the end).
    fn parks(&mut self) -> bool {
        self.ended
            && self.live.is_some()
            && !self.shutting_down
            && !self.server.shutting_down.load(Ordering::SeqCst)
            && self.driven.live().is_some_and(|chat| chat.is_suspended())
            && !self.client_hung_up()
    }

    /// Whether the client has hung up, its watcher's report possibly still on its way:
    /// the socket is at end of stream (the request was read whole).
    fn client_hung_up(&self) -> bool {
        use nix::sys::socket::{MsgFlags, recv};
        use std::os::fd::AsRawFd;
        if self.client_gone {
            return true;
        }
        let mut byte = [0u8; 1];
        let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        matches!(recv(self.stream.as_raw_fd(), &mut byte, flags), Ok(0))
    }

    /// A parked live chat's run, on the thread of the request it answered last: its
    /// response ended inside the client's tool calls, the agent waits in them. The request
    /// is over (its slot freed, its connection closed, its line logged); the run goes on
    /// serving the agent's pipes, its MCP requests and the chat's deadlines until the
    /// conversation's next request takes it — the run then goes to that request's thread,
    /// which answers it —, or the agent ends (stopped when the registry lets the chat go,
    /// at shutdown, or when it cannot take a request's results).
    fn park(mut self: Box<Self>) {
        // Parked, holding no slot, before the client can have the end: a client asking
        // at once finds it so. (Shutdown waits for the run, which writes the end first.)
        self.parked = true;
        if let Some(link) = &self.live {
            link.state.table.set_parked(&link.token, true);
        }
        self.slot = None;
        self.close_connection();
        let mut rejected = Vec::new();
        loop {
            if let Some(attach) = self.attaching.take() {
                let Attach {
                    dialect,
                    prepared,
                    decision,
                    params,
                    slot,
                    record,
                    reply,
                } = *attach;
                let server = Arc::clone(&self.server);
                let chat = self.driven.live().expect("a parked run is a live chat's");
                let config = &server.settings.config;
                match chat.attach(dialect, prepared, decision, config, params) {
                    Ok(()) => {
                        self.parked = false;
                        if let Some(link) = &self.live {
                            link.state.table.set_parked(&link.token, false);
                        }
                        self.slot = Some(slot);
                        self.record = record;
                        self.logged = false;
                        self.ended = false;
                        answer_rejected(rejected);
                        // A request that stopped waiting drops the run: it ends as its
                        // client gone.
                        let _ = reply.send(Ok(self));
                        return;
                    }
                    Err(back) => {
                        // This process cannot take it: it is stopped before the request
                        // runs on its own (two processes must not hold one chat).
                        self.driven.shutdown(server.clock.now_ms());
                        self.drain();
                        rejected.push((reply, back, slot, record));
                    }
                }
            }
            let exited = self.lifecycle.agent_end().is_some() || self.agent.is_none();
            if exited && self.attaching.is_none() {
                break;
            }
            self.wait_parked();
        }
        self.finish_agent();
        self.unregister();
        answer_rejected(rejected);
    }

    /// One step of a parked run: a deadline served, or the next event handled.
    fn wait_parked(&mut self) {
        if self.overdue() {
            self.timers();
        } else {
            self.lifecycle.resume_reading(Instant::now());
            match recv_until(&self.events, self.next_due()) {
                Ok(event) => self.handle(event),
                Err(RecvTimeoutError::Timeout) => self.timers(),
                // The inbox holds a sender for as long as the run is registered.
                Err(RecvTimeoutError::Disconnected) => {}
            }
        }
        self.drain();
    }

    /// The inputs from outside a live chat's run: its agent's MCP requests, the
    /// conversation's next request (taken by [`park`](Run::park)), the registry letting
    /// the chat go.
    fn take_inputs(&mut self) {
        while let Some(input) = self.live.as_ref().and_then(|link| link.inbox.take()) {
            self.take_input(input);
        }
    }

    /// Takes one input; an MCP request waits until what the agent wrote before sending it
    /// (and the pipe holds) has been taken.
    fn take_input(&mut self, input: LiveInput) {
        if let LiveInput::Mcp(_) = input {
            if !self.held.is_empty() || self.ask_sync() {
                self.held.push_back(input);
                return;
            }
        }
        self.serve_input(input);
    }

    /// Asks the pipe thread for what the pipes hold; whether it will answer.
    fn ask_sync(&mut self) -> bool {
        let Some(agent) = self.agent.as_ref().filter(|agent| agent.pumping) else {
            return false;
        };
        let Some(sync) = &agent.sync else {
            return false;
        };
        loop {
            match nix::unistd::write(sync, &[1]) {
                Ok(_) => return true,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return false,
            }
        }
    }

    /// The inputs held for a sync: taken now.
    fn release_held(&mut self) {
        while let Some(input) = self.held.pop_front() {
            self.serve_input(input);
        }
    }

    fn serve_input(&mut self, input: LiveInput) {
        let now = self.server.clock.now_ms();
        match input {
            LiveInput::Mcp(input) => {
                let McpInput {
                    fields,
                    body,
                    context,
                    reply,
                } = *input;
                let (Some(link), Driven::Live(chat)) = (&mut self.live, &mut self.driven) else {
                    let _ = reply.send(McpStep::Refused(mcp::refused(McpRefusal::NotFound)));
                    return;
                };
                let request = fields.request(&body);
                match chat.handle_mcp(fields.authorization.as_deref(), &request, now) {
                    Ok(exchange) => {
                        let _ = reply.send(McpStep::Opened(exchange));
                        link.exchanges.insert(exchange, (reply, context));
                    }
                    Err(_) => {
                        let refused = mcp::refused(McpRefusal::Unauthorized);
                        let _ = reply.send(McpStep::Refused(refused));
                    }
                }
            }
            LiveInput::McpGone(exchange) => {
                let (Some(link), Driven::Live(chat)) = (&mut self.live, &mut self.driven) else {
                    return;
                };
                if link.exchanges.remove(&exchange).is_some() {
                    chat.mcp_exchange_gone(exchange, now);
                }
            }
            LiveInput::Attach(attach) => {
                if self.parked && self.attaching.is_none() {
                    self.attaching = Some(attach);
                } else {
                    refuse_attach(attach);
                }
            }
            LiveInput::Release => {
                if self.parked {
                    self.driven.shutdown(now);
                }
            }
        }
    }

    /// Hands the live chat's MCP outputs to the connections waiting for them.
    fn pump_mcp(&mut self) {
        if let (Some(link), Driven::Live(chat)) = (&mut self.live, &mut self.driven) {
            live::pump_mcp(chat, &mut link.exchanges, self.server.clock.now_ms());
        }
    }

    /// The run ends: it hears of shutdown no more, and a live chat's leaves the table —
    /// what was on its way to it is answered (a request handed back, an MCP request
    /// refused), its MCP exchanges end.
    fn unregister(&mut self) {
        self.server
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        let Some(link) = self.live.take() else {
            return;
        };
        link.state.table.remove(&link.token);
        let held = std::mem::take(&mut self.held);
        for input in held.into_iter().chain(link.inbox.close()) {
            match input {
                LiveInput::Attach(attach) => refuse_attach(attach),
                LiveInput::Mcp(input) => {
                    let refused = mcp::refused(McpRefusal::NotFound);
                    let _ = input.reply.send(McpStep::Refused(refused));
                }
                LiveInput::McpGone(_) | LiveInput::Release => {}
            }
        }
        if let Some(attach) = self.attaching.take() {
            refuse_attach(attach);
        }
        link.state.run_ended();
    }
}

impl Drop for Run {
    /// Every path ends here, once: a run dropped before its response's end (a request that
    /// stopped waiting for the parked run that took it) ends as its client gone.
    fn drop(&mut self) {
        if !self.ended && !self.client_gone {
            self.driven.client_gone(self.server.clock.now_ms());
            if !self.shutting_down {
                self.record.end = ResponseEnd::ClientGone;
            }
        }
        let _ = self.end_turn();
        self.finish_agent();
        self.unregister();
        self.slot = None;
        self.close_connection();
    }
}

/// Hands an attach back untaken: the request runs on its own.
fn refuse_attach(attach: Box<Attach>) {
    let Attach {
        prepared,
        decision,
        slot,
        record,
        reply,
        ..
    } = *attach;
    let rejected = Rejected {
        back: NotAttached { prepared, decision },
        slot,
        record,
    };
    let _ = reply.send(Err(Box::new(rejected)));
}

/// Hands back the attaches a parked run could not take, once its agent is stopped.
type Untaken = Vec<(
    mpsc::Sender<Result<Box<Run>, Box<Rejected>>>,
    Box<NotAttached>,
    Slot,
    RequestRecord,
)>;

fn answer_rejected(rejected: Untaken) {
    for (reply, back, slot, record) in rejected {
        let rejected = Rejected {
            back: *back,
            slot,
            record,
        };
        let _ = reply.send(Err(Box::new(rejected)));
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
/// whole, so end of stream is a hang-up. Then the flag it returns is set and `wake` is
/// called (to wake the thread that looks at the flag).
fn watch_hang_up(stream: &TcpStream, wake: impl FnOnce() + Send + 'static) -> Arc<AtomicBool> {
    let gone = Arc::new(AtomicBool::new(false));
    if let Ok(mut watch) = stream.try_clone() {
        let _ = watch.set_read_timeout(None);
        let flag = Arc::clone(&gone);
        helper(move || {
            let mut sink = [0u8; 512];
            while matches!(watch.read(&mut sink), Ok(n) if n > 0) {}
            flag.store(true, Ordering::SeqCst);
            wake();
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

/// The pipes of an agent process, for its pipe thread.
struct Pipes {
    stdout: ChildStdout,
    stderr: ChildStderr,
    /// Closed (its other end dropped) to stop reading.
    cancelled: OwnedFd,
    /// Readable when the run asks for what the pipes hold ([`Agent::sync`]).
    synced: OwnedFd,
}

/// Reads the agent's stdout and stderr until both end or `cancelled` is closed (its
/// other end dropped), sending each chunk as the agent process `generation`'s, then
/// [`AgentEvent::PipesClosed`]. Cancelled, it first takes what the pipes hold at that
/// moment ([`agent::read_held`]): all the leader wrote before its exit that was not read.
/// Asked through `synced`, it sends what the pipes hold, then [`AgentEvent::Synced`].
fn pump(pipes: Pipes, events: &SyncSender<Event>, generation: u32) {
    read_pipes(pipes, events, generation);
    let _ = events.send(Event::Agent(generation, AgentEvent::PipesClosed));
}

/// [`pump`]'s reading.
fn read_pipes(pipes: Pipes, events: &SyncSender<Event>, generation: u32) {
    let Pipes {
        stdout,
        stderr,
        cancelled,
        synced,
    } = pipes;
    let mut stdout = Some(stdout);
    let mut stderr = Some(stderr);
    let mut synced = Some(synced);
    let mut out_buf = vec![0u8; STDOUT_READ];
    let mut err_buf = vec![0u8; STDERR_READ];
    while stdout.is_some() || stderr.is_some() {
        let (out_ready, err_ready, sync_ready) = {
            let mut fds = vec![PollFd::new(cancelled.as_fd(), PollFlags::POLLIN)];
            let out_at = poll_too(&mut fds, stdout.as_ref().map(AsFd::as_fd));
            let err_at = poll_too(&mut fds, stderr.as_ref().map(AsFd::as_fd));
            let sync_at = poll_too(&mut fds, synced.as_ref().map(AsFd::as_fd));
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            }
            let ready = |at: Option<usize>| {
                at.is_some_and(|at| fds[at].revents().is_some_and(|r| !r.is_empty()))
            };
            if ready(Some(0)) {
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
            (ready(out_at), ready(err_at), ready(sync_at))
        };
        if sync_ready {
            // Every request to sync since the last: one answer.
            let mut asked = [0u8; 64];
            match synced.as_ref().map(|fd| nix::unistd::read(fd, &mut asked)) {
                Some(Ok(n)) if n > 0 => {
                    let sent = send_held(
                        &mut stdout,
                        &mut out_buf,
                        events,
                        generation,
                        AgentEvent::Stdout,
                        || AgentEvent::StdoutEof,
                    ) && send_held(
                        &mut stderr,
                        &mut err_buf,
                        events,
                        generation,
                        AgentEvent::Stderr,
                        || AgentEvent::StderrEof,
                    );
                    if !sent {
                        return;
                    }
                    let synced = Event::Agent(generation, AgentEvent::Synced);
                    if events.send(synced).is_err() {
                        return;
                    }
                }
                Some(Err(nix::errno::Errno::EINTR)) => {}
                // Its other end dropped (the run is done with the process).
                _ => synced = None,
            }
            continue;
        }
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

/// Adds `fd`, if any, to what `fds` polls for input: its index.
fn poll_too<'a>(
    fds: &mut Vec<PollFd<'a>>,
    fd: Option<std::os::fd::BorrowedFd<'a>>,
) -> Option<usize> {
    let fd = fd?;
    fds.push(PollFd::new(fd, PollFlags::POLLIN));
    Some(fds.len() - 1)
}

/// Sends what `pipe` holds now, without waiting (a bounded number of reads, so that a
/// writer that keeps writing does not hold the answer); its end of file as it comes.
/// False when nobody listens any more.
fn send_held(
    pipe: &mut Option<impl Read + AsFd>,
    buf: &mut [u8],
    events: &SyncSender<Event>,
    generation: u32,
    chunk: fn(Vec<u8>) -> AgentEvent,
    eof: fn() -> AgentEvent,
) -> bool {
    for _ in 0..PIPE_CHUNKS {
        let Some(reader) = pipe.as_ref() else {
            return true;
        };
        let mut fds = [PollFd::new(reader.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) if fds[0].revents().is_some_and(|r| !r.is_empty()) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            _ => return true,
        }
        if !read_pipe(pipe, buf, events, generation, chunk, eof()) {
            return false;
        }
    }
    true
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
