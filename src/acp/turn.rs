//! One client request served by the connection: its [`Bridge`] (head, keep-alive, idle
//! timeout, the dialect's frames), where it is, and the session it runs on.
//!
//! A turn goes `Queued` → (`SettingModel` →) `Prompting` (→ `Cancelling`) → `Done`, and
//! to `Done` from any phase when it fails.

use super::config::AcpConfig;
use super::session::Session;
use super::update::{ToolCalls, Update};
use crate::bridge::Bridge;
use crate::conversation::ToolSpec;
use crate::event::{Event, Failure, FailureKind};
use crate::mcp::ToolOutcome;

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
    /// Waiting for a session of its own (`session/new` with the client's tools).
    Creating,
    SettingModel,
    Prompting,
    /// `session/cancel` sent; the prompt's answer is awaited until `deadline`.
    Cancelling {
        deadline: u64,
    },
    /// Nothing more comes from the agent for this turn.
    Done,
}

/// What a turn gives the agent.
#[derive(Debug)]
pub(super) enum Work {
    /// The prompt the bridge rendered (a turn outside any conversation).
    Bridge,
    /// A conversation's first turn on a session: this prompt, the whole conversation;
    /// the client's tools (when there are any) are served to a session of its own.
    Fresh {
        prompt: String,
        tools: Vec<ToolSpec>,
    },
    /// A parked session resumed (already the turn's `session`): these results for the
    /// calls it waits for, by client call id, then this new input.
    Resume {
        results: Vec<(String, ToolOutcome)>,
        input: Option<String>,
    },
}

/// What a queued turn needs to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Needs {
    /// A fresh session from the pool.
    PoolSession,
    /// A session of its own, made with the client's tools.
    OwnSession,
    /// Nothing: it holds the session it resumes.
    Resumed,
}

impl Work {
    /// The client's tools it serves as an MCP server, if any.
    pub(super) fn tools(&self) -> &[ToolSpec] {
        match self {
            Work::Fresh { tools, .. } => tools,
            Work::Bridge | Work::Resume { .. } => &[],
        }
    }
}

/// A turn: the request's [`Bridge`], fed the events of the agent's answer.
pub(super) struct Turn {
    pub(super) id: TurnId,
    pub(super) bridge: Bridge,
    pub(super) phase: Phase,
    /// What it gives the agent.
    pub(super) work: Work,
    /// Entropy the caller drew for the turn: a session made for it draws its MCP
    /// server's path and secret from it.
    pub(super) entropy: [u8; 32],
    /// The MCP server of the session being made for it (`Creating`).
    pub(super) pending_link: Option<crate::mcp::link::McpLink>,
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
            work: Work::Bridge,
            entropy: [0; 32],
            pending_link: None,
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

    /// The MCP server of its session, or of the session being made for it: agents reach
    /// their servers while they create the session.
    pub(super) fn link(&self) -> Option<&crate::mcp::link::McpLink> {
        self.session
            .as_ref()
            .and_then(|s| s.link.as_ref())
            .or(self.pending_link.as_ref())
    }

    /// See [`link`](Self::link).
    pub(super) fn link_mut(&mut self) -> Option<&mut crate::mcp::link::McpLink> {
        match &mut self.session {
            Some(session) if session.link.is_some() => session.link.as_mut(),
            _ => self.pending_link.as_mut(),
        }
    }

    /// What it needs to start, when queued.
    pub(super) fn needs(&self) -> Needs {
        match &self.work {
            Work::Resume { .. } => Needs::Resumed,
            Work::Fresh { tools, .. } if !tools.is_empty() => Needs::OwnSession,
            Work::Fresh { .. } | Work::Bridge => Needs::PoolSession,
        }
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
            Phase::Creating | Phase::SettingModel | Phase::Prompting | Phase::Cancelling { .. }
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
            // Not prompting yet: nothing runs on the agent's side. A model being set, or a
            // session being made, is left to finish; the session is retired when the
            // answer comes.
            Phase::Queued { .. } | Phase::Creating => {
                self.phase = Phase::Done;
                None
            }
            Phase::SettingModel | Phase::Cancelling { .. } | Phase::Done => None,
        }
    }
}
