//! cursor-agent stdout → [`Event`]s.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hasher};

use serde_json::value::RawValue;

use thiserror::Error;

use super::diagnose::{self, Evidence};
use super::json::{
    append_str, append_str_joined, for_each_entry, for_each_unescaped, raw_f64, raw_str, raw_u64,
    starts_with_low_surrogate,
};
use super::line::{Kind, RawLine};
use super::tool_call::{InFlightCalls, append_summary};
use crate::event::{
    ActivityPhase, AgentActivity, Event, Failure, FinishReason, Progress, ToolOutcome, Usage,
};
use crate::framing::{DEFAULT_MAX_LINE_LEN, LineError, LineFramer, RETAINED_CAPACITY};
use crate::names::named;

/// Limits of a [`Decoder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Longest stdout line accepted, in bytes (default [`DEFAULT_MAX_LINE_LEN`], 64 MiB).
    /// A longer line is dropped (counted in [`DecoderStats::bad_lines`]) and decoding
    /// resumes at the next line.
    pub max_line_len: usize,
    /// Bytes of non-JSON stdout lines kept for failure classification (default 8 KiB, the
    /// most recent ones).
    pub max_notes: usize,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        DecoderConfig {
            max_line_len: DEFAULT_MAX_LINE_LEN,
            max_notes: 8 * 1024,
        }
    }
}

/// Caller misuse of a [`Decoder`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DecoderError {
    /// Output was pushed after [`Decoder::push_eof`].
    #[error("stdout was pushed after its end")]
    AfterEof,
}

named!(DecoderError, "decoder error" {
    AfterEof => "after_eof",
});

/// Counters over everything decoded so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderStats {
    /// Non-blank lines read.
    pub lines: u64,
    /// JSON lines of a type or subtype not known here (ignored).
    pub unknown: u64,
    /// Lines that are not JSON objects (kept as notes for failure classification).
    pub non_json: u64,
    /// Lines dropped for breaking the line limit or not being UTF-8.
    pub bad_lines: u64,
    /// Recaps (re-sent segments) removed, including recaps that extended the segment and
    /// had only their new tail emitted.
    pub recaps: u64,
    /// Times the final `result` text revealed text that had not been streamed, which was
    /// then emitted.
    pub reconciled: u64,
    /// Times the streamed text did not match the final `result` text (and could not be
    /// repaired by emitting a missing suffix).
    pub divergences: u64,
    /// `result` events seen.
    pub results: u64,
}

/// Decodes cursor-agent `--output-format stream-json` stdout into [`Event`]s.
///
/// A `Decoder` has three kinds of methods:
/// - **getters** (`&self`): [`stats`](Self::stats), [`session_id`](Self::session_id),
///   [`model`](Self::model), [`notes`](Self::notes), [`retries`](Self::retries),
///   [`is_finished`](Self::is_finished);
/// - **inputs**: [`push_stdout`](Self::push_stdout) (bytes in any chunking; or
///   [`push_stdout_line`](Self::push_stdout_line), a line at a time) and
///   [`push_eof`](Self::push_eof) (stdout closed);
/// - **outputs**: [`poll_event`](Self::poll_event).
///
/// **After every input, drain [`poll_event`](Self::poll_event) until it returns `None`.**
///
/// What it does with the stream:
/// - Text. With `--stream-partial-output` the CLI streams a segment as fragments and then
///   re-sends the whole segment (the *recap*) before the next tool call, interaction query
///   or result; the recap's own fields do not reliably tell it from a fragment. The decoder
///   applies the one-event lookahead rule: an `assistant` text equal to everything the
///   current segment has streamed is a recap **iff the next event is not another
///   fragment**. A text that *extends* the segment (the segment is a proper prefix of it)
///   is a recap with a missing tail under the same rule: only the tail is emitted. Only
///   such a candidate is held back, until the next event. An `assistant` event without
///   text (no text part, or only empty ones) is not a fragment: it decides nothing and
///   ends nothing. At `result` the streamed text is checked against `result.result`; a
///   missing suffix is emitted, so text is never lost and never emitted twice.
/// - Surrogate pairs split across two fragments (`"…\ud83d"` then `"\ude00…"`) are
///   joined: the high half is held back until the next piece of the same channel shows
///   whether it is paired. Only a surrogate that stays unpaired becomes U+FFFD.
/// - Reasoning. `thinking/delta` text becomes [`Event::ReasoningDelta`] as it comes. The
///   CLI never recaps thinking, so reasoning is never de-duplicated: two identical deltas
///   are two deltas.
/// - Tools. `tool_call/started`/`completed` become [`Event::AgentActivity`]; arguments are
///   cached from `started` because rejected calls complete without them, and a
///   `completed` without any `started` is reported too.
/// - `connection`/`retry` become [`Event::Progress`]; `result` becomes
///   [`Event::Usage`] (when reported) and [`Event::Finish`], or [`Event::Failed`] for an
///   error result. Output that ends without a `result` becomes [`Event::Failed`],
///   classified from the non-JSON lines seen (see [`diagnose`](super::diagnose)). A
///   `result` with `is_error: true` or a subtype other than `success` is a failure
///   classified from its text; its text is never answer content.
/// - Unknown types are counted and ignored; non-JSON lines are kept as notes. A UTF-8
///   byte-order mark at the start of stdout is skipped.
///
/// Events borrow text from the decoder; copying is up to the consumer. In steady state the
/// decoder allocates nothing per text or reasoning delta.
#[derive(Debug)]
pub struct Decoder {
    framer: LineFramer,
    bom: BomSkipper,
    inner: Inner,
    eof: bool,
}

/// Skips a UTF-8 byte-order mark at the very start of stdout, however the reads split it.
#[derive(Debug, Default)]
struct BomSkipper {
    /// Bytes of the mark matched so far.
    matched: usize,
    /// The start of the stream is decided: a mark was skipped, or there was none.
    done: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl BomSkipper {
    /// Consumes what belongs to a mark from the front of `bytes`. Returns bytes that looked
    /// like the start of a mark but were not one (to be decoded first) and the rest.
    fn skip<'a>(&mut self, mut bytes: &'a [u8]) -> (&'static [u8], &'a [u8]) {
        while !self.done {
            let Some((&first, rest)) = bytes.split_first() else {
                break;
            };
            if first != BOM[self.matched] {
                self.done = true;
                return (&BOM[..self.matched], bytes);
            }
            self.matched += 1;
            bytes = rest;
            self.done = self.matched == BOM.len();
        }
        (&[], bytes)
    }

    /// At the end of the stream: the start of a mark that never completed.
    fn finish(&mut self) -> &'static [u8] {
        if self.done {
            return &[];
        }
        self.done = true;
        &BOM[..self.matched]
    }
}

/// Everything but the framer, so that a line borrowed from the framer can be decoded.
#[derive(Debug)]
struct Inner {
    max_notes: usize,
    /// Text of the events in `queue`.
    arena: String,
    queue: VecDeque<Queued>,
    /// Recap state of the answer text.
    text: Segment,
    /// A high surrogate held back from the end of the last text or reasoning piece, until
    /// the next piece of its channel shows whether it is paired.
    text_high: Option<u16>,
    reasoning_high: Option<u16>,
    /// Length and hash of all text emitted this turn, for reconciliation with `result`.
    /// A hash instead of the text keeps memory bounded by the longest line.
    emitted_len: usize,
    emitted_hash: DefaultHasher,
    calls: InFlightCalls,
    stats: DecoderStats,
    session_id: Option<String>,
    model: Option<String>,
    notes: String,
    retries: u32,
    saw_events: bool,
    /// A `result` ended the turn; the next event starts a new one.
    turn_done: bool,
}

/// Recap state of the answer text.
#[derive(Debug, Default)]
struct Segment {
    /// Length and hash of everything this segment has emitted. A recap starts with the
    /// whole segment, so these identify it; keeping them instead of the text keeps memory
    /// bounded by the longest line however long an answer runs between tool calls.
    len: usize,
    hash: DefaultHasher,
    /// The last event's text started with the whole segment and is held back as a
    /// possible recap.
    held: Option<Held>,
    /// That text (a copy of one line's text, without a trailing unpaired high surrogate),
    /// for release if it was no recap.
    held_text: String,
}

/// A held recap candidate.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// Where its new tail starts (the segment's length); equal to its whole length when it
    /// repeats the segment exactly.
    tail_at: usize,
    /// A high surrogate it ended with.
    high: Option<u16>,
}

const REPLACEMENT: &str = "\u{fffd}";

impl Segment {
    /// If `text` (followed by U+FFFD when `unpaired_high`, which is what an unpaired high
    /// surrogate at its end becomes) starts with everything this non-empty segment has
    /// emitted, where its new tail starts.
    fn recap_tail(&self, text: &str, unpaired_high: bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut hasher = DefaultHasher::new();
        if self.len <= text.len() {
            hasher.write(text.get(..self.len)?.as_bytes());
        } else if unpaired_high && self.len == text.len() + REPLACEMENT.len() {
            hasher.write(text.as_bytes());
            hasher.write(REPLACEMENT.as_bytes());
        } else {
            return None;
        }
        (hasher.finish() == self.hash.finish()).then_some(self.len)
    }

    fn extend(&mut self, text: &str) {
        self.len += text.len();
        self.hash.write(text.as_bytes());
    }

    /// Starts a new segment (a held candidate is decided separately).
    fn restart(&mut self) {
        self.len = 0;
        self.hash = DefaultHasher::new();
    }
}

/// A queued event; text lives in `Decoder::arena`.
#[derive(Debug)]
enum Queued {
    Text(Span),
    Reasoning(Span),
    Activity {
        call_id: Span,
        tool: Span,
        phase: ActivityPhase,
        summary: Span,
        arguments: Option<Span>,
        model_call_id: Option<Span>,
    },
    Progress(Progress),
    Usage(Usage),
    Finish(FinishReason),
    Failed(Failure),
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn of<'a>(&self, arena: &'a str) -> &'a str {
        &arena[self.start..self.end]
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Channel {
    Text,
    Reasoning,
}

/// What the next event is, as far as text held back is concerned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// An `assistant` event with text: a fragment.
    Text { starts_with_low_surrogate: bool },
    /// A `thinking/delta`.
    Reasoning { starts_with_low_surrogate: bool },
    /// Any other event that carries answer content or ends a segment.
    Other,
    /// The end of the output.
    End,
    /// Progress, echoes, unknown lines: they decide nothing.
    Transparent,
}

impl Next {
    /// Whether this event continues `channel` with the low half of a surrogate pair.
    fn pairs_surrogate_of(self, channel: Channel) -> bool {
        match (self, channel) {
            (
                Next::Text {
                    starts_with_low_surrogate,
                },
                Channel::Text,
            )
            | (
                Next::Reasoning {
                    starts_with_low_surrogate,
                },
                Channel::Reasoning,
            ) => starts_with_low_surrogate,
            _ => false,
        }
    }
}

impl Decoder {
    /// A decoder with the given limits.
    pub fn new(config: DecoderConfig) -> Self {
        Decoder {
            framer: LineFramer::new(config.max_line_len),
            bom: BomSkipper::default(),
            inner: Inner {
                max_notes: config.max_notes,
                arena: String::new(),
                queue: VecDeque::new(),
                text: Segment::default(),
                text_high: None,
                reasoning_high: None,
                emitted_len: 0,
                emitted_hash: DefaultHasher::new(),
                calls: InFlightCalls::default(),
                stats: DecoderStats::default(),
                session_id: None,
                model: None,
                notes: String::new(),
                retries: 0,
                saw_events: false,
                turn_done: false,
            },
            eof: false,
        }
    }

    // A. Getters.

    /// Counters over everything decoded so far.
    pub fn stats(&self) -> &DecoderStats {
        &self.inner.stats
    }

    /// The agent's session (chat) id, from any event that carried one.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }

    /// The model's display name from `system/init` (`"Composer 2.5 Fast"`, not a slug).
    pub fn model(&self) -> Option<&str> {
        self.inner.model.as_deref()
    }

    /// Recent non-JSON stdout lines and agent error messages, for failure classification.
    pub fn notes(&self) -> &str {
        &self.inner.notes
    }

    /// Reconnect and retry attempts seen.
    pub fn retries(&self) -> u32 {
        self.inner.retries
    }

    /// Whether the turn ended with a `result`.
    pub fn saw_result(&self) -> bool {
        self.inner.turn_done
    }

    /// Whether [`push_eof`](Self::push_eof) was called and every event was polled.
    pub fn is_finished(&self) -> bool {
        self.eof && self.inner.queue.is_empty()
    }

    /// The evidence a failure classification needs, from stdout alone.
    pub fn evidence(&self) -> Evidence<'_> {
        Evidence {
            stdout_notes: &self.inner.notes,
            retries: self.inner.retries,
            bad_lines: self.inner.stats.bad_lines,
            saw_events: self.inner.saw_events,
            ..Evidence::default()
        }
    }

    // B. Inputs.

    /// Feeds stdout bytes, in any chunking. Every line completed by these bytes is decoded
    /// now.
    pub fn push_stdout(&mut self, bytes: &[u8]) -> Result<(), DecoderError> {
        self.push(bytes, false).map(|_| ())
    }

    /// Like [`push_stdout`](Self::push_stdout), but stops after the first line these bytes
    /// complete, and returns how many bytes it used: feed the rest after draining
    /// [`poll_event`](Self::poll_event). A caller that keeps what it polls (a response
    /// body being built) then holds one long line's text at a time, never two.
    pub fn push_stdout_line(&mut self, bytes: &[u8]) -> Result<usize, DecoderError> {
        self.push(bytes, true)
    }

    fn push(&mut self, bytes: &[u8], one_line: bool) -> Result<usize, DecoderError> {
        if self.eof {
            return Err(DecoderError::AfterEof);
        }
        self.inner.recycle_arena();
        let mut input = bytes;
        if !self.bom.done {
            let (replay, rest) = self.bom.skip(bytes);
            if !replay.is_empty() {
                self.frame(replay, false);
            }
            input = rest;
        }
        let used = self.frame(input, one_line);
        self.reclaim_line();
        Ok(bytes.len() - input.len() + used)
    }

    /// Gives a long line's buffer back when keeping it would double what is held: when
    /// the line's decoded text is as long as the line (the caller encodes it next), and at
    /// the end of a turn (the caller then writes out the whole answer, and no further line
    /// of this turn can reuse the buffer). A long line the decoder skipped mid-turn (a tool
    /// result) keeps its buffer for the next one: file contents come in series.
    fn reclaim_line(&mut self) {
        let inner = &self.inner;
        if inner.turn_done
            || inner.arena.len() > RETAINED_CAPACITY
            || inner.text.held_text.len() > RETAINED_CAPACITY
        {
            self.framer.reclaim();
        }
    }

    /// Frames and decodes `input`; with `one_line`, stops after the first line that
    /// completes. Returns the bytes used.
    fn frame(&mut self, input: &[u8], one_line: bool) -> usize {
        let mut rest = input;
        while !rest.is_empty() {
            let framed = self.framer.next_line(rest);
            rest = &rest[framed.consumed..];
            let line_ended = framed.consumed > 0 && input[input.len() - rest.len() - 1] == b'\n';
            match framed.line {
                None => {}
                Some(Ok(line)) => self.inner.handle_line(line),
                Some(Err(error)) => self.inner.bad_line(&error),
            }
            if one_line && line_ended {
                break;
            }
        }
        input.len() - rest.len()
    }

    /// Ends stdout. Decodes a last line that had no newline, resolves a held recap
    /// candidate, and reports a failure if the turn never produced a `result`.
    /// Calling it again does nothing.
    pub fn push_eof(&mut self) -> Result<(), DecoderError> {
        if self.eof {
            return Ok(());
        }
        self.eof = true;
        self.inner.recycle_arena();
        let replay = self.bom.finish();
        self.frame(replay, false);
        let inner = &mut self.inner;
        match self.framer.finish() {
            None => {}
            Some(Ok(line)) => inner.handle_line(line),
            Some(Err(error)) => inner.bad_line(&error),
        }
        self.reclaim_line();
        let inner = &mut self.inner;
        inner.settle(Next::End);
        if !self.inner.turn_done {
            let failure = diagnose::classify(&self.evidence());
            self.inner.queue.push_back(Queued::Failed(failure));
        }
        Ok(())
    }

    // C. Outputs.

    /// The next decoded event, or `None` until more input arrives.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        let queued = self.inner.queue.pop_front()?;
        let arena = self.inner.arena.as_str();
        Some(match queued {
            Queued::Text(span) => Event::TextDelta(span.of(arena)),
            Queued::Reasoning(span) => Event::ReasoningDelta(span.of(arena)),
            Queued::Activity {
                call_id,
                tool,
                phase,
                summary,
                arguments,
                model_call_id,
            } => Event::AgentActivity(AgentActivity {
                call_id: call_id.of(arena),
                tool: tool.of(arena),
                phase,
                summary: summary.of(arena),
                arguments: arguments.map(|s| s.of(arena)),
                model_call_id: model_call_id.map(|s| s.of(arena)),
            }),
            Queued::Progress(progress) => Event::Progress(progress),
            Queued::Usage(usage) => Event::Usage(usage),
            Queued::Finish(reason) => Event::Finish(reason),
            Queued::Failed(failure) => Event::Failed(failure),
        })
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(DecoderConfig::default())
    }
}

impl Inner {
    /// Text of drained events is no longer referenced: reuse its memory (or give it back,
    /// after a long line).
    fn recycle_arena(&mut self) {
        if self.queue.is_empty() {
            reclaim_string(&mut self.arena);
        }
    }

    fn bad_line(&mut self, error: &LineError) {
        self.stats.bad_lines += 1;
        push_note(&mut self.notes, self.max_notes, &error.to_string());
    }

    fn handle_line(&mut self, line: &str) {
        self.stats.lines += 1;
        let Some(raw) = RawLine::parse(line) else {
            self.stats.non_json += 1;
            push_note(&mut self.notes, self.max_notes, line);
            return;
        };
        self.handle(&raw, line);
    }

    fn handle(&mut self, raw: &RawLine<'_>, line: &str) {
        self.saw_events = true;
        let kind = raw.kind();
        if self.session_id.is_none() {
            if let Some(id) = raw.session_id.and_then(raw_str) {
                self.session_id = Some(id.into_owned());
            }
        }
        // An `assistant` event without text is no fragment: it neither releases a held
        // recap candidate as text nor ends the segment.
        if kind == Kind::Assistant && !raw.message.has_text() {
            return;
        }
        // Events that carry answer content decide what is held back and, after a
        // `result`, open a new turn. Progress, echoes and unknown lines are transparent.
        let next = match kind {
            Kind::Assistant => Next::Text {
                starts_with_low_surrogate: raw.message.starts_with_low_surrogate(),
            },
            Kind::ThinkingDelta => Next::Reasoning {
                starts_with_low_surrogate: raw.text.is_some_and(starts_with_low_surrogate),
            },
            Kind::ThinkingCompleted
            | Kind::ToolStarted
            | Kind::ToolCompleted
            | Kind::InteractionQuery
            | Kind::Result => Next::Other,
            _ => Next::Transparent,
        };
        if next != Next::Transparent {
            if self.turn_done {
                self.new_turn();
            }
            self.settle(next);
        }
        match kind {
            Kind::Assistant => self.text_piece(raw),
            Kind::ThinkingDelta => self.reasoning_piece(raw),
            Kind::ThinkingCompleted => {}
            Kind::ToolStarted | Kind::ToolCompleted => {
                self.boundary();
                self.tool_call(raw, kind == Kind::ToolStarted);
            }
            Kind::InteractionQuery => self.boundary(),
            Kind::Result => self.result(raw),
            Kind::Init => {
                if self.turn_done {
                    self.new_turn();
                }
                if let Some(model) = raw.model.and_then(raw_str) {
                    self.model = Some(model.into_owned());
                }
            }
            Kind::Reconnecting => {
                self.retries += 1;
                self.queue
                    .push_back(Queued::Progress(Progress::Reconnecting {
                        attempt: raw.attempt(),
                    }));
            }
            Kind::Reconnected => self
                .queue
                .push_back(Queued::Progress(Progress::Reconnected)),
            Kind::Retry => {
                self.retries += 1;
                self.queue.push_back(Queued::Progress(Progress::Retrying {
                    attempt: raw.attempt(),
                }));
            }
            Kind::Error => {
                let message = raw
                    .error
                    .map(error_message)
                    .unwrap_or_else(|| line.to_owned());
                push_note(&mut self.notes, self.max_notes, &message);
            }
            Kind::User => {}
            Kind::Untyped | Kind::Unknown => self.stats.unknown += 1,
        }
    }

    /// Decides what was held back now that the next event is known:
    /// - a recap candidate is released as ordinary text if the next event is another text
    ///   fragment, and dropped as a recap otherwise (its new tail, if it extended the
    ///   segment, is emitted);
    /// - a high surrogate held back from a channel is paired by a next piece of the same
    ///   channel that starts with a low surrogate, and becomes U+FFFD otherwise.
    fn settle(&mut self, next: Next) {
        if let Some(held) = self.text.held.take() {
            if matches!(next, Next::Text { .. }) {
                let start = self.arena.len();
                if start == 0 {
                    std::mem::swap(&mut self.arena, &mut self.text.held_text);
                } else {
                    self.arena.push_str(&self.text.held_text);
                }
                reclaim_string(&mut self.text.held_text);
                self.commit(Channel::Text, start);
                self.text_high = held.high;
            } else {
                self.stats.recaps += 1;
                let start = self.arena.len();
                if let Some(tail) = self.text.held_text.get(held.tail_at..) {
                    self.arena.push_str(tail);
                    if held.high.is_some() {
                        self.arena.push_str(REPLACEMENT);
                    }
                }
                if self.arena.len() > start {
                    self.commit(Channel::Text, start);
                }
                reclaim_string(&mut self.text.held_text);
                self.text.restart();
            }
        }
        for channel in [Channel::Text, Channel::Reasoning] {
            let high = match channel {
                Channel::Text => &mut self.text_high,
                Channel::Reasoning => &mut self.reasoning_high,
            };
            if !next.pairs_surrogate_of(channel) && high.take().is_some() {
                self.commit_replacement(channel);
            }
        }
    }

    /// An unpaired high surrogate becomes U+FFFD, as if it had been decoded in place.
    fn commit_replacement(&mut self, channel: Channel) {
        let start = self.arena.len();
        self.arena.push_str(REPLACEMENT);
        self.commit(channel, start);
    }

    /// Appends the text of a message's parts to the arena, joining surrogate pairs split
    /// across pieces; returns the high surrogate it ends with, if any.
    fn append_parts(&mut self, raw: &RawLine<'_>) -> Option<u16> {
        let mut high = self.text_high.take();
        for part in raw.message.iter() {
            // Between the parts of one message; the first part's was settled already.
            if high.is_some() && !part.starts_with_low_surrogate() {
                high = None;
                self.arena.push_str(REPLACEMENT);
            }
            part.append_joined(&mut self.arena, &mut high);
        }
        high
    }

    /// An `assistant` event with text: emit it, or hold it if it could be a recap.
    fn text_piece(&mut self, raw: &RawLine<'_>) {
        let start = self.arena.len();
        let high = self.append_parts(raw);
        let text = &self.arena[start..];
        if let Some(tail_at) = self.text.recap_tail(text, high.is_some()) {
            self.text.held = Some(Held { tail_at, high });
            let held = &mut self.text.held_text;
            if start == 0 {
                // The text is the whole arena: move it instead of copying (recaps are as
                // long as their segment).
                std::mem::swap(held, &mut self.arena);
                reclaim_string(&mut self.arena);
            } else {
                held.clear();
                held.push_str(text);
                self.arena.truncate(start);
            }
            return;
        }
        self.text_high = high;
        if !text.is_empty() {
            self.commit(Channel::Text, start);
        }
    }

    /// A `thinking/delta`: emitted as it comes (thinking is never recapped).
    fn reasoning_piece(&mut self, raw: &RawLine<'_>) {
        let start = self.arena.len();
        let mut high = self.reasoning_high.take();
        if let Some(text) = raw.text {
            append_str_joined(text, &mut self.arena, &mut high);
        }
        self.reasoning_high = high;
        if self.arena.len() > start {
            self.commit(Channel::Reasoning, start);
        }
    }

    /// Queues `arena[start..]` as output of `channel`.
    fn commit(&mut self, channel: Channel, start: usize) {
        let span = Span {
            start,
            end: self.arena.len(),
        };
        let text = span.of(&self.arena);
        match channel {
            Channel::Text => {
                self.text.extend(text);
                self.emitted_len += text.len();
                self.emitted_hash.write(text.as_bytes());
                self.queue.push_back(Queued::Text(span));
            }
            Channel::Reasoning => self.queue.push_back(Queued::Reasoning(span)),
        }
    }

    /// A tool call or interaction query ends the current text segment.
    fn boundary(&mut self) {
        self.text.restart();
    }

    fn tool_call(&mut self, raw: &RawLine<'_>, started: bool) {
        let Some(payload) = raw.tool_call.as_ref().filter(|p| p.has_variant()) else {
            self.stats.unknown += 1;
            return;
        };
        // Ids are unescaped straight into the arena: real ids contain `\n`, and a
        // `String` per call would be an allocation per event.
        let arena = &mut self.arena;
        let call_id = append_span(arena, |a| {
            raw.call_id.map(|id| append_str(id, a));
        });
        let own_args = payload.args.map(RawValue::get);
        let (phase, args) = if started {
            self.calls.start(call_id.of(arena), own_args);
            (ActivityPhase::Started, own_args)
        } else {
            // Completions of rejected calls omit the arguments: take them from `started`.
            let cached = self.calls.complete(call_id.of(arena));
            let phase = ActivityPhase::Completed {
                outcome: payload.outcome.unwrap_or(ToolOutcome::Unknown),
                started_seen: cached.is_some(),
            };
            (phase, own_args.or(cached.and_then(|c| c.args)))
        };
        let tool = append_span(arena, |a| payload.append_tool_name(a));
        let is_mcp = tool.of(arena) == "mcp";
        let summary = append_span(arena, |a| append_summary(is_mcp, args, a));
        let arguments = args.map(|text| append_span(arena, |a| a.push_str(text)));
        let model_call_id = raw
            .model_call_id
            .filter(|m| m.get().starts_with('"'))
            .map(|m| append_span(arena, |a| _ = append_str(m, a)));
        self.queue.push_back(Queued::Activity {
            call_id,
            tool,
            phase,
            summary,
            arguments,
            model_call_id,
        });
    }

    fn result(&mut self, raw: &RawLine<'_>) {
        self.boundary();
        self.stats.results += 1;
        self.turn_done = true;
        // An error result's text describes the failure: it is never answer content.
        let failed = raw.is_error();
        if !failed {
            if let Some(result) = raw.result {
                self.reconcile(result);
            }
        }
        if let Some(mut usage) = raw.usage.and_then(parse_usage) {
            if let Some(cost) = raw.cost().and_then(raw_f64) {
                usage.cost = Some(cost);
            }
            self.queue.push_back(Queued::Usage(usage));
        }
        if failed {
            let message = raw
                .error
                .map(error_message)
                .or_else(|| raw.result.and_then(raw_str).map(|r| r.into_owned()))
                .unwrap_or_default();
            self.queue
                .push_back(Queued::Failed(diagnose::classify_result_error(&message)));
        } else {
            self.queue.push_back(Queued::Finish(FinishReason::Stop));
        }
    }

    /// Compares the text emitted this turn with the final `result` text: a strict prefix
    /// gets the missing suffix emitted; anything else is counted as a divergence. The
    /// result text (as long as the whole answer) is hashed piece by piece as it is
    /// unescaped, never copied: only the suffix is.
    fn reconcile(&mut self, result: &RawValue) {
        let emitted = self.emitted_len;
        let expected = self.emitted_hash.finish();
        let start = self.arena.len();
        let arena = &mut self.arena;
        let mut hasher = DefaultHasher::new();
        let mut seen = 0usize;
        // `None` until the first `emitted` bytes are seen, then whether they match.
        let mut prefix_matches = (emitted == 0).then_some(true);
        let is_string = for_each_unescaped(result, |piece| {
            if prefix_matches == Some(false) {
                return;
            }
            let end = seen + piece.len();
            if seen >= emitted {
                arena.push_str(piece);
            } else if end <= emitted {
                hasher.write(piece.as_bytes());
            } else {
                let cut = emitted - seen;
                let Some((head, tail)) = piece.split_at_checked(cut) else {
                    prefix_matches = Some(false);
                    return;
                };
                hasher.write(head.as_bytes());
                prefix_matches = Some(hasher.finish() == expected);
                if prefix_matches == Some(true) {
                    arena.push_str(tail);
                }
            }
            if end == emitted {
                prefix_matches = Some(hasher.finish() == expected);
            }
            seen = end;
        });
        if !is_string {
            return;
        }
        if prefix_matches != Some(true) {
            self.arena.truncate(start);
            self.stats.divergences += 1;
            return;
        }
        if self.arena.len() > start {
            self.stats.reconciled += 1;
            self.commit(Channel::Text, start);
        }
    }

    fn new_turn(&mut self) {
        self.turn_done = false;
        self.emitted_len = 0;
        self.emitted_hash = DefaultHasher::new();
        self.text.restart();
        self.text.held = None;
        self.text_high = None;
        self.reasoning_high = None;
        self.calls.clear();
    }
}

/// Empties `buffer`, giving its memory back when it outgrew [`RETAINED_CAPACITY`].
fn reclaim_string(buffer: &mut String) {
    buffer.clear();
    if buffer.capacity() > RETAINED_CAPACITY {
        *buffer = String::new();
    }
}

/// Runs `append` on the arena, returning the span of what it appended.
fn append_span(arena: &mut String, append: impl FnOnce(&mut String)) -> Span {
    let start = arena.len();
    append(arena);
    Span {
        start,
        end: arena.len(),
    }
}

/// Reads `usage`: camelCase as cursor-agent writes it (snake_case accepted), and a cost
/// (`cost`, `totalCost` or `total_cost`) when one is reported. `None` when no token count
/// is present (a cost alone is not enough: counts are never invented); counts that are
/// absent from a present object read as 0.
fn parse_usage(raw: &RawValue) -> Option<Usage> {
    let mut usage = Usage::default();
    let mut found = false;
    for_each_entry(raw.get(), |key, value| {
        if matches!(key, "cost" | "totalCost" | "total_cost") {
            usage.cost = usage.cost.or(raw_f64(value));
            return;
        }
        let Some(count) = raw_u64(value) else { return };
        let slot = match key {
            "inputTokens" | "input_tokens" => &mut usage.input_tokens,
            "outputTokens" | "output_tokens" => &mut usage.output_tokens,
            "cacheReadTokens" | "cache_read_tokens" => &mut usage.cache_read_tokens,
            "cacheWriteTokens" | "cache_write_tokens" => &mut usage.cache_write_tokens,
            "reasoningTokens" | "reasoning_tokens" => {
                usage.reasoning_tokens = Some(count);
                found = true;
                return;
            }
            _ => return,
        };
        *slot = count;
        found = true;
    });
    found.then_some(usage)
}

/// The message of an `error` field: a string, or an object's `message`.
fn error_message(raw: &RawValue) -> String {
    if let Some(text) = raw_str(raw) {
        return text.into_owned();
    }
    let mut message = None;
    for_each_entry(raw.get(), |key, value| {
        if key == "message" {
            message = raw_str(value).map(|m| m.into_owned());
        }
    });
    message.unwrap_or_else(|| raw.get().to_owned())
}

/// Appends a line to the notes, keeping only the most recent `max` bytes.
fn push_note(notes: &mut String, max: usize, line: &str) {
    if !notes.is_empty() {
        notes.push('\n');
    }
    notes.push_str(line);
    if notes.len() > max {
        let mut cut = notes.len() - max;
        while !notes.is_char_boundary(cut) {
            cut += 1;
        }
        notes.drain(..cut);
    }
}
