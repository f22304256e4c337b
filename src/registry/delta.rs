//! What a request adds to a parked session's transcript, and whether the session can take
//! it.

use std::collections::HashSet;

use crate::conversation::{Message, Role};
use crate::names::named;

/// Why a request starts a fresh agent session instead of resuming a parked one.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FreshReason {
    /// Conversations are turned off.
    Disabled,
    /// No parked session of the request's owner and conversation key holds a prefix of
    /// its conversation: a new conversation, an edited, compacted or pruned history, a
    /// branch, another model or tool set, a side request, or a session that expired, was
    /// evicted or never existed here (a restart).
    NoSession,
    /// The session holding its prefix is serving another request.
    Busy,
    /// The request adds nothing after the session's transcript: a retry or a regeneration
    /// of an answer the session already gave ends before it, and one that repeats the
    /// transcript exactly asks for nothing new.
    NothingNew,
    /// The session waits for the results of tool calls the request does not answer.
    UnansweredCalls,
    /// The request carries a tool result for a call the session is not waiting for.
    UnknownResult,
    /// The request adds an assistant message the agent did not write.
    ForeignAnswer,
}

named!(FreshReason, "fresh reason" {
    Disabled => "disabled",
    NoSession => "no_session",
    Busy => "busy",
    NothingNew => "nothing_new",
    UnansweredCalls => "unanswered_calls",
    UnknownResult => "unknown_result",
    ForeignAnswer => "foreign_answer",
});

/// The shape of a delta a session can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeltaShape {
    /// The leading tool results: they answer every call the session waits for.
    pub results: usize,
    /// Messages after the results (user, system or developer content): new input for
    /// the agent.
    pub input: usize,
}

/// Checks `delta` (the messages after a session's transcript) against the calls the
/// session waits for (`pending`, client call ids).
pub(crate) fn check(delta: &[Message], pending: &[String]) -> Result<DeltaShape, FreshReason> {
    if delta.is_empty() {
        return Err(FreshReason::NothingNew);
    }
    let results = delta
        .iter()
        .take_while(|message| message.role == Role::Tool)
        .count();
    let mut waiting: HashSet<&str> = pending.iter().map(String::as_str).collect();
    for result in &delta[..results] {
        let answered = result
            .tool_call_id
            .as_deref()
            .is_some_and(|id| waiting.remove(id));
        if !answered {
            return Err(FreshReason::UnknownResult);
        }
    }
    if !waiting.is_empty() {
        return Err(FreshReason::UnansweredCalls);
    }
    let input = &delta[results..];
    for message in input {
        match message.role {
            Role::User | Role::System | Role::Developer => {}
            Role::Tool => return Err(FreshReason::UnknownResult),
            Role::Assistant => return Err(FreshReason::ForeignAnswer),
        }
    }
    Ok(DeltaShape {
        results,
        input: input.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str) -> Message {
        Message::tool_result(id, "out")
    }

    #[test]
    fn results_must_answer_exactly_the_pending_calls_then_input_may_follow() {
        let pending = ["a".to_string(), "b".to_string()];
        let user = Message::new(Role::User, "next");
        assert_eq!(
            check(&[result("b"), result("a")], &pending),
            Ok(DeltaShape {
                results: 2,
                input: 0
            })
        );
        assert_eq!(
            check(&[result("a"), result("b"), user.clone()], &pending),
            Ok(DeltaShape {
                results: 2,
                input: 1
            })
        );
        assert_eq!(
            check(&[result("a")], &pending),
            Err(FreshReason::UnansweredCalls)
        );
        assert_eq!(
            check(&[result("a"), result("a")], &pending),
            Err(FreshReason::UnknownResult)
        );
        assert_eq!(
            check(&[result("a"), result("c")], &pending),
            Err(FreshReason::UnknownResult)
        );
        assert_eq!(
            check(
                &[result("a"), result("b"), user.clone(), result("c")],
                &pending
            ),
            Err(FreshReason::UnknownResult)
        );
        assert_eq!(check(&[], &pending), Err(FreshReason::NothingNew));
        assert_eq!(
            check(std::slice::from_ref(&user), &[]),
            Ok(DeltaShape {
                results: 0,
                input: 1
            })
        );
        assert_eq!(check(&[result("a")], &[]), Err(FreshReason::UnknownResult));
        assert_eq!(
            check(&[user, Message::assistant("hi", Vec::new())], &[]),
            Err(FreshReason::ForeignAnswer)
        );
    }

    #[test]
    fn names_are_unique() {
        let names: HashSet<&str> = FreshReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), FreshReason::ALL.len());
    }
}
