//! Events → Responses stream events (`event: response.…` frames).

use super::options::{OutputOptions, ResponseMeta};
use super::tools::split_namespace;
use super::wire::{ItemWire, MESSAGE, REASONING, SequenceNumber, begin_event, write_usage};
use crate::api::json::{write_str, write_u64};
use crate::api::notes::{activity_note, note_on_own_line, progress_note};
use crate::api::{ErrorReply, StreamEncoder};
use crate::conversation::ToolChoice;
use crate::event::{Event, Failure, FinishReason, ToolCall, Usage};
use crate::framing::SseWriter;
use crate::openai::ApiError;

/// Writes one streaming response as Responses events, appending to a caller-owned buffer.
///
/// What it guarantees (the rules real clients depend on, with the client that breaks
/// without each where one does):
/// - Every event is an `event: <type>` line and a `data:` line whose JSON has the same
///   `type` (Codex and the AI SDK read `type`; SSE parsers read `event:`) and a
///   `sequence_number`, from 0 and one more per event.
/// - `response.created`, then `response.in_progress`, come first (openai-python rejects a
///   stream that begins otherwise), both with the `response` object, `status:
///   "in_progress"` and no output.
/// - The answer is a series of output items, one open at a time, `output_index` from 0:
///   reasoning (only when [`OutputOptions::reasoning_summary`]) as a `reasoning` item
///   whose summary part 0 carries the text (`reasoning_summary_part.added`,
///   `reasoning_summary_text.delta`…, `.done`, `reasoning_summary_part.done`); text as a
///   `message` item with one `output_text` part (`content_part.added`,
///   `output_text.delta`… with `logprobs: []`, `output_text.done`, `content_part.done`);
///   each client tool call as a `function_call` item (`function_call_arguments.delta` /
///   `.done`) or, for a freeform tool, a `custom_tool_call` item with raw text input
///   (`custom_tool_call_input.delta` / `.done`). Every item is announced by
///   `response.output_item.added` before its deltas and ended by
///   `response.output_item.done` carrying the whole item, whose content is exactly its
///   deltas concatenated: Codex records and executes only `output_item.done` items.
/// - Item ids: `rs_…` and `msg_…` from the response id and the item's index; a call's
///   `call_id` is the neutral call id and its item id (`fc_…`, `ctc_…`) derives from it.
///   A call of a namespace's tool carries `namespace` and the tool's own name.
/// - The stream ends with one terminal event carrying the whole `response`:
///   `response.completed` (`output[]` is every `done` item, in order), or
///   `response.incomplete` for an answer cut by a length limit or a content filter. Its
///   `usage` is complete — `input_tokens` counting cached and cache-written input,
///   `input_tokens_details.cached_tokens` and `.cache_write_tokens`, `output_tokens`,
///   `output_tokens_details.reasoning_tokens` (0: the agent does not report them
///   apart), `total_tokens` — or absent when the agent reported none: a partial usage makes
///   Codex reconnect and fail.
/// - A failure (after the head: before it the bridge sends an error body with the true
///   status) ends the stream with an `error` event, then `response.failed` whose
///   `response.error` holds `code` and `message`. Codex ignores `error` events and acts on
///   `response.failed`; openai-python raises an `APIError` at the `error` event (its
///   `error` member), as it does for Chat Completions' in-band error; the AI SDK reports
///   the first of the two. The `error` event carries both shapes OpenAI has used (the
///   documented flat `code` / `message` / `param`, and a nested `error` object). An item
///   still open is left unfinished: a partial item must not enter a client's history.
/// - No `data: [DONE]`: the API sends none, and the terminal event is the end.
/// - Keep-alive frames are SSE comments, which every SSE parser skips.
///
/// After the terminal event the encoder ignores further events. Text and reasoning
/// deltas cost no allocation beyond the growth of the buffer that keeps the open item's
/// text: the protocol repeats each item's whole content at its end and in the terminal
/// event, so the answer is kept (JSON-escaped once, copied thereafter).
#[derive(Debug)]
pub struct EventEncoder {
    /// `{"id":…,"object":"response","created_at":…,"model":…,` — how every `response`
    /// object begins.
    response_head: Vec<u8>,
    /// `"parallel_tool_calls":…,"tool_choice":…,"tools":[]` — what every one echoes.
    response_tail: Vec<u8>,
    /// The response id without its prefix (letters, digits, `_`, `-`): message and
    /// reasoning ids derive from it.
    item_seed: String,
    freeform_tools: Vec<String>,
    options: OutputOptions,
    /// The next event's `sequence_number`.
    sequence: SequenceNumber,
    started: bool,
    open: Open,
    next_index: u32,
    /// The open item's id, as a JSON string.
    item_id: Vec<u8>,
    /// `"item_id":…,"output_index":…` of the open item.
    item_ref: Vec<u8>,
    /// A delta frame of the open item, up to its text.
    delta_prefix: Vec<u8>,
    /// What follows a delta's text, before its sequence number.
    delta_suffix: &'static [u8],
    /// The open item's text so far, JSON-escaped, without quotes.
    content: Vec<u8>,
    /// Every finished item, comma-separated: the terminal event's `output`.
    output: Vec<u8>,
    usage: Option<Usage>,
    /// The reasoning sent so far ended a line (notes start on their own line).
    reasoning_at_line_start: bool,
    scratch: String,
    outcome: Option<Outcome>,
}

/// Which item is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Nothing,
    Reasoning,
    Message,
}

impl Open {
    /// The wire names of the open item's kind, `None` when nothing is open.
    fn wire(self) -> Option<&'static ItemWire> {
        match self {
            Open::Nothing => None,
            Open::Message => Some(&MESSAGE),
            Open::Reasoning => Some(&REASONING),
        }
    }
}

/// How the response ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Completed,
    /// With the reason `incomplete_details` gives.
    Incomplete(&'static str),
    Failed(Failure),
}

/// The state a `response` object is written in.
#[derive(Clone, Copy)]
enum Status<'a> {
    InProgress,
    Ended(&'a Outcome),
}

impl EventEncoder {
    /// An encoder for one response.
    #[must_use]
    pub fn new(meta: &ResponseMeta, options: &OutputOptions) -> Self {
        let mut response_head = b"{\"id\":".to_vec();
        write_str(&mut response_head, &meta.id);
        response_head.extend_from_slice(b",\"object\":\"response\",\"created_at\":");
        write_u64(&mut response_head, meta.created_at);
        response_head.extend_from_slice(b",\"model\":");
        write_str(&mut response_head, &meta.model);
        response_head.push(b',');
        let mut response_tail = b"\"parallel_tool_calls\":".to_vec();
        response_tail.extend_from_slice(if meta.parallel_tool_calls {
            b"true"
        } else {
            b"false"
        });
        response_tail.extend_from_slice(b",\"tool_choice\":");
        match &meta.tool_choice {
            ToolChoice::None => response_tail.extend_from_slice(b"\"none\""),
            ToolChoice::Auto => response_tail.extend_from_slice(b"\"auto\""),
            ToolChoice::Required => response_tail.extend_from_slice(b"\"required\""),
            ToolChoice::Named(name) => {
                let kind: &[u8] = if meta.freeform_tools.contains(name) {
                    b"custom"
                } else {
                    b"function"
                };
                let (namespace, name) = split_namespace(name);
                response_tail.extend_from_slice(b"{\"type\":\"");
                response_tail.extend_from_slice(kind);
                response_tail.extend_from_slice(b"\",\"name\":");
                write_str(&mut response_tail, name);
                if let Some(namespace) = namespace {
                    response_tail.extend_from_slice(b",\"namespace\":");
                    write_str(&mut response_tail, namespace);
                }
                response_tail.push(b'}');
            }
        }
        response_tail.extend_from_slice(b",\"tools\":[]");
        EventEncoder {
            response_head,
            response_tail,
            // Only what an id may hold, whatever the caller's response id holds.
            item_seed: meta
                .id
                .strip_prefix("resp_")
                .unwrap_or(&meta.id)
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
                .collect(),
            freeform_tools: meta.freeform_tools.clone(),
            options: options.clone(),
            sequence: SequenceNumber::default(),
            started: false,
            open: Open::Nothing,
            next_index: 0,
            item_id: Vec::new(),
            item_ref: Vec::new(),
            delta_prefix: Vec::new(),
            delta_suffix: b",",
            content: Vec::new(),
            output: Vec::new(),
            usage: None,
            reasoning_at_line_start: true,
            scratch: String::new(),
            outcome: None,
        }
    }

    /// Whether the terminal event was written.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.outcome.is_some()
    }

    /// The failure, if the response failed.
    #[must_use]
    pub fn failure(&self) -> Option<&Failure> {
        match &self.outcome {
            Some(Outcome::Failed(failure)) => Some(failure),
            _ => None,
        }
    }

    /// Appends the frames for `event` to `out` (possibly none).
    pub fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) {
        if self.outcome.is_some() {
            return;
        }
        match event {
            Event::TextDelta(text) => self.text(text, out),
            Event::ReasoningDelta(text) => self.reasoning(text, out),
            Event::ToolCall(call) => self.tool_call(call, out),
            Event::AgentActivity(activity) => {
                self.note_with(|note| activity_note(activity, note), out)
            }
            Event::Progress(progress) => self.note_with(|note| progress_note(progress, note), out),
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish(reason) => self.finish(*reason, out),
            Event::Failed(failure) => self.fail(failure, out),
        }
    }

    /// Appends the `response` object as it stands at the end: what the terminal event
    /// carries, and the body of a non-streaming response. Before the end, the object of
    /// a response in progress.
    pub fn write_response(&self, out: &mut Vec<u8>) {
        match &self.outcome {
            Some(outcome) => self.response(Status::Ended(outcome), out),
            None => self.response(Status::InProgress, out),
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        if self.open != Open::Message {
            self.close_item(out);
            self.open_item(Open::Message, out);
        }
        self.delta(text, out);
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<u8>) {
        if !self.options.reasoning_summary || text.is_empty() {
            return;
        }
        if self.open != Open::Reasoning {
            self.close_item(out);
            self.open_item(Open::Reasoning, out);
        }
        self.delta(text, out);
        self.reasoning_at_line_start = text.ends_with('\n');
    }

    /// Renders a note into the reused scratch string and sends it as reasoning, when
    /// notes are on.
    fn note_with(&mut self, render: impl FnOnce(&mut String), out: &mut Vec<u8>) {
        if !self.options.activity_notes || !self.options.reasoning_summary {
            return;
        }
        // Rendered into a reused buffer: notes come with every tool call.
        let mut note = std::mem::take(&mut self.scratch);
        let mid_line = self.open == Open::Reasoning && !self.reasoning_at_line_start;
        if note_on_own_line(&mut note, mid_line, render) {
            self.reasoning(&note, out);
        }
        self.scratch = note;
    }

    /// One delta of the open item: its frame, and its text kept for the item's end.
    fn delta(&mut self, text: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.delta_prefix);
        let start = out.len();
        write_str(out, text);
        self.content
            .extend_from_slice(&out[start + 1..out.len() - 1]);
        out.extend_from_slice(self.delta_suffix);
        self.end_event(out);
    }

    /// Opens a message or reasoning item: its `output_item.added` and the added event of
    /// its (only) part.
    fn open_item(&mut self, kind: Open, out: &mut Vec<u8>) {
        let Some(wire) = kind.wire() else { return };
        self.start(out);
        let index = self.begin_item(wire.id_prefix, None);
        begin_event("response.output_item.added", out);
        out.extend_from_slice(b"\"output_index\":");
        write_u64(out, u64::from(index));
        out.extend_from_slice(b",\"item\":{\"id\":");
        out.extend_from_slice(&self.item_id);
        out.extend_from_slice(wire.added_item);
        self.end_event(out);
        begin_event(wire.part_added, out);
        out.extend_from_slice(&self.item_ref);
        out.extend_from_slice(wire.part_index);
        out.extend_from_slice(b"\"part\":");
        out.extend_from_slice(wire.part_start);
        out.extend_from_slice(wire.part_end);
        out.push(b',');
        self.end_event(out);
        self.delta_prefix.clear();
        begin_event(wire.text_delta, &mut self.delta_prefix);
        self.delta_prefix.extend_from_slice(&self.item_ref);
        self.delta_prefix.extend_from_slice(wire.part_index);
        self.delta_prefix.extend_from_slice(b"\"delta\":");
        self.delta_suffix = wire.text_tail;
        self.content.clear();
        self.open = kind;
        self.reasoning_at_line_start = true;
    }

    /// Ends the open message or reasoning item: its text's and part's done events and
    /// `output_item.done` with the whole item.
    fn close_item(&mut self, out: &mut Vec<u8>) {
        let Some(wire) = self.open.wire() else { return };
        begin_event(wire.text_done, out);
        out.extend_from_slice(&self.item_ref);
        out.extend_from_slice(wire.part_index);
        out.extend_from_slice(b"\"text\":\"");
        out.extend_from_slice(&self.content);
        out.push(b'"');
        out.extend_from_slice(wire.text_tail);
        self.end_event(out);
        begin_event(wire.part_done, out);
        out.extend_from_slice(&self.item_ref);
        out.extend_from_slice(wire.part_index);
        out.extend_from_slice(b"\"part\":");
        out.extend_from_slice(wire.part_start);
        out.extend_from_slice(&self.content);
        out.extend_from_slice(wire.part_end);
        out.push(b',');
        self.end_event(out);
        self.item_done(out, |this, out| {
            out.extend_from_slice(b"{\"id\":");
            out.extend_from_slice(&this.item_id);
            out.extend_from_slice(wire.done_item);
            out.extend_from_slice(wire.part_start);
            out.extend_from_slice(&this.content);
            out.extend_from_slice(wire.part_end);
            out.extend_from_slice(b"]}");
        });
        self.open = Open::Nothing;
    }

    /// A client tool call: one whole item, `added` to `done`.
    fn tool_call(&mut self, call: &ToolCall<'_>, out: &mut Vec<u8>) {
        self.close_item(out);
        self.start(out);
        let freeform = self.freeform_tools.iter().any(|name| name == call.name);
        let index = self.begin_item(if freeform { "ctc_" } else { "fc_" }, Some(call.id));
        let (delta_event, done_event) = if freeform {
            (
                "response.custom_tool_call_input.delta",
                "response.custom_tool_call_input.done",
            )
        } else {
            (
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
            )
        };
        let (namespace, name) = split_namespace(call.name);
        begin_event("response.output_item.added", out);
        out.extend_from_slice(b"\"output_index\":");
        write_u64(out, u64::from(index));
        out.extend_from_slice(b",\"item\":");
        self.call_item(call, freeform, false, out);
        out.push(b',');
        self.end_event(out);
        if !call.arguments.is_empty() {
            begin_event(delta_event, out);
            out.extend_from_slice(&self.item_ref);
            out.extend_from_slice(b",\"delta\":");
            write_str(out, call.arguments);
            out.push(b',');
            self.end_event(out);
        }
        begin_event(done_event, out);
        out.extend_from_slice(&self.item_ref);
        if freeform {
            out.extend_from_slice(b",\"input\":");
        } else {
            out.extend_from_slice(b",\"name\":");
            write_str(out, name);
            if let Some(namespace) = namespace {
                out.extend_from_slice(b",\"namespace\":");
                write_str(out, namespace);
            }
            out.extend_from_slice(b",\"arguments\":");
        }
        write_str(out, call.arguments);
        out.push(b',');
        self.end_event(out);
        self.item_done(out, |this, out| this.call_item(call, freeform, true, out));
    }

    /// A call item: in progress with no input yet, or complete.
    fn call_item(&self, call: &ToolCall<'_>, freeform: bool, complete: bool, out: &mut Vec<u8>) {
        let (namespace, name) = split_namespace(call.name);
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(&self.item_id);
        out.extend_from_slice(if freeform {
            b",\"type\":\"custom_tool_call\""
        } else {
            b",\"type\":\"function_call\""
        });
        out.extend_from_slice(if complete {
            b",\"status\":\"completed\""
        } else {
            b",\"status\":\"in_progress\""
        });
        out.extend_from_slice(b",\"call_id\":");
        write_str(out, call.id);
        out.extend_from_slice(b",\"name\":");
        write_str(out, name);
        if let Some(namespace) = namespace {
            out.extend_from_slice(b",\"namespace\":");
            write_str(out, namespace);
        }
        out.extend_from_slice(if freeform {
            b",\"input\":"
        } else {
            b",\"arguments\":"
        });
        write_str(out, if complete { call.arguments } else { "" });
        out.push(b'}');
    }

    /// The next item's index; sets its id (`prefix` and the call id's digits for a call,
    /// `prefix`, the response's digits and the index otherwise) and its reference.
    fn begin_item(&mut self, prefix: &str, call_id: Option<&str>) -> u32 {
        let index = self.next_index;
        self.next_index += 1;
        self.item_id.clear();
        match call_id {
            // Rare: one per call.
            Some(id) => write_str(
                &mut self.item_id,
                &format!("{prefix}{}", id.strip_prefix("call_").unwrap_or(id)),
            ),
            // Letters, digits and `_`: nothing to escape.
            None => {
                self.item_id.push(b'"');
                self.item_id.extend_from_slice(prefix.as_bytes());
                self.item_id.extend_from_slice(self.item_seed.as_bytes());
                self.item_id.push(b'_');
                write_u64(&mut self.item_id, u64::from(index));
                self.item_id.push(b'"');
            }
        }
        self.item_ref.clear();
        self.item_ref.extend_from_slice(b"\"item_id\":");
        self.item_ref.extend_from_slice(&self.item_id);
        self.item_ref.extend_from_slice(b",\"output_index\":");
        write_u64(&mut self.item_ref, u64::from(index));
        index
    }

    /// `response.output_item.done` with the whole item, which `write_item` writes; the
    /// item is also kept for the terminal event's `output`.
    fn item_done(&mut self, out: &mut Vec<u8>, write_item: impl FnOnce(&Self, &mut Vec<u8>)) {
        begin_event("response.output_item.done", out);
        out.extend_from_slice(b"\"output_index\":");
        write_u64(out, u64::from(self.next_index - 1));
        out.extend_from_slice(b",\"item\":");
        let start = out.len();
        write_item(self, out);
        if !self.output.is_empty() {
            self.output.push(b',');
        }
        self.output.extend_from_slice(&out[start..]);
        out.push(b',');
        self.end_event(out);
    }

    fn finish(&mut self, reason: FinishReason, out: &mut Vec<u8>) {
        self.close_item(out);
        self.start(out);
        let (kind, outcome) = match reason {
            FinishReason::Length => (
                "response.incomplete",
                Outcome::Incomplete("max_output_tokens"),
            ),
            FinishReason::ContentFilter => {
                ("response.incomplete", Outcome::Incomplete("content_filter"))
            }
            _ => ("response.completed", Outcome::Completed),
        };
        self.terminal(kind, outcome, out);
    }

    /// Ends the stream with an `error` event and `response.failed` (see the type's docs).
    fn fail(&mut self, failure: &Failure, out: &mut Vec<u8>) {
        self.start(out);
        let reply = ErrorReply::from_failure(failure);
        begin_event("error", out);
        out.extend_from_slice(b"\"code\":");
        write_str(out, reply.code);
        out.extend_from_slice(b",\"message\":");
        write_str(out, &reply.message);
        out.extend_from_slice(b",\"param\":null,\"error\":");
        serde_json::to_writer(&mut *out, &ApiError::from(&reply))
            .expect("an error serializes into a Vec");
        out.push(b',');
        self.end_event(out);
        self.terminal("response.failed", Outcome::Failed(failure.clone()), out);
    }

    fn terminal(&mut self, kind: &str, outcome: Outcome, out: &mut Vec<u8>) {
        begin_event(kind, out);
        out.extend_from_slice(b"\"response\":");
        self.response(Status::Ended(&outcome), out);
        out.push(b',');
        self.end_event(out);
        self.outcome = Some(outcome);
    }

    /// `response.created` and `response.in_progress`, before anything else.
    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        for kind in ["response.created", "response.in_progress"] {
            begin_event(kind, out);
            out.extend_from_slice(b"\"response\":");
            self.response(Status::InProgress, out);
            out.push(b',');
            self.end_event(out);
        }
    }

    /// The `response` object.
    fn response(&self, status: Status<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.response_head);
        match status {
            Status::InProgress => out.extend_from_slice(
                b"\"status\":\"in_progress\",\"error\":null,\"incomplete_details\":null,\"output\":[],",
            ),
            Status::Ended(outcome) => {
                match outcome {
                    Outcome::Completed => out.extend_from_slice(
                        b"\"status\":\"completed\",\"error\":null,\"incomplete_details\":null",
                    ),
                    Outcome::Incomplete(reason) => {
                        out.extend_from_slice(
                            b"\"status\":\"incomplete\",\"error\":null,\"incomplete_details\":{\"reason\":\"",
                        );
                        out.extend_from_slice(reason.as_bytes());
                        out.extend_from_slice(b"\"}");
                    }
                    Outcome::Failed(failure) => {
                        let reply = ErrorReply::from_failure(failure);
                        out.extend_from_slice(b"\"status\":\"failed\",\"error\":{\"code\":");
                        write_str(out, reply.code);
                        out.extend_from_slice(b",\"message\":");
                        write_str(out, &reply.message);
                        out.extend_from_slice(b"},\"incomplete_details\":null");
                    }
                }
                out.extend_from_slice(b",\"output\":[");
                out.extend_from_slice(&self.output);
                out.extend_from_slice(b"],");
            }
        }
        out.extend_from_slice(&self.response_tail);
        if let (Status::Ended(_), Some(usage)) = (status, &self.usage) {
            out.extend_from_slice(b",\"usage\":");
            write_usage(out, usage);
        }
        out.push(b'}');
    }

    /// Closes an event whose fields end with a comma: its sequence number, the frame end.
    fn end_event(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.sequence.frame_end());
        self.sequence.increment();
    }
}

impl StreamEncoder for EventEncoder {
    fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) {
        EventEncoder::encode(self, event, out);
    }

    fn is_finished(&self) -> bool {
        EventEncoder::is_finished(self)
    }

    /// An SSE comment, `: keep-alive`: every SSE parser skips it.
    fn keep_alive(&mut self, out: &mut Vec<u8>) {
        SseWriter::comment(out, "keep-alive");
    }
}
