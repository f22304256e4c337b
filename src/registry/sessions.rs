//! The registry: parked agent sessions, found by owner, conversation key and transcript.

use std::collections::{BTreeSet, HashMap, VecDeque};

use thiserror::Error;

use super::delta::{self, DeltaShape, FreshReason};
use super::keys::{ConversationKeys, Owner};
use super::transcript::{AnswerDigest, Digest, Tail, Transcript};
use crate::api::{ErrorKind, ErrorReply, Request};
use crate::names::named;

/// The registry's settings. [`Default`] gives the values documented on each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryConfig {
    /// Whether requests may resume parked sessions at all. Default `true`; when `false`
    /// every request is [`Decision::Fresh`] with [`FreshReason::Disabled`] and nothing is
    /// parked.
    pub enabled: bool,
    /// How long a parked session waits for its conversation's next request. Default 30
    /// minutes: a client's tool may run for ten (Claude Code's longest shell command), and
    /// a person answering a permission prompt longer.
    pub ttl_ms: u64,
    /// Parked sessions in all; the least recently used goes first. Default 256.
    pub max_parked: usize,
    /// Parked sessions of one owner; that owner's least recently used goes first.
    /// Default 32.
    pub max_parked_per_owner: usize,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            enabled: true,
            ttl_ms: 30 * 60 * 1000,
            max_parked: 256,
            max_parked_per_owner: 32,
        }
    }
}

/// A session's handle in its [`Registry`]: stale once the session is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId {
    index: u32,
    generation: u32,
}

/// A request's hold on a session: given by [`Registry::decide`], and given back exactly
/// once, to [`Registry::park`] when the answer leaves the agent session where the
/// client's conversation is, or to [`Registry::release`] when it does not (the answer
/// failed, was cut short, or its client left). Until then the session is busy.
#[must_use = "a lease is given back to `Registry::park` or `Registry::release`"]
#[derive(Debug)]
pub struct Lease {
    session: SessionId,
    tail: Tail,
}

impl Lease {
    /// The session held.
    #[must_use]
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The transcript the answer extends: the request's conversation as the agent will
    /// have it.
    #[must_use]
    pub fn tail(&self) -> &Tail {
        &self.tail
    }
}

/// What a request continues.
#[derive(Debug)]
pub enum Decision {
    /// Start a fresh agent session with the whole conversation. The lease (absent when
    /// conversations are off, or when the conversation ends in an assistant message whose
    /// continuation cannot be predicted) is parked with the new agent session once it has
    /// answered.
    Fresh {
        /// The new session's lease.
        lease: Option<Lease>,
        /// Why no parked session was resumed.
        reason: FreshReason,
    },
    /// Resume a parked agent session with only what the request adds.
    Resume {
        /// The session's lease.
        lease: Lease,
        /// What to give the agent.
        resume: Resume,
    },
    /// The request cannot be served: it carries only what follows an earlier response
    /// (`previous_response_id`) and that response's session is not here.
    Refuse(ErrorReply),
}

/// What a resumed session is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The agent's own id of the session (an ACP session id, cursor-agent's chat id).
    pub agent_session: String,
    /// Where the delta starts in the request's messages.
    pub delta: usize,
    /// The delta: results for [`pending`](Self::pending), then new input.
    pub shape: DeltaShape,
    /// The client call ids the session waited for, in the order they were made.
    pub pending: Vec<String>,
}

/// How an answer left its agent session, for [`Registry::park`].
#[derive(Debug, Clone, Copy)]
pub struct Park<'a> {
    /// What the agent answered, as sent to the client.
    pub answer: &'a AnswerDigest,
    /// The agent's own id of the session.
    pub agent_session: &'a str,
    /// The client call ids the answer ended with: the session waits for their results.
    /// Empty when the agent's turn is over.
    pub pending: &'a [String],
    /// The answer's response id, when its dialect has one a later request may name
    /// (`previous_response_id`).
    pub response_id: Option<&'a str>,
}

/// A parked session the registry let go: the agent session it names is no longer
/// reachable and should be ended (its process stopped, its ACP session cancelled and
/// closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    /// The agent's own id of the session.
    pub agent_session: String,
    /// Why.
    pub reason: ReleaseReason,
}

/// Why a session was let go.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReleaseReason {
    /// Its time to live passed with no request.
    Expired,
    /// Room was needed (the least recently used goes).
    Evicted,
    /// A session with the same transcript was parked after it: the two are one
    /// conversation as far as any request can tell.
    Replaced,
    /// A request that held it ended elsewhere than where its client's conversation is.
    Failed,
    /// [`Registry::clear`].
    Cleared,
}

named!(ReleaseReason, "release reason" {
    Expired => "expired",
    Evicted => "evicted",
    Replaced => "replaced",
    Failed => "failed",
    Cleared => "cleared",
});

/// Misuse of a [`Registry`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// The lease's session is gone ([`Registry::clear`] ran while it was held).
    #[error("the lease's session is gone")]
    Gone,
    /// The answer cannot be parked after the lease's transcript (it ended in an
    /// assistant message).
    #[error("the answer does not follow the transcript")]
    Unparkable,
}

/// What the registry has done, for a server's health report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryStats {
    /// Requests that resumed a parked session.
    pub resumed: u64,
    /// Requests that started a fresh session, by [`FreshReason`] (indexed as
    /// [`FreshReason::ALL`]).
    pub fresh: [u64; FreshReason::ALL.len()],
    /// Requests refused ([`Decision::Refuse`]).
    pub refused: u64,
    /// Sessions let go, by reason.
    pub expired: u64,
    /// See [`ReleaseReason::Evicted`].
    pub evicted: u64,
    /// See [`ReleaseReason::Failed`] and [`ReleaseReason::Replaced`].
    pub dropped: u64,
}

struct Slot {
    generation: u32,
    session: Option<Session>,
}

struct Session {
    owner: Owner,
    key: Option<u64>,
    busy: bool,
    used_ms: u64,
    /// `None` until the session's first answer is parked.
    parked: Option<Parked>,
}

struct Parked {
    tail: Tail,
    digest: Digest,
    agent_session: String,
    pending: Vec<String>,
    response_id: Option<String>,
}

/// The parked agent sessions of one agent transport (a warm ACP agent, or a server that
/// starts cursor-agent per request), and the decision, for each request, whether it
/// continues one of them.
///
/// A session is parked after an answer, with the transcript the agent then has: the
/// request's conversation and the answer as the client will echo it (see
/// [`transcript`](super::transcript)). A later request **resumes** it only when all of
/// these hold, and is otherwise **fresh** (the whole conversation, given to a new agent
/// session — always correct, never an error):
/// - same owner, and same conversation key (or none on both sides);
/// - the session's transcript is an exact prefix of the request's conversation: same
///   model, tool set, system text and every earlier message;
/// - the session is not serving another request;
/// - what follows the prefix answers every call the session waits for, each once, and
///   then adds only user, system or developer content — at least something.
///
/// A request whose conversation matches several parked sessions resumes the longest.
///
/// Methods:
/// - **getters**: [`parked`](Self::parked), [`busy`](Self::busy), [`stats`](Self::stats),
///   [`config`](Self::config);
/// - **inputs**, all taking `now_ms`: [`decide`](Self::decide), [`park`](Self::park),
///   [`release`](Self::release), [`handle_timeout`](Self::handle_timeout),
///   [`clear`](Self::clear);
/// - **outputs**: [`poll_released`](Self::poll_released) (agent sessions to end), then
///   [`poll_timeout`](Self::poll_timeout).
///
/// **After every input, drain `poll_released` until it returns `None`, then ask
/// `poll_timeout`.**
pub struct Registry {
    config: RegistryConfig,
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_digest: HashMap<(Owner, Option<u64>, Digest), SessionId>,
    by_response: HashMap<(Owner, String), SessionId>,
    /// Parked, idle sessions by last use: the expiry and eviction order.
    idle: BTreeSet<(u64, SessionId)>,
    idle_per_owner: HashMap<Owner, usize>,
    released: VecDeque<Released>,
    stats: RegistryStats,
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new(config: RegistryConfig) -> Registry {
        Registry {
            config,
            slots: Vec::new(),
            free: Vec::new(),
            by_digest: HashMap::new(),
            by_response: HashMap::new(),
            idle: BTreeSet::new(),
            idle_per_owner: HashMap::new(),
            released: VecDeque::new(),
            stats: RegistryStats::default(),
        }
    }

    // A. Getters.

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// Sessions parked and waiting for their next request.
    #[must_use]
    pub fn parked(&self) -> usize {
        self.idle.len()
    }

    /// Sessions held by a request (leases out).
    #[must_use]
    pub fn busy(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| slot.session.as_ref().is_some_and(|s| s.busy))
            .count()
    }

    /// What the registry has done so far.
    #[must_use]
    pub fn stats(&self) -> &RegistryStats {
        &self.stats
    }

    // B. Inputs.

    /// Decides what `request` (from `owner`, with `keys`) continues, and takes the lease
    /// of the session it will use.
    pub fn decide(
        &mut self,
        owner: Owner,
        keys: &ConversationKeys<'_>,
        request: &Request,
        now_ms: u64,
    ) -> Decision {
        let continuation = &request.continuation;
        if let Some(previous) = continuation.previous_response_id.as_deref() {
            return self.decide_after_response(owner, previous, request, now_ms);
        }
        let transcript = Transcript::of(request);
        if !self.config.enabled {
            return self.fresh(None, FreshReason::Disabled);
        }
        let key = keys.digest(continuation.conversation_key.as_deref());
        let mut reason = FreshReason::NoSession;
        let mut found = None;
        for (_, digest, next) in transcript.prefixes().rev() {
            let Some(&id) = self.by_digest.get(&(owner, key, digest)) else {
                continue;
            };
            let session = self.get(id).expect("indexed sessions exist");
            if session.busy {
                reason = FreshReason::Busy;
                break;
            }
            let parked = session
                .parked
                .as_ref()
                .expect("indexed sessions are parked");
            match delta::check(&request.conversation.messages[next..], &parked.pending) {
                Ok(shape) => {
                    found = Some((
                        id,
                        Resume {
                            agent_session: parked.agent_session.clone(),
                            delta: next,
                            shape,
                            pending: parked.pending.clone(),
                        },
                    ));
                }
                Err(why) => reason = why,
            }
            break;
        }
        if let Some((id, resume)) = found {
            self.take(id, now_ms);
            self.stats.resumed += 1;
            let lease = Lease {
                session: id,
                tail: transcript.into_tail(),
            };
            return Decision::Resume { lease, resume };
        }
        let tail = transcript.into_tail();
        let lease = (!tail.ends_with_answer()).then(|| self.open(owner, key, tail, now_ms));
        self.fresh(lease, reason)
    }

    /// The agent answered as `park` says and its session now holds the client's
    /// conversation: it waits for the next request.
    pub fn park(&mut self, lease: Lease, park: Park<'_>, now_ms: u64) -> Result<(), RegistryError> {
        let Some(tail) = lease.tail.extended(park.answer) else {
            self.drop_session(lease.session, ReleaseReason::Failed);
            return Err(RegistryError::Unparkable);
        };
        let id = lease.session;
        let Some(session) = self.get_mut(id) else {
            return Err(RegistryError::Gone);
        };
        let owner = session.owner;
        let key = session.key;
        let old = session.parked.take();
        session.busy = false;
        session.used_ms = now_ms;
        let digest = tail.digest();
        session.parked = Some(Parked {
            tail,
            digest,
            agent_session: park.agent_session.to_owned(),
            pending: park.pending.to_vec(),
            response_id: park.response_id.map(str::to_owned),
        });
        if let Some(old) = old {
            self.unindex(owner, key, &old);
            if old.agent_session != park.agent_session {
                self.release_agent_session(old.agent_session, ReleaseReason::Replaced);
            }
        }
        if let Some(other) = self.by_digest.insert((owner, key, digest), id) {
            if other != id {
                self.drop_session(other, ReleaseReason::Replaced);
            }
        }
        if let Some(response) = park.response_id {
            self.by_response.insert((owner, response.to_owned()), id);
        }
        self.idle.insert((now_ms, id));
        *self.idle_per_owner.entry(owner).or_default() += 1;
        self.enforce_bounds(owner);
        Ok(())
    }

    /// The request holding `lease` ended without leaving the agent session where its
    /// client's conversation is (it failed, was cut short, or its client left): the
    /// session is forgotten, and its agent session, if it had one, released.
    pub fn release(&mut self, lease: Lease, now_ms: u64) {
        let _ = now_ms;
        self.drop_session(lease.session, ReleaseReason::Failed);
    }

    /// A deadline from [`poll_timeout`](Self::poll_timeout) passed: sessions idle for
    /// [`RegistryConfig::ttl_ms`] are released. Spurious calls do nothing.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        while let Some(&(used, id)) = self.idle.first() {
            if now_ms < used.saturating_add(self.config.ttl_ms) {
                break;
            }
            self.drop_session(id, ReleaseReason::Expired);
        }
    }

    /// Releases every parked session and forgets the busy ones (their leases' `park`
    /// then fails with [`RegistryError::Gone`]): a server shutting down, or conversations
    /// turned off.
    pub fn clear(&mut self, now_ms: u64) {
        let _ = now_ms;
        for index in 0..self.slots.len() {
            let generation = self.slots[index].generation;
            if self.slots[index].session.is_some() {
                let id = SessionId {
                    index: index as u32,
                    generation,
                };
                self.drop_session(id, ReleaseReason::Cleared);
            }
        }
    }

    // C. Outputs.

    /// The next agent session to end, or `None`.
    #[must_use]
    pub fn poll_released(&mut self) -> Option<Released> {
        self.released.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due; `None` when no session
    /// is parked.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        self.idle
            .first()
            .map(|&(used, _)| used.saturating_add(self.config.ttl_ms))
    }

    // Internals.

    fn decide_after_response(
        &mut self,
        owner: Owner,
        previous: &str,
        request: &Request,
        now_ms: u64,
    ) -> Decision {
        let refuse = |registry: &mut Registry, message: String, code: &'static str| {
            registry.stats.refused += 1;
            let mut reply = ErrorReply::new(ErrorKind::InvalidRequest, message, code);
            reply.param = Some("previous_response_id".into());
            Decision::Refuse(reply)
        };
        let found = self
            .by_response
            .get(&(owner, previous.to_owned()))
            .copied()
            .filter(|_| self.config.enabled);
        let Some(id) = found else {
            return refuse(
                self,
                format!("Previous response with id '{previous}' not found."),
                "previous_response_not_found",
            );
        };
        let session = self.get(id).expect("indexed sessions exist");
        if session.busy {
            return refuse(
                self,
                format!(
                    "Previous response with id '{previous}' is being continued by another request; send the whole conversation in 'input' instead."
                ),
                "previous_response_in_use",
            );
        }
        let parked = session
            .parked
            .as_ref()
            .expect("indexed sessions are parked");
        if parked.response_id.as_deref() != Some(previous) {
            return refuse(
                self,
                format!(
                    "Previous response with id '{previous}' has been continued already; only the latest response of a conversation can be continued here. Send the whole conversation in 'input' instead."
                ),
                "previous_response_not_latest",
            );
        }
        // What follows the earlier response: everything but the request's own
        // instructions, which the agent session already has from the first request.
        let messages = &request.conversation.messages;
        let start = messages
            .iter()
            .take_while(|m| m.role == crate::conversation::Role::System)
            .count();
        match delta::check(&messages[start..], &parked.pending) {
            Ok(shape) => {
                let mut tail = parked.tail.clone();
                tail.push_messages(&messages[start..], |_, _| {});
                let resume = Resume {
                    agent_session: parked.agent_session.clone(),
                    delta: start,
                    shape,
                    pending: parked.pending.clone(),
                };
                self.take(id, now_ms);
                self.stats.resumed += 1;
                Decision::Resume {
                    lease: Lease { session: id, tail },
                    resume,
                }
            }
            Err(reason) => refuse(
                self,
                format!(
                    "'input' cannot continue response '{previous}' ({}): send the results of every tool call it made, then any new input, or send the whole conversation instead.",
                    reason.name()
                ),
                "invalid_continuation",
            ),
        }
    }

    fn fresh(&mut self, lease: Option<Lease>, reason: FreshReason) -> Decision {
        let index = FreshReason::ALL
            .iter()
            .position(|r| *r == reason)
            .expect("every reason is listed");
        self.stats.fresh[index] += 1;
        Decision::Fresh { lease, reason }
    }

    /// A new busy session for a fresh request.
    fn open(&mut self, owner: Owner, key: Option<u64>, tail: Tail, now_ms: u64) -> Lease {
        let session = Session {
            owner,
            key,
            busy: true,
            used_ms: now_ms,
            parked: None,
        };
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize].session = Some(session);
                index
            }
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    session: Some(session),
                });
                (self.slots.len() - 1) as u32
            }
        };
        let id = SessionId {
            index,
            generation: self.slots[index as usize].generation,
        };
        Lease { session: id, tail }
    }

    /// Marks a parked session busy for a request.
    fn take(&mut self, id: SessionId, now_ms: u64) {
        let session = self.get_mut(id).expect("a found session exists");
        let used = session.used_ms;
        let owner = session.owner;
        session.busy = true;
        session.used_ms = now_ms;
        if self.idle.remove(&(used, id)) {
            self.decrement_idle(owner);
        }
    }

    fn get(&self, id: SessionId) -> Option<&Session> {
        let slot = self.slots.get(id.index as usize)?;
        (slot.generation == id.generation)
            .then_some(slot.session.as_ref())
            .flatten()
    }

    fn get_mut(&mut self, id: SessionId) -> Option<&mut Session> {
        let slot = self.slots.get_mut(id.index as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.session.as_mut()
    }

    fn unindex(&mut self, owner: Owner, key: Option<u64>, parked: &Parked) {
        self.by_digest.remove(&(owner, key, parked.digest));
        if let Some(response) = &parked.response_id {
            self.by_response.remove(&(owner, response.clone()));
        }
    }

    fn decrement_idle(&mut self, owner: Owner) {
        if let Some(count) = self.idle_per_owner.get_mut(&owner) {
            *count -= 1;
            if *count == 0 {
                self.idle_per_owner.remove(&owner);
            }
        }
    }

    /// Forgets a session, releasing its agent session.
    fn drop_session(&mut self, id: SessionId, reason: ReleaseReason) {
        let Some(slot) = self.slots.get_mut(id.index as usize) else {
            return;
        };
        if slot.generation != id.generation {
            return;
        }
        let Some(session) = slot.session.take() else {
            return;
        };
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(id.index);
        if !session.busy && self.idle.remove(&(session.used_ms, id)) {
            self.decrement_idle(session.owner);
        }
        if let Some(parked) = session.parked {
            let digest_key = (session.owner, session.key, parked.digest);
            if self.by_digest.get(&digest_key) == Some(&id) {
                self.by_digest.remove(&digest_key);
            }
            if let Some(response) = &parked.response_id {
                let key = (session.owner, response.clone());
                if self.by_response.get(&key) == Some(&id) {
                    self.by_response.remove(&key);
                }
            }
            self.release_agent_session(parked.agent_session, reason);
        }
    }

    fn release_agent_session(&mut self, agent_session: String, reason: ReleaseReason) {
        match reason {
            ReleaseReason::Expired => self.stats.expired += 1,
            ReleaseReason::Evicted => self.stats.evicted += 1,
            ReleaseReason::Replaced | ReleaseReason::Failed | ReleaseReason::Cleared => {
                self.stats.dropped += 1
            }
        }
        self.released.push_back(Released {
            agent_session,
            reason,
        });
    }

    /// Evicts the least recently used idle sessions over the bounds.
    fn enforce_bounds(&mut self, owner: Owner) {
        while self.idle_per_owner.get(&owner).copied().unwrap_or(0)
            > self.config.max_parked_per_owner
        {
            let oldest = self
                .idle
                .iter()
                .find(|(_, id)| self.get(*id).is_some_and(|s| s.owner == owner))
                .map(|&(_, id)| id);
            match oldest {
                Some(id) => self.drop_session(id, ReleaseReason::Evicted),
                None => break,
            }
        }
        while self.idle.len() > self.config.max_parked {
            let &(_, id) = self.idle.first().expect("over the bound, so not empty");
            self.drop_session(id, ReleaseReason::Evicted);
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("parked", &self.parked())
            .field("busy", &self.busy())
            .finish_non_exhaustive()
    }
}
