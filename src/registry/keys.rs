//! Who a session belongs to, and the ids a client gives its conversation.

use std::hash::{DefaultHasher, Hash, Hasher};

/// Who owns a session: the key the request authenticated with, or the local user when the
/// server takes no key. A session is only ever resumed by a request of its owner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(u64);

impl Owner {
    /// The owner of requests that carried no key (a server that takes none, on loopback);
    /// the default.
    pub const LOCAL: Owner = Owner(0);

    /// The owner of requests authenticated with `key` (the bytes the client sent, after
    /// the server accepted them). Only a digest is kept.
    #[must_use]
    pub fn from_key(key: &[u8]) -> Owner {
        let mut hasher = DefaultHasher::new();
        hasher.write(b"agentwire owner");
        hasher.write(key);
        // Never LOCAL: a keyed owner and the keyless one stay apart.
        Owner(hasher.finish() | 1)
    }
}

/// The ids a request carries for its conversation, besides its content. They narrow which
/// parked sessions it may resume (a session parked under a key is resumed only by requests
/// with the same key, and one parked without a key only by requests without one); the
/// content decides whether it does. The strongest present is used, in this order:
/// [`caller`](Self::caller), [`client_session`](Self::client_session) (with
/// [`client_agent`](Self::client_agent)), then the request body's own key
/// ([`api::Continuation::conversation_key`](crate::api::Continuation::conversation_key)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConversationKeys<'a> {
    /// A key the embedding program gives the conversation.
    pub caller: Option<&'a str>,
    /// A client's session id header (Claude Code's `X-Claude-Code-Session-Id`). Parallel
    /// subagents share it.
    pub client_session: Option<&'a str>,
    /// A client's agent id header within that session (Claude Code's
    /// `X-Claude-Code-Agent-Id`, sent by subagents).
    pub client_agent: Option<&'a str>,
}

impl ConversationKeys<'_> {
    /// The digest of the strongest key present, with `body_key` (the request body's own
    /// conversation key) last; `None` when there is none.
    pub(crate) fn digest(&self, body_key: Option<&str>) -> Option<u64> {
        let mut hasher = DefaultHasher::new();
        if let Some(caller) = self.caller {
            hasher.write_u8(1);
            caller.hash(&mut hasher);
        } else if let Some(session) = self.client_session {
            hasher.write_u8(2);
            session.hash(&mut hasher);
            self.client_agent.hash(&mut hasher);
        } else if let Some(key) = body_key {
            hasher.write_u8(3);
            key.hash(&mut hasher);
        } else {
            return None;
        }
        Some(hasher.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_of_different_keys_differ_and_none_is_local() {
        assert_ne!(Owner::from_key(b"a"), Owner::from_key(b"b"));
        assert_eq!(Owner::from_key(b"a"), Owner::from_key(b"a"));
        assert_ne!(Owner::from_key(b""), Owner::LOCAL);
    }

    #[test]
    fn the_strongest_key_wins_and_subagents_differ() {
        let session = ConversationKeys {
            client_session: Some("s"),
            ..ConversationKeys::default()
        };
        let subagent = ConversationKeys {
            client_agent: Some("a1"),
            ..session
        };
        assert_ne!(session.digest(None), subagent.digest(None));
        assert_eq!(session.digest(Some("k")), session.digest(None));
        let caller = ConversationKeys {
            caller: Some("c"),
            ..subagent
        };
        assert_eq!(
            caller.digest(None),
            ConversationKeys {
                caller: Some("c"),
                ..ConversationKeys::default()
            }
            .digest(Some("k"))
        );
        assert_eq!(ConversationKeys::default().digest(None), None);
        assert!(ConversationKeys::default().digest(Some("k")).is_some());
    }
}
