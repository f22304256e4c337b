//! Conversations on the per-request path: the proxy's one [`Registry`], which decides for
//! every request whether it resumes the cursor-agent chat that answered its conversation so
//! far (`--resume`, with only what is new) or runs fresh with the whole history, and who a
//! request is to it. (With `--agent-protocol acp` the warm agent's connection keeps its
//! own registry, of its sessions ([`Warm`](crate::acp::Warm)); who a request is, and the
//! `/health` counters' shape ([`health`]), are the same.)
//!
//! ```text
//!  request head ─► CallerIds (owner: the key it authenticated with; the client's ids)
//!  body ─► Conversations::bridge ─► Dialect::prepare, Registry::decide (locked), Bridge::continuing ─► Bridge, Continuation
//!  response ended ─► Conversations::end_turn ─► Bridge::end_conversation_turn (registry locked)
//!  timer ─► Conversations::expire ─► Registry::handle_timeout ─► next deadline
//! ```
//!
//! - **Owners.** A request's owner is the key it authenticated with (`--api-key`, each key
//!   its own), or the local user when the proxy takes none: a chat is only ever resumed by
//!   a request of the owner it answered.
//! - **Client ids.** `X-Claude-Code-Session-Id` and `X-Claude-Code-Agent-Id` (one field
//!   each, 1 to [`MAX_CLIENT_ID`] visible ASCII bytes; anything else is ignored) narrow
//!   which chats a request may resume, so that subagents sharing a history stay apart.
//! - **The lock** is held only to decide (which parses the body), to end a turn, to expire
//!   and for `/health`; never across I/O.
//! - **Released chats** (expired, evicted, replaced, failed) have no process on this path:
//!   cursor-agent keeps its chats itself, and every run's process ends with its request.
//!   They are logged at debug level.
//! - **Expiry.** Each proxy runs a timer (a task, a thread) that calls
//!   [`Conversations::expire`] at the deadline it returns, woken earlier when a turn's end
//!   brings the deadline forward ([`Conversations::changed`]), or a thread in
//!   [`Conversations::expire_on_this_thread`].

use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use agentwire::bridge::{Bridge, BridgeParams, Caller, Config, Dialect, Prepared};
use agentwire::live_chat::LiveChat;
use agentwire::registry::{
    ConversationKeys, Decision, FreshReason, Owner, Registry, RegistryConfig, RegistryStats,
};

use crate::Clock;
use crate::http::RequestHead;

/// The longest client id header (`X-Claude-Code-Session-Id`, `X-Claude-Code-Agent-Id`)
/// taken; a longer one is ignored.
pub const MAX_CLIENT_ID: usize = 128;

/// Who a request is to the registry: its owner and the conversation ids its headers
/// carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallerIds {
    /// The owner of the key the request authenticated with, or [`Owner::LOCAL`].
    pub owner: Owner,
    /// `X-Claude-Code-Session-Id`, when valid.
    pub client_session: Option<String>,
    /// `X-Claude-Code-Agent-Id`, when valid.
    pub client_agent: Option<String>,
}

impl CallerIds {
    /// The ids of a request from `owner` with `head`.
    pub fn new(owner: Owner, head: &RequestHead<'_>) -> CallerIds {
        CallerIds {
            owner,
            client_session: client_id(head, "x-claude-code-session-id"),
            client_agent: client_id(head, "x-claude-code-agent-id"),
        }
    }

    /// As the bridge takes them.
    pub fn caller(&self) -> Caller<'_> {
        Caller {
            owner: self.owner,
            keys: ConversationKeys {
                caller: None,
                client_session: self.client_session.as_deref(),
                client_agent: self.client_agent.as_deref(),
            },
        }
    }
}

/// The value of the one field `name`, if it is 1 to [`MAX_CLIENT_ID`] visible ASCII bytes.
fn client_id(head: &RequestHead<'_>, name: &'static str) -> Option<String> {
    let value = head.one(name)?;
    let valid =
        (1..=MAX_CLIENT_ID).contains(&value.len()) && value.iter().all(|b| b.is_ascii_graphic());
    valid.then(|| String::from_utf8_lossy(value).into_owned())
}

/// How a request's run began, for its log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation {
    /// It resumed a parked chat with only what is new.
    Resumed,
    /// It ran fresh with the whole conversation, for this reason.
    Fresh(FreshReason),
    /// The registry refused it (`previous_response_id` of a response not here).
    Refused,
    /// The request was invalid: the registry never saw it.
    Invalid,
}

impl fmt::Display for Continuation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Continuation::Resumed => f.write_str("resumed"),
            Continuation::Fresh(reason) => write!(f, "fresh:{}", reason.name()),
            Continuation::Refused => f.write_str("refused"),
            Continuation::Invalid => f.write_str("-"),
        }
    }
}

impl Continuation {
    /// What changed between two snapshots of the registry's counters around one decision.
    pub fn between(before: &RegistryStats, after: &RegistryStats) -> Continuation {
        if after.resumed > before.resumed {
            return Continuation::Resumed;
        }
        if after.refused > before.refused {
            return Continuation::Refused;
        }
        before
            .fresh
            .iter()
            .zip(&after.fresh)
            .position(|(b, a)| a > b)
            .map_or(Continuation::Invalid, |i| {
                Continuation::Fresh(FreshReason::ALL[i])
            })
    }
}

/// A proxy's conversations: its registry, behind a lock, and the wake-ups of its expiry
/// timer. See the module docs.
pub struct Conversations {
    registry: Mutex<Registry>,
    clock: Clock,
    /// Wakes a timer thread ([`expire_on_this_thread`](Self::expire_on_this_thread)).
    moved: Condvar,
    /// Wakes a timer task waiting on [`changed`](Self::changed).
    wake: tokio::sync::Notify,
    /// Told of every chat the registry lets go (`--cursor-mcp`: a parked agent of it is
    /// stopped).
    released: std::sync::OnceLock<Box<dyn Fn(&str) + Send + Sync>>,
}

/// A request's conversation, decided: its parsed request and the registry's decision, or
/// the bridge that answers an invalid body.
pub enum Decided {
    /// The body is not a valid request of its dialect: this bridge answers it.
    Invalid(Bridge),
    /// The request, the registry's decision, and which it is for the log.
    Parsed {
        /// The parsed request.
        prepared: Prepared,
        /// Resume, fresh or refuse.
        decision: Decision,
        /// How the run begins, for the log.
        how: Continuation,
    },
}

impl fmt::Debug for Conversations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversations")
            .field("registry", &*self.lock())
            .finish_non_exhaustive()
    }
}

impl Conversations {
    /// A registry with `config`, on the proxy's `clock`.
    pub fn new(config: RegistryConfig, clock: Clock) -> Conversations {
        Conversations {
            registry: Mutex::new(Registry::new(config)),
            clock,
            moved: Condvar::new(),
            wake: tokio::sync::Notify::new(),
            released: std::sync::OnceLock::new(),
        }
    }

    /// Calls `hook` with the chat id of every chat the registry lets go from now on
    /// (under the registry's lock: it must not take it). Set once.
    pub fn on_released(&self, hook: Box<dyn Fn(&str) + Send + Sync>) {
        let _ = self.released.set(hook);
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The conversation of a request in `dialect` from `caller`: its body parsed (outside
    /// the lock) and the registry's decision (under it).
    pub fn decide(
        &self,
        dialect: Dialect,
        body: &[u8],
        config: &Config,
        params: BridgeParams,
        caller: &CallerIds,
    ) -> Decided {
        let prepared = match dialect.prepare(body, config, &params) {
            Ok(prepared) => prepared,
            Err(_) => return Decided::Invalid(Bridge::new(dialect, body, config, params)),
        };
        let caller = caller.caller();
        let mut registry = self.lock();
        let before = registry.stats().clone();
        let decision =
            registry.decide(caller.owner, &caller.keys, &prepared.request, params.now_ms);
        let how = Continuation::between(&before, registry.stats());
        self.drain_released(&mut registry);
        Decided::Parsed {
            prepared,
            decision,
            how,
        }
    }

    /// The bridge of a request in `dialect` from `caller`: resuming the chat that answered
    /// its conversation, or fresh; and which it is, for the log.
    pub fn bridge(
        &self,
        dialect: Dialect,
        body: &[u8],
        config: &Config,
        params: BridgeParams,
        caller: &CallerIds,
    ) -> (Bridge, Continuation) {
        match self.decide(dialect, body, config, params, caller) {
            Decided::Invalid(bridge) => (bridge, Continuation::Invalid),
            Decided::Parsed {
                prepared,
                decision,
                how,
            } => (
                Bridge::continuing(dialect, prepared, decision, config, params),
                how,
            ),
        }
    }

    /// [`end_turn`](Self::end_turn) for a live chat's response: whether the chat was
    /// parked.
    pub fn end_live_turn(&self, chat: &mut LiveChat) -> bool {
        let mut registry = self.lock();
        let before = registry.poll_timeout();
        let parked = chat.end_conversation_turn(&mut registry, self.clock.now_ms());
        self.drain_released(&mut registry);
        let after = registry.poll_timeout();
        drop(registry);
        self.wake_if_sooner(before, after);
        parked
    }

    /// The response of `bridge` ended (completely, or its client left, or the server shuts
    /// down): its chat is parked for the conversation's next request, or let go. Call it
    /// once per bridge; a second call does nothing.
    pub fn end_turn(&self, bridge: &mut Bridge) {
        let mut registry = self.lock();
        let before = registry.poll_timeout();
        bridge.end_conversation_turn(&mut registry, self.clock.now_ms());
        self.drain_released(&mut registry);
        let after = registry.poll_timeout();
        drop(registry);
        self.wake_if_sooner(before, after);
    }

    /// Wakes the expiry timer when the next expiry came forward.
    fn wake_if_sooner(&self, before: Option<u64>, after: Option<u64>) {
        if after.is_some_and(|after| before.is_none_or(|before| after < before)) {
            self.moved.notify_all();
            self.wake.notify_one();
        }
    }

    /// Lets go of the chats whose time to live has passed; when to call it next (`None`
    /// while nothing is parked).
    pub fn expire(&self) -> Option<Instant> {
        let mut registry = self.lock();
        registry.handle_timeout(self.clock.now_ms());
        self.drain_released(&mut registry);
        registry.poll_timeout().map(|ms| self.clock.instant(ms))
    }

    /// For a timer thread: lets chats expire as their time comes, for as long as the
    /// process runs. (A turn's end that brings the next expiry forward wakes it.)
    pub fn expire_on_this_thread(&self) -> ! {
        let mut registry = self.lock();
        loop {
            registry.handle_timeout(self.clock.now_ms());
            self.drain_released(&mut registry);
            // Decided and waited under the one lock: no wake-up is lost between.
            registry = match registry.poll_timeout() {
                Some(ms) => {
                    let wait = self
                        .clock
                        .instant(ms)
                        .saturating_duration_since(Instant::now());
                    self.moved
                        .wait_timeout(registry, wait)
                        .map(|(guard, _)| guard)
                        .unwrap_or_else(|e| e.into_inner().0)
                }
                None => self.moved.wait(registry).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// For a timer task: notified when a turn's end brings the next expiry forward (a
    /// notification while nobody waits is kept for the next wait).
    pub fn changed(&self) -> &tokio::sync::Notify {
        &self.wake
    }

    /// Lets go of every chat: the server shuts down.
    pub fn clear(&self) {
        let mut registry = self.lock();
        registry.clear(self.clock.now_ms());
        self.drain_released(&mut registry);
    }

    /// Logs the chats the registry let go, and tells the hook (a parked agent of one is
    /// stopped; otherwise none has a process left on this path).
    fn drain_released(&self, registry: &mut Registry) {
        while let Some(released) = registry.poll_released() {
            tracing::debug!(
                chat = %released.agent_session,
                reason = ?released.reason,
                "conversation released"
            );
            if let Some(hook) = self.released.get() {
                hook(&released.agent_session);
            }
        }
    }

    /// The counters for the keyed `/health`.
    pub fn health(&self) -> serde_json::Value {
        let registry = self.lock();
        health(
            registry.config(),
            registry.stats(),
            registry.parked(),
            registry.busy(),
        )
    }
}

/// The `conversations` object of the keyed `/health`, for either transport: the settings,
/// the sessions `parked` and `busy` (held by a request) now, and the counters.
pub fn health(
    config: &RegistryConfig,
    stats: &RegistryStats,
    parked: usize,
    busy: usize,
) -> serde_json::Value {
    let fresh: serde_json::Map<String, serde_json::Value> = FreshReason::ALL
        .iter()
        .zip(stats.fresh)
        .map(|(reason, n)| (reason.name().to_owned(), n.into()))
        .collect();
    serde_json::json!({
        "enabled": config.enabled,
        "ttl_secs": config.ttl_ms / 1000,
        "max_parked": config.max_parked,
        "max_parked_per_owner": config.max_parked_per_owner,
        "parked": parked,
        "busy": busy,
        "resumed": stats.resumed,
        "fresh": fresh,
        "refused": stats.refused,
        "expired": stats.expired,
        "evicted": stats.evicted,
        "dropped": stats.dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::Version;
    use crate::http::Target;

    fn head<'a>(headers: &'a [(&'a str, &'a [u8])]) -> RequestHead<'a> {
        RequestHead {
            method: "POST",
            target: Target {
                authority: None,
                path: "/v1/messages",
            },
            version: Version::Http11,
            headers,
        }
    }

    #[test]
    fn client_ids_are_taken_only_when_sound() {
        let long = "s".repeat(MAX_CLIENT_ID + 1);
        let max = "s".repeat(MAX_CLIENT_ID);
        let owner = Owner::from_key(b"k");
        let ids = CallerIds::new(
            owner,
            &head(&[
                ("X-Claude-Code-Session-Id", b"3f2a-session"),
                ("x-claude-code-agent-id", b"agent-1"),
            ]),
        );
        assert_eq!(ids.owner, owner);
        assert_eq!(ids.client_session.as_deref(), Some("3f2a-session"));
        assert_eq!(ids.client_agent.as_deref(), Some("agent-1"));
        let session = |value: &[u8]| {
            CallerIds::new(Owner::LOCAL, &head(&[("x-claude-code-session-id", value)]))
                .client_session
        };
        assert_eq!(session(max.as_bytes()).as_deref(), Some(max.as_str()));
        for bad in [
            &b""[..],
            long.as_bytes(),
            b"has space",
            b"tab\there",
            b"caf\xc3\xa9",
            b"nul\0",
        ] {
            assert_eq!(session(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        let twice = CallerIds::new(
            Owner::LOCAL,
            &head(&[
                ("x-claude-code-session-id", b"a"),
                ("x-claude-code-session-id", b"b"),
            ]),
        );
        assert_eq!(twice.client_session, None, "two fields: neither");
    }

    #[test]
    fn the_log_says_how_a_run_began() {
        let before = RegistryStats::default();
        let mut after = before.clone();
        assert_eq!(
            Continuation::between(&before, &after),
            Continuation::Invalid
        );
        after.fresh[2] += 1;
        assert_eq!(
            Continuation::between(&before, &after),
            Continuation::Fresh(FreshReason::ALL[2])
        );
        assert_eq!(
            Continuation::Fresh(FreshReason::NoSession).to_string(),
            "fresh:no_session"
        );
        after.resumed += 1;
        assert_eq!(
            Continuation::between(&before, &after),
            Continuation::Resumed
        );
    }
}
