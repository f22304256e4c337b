//! Our side of the JSON-RPC exchange with the agent: request ids, the requests awaiting
//! their answers (each with its deadline), and the bytes for the agent's stdin.

use serde_json::Value;
use serde_json::value::RawValue;

use super::message;
use super::turn::TurnId;
use crate::framing;

/// What a request of ours asked, so that its answer goes where it belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PendingKind {
    /// The handshake.
    Initialize,
    /// A fresh session (for the pool, not for a particular turn).
    NewSession,
    /// A session of this turn's own, given the client's tools.
    NewSessionFor(TurnId),
    /// The model of this turn's session.
    SetModel(TurnId),
    /// This turn's prompt.
    Prompt(TurnId),
    /// The prompt of a parked session (this parked serial) that no turn holds: the agent
    /// waits in a call of the client's tools, or finishes a turn no client waits for.
    HeldPrompt(u64),
    /// `session/close`: its answer changes nothing.
    Close,
}

/// A request of ours awaiting its answer.
#[derive(Debug)]
struct Pending {
    id: u64,
    kind: PendingKind,
    /// `None` for a prompt: the turn's own idle timeout watches it.
    deadline: Option<u64>,
}

/// Request ids, pending requests and outgoing bytes. Every message written goes to the
/// same buffer, in the order written; the caller takes it with
/// [`poll_transmit`](Self::poll_transmit).
#[derive(Debug, Default)]
pub(super) struct Rpc {
    next_id: u64,
    pending: Vec<Pending>,
    transmit: Vec<u8>,
    /// `transmit` was handed out: it is emptied before the next write.
    lent: bool,
}

impl Rpc {
    /// Sends a request of `kind`, answered by [`take_answered`](Self::take_answered) or
    /// given up by [`take_expired`](Self::take_expired) at `deadline`.
    pub(super) fn request(
        &mut self,
        kind: PendingKind,
        method: &str,
        params: Value,
        deadline: Option<u64>,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        self.reclaim();
        message::write_request(&mut self.transmit, id, method, params);
        self.pending.push(Pending { id, kind, deadline });
    }

    /// Sends a notification (no answer comes).
    pub(super) fn notify(&mut self, method: &str, params: Value) {
        self.reclaim();
        message::write_notification(&mut self.transmit, method, params);
    }

    /// Answers the agent's request `id`.
    pub(super) fn answer(&mut self, id: &RawValue, result: Value) {
        self.reclaim();
        message::write_result(&mut self.transmit, id, result);
    }

    /// Answers the agent's request `id` with an error.
    pub(super) fn answer_error(&mut self, id: &RawValue, code: i64, text: &str) {
        self.reclaim();
        message::write_error(&mut self.transmit, id, code, text);
    }

    /// The request our `id` named, no longer awaited; `None` for an id that awaits
    /// nothing (answered already, given up, or never ours).
    pub(super) fn take_answered(&mut self, id: u64) -> Option<PendingKind> {
        let position = self.pending.iter().position(|p| p.id == id)?;
        Some(self.pending.remove(position).kind)
    }

    /// The requests whose deadline is at or before `now_ms`, no longer awaited, in the
    /// order they were sent.
    pub(super) fn take_expired(&mut self, now_ms: u64) -> Vec<PendingKind> {
        let expired = self
            .pending
            .iter()
            .filter(|p| p.deadline.is_some_and(|d| now_ms >= d))
            .map(|p| p.kind)
            .collect();
        self.pending
            .retain(|p| p.deadline.is_none_or(|d| now_ms < d));
        expired
    }

    /// Stops awaiting the requests of `kind`: their answers will be ignored.
    pub(super) fn forget(&mut self, kind: PendingKind) {
        self.pending.retain(|p| p.kind != kind);
    }

    /// The requests of kind `from` are now of kind `to` (their answers go elsewhere).
    pub(super) fn rekey(&mut self, from: PendingKind, to: PendingKind) {
        for pending in &mut self.pending {
            if pending.kind == from {
                pending.kind = to;
            }
        }
    }

    /// Stops awaiting every request.
    pub(super) fn forget_all(&mut self) {
        self.pending.clear();
    }

    /// How many requests of `kind` await their answer.
    pub(super) fn awaiting(&self, kind: PendingKind) -> usize {
        self.pending.iter().filter(|p| p.kind == kind).count()
    }

    /// How many requests await their answer.
    pub(super) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The earliest deadline of a pending request.
    pub(super) fn next_deadline(&self) -> Option<u64> {
        self.pending.iter().filter_map(|p| p.deadline).min()
    }

    /// Bytes to write to the agent's stdin, or `None`. Valid until the next call.
    pub(super) fn poll_transmit(&mut self) -> Option<&[u8]> {
        self.reclaim();
        if self.transmit.is_empty() {
            return None;
        }
        self.lent = true;
        Some(&self.transmit)
    }

    /// Empties the buffer once its bytes were handed out.
    fn reclaim(&mut self) {
        if self.lent {
            framing::reclaim(&mut self.transmit);
            self.lent = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(rpc: &mut Rpc) -> Vec<Value> {
        let bytes = rpc.poll_transmit().map(<[u8]>::to_vec).unwrap_or_default();
        bytes
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect()
    }

    #[test]
    fn requests_get_rising_ids_and_are_answered_once() {
        let mut rpc = Rpc::default();
        rpc.request(PendingKind::Initialize, "initialize", Value::Null, Some(10));
        rpc.request(PendingKind::NewSession, "session/new", Value::Null, None);
        let sent = lines(&mut rpc);
        assert_eq!(
            (sent[0]["id"].as_u64(), sent[1]["id"].as_u64()),
            (Some(0), Some(1))
        );
        assert_eq!(rpc.take_answered(1), Some(PendingKind::NewSession));
        assert_eq!(rpc.take_answered(1), None);
        assert_eq!(rpc.take_answered(7), None);
        assert_eq!(rpc.pending_len(), 1);
    }

    #[test]
    fn deadlines_expire_in_order_and_a_request_without_one_never_does() {
        let mut rpc = Rpc::default();
        rpc.request(
            PendingKind::Prompt(TurnId(3)),
            "session/prompt",
            Value::Null,
            None,
        );
        rpc.request(PendingKind::SetModel(TurnId(3)), "m", Value::Null, Some(20));
        rpc.request(PendingKind::Initialize, "initialize", Value::Null, Some(10));
        assert_eq!(rpc.next_deadline(), Some(10));
        assert!(rpc.take_expired(9).is_empty());
        assert_eq!(
            rpc.take_expired(20),
            [PendingKind::SetModel(TurnId(3)), PendingKind::Initialize]
        );
        assert_eq!(rpc.next_deadline(), None);
        assert_eq!(rpc.awaiting(PendingKind::Prompt(TurnId(3))), 1);
        rpc.forget(PendingKind::Prompt(TurnId(3)));
        assert_eq!(rpc.pending_len(), 0);
    }

    #[test]
    fn the_buffer_is_lent_until_the_next_write_or_poll() {
        let mut rpc = Rpc::default();
        assert_eq!(rpc.poll_transmit(), None);
        rpc.notify("session/cancel", Value::Null);
        assert_eq!(lines(&mut rpc).len(), 1);
        rpc.notify("session/cancel", Value::Null);
        rpc.notify("session/cancel", Value::Null);
        assert_eq!(lines(&mut rpc).len(), 2);
        assert_eq!(rpc.poll_transmit(), None);
    }
}
