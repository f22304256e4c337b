//! An OpenAI-compatible server on top of cursor-agent: tokio, hyper, and agentwire's
//! [`Bridge`] making every protocol decision.
//!
//! ```text
//! cargo run --release -p agentwire-proxy -- --demo      # no Cursor account needed
//! cargo run --release -p agentwire-proxy -- [--listen ADDR] [--api-key KEY] [--agent-bin PATH] …
//! ```
//!
//! Routes: `POST /v1/chat/completions` (and `/chat/completions`), `GET /v1/models`,
//! `GET /health`, CORS preflight on any path; OpenAI-shaped 401/404/405/413/429 otherwise.
//! Every flag is shared with `blocking_proxy` (see `--help`).
//!
//! How a request runs: the body is read (bounded), a concurrency slot taken, the bridge
//! built, and cursor-agent spawned as the leader of its own process group with the prompt
//! on stdin. Then one loop waits on the agent's stdout, its stderr, its exit, the bridge's
//! next deadline ([`Bridge::poll_timeout`], the only timer) and server shutdown, feeds
//! whichever comes to the bridge, and hands the outputs on: the head becomes the response
//! head, each body chunk is sent to the client as soon as it is yielded, `StopAgent`
//! signals the group.
//!
//! The run lives inside the response body (or, before the head, inside the request's
//! future). When the client goes away hyper drops it, and its `Drop` tells the bridge
//! `client_gone` and stops the group; a reaper task then waits for the leader (SIGKILL
//! after a grace period), reaps it, logs the request and only then frees the slot — so
//! every path, finished, abandoned, timed out or shut down, ends the same way.

use agentwire_proxy as common;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentwire::bridge::{Bridge, Head, Output};
use agentwire::cursor::ExitStatus;
use bytes::{Bytes, BytesMut};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStderr, ChildStdout};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use common::agent::{Signal, Stopper, exit_status, signal_group};
use common::http::{self, Reply, Route};
use common::models::ModelCache;
use common::record::{AgentEnd, RequestRecord, ResponseEnd};
use common::{Clock, RequestIds, Settings};

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Bytes read from the agent's stdout at a time.
const STDOUT_READ: usize = 32 * 1024;
/// Bytes read from its stderr at a time.
const STDERR_READ: usize = 4 * 1024;

struct Server {
    settings: Settings,
    clock: Clock,
    ids: RequestIds,
    slots: Arc<Semaphore>,
    models: ModelCache,
    shutdown: watch::Receiver<bool>,
}

impl Server {
    fn in_flight(&self) -> u32 {
        self.settings.max_concurrent - self.slots.available_permits() as u32
    }
}

fn main() -> ExitCode {
    let settings = match common::start("tokio_proxy") {
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
    println!("{}", settings.banner(bound));
    let (shutdown_tx, shutdown) = watch::channel(false);
    let max = settings.max_concurrent;
    let server = Arc::new(Server {
        slots: Arc::new(Semaphore::new(max as usize)),
        models: ModelCache::new(settings.models_ttl),
        settings,
        clock: Clock::new(),
        ids: RequestIds::new(),
        shutdown,
    });
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
                Ok((stream, peer)) => serve_connection(&server, &graceful, stream, peer),
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
    ExitCode::SUCCESS
}

fn serve_connection(
    server: &Arc<Server>,
    graceful: &GracefulShutdown,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
) {
    let _ = stream.set_nodelay(true);
    let handler = Arc::clone(server);
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(server.settings.header_timeout)
        .serve_connection(
            TokioIo::new(stream),
            service_fn(move |request| handle(Arc::clone(&handler), request)),
        );
    let connection = graceful.watch(connection);
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(%peer, %e, "connection ended with an error");
        }
    });
}

async fn handle(
    server: Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let mut record = RequestRecord::new(
        server.ids.next(),
        request.method().as_str(),
        request.uri().path(),
    );
    let route = http::route(request.method().as_str(), request.uri().path());
    let header = |name: &str| request.headers().get(name).map(HeaderValue::as_bytes);
    let reply = if route == Route::Preflight {
        let asked =
            header("access-control-request-headers").and_then(|h| std::str::from_utf8(h).ok());
        http::preflight(asked)
    } else if !server.settings.auth.allows(header("authorization")) {
        http::unauthorized()
    } else {
        match route {
            Route::Chat => return Ok(chat(server, request, record).await),
            Route::Models => models(&server).await,
            Route::Health => http::health(&server.settings, server.in_flight()),
            Route::NotFound => http::not_found(request.method().as_str(), request.uri().path()),
            Route::MethodNotAllowed(allow) => {
                http::method_not_allowed(request.method().as_str(), request.uri().path(), allow)
            }
            Route::Preflight => unreachable!("answered above"),
        }
    };
    Ok(reply_response(reply, &mut record))
}

/// A reply the proxy wrote itself, logged as the request's end.
fn reply_response(reply: Reply, record: &mut RequestRecord) -> Response<Body> {
    record.status = reply.status;
    record.bytes_out = reply.body.len() as u64;
    record.log();
    response(
        reply.status,
        &reply.headers,
        Full::new(Bytes::from(reply.body)).boxed_unsync(),
    )
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
    for (name, value) in http::CORS_HEADERS {
        map.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

async fn models(server: &Server) -> Reply {
    if let Some(body) = server.models.fresh(Instant::now()) {
        return Reply::json(200, body.to_vec());
    }
    let agent = server.settings.agent.clone();
    let listing = tokio::task::spawn_blocking(move || agent.list_models())
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
    match server.models.update(Instant::now(), listing) {
        Ok(body) => Reply::json(200, body.to_vec()),
        Err(why) => http::models_unavailable(&why),
    }
}

async fn chat(
    server: Arc<Server>,
    request: Request<Incoming>,
    mut record: RequestRecord,
) -> Response<Body> {
    let limit = server.settings.config.request_limits.max_body_bytes;
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return reply_response(http::too_large(limit), &mut record);
    }
    if *server.shutdown.borrow() {
        return reply_response(http::shutting_down(), &mut record);
    }
    let body = match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return reply_response(http::too_large(limit), &mut record);
        }
        Err(e) => {
            let message = format!("Could not read the request body: {e}");
            return reply_response(http::bad_request(&message), &mut record);
        }
    };
    let Ok(permit) = Arc::clone(&server.slots).try_acquire_owned() else {
        return reply_response(http::busy(server.settings.max_concurrent), &mut record);
    };
    let params = server.ids.params(record.number, &server.clock);
    let bridge = Bridge::new(&body, &server.settings.config, params);
    let mut run = Run::start(server, bridge, permit, record);
    let Some(Step::Head(head)) = run.next().await else {
        unreachable!("a bridge's first output is its head");
    };
    let headers = http::head_headers(&head);
    if head.content_type == "text/event-stream" && head.status == 200 {
        let frames = futures_util::stream::unfold(run, |mut run| async move {
            match run.next().await {
                Some(Step::Body(bytes)) => Some((Ok(Frame::data(bytes)), run)),
                _ => None,
            }
        });
        return response(
            head.status,
            &headers,
            StreamBody::new(frames).boxed_unsync(),
        );
    }
    let mut body = BytesMut::new();
    while let Some(Step::Body(bytes)) = run.next().await {
        body.extend_from_slice(&bytes);
    }
    drop(run);
    response(
        head.status,
        &headers,
        Full::new(body.freeze()).boxed_unsync(),
    )
}

/// What a run hands to the HTTP side.
enum Step {
    Head(Head),
    Body(Bytes),
}

/// One request's agent and bridge. Dropping it before the bridge's end means the client
/// is gone.
struct Run {
    server: Arc<Server>,
    bridge: Bridge,
    agent: Option<Agent>,
    head: Option<Head>,
    body: BytesMut,
    ended: bool,
    shutting_down: bool,
    shutdown: watch::Receiver<bool>,
    record: Option<RequestRecord>,
    permit: Option<OwnedSemaphorePermit>,
}

/// The agent process of a run.
struct Agent {
    child: Child,
    group: u32,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    status: Option<std::process::ExitStatus>,
    reported: bool,
    stopper: Stopper,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
}

impl Run {
    fn start(
        server: Arc<Server>,
        bridge: Bridge,
        permit: OwnedSemaphorePermit,
        mut record: RequestRecord,
    ) -> Run {
        let shutdown = server.shutdown.clone();
        let mut run = Run {
            server,
            bridge,
            agent: None,
            head: None,
            body: BytesMut::new(),
            ended: false,
            shutting_down: false,
            shutdown,
            record: None,
            permit: Some(permit),
        };
        if let Some(invocation) = run.bridge.invocation() {
            record.set_model(invocation);
            let prompt = invocation.stdin.clone();
            let command = run.server.settings.agent.command(invocation);
            match tokio::process::Command::from(command).spawn() {
                Ok(mut child) => {
                    if let Some(mut stdin) = child.stdin.take() {
                        // Written apart from the read loop: a large prompt must not block
                        // reading what the agent already answers.
                        tokio::spawn(async move {
                            let _ = stdin.write_all(&prompt).await;
                        });
                    }
                    run.agent = Some(Agent {
                        group: child.id().unwrap_or_default(),
                        stdout: child.stdout.take(),
                        stderr: child.stderr.take(),
                        child,
                        status: None,
                        reported: false,
                        stopper: Stopper::new(run.server.settings.kill_grace),
                        out_buf: vec![0; STDOUT_READ].into_boxed_slice(),
                        err_buf: vec![0; STDERR_READ].into_boxed_slice(),
                    });
                }
                Err(e) => {
                    record.agent = AgentEnd::SpawnFailed;
                    let now = run.server.clock.now_ms();
                    let message = format!(
                        "could not start {}: {e}\n",
                        run.server.settings.agent.path.display()
                    );
                    let _ = run.bridge.push_stderr(message.as_bytes(), now);
                    let _ = run.bridge.agent_exited(ExitStatus::Code(127), now);
                }
            }
        }
        run.record = Some(record);
        run.drain();
        run
    }

    /// The next thing to send: the head first, then body chunks; `None` at the end.
    async fn next(&mut self) -> Option<Step> {
        loop {
            if let Some(head) = self.head.take() {
                if let Some(record) = &mut self.record {
                    record.status = head.status;
                }
                return Some(Step::Head(head));
            }
            if !self.body.is_empty() {
                let bytes = self.body.split().freeze();
                if let Some(record) = &mut self.record {
                    record.bytes_out += bytes.len() as u64;
                }
                return Some(Step::Body(bytes));
            }
            if self.ended {
                return None;
            }
            self.wait().await;
        }
    }

    /// Waits for the next input and gives it to the bridge.
    async fn wait(&mut self) {
        let clock = self.server.clock;
        let due = self.bridge.poll_timeout().map(|ms| clock.instant(ms));
        let Some(agent) = self.agent.as_mut() else {
            // No agent (it could not start): only the bridge's timers remain.
            match due {
                Some(at) => {
                    tokio::time::sleep_until(at.into()).await;
                    self.bridge.handle_timeout(clock.now_ms());
                }
                None => self.ended = true,
            }
            self.drain();
            return;
        };
        let Agent {
            child,
            group,
            stdout,
            stderr,
            status,
            reported,
            stopper,
            out_buf,
            err_buf,
        } = agent;
        let group = *group;
        let stop_due = stopper.deadline();
        let far = || Instant::now() + Duration::from_secs(86_400);
        tokio::select! {
            biased;
            read = read_pipe(stdout, out_buf) => match read {
                Ok(n) if n > 0 => {
                    let _ = self.bridge.push_stdout(&out_buf[..n], clock.now_ms());
                }
                _ => *stdout = None,
            },
            read = read_pipe(stderr, err_buf) => match read {
                Ok(n) if n > 0 => {
                    let _ = self.bridge.push_stderr(&err_buf[..n], clock.now_ms());
                }
                _ => *stderr = None,
            },
            exit = child.wait(), if status.is_none() => {
                *status = Some(exit.unwrap_or_else(|_| std::process::ExitStatus::default()));
                stopper.exited();
                // Whatever the leader left behind (children holding the pipes) goes too.
                signal_group(group, Signal::Kill);
            },
            _ = tokio::time::sleep_until(due.unwrap_or_else(far).into()), if due.is_some() => {
                self.bridge.handle_timeout(clock.now_ms());
            },
            _ = tokio::time::sleep_until(stop_due.unwrap_or_else(far).into()), if stop_due.is_some() => {
                if let Some(signal) = stopper.on_deadline(Instant::now()) {
                    signal_group(group, signal);
                }
            },
            _ = self.shutdown.changed(), if !self.shutting_down => {
                self.shutting_down = true;
                if let Some(record) = &mut self.record {
                    record.end = ResponseEnd::Shutdown;
                }
                // The bridge ends the response (in-band after the head, 503 before it)
                // and asks for the agent to be stopped, which `drain` does.
                self.bridge.shutdown(clock.now_ms());
            },
        }
        if let Some(exit) = status {
            if stdout.is_none() && stderr.is_none() && !*reported {
                *reported = true;
                let _ = self.bridge.agent_exited(exit_status(*exit), clock.now_ms());
            }
        }
        self.drain();
    }

    /// Takes every output of the bridge.
    fn drain(&mut self) {
        while let Some(output) = self.bridge.poll_output() {
            match output {
                Output::Head(head) => self.head = Some(head),
                Output::Body(bytes) => self.body.extend_from_slice(bytes),
                Output::StopAgent => {
                    if let Some(agent) = &mut self.agent {
                        if let Some(signal) = agent.stopper.stop(Instant::now()) {
                            signal_group(agent.group, signal);
                        }
                    }
                }
                Output::End => self.ended = true,
            }
        }
    }
}

/// Reads from a pipe that is still open; never completes for a closed one.
async fn read_pipe<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let mut record = self.record.take();
        if !self.ended {
            // Dropped before the end: hyper let go of the response, the client is gone.
            self.bridge.client_gone(self.server.clock.now_ms());
            if let Some(record) = &mut record {
                if !self.shutting_down {
                    record.end = ResponseEnd::ClientGone;
                }
            }
            self.drain();
        }
        let permit = self.permit.take();
        match (self.agent.take(), tokio::runtime::Handle::try_current()) {
            (Some(agent), Ok(runtime)) => {
                runtime.spawn(reap(agent, record, permit));
            }
            (Some(agent), Err(_)) => {
                // No runtime left (the process is exiting): stop the group at least.
                signal_group(agent.group, Signal::Kill);
            }
            (None, _) => {
                if let Some(record) = record {
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
    record: Option<RequestRecord>,
    permit: Option<OwnedSemaphorePermit>,
) {
    // Nobody reads any more; an agent still writing gets EPIPE.
    agent.stdout = None;
    agent.stderr = None;
    agent.stopper.response_over(Instant::now());
    let status = loop {
        if let Some(status) = agent.status {
            break status;
        }
        let stop_due = agent.stopper.deadline();
        let far = Instant::now() + Duration::from_secs(86_400);
        tokio::select! {
            exit = agent.child.wait() => {
                agent.status = Some(exit.unwrap_or_else(|_| std::process::ExitStatus::default()));
                agent.stopper.exited();
            }
            _ = tokio::time::sleep_until(stop_due.unwrap_or(far).into()), if stop_due.is_some() => {
                if let Some(signal) = agent.stopper.on_deadline(Instant::now()) {
                    signal_group(agent.group, signal);
                }
            }
        }
    };
    signal_group(agent.group, Signal::Kill);
    if let Some(mut record) = record {
        let status = exit_status(status);
        record.agent = match agent.stopper.signalled() {
            Some(signal) => AgentEnd::Stopped(signal, status),
            None => AgentEnd::Exited(status),
        };
        record.log();
    }
    drop(permit);
}
