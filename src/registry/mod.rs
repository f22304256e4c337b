//! Conversations: which agent session a request continues.
//!
//! Agent clients hold conversations — many requests whose histories extend one another,
//! with tool rounds in between — and each request carries the whole history. An agent
//! session that answered one request already holds that history (agents keep their own,
//! natively: their text, their tool calls and the results they were given), so the next
//! request of the same conversation needs to give it only what is new. The [`Registry`]
//! decides, for each parsed request, whether it **resumes** a parked session with only the
//! delta (results for the calls the session waits for, then any new user content) or
//! starts **fresh** with the whole conversation — which is always correct, and what
//! happens whenever anything does not match exactly.
//!
//! ```text
//!  api::Request ─► Transcript::of (digests of every prefix) ─┐
//!  owner, ConversationKeys ──────────────────────────────────┴► Registry::decide ─► Decision
//!        Fresh { lease }  ─► the whole conversation, to a new agent session
//!        Resume { lease, resume } ─► resume.delta.. of the messages, to resume.agent_session
//!        Refuse(reply)    ─► previous_response_id of a response that is not here
//!  answer (text, tool calls as sent) ─► AnswerDigest ─► Registry::park(lease, Park { .. })
//!  failed / cut / client gone ──────────────────────► Registry::release(lease)
//!  time ─► handle_timeout ─► poll_released ─► agent sessions to end (expired, evicted)
//! ```
//!
//! The registry keeps digests, never text (see [`transcript`]); what each transport does
//! with a decision — an ACP `session/prompt` on the same session, cursor-agent's
//! `--resume` — is the transport's.

mod delta;
mod keys;
mod sessions;
pub mod transcript;

pub use delta::{DeltaShape, FreshReason};
pub use keys::{ConversationKeys, Owner};
pub use sessions::{
    Decision, Lease, Park, Registry, RegistryConfig, RegistryError, RegistryStats, ReleaseReason,
    Released, Resume, SessionId,
};
pub use transcript::{AnswerDigest, Digest, Tail, Transcript};
