//! The interface of a dialect's response writers: one for streams, one for single bodies.
//!
//! The bridge holds every decision that is not about bytes — when the head goes out, what
//! status it carries, when keep-alives are due, when client tool calls end the turn — and
//! hands each writer only the events of the answer, in order. A writer decides nothing but
//! its dialect's bytes: the frames of each event, the finish reason's name, where usage and
//! reasoning go, its keep-alive frame, its in-band failure frames and its terminator.

use crate::event::{Event, Failure};

/// Writes one streaming response in a dialect's frames, appending to a caller-owned buffer.
///
/// Contract (the bridge relies on it; `tests/support` checks it for every dialect):
/// - [`encode`](Self::encode) appends the frames of one event, possibly none. Text and
///   reasoning deltas must not allocate: the bridge pushes thousands of them per answer.
/// - [`Event::Finish`] writes the end of a successful response; [`Event::Failed`] writes
///   the dialect's in-band error frame(s) and then its terminator (the head, with status
///   200, is already out: the bridge sends a failure before the head as an error body with
///   its true status instead). Either way the encoder is then
///   [finished](Self::is_finished) and ignores every later event.
/// - [`Event::ToolCall`]s of one turn arrive together, indices contiguous from 0, right
///   before [`Event::Finish`]; their ids are safe in every dialect (`^[a-zA-Z0-9_-]+$`).
///   A call of a freeform tool carries its raw text in `arguments`.
/// - The same events give the same bytes, however the agent's output was chunked.
pub trait StreamEncoder: Send {
    /// Appends the frames for `event` to `out` (possibly none).
    fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>);

    /// Whether the stream's terminator was written.
    fn is_finished(&self) -> bool;

    /// Appends the dialect's keep-alive frame, which clients ignore (sent during silence
    /// after the head, so that proxies on the way keep the connection open).
    fn keep_alive(&mut self, out: &mut Vec<u8>);
}

/// Assembles one non-streaming response from the same events a stream is made of, as they
/// arrive (no raw agent output is buffered), and writes the body at the end.
///
/// The bridge pushes events until [`is_finished`](Self::is_finished); then, if
/// [`failure`](Self::failure) is `None`, it sends status 200 and
/// [`write_body`](Self::write_body); otherwise the dialect's error body with the failure's
/// status.
pub trait BodyBuilder: Send {
    /// Takes in one event. Events after the answer finished are ignored.
    fn push(&mut self, event: &Event<'_>);

    /// Whether a [`Event::Finish`] or [`Event::Failed`] arrived.
    fn is_finished(&self) -> bool;

    /// The failure, if the answer failed.
    fn failure(&self) -> Option<&Failure>;

    /// Appends the body of the successful answer.
    fn write_body(&self, out: &mut Vec<u8>);
}
