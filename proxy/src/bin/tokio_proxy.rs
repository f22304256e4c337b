//! A server for the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs
//! on top of cursor-agent (one process per request) or a warm ACP agent
//! (`--agent-protocol acp`): tokio, hyper, and agentwire's [`Bridge`] making every protocol
//! decision.
//!
//! ```text
//! cargo run --release -p agentwire-proxy -- --demo      # no Cursor account needed
//! cargo run --release -p agentwire-proxy -- [--listen ADDR] [--api-key KEY] [--agent-bin PATH] …
//! ```
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/messages` (one
//! per API), `POST /v1/messages/count_tokens` (answered without an agent), `GET /v1/models`
//! (each also without `/v1`), `GET /health`, `HEAD /api/hello` (Claude Code's probe),
//! `OPTIONS` (CORS preflight for allowed origins), and with `--agent-protocol acp` the MCP
//! endpoint `/mcp/<token>` where the warm agent calls a request's client tools
//! ([`agentwire_proxy::mcp`]). Every error the proxy writes itself is in
//! the error shape of the route's API: an Anthropic body on the Messages routes, an OpenAI
//! one elsewhere. Every flag is shared with `blocking_proxy` (see `--help`), and so are the
//! routes and the checks every request passes ([`agentwire_proxy::http`]).
//!
//! How a request runs: the body is read (bounded in size and, with the head, in time), a
//! concurrency slot taken, the bridge built through the proxy's conversation registry
//! ([`agentwire_proxy::conversations`]: the chat that answered the conversation so far is
//! resumed with only what is new, or the run is fresh), and cursor-agent spawned as the
//! leader of its own process group with the prompt on stdin. Then one loop waits on the
//! agent's stdout, its stderr, its exit, the bridge's next deadline
//! ([`Bridge::poll_timeout`], the only timer) and server shutdown, feeds whichever comes to
//! the bridge, and hands the outputs on: the head becomes the response head, body chunks
//! go to the client, `StopAgent` signals the group. With `--agent-protocol acp` the request
//! is instead a turn on the one warm agent, in its conversation ([`agentwire_proxy::acp`]),
//! and the loop awaits the turn's outputs; the agent's requests to the MCP endpoint are
//! answered the same way, an SSE answer streamed through a channel like a response's.
//!
//! A stream's run is a task of its own that hands chunks to the response body through a
//! one-slot channel. While the client does not take them it stops reading the agent's
//! pipes (so the agent waits, and nothing piles up in memory) but keeps serving every
//! deadline: `--max-duration-ms` and the idle timeout end the run whatever the socket
//! does. The connection's writes have their own limit, `--write-timeout-ms`, after which
//! hyper gives up on the client. When the client goes away (the body is dropped, or the
//! channel closed), the run's `Drop` tells the bridge `client_gone` and stops the group; a
//! reaper task then waits for the leader (SIGKILL after a grace period), reaps it, logs
//! the request and only then frees the slot — so every path, finished, abandoned, timed
//! out or shut down, ends the same way. That `Drop` also ends the request's turn in its
//! conversation (the chat is parked for the next request, or let go), once, before the
//! last bytes reach the client. A resumed chat the agent cannot continue is stopped and
//! reaped like any run, and the bridge's fresh run (`Output::Respawn`) takes its place in
//! the same loop. A task lets parked chats expire at the registry's deadline.
//!
//! With `--cursor-mcp` a request with client tools is a live chat's
//! ([`agentwire_proxy::live`]): its run is the same loop, which also takes the agent's
//! requests to `/mcp/cursor` (found by their bearer token, handed to the run through a
//! channel, answered through another). A response that ends inside the client's tool
//! calls does not stop the agent: the run is parked — its request logged, its slot freed,
//! its chat parked in the registry before the last bytes leave — and a task keeps it going
//! (pipes, deadlines, MCP requests) until the conversation's next request is handed to it
//! and it answers that request, or its agent is stopped (the chat let go by the registry,
//! shutdown, or a request it cannot take, which then runs on its own once the agent is
//! reaped).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use agentwire::acp::McpRefusal;
use agentwire::bridge::{Bridge, BridgeParams, Dialect, Head, Output, Prepared};
use agentwire::live_chat::{LiveChat, NotAttached};
use agentwire::mcp::ExchangeOutput;
use agentwire::registry::Decision;
use agentwire_proxy::acp::{Ticket, Warm};
use agentwire_proxy::agent::{Signal, exit_status, signal_group};
use agentwire_proxy::connections::{Admitted, Connections, Lane, OVERFLOW_TIMEOUT};
use agentwire_proxy::conversations::{CallerIds, Continuation, Conversations, Decided};
use agentwire_proxy::framing::{FramingError, Version};
use agentwire_proxy::http::{self, Outcome, Reply, RequestHead, ResponseContext, Target};
use agentwire_proxy::lifecycle::{Action, Lifecycle};
use agentwire_proxy::live::{self, Driven, LiveFiles, LiveTable, McpStep};
use agentwire_proxy::mcp;
use agentwire_proxy::models::ModelCache;
use agentwire_proxy::record::{AgentEnd, RequestRecord, ResponseEnd};
use agentwire_proxy::scan::{MAX_HEAD, MAX_HEADERS, RequestScanner};
use agentwire_proxy::{Clock, RequestIds, Settings, agent, reaper};
use bytes::{Bytes, BytesMut};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited, StreamBody};
use hyper::body::{Body as _, Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::rt::ReadBufCursor;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioTimer;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStderr, ChildStdout};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};
use tokio::time::Sleep;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Bytes read from the agent's stdout at a time.
const STDOUT_READ: usize = 32 * 1024;
/// Bytes read from its stderr at a time.
const STDERR_READ: usize = 4 * 1024;
/// Bytes read from a client at a time.
const CLIENT_READ: usize = 16 * 1024;

struct Server {
    settings: Settings,
    clock: Clock,
    ids: RequestIds,
    slots: Arc<Semaphore>,
    models: ModelCache,
    connections: Arc<Connections>,
    shutdown: watch::Receiver<bool>,
    /// With `--agent-protocol acp`: the warm agent every request runs on.
    warm: Option<Arc<Warm>>,
    /// The agent chats parked between the requests of their conversations.
    conversations: Conversations,
    /// With `--cursor-mcp`: the live chats.
    live: Option<Arc<LiveState>>,
}

/// The live chats (`--cursor-mcp`): each a run, serving a request or parked inside a tool
/// call, reached through its channel.
struct LiveState {
    table: LiveTable<mpsc::UnboundedSender<LiveInput>>,
    /// Woken when a live chat's run ends.
    gone: Notify,
    /// The configuration files in the workspace, removed at exit.
    files: Mutex<Option<LiveFiles>>,
}

/// What reaches a live chat's run from outside it.
enum LiveInput {
    /// A request of its agent to the MCP endpoint.
    Mcp(Box<McpInput>),
    /// The conversation's next request, for a parked chat.
    Attach(Box<Attach>),
    /// The registry let the chat go: a parked agent is stopped.
    Release,
}

/// A request of a live chat's agent to the MCP endpoint, for its run.
struct McpInput {
    fields: mcp::Fields,
    body: Bytes,
    context: ResponseContext,
    /// Where the exchange's outputs go.
    reply: mpsc::UnboundedSender<McpStep>,
}

/// The conversation's next request, handed to the parked run of its chat.
struct Attach {
    dialect: Dialect,
    prepared: Prepared,
    decision: Decision,
    params: BridgeParams,
    permit: OwnedSemaphorePermit,
    record: RequestRecord,
    /// The run, now answering the request; or the request back, to run on its own.
    reply: oneshot::Sender<Result<Box<Run>, Box<Rejected>>>,
}

/// A request a parked run did not take (its agent is stopped first).
struct Rejected {
    back: NotAttached,
    permit: OwnedSemaphorePermit,
    record: RequestRecord,
}

impl Server {
    fn in_flight(&self) -> u32 {
        self.settings.max_concurrent - self.slots.available_permits() as u32
    }
}

fn main() -> ExitCode {
    let settings = match agentwire_proxy::start("tokio_proxy") {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tokio_proxy: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(settings))
}

async fn serve(settings: Settings) -> ExitCode {
    let listener = match TcpListener::bind(settings.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("tokio_proxy: cannot listen on {}: {e}", settings.listen);
            return ExitCode::FAILURE;
        }
    };
    let bound = listener.local_addr().unwrap_or(settings.listen);
    // Before the banner: once it is out, an agent may be started.
    let live = match &settings.live {
        Some(live) => {
            let url = live::url(&mcp::endpoint(bound));
            match LiveFiles::write(&live.workspace, &url, &live.config) {
                Ok(files) => Some(Arc::new(LiveState {
                    table: LiveTable::default(),
                    gone: Notify::new(),
                    files: Mutex::new(Some(files)),
                })),
                Err(e) => {
                    eprintln!("tokio_proxy: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        None => None,
    };
    println!("{}", settings.banner(bound));
    let (shutdown_tx, shutdown) = watch::channel(false);
    let max = settings.max_concurrent;
    let clock = Clock::new();
    let warm = match Warm::for_settings(&settings, bound, clock) {
        Ok(warm) => warm,
        Err(e) => {
            eprintln!("tokio_proxy: cannot start the ACP agent's supervisor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = Arc::new(Server {
        slots: Arc::new(Semaphore::new(max as usize)),
        models: ModelCache::new(settings.models_ttl),
        connections: Connections::new(settings.max_connections),
        conversations: Conversations::new(settings.conversations.clone(), clock),
        settings,
        clock,
        ids: RequestIds::new(),
        shutdown,
        warm,
        live,
    });
    if let Some(live) = server.live.clone() {
        // A chat the registry lets go (expired, evicted) has its parked agent stopped.
        server.conversations.on_released(Box::new(move |chat| {
            if let Some(run) = live.table.parked_chat(chat) {
                let _ = run.send(LiveInput::Release);
            }
        }));
    }
    let expiry = tokio::spawn(expire(Arc::clone(&server)));
    let (Ok(mut sigterm), Ok(mut sigint)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        eprintln!("tokio_proxy: cannot install signal handlers");
        return ExitCode::FAILURE;
    };
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => match server.connections.admit() {
                    Some(admitted) => serve_connection(&server, &graceful, stream, peer, admitted),
                    // Over every lane: closed now, so its descriptor is free again at once.
                    None => drop(stream),
                },
                Err(e) => {
                    // Out of descriptors, most likely: back off instead of spinning.
                    tracing::warn!(%e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = sigterm.recv() => break,
            _ = sigint.recv() => break,
        }
    }
    drop(listener);
    tracing::info!("shutting down: ending open responses and stopping every agent");
    let _ = shutdown_tx.send(true);
    if let Some(warm) = &server.warm {
        warm.shutdown();
    }
    let limit = server.settings.kill_grace * 2 + Duration::from_secs(5);
    if tokio::time::timeout(limit, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after {limit:?}; closing anyway");
    }
    // Every slot comes back once its agent is reaped.
    if tokio::time::timeout(limit, server.slots.acquire_many(max))
        .await
        .is_err()
    {
        tracing::warn!("agents still running after {limit:?}");
    }
    if let Some(warm) = server.warm.clone() {
        let stopped = tokio::task::spawn_blocking(move || warm.wait_stopped(limit)).await;
        if !matches!(stopped, Ok(true)) {
            tracing::warn!("the ACP agent still running after {limit:?}");
        }
    }
    if let Some(live) = &server.live {
        // Parked agents hold no slot: their runs end once they are stopped and reaped.
        let stopped = tokio::time::timeout(limit, async {
            loop {
                let gone = live.gone.notified();
                if live.table.is_empty() {
                    return;
                }
                gone.await;
            }
        });
        if stopped.await.is_err() {
            tracing::warn!("parked agents still running after {limit:?}");
        }
        drop(live.files.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
    // Every run has ended its turn: the chats still parked are let go.
    expiry.abort();
    server.conversations.clear();
    ExitCode::SUCCESS
}

/// Lets parked chats expire as their time comes, woken early when a turn's end brings
/// the next expiry forward.
async fn expire(server: Arc<Server>) {
    loop {
        let changed = server.conversations.changed().notified();
        match server.conversations.expire() {
            Some(due) => {
                tokio::select! {
                    () = tokio::time::sleep_until(due.into()) => {}
                    () = changed => {}
                }
            }
            None => changed.await,
        }
    }
}

fn serve_connection(
    server: &Arc<Server>,
    graceful: &GracefulShutdown,
    stream: TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
) {
    let _ = stream.set_nodelay(true);
    let lane = admitted.lane();
    let settings = &server.settings;
    let scan = Arc::new(Scan::new(settings.config.request_limits.max_body_bytes));
    let io = ClientIo::new(stream, Arc::clone(&scan), settings.write_timeout);
    let head_timeout = match lane {
        Lane::Served => settings.header_timeout,
        Lane::Overflow => OVERFLOW_TIMEOUT.min(settings.header_timeout),
    };
    let handler = Arc::clone(server);
    let requests = AtomicU64::new(0);
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        // Heads as large and as many fields as blocking_proxy accepts.
        .max_headers(MAX_HEADERS)
        .max_buf_size(MAX_HEAD)
        .keep_alive(lane == Lane::Served)
        .serve_connection(
            io,
            service_fn(move |request| {
                // hyper calls this once per request, in order.
                let index = requests.fetch_add(1, Ordering::Relaxed);
                handle(
                    Arc::clone(&handler),
                    Arc::clone(&scan),
                    lane,
                    index,
                    request,
                )
            }),
        );
    let connection = graceful.watch(connection);
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(%peer, %e, "connection ended with an error");
        }
        drop(admitted);
    });
}

/// What a connection's reads tell its request handlers (see [`agentwire_proxy::scan`]).
struct Scan {
    scanner: Mutex<RequestScanner>,
    /// Woken when a request's framing is refused.
    refused: Notify,
}

impl Scan {
    fn new(limit: usize) -> Scan {
        Scan {
            scanner: Mutex::new(RequestScanner::new(limit as u64)),
            refused: Notify::new(),
        }
    }

    fn scanner(&self) -> std::sync::MutexGuard<'_, RequestScanner> {
        self.scanner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self, bytes: &[u8]) {
        if self.scanner().push(bytes, Instant::now()) {
            self.refused.notify_waiters();
        }
    }

    /// Why request `index`'s framing was refused, as soon as it is.
    async fn wait_refused(&self, index: u64) -> FramingError {
        loop {
            let notified = self.refused.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(error) = self.scanner().refused(index) {
                return error;
            }
            notified.await;
        }
    }
}

/// The client's socket as hyper sees it: every read also goes to the connection's
/// [`Scan`], and a write that makes no progress for `--write-timeout-ms` fails, which
/// ends the connection (hyper has no write timeout of its own).
struct ClientIo {
    stream: TcpStream,
    scan: Arc<Scan>,
    buf: Box<[u8]>,
    write_timeout: Duration,
    /// Runs while a write waits; reset whenever one makes progress.
    stall: Pin<Box<Sleep>>,
    stalled: bool,
}

impl ClientIo {
    fn new(stream: TcpStream, scan: Arc<Scan>, write_timeout: Duration) -> ClientIo {
        ClientIo {
            stream,
            scan,
            buf: vec![0; CLIENT_READ].into_boxed_slice(),
            write_timeout,
            stall: Box::pin(tokio::time::sleep(write_timeout)),
            stalled: false,
        }
    }

    /// Passes on a write's result, failing it once the writes have waited too long.
    fn limit<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if result.is_ready() {
            self.stalled = false;
            return result;
        }
        if !self.stalled {
            self.stalled = true;
            let deadline = tokio::time::Instant::now() + self.write_timeout;
            self.stall.as_mut().reset(deadline);
        }
        match self.stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client has not read for --write-timeout-ms",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl hyper::rt::Read for ClientIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let want = buf.remaining().min(this.buf.len());
        let mut read = tokio::io::ReadBuf::new(&mut this.buf[..want]);
        ready!(Pin::new(&mut this.stream).poll_read(cx, &mut read))?;
        let bytes = read.filled();
        if !bytes.is_empty() {
            this.scan.read(bytes);
        }
        buf.put_slice(bytes);
        Poll::Ready(Ok(()))
    }
}

impl hyper::rt::Write for ClientIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.limit(cx, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.limit(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_flush(cx);
        this.limit(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.stream).poll_shutdown(cx);
        this.limit(cx, result)
    }
}

async fn handle(
    server: Arc<Server>,
    scan: Arc<Scan>,
    lane: Lane,
    index: u64,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    // The whole request had to arrive within the limit of its first byte.
    let started = scan.scanner().started(index).unwrap_or_else(Instant::now);
    let deadline = started
        + match lane {
            Lane::Served => server.settings.request_timeout,
            Lane::Overflow => OVERFLOW_TIMEOUT,
        };
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    let method = parts.method.as_str();
    let mut record = RequestRecord::new(server.ids.next(), method, path);
    let headers: Vec<(&str, &[u8])> = parts
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .collect();
    let head = RequestHead {
        method,
        target: Target {
            authority: parts.uri.authority().map(|a| a.as_str()),
            path,
        },
        version: if parts.version == hyper::Version::HTTP_10 {
            Version::Http10
        } else {
            Version::Http11
        },
        headers: &headers,
    };
    let checked = http::check(
        &server.settings,
        &head,
        lane,
        server.ids.seed(record.number),
    );
    let context = checked.context;
    let caller = CallerIds::new(checked.owner.unwrap_or_default(), &head);
    let mut response = match checked.outcome {
        Outcome::Reply(reply) => reply_response(reply, &context, &mut record),
        Outcome::Run(dialect) => {
            let request = Arriving {
                scan: &scan,
                index,
                deadline,
                body,
                context: &context,
            };
            run(&server, request, dialect, &caller, record).await
        }
        Outcome::CountTokens => {
            let request = Arriving {
                scan: &scan,
                index,
                deadline,
                body,
                context: &context,
            };
            count_tokens(&server, request, record).await
        }
        Outcome::Models => {
            let reply = match server.warm.clone() {
                // A blocking wait while the agent's first session is made.
                Some(warm) => tokio::task::spawn_blocking(move || warm.models_reply())
                    .await
                    .unwrap_or_else(|e| http::models_unavailable(&e.to_string())),
                None => models(&server).await,
            };
            reply_response(reply, &context, &mut record)
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
            let reply = http::health(
                &server.settings,
                detailed,
                server.in_flight(),
                warm,
                conversations,
            );
            reply_response(reply, &context, &mut record)
        }
        Outcome::Mcp { token } => {
            let fields = mcp::Fields::of(&head);
            let request = Arriving {
                scan: &scan,
                index,
                deadline,
                body,
                context: &context,
            };
            mcp_exchange(&server, request, &token, fields, record).await
        }
    };
    // Nothing after a request whose framing was refused can be read as a request.
    if scan.scanner().refused(index).is_some() {
        response
            .headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(response)
}

/// A reply the proxy wrote itself, logged as the request's end.
fn reply_response(
    reply: Reply,
    context: &ResponseContext,
    record: &mut RequestRecord,
) -> Response<Body> {
    let reply = reply.render(context);
    record.status = reply.status;
    record.bytes_out = reply.body.len() as u64;
    record.log();
    let mut response = response(
        reply.status,
        &reply.headers,
        Full::new(Bytes::from(reply.body)).boxed_unsync(),
    );
    if reply.close {
        response
            .headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

fn response(status: u16, headers: &[(&'static str, String)], body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            map.insert(HeaderName::from_static(name), value);
        }
    }
    response
}

async fn models(server: &Arc<Server>) -> Reply {
    let handler = Arc::clone(server);
    // A blocking wait: at most one listing runs, the others wait for it.
    let listed = tokio::task::spawn_blocking(move || {
        let agent = &handler.settings.agent;
        handler
            .models
            .get(agent::PROBE_TIMEOUT * 2, || agent.list_models())
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()));
    match listed {
        Ok(body) => Reply::json(200, body.to_vec()),
        Err(why) => http::models_unavailable(&why),
    }
}

/// A request whose head was checked and whose body is still to be read.
struct Arriving<'a> {
    scan: &'a Scan,
    index: u64,
    /// The whole request's deadline.
    deadline: Instant,
    body: Incoming,
    context: &'a ResponseContext,
}

impl Arriving<'_> {
    /// The body, at most `limit` bytes, or the reply that refuses it (framing, size,
    /// deadline, shutdown).
    async fn read(self, server: &Server, limit: usize) -> Result<Bytes, Reply> {
        // The framing as blocking_proxy reads it: a declared length over the limit, or
        // what hyper would let through (`gzip, chunked`, `Transfer-Encoding` with a
        // length).
        if let Some(error) = self.scan.scanner().refused(self.index) {
            return Err(error.reply());
        }
        if *server.shutdown.borrow() {
            return Err(http::shutting_down());
        }
        // A declared length over a limit below the framing's own is refused unread too.
        if self.body.size_hint().lower() > limit as u64 {
            return Err(http::too_large(limit));
        }
        read_body(self.body, limit, self.scan, self.index, self.deadline).await
    }
}

/// `count_tokens`: the body is read and checked, and no agent runs.
async fn count_tokens(
    server: &Arc<Server>,
    request: Arriving<'_>,
    mut record: RequestRecord,
) -> Response<Body> {
    let context = request.context;
    let limits = &server.settings.config.request_limits;
    let reply = match request.read(server, limits.max_body_bytes).await {
        Ok(body) => http::count_tokens(&body, limits),
        Err(reply) => reply,
    };
    reply_response(reply, context, &mut record)
}

/// An agent run for a request in `dialect` from `caller` (with `--agent-protocol acp`, a
/// turn on the warm agent).
async fn run(
    server: &Arc<Server>,
    request: Arriving<'_>,
    dialect: Dialect,
    caller: &CallerIds,
    mut record: RequestRecord,
) -> Response<Body> {
    let context = request.context;
    let limit = server.settings.config.request_limits.max_body_bytes;
    let body = match request.read(server, limit).await {
        Ok(body) => body,
        Err(reply) => return reply_response(reply, context, &mut record),
    };
    let Ok(permit) = Arc::clone(&server.slots).try_acquire_owned() else {
        let reply = http::busy(server.settings.max_concurrent);
        return reply_response(reply, context, &mut record);
    };
    let body = server.settings.model_aliases.apply(&body);
    let params = server.ids.params(record.number, &server.clock);
    let mut answering = match &server.warm {
        Some(warm) => {
            let config = &server.settings.config;
            record.agent = AgentEnd::Warm;
            let (ticket, how) = match warm.start_turn(dialect, &body, config, params, caller) {
                Ok(started) => started,
                Err(reply) => return reply_response(reply, context, &mut record),
            };
            record.conversation = Some(how);
            Answering::Turn(Box::new(AcpTurn {
                warm: Arc::clone(warm),
                notify: warm.notify(&ticket),
                ticket,
                out: Outgoing {
                    record: Some(record),
                    ..Outgoing::default()
                },
                ended: false,
                _permit: permit,
            }))
        }
        None => {
            let config = &server.settings.config;
            match server
                .conversations
                .decide(dialect, &body, config, params, caller)
            {
                Decided::Invalid(bridge) => {
                    record.conversation = Some(Continuation::Invalid);
                    let driven = Driven::Bridge(Box::new(bridge));
                    Answering::Run(Box::new(Run::start(
                        Arc::clone(server),
                        driven,
                        permit,
                        record,
                    )))
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
                            match live_run(server, live, arriving, permit, record).await {
                                Ok(run) => Answering::Run(run),
                                Err((reply, mut record)) => {
                                    return reply_response(reply, context, &mut record);
                                }
                            }
                        }
                        _ => {
                            let bridge =
                                Bridge::continuing(dialect, prepared, decision, config, params);
                            let driven = Driven::Bridge(Box::new(bridge));
                            let run = Run::start(Arc::clone(server), driven, permit, record);
                            Answering::Run(Box::new(run))
                        }
                    }
                }
            }
        }
    };
    let Some(Step::Head(head)) = answering.next().await else {
        unreachable!("a bridge's first output is its head");
    };
    let headers = http::head_headers(&head, context);
    if head.content_type == "text/event-stream" && head.status == 200 {
        let (chunks, taken) = mpsc::channel(1);
        tokio::spawn(answering.stream(chunks));
        let frames = futures_util::stream::unfold(taken, |mut taken| async move {
            let bytes = taken.recv().await?;
            Some((Ok(Frame::data(bytes)), taken))
        });
        let body = StreamBody::new(frames).boxed_unsync();
        return response(head.status, &headers, body);
    }
    let mut body = BytesMut::new();
    while let Some(Step::Body(bytes)) = answering.next().await {
        body.extend_from_slice(&bytes);
    }
    match answering {
        Answering::Run(run) => finish(run),
        Answering::Turn(turn) => drop(turn),
    }
    let body = Full::new(body.freeze()).boxed_unsync();
    response(head.status, &headers, body)
}

/// A request with client tools under `--cursor-mcp`: the parked run of its chat goes on
/// into it when it can (its results answer the calls the agent waits in); otherwise a
/// live chat of its own starts (fresh, or resuming the chat with `--resume`).
async fn live_run(
    server: &Arc<Server>,
    live: &Arc<LiveState>,
    (dialect, prepared, decision, params): (Dialect, Prepared, Decision, BridgeParams),
    permit: OwnedSemaphorePermit,
    record: RequestRecord,
) -> Result<Box<Run>, (Reply, RequestRecord)> {
    let parked = match &decision {
        Decision::Resume { resume, .. } => live.table.parked_chat(&resume.agent_session),
        _ => None,
    };
    let (prepared, decision, permit, record) = match parked {
        None => (prepared, decision, permit, record),
        Some(run) => {
            let (reply, answer) = oneshot::channel();
            let attach = Box::new(Attach {
                dialect,
                prepared,
                decision,
                params,
                permit,
                record,
                reply,
            });
            match run.send(LiveInput::Attach(attach)) {
                // The run ended meanwhile: the request runs on its own.
                Err(mpsc::error::SendError(LiveInput::Attach(attach))) => {
                    let Attach {
                        prepared,
                        decision,
                        permit,
                        record,
                        ..
                    } = *attach;
                    (prepared, decision, permit, record)
                }
                Err(_) => unreachable!("an attach was sent"),
                Ok(()) => match answer.await {
                    Ok(Ok(run)) => return Ok(run),
                    Ok(Err(rejected)) => {
                        let Rejected {
                            back,
                            permit,
                            record,
                        } = *rejected;
                        (back.prepared, back.decision, permit, record)
                    }
                    // Every attach a run takes is answered (its `Drop` answers the rest).
                    Err(_) => unreachable!("an attach is always answered"),
                },
            }
        }
    };
    let entropy = match mcp::entropy() {
        Ok(entropy) => entropy,
        Err(reply) => return Err((reply, record)),
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
    let driven = Driven::Live(Box::new(chat));
    Ok(Box::new(Run::start(
        Arc::clone(server),
        driven,
        permit,
        record,
    )))
}

/// What answers a request: an agent of its own, or a turn on the warm ACP agent.
enum Answering {
    // Boxed: a run is large, and a turn holds the request's record.
    Run(Box<Run>),
    Turn(Box<AcpTurn>),
}

impl Answering {
    /// The head first, then body chunks; `None` at the end.
    async fn next(&mut self) -> Option<Step> {
        match self {
            Answering::Run(run) => run.next().await,
            Answering::Turn(turn) => turn.next().await,
        }
    }

    /// Hands the rest of a stream to the response body through `chunks`.
    async fn stream(self, chunks: mpsc::Sender<Bytes>) {
        match self {
            Answering::Run(run) => stream(run, chunks).await,
            Answering::Turn(turn) => acp_stream(*turn, chunks).await,
        }
    }
}

/// Streams a turn: one chunk waits for the client at a time; meanwhile the turn's
/// output stays in the connection (whose budget bounds it).
async fn acp_stream(mut turn: AcpTurn, chunks: mpsc::Sender<Bytes>) {
    loop {
        if !turn.out.body.is_empty() {
            match chunks.reserve().await {
                Ok(permit) => permit.send(turn.out.take_body()),
                Err(_) => return,
            }
            continue;
        }
        if turn.ended {
            return;
        }
        tokio::select! {
            biased;
            () = chunks.closed() => return,
            () = turn.wait() => {}
        }
    }
}

/// One request's turn on the warm agent. Dropping it before the end means the client is
/// gone: the session is cancelled, the agent stays.
struct AcpTurn {
    warm: Arc<Warm>,
    /// Woken when the turn has output (`None`: it ended already).
    notify: Option<Arc<tokio::sync::Notify>>,
    ticket: Ticket,
    out: Outgoing,
    ended: bool,
    _permit: OwnedSemaphorePermit,
}

impl AcpTurn {
    /// Takes what the turn has now; whether anything came.
    fn take(&mut self) -> bool {
        let (head, body) = (&mut self.out.head, &mut self.out.body);
        let mut came = false;
        self.ended |= self.warm.poll(&self.ticket, |output| {
            came = true;
            match output {
                Output::Head(h) => *head = Some(h),
                Output::Body(bytes) => body.extend_from_slice(bytes),
                Output::StopAgent | Output::Respawn | Output::End => {}
            }
        });
        came
    }

    /// Waits for the turn's next output. Cancel-safe: outputs are taken after the await.
    async fn wait(&mut self) {
        if self.take() {
            return;
        }
        // Only this turn's output wakes it; a wake-up since the take is kept.
        match &self.notify {
            Some(notify) => notify.notified().await,
            None => self.ended = true,
        }
        self.take();
    }

    /// The head first, then body chunks; `None` at the end.
    async fn next(&mut self) -> Option<Step> {
        loop {
            if let Some(step) = self.out.ready() {
                return Some(step);
            }
            if self.ended {
                return None;
            }
            self.wait().await;
        }
    }
}

impl Drop for AcpTurn {
    fn drop(&mut self) {
        let mut record = self.out.record.take();
        if !self.ended {
            self.warm.client_gone(&self.ticket);
            if let Some(record) = &mut record {
                record.end = ResponseEnd::ClientGone;
            }
        }
        if let Some(record) = record {
            record.log();
        }
    }
}

/// A request of the warm agent to a session's MCP server: its body read (bounded, before
/// the request's deadline), then its response as the core gives it — whole, or an SSE
/// stream that stays open while a call waits (no request deadline cuts it; the core's
/// keep-alives and the session's end bound it, `--write-timeout-ms` every write).
async fn mcp_exchange(
    server: &Arc<Server>,
    request: Arriving<'_>,
    token: &str,
    fields: mcp::Fields,
    mut record: RequestRecord,
) -> Response<Body> {
    let context = request.context;
    let body = match request
        .read(server, mcp::body_limit(&server.settings))
        .await
    {
        Ok(body) => body,
        Err(reply) => return reply_response(reply, context, &mut record),
    };
    if let (live::TOKEN, Some(live)) = (token, &server.live) {
        return live_mcp(live, context, body, fields, record).await;
    }
    let Some(warm) = server.warm.clone() else {
        return reply_response(mcp::refused(McpRefusal::NotFound), context, &mut record);
    };
    let authorization = fields.authorization.as_deref();
    let ticket = match warm.mcp_request(token, authorization, &fields.request(&body)) {
        Ok(ticket) => ticket,
        Err(refusal) => return reply_response(mcp::refused(refusal), context, &mut record),
    };
    let mut answer = McpAnswer {
        notify: warm.notify(&ticket),
        warm,
        ticket,
        context: context.clone(),
        head: None,
        body: BytesMut::new(),
        ended: false,
        record: Some(record),
    };
    let mcp::ResponseHead {
        status,
        stream,
        headers,
    } = loop {
        if let Some(head) = answer.head.take() {
            break head;
        }
        if answer.ended {
            // Its session ended before it was answered.
            let mut record = answer.record.take().expect("taken only here");
            return reply_response(mcp::refused(McpRefusal::NotFound), context, &mut record);
        }
        answer.wait().await;
    };
    if let Some(record) = &mut answer.record {
        record.status = status;
    }
    if stream {
        let (chunks, taken) = mpsc::channel(1);
        tokio::spawn(mcp_stream(answer, chunks));
        let frames = futures_util::stream::unfold(taken, |mut taken| async move {
            let bytes = taken.recv().await?;
            Some((Ok(Frame::data(bytes)), taken))
        });
        return response(status, &headers, StreamBody::new(frames).boxed_unsync());
    }
    while !answer.ended {
        answer.wait().await;
    }
    let body = answer.take_body();
    drop(answer);
    response(status, &headers, Full::new(body).boxed_unsync())
}

/// A request of a live chat's agent to the MCP endpoint (`/mcp/cursor`), found by its
/// bearer token and answered by the chat's run: whole, or an SSE stream that stays open
/// while a call waits (bounded like the warm agent's: keep-alives, the chat's end,
/// `--write-timeout-ms`).
async fn live_mcp(
    live: &Arc<LiveState>,
    context: &ResponseContext,
    body: Bytes,
    fields: mcp::Fields,
    mut record: RequestRecord,
) -> Response<Body> {
    let Some(token) = live::token_of(fields.authorization.as_deref()) else {
        return reply_response(mcp::refused(McpRefusal::Unauthorized), context, &mut record);
    };
    let Some(run) = live.table.by_token(token) else {
        return reply_response(mcp::refused(McpRefusal::NotFound), context, &mut record);
    };
    let (reply, mut steps) = mpsc::unbounded_channel();
    let input = LiveInput::Mcp(Box::new(McpInput {
        fields,
        body,
        context: context.clone(),
        reply,
    }));
    if run.send(input).is_err() {
        return reply_response(mcp::refused(McpRefusal::NotFound), context, &mut record);
    }
    let head = match steps.recv().await {
        Some(McpStep::Head(head)) => head,
        Some(McpStep::Refused(reply)) => return reply_response(reply, context, &mut record),
        // The chat ended before it answered.
        _ => return reply_response(mcp::refused(McpRefusal::NotFound), context, &mut record),
    };
    record.status = head.status;
    record.log();
    let mcp::ResponseHead {
        status,
        stream,
        headers,
    } = head;
    if stream {
        let frames = futures_util::stream::unfold(steps, |mut steps| async move {
            match steps.recv().await? {
                McpStep::Body(bytes) => Some((Ok(Frame::data(Bytes::from(bytes))), steps)),
                _ => None,
            }
        });
        return response(status, &headers, StreamBody::new(frames).boxed_unsync());
    }
    let mut body = BytesMut::new();
    while let Some(McpStep::Body(bytes)) = steps.recv().await {
        body.extend_from_slice(&bytes);
    }
    response(status, &headers, Full::new(body.freeze()).boxed_unsync())
}

/// Streams an MCP answer: one chunk waits for the agent at a time.
async fn mcp_stream(mut answer: McpAnswer, chunks: mpsc::Sender<Bytes>) {
    loop {
        if !answer.body.is_empty() {
            match chunks.reserve().await {
                Ok(permit) => permit.send(answer.take_body()),
                Err(_) => return,
            }
            continue;
        }
        if answer.ended {
            return;
        }
        tokio::select! {
            biased;
            () = chunks.closed() => return,
            () = answer.wait() => {}
        }
    }
}

/// One MCP exchange of the warm agent: its head (status, whether a stream, headers) and
/// body as they come. Dropping it before the end means the agent hung up: a call it
/// waited in is given up.
struct McpAnswer {
    warm: Arc<Warm>,
    ticket: Ticket,
    /// Woken when the exchange has output or its server is gone (`None`: it ended
    /// already).
    notify: Option<Arc<tokio::sync::Notify>>,
    context: ResponseContext,
    head: Option<mcp::ResponseHead>,
    body: BytesMut,
    ended: bool,
    record: Option<RequestRecord>,
}

impl McpAnswer {
    /// Takes what the exchange has now; whether anything came.
    fn take(&mut self) -> bool {
        let (head, body, context) = (&mut self.head, &mut self.body, &self.context);
        let mut came = false;
        self.ended |= self.warm.poll_mcp(&self.ticket, |output| {
            came = true;
            match output {
                ExchangeOutput::Head(h) => {
                    *head = Some(mcp::ResponseHead::of(&h, context));
                }
                ExchangeOutput::Body(bytes) => body.extend_from_slice(bytes),
                ExchangeOutput::End => {}
            }
        });
        came || self.ended
    }

    /// Waits for the exchange's next output. Cancel-safe: outputs are taken after the
    /// await.
    async fn wait(&mut self) {
        if self.take() {
            return;
        }
        match &self.notify {
            Some(notify) => notify.notified().await,
            None => self.ended = true,
        }
        self.take();
    }

    /// The body bytes so far, counted as sent.
    fn take_body(&mut self) -> Bytes {
        let bytes = self.body.split().freeze();
        if let Some(record) = &mut self.record {
            record.bytes_out += bytes.len() as u64;
        }
        bytes
    }
}

impl Drop for McpAnswer {
    fn drop(&mut self) {
        if !self.ended {
            self.warm.mcp_gone(&self.ticket);
            if let Some(record) = &mut self.record {
                record.end = ResponseEnd::ClientGone;
            }
        }
        if let Some(record) = self.record.take() {
            record.log();
        }
    }
}

/// The request body, within the size limit and the request's deadline. Refused as soon as
/// the framing is (an oversize chunk is refused on its size line).
async fn read_body(
    body: Incoming,
    limit: usize,
    scan: &Scan,
    index: u64,
    deadline: Instant,
) -> Result<Bytes, Reply> {
    let mut body = Limited::new(body, limit);
    let mut collected = BytesMut::new();
    let refused = scan.wait_refused(index);
    tokio::pin!(refused);
    let late = tokio::time::sleep_until(deadline.into());
    tokio::pin!(late);
    loop {
        tokio::select! {
            frame = body.frame() => match frame {
                None => return Ok(collected.freeze()),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        collected.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
                    return Err(http::too_large(limit));
                }
                Some(Err(e)) => {
                    return Err(http::bad_request(&format!("Could not read the request body: {e}")));
                }
            },
            error = &mut refused => return Err(error.reply()),
            () = &mut late => return Err(http::request_timeout()),
        }
    }
}

/// Runs a stream: hands its chunks to the response body through `chunks`, one waiting at
/// a time. While one waits, the agent's pipes are not read (it is paused, not buffered),
/// but every deadline is still served; a closed channel is a client gone.
async fn stream(mut run: Box<Run>, chunks: mpsc::Sender<Bytes>) {
    loop {
        if run.ended {
            // The agent and the slot go now (a live chat's agent waiting in a tool call
            // is parked); the last bytes wait for the client alone (the connection's
            // write limit bounds that).
            let tail = run.out.take_body();
            finish(run);
            if !tail.is_empty() {
                let _ = chunks.send(tail).await;
            }
            return;
        }
        if run.out.body.is_empty() {
            tokio::select! {
                biased;
                () = chunks.closed() => return,
                () = run.wait(Reading::Pipes) => {}
            }
        } else {
            tokio::select! {
                biased;
                permit = chunks.reserve() => match permit {
                    Ok(permit) => permit.send(run.out.take_body()),
                    Err(_) => return,
                },
                () = run.wait(Reading::Paused) => {}
            }
        }
    }
}

/// What a request has for its client and has not handed on yet, and its log line.
#[derive(Default)]
struct Outgoing {
    head: Option<Head>,
    body: BytesMut,
    record: Option<RequestRecord>,
}

impl Outgoing {
    /// The head first, then the body so far; `None` when nothing waits.
    fn ready(&mut self) -> Option<Step> {
        if let Some(head) = self.head.take() {
            if let Some(record) = &mut self.record {
                record.status = head.status;
            }
            return Some(Step::Head(head));
        }
        (!self.body.is_empty()).then(|| Step::Body(self.take_body()))
    }

    /// The body bytes yielded so far, counted as sent.
    fn take_body(&mut self) -> Bytes {
        let bytes = self.body.split().freeze();
        if let Some(record) = &mut self.record {
            record.bytes_out += bytes.len() as u64;
        }
        bytes
    }
}

/// What a run hands to the HTTP side.
enum Step {
    Head(Head),
    Body(Bytes),
}

/// Whether a wait reads the agent's pipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Pipes,
    /// The client has not taken the last chunk: only deadlines, exit and shutdown.
    Paused,
}

/// One request's agent and bridge (or live chat). Dropping it before the bridge's end
/// means the client is gone. A live chat's run outlives its request while the agent waits
/// inside a tool call ([`park`]).
struct Run {
    server: Arc<Server>,
    driven: Driven,
    /// A live chat's channel and MCP exchanges.
    live: Option<LiveLink>,
    /// Parked: its response ended inside a tool call; the agent waits for the next
    /// request.
    parked: bool,
    /// The conversation's next request, taken by a parked run.
    attaching: Option<Box<Attach>>,
    /// The agent process's life: what to signal, when its exit goes to the bridge.
    lifecycle: Lifecycle,
    agent: Option<Agent>,
    out: Outgoing,
    ended: bool,
    shutting_down: bool,
    shutdown: watch::Receiver<bool>,
    permit: Option<OwnedSemaphorePermit>,
}

/// The agent process of a run: its handle and its pipes.
struct Agent {
    child: Child,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
}

/// The leader exited (`wait` returned): the reaper lets it go, the lifecycle is told.
fn exited(exit: io::Result<std::process::ExitStatus>, lifecycle: &mut Lifecycle) {
    if let Some(group) = lifecycle.group() {
        reaper::release(group);
    }
    lifecycle.handle_exit(exit_status(exit.unwrap_or_default()), Instant::now());
}

/// A live chat's run: its registration, its inputs, and the MCP exchanges it answers.
struct LiveLink {
    state: Arc<LiveState>,
    token: String,
    inputs: mpsc::UnboundedReceiver<LiveInput>,
    exchanges: live::Exchanges<mpsc::UnboundedSender<McpStep>>,
}

impl Run {
    fn start(
        server: Arc<Server>,
        driven: Driven,
        permit: OwnedSemaphorePermit,
        mut record: RequestRecord,
    ) -> Run {
        let shutdown = server.shutdown.clone();
        let lifecycle = Lifecycle::new(server.settings.kill_grace);
        if let Some(invocation) = driven.invocation() {
            record.set_model(invocation);
        }
        let mut driven = driven;
        let live = match (driven.live(), &server.live) {
            (Some(chat), Some(state)) => {
                let (sender, inputs) = mpsc::unbounded_channel();
                state.table.insert(chat.token(), sender);
                Some(LiveLink {
                    state: Arc::clone(state),
                    token: chat.token().to_owned(),
                    inputs,
                    exchanges: std::collections::HashMap::new(),
                })
            }
            _ => None,
        };
        let mut run = Run {
            server,
            driven,
            live,
            parked: false,
            attaching: None,
            lifecycle,
            agent: None,
            out: Outgoing {
                record: Some(record),
                ..Outgoing::default()
            },
            ended: false,
            shutting_down: false,
            shutdown,
            permit: Some(permit),
        };
        run.spawn();
        run.drain();
        run
    }

    /// Starts the agent run the bridge's invocation describes (if any) as the leader of
    /// a process group of its own, with a lifecycle of its own.
    fn spawn(&mut self) {
        let Some(invocation) = self.driven.invocation() else {
            return;
        };
        self.lifecycle = Lifecycle::new(self.server.settings.kill_grace);
        self.agent = None;
        let prompt = invocation.stdin.clone();
        let mut command =
            tokio::process::Command::from(self.server.settings.agent.command(invocation));
        match reaper::spawn(|child: &Child| child.id(), || command.spawn()) {
            Ok(mut child) => {
                if let Some(mut stdin) = child.stdin.take() {
                    // Written apart from the read loop: a large prompt must not block
                    // reading what the agent already answers.
                    tokio::spawn(async move {
                        let _ = stdin.write_all(&prompt).await;
                    });
                }
                self.lifecycle
                    .handle_spawned(child.id().unwrap_or_default());
                let agent = Agent {
                    stdout: child.stdout.take(),
                    stderr: child.stderr.take(),
                    child,
                    out_buf: vec![0; STDOUT_READ].into_boxed_slice(),
                    err_buf: vec![0; STDERR_READ].into_boxed_slice(),
                };
                if agent.stdout.is_none() {
                    self.lifecycle.handle_stdout_eof();
                }
                if agent.stderr.is_none() {
                    self.lifecycle.handle_stderr_eof();
                }
                self.agent = Some(agent);
            }
            Err(e) => {
                let program = &self.server.settings.agent.path;
                self.lifecycle.handle_spawn_failed(program, &e);
            }
        }
    }

    /// The bridge replaces a resumed chat the agent could not continue by a fresh run.
    /// The run it replaces was reported exited, so it is reaped, its group signalled, its
    /// pipes read to their end or closed: it is let go and the new one started.
    fn respawn(&mut self) {
        debug_assert!(self.lifecycle.agent_end().is_some());
        if let Some(record) = &mut self.out.record {
            record.respawns += 1;
        }
        self.spawn();
    }

    /// The next thing to send: the head first, then body chunks; `None` at the end.
    async fn next(&mut self) -> Option<Step> {
        loop {
            if let Some(step) = self.out.ready() {
                return Some(step);
            }
            if self.ended {
                return None;
            }
            self.wait(Reading::Pipes).await;
        }
    }

    /// Waits for the next input and gives it to the bridge (or the lifecycle).
    /// Cancel-safe: every input is taken after the only await.
    async fn wait(&mut self, reading: Reading) {
        let clock = self.server.clock;
        let due = self.driven.poll_timeout().map(|ms| clock.instant(ms));
        let far = || Instant::now() + Duration::from_secs(86_400);
        let Some(agent) = self.agent.as_mut() else {
            // No agent (it could not start): only the bridge's timers remain.
            match due {
                Some(at) => {
                    tokio::time::sleep_until(at.into()).await;
                    self.driven.handle_timeout(clock.now_ms());
                }
                None => self.ended = true,
            }
            self.drain();
            return;
        };
        match reading {
            Reading::Pipes => self.lifecycle.resume_reading(Instant::now()),
            // The leader's last output is still to be read once the client takes more.
            Reading::Paused => self.lifecycle.pause_reading(),
        }
        let Agent {
            child,
            stdout,
            stderr,
            out_buf,
            err_buf,
        } = agent;
        let reads = reading == Reading::Pipes;
        let lifecycle_due = self.lifecycle.poll_timeout();
        let waiting = !self.lifecycle.has_exited();
        tokio::select! {
            // Deadlines first: an agent that always has output ready must not keep
            // `--max-duration-ms` (or the stop sequence, or the end of the exit drain) from
            // being served.
            biased;
            _ = tokio::time::sleep_until(due.unwrap_or_else(far).into()), if due.is_some() => {
                self.driven.handle_timeout(clock.now_ms());
            },
            _ = tokio::time::sleep_until(lifecycle_due.unwrap_or_else(far).into()), if lifecycle_due.is_some() => {
                self.lifecycle.handle_timeout(Instant::now());
            },
            read = read_pipe(stdout, out_buf, reads) => match read {
                Ok(n) if n > 0 => {
                    let _ = self.driven.push_stdout(&out_buf[..n], clock.now_ms());
                }
                _ => {
                    *stdout = None;
                    self.lifecycle.handle_stdout_eof();
                }
            },
            read = read_pipe(stderr, err_buf, reads) => match read {
                Ok(n) if n > 0 => {
                    let _ = self.driven.push_stderr(&err_buf[..n], clock.now_ms());
                }
                _ => {
                    *stderr = None;
                    self.lifecycle.handle_stderr_eof();
                }
            },
            exit = child.wait(), if waiting => exited(exit, &mut self.lifecycle),
            input = next_input(&mut self.live) => self.take_input(input),
            _ = self.shutdown.changed(), if !self.shutting_down => {
                self.shutting_down = true;
                if let Some(record) = &mut self.out.record {
                    record.end = ResponseEnd::Shutdown;
                }
                // The bridge ends the response (in-band after the head, 503 before it)
                // and asks for the agent to be stopped, which `drain` does.
                self.driven.shutdown(clock.now_ms());
            },
        }
        self.drain();
    }

    /// Takes every output of the bridge and carries out what the lifecycle asks, until
    /// neither has more.
    fn drain(&mut self) {
        loop {
            let (mut stop, mut respawn) = (false, false);
            while let Some(output) = self.driven.poll_output() {
                match output {
                    Output::Head(head) => self.out.head = Some(head),
                    Output::Body(bytes) => self.out.body.extend_from_slice(bytes),
                    Output::StopAgent => stop = true,
                    Output::Respawn => respawn = true,
                    Output::End => self.ended = true,
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

    /// The response ended: the request's turn in its conversation ends (the chat parked
    /// or let go); whether it was parked. Once; later calls do nothing.
    fn end_turn(&mut self) -> bool {
        let table = self
            .live
            .as_ref()
            .map(|link| (&link.state.table, link.token.as_str()));
        live::end_turn(&self.server.conversations, &mut self.driven, table)
    }

    /// Whether the response ended inside the client's tool calls with the agent waiting
    /// in them: the run parks instead of ending.
    fn parks(&mut self) -> bool {
        self.ended
            && self.live.is_some()
            && self.driven.live().is_some_and(|chat| chat.is_suspended())
    }

    /// An input from outside the run: its agent's MCP request, the conversation's next
    /// request (taken by [`park`]), or the registry letting the chat go.
    fn take_input(&mut self, input: Option<LiveInput>) {
        let now = self.server.clock.now_ms();
        match input {
            // The table holds the sender for as long as the run is registered.
            None => {}
            Some(LiveInput::Mcp(input)) => {
                let McpInput {
                    fields,
                    body,
                    context,
                    reply,
                } = *input;
                let (Some(link), Some(chat)) = (&mut self.live, self.driven.live()) else {
                    return;
                };
                let request = fields.request(&body);
                match chat.handle_mcp(fields.authorization.as_deref(), &request, now) {
                    Ok(exchange) => {
                        link.exchanges.insert(exchange, (reply, context));
                    }
                    Err(_) => {
                        let refused = mcp::refused(McpRefusal::Unauthorized);
                        let _ = reply.send(McpStep::Refused(refused));
                    }
                }
            }
            Some(LiveInput::Attach(attach)) => {
                if self.parked && self.attaching.is_none() {
                    self.attaching = Some(attach);
                } else {
                    refuse_attach(attach);
                }
            }
            Some(LiveInput::Release) if self.parked => self.driven.shutdown(now),
            Some(LiveInput::Release) => {}
        }
    }

    /// Hands the live chat's MCP outputs to the connections waiting for them.
    fn pump_mcp(&mut self) {
        if let (Some(link), Driven::Live(chat)) = (&mut self.live, &mut self.driven) {
            live::pump_mcp(chat, &mut link.exchanges, self.server.clock.now_ms());
        }
    }

    /// Carries out what the lifecycle asks; whether the bridge got an input.
    fn act(&mut self) -> bool {
        let now = self.server.clock.now_ms();
        let mut fed = false;
        while let Some(action) = self.lifecycle.poll_action() {
            match action {
                Action::Signal { group, signal } => signal_group(group, signal),
                Action::StopReading => {
                    // The leader is gone; what still holds the pipes (a descendant out of
                    // the group's reach) does not hold the response. What the leader wrote
                    // before its exit and was not read yet is still in the pipes: it is
                    // taken now, without waiting for more, however late this runs.
                    if let Some(agent) = &mut self.agent {
                        let driven = &mut self.driven;
                        if let Some(stdout) = agent.stdout.take() {
                            agent::read_held(&stdout, &mut agent.out_buf, |bytes| {
                                let _ = driven.push_stdout(bytes, now);
                            });
                        }
                        if let Some(stderr) = agent.stderr.take() {
                            agent::read_held(&stderr, &mut agent.err_buf, |bytes| {
                                let _ = driven.push_stderr(bytes, now);
                            });
                        }
                        fed = true;
                    }
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
}

/// The next input of a live chat's run; never completes for another run.
async fn next_input(live: &mut Option<LiveLink>) -> Option<LiveInput> {
    match live {
        Some(link) => link.inputs.recv().await,
        None => std::future::pending().await,
    }
}

/// A run whose response ended: parked when its live chat's agent waits in the client's
/// tool calls, else let go (its agent stopped and reaped, its slot freed).
fn finish(mut run: Box<Run>) {
    // Parked before the last bytes reach the client, so that a client sending its next
    // request at once finds the chat; a chat the registry did not park is let go.
    if run.parks() && run.end_turn() {
        if let Some(record) = run.out.record.take() {
            record.log();
        }
        run.permit = None;
        run.parked = true;
        if let Some(link) = &run.live {
            link.state.table.set_parked(&link.token, true);
        }
        tokio::spawn(park(run));
    } else {
        drop(run);
    }
}

/// Hands an attach back untaken: the request runs on its own.
fn refuse_attach(attach: Box<Attach>) {
    let Attach {
        prepared,
        decision,
        permit,
        record,
        reply,
        ..
    } = *attach;
    let rejected = Rejected {
        back: NotAttached { prepared, decision },
        permit,
        record,
    };
    let _ = reply.send(Err(Box::new(rejected)));
}

/// A parked live chat's run: its response ended inside the client's tool calls, the agent
/// waits in them. Its request is over (logged, its slot freed); the run goes on serving
/// the agent's pipes, its MCP requests and the chat's deadlines until the conversation's
/// next request takes it (and it answers that request), or the agent ends (stopped when
/// the registry lets the chat go, at shutdown, or when it could no longer take the
/// results).
async fn park(mut run: Box<Run>) {
    let mut rejected = Vec::new();
    loop {
        if let Some(attach) = run.attaching.take() {
            let Attach {
                dialect,
                prepared,
                decision,
                params,
                permit,
                record,
                reply,
            } = *attach;
            let config = &run.server.settings.config;
            let chat = run.driven.live().expect("a parked run is a live chat's");
            match chat.attach(dialect, prepared, decision, config, params) {
                Ok(()) => {
                    run.parked = false;
                    if let Some(link) = &run.live {
                        link.state.table.set_parked(&link.token, false);
                    }
                    run.permit = Some(permit);
                    run.out = Outgoing {
                        record: Some(record),
                        ..Outgoing::default()
                    };
                    run.ended = false;
                    run.drain();
                    if let Err(Ok(run)) = reply.send(Ok(run)) {
                        // Its client left while waiting: the request ends here.
                        drop(run);
                    }
                    return;
                }
                Err(back) => {
                    // This process cannot take it: it is stopped before the request runs
                    // on its own (two processes must not hold one chat).
                    let now = run.server.clock.now_ms();
                    run.driven.shutdown(now);
                    run.drain();
                    rejected.push((reply, back, permit, record));
                }
            }
        }
        let exited = run.lifecycle.agent_end().is_some() || run.agent.is_none();
        if exited && run.attaching.is_none() {
            break;
        }
        run.wait(Reading::Pipes).await;
    }
    for (reply, back, permit, record) in rejected {
        let rejected = Rejected {
            back: *back,
            permit,
            record,
        };
        let _ = reply.send(Err(Box::new(rejected)));
    }
}

/// Reads from a pipe that is still open; never completes for a closed one, or while not
/// `reading`.
async fn read_pipe<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
    reading: bool,
) -> io::Result<usize> {
    match pipe {
        Some(pipe) if reading => pipe.read(buf).await,
        _ => std::future::pending().await,
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let mut record = self.out.record.take();
        if !self.ended {
            // Dropped before the end: the client is gone.
            self.driven.client_gone(self.server.clock.now_ms());
            if let Some(record) = &mut record {
                if !self.shutting_down {
                    record.end = ResponseEnd::ClientGone;
                }
            }
            self.drain();
        }
        // The response is over (every path ends here, once): the chat is parked for the
        // conversation's next request, or let go. Before the last bytes reach the client,
        // so a client that sends its next request at once finds it parked.
        let _ = self.end_turn();
        if let Some(mut link) = self.live.take() {
            // The run ends: nothing reaches it any more. What was on its way is answered.
            link.state.table.remove(&link.token);
            link.inputs.close();
            while let Ok(input) = link.inputs.try_recv() {
                match input {
                    LiveInput::Attach(attach) => refuse_attach(attach),
                    LiveInput::Mcp(input) => {
                        let refused = mcp::refused(McpRefusal::NotFound);
                        let _ = input.reply.send(McpStep::Refused(refused));
                    }
                    LiveInput::Release => {}
                }
            }
            if let Some(attach) = self.attaching.take() {
                refuse_attach(attach);
            }
            link.state.gone.notify_waiters();
        }
        let permit = self.permit.take();
        // The lifecycle goes with the agent.
        let lifecycle = std::mem::replace(&mut self.lifecycle, Lifecycle::new(Duration::ZERO));
        match (self.agent.take(), tokio::runtime::Handle::try_current()) {
            (Some(agent), Ok(runtime)) => {
                runtime.spawn(reap(agent, lifecycle, record, permit));
            }
            (Some(_), Err(_)) => {
                // No runtime left (the process is exiting): stop the group at least.
                if let Some(group) = lifecycle.group() {
                    signal_group(group, Signal::Kill);
                }
            }
            (None, _) => {
                if let Some(mut record) = record {
                    if let Some(end) = lifecycle.agent_end() {
                        record.agent = end;
                    }
                    record.log();
                }
            }
        }
    }
}

/// Waits for a run's agent to end (stopping its group when due), reaps it, logs the
/// request, and frees its slot.
async fn reap(
    mut agent: Agent,
    mut lifecycle: Lifecycle,
    record: Option<RequestRecord>,
    permit: Option<OwnedSemaphorePermit>,
) {
    // Nobody reads any more; an agent still writing gets EPIPE.
    agent.stdout = None;
    agent.stderr = None;
    lifecycle.release(Instant::now());
    loop {
        while let Some(action) = lifecycle.poll_action() {
            // Released: nothing but signals comes.
            if let Action::Signal { group, signal } = action {
                signal_group(group, signal);
            }
        }
        if lifecycle.has_exited() {
            break;
        }
        let due = lifecycle.poll_timeout();
        let far = Instant::now() + Duration::from_secs(86_400);
        tokio::select! {
            exit = agent.child.wait() => exited(exit, &mut lifecycle),
            _ = tokio::time::sleep_until(due.unwrap_or(far).into()), if due.is_some() => {
                lifecycle.handle_timeout(Instant::now());
            }
        }
    }
    if let Some(mut record) = record {
        if let Some(end) = lifecycle.agent_end() {
            record.agent = end;
        }
        record.log();
    }
    drop(permit);
}
