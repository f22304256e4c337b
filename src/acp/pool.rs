//! The sessions a connection holds apart from its turns: fresh ones made ahead of need
//! (`session/new` takes a while), and how a session is retired once its turn is over.
//!
//! A session serves one turn. An agent that offers `session/close`
//! (`agentCapabilities.sessionCapabilities.close` in its `initialize` answer) is told to
//! close each retired session, so that a warm agent serving thousands of requests does not
//! keep them all; its answer is awaited (with a deadline) but changes nothing. Other
//! agents' sessions are forgotten: cleaning up the sessions such an agent stores is then
//! the adapter's.

use std::collections::VecDeque;

use serde_json::json;

use super::rpc::{PendingKind, Rpc};
use super::session::{ModelChoice, Session};

/// Fresh sessions, oldest first, and the retired ones' count.
#[derive(Debug, Default)]
pub(super) struct Pool {
    fresh: VecDeque<Session>,
    /// What the latest fresh session offered.
    offered: Option<ModelChoice>,
    /// Whether the agent offers `session/close`.
    closes: bool,
    /// `session/close` requests sent.
    closed: u64,
}

impl Pool {
    /// Whether retired sessions are closed: the agent said it offers `session/close`.
    pub(super) fn close_retired(&mut self, closes: bool) {
        self.closes = closes;
    }

    /// A session the agent just created.
    pub(super) fn add(&mut self, session: Session) {
        self.offered = Some(session.models().clone());
        self.fresh.push_back(session);
    }

    /// The oldest fresh session, for a turn.
    pub(super) fn take(&mut self) -> Option<Session> {
        self.fresh.pop_front()
    }

    /// A session taken but not used: still fresh, first to be taken again.
    pub(super) fn give_back(&mut self, session: Session) {
        self.fresh.push_front(session);
    }

    /// Forgets every fresh session (the agent is going).
    pub(super) fn clear(&mut self) {
        self.fresh.clear();
    }

    /// How many fresh sessions wait for a turn.
    pub(super) fn len(&self) -> usize {
        self.fresh.len()
    }

    /// What the latest fresh session offered.
    pub(super) fn offered(&self) -> Option<&ModelChoice> {
        self.offered.as_ref()
    }

    /// `session/close` requests sent so far.
    pub(super) fn closed(&self) -> u64 {
        self.closed
    }

    /// Retires a session whose turn is over: closed if the agent offers it (the answer
    /// awaited until `deadline`), else forgotten.
    pub(super) fn retire(&mut self, session: Session, rpc: &mut Rpc, deadline: u64) {
        if !self.closes {
            return;
        }
        rpc.request(
            PendingKind::Close,
            "session/close",
            json!({"sessionId": session.id()}),
            Some(deadline),
        );
        self.closed += 1;
    }
}
