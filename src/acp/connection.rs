//! [`Connection`]: one ACP agent process serving many turns. This file holds the type, its
//! inputs and outputs, and the agent's lifecycle (handshake state, exit, restart); what it
//! drives lives beside it, one concept a file (see [`acp`](super)).
//!
//! Rules it keeps, besides those its documentation states for callers:
//! - Turns live inside the connection, addressed by [`TurnId`], not as objects of their
//!   own: any agent line may concern any turn (updates, permission requests, prompt
//!   answers), so routing needs them all at hand.
//! - A turn is a [`Bridge`] fed neutral events. The connection takes the bridge's stop
//!   decision itself and cancels the turn's prompt instead (`session/cancel`), so
//!   [`Output::StopAgent`] never reaches the caller and only [`Decision::Restart`] ends the
//!   process.
//! - The link between a turn and its session is cut in one place (`release_session`),
//!   once the agent is done with the turn; the session is then retired.
//! - The process is restarted, never patched up: a missed `initialize` or `session/new`,
//!   or every prompt slot held by a cancelled prompt that never ended, fails every open
//!   turn (retryable) and decides [`Decision::Restart`].

use std::collections::VecDeque;
use std::fmt;

use serde_json::json;
use thiserror::Error;

use super::config::AcpConfig;
use super::conversations::Conversations;
use super::handshake::{self, Agent, Handshake};
use super::pool::Pool;
use super::rpc::{PendingKind, Rpc};
use super::session::ModelChoice;
use super::turn::{Phase, Turn, TurnId};
use crate::api::invites_retry;
use crate::api::{ErrorKind, ErrorReply};
use crate::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use crate::cursor::ExitStatus;
use crate::event::{Event, Failure, FailureKind};
use crate::framing::LineFramer;
use crate::names::named;

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
    pub(super) config: AcpConfig,
    framer: LineFramer,
    pub(super) handshake: Handshake,
    /// Our requests awaiting answers, and the bytes for the agent's stdin.
    pub(super) rpc: Rpc,
    /// Sessions not serving a turn.
    pub(super) pool: Pool,
    pub(super) turns: Vec<Turn>,
    next_turn: u64,
    decisions: VecDeque<Decision>,
    stderr_tail: Vec<u8>,
    exited: bool,
    /// Agent stdout lines that were not JSON-RPC.
    pub(super) malformed: u64,
    /// Cancelled prompts that never ended: their slots stay taken.
    pub(super) stuck: usize,
    /// The last turn `poll_ready` named since the last input.
    ready_after: Option<TurnId>,
    /// What the agent said of itself, once the handshake succeeded.
    pub(super) agent: Option<Agent>,
    /// Parked sessions and the registry that finds them.
    pub(super) conversations: Conversations,
}

impl Connection {
    /// A connection to a just-spawned agent: `initialize` is the first transmit.
    pub fn new(config: AcpConfig, now_ms: u64) -> Connection {
        let config_conversations = config.conversations.clone();
        let mut rpc = Rpc::default();
        let deadline = now_ms.saturating_add(config.initialize_timeout_ms);
        rpc.request(
            PendingKind::Initialize,
            "initialize",
            handshake::initialize_params(&config),
            Some(deadline),
        );
        Connection {
            framer: LineFramer::new(config.max_line_len),
            config,
            handshake: Handshake::Initializing,
            rpc,
            pool: Pool::default(),
            turns: Vec::new(),
            next_turn: 0,
            decisions: VecDeque::new(),
            stderr_tail: Vec::new(),
            exited: false,
            malformed: 0,
            stuck: 0,
            ready_after: None,
            agent: None,
            conversations: Conversations::new(crate::registry::Registry::new(config_conversations)),
        }
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
            .filter(|t| t.is_queued() && t.is_live())
            .count()
    }

    /// `session/close` requests sent so far: one per session whose turn is over, when
    /// the agent advertised `sessionCapabilities.close`; always 0 otherwise.
    pub fn sessions_closed(&self) -> u64 {
        self.pool.closed()
    }

    /// The models the agent offers, from its latest `session/new` answer, in its order;
    /// `None` until a session was created. An agent that lists none gives `Some(&[])`:
    /// then only its default is served.
    pub fn models(&self) -> Option<&[String]> {
        self.pool.offered().map(ModelChoice::available)
    }

    /// The model a fresh session uses unless told otherwise, when the agent says.
    pub fn current_model(&self) -> Option<&str> {
        self.pool.offered().and_then(ModelChoice::current)
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
        self.ready_after_reset();
        let id = self.next_turn_id();
        let mut bridge = Bridge::new(dialect, body, config, params);
        let mut phase = Phase::Queued {
            deadline: params.now_ms.saturating_add(self.config.queue_timeout_ms),
        };
        if bridge.invocation().is_none() {
            phase = Phase::Done;
        } else if bridge.has_client_tools() {
            // Refused rather than run: the agent's own tools would run instead, and an
            // answer in prose where a tool call was expected is worse than a clear refusal.
            let mut reply = ErrorReply::new(
                ErrorKind::InvalidRequest,
                "`tools` are not supported over ACP: the agent runs its own tools and cannot call the client's. Send the request without `tools`, or use the per-request transport.",
                "unsupported_parameter",
            );
            reply.param = Some("tools".into());
            bridge.refuse(&reply);
            phase = Phase::Done;
        } else if self.handshake == Handshake::Dead {
            bridge.push_event(
                &Event::Failed(super::conversations::dead_failure()),
                params.now_ms,
            );
            // No agent runs for this turn: the bridge's stop is moot, and never reaches
            // the caller as `StopAgent`.
            let _ = bridge.take_stop();
            phase = Phase::Done;
        }
        self.turns.push(Turn::new(id, bridge, phase));
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
    /// turn fails with the stderr tail, and a restart is decided. Exit code 126 or 127
    /// before `initialize` was answered means the program could not be started: the turns
    /// fail as a misconfiguration (500, not retryable) that says how to install it.
    pub fn agent_exited(&mut self, status: ExitStatus, now_ms: u64) -> Result<(), ConnectionError> {
        self.ready_after = None;
        if self.exited {
            return Err(ConnectionError::ExitedTwice);
        }
        self.exited = true;
        let stderr = String::from_utf8_lossy(&self.stderr_tail);
        let stderr = stderr.trim();
        // 127 and 126 before `initialize` was answered: the program is not there or cannot
        // be run (what a shell, and the adapters for a failed spawn, report). No retry
        // helps; someone must install it or name the right one.
        let failure = if self.handshake == Handshake::Initializing
            && matches!(status, ExitStatus::Code(126 | 127))
        {
            let mut message = String::from(
                "The ACP agent could not be started: its program was not found or is not \
                 executable. Install it (cursor-agent: `curl https://cursor.com/install -fsS | bash`), \
                 or name the right command (the proxies' `--agent-bin`, the JavaScript \
                 package's `AcpAgent` `command`, its OpenCode plugin's `cursorBinary` or \
                 `acpCommand`).",
            );
            if !stderr.is_empty() && !invites_retry(stderr) {
                message.push(' ');
                message.push_str(stderr);
            }
            Failure::new(FailureKind::Misconfigured, message)
        } else if stderr.is_empty() {
            let message = format!("The ACP agent exited ({status}) before answering.");
            Failure::new(FailureKind::AgentCrashed, message)
        } else {
            let message = format!("The ACP agent exited ({status}) before answering: {stderr}");
            Failure::new(FailureKind::AgentCrashed, message)
        };
        self.die(failure, now_ms);
        Ok(())
    }

    /// A deadline from [`poll_timeout`](Self::poll_timeout) passed. Spurious calls do
    /// nothing.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        self.ready_after = None;
        for kind in self.rpc.take_expired(now_ms) {
            if !self.expire_request(kind, now_ms) {
                return;
            }
        }
        self.expire_conversations(now_ms);
        for index in 0..self.turns.len() {
            if !self.expire_phase(index, now_ms) {
                return;
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
        self.end_parked(now_ms);
    }

    // C. Outputs.

    /// Bytes to write to the agent's stdin, or `None`. Valid until the next call.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<&[u8]> {
        self.rpc.poll_transmit()
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
        let turns = self.turns.iter().flat_map(|turn| {
            let phase = turn.phase_deadline();
            phase.into_iter().chain(turn.bridge.poll_timeout())
        });
        self.rpc
            .next_deadline()
            .into_iter()
            .chain(turns)
            .chain(self.conversations_deadline())
            .min()
    }

    // Internals: the agent's lifecycle.

    /// Fails every open turn with `failure` and decides a restart.
    pub(super) fn die(&mut self, failure: Failure, now_ms: u64) {
        if self.handshake != Handshake::Dead {
            self.decisions.push_back(Decision::Restart {
                reason: failure.message.clone(),
            });
        }
        self.handshake = Handshake::Dead;
        self.rpc.forget_all();
        self.pool.clear();
        self.forget_conversations(now_ms);
        for turn in &mut self.turns {
            // Nothing to cancel: the process goes.
            turn.fail(failure.clone(), now_ms);
        }
    }

    /// Restarts the agent for `reason`: every open turn fails, retryable.
    fn restart(&mut self, reason: String, now_ms: u64) {
        self.die(
            Failure::new(
                FailureKind::Unavailable,
                format!("The ACP agent is being restarted ({reason}); the request may be retried."),
            ),
            now_ms,
        );
    }

    // Internals: deadlines.

    /// A request of ours went unanswered past its deadline: a missed handshake or
    /// `session/new` restarts the agent, a missed model answer fails its turn. `false`
    /// when the agent is restarted.
    fn expire_request(&mut self, kind: PendingKind, now_ms: u64) -> bool {
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
                false
            }
            PendingKind::SetModel(turn) => {
                let failure = Failure::new(
                    FailureKind::Timeout,
                    "The ACP agent did not confirm the model in time. The request may be retried.",
                );
                self.fail_turn(turn, failure, now_ms);
                true
            }
            PendingKind::NewSessionFor(turn) => {
                let failure = Failure::new(
                    FailureKind::Timeout,
                    "The ACP agent did not create a session in time. The request may be retried.",
                );
                self.fail_turn(turn, failure, now_ms);
                true
            }
            PendingKind::Prompt(_) | PendingKind::HeldPrompt(_) | PendingKind::Close => true,
        }
    }

    /// The deadline of the phase of the turn at `index`, if it passed: a queued turn
    /// fails, a cancelled prompt that never ended gives its session up. `false` when
    /// that restarted the agent.
    fn expire_phase(&mut self, index: usize, now_ms: u64) -> bool {
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
                turn.phase = Phase::Done;
                self.rpc.forget(PendingKind::Prompt(turn.id));
                self.stuck += 1;
                if self.stuck >= self.config.max_concurrent_prompts.max(1) {
                    self.restart(
                        "every prompt slot holds a cancelled prompt that never ended".into(),
                        now_ms,
                    );
                    return false;
                }
            }
            _ => {}
        }
        true
    }

    // Internals: turns.

    /// Where `turn` is in `turns`, while it is there.
    pub(super) fn index(&self, turn: TurnId) -> Option<usize> {
        self.turns.iter().position(|t| t.id == turn)
    }

    /// Fails `turn`, if it is still there.
    fn fail_turn(&mut self, turn: TurnId, failure: Failure, now_ms: u64) {
        if let Some(index) = self.index(turn) {
            self.turns[index].fail(failure, now_ms);
        }
    }

    /// After any input to a turn's bridge: act on its stop decision (cancel, not kill)
    /// and on its output budget.
    pub(super) fn after_turn_input(&mut self, index: usize, now_ms: u64) {
        let turn = &mut self.turns[index];
        if turn.phase == Phase::Prompting
            && turn.bridge.is_ending()
            && turn.bridge.ended_with_tool_calls()
        {
            // The response ended with the client's tool calls: the agent waits inside
            // them, and the session is parked for the request that brings their results.
            let _ = turn.bridge.take_stop();
            turn.phase = Phase::Done;
            self.settle_session(index, now_ms);
            return;
        }
        if let Some(session) = self.turns[index].after_input(&self.config, now_ms) {
            self.rpc
                .notify("session/cancel", json!({"sessionId": session}));
        }
        let turn = &self.turns[index];
        if turn.phase == Phase::Done && turn.session.is_some() {
            // Ended before its prompt ran (a resumed session waiting for a slot): the
            // session goes with it.
            self.settle_session(index, now_ms);
        }
    }

    /// The agent is done with the turn at `index`: its session is retired, if the agent
    /// still serves.
    pub(super) fn release_session(&mut self, index: usize, now_ms: u64) {
        self.settle_session(index, now_ms);
    }

    /// Forgets which turn `poll_ready` named last: an input came.
    pub(super) fn ready_after_reset(&mut self) {
        self.ready_after = None;
    }

    /// A new turn's handle.
    pub(super) fn next_turn_id(&mut self) -> TurnId {
        let id = TurnId(self.next_turn);
        self.next_turn += 1;
        id
    }

    /// Forgets turns that are over on both sides (response ended or its client gone,
    /// nothing more from the agent), so that a turn whose caller stopped polling after
    /// `End` or [`client_gone`](Self::client_gone) leaks nothing.
    pub(super) fn reap(&mut self) {
        self.turns
            .retain(|turn| turn.is_live() || turn.phase != Phase::Done);
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("handshake", &self.handshake)
            .field("pending", &self.rpc.pending_len())
            .field("idle_sessions", &self.pool.len())
            .field("turns", &self.turns.len())
            .finish_non_exhaustive()
    }
}
