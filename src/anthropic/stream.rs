//! Events → Messages API server-sent events.

use super::error::write_error;
use super::options::{OutputOptions, ResponseMeta};
use super::wire::{input_json, stop_reason, write_message_head, write_tool_use_head, write_usage};
use crate::api::json::{write_str, write_u64};
use crate::api::notes::{activity_note, note_on_own_line, progress_note};
use crate::api::{ErrorReply, StreamEncoder};
use crate::event::{Event, Failure, FinishReason, ToolCall, Usage};

const BLOCK_START: &[u8] =
    b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":";
const BLOCK_DELTA: &[u8] =
    b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
const BLOCK_STOP: &[u8] =
    b"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":";
const MESSAGE_DELTA: &[u8] =
    b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"";
const MESSAGE_STOP: &[u8] = b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const PING: &[u8] = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";
const ERROR: &[u8] = b"event: error\ndata: ";
const END: &[u8] = b"\n\n";

/// The block open in the stream, if any (a `tool_use` block opens and closes within one
/// event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text,
    Thinking,
}

/// Writes one streaming Messages response, appending to a caller-owned buffer.
///
/// The stream is exactly the sequence Claude Code, anthropic-python and the AI SDK's
/// Anthropic provider read:
/// - every event is an `event: <type>` line and a `data:` line of one JSON object whose
///   `type` is the same (Claude Code and anthropic-python see nothing in `data:`-only
///   frames: Claude Code then sends the whole request again without streaming, running
///   the agent twice);
/// - one `message_start` first, with the `msg_…` id, the request's model, empty content
///   and usage zeros (the real numbers are known only at the end);
/// - content blocks with indices 0, 1, 2… in order, at most one open at a time, each
///   `content_block_start` (empty: `"text":""`, `"thinking":""`, `"input":{}` — content
///   put in a start block is doubled by anthropic-python) → deltas of the block's own
///   type → `content_block_stop`: `text_delta` in `text` blocks, `thinking_delta` in
///   `thinking` blocks, one `input_json_delta` with the call's whole arguments in
///   `tool_use` blocks;
/// - text in `text` blocks; reasoning in `thinking` blocks only when
///   [`OutputOptions::thinking`] (the request asked for thinking and not for it to be
///   omitted), with `"signature":""` and never a `signature_delta`: no signature is
///   invented (an empty one is what Claude Code echoes back when none was streamed, and
///   only the real API checks it); the agent's own tool use as notes in `thinking` blocks
///   only when [`OutputOptions::activity_notes`] too — otherwise not at all;
/// - each client tool call as a `tool_use` block with the neutral call id (which a
///   `tool_result` in the next request names), parallel calls as consecutive blocks;
/// - `message_delta` with `stop_reason` (`tool_use` exactly when `tool_use` blocks were
///   sent; `end_turn`, `max_tokens`, `refusal`) and the usage: the agent's numbers when it
///   reported them (`input_tokens` uncached, `cache_creation_input_tokens`,
///   `cache_read_input_tokens`, `output_tokens`), else `output_tokens: 0` alone, which
///   anthropic-python requires; then `message_stop`. After that the encoder ignores every
///   event.
///
/// A failure after the head is `event: error` with the Anthropic error object, and the
/// stream ends there: no `content_block_stop`, `message_delta` nor `message_stop`, so no
/// client mistakes it for a complete answer. (Claude Code answers it by sending the
/// request again without streaming; the bridge keeps the head back until the agent shows
/// an answer, so most failures get a true status instead.) The keep-alive is
/// `event: ping`.
///
/// Text and reasoning deltas cost no allocation. The events are written here rather than
/// with [`SseWriter`](crate::framing::SseWriter), which writes the `data:`-only frames of
/// the OpenAI dialects: every event's name is known in advance, so its `event:` line and
/// the opening of its JSON are one constant, and a delta is three copies.
#[derive(Debug)]
pub struct MessageStreamEncoder {
    /// The whole `message_start` event.
    start: Vec<u8>,
    options: OutputOptions,
    started: bool,
    open: Open,
    /// The index the next block gets; the open block's is one less.
    next_index: u64,
    /// The open block's delta event up to its text: `event: content_block_delta` …
    /// `"delta":{"type":"text_delta","text":` — built when the block opens, so that a
    /// delta is three copies.
    delta_prefix: Vec<u8>,
    tool_calls: u32,
    usage: Option<Usage>,
    /// The last thinking text sent ended a line (notes start on their own line).
    thinking_at_line_start: bool,
    scratch: String,
    finished: bool,
}

impl MessageStreamEncoder {
    /// An encoder for one response.
    pub fn new(meta: &ResponseMeta, options: &OutputOptions) -> Self {
        let mut start =
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":".to_vec();
        write_message_head(&mut start, meta);
        start.extend_from_slice(
            b"],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n",
        );
        MessageStreamEncoder {
            start,
            options: *options,
            started: false,
            open: Open::None,
            next_index: 0,
            delta_prefix: Vec::new(),
            tool_calls: 0,
            usage: None,
            thinking_at_line_start: true,
            scratch: String::new(),
            finished: false,
        }
    }

    /// Whether the stream ended (`message_stop`, or `event: error`).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// `tool_use` blocks written so far.
    pub fn tool_calls(&self) -> u32 {
        self.tool_calls
    }

    /// Appends the events for `event` to `out` (possibly none).
    pub fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            Event::TextDelta(text) => self.text(text, out),
            Event::ReasoningDelta(text) => {
                if self.options.thinking {
                    self.thinking(text, out);
                }
            }
            Event::ToolCall(call) => self.tool_use(call, out),
            Event::AgentActivity(activity) => {
                self.note_with(|note| activity_note(activity, note), out);
            }
            Event::Progress(progress) => self.note_with(|note| progress_note(progress, note), out),
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish(reason) => self.finish(*reason, out),
            Event::Failed(failure) => self.fail(failure, out),
        }
    }

    /// Appends `event: ping`.
    pub fn keep_alive(&mut self, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        out.extend_from_slice(PING);
    }

    /// Ends the stream with `event: error` (see the type's docs).
    pub fn fail(&mut self, failure: &Failure, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        out.extend_from_slice(ERROR);
        write_error(&ErrorReply::from_failure(failure), out);
        out.extend_from_slice(END);
        self.finished = true;
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            out.extend_from_slice(&self.start);
            self.started = true;
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        self.open_block(Open::Text, out);
        out.extend_from_slice(&self.delta_prefix);
        write_str(out, text);
        out.extend_from_slice(b"}}\n\n");
    }

    fn thinking(&mut self, text: &str, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        self.open_block(Open::Thinking, out);
        out.extend_from_slice(&self.delta_prefix);
        write_str(out, text);
        out.extend_from_slice(b"}}\n\n");
        self.thinking_at_line_start = text.ends_with('\n');
    }

    /// Renders a note into the reused scratch string and sends it as thinking, when notes
    /// are shown.
    fn note_with(&mut self, render: impl FnOnce(&mut String), out: &mut Vec<u8>) {
        if !(self.options.thinking && self.options.activity_notes) {
            return;
        }
        // Rendered into a reused buffer: notes come with every tool the agent runs. After
        // text in the open thinking block, a line break first.
        let mut note = std::mem::take(&mut self.scratch);
        let line_break = self.open == Open::Thinking && !self.thinking_at_line_start;
        if note_on_own_line(&mut note, line_break, render) {
            self.thinking(&note, out);
        }
        self.scratch = note;
    }

    fn tool_use(&mut self, call: &ToolCall<'_>, out: &mut Vec<u8>) {
        self.close_block(out);
        self.ensure_started(out);
        let index = self.next_index;
        self.next_index += 1;
        out.extend_from_slice(BLOCK_START);
        write_u64(out, index);
        out.extend_from_slice(b",\"content_block\":");
        write_tool_use_head(out, call.id, call.name);
        out.extend_from_slice(b"{}}}\n\n");
        out.extend_from_slice(BLOCK_DELTA);
        write_u64(out, index);
        out.extend_from_slice(b",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":");
        write_str(out, input_json(call.arguments));
        out.extend_from_slice(b"}}\n\n");
        out.extend_from_slice(BLOCK_STOP);
        write_u64(out, index);
        out.extend_from_slice(b"}\n\n");
        self.tool_calls += 1;
    }

    fn finish(&mut self, reason: FinishReason, out: &mut Vec<u8>) {
        self.close_block(out);
        self.ensure_started(out);
        out.extend_from_slice(MESSAGE_DELTA);
        out.extend_from_slice(stop_reason(reason, self.tool_calls > 0).as_bytes());
        out.extend_from_slice(b"\",\"stop_sequence\":null},\"usage\":");
        write_usage(out, self.usage.as_ref(), false);
        out.extend_from_slice(b"}\n\n");
        out.extend_from_slice(MESSAGE_STOP);
        self.finished = true;
    }

    /// Opens a block of `kind` unless one is open already, closing any other first.
    fn open_block(&mut self, kind: Open, out: &mut Vec<u8>) {
        if self.open == kind {
            return;
        }
        self.close_block(out);
        self.ensure_started(out);
        out.extend_from_slice(BLOCK_START);
        write_u64(out, self.next_index);
        out.extend_from_slice(match kind {
            Open::Thinking => {
                b",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"
            }
            _ => b",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        });
        self.delta_prefix.clear();
        self.delta_prefix.extend_from_slice(BLOCK_DELTA);
        write_u64(&mut self.delta_prefix, self.next_index);
        self.delta_prefix.extend_from_slice(match kind {
            Open::Thinking => b",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":",
            _ => b",\"delta\":{\"type\":\"text_delta\",\"text\":",
        });
        self.next_index += 1;
        self.open = kind;
        self.thinking_at_line_start = true;
    }

    fn close_block(&mut self, out: &mut Vec<u8>) {
        if self.open == Open::None {
            return;
        }
        out.extend_from_slice(BLOCK_STOP);
        write_u64(out, self.next_index - 1);
        out.extend_from_slice(b"}\n\n");
        self.open = Open::None;
    }
}

impl StreamEncoder for MessageStreamEncoder {
    fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) {
        MessageStreamEncoder::encode(self, event, out);
    }

    fn is_finished(&self) -> bool {
        MessageStreamEncoder::is_finished(self)
    }

    fn keep_alive(&mut self, out: &mut Vec<u8>) {
        MessageStreamEncoder::keep_alive(self, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ActivityPhase, AgentActivity, FailureKind, Progress};

    fn encoder(thinking: bool, activity_notes: bool) -> MessageStreamEncoder {
        let meta = ResponseMeta {
            id: "msg_1".into(),
            model: "claude-x".into(),
        };
        MessageStreamEncoder::new(
            &meta,
            &OutputOptions {
                thinking,
                activity_notes,
            },
        )
    }

    fn run(encoder: &mut MessageStreamEncoder, events: &[Event<'_>]) -> String {
        let mut out = Vec::new();
        for event in events {
            encoder.encode(event, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    /// `(event name, data)` of every frame, checking that each names its data's type.
    fn frames(text: &str) -> Vec<(String, serde_json::Value)> {
        assert!(text.ends_with("\n\n"));
        text[..text.len() - 2]
            .split("\n\n")
            .map(|frame| {
                let (event, data) = frame.split_once('\n').unwrap();
                let event = event.strip_prefix("event: ").unwrap().to_owned();
                let data: serde_json::Value =
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                assert_eq!(data["type"], event.as_str());
                (event, data)
            })
            .collect()
    }

    fn names(text: &str) -> Vec<String> {
        frames(text).into_iter().map(|(name, _)| name).collect()
    }

    #[test]
    fn thinking_is_dropped_unless_shown() {
        let events = [
            Event::ReasoningDelta("hm"),
            Event::TextDelta("Hi"),
            Event::Finish(FinishReason::Stop),
        ];
        let hidden = run(&mut encoder(false, true), &events);
        assert_eq!(
            names(&hidden),
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let shown = frames(&run(&mut encoder(true, true), &events));
        assert_eq!(
            shown[1].1["content_block"],
            serde_json::json!({"type":"thinking","thinking":"","signature":""})
        );
        assert_eq!(
            shown[2].1["delta"],
            serde_json::json!({"type":"thinking_delta","thinking":"hm"})
        );
        assert_eq!(shown[3].1["index"], 0);
        assert_eq!(shown[4].1["index"], 1, "the text block is the second");
        assert_eq!(shown[5].1["delta"]["type"], "text_delta");
    }

    #[test]
    fn notes_only_inside_shown_thinking_on_their_own_line() {
        let activity = AgentActivity {
            call_id: "c",
            tool: "shell",
            phase: ActivityPhase::Started,
            summary: "ls",
            arguments: None,
            model_call_id: None,
        };
        let events = [
            Event::ReasoningDelta("plan"),
            Event::AgentActivity(activity),
            Event::Progress(Progress::Reconnected),
            Event::Finish(FinishReason::Stop),
        ];
        let shown = frames(&run(&mut encoder(true, true), &events));
        let thinking: String = shown
            .iter()
            .filter_map(|(_, d)| d["delta"]["thinking"].as_str())
            .collect();
        assert_eq!(thinking, "plan\n[shell] ls\n[cursor-agent] reconnected\n");
        for (thinking, notes) in [(true, false), (false, true)] {
            let out = run(&mut encoder(thinking, notes), &events[1..]);
            assert_eq!(
                names(&out),
                ["message_start", "message_delta", "message_stop"]
            );
        }
    }

    #[test]
    fn tool_calls_are_whole_blocks_and_set_the_stop_reason() {
        let call = |index, id| {
            Event::ToolCall(ToolCall {
                index,
                id,
                name: "Read",
                arguments: r#"{"file_path":"/w/a"}"#,
            })
        };
        let mut enc = encoder(false, false);
        let out = run(
            &mut enc,
            &[
                Event::TextDelta("Reading."),
                call(0, "call_a"),
                call(1, "call_b"),
                Event::Usage(Usage {
                    input_tokens: 11,
                    output_tokens: 7,
                    cache_read_tokens: 3,
                    cache_write_tokens: 5,
                    ..Usage::default()
                }),
                Event::Finish(FinishReason::ToolCalls),
            ],
        );
        assert_eq!(enc.tool_calls(), 2);
        let f = frames(&out);
        assert_eq!(
            f[4].1["content_block"],
            serde_json::json!({"type":"tool_use","id":"call_a","name":"Read","input":{}})
        );
        assert_eq!(
            f[5].1["delta"],
            serde_json::json!({"type":"input_json_delta","partial_json":"{\"file_path\":\"/w/a\"}"})
        );
        assert_eq!(
            (f[4].1["index"].as_u64(), f[7].1["index"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(
            f[10].1,
            serde_json::json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},
                "usage":{"input_tokens":11,"cache_creation_input_tokens":5,"cache_read_input_tokens":3,"output_tokens":7}})
        );
        assert_eq!(f.len(), 12);
    }

    #[test]
    fn failure_ends_with_an_error_event_and_nothing_after() {
        let mut enc = encoder(false, false);
        let out = run(
            &mut enc,
            &[
                Event::TextDelta("partial"),
                Event::Failed(Failure::new(FailureKind::Unavailable, "gone")),
                Event::TextDelta("ignored"),
                Event::Finish(FinishReason::Stop),
            ],
        );
        let f = frames(&out);
        assert_eq!(f.last().unwrap().0, "error");
        assert_eq!(
            f.last().unwrap().1,
            serde_json::json!({"type":"error","error":{"type":"overloaded_error","message":"gone"}})
        );
        assert_eq!(f.len(), 4, "start, block start, delta, error: {out}");
        assert!(enc.is_finished());
        let mut more = Vec::new();
        enc.keep_alive(&mut more);
        assert!(more.is_empty());
    }

    #[test]
    fn keep_alive_is_a_ping_after_the_start() {
        let mut enc = encoder(false, false);
        let mut out = Vec::new();
        enc.keep_alive(&mut out);
        enc.keep_alive(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(names(&text), ["message_start", "ping", "ping"]);
        assert!(text.ends_with("event: ping\ndata: {\"type\":\"ping\"}\n\n"));
    }
}
