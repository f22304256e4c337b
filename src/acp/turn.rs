//! One client request served by the connection: its [`Bridge`] (head, keep-alive, idle
//! timeout, the dialect's frames), where it is, and the session it runs on.
//!
//! A turn goes `Queued` → (`SettingModel` →) `Prompting` (→ `Cancelling`) → `Done`, and
//! to `Done` from any phase when it fails.

use super::config::AcpConfig;
use super::session::Session;
use super::update::{ToolCalls, Update};
use crate::bridge::Bridge;
use crate::event::{Event, Failure, FailureKind};

/// A turn's handle: one client request served by a [`Connection`](super::Connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnId(pub(crate) u64);

impl TurnId {
    /// The number behind the handle: unique within its [`Connection`](super::Connection),
    /// rising in the order turns were started.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Where a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
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

/// A turn: the request's [`Bridge`], fed the events of the agent's answer.
pub(super) struct Turn {
    pub(super) id: TurnId,
    pub(super) bridge: Bridge,
    pub(super) phase: Phase,
    /// The session the turn runs on: given when it leaves the queue, taken back when the
    /// agent is done with the turn (the connection's `release_session`).
    pub(super) session: Option<Session>,
    /// The agent's tool calls seen so far, to describe their completions.
    pub(super) tools: ToolCalls,
    /// What the agent reported the session cost so far.
    pub(super) cost: Option<f64>,
    /// The client hung up: its `End` need not be handed out, so the turn is forgotten
    /// once the agent is done with it, polled or not.
    pub(super) gone: bool,
    /// A permission request of this turn was refused by policy.
    pub(super) refused: bool,
}

impl Turn {
    /// A turn starting in `phase` (`Done` for a request answered at once).
    pub(super) fn new(id: TurnId, bridge: Bridge, phase: Phase) -> Turn {
        Turn {
            id,
            bridge,
            phase,
            session: None,
            tools: ToolCalls::default(),
            cost: None,
            gone: false,
            refused: false,
        }
    }

    /// Whether the caller still has something to take: the response has not ended, and
    /// its client is there to take it.
    pub(super) fn is_live(&self) -> bool {
        !self.bridge.is_ended() && !self.gone
    }

    /// Whether it waits for a prompt slot or a session.
    pub(super) fn is_queued(&self) -> bool {
        matches!(self.phase, Phase::Queued { .. })
    }

    /// Whether it holds one of the agent's prompt slots: its model is being set, or its
    /// prompt runs (cancelled or not).
    pub(super) fn holds_slot(&self) -> bool {
        matches!(
            self.phase,
            Phase::SettingModel | Phase::Prompting | Phase::Cancelling { .. }
        )
    }

    /// The id of the session it runs on.
    pub(super) fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(Session::id)
    }

    /// The deadline of its phase (queued, or cancelled), if it has one.
    pub(super) fn phase_deadline(&self) -> Option<u64> {
        match self.phase {
            Phase::Queued { deadline } | Phase::Cancelling { deadline } => Some(deadline),
            _ => None,
        }
    }

    /// Ends the turn with `failure`: nothing more comes from the agent for it, and there
    /// is nothing to cancel.
    pub(super) fn fail(&mut self, failure: Failure, now_ms: u64) {
        self.phase = Phase::Done;
        self.bridge.push_event(&Event::Failed(failure), now_ms);
        let _ = self.bridge.take_stop();
    }

    /// A `session/update` for its session.
    pub(super) fn push_update(&mut self, update: &Update<'_>, now_ms: u64) {
        if update.is_usage() {
            if let Some(cost) = update.cost {
                self.cost = Some(cost.amount);
            }
            return;
        }
        let Turn { bridge, tools, .. } = self;
        tools.map(update, &mut |event| bridge.push_event(event, now_ms));
    }

    /// After any input to its bridge: fails it if its client is too slow, and turns the
    /// bridge's stop decision into a cancellation. Returns the session whose prompt to
    /// cancel (`session/cancel`), if any.
    pub(super) fn after_input(&mut self, config: &AcpConfig, now_ms: u64) -> Option<String> {
        let budget = config.turn_output_budget;
        if self.bridge.unsent_len() > budget && !self.bridge.is_ended() {
            let failure = Failure::new(
                FailureKind::Unavailable,
                format!(
                    "The client read the response too slowly (over {budget} bytes waiting); the turn was cancelled. The request may be retried."
                ),
            );
            self.bridge.push_event(&Event::Failed(failure), now_ms);
        }
        if !self.bridge.take_stop() {
            return None;
        }
        match self.phase {
            Phase::Prompting => {
                self.phase = Phase::Cancelling {
                    deadline: now_ms.saturating_add(config.cancel_timeout_ms),
                };
                Some(self.session_id().unwrap_or_default().to_owned())
            }
            // Not prompting yet: nothing runs on the agent's side. A model being set is
            // left to finish; its session is retired when the answer comes.
            Phase::Queued { .. } => {
                self.phase = Phase::Done;
                None
            }
            Phase::SettingModel | Phase::Cancelling { .. } | Phase::Done => None,
        }
    }
}
