//! One ACP agent process: framing, JSON-RPC ids, the handshake, sessions, routing, and
//! the turns it serves.
//!
//! DESIGN notes, where this departs from the research sketch ("What agentwire needs"):
//! - Turns live inside the connection, addressed by [`TurnId`], rather than as separate
//!   `AcpTurn` objects: every agent line may concern any turn (updates, permission
//!   requests, prompt answers), so routing needs them all at hand, and a separate object
//!   would need shared mutable state the core does not use anywhere else.
//! - Each turn is a [`Bridge`] fed neutral events (`Bridge::push_event`, crate-internal)
//!   instead of a `cursor::Decoder`; the bridge's stop decision is taken directly
//!   (`take_stop`) and becomes `session/cancel`, so [`Output::StopAgent`] never reaches
//!   the caller and only [`Decision::Restart`] kills the process.
//! - Client tools are refused (400) rather than run in an `ask` mode: no recorded agent
//!   can call a client's tools, and an agent answering in prose where a tool call was
//!   expected is worse than a clear refusal. No `session/set_mode` is sent.
//! - A model absent from the session's list is refused before anything is sent: the
//!   recordings show agents accepting unknown ids and failing only at the prompt
//!   (codex-acp, gemini-cli), one of them with a warning as answer text first.
//! - Usage is mapped where an agent reports it exactly (claude-agent-acp, gemini-cli);
//!   the sketch, written from cursor-agent alone, expected none.
//! - Sessions are used once. An agent that advertises `session/close`
//!   (`agentCapabilities.sessionCapabilities.close` in its `initialize` answer) is told
//!   to close each session whose turn is over, so that a warm agent serving thousands of
//!   requests does not keep them all; its answer is awaited (with a deadline) but changes
//!   nothing. Other agents' sessions are forgotten: the recordings hold no agent that
//!   offers it, and cleaning up an agent's stored sessions is then the adapter's.

use std::collections::VecDeque;
use std::fmt;

use serde_json::json;
use serde_json::value::RawValue;
use thiserror::Error;

use super::config::{AcpConfig, ExtensionPolicy, PermissionChoice};
use super::message::{self, AUTH_REQUIRED, Incoming, METHOD_NOT_FOUND, RpcError};
use super::session::{ModelChoice, ModelPlan, NewSession};
use super::update::{ToolCalls, UpdateParams};
use super::usage::PromptResult;
use crate::api::{ErrorKind, ErrorReply};
use crate::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use crate::cursor::ExitStatus;
use crate::event::{Event, Failure, FailureKind, FinishReason};
use crate::framing::{self, LineFramer};
use crate::names::named;

/// A turn's handle: one client request served by the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnId(pub(crate) u64);

impl TurnId {
    /// The number behind the handle: unique within its [`Connection`], rising in the
    /// order turns were started.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A connection-level decision.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Kill the agent's process group and start a new process with a new
    /// [`Connection`]; this one serves nothing more.
    Restart {
        /// Why, for logs.
        reason: String,
    },
}

/// Caller misuse of a [`Connection`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConnectionError {
    /// Agent output was pushed after [`Connection::agent_exited`].
    #[error("agent output was pushed after the agent exited")]
    AfterExit,
    /// The agent was reported exited twice.
    #[error("the agent was reported exited twice")]
    ExitedTwice,
}

named!(ConnectionError, "connection error" {
    AfterExit => "after_exit",
    ExitedTwice => "exited_twice",
});

/// Where the handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Initializing,
    Ready,
    /// Failed or exited: nothing more is served.
    Dead,
}

/// A request of ours awaiting its answer.
#[derive(Debug)]
struct Pending {
    id: u64,
    kind: PendingKind,
    /// `None` for a prompt: the turn's own idle timeout watches it.
    deadline: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingKind {
    Initialize,
    NewSession,
    SetModel(TurnId),
    Prompt(TurnId),
    /// `session/close`: its answer changes nothing.
    Close,
}

/// A fresh session, not yet given to a turn.
#[derive(Debug)]
struct IdleSession {
    id: String,
    models: ModelChoice,
}

/// Where a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a prompt slot or a session.
    Queued {
        deadline: u64,
    },
    SettingModel,
    Prompting,
    /// `session/cancel` sent; the prompt's answer is awaited until `deadline`.
    Cancelling {
        deadline: u64,
    },
    /// Nothing more comes from the agent for this turn.
    Done,
}

struct Turn {
    id: TurnId,
    bridge: Bridge,
    phase: Phase,
    session: Option<String>,
    tools: ToolCalls,
    cost: Option<f64>,
    /// The client hung up: its `End` need not be handed out, so the turn is forgotten
    /// once the agent is done with it, polled or not.
    gone: bool,
    /// A permission request of this turn was refused by policy.
    refused: bool,
}

impl Turn {
    /// Whether the caller still has something to take: the response has not ended, and
    /// its client is there to take it.
    fn is_live(&self) -> bool {
        !self.bridge.is_ended() && !self.gone
    }
}

/// One ACP agent process (JSON-RPC 2.0, one message a line over its stdin and stdout)
/// serving many requests, each as a [`TurnId`] on a fresh session, through the same
/// [`Bridge`] policy as a per-request run: head and status, keep-alive, idle timeout,
/// shutdown, and every dialect's encoders.
///
/// Methods, like the bridge's:
/// - **getters**: [`is_ready`](Self::is_ready), [`is_dead`](Self::is_dead),
///   [`active_turns`](Self::active_turns), [`queued_turns`](Self::queued_turns),
///   [`sessions_closed`](Self::sessions_closed), [`models`](Self::models),
///   [`current_model`](Self::current_model), [`malformed_lines`](Self::malformed_lines);
/// - **inputs**, all taking `now_ms`: [`start_turn`](Self::start_turn),
///   [`push_stdout`](Self::push_stdout), [`push_stderr`](Self::push_stderr),
///   [`agent_exited`](Self::agent_exited), [`handle_timeout`](Self::handle_timeout),
///   [`client_gone`](Self::client_gone), [`shutdown`](Self::shutdown);
/// - **outputs**: [`poll_transmit`](Self::poll_transmit) (bytes for the agent's stdin),
///   [`poll_ready`](Self::poll_ready) (which turn has output),
///   [`poll_output`](Self::poll_output) (per turn: [`Output`] as from a bridge, never
///   `StopAgent`), [`poll_decision`](Self::poll_decision), then
///   [`poll_timeout`](Self::poll_timeout).
///
/// **After every input, drain `poll_transmit`, `poll_decision`, and `poll_output` of
/// every turn `poll_ready` names (or of every live turn) until each returns `None`,
/// then ask `poll_timeout`.**
///
/// Rules it keeps: a request with client tools is refused (400 naming `tools`: the
/// agent's own tools would run instead); an unknown model is a 404 before the head; a
/// permission is answered by option kind ([`AcpConfig::permission`], never
/// `allow_always`); where a bridge would stop the agent, the turn's session is cancelled
/// (`session/cancel`) instead, and the session is retired; every request we send has a
/// deadline; the agent's exit fails every open turn with its stderr tail.
pub struct Connection {
    config: AcpConfig,
    framer: LineFramer,
    handshake: Handshake,
    next_id: u64,
    next_turn: u64,
    pending: Vec<Pending>,
    idle: VecDeque<IdleSession>,
    turns: Vec<Turn>,
    transmit: Vec<u8>,
    transmit_lent: bool,
    decisions: VecDeque<Decision>,
    stderr_tail: Vec<u8>,
    exited: bool,
    malformed: u64,
    /// Cancelled prompts that never ended: their slots stay taken.
    stuck: usize,
    /// What the latest fresh session offered.
    models: Option<ModelChoice>,
    /// The last turn `poll_ready` named since the last input.
    ready_after: Option<TurnId>,
    /// Whether the agent offers `session/close`.
    closes_sessions: bool,
    /// `session/close` requests sent.
    sessions_closed: u64,
}

impl Connection {
    /// A connection to a just-spawned agent: `initialize` is the first transmit.
    pub fn new(config: AcpConfig, now_ms: u64) -> Connection {
        let mut connection = Connection {
            framer: LineFramer::new(config.max_line_len),
            config,
            handshake: Handshake::Initializing,
            next_id: 0,
            next_turn: 0,
            pending: Vec::new(),
            idle: VecDeque::new(),
            turns: Vec::new(),
            transmit: Vec::new(),
            transmit_lent: false,
            decisions: VecDeque::new(),
            stderr_tail: Vec::new(),
            exited: false,
            malformed: 0,
            stuck: 0,
            models: None,
            ready_after: None,
            closes_sessions: false,
            sessions_closed: 0,
        };
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": connection.config.client_name, "version": connection.config.client_version},
        });
        let deadline = now_ms.saturating_add(connection.config.initialize_timeout_ms);
        connection.request(
            PendingKind::Initialize,
            "initialize",
            params,
            Some(deadline),
        );
        connection
    }

    // A. Getters.

    /// Whether the handshake succeeded and the agent is serving.
    pub fn is_ready(&self) -> bool {
        self.handshake == Handshake::Ready
    }

    /// Whether the connection serves nothing more (handshake failed, agent exited, or a
    /// restart was decided).
    pub fn is_dead(&self) -> bool {
        self.handshake == Handshake::Dead
    }

    /// Turns whose response has not ended yet and whose client is still there.
    pub fn active_turns(&self) -> usize {
        self.turns.iter().filter(|t| t.is_live()).count()
    }

    /// Turns waiting for a prompt slot or a session (a subset of
    /// [`active_turns`](Self::active_turns)).
    pub fn queued_turns(&self) -> usize {
        self.turns
            .iter()
            .filter(|t| matches!(t.phase, Phase::Queued { .. }) && t.is_live())
            .count()
    }

    /// `session/close` requests sent so far: one per session whose turn is over, when
    /// the agent advertised `sessionCapabilities.close`; always 0 otherwise.
    pub fn sessions_closed(&self) -> u64 {
        self.sessions_closed
    }

    /// The models the agent offers, from its latest `session/new` answer, in its order;
    /// `None` until a session was created. An agent that lists none gives `Some(&[])`:
    /// then only its default is served.
    pub fn models(&self) -> Option<&[String]> {
        self.models.as_ref().map(ModelChoice::available)
    }

    /// The model a fresh session uses unless told otherwise, when the agent says.
    pub fn current_model(&self) -> Option<&str> {
        self.models.as_ref().and_then(ModelChoice::current)
    }

    /// Agent stdout lines that were not JSON-RPC (ignored: the protocol forbids them, and
    /// cursor-agent swallows ours the same way).
    pub fn malformed_lines(&self) -> u64 {
        self.malformed
    }

    // B. Inputs.

    /// A client request of `dialect`: validated and answered like [`Bridge::new`], then
    /// queued for a session. Its outputs come from [`poll_output`](Self::poll_output).
    pub fn start_turn(
        &mut self,
        dialect: Dialect,
        body: &[u8],
        config: &Config,
        params: BridgeParams,
    ) -> TurnId {
        self.ready_after = None;
        let id = TurnId(self.next_turn);
        self.next_turn += 1;
        let mut bridge = Bridge::new(dialect, body, config, params);
        let mut phase = Phase::Queued {
            deadline: params.now_ms.saturating_add(self.config.queue_timeout_ms),
        };
        if bridge.invocation().is_none() {
            phase = Phase::Done;
        } else if bridge.has_client_tools() {
            let mut reply = ErrorReply::new(
                ErrorKind::InvalidRequest,
                "`tools` are not supported over ACP: the agent runs its own tools and cannot call the client's. Send the request without `tools`, or use the per-request transport.",
                "unsupported_parameter",
            );
            reply.param = Some("tools".into());
            bridge.refuse(&reply);
            phase = Phase::Done;
        } else if self.handshake == Handshake::Dead {
            bridge.push_event(&Event::Failed(self.dead_failure()), params.now_ms);
            // No agent runs for this turn: the bridge's stop is moot, and never reaches
            // the caller as `StopAgent`.
            let _ = bridge.take_stop();
            phase = Phase::Done;
        }
        self.turns.push(Turn {
            id,
            bridge,
            phase,
            session: None,
            tools: ToolCalls::default(),
            cost: None,
            gone: false,
            refused: false,
        });
        self.schedule(params.now_ms);
        id
    }

    /// Agent stdout, in any chunking.
    pub fn push_stdout(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), ConnectionError> {
        self.ready_after = None;
        if self.exited {
            return Err(ConnectionError::AfterExit);
        }
        let mut input = bytes;
        while !input.is_empty() {
            // The framer lends the line from `input` or its own buffer; handling it needs
            // `self` whole, so the line is handled through a detached framer.
            let mut framer = std::mem::take(&mut self.framer);
            let framed = framer.next_line(input);
            input = &input[framed.consumed..];
            match framed.line {
                Some(Ok(line)) => self.handle_line(line, now_ms),
                Some(Err(_)) => self.malformed += 1,
                None => {}
            }
            self.framer = framer;
        }
        self.schedule(now_ms);
        Ok(())
    }

    /// Agent stderr, in any chunking. Only its tail is kept, for failure messages.
    pub fn push_stderr(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), ConnectionError> {
        self.ready_after = None;
        let _ = now_ms;
        if self.exited {
            return Err(ConnectionError::AfterExit);
        }
        self.stderr_tail.extend_from_slice(bytes);
        if self.stderr_tail.len() > self.config.stderr_tail_bytes {
            let cut = self.stderr_tail.len() - self.config.stderr_tail_bytes;
            self.stderr_tail.drain(..cut);
        }
        Ok(())
    }

    /// The agent exited (after its stdout and stderr were pushed to the end): every open
    /// turn fails with the stderr tail, and a restart is decided.
    pub fn agent_exited(&mut self, status: ExitStatus, now_ms: u64) -> Result<(), ConnectionError> {
        self.ready_after = None;
        if self.exited {
            return Err(ConnectionError::ExitedTwice);
        }
        self.exited = true;
        let stderr = String::from_utf8_lossy(&self.stderr_tail);
        let stderr = stderr.trim();
        let message = if stderr.is_empty() {
            format!("The ACP agent exited ({status}) before answering.")
        } else {
            format!("The ACP agent exited ({status}) before answering: {stderr}")
        };
        self.die(Failure::new(FailureKind::AgentCrashed, message), now_ms);
        Ok(())
    }

    /// A deadline from [`poll_timeout`](Self::poll_timeout) passed. Spurious calls do
    /// nothing.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        self.ready_after = None;
        let expired: Vec<PendingKind> = self
            .pending
            .iter()
            .filter(|p| p.deadline.is_some_and(|d| now_ms >= d))
            .map(|p| p.kind)
            .collect();
        self.pending
            .retain(|p| p.deadline.is_none_or(|d| now_ms < d));
        for kind in expired {
            match kind {
                PendingKind::Initialize | PendingKind::NewSession => {
                    let what = if kind == PendingKind::Initialize {
                        "initialize"
                    } else {
                        "session/new"
                    };
                    let message = format!(
                        "The ACP agent did not answer `{what}` in time; it is being restarted. The request may be retried."
                    );
                    self.die(Failure::new(FailureKind::Timeout, message), now_ms);
                    return;
                }
                PendingKind::SetModel(turn) => {
                    let failure = Failure::new(
                        FailureKind::Timeout,
                        "The ACP agent did not confirm the model in time. The request may be retried.",
                    );
                    self.fail_turn(turn, failure, now_ms);
                }
                PendingKind::Prompt(_) | PendingKind::Close => {}
            }
        }
        for index in 0..self.turns.len() {
            let turn = &mut self.turns[index];
            match turn.phase {
                Phase::Queued { deadline } if now_ms >= deadline => {
                    let failure = Failure::new(
                        FailureKind::Unavailable,
                        format!(
                            "All {} prompt slots of the ACP agent stayed busy; the request may be retried.",
                            self.config.max_concurrent_prompts
                        ),
                    );
                    turn.phase = Phase::Done;
                    turn.bridge.push_event(&Event::Failed(failure), now_ms);
                }
                Phase::Cancelling { deadline } if now_ms >= deadline => {
                    // The agent never ended the cancelled prompt: give the session up.
                    turn.phase = Phase::Done;
                    let id = turn.id;
                    self.pending.retain(|p| p.kind != PendingKind::Prompt(id));
                    self.stuck += 1;
                    if self.stuck >= self.config.max_concurrent_prompts.max(1) {
                        self.restart(
                            "every prompt slot holds a cancelled prompt that never ended".into(),
                            now_ms,
                        );
                        return;
                    }
                }
                _ => {}
            }
            let turn = &mut self.turns[index];
            if !turn.bridge.is_ended() && turn.bridge.poll_timeout().is_some_and(|d| now_ms >= d) {
                turn.bridge.handle_timeout(now_ms);
            }
            self.after_turn_input(index, now_ms);
        }
        self.schedule(now_ms);
    }

    /// The HTTP client of `turn` hung up: its prompt is cancelled and nothing more is
    /// written for it. Its outputs need not be polled any more: the turn is forgotten
    /// once the agent is done with it.
    pub fn client_gone(&mut self, turn: TurnId, now_ms: u64) {
        self.ready_after = None;
        if let Some(index) = self.index(turn) {
            self.turns[index].bridge.client_gone(now_ms);
            self.turns[index].gone = true;
            self.after_turn_input(index, now_ms);
        }
        self.schedule(now_ms);
    }

    /// The adapter is shutting down: every turn ends now as a failure the client may
    /// retry, and every running prompt is cancelled.
    pub fn shutdown(&mut self, now_ms: u64) {
        self.ready_after = None;
        for index in 0..self.turns.len() {
            self.turns[index].bridge.shutdown(now_ms);
            self.after_turn_input(index, now_ms);
        }
    }

    // C. Outputs.

    /// Bytes to write to the agent's stdin, or `None`. Valid until the next call.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<&[u8]> {
        if self.transmit_lent {
            framing::reclaim(&mut self.transmit);
            self.transmit_lent = false;
        }
        if self.transmit.is_empty() {
            return None;
        }
        self.transmit_lent = true;
        Some(&self.transmit)
    }

    /// The next output of `turn`, as from a [`Bridge`] ([`Output::StopAgent`] never
    /// appears: it became a cancellation). `None` until the next input, and for ever
    /// after `End` or for an unknown turn.
    #[must_use]
    pub fn poll_output(&mut self, turn: TurnId) -> Option<Output<'_>> {
        let index = self.index(turn)?;
        if self.turns[index].bridge.is_ended() {
            if self.turns[index].phase == Phase::Done {
                self.turns.remove(index);
            }
            return None;
        }
        self.turns[index].bridge.poll_output()
    }

    /// A turn that has output for [`poll_output`](Self::poll_output), each named at most
    /// once between two inputs, in the order turns were started; `None` when no other
    /// turn has any. A hint that spares polling every turn after each input: a turn the
    /// caller leaves undrained (its client is slow) is not named again until the next
    /// input.
    #[must_use]
    pub fn poll_ready(&mut self) -> Option<TurnId> {
        let start = match self.ready_after {
            Some(after) => self.turns.partition_point(|t| t.id <= after),
            None => 0,
        };
        let turn = self.turns[start..].iter().find(|t| t.bridge.has_output())?;
        self.ready_after = Some(turn.id);
        Some(turn.id)
    }

    /// The next connection-level decision, or `None`.
    #[must_use]
    pub fn poll_decision(&mut self) -> Option<Decision> {
        self.decisions.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due; `None` when nothing is
    /// scheduled.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        let pending = self.pending.iter().filter_map(|p| p.deadline);
        let turns = self.turns.iter().flat_map(|turn| {
            let phase = match turn.phase {
                Phase::Queued { deadline } | Phase::Cancelling { deadline } => Some(deadline),
                _ => None,
            };
            phase.into_iter().chain(turn.bridge.poll_timeout())
        });
        pending.chain(turns).min()
    }

    // Internals.

    fn index(&self, turn: TurnId) -> Option<usize> {
        self.turns.iter().position(|t| t.id == turn)
    }

    fn request(
        &mut self,
        kind: PendingKind,
        method: &str,
        params: serde_json::Value,
        deadline: Option<u64>,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        self.recycle_transmit();
        message::write_request(&mut self.transmit, id, method, params);
        self.pending.push(Pending { id, kind, deadline });
    }

    fn recycle_transmit(&mut self) {
        if self.transmit_lent {
            framing::reclaim(&mut self.transmit);
            self.transmit_lent = false;
        }
    }

    fn dead_failure(&self) -> Failure {
        Failure::new(
            FailureKind::Unavailable,
            "The ACP agent is restarting; the request may be retried.",
        )
    }

    /// Fails every open turn with `failure` and decides a restart.
    fn die(&mut self, failure: Failure, now_ms: u64) {
        if self.handshake != Handshake::Dead {
            self.decisions.push_back(Decision::Restart {
                reason: failure.message.clone(),
            });
        }
        self.handshake = Handshake::Dead;
        self.pending.clear();
        self.idle.clear();
        for turn in &mut self.turns {
            turn.phase = Phase::Done;
            turn.bridge
                .push_event(&Event::Failed(failure.clone()), now_ms);
            // Nothing to cancel: the process goes.
            let _ = turn.bridge.take_stop();
        }
    }

    fn restart(&mut self, reason: String, now_ms: u64) {
        self.die(
            Failure::new(
                FailureKind::Unavailable,
                format!("The ACP agent is being restarted ({reason}); the request may be retried."),
            ),
            now_ms,
        );
    }

    fn fail_turn(&mut self, turn: TurnId, failure: Failure, now_ms: u64) {
        if let Some(index) = self.index(turn) {
            let turn = &mut self.turns[index];
            turn.phase = Phase::Done;
            turn.bridge.push_event(&Event::Failed(failure), now_ms);
            let _ = turn.bridge.take_stop();
        }
    }

    /// After any input to a turn's bridge: act on its stop decision (cancel, not kill)
    /// and on its output budget.
    fn after_turn_input(&mut self, index: usize, now_ms: u64) {
        let budget = self.config.turn_output_budget;
        let turn = &mut self.turns[index];
        if turn.bridge.unsent_len() > budget && !turn.bridge.is_ended() {
            let failure = Failure::new(
                FailureKind::Unavailable,
                format!(
                    "The client read the response too slowly (over {budget} bytes waiting); the turn was cancelled. The request may be retried."
                ),
            );
            turn.bridge.push_event(&Event::Failed(failure), now_ms);
        }
        if !turn.bridge.take_stop() {
            return;
        }
        match turn.phase {
            Phase::Prompting => {
                let session = turn.session.clone().unwrap_or_default();
                turn.phase = Phase::Cancelling {
                    deadline: now_ms.saturating_add(self.config.cancel_timeout_ms),
                };
                self.recycle_transmit();
                message::write_notification(
                    &mut self.transmit,
                    "session/cancel",
                    json!({"sessionId": session}),
                );
            }
            // Not prompting yet: nothing runs on the agent's side. A model being set is
            // left to finish; its session is retired when the answer comes.
            Phase::Queued { .. } => turn.phase = Phase::Done,
            Phase::SettingModel | Phase::Cancelling { .. } | Phase::Done => {}
        }
    }

    /// Forgets turns that are over on both sides (response ended or its client gone,
    /// nothing more from the agent), so that a turn whose caller stopped polling after
    /// `End` or [`client_gone`](Self::client_gone) leaks nothing.
    fn reap(&mut self) {
        self.turns
            .retain(|turn| turn.is_live() || turn.phase != Phase::Done);
    }

    /// Gives queued turns sessions and prompt slots, and keeps the pool filled.
    fn schedule(&mut self, now_ms: u64) {
        self.reap();
        if self.handshake != Handshake::Ready {
            return;
        }
        let busy = self.stuck
            + self
                .turns
                .iter()
                .filter(|t| {
                    matches!(
                        t.phase,
                        Phase::SettingModel | Phase::Prompting | Phase::Cancelling { .. }
                    )
                })
                .count();
        let mut slots = self
            .config
            .max_concurrent_prompts
            .max(1)
            .saturating_sub(busy);
        let mut index = 0;
        while slots > 0 && index < self.turns.len() {
            if matches!(self.turns[index].phase, Phase::Queued { .. }) {
                let Some(session) = self.idle.pop_front() else {
                    break;
                };
                slots -= 1;
                self.begin(index, session, now_ms);
            }
            index += 1;
        }
        let queued = self
            .turns
            .iter()
            .filter(|t| matches!(t.phase, Phase::Queued { .. }))
            .count();
        let wanted = queued.min(slots) + self.config.pool_size;
        let creating = self
            .pending
            .iter()
            .filter(|p| p.kind == PendingKind::NewSession)
            .count();
        for _ in (self.idle.len() + creating)..wanted {
            let params = json!({"cwd": self.config.cwd, "mcpServers": []});
            let deadline = now_ms.saturating_add(self.config.new_session_timeout_ms);
            self.request(
                PendingKind::NewSession,
                "session/new",
                params,
                Some(deadline),
            );
        }
    }

    /// Gives the turn at `index` the fresh `session`: set its model, or prompt at once.
    fn begin(&mut self, index: usize, session: IdleSession, now_ms: u64) {
        let turn = &mut self.turns[index];
        let id = turn.id;
        match session
            .models
            .plan(turn.bridge.model(), &self.config.default_model_names)
        {
            ModelPlan::Unknown(offered) => {
                let failure = Failure::new(
                    FailureKind::ModelUnavailable,
                    format!(
                        "The model `{}` is not offered by this ACP agent; it offers: {}.",
                        turn.bridge.model(),
                        offered.join(", ")
                    ),
                );
                turn.phase = Phase::Done;
                turn.bridge.push_event(&Event::Failed(failure), now_ms);
                let _ = turn.bridge.take_stop();
                // Unused, so still fresh.
                self.idle.push_front(session);
            }
            ModelPlan::Set(method, mut params) => {
                params["sessionId"] = json!(session.id);
                turn.phase = Phase::SettingModel;
                turn.session = Some(session.id);
                let deadline = now_ms.saturating_add(self.config.set_model_timeout_ms);
                self.request(PendingKind::SetModel(id), method, params, Some(deadline));
            }
            ModelPlan::Keep => {
                turn.session = Some(session.id);
                self.prompt(index);
            }
        }
    }

    fn prompt(&mut self, index: usize) {
        let turn = &mut self.turns[index];
        turn.phase = Phase::Prompting;
        let text = turn
            .bridge
            .invocation()
            .map(|invocation| String::from_utf8_lossy(&invocation.stdin).into_owned())
            .unwrap_or_default();
        let params = json!({
            "sessionId": turn.session,
            "prompt": [{"type": "text", "text": text}],
        });
        let id = turn.id;
        self.request(PendingKind::Prompt(id), "session/prompt", params, None);
    }

    fn handle_line(&mut self, line: &str, now_ms: u64) {
        let Ok(incoming) = serde_json::from_str::<Incoming<'_>>(line) else {
            self.malformed += 1;
            return;
        };
        match (incoming.id, incoming.method.as_deref()) {
            (Some(id), Some(method)) => self.handle_request(id, method, incoming.params),
            (None, Some("session/update")) => {
                if let Some(params) = incoming.params {
                    self.handle_update(params, now_ms);
                }
            }
            (None, Some(_)) => {}
            (Some(id), None) => {
                // Our ids are integers; anything else answers nothing of ours.
                let Ok(id) = id.get().parse::<u64>() else {
                    self.malformed += 1;
                    return;
                };
                let Some(position) = self.pending.iter().position(|p| p.id == id) else {
                    return;
                };
                let pending = self.pending.remove(position);
                let result = match incoming.error {
                    Some(error) => Err(error),
                    None => Ok(incoming.result),
                };
                self.handle_response(pending.kind, result, now_ms);
            }
            (None, None) => self.malformed += 1,
        }
    }

    fn handle_update(&mut self, params: &RawValue, now_ms: u64) {
        let Ok(params) = serde_json::from_str::<UpdateParams<'_>>(params.get()) else {
            self.malformed += 1;
            return;
        };
        let Some(index) = self.turns.iter().position(|t| {
            t.session.as_deref() == Some(&*params.session_id) && t.phase != Phase::Done
        }) else {
            return;
        };
        let turn = &mut self.turns[index];
        if params.update.is_usage() {
            if let Some(cost) = params.update.cost {
                turn.cost = Some(cost.amount);
            }
            return;
        }
        let Turn { bridge, tools, .. } = turn;
        tools.map(&params.update, &mut |event| {
            bridge.push_event(event, now_ms)
        });
        self.after_turn_input(index, now_ms);
    }

    fn handle_request(&mut self, id: &RawValue, method: &str, params: Option<&RawValue>) {
        self.recycle_transmit();
        if method != "session/request_permission" {
            match &self.config.extensions {
                ExtensionPolicy::MethodNotFound => message::write_error(
                    &mut self.transmit,
                    id,
                    METHOD_NOT_FOUND,
                    "Method not found",
                ),
                ExtensionPolicy::Answer(value) => {
                    message::write_result(&mut self.transmit, id, value.clone())
                }
            }
            return;
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Permission {
            session_id: String,
            options: Vec<PermissionOption>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct PermissionOption {
            option_id: serde_json::Value,
            kind: String,
        }
        let request = params.and_then(|p| serde_json::from_str::<Permission>(p.get()).ok());
        let prompting = request.as_ref().and_then(|request| {
            self.turns.iter().position(|t| {
                t.session.as_deref() == Some(request.session_id.as_str())
                    && t.phase == Phase::Prompting
            })
        });
        let kinds: &[&str] = match self.config.permission {
            PermissionChoice::AllowOnce => &["allow_once", "reject_once"],
            PermissionChoice::RejectOnce => &["reject_once"],
        };
        let chosen = request.filter(|_| prompting.is_some()).and_then(|request| {
            kinds.iter().find_map(|kind| {
                request
                    .options
                    .iter()
                    .find(|o| o.kind == *kind)
                    .map(|o| (o.option_id.clone(), *kind))
            })
        });
        if let Some(index) = prompting {
            // Remembered so that an agent ending the turn over it (codex-acp ends it
            // `cancelled`) is explained to the client.
            self.turns[index].refused |= chosen
                .as_ref()
                .is_none_or(|(_, kind)| *kind != "allow_once");
        }
        // A cancelled (or unknown) turn's permission is answered `cancelled`, as ACP
        // requires; so is one offering no acceptable kind.
        let outcome = match chosen {
            Some((option_id, _)) => {
                json!({"outcome": {"outcome": "selected", "optionId": option_id}})
            }
            None => json!({"outcome": {"outcome": "cancelled"}}),
        };
        message::write_result(&mut self.transmit, id, outcome);
    }

    fn handle_response(
        &mut self,
        kind: PendingKind,
        result: Result<Option<&RawValue>, RpcError>,
        now_ms: u64,
    ) {
        match kind {
            PendingKind::Initialize => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Initialized {
                    protocol_version: u64,
                    #[serde(default)]
                    agent_capabilities: Option<Capabilities>,
                }
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Capabilities {
                    #[serde(default)]
                    session_capabilities: Option<SessionCapabilities>,
                }
                #[derive(serde::Deserialize)]
                struct SessionCapabilities {
                    // Present (an object, possibly empty) when offered; `null` is not.
                    #[serde(default)]
                    close: Option<serde_json::Value>,
                }
                let initialized = result
                    .as_ref()
                    .ok()
                    .and_then(|r| r.as_ref())
                    .and_then(|r| serde_json::from_str::<Initialized>(r.get()).ok());
                self.closes_sessions = initialized
                    .as_ref()
                    .and_then(|i| i.agent_capabilities.as_ref())
                    .and_then(|c| c.session_capabilities.as_ref())
                    .is_some_and(|s| s.close.as_ref().is_some_and(|c| !c.is_null()));
                let version = initialized.map(|i| i.protocol_version);
                match (result, version) {
                    (Ok(_), Some(1)) => self.handshake = Handshake::Ready,
                    (Err(error), _) => {
                        let message =
                            format!("The ACP agent refused `initialize`: {}", error.describe());
                        self.die(Failure::new(FailureKind::Misconfigured, message), now_ms);
                    }
                    (Ok(_), version) => {
                        let message =
                            format!("The ACP agent speaks protocol version {version:?}, not 1.");
                        self.die(Failure::new(FailureKind::Misconfigured, message), now_ms);
                    }
                }
            }
            PendingKind::NewSession => {
                let session = result
                    .as_ref()
                    .ok()
                    .and_then(|r| r.as_ref())
                    .and_then(|r| serde_json::from_str::<NewSession>(r.get()).ok());
                match (session, result) {
                    (Some(session), _) => {
                        let models = session.model_choice();
                        self.models = Some(models.clone());
                        self.idle.push_back(IdleSession {
                            models,
                            id: session.session_id,
                        });
                    }
                    (None, result) => {
                        // Nothing is queued on a particular session/new: the oldest queued
                        // turn takes the failure (a pool refill failing fails no one).
                        let failure = match result {
                            Err(error) if error.code == AUTH_REQUIRED => Failure::new(
                                FailureKind::NotAuthenticated,
                                format!(
                                    "The ACP agent is not logged in ({}). Log it in (for cursor-agent: run `cursor-agent login` or set CURSOR_API_KEY).",
                                    error.describe()
                                ),
                            ),
                            Err(error) => Failure::new(
                                FailureKind::Misconfigured,
                                format!(
                                    "The ACP agent could not create a session: {}",
                                    error.describe()
                                ),
                            ),
                            Ok(_) => Failure::new(
                                FailureKind::BadOutput,
                                "The ACP agent answered `session/new` without a session id.",
                            ),
                        };
                        if let Some(turn) = self
                            .turns
                            .iter()
                            .find(|t| matches!(t.phase, Phase::Queued { .. }))
                            .map(|t| t.id)
                        {
                            self.fail_turn(turn, failure, now_ms);
                        }
                    }
                }
            }
            PendingKind::SetModel(turn) => {
                let Some(index) = self.index(turn) else {
                    return;
                };
                if self.turns[index].bridge.is_ending()
                    || self.turns[index].phase != Phase::SettingModel
                {
                    self.turns[index].phase = Phase::Done;
                    self.close_session(index, now_ms);
                    return;
                }
                match result {
                    Ok(_) => self.prompt(index),
                    Err(error) => {
                        self.close_session(index, now_ms);
                        let model = self.turns[index].bridge.model().to_owned();
                        let failure = Failure::new(
                            FailureKind::ModelUnavailable,
                            format!(
                                "The ACP agent refused the model `{model}`: {}",
                                error.describe()
                            ),
                        );
                        self.fail_turn(turn, failure, now_ms);
                    }
                }
            }
            PendingKind::Prompt(turn) => {
                let Some(index) = self.index(turn) else {
                    return;
                };
                let cancelling = matches!(self.turns[index].phase, Phase::Cancelling { .. });
                self.turns[index].phase = Phase::Done;
                let t = &mut self.turns[index];
                match result {
                    Err(error) => {
                        let failure = if error.code == AUTH_REQUIRED {
                            Failure::new(
                                FailureKind::NotAuthenticated,
                                format!("The ACP agent is not logged in ({}).", error.describe()),
                            )
                        } else {
                            Failure::new(
                                FailureKind::AgentError,
                                format!("The ACP agent failed the prompt: {}", error.describe()),
                            )
                        };
                        t.bridge.push_event(&Event::Failed(failure), now_ms);
                    }
                    Ok(raw) => {
                        let result =
                            raw.and_then(|r| serde_json::from_str::<PromptResult>(r.get()).ok());
                        let Some(result) = result else {
                            let failure = Failure::new(
                                FailureKind::BadOutput,
                                "The ACP agent's prompt result has no stop reason.",
                            );
                            t.bridge.push_event(&Event::Failed(failure), now_ms);
                            let _ = t.bridge.take_stop();
                            self.close_session(index, now_ms);
                            return;
                        };
                        if let Some(usage) = result.usage(t.cost) {
                            t.bridge.push_event(&Event::Usage(usage), now_ms);
                        }
                        let finish = match result.stop_reason.as_str() {
                            "end_turn" => Some(FinishReason::Stop),
                            "max_tokens" | "max_turn_requests" => Some(FinishReason::Length),
                            "refusal" => Some(FinishReason::ContentFilter),
                            _ => None,
                        };
                        match finish {
                            Some(finish) => t.bridge.push_event(&Event::Finish(finish), now_ms),
                            // Ours: the response already ended (client gone, timeout, shutdown).
                            None if cancelling => {}
                            None => {
                                let message = if t.refused {
                                    format!(
                                        "The ACP agent ended the turn ({}) after its request for permission to run a tool was refused: permissions are answered `reject_once` (`AcpConfig::permission`; `--allow-force` in the proxies allows them). Ask for something that needs no permission, or allow it.",
                                        result.stop_reason
                                    )
                                } else {
                                    format!("The ACP agent ended the turn: {}.", result.stop_reason)
                                };
                                let failure = Failure::new(FailureKind::AgentError, message);
                                t.bridge.push_event(&Event::Failed(failure), now_ms);
                            }
                        }
                    }
                }
                // The prompt is over: nothing is left to cancel.
                let _ = self.turns[index].bridge.take_stop();
                self.close_session(index, now_ms);
            }
            PendingKind::Close => {}
        }
    }

    /// The turn at `index` is done with its session: `session/close` for an agent that
    /// offers it.
    fn close_session(&mut self, index: usize, now_ms: u64) {
        if !self.closes_sessions || self.handshake != Handshake::Ready {
            return;
        }
        let Some(session) = self.turns[index].session.take() else {
            return;
        };
        let deadline = now_ms.saturating_add(self.config.cancel_timeout_ms);
        self.request(
            PendingKind::Close,
            "session/close",
            json!({"sessionId": session}),
            Some(deadline),
        );
        self.sessions_closed += 1;
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("handshake", &self.handshake)
            .field("pending", &self.pending.len())
            .field("idle_sessions", &self.idle.len())
            .field("turns", &self.turns.len())
            .finish_non_exhaustive()
    }
}
