//! `--agent-protocol acp`: one warm agent process for the whole server, every request a
//! turn on it ([`agentwire::acp::Connection`]), in its conversation.
//!
//! ```text
//!  request handler ── start_turn ──► Warm (the Connection, under one lock) ──► writer thread ──► agent stdin
//!        ▲   poll(ticket) ◄── outputs stay in the turn until taken      ◄── stdout / stderr threads
//!        └── woken when its turn has output (Connection::poll_ready) ◄── waiter thread (exit)
//!  MCP handler ── mcp_request ──► the session's MCP server (Connection::handle_mcp)
//!        ▲   poll_mcp(ticket) ◄── head, JSON or SSE bytes, end; woken by poll_mcp_ready, or its server gone
//!                                    supervisor thread: timeouts, restarts with back-off, shutdown
//! ```
//!
//! **Conversations.** Every request goes through [`Connection::start_conversation_turn`]
//! with its caller ([`CallerIds`]: the key's owner, Claude Code's ids) and 32 bytes of the
//! operating system's randomness, from which a session made for it draws its MCP server's
//! path and secret. A session that answered is parked in the connection's registry for
//! the conversation's next request (`--conversations`, `--conversation-ttl-secs`,
//! `--max-parked`, `--max-parked-per-owner`; the connection's defaults otherwise); a
//! request with client tools gets a session whose MCP server, on the proxy's own
//! listener ([`mcp`](crate::mcp)), serves those tools to the agent, and a tool round ends
//! the response while the agent stays inside its calls. The connection's timers (MCP
//! keep-alives, call limits, the registry's expiry) are the supervisor's, as every
//! other; shutdown cancels and closes the parked sessions before the agent is stopped.
//!
//! The agent side is the same for both proxies: one process for the server needs a
//! handful of threads (its pipes, its exit, the supervisor), not one per request. The
//! request side keeps each proxy's I/O model: `tokio_proxy` awaits its turn's
//! [`Warm::notify`], `blocking_proxy` blocks in [`Warm::wait`]. After every input
//! only the handlers of the turns [`Connection::poll_ready`] names are woken, not every
//! handler; a handler always polls its turn before it waits, so a turn left undrained
//! while its client could not take more is drained when the client can again.
//!
//! A turn's output stays in the connection until its handler takes it, so the
//! connection's per-turn output budget holds for a client that reads slowly. A client
//! gone is [`Connection::client_gone`] (the agent cancels that session and lives on);
//! only [`Decision::Restart`] or the agent's exit replaces the process, in its own
//! process group, killed and reaped on every path.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agentwire::acp::{
    AcpConfig, Connection, Decision, LaunchFile, McpExchange, McpRefusal, TurnId,
};
use agentwire::bridge::{BridgeParams, Config, Dialect, Output};
use agentwire::mcp::{ExchangeOutput, HttpRequest};

use crate::agent::{AgentProgram, Signal, escaped_groups, exit_status, signal_group};
use crate::conversations::{CallerIds, Continuation};
use crate::http::{self, Reply};
use crate::lifecycle::{Action, Lifecycle};
use crate::{Clock, Settings, reaper};

/// How long `/v1/models` waits for the agent's list when it is not known yet (the
/// handshake and the pool's first session of a process just started or restarted).
pub const MODELS_WAIT: Duration = Duration::from_secs(10);

/// Bytes read from the agent's stdout at a time.
const STDOUT_READ: usize = 32 * 1024;
/// The first restart after a process that never became ready waits this long; each
/// further one twice as long, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Stack of the pipe, writer and waiter threads.
const THREAD_STACK: usize = 128 * 1024;

/// One request's turn on the warm agent, or one request of the agent to a session's MCP
/// server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket {
    generation: u64,
    of: Of,
}

/// What a [`Ticket`] waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Of {
    Turn(TurnId),
    Mcp(McpExchange),
}

/// The warm agent: its connection, its process, and everyone waiting on them.
pub struct Warm {
    state: Mutex<State>,
    /// Wakes blocked threads (the supervisor, `/v1/models`, shutdown) on every change.
    changed: Condvar,
    clock: Clock,
    program: AgentProgram,
    args: Vec<String>,
    config: AcpConfig,
    kill_grace: Duration,
}

struct State {
    connection: Connection,
    /// Which process the connection talks to; pipe and exit reports of older ones are
    /// dropped.
    generation: u64,
    /// Connections of earlier processes whose turns have not all been taken yet.
    retired: HashMap<u64, Connection>,
    /// Turn tickets not yet finished, per generation (an MCP ticket of an earlier
    /// generation has ended: its server went with the process).
    tickets: HashMap<u64, usize>,
    /// The current process's life (its spawn, pipes, exit, stop).
    lifecycle: Lifecycle,
    process: Option<Process>,
    /// The wake-up of every ticket not yet finished.
    signals: HashMap<Ticket, Wakeup>,
    restart: Option<String>,
    /// Processes replaced so far.
    restarts: u64,
    shutting_down: bool,
    stopped: bool,
    processes_started: u64,
    /// The connection has not met a process yet: the first one takes it over, with the
    /// turns that arrived before it was spawned.
    fresh: bool,
    /// The private directory of a file the agent reads, removed once the agent is
    /// stopped for good.
    launch_files: Option<tempfile::TempDir>,
}

/// The private directory of a file the agent reads ([`LaunchFile`]).
struct LaunchDir {
    dir: tempfile::TempDir,
    /// The arguments naming it, and those that follow.
    args: Vec<String>,
}

impl LaunchDir {
    /// Writes `file` in a directory of the proxy's own.
    fn write(file: &LaunchFile) -> std::io::Result<LaunchDir> {
        use std::os::unix::fs::PermissionsExt;
        // Its own user's only: the agent's settings are nobody else's to read or change.
        let dir = tempfile::Builder::new()
            .prefix("agentwire-acp-settings-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?;
        let path = dir.path().join(file.name);
        std::fs::write(&path, &file.contents)?;
        let mut args = vec![file.flag.to_owned(), path.display().to_string()];
        args.extend(file.after.iter().cloned());
        Ok(LaunchDir { dir, args })
    }
}

/// How a request handler is woken when its turn (or MCP exchange) has output.
struct Wakeup {
    /// Set when woken, cleared when the handler polls.
    woken: bool,
    /// For a blocked thread ([`Warm::wait`]).
    condvar: Arc<Condvar>,
    /// For a task ([`Warm::notify`]); `notify_one` keeps a wake-up that comes before
    /// the task waits.
    notify: Arc<tokio::sync::Notify>,
}

impl Wakeup {
    fn new() -> Wakeup {
        Wakeup {
            woken: false,
            condvar: Arc::new(Condvar::new()),
            notify: Arc::new(tokio::sync::Notify::new()),
        }
    }
}

/// The live agent process.
struct Process {
    /// Bytes for its stdin go to the writer thread.
    stdin: mpsc::Sender<Vec<u8>>,
    /// The process groups its detached descendants lead, found when it is stopped: they
    /// get every signal its own group gets.
    escaped: Vec<u32>,
}

impl Warm {
    /// Starts the supervisor, which spawns `program` with `args` and keeps it running;
    /// `Err` if its thread cannot start.
    pub fn start(
        program: AgentProgram,
        args: Vec<String>,
        config: AcpConfig,
        kill_grace: Duration,
        clock: Clock,
    ) -> std::io::Result<Arc<Warm>> {
        Warm::start_launched(program, (args, None), config, kill_grace, clock)
    }

    /// [`start`](Self::start), with a file the agent reads, kept until the agent is
    /// stopped for good.
    fn start_launched(
        program: AgentProgram,
        (mut args, file): (Vec<String>, Option<LaunchDir>),
        config: AcpConfig,
        kill_grace: Duration,
        clock: Clock,
    ) -> std::io::Result<Arc<Warm>> {
        let launch_files = file.map(|file| {
            args.extend(file.args);
            file.dir
        });
        let connection = Connection::new(config.clone(), clock.now_ms());
        let warm = Arc::new(Warm {
            state: Mutex::new(State {
                connection,
                generation: 0,
                retired: HashMap::new(),
                tickets: HashMap::new(),
                lifecycle: Lifecycle::new(kill_grace),
                process: None,
                signals: HashMap::new(),
                restart: None,
                restarts: 0,
                shutting_down: false,
                stopped: false,
                processes_started: 0,
                fresh: true,
                launch_files,
            }),
            changed: Condvar::new(),
            clock,
            program,
            args,
            config,
            kill_grace,
        });
        let supervisor = Arc::clone(&warm);
        std::thread::Builder::new()
            .name("acp-supervisor".into())
            .spawn(move || supervisor.supervise())?;
        Ok(warm)
    }

    /// The warm agent `settings` ask for (`--agent-protocol acp`), started, its sessions'
    /// MCP servers on the listener `bound`; `None` for per-request agents.
    pub fn for_settings(
        settings: &Settings,
        bound: SocketAddr,
        clock: Clock,
    ) -> std::io::Result<Option<Arc<Warm>>> {
        let Some(acp) = settings.acp.clone() else {
            return Ok(None);
        };
        let mut config = acp.config;
        config.mcp_endpoint = Some(crate::mcp::endpoint(bound));
        let program = settings.agent.clone();
        let file = acp.launch.file.as_ref().map(LaunchDir::write).transpose()?;
        let mut args = acp.args;
        args.extend(acp.launch.args.iter().cloned());
        Warm::start_launched(program, (args, file), config, settings.kill_grace, clock).map(Some)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request of `dialect` from `caller`, in its conversation: its turn, whose outputs
    /// [`poll`](Self::poll) gives, and how it began (resumed, fresh) for its log line. `Err`
    /// is the reply instead: the server is shutting down, or no randomness could be had
    /// for the session's secret.
    pub fn start_turn(
        &self,
        dialect: Dialect,
        body: &[u8],
        config: &Config,
        params: BridgeParams,
        caller: &CallerIds,
    ) -> Result<(Ticket, Continuation), Reply> {
        let entropy = crate::mcp::entropy()?;
        let mut state = self.lock();
        if state.shutting_down {
            return Err(http::shutting_down());
        }
        let before = state.connection.conversation_stats().clone();
        let turn = state.connection.start_conversation_turn(
            dialect,
            body,
            config,
            params,
            caller.caller(),
            entropy,
        );
        let how = Continuation::between(&before, state.connection.conversation_stats());
        let generation = state.generation;
        *state.tickets.entry(generation).or_default() += 1;
        let ticket = Ticket {
            generation,
            of: Of::Turn(turn),
        };
        state.signals.insert(ticket, Wakeup::new());
        self.settle(&mut state);
        Ok((ticket, how))
    }

    /// Hands every output `ticket` has now to `each`; whether the response has ended.
    /// `Output::StopAgent` never comes (the connection cancels the session instead).
    pub fn poll(&self, ticket: &Ticket, mut each: impl FnMut(Output<'_>)) -> bool {
        let Of::Turn(turn) = ticket.of else {
            return true;
        };
        let mut state = self.lock();
        let state = &mut *state;
        if let Some(signal) = state.signals.get_mut(ticket) {
            signal.woken = false;
        }
        let connection = if ticket.generation == state.generation {
            &mut state.connection
        } else if let Some(connection) = state.retired.get_mut(&ticket.generation) {
            connection
        } else {
            return true;
        };
        let mut ended = false;
        while let Some(output) = connection.poll_output(turn) {
            ended |= output == Output::End;
            each(output);
        }
        if ended {
            state.finish(ticket);
        }
        ended
    }

    /// The client of `ticket` hung up: its session is cancelled (and closed: the
    /// conversation's next request is fresh), the agent stays.
    pub fn client_gone(&self, ticket: &Ticket) {
        let mut state = self.lock();
        let now = self.clock.now_ms();
        if let (Of::Turn(turn), true) = (ticket.of, ticket.generation == state.generation) {
            state.connection.client_gone(turn, now);
            while state.connection.poll_output(turn).is_some() {}
        }
        state.finish(ticket);
        self.settle(&mut state);
    }

    /// A request of the agent to the MCP endpoint, under path segment `token`, with the
    /// `Authorization` field `authorization`, its Host and Origin checked and its body
    /// read: its ticket, whose response [`poll_mcp`](Self::poll_mcp) gives; `Err` when no
    /// session's server takes it (answer [`mcp::refused`](crate::mcp::refused)).
    pub fn mcp_request(
        &self,
        token: &str,
        authorization: Option<&[u8]>,
        request: &HttpRequest<'_>,
    ) -> Result<Ticket, McpRefusal> {
        let mut state = self.lock();
        let now = self.clock.now_ms();
        let exchange = state
            .connection
            .handle_mcp(token, authorization, request, now)?;
        let ticket = Ticket {
            generation: state.generation,
            of: Of::Mcp(exchange),
        };
        state.signals.insert(ticket, Wakeup::new());
        self.settle(&mut state);
        Ok(ticket)
    }

    /// Hands every output the MCP exchange of `ticket` has now to `each` (the head, body
    /// bytes, `End`); whether its response has ended: its `End` was given, or its server
    /// is gone with its session (then end the response as it stands).
    pub fn poll_mcp(&self, ticket: &Ticket, mut each: impl FnMut(ExchangeOutput<'_>)) -> bool {
        let Of::Mcp(exchange) = ticket.of else {
            return true;
        };
        let mut state = self.lock();
        let Some(signal) = state.signals.get_mut(ticket) else {
            // Finished: its end was given.
            return true;
        };
        signal.woken = false;
        let mut ended = ticket.generation != state.generation;
        while !ended {
            let Some(output) = state.connection.poll_mcp_output(exchange) else {
                break;
            };
            ended = output == ExchangeOutput::End;
            each(output);
        }
        ended |= !state.connection.is_mcp_server_open(exchange);
        if ended {
            state.finish(ticket);
        }
        ended
    }

    /// The agent hung up on the MCP exchange of `ticket` before its end: a call it was
    /// waiting in is given up.
    pub fn mcp_gone(&self, ticket: &Ticket) {
        let mut state = self.lock();
        let now = self.clock.now_ms();
        if let (Of::Mcp(exchange), true) = (ticket.of, ticket.generation == state.generation) {
            state.connection.mcp_exchange_gone(exchange, now);
        }
        state.finish(ticket);
        self.settle(&mut state);
    }

    /// Wakes the handler of `ticket` (a client watcher saw its client go).
    pub fn wake(&self, ticket: &Ticket) {
        self.lock().wake(ticket);
    }

    /// Blocks until `ticket`'s turn or MCP exchange may have output (or
    /// [`wake`](Self::wake)) or `until` passed.
    pub fn wait(&self, ticket: &Ticket, until: Instant) {
        let mut state = self.lock();
        let Some(condvar) = state.signals.get(ticket).map(|s| Arc::clone(&s.condvar)) else {
            return;
        };
        loop {
            let woken = state.signals.get(ticket).is_none_or(|s| s.woken);
            let left = until.saturating_duration_since(Instant::now());
            if woken || left.is_zero() {
                return;
            }
            state = condvar
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// What wakes a task waiting for `ticket`'s output: await its `notified()` after
    /// a [`poll`](Self::poll) that found nothing (a wake-up in between is kept). `None`
    /// for a finished ticket.
    pub fn notify(&self, ticket: &Ticket) -> Option<Arc<tokio::sync::Notify>> {
        self.lock()
            .signals
            .get(ticket)
            .map(|s| Arc::clone(&s.notify))
    }

    /// The agent's models (as [`Connection::models`]) followed by the default names the
    /// connection accepts that the agent does not list; `None` when the list is not known
    /// within `wait` (no session yet: the agent starts, restarts, or the pool is empty).
    pub fn models(&self, wait: Duration) -> Option<Vec<String>> {
        let until = Instant::now() + wait;
        let mut state = self.lock();
        loop {
            if let Some(models) = state.connection.models() {
                let mut names = models.to_vec();
                for name in &self.config.default_model_names {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                return Some(names);
            }
            // Without a pool no session is made before a request, and after shutdown
            // none at all: nothing to wait for.
            let left = until.saturating_duration_since(Instant::now());
            if self.config.pool_size == 0 || state.shutting_down || left.is_zero() {
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// `/v1/models` from the agent's list ([`models`](Self::models)); blocks up to
    /// [`MODELS_WAIT`] while it is not known yet, then 503 with `Retry-After`.
    pub fn models_reply(&self) -> Reply {
        match self.models(MODELS_WAIT) {
            Some(ids) => Reply::json(200, crate::models::acp_models_json(&ids)),
            None => {
                let mut reply = http::models_unavailable(
                    "the ACP agent has not created a session yet (it is starting or restarting, or --acp-pool-size is 0 and no request has run); retry shortly",
                );
                reply.headers.push(("retry-after", "1".to_owned()));
                reply
            }
        }
    }

    /// What `/health` says of `warm`, if there is one: its [`health`](Self::health) to a
    /// `detailed` (authenticated) caller, nothing to others.
    pub fn health_of(warm: Option<&Arc<Warm>>, detailed: bool) -> Option<serde_json::Value> {
        warm.filter(|_| detailed).map(|warm| warm.health())
    }

    /// What an authenticated `/health` says of the warm agent.
    pub fn health(&self) -> serde_json::Value {
        let state = self.lock();
        let connection = &state.connection;
        let status = if state.shutting_down {
            "stopping"
        } else if connection.is_ready() {
            "ready"
        } else if state.restarts == 0 && !connection.is_dead() {
            "starting"
        } else {
            "restarting"
        };
        let active = connection.active_turns()
            + state
                .retired
                .values()
                .map(Connection::active_turns)
                .sum::<usize>();
        serde_json::json!({
            "protocol": "acp",
            "status": status,
            "restarts": state.restarts,
            "active_turns": active,
            "queued_turns": connection.queued_turns(),
            "models": connection.models().map(<[String]>::len),
            "sessions_closed": connection.sessions_closed(),
        })
    }

    /// What an authenticated `/health` says of the conversations on the warm agent's
    /// sessions (as [`conversations::health`](crate::conversations::health)); counted
    /// since the current process started.
    pub fn conversations_health(&self) -> serde_json::Value {
        let state = self.lock();
        let connection = &state.connection;
        crate::conversations::health(
            &self.config.conversations,
            connection.conversation_stats(),
            connection.parked_sessions(),
            connection.busy_sessions(),
        )
    }

    /// Agent processes started so far.
    pub fn processes_started(&self) -> u64 {
        self.lock().processes_started
    }

    /// The server shuts down: every turn ends (503 before its head, in-band after), the
    /// parked sessions are cancelled and closed (their MCP servers with them), and the
    /// supervisor stops the agent's group and reaps it.
    pub fn shutdown(&self) {
        let mut state = self.lock();
        if state.shutting_down {
            return;
        }
        state.shutting_down = true;
        let now = self.clock.now_ms();
        state.connection.shutdown(now);
        for connection in state.retired.values_mut() {
            connection.shutdown(now);
        }
        self.settle(&mut state);
    }

    /// Waits until the agent is stopped and reaped after [`shutdown`](Self::shutdown);
    /// false if `limit` passed first.
    pub fn wait_stopped(&self, limit: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, limit, |s| !s.stopped)
            .unwrap_or_else(|e| e.into_inner());
        state.stopped
    }

    /// After every input: the connection's bytes go to the agent, its decisions are
    /// noted, the handlers of the turns with output are woken, and the server's own
    /// waiters look again.
    fn settle(&self, state: &mut State) {
        state.act(self.clock.now_ms());
        // Without a process the bytes wait in the connection: a fresh one's `initialize`
        // and what turns started before the spawn need go out once it is running.
        if let Some(process) = &state.process {
            while let Some(bytes) = state.connection.poll_transmit() {
                let _ = process.stdin.send(bytes.to_vec());
            }
        }
        while let Some(decision) = state.connection.poll_decision() {
            match decision {
                Decision::Restart { reason } => state.restart = Some(reason),
                _ => state.restart = Some("the connection asked for a restart".into()),
            }
        }
        let generation = state.generation;
        while let Some(turn) = state.connection.poll_ready() {
            state.wake(&Ticket {
                generation,
                of: Of::Turn(turn),
            });
        }
        while let Some(exchange) = state.connection.poll_mcp_ready() {
            state.wake(&Ticket {
                generation,
                of: Of::Mcp(exchange),
            });
        }
        // An exchange whose server went with its session (or with an earlier process)
        // gives nothing more: its handler ends it.
        let State {
            signals,
            connection,
            ..
        } = state;
        let ended: Vec<Ticket> = signals
            .iter()
            .filter(|(ticket, signal)| {
                let Of::Mcp(exchange) = ticket.of else {
                    return false;
                };
                !signal.woken
                    && (ticket.generation != generation || !connection.is_mcp_server_open(exchange))
            })
            .map(|(ticket, _)| *ticket)
            .collect();
        for ticket in ended {
            state.wake(&ticket);
        }
        // Earlier processes' connections take no more input but shutdown: their turns'
        // handlers are woken whenever one is about (rare: a restart, a shutdown).
        if !state.retired.is_empty() {
            let older: Vec<Ticket> = state
                .signals
                .keys()
                .filter(|t| t.generation != generation && matches!(t.of, Of::Turn(_)))
                .copied()
                .collect();
            for ticket in older {
                state.wake(&ticket);
            }
        }
        self.changed.notify_all();
    }

    /// Keeps an agent process running until shutdown.
    fn supervise(self: Arc<Self>) {
        let mut failures: u32 = 0;
        loop {
            let served = self.run_process();
            let mut state = self.lock();
            if state.shutting_down {
                if let Some(dir) = state.launch_files.take() {
                    if let Err(e) = dir.close() {
                        tracing::warn!("the agent's settings directory: {e}");
                    }
                }
                state.stopped = true;
                self.settle(&mut state);
                return;
            }
            failures = if served {
                0
            } else {
                failures.saturating_add(1)
            };
            if failures > 0 {
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1 << (failures - 1).min(6))
                    .min(MAX_BACKOFF);
                tracing::warn!(
                    ?backoff,
                    "the ACP agent failed before serving; restarting after a pause"
                );
                let until = Instant::now() + backoff;
                while !state.shutting_down && Instant::now() < until {
                    let timeout = until.saturating_duration_since(Instant::now());
                    state = self
                        .changed
                        .wait_timeout(state, timeout)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }

    /// Spawns one process and serves it until it exits or must be replaced; whether its
    /// handshake succeeded.
    fn run_process(self: &Arc<Self>) -> bool {
        let mut state = self.lock();
        if state.shutting_down {
            return true;
        }
        let now = self.clock.now_ms();
        if !std::mem::take(&mut state.fresh) {
            let old = std::mem::replace(
                &mut state.connection,
                Connection::new(self.config.clone(), now),
            );
            let old_generation = state.generation;
            if state.tickets.get(&old_generation).copied().unwrap_or(0) > 0 {
                state.retired.insert(old_generation, old);
            }
            state.generation += 1;
            state.restarts += 1;
        }
        state.restart = None;
        state.lifecycle = Lifecycle::new(self.kill_grace);
        let generation = state.generation;
        // The waiter thread spawns the process and keeps its `Child`: a process is never
        // started without the thread that reaps it.
        let command = self.program.acp_command(&self.args);
        let (spawned_tx, spawned) = mpsc::channel();
        let warm = Arc::clone(self);
        let waiter = thread("acp-waiter", move || {
            warm.spawn_and_wait(generation, command, &spawned_tx);
        });
        let pipes = match waiter.and_then(|()| spawned.recv().map_err(std::io::Error::other)) {
            Ok(Ok(pipes)) => pipes,
            Ok(Err(e)) | Err(e) => {
                state.lifecycle.handle_spawn_failed(&self.program.path, &e);
                self.settle(&mut state);
                return false;
            }
        };
        let Pipes {
            group,
            stdin,
            stdout,
            stderr,
        } = pipes;
        state.processes_started += 1;
        tracing::info!(pid = group, "ACP agent started");
        state.lifecycle.handle_spawned(group);
        let (stdin_tx, stdin_rx) = mpsc::channel();
        state.process = Some(Process {
            stdin: stdin_tx,
            escaped: Vec::new(),
        });
        let warm = Arc::clone(self);
        let readers = thread("acp-stdin", move || write_stdin(stdin, &stdin_rx)).and_then(|()| {
            thread("acp-stdout", move || {
                warm.read_pipe(generation, stdout, true)
            })
        });
        let warm = Arc::clone(self);
        let readers = readers.and_then(|()| {
            thread("acp-stderr", move || {
                warm.read_pipe(generation, stderr, false)
            })
        });
        if let Err(e) = readers {
            // Its pipes cannot be served: it goes, and the waiter reports its exit.
            tracing::warn!(%e, "cannot start a thread for the ACP agent's pipes");
            signal_group(group, Signal::Kill);
        }
        // `initialize` is the new connection's first transmit.
        self.settle(&mut state);
        let mut served = false;
        loop {
            served |= state.connection.is_ready();
            let now = self.clock.now_ms();
            if state
                .connection
                .poll_timeout()
                .is_some_and(|due| now >= due)
            {
                state.connection.handle_timeout(now);
                self.settle(&mut state);
                continue;
            }
            if state.lifecycle.is_reported() {
                state.process = None;
                return served;
            }
            let instant = Instant::now();
            if state
                .lifecycle
                .poll_timeout()
                .is_some_and(|due| instant >= due)
            {
                state.lifecycle.handle_timeout(instant);
                self.settle(&mut state);
                continue;
            }
            if state.shutting_down || state.restart.is_some() {
                if let Some(reason) = &state.restart {
                    tracing::warn!(%reason, "restarting the ACP agent");
                }
                drop(state);
                self.stop_process(generation);
                state = self.lock();
                state.process = None;
                return served;
            }
            let due = state
                .connection
                .poll_timeout()
                .map(|ms| self.clock.instant(ms))
                .into_iter()
                .chain(state.lifecycle.poll_timeout())
                .min();
            let timeout = due.map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
            });
            state = self
                .changed
                .wait_timeout(state, timeout)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Stops the process group of `generation` (SIGTERM, the grace period, SIGKILL), and
    /// what its leader detached, and waits until its leader is reaped.
    fn stop_process(&self, generation: u64) {
        let mut state = self.lock();
        if state.process.is_none() {
            return;
        }
        state.lifecycle.stop(Instant::now());
        self.settle(&mut state);
        loop {
            if state.generation != generation || state.process.is_none() {
                return;
            }
            if state.lifecycle.has_exited() {
                break;
            }
            let now = Instant::now();
            let due = state.lifecycle.poll_timeout();
            if due.is_some_and(|due| now >= due) {
                state.lifecycle.handle_timeout(now);
                self.settle(&mut state);
                continue;
            }
            let until = due.unwrap_or(now + Duration::from_secs(1));
            state = self
                .changed
                .wait_timeout(state, until.saturating_duration_since(now))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        // What it detached and dropped earlier was adopted by the proxy (a subreaper in
        // ACP mode): it goes too.
        reaper::stop_adopted();
        // It is being replaced: what its pipes may still hold is not waited for.
        state.lifecycle.stop_reading();
        self.settle(&mut state);
    }

    /// Feeds one of the agent's pipes to the connection until it closes.
    fn read_pipe(&self, generation: u64, mut pipe: impl Read, stdout: bool) {
        let mut buf = vec![0; STDOUT_READ];
        loop {
            let read = pipe.read(&mut buf);
            let mut state = self.lock();
            let current = state.generation == generation;
            let now = self.clock.now_ms();
            match read {
                Ok(n) if n > 0 => {
                    let wanted = state.process.is_some() && state.lifecycle.wants_output();
                    if current && wanted {
                        let _ = if stdout {
                            state.connection.push_stdout(&buf[..n], now)
                        } else {
                            state.connection.push_stderr(&buf[..n], now)
                        };
                        self.settle(&mut state);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => {
                    if current && state.process.is_some() {
                        if stdout {
                            state.lifecycle.handle_stdout_eof();
                        } else {
                            state.lifecycle.handle_stderr_eof();
                        }
                        self.settle(&mut state);
                    }
                    return;
                }
            }
        }
    }

    /// Spawns the process of `generation`, hands its pipes to `spawned`, then reaps its
    /// leader and stops whatever it left in its group.
    fn spawn_and_wait(
        &self,
        generation: u64,
        mut command: Command,
        spawned: &mpsc::Sender<std::io::Result<Pipes>>,
    ) {
        let child = reaper::spawn(|child: &Child| Some(child.id()), || command.spawn());
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                let _ = spawned.send(Err(e));
                return;
            }
        };
        let group = child.id();
        let pipes = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => Ok(Pipes {
                group,
                stdin,
                stdout,
                stderr,
            }),
            _ => Err(std::io::Error::other("the agent's stdio was not piped")),
        };
        let failed = pipes.is_err();
        if spawned.send(pipes).is_err() || failed {
            signal_group(group, Signal::Kill);
        }
        let status = child.wait().unwrap_or_default();
        reaper::release(group);
        let mut state = self.lock();
        if state.generation == generation && state.process.is_some() {
            // Its group gets what the lifecycle says (children still holding the pipes go
            // with it), and its exit is reported once its pipes are read.
            state
                .lifecycle
                .handle_exit(exit_status(status), Instant::now());
            self.settle(&mut state);
        } else {
            signal_group(group, Signal::Kill);
        }
        // What it detached and dropped was adopted by the proxy (a subreaper in ACP mode):
        // it goes too. Under the lock: no next process can start meanwhile, which the
        // walk would take for an orphan.
        reaper::stop_adopted();
    }
}

/// A just-spawned agent's process group and pipes.
struct Pipes {
    group: u32,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

impl State {
    /// Carries out what the current process's lifecycle asks.
    fn act(&mut self, now_ms: u64) {
        while let Some(action) = self.lifecycle.poll_action() {
            match action {
                Action::Signal { group, signal } => {
                    if let Some(process) = &mut self.process {
                        // Looked for while the leader lives: once it is reaped, its
                        // detached descendants are orphans no walk finds.
                        if !self.lifecycle.has_exited() {
                            process.escaped.extend(escaped_groups(group));
                            process.escaped.sort_unstable();
                            process.escaped.dedup();
                        }
                        for &escaped in &process.escaped {
                            signal_group(escaped, signal);
                        }
                    }
                    signal_group(group, signal);
                }
                // The pipe threads drop what they read once the exit is reported.
                Action::StopReading => {}
                Action::Stderr(text) => {
                    tracing::warn!("{}", text.trim_end());
                    let _ = self.connection.push_stderr(text.as_bytes(), now_ms);
                }
                Action::Exited(status) => {
                    // A failure to start was logged as such, a stop with its reason.
                    let started = self.lifecycle.group().is_some();
                    if started && self.lifecycle.signalled().is_none() {
                        tracing::warn!(%status, "the ACP agent exited");
                    }
                    let _ = self.connection.agent_exited(status, now_ms);
                }
            }
        }
    }

    /// Wakes the handler of `ticket`.
    fn wake(&mut self, ticket: &Ticket) {
        if let Some(signal) = self.signals.get_mut(ticket) {
            signal.woken = true;
            signal.condvar.notify_all();
            signal.notify.notify_one();
        }
    }

    /// `ticket` has taken its end or its client is gone.
    fn finish(&mut self, ticket: &Ticket) {
        // Once per ticket, however its handler ends.
        if self.signals.remove(ticket).is_none() || matches!(ticket.of, Of::Mcp(_)) {
            return;
        }
        let Some(count) = self.tickets.get_mut(&ticket.generation) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.tickets.remove(&ticket.generation);
            self.retired.remove(&ticket.generation);
        }
    }
}

/// Writes what the connection sends until the process is replaced (the channel closes)
/// or its stdin fails.
fn write_stdin(mut stdin: ChildStdin, bytes: &mpsc::Receiver<Vec<u8>>) {
    while let Ok(bytes) = bytes.recv() {
        if stdin
            .write_all(&bytes)
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return;
        }
    }
}

fn thread(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(THREAD_STACK)
        .spawn(f)
        .map(drop)
}
