//! Events → `chat.completion.chunk` SSE frames.

use super::options::{OutputOptions, ResponseMeta};
use super::wire::{finish_reason, write_usage};
use crate::api::json::{write_str, write_u64};
use crate::api::notes::{activity_note, note_on_own_line, progress_note};
use crate::api::{ErrorReply, StreamEncoder};
use crate::event::{Event, Failure, FinishReason, ToolCall, Usage};
use crate::framing::SseWriter;
use crate::openai::ApiError;

/// Writes one streaming response as `data:` frames, appending to a caller-owned buffer.
///
/// The frames follow the rules real clients depend on:
/// - every chunk carries the same `id`, `object`, `created`, `model` and a `choices` array;
/// - `delta.role = "assistant"` exactly once, in the first chunk;
/// - text in `delta.content`, reasoning in the configured field;
/// - each tool call whole in one delta with `index`, `id`, `type`, `function.name` and the
///   complete `function.arguments` (never a JSON-valid prefix that a client could finalise
///   early), indices contiguous from 0;
/// - exactly one finish chunk, `delta: {}`, whose `finish_reason` is `tool_calls` iff tool
///   calls were sent;
/// - with `include_usage`, one `choices: []` usage chunk after it, only when usage is known;
/// - `data: [DONE]` last. After that the encoder ignores further events.
///
/// A failure becomes an in-band `{"error":…}` frame and `[DONE]`: by the time a stream has
/// begun, the HTTP status is already sent. (Failures before the head are the bridge's to
/// turn into a status; see [`ApiError`].)
///
/// Reasoning interleaved with text (cursor thinks again after a tool call) is sent as it
/// comes: the AI SDK opens a new reasoning part and continues the same text part,
/// openai-python concatenates both fields.
///
/// Text deltas cost no allocation: the frame prefix is built once.
#[derive(Debug)]
pub struct ChunkEncoder {
    /// `data: {"id":…,"object":"chat.completion.chunk","created":…,"model":…,"choices":`
    prefix: Vec<u8>,
    options: OutputOptions,
    reasoning_key: Option<&'static str>,
    role_sent: bool,
    tool_calls: u32,
    usage: Option<Usage>,
    /// The last reasoning text sent ended a line (notes start on their own line).
    reasoning_at_line_start: bool,
    scratch: String,
    finished: bool,
}

impl ChunkEncoder {
    /// An encoder for one response.
    pub fn new(meta: &ResponseMeta, options: &OutputOptions) -> Self {
        let mut prefix = b"data: {\"id\":".to_vec();
        write_str(&mut prefix, &meta.id);
        prefix.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        write_u64(&mut prefix, meta.created);
        prefix.extend_from_slice(b",\"model\":");
        write_str(&mut prefix, &meta.model);
        prefix.extend_from_slice(b",\"choices\":");
        ChunkEncoder {
            prefix,
            options: options.clone(),
            reasoning_key: options.reasoning.key(),
            role_sent: false,
            tool_calls: 0,
            usage: None,
            reasoning_at_line_start: true,
            scratch: String::new(),
            finished: false,
        }
    }

    /// Whether `[DONE]` was written.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether any chunk has been written.
    pub fn has_output(&self) -> bool {
        self.role_sent || self.finished
    }

    /// Tool calls written so far.
    pub fn tool_calls(&self) -> u32 {
        self.tool_calls
    }

    /// Appends the frames for `event` to `out` (possibly none).
    pub fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            Event::TextDelta(text) => self.content(text, out),
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

    /// Ends the stream with an in-band error frame and `[DONE]`.
    pub fn fail(&mut self, failure: &Failure, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        SseWriter::begin_data(out);
        ApiError::from(&ErrorReply::from_failure(failure)).write_json(out);
        SseWriter::end_data(out);
        SseWriter::done(out);
        self.finished = true;
    }

    fn content(&mut self, text: &str, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        self.begin_delta(out);
        out.extend_from_slice(b"\"content\":");
        write_str(out, text);
        self.end_delta(out);
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<u8>) {
        let Some(key) = self.reasoning_key else {
            return;
        };
        if text.is_empty() {
            return;
        }
        self.begin_delta(out);
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        write_str(out, text);
        self.end_delta(out);
        self.reasoning_at_line_start = text.ends_with('\n');
    }

    /// Renders a note into the reused scratch string and sends it, when notes are on.
    fn note_with(&mut self, render: impl FnOnce(&mut String), out: &mut Vec<u8>) {
        if !self.options.activity_notes || self.reasoning_key.is_none() {
            return;
        }
        // Rendered into a reused buffer: notes come with every tool call.
        let mut note = std::mem::take(&mut self.scratch);
        if note_on_own_line(&mut note, !self.reasoning_at_line_start, render) {
            self.reasoning(&note, out);
        }
        self.scratch = note;
    }

    fn tool_call(&mut self, call: &ToolCall<'_>, out: &mut Vec<u8>) {
        self.begin_delta(out);
        out.extend_from_slice(b"\"tool_calls\":[{\"index\":");
        write_u64(out, u64::from(call.index));
        out.extend_from_slice(b",\"id\":");
        write_str(out, call.id);
        out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
        write_str(out, call.name);
        out.extend_from_slice(b",\"arguments\":");
        write_str(out, call.arguments);
        out.extend_from_slice(b"}}]");
        self.end_delta(out);
        self.tool_calls += 1;
    }

    fn finish(&mut self, reason: FinishReason, out: &mut Vec<u8>) {
        if !self.role_sent {
            // A response with nothing in it still announces its role once.
            self.begin_delta(out);
            out.extend_from_slice(b"\"content\":\"\"");
            self.end_delta(out);
        }
        // `tool_calls` iff tool calls were sent: a client waiting for calls that never
        // come, or handed calls under `stop`, misbehaves.
        let reason = match (reason, self.tool_calls > 0) {
            (_, true) => FinishReason::ToolCalls,
            (FinishReason::ToolCalls, false) => FinishReason::Stop,
            (reason, false) => reason,
        };
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(b"[{\"index\":0,\"delta\":{},\"finish_reason\":\"");
        out.extend_from_slice(finish_reason(reason).as_bytes());
        out.extend_from_slice(b"\"}]}\n\n");
        if self.options.include_usage {
            if let Some(usage) = &self.usage {
                out.extend_from_slice(&self.prefix);
                out.extend_from_slice(b"[],\"usage\":");
                write_usage(out, usage);
                out.extend_from_slice(b"}\n\n");
            }
        }
        SseWriter::done(out);
        self.finished = true;
    }

    fn begin_delta(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(b"[{\"index\":0,\"delta\":{");
        if !self.role_sent {
            out.extend_from_slice(b"\"role\":\"assistant\",");
            self.role_sent = true;
        }
    }

    fn end_delta(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"},\"finish_reason\":null}]}\n\n");
    }
}

impl StreamEncoder for ChunkEncoder {
    fn encode(&mut self, event: &Event<'_>, out: &mut Vec<u8>) {
        ChunkEncoder::encode(self, event, out);
    }

    fn is_finished(&self) -> bool {
        ChunkEncoder::is_finished(self)
    }

    /// An SSE comment, `: keep-alive`: every SSE parser skips it.
    fn keep_alive(&mut self, out: &mut Vec<u8>) {
        SseWriter::comment(out, "keep-alive");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::FailureKind;

    fn encoder(include_usage: bool) -> ChunkEncoder {
        let meta = ResponseMeta {
            id: "chatcmpl-1".into(),
            created: 7,
            model: "auto".into(),
        };
        ChunkEncoder::new(
            &meta,
            &OutputOptions {
                include_usage,
                ..OutputOptions::default()
            },
        )
    }

    fn frames(out: &[u8]) -> Vec<serde_json::Value> {
        let text = std::str::from_utf8(out).unwrap();
        assert!(text.ends_with("data: [DONE]\n\n"));
        text.split("\n\n")
            .filter(|f| !f.is_empty() && *f != "data: [DONE]")
            .map(|f| serde_json::from_str(f.strip_prefix("data: ").unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn text_reasoning_finish_usage() {
        let mut enc = encoder(true);
        let mut out = Vec::new();
        for event in [
            Event::ReasoningDelta("think"),
            Event::TextDelta("Hi \"x\""),
            Event::Usage(Usage {
                input_tokens: 1,
                output_tokens: 2,
                ..Usage::default()
            }),
            Event::Finish(FinishReason::Stop),
            Event::TextDelta("ignored"),
        ] {
            enc.encode(&event, &mut out);
        }
        let f = frames(&out);
        assert_eq!(f.len(), 4);
        for chunk in &f {
            assert_eq!(chunk["id"], "chatcmpl-1");
            assert_eq!(chunk["object"], "chat.completion.chunk");
            assert_eq!(chunk["created"], 7);
            assert_eq!(chunk["model"], "auto");
            assert!(chunk["choices"].is_array());
        }
        assert_eq!(
            f[0]["choices"][0]["delta"],
            serde_json::json!({"role":"assistant","reasoning_content":"think"})
        );
        assert_eq!(
            f[1]["choices"][0]["delta"],
            serde_json::json!({"content":"Hi \"x\""})
        );
        assert_eq!(
            f[2]["choices"][0],
            serde_json::json!({"index":0,"delta":{},"finish_reason":"stop"})
        );
        assert_eq!(f[3]["choices"], serde_json::json!([]));
        assert_eq!(f[3]["usage"]["total_tokens"], 3);
    }

    #[test]
    fn no_usage_chunk_unless_requested_and_known() {
        for (include, usage) in [(false, true), (true, false)] {
            let mut enc = encoder(include);
            let mut out = Vec::new();
            if usage {
                enc.encode(&Event::Usage(Usage::default()), &mut out);
            }
            enc.encode(&Event::Finish(FinishReason::Stop), &mut out);
            let f = frames(&out);
            assert_eq!(f.len(), 2, "role chunk and finish only");
            assert_eq!(
                f[0]["choices"][0]["delta"],
                serde_json::json!({"role":"assistant","content":""})
            );
        }
    }

    #[test]
    fn tool_calls_force_the_finish_reason() {
        let mut enc = encoder(false);
        let mut out = Vec::new();
        let call = ToolCall {
            index: 0,
            id: "call_a",
            name: "read",
            arguments: r#"{"path":"x"}"#,
        };
        enc.encode(&Event::ToolCall(call), &mut out);
        enc.encode(&Event::Finish(FinishReason::Stop), &mut out);
        let f = frames(&out);
        assert_eq!(
            f[0]["choices"][0]["delta"],
            serde_json::json!({"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"}}]})
        );
        assert_eq!(f[1]["choices"][0]["finish_reason"], "tool_calls");
        let mut enc = encoder(false);
        let mut out = Vec::new();
        enc.encode(&Event::Finish(FinishReason::ToolCalls), &mut out);
        assert_eq!(frames(&out)[1]["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn failure_is_an_error_frame_then_done() {
        let mut enc = encoder(false);
        let mut out = Vec::new();
        enc.encode(&Event::TextDelta("partial"), &mut out);
        enc.encode(
            &Event::Failed(Failure::new(FailureKind::AgentCrashed, "boom")),
            &mut out,
        );
        let f = frames(&out);
        assert_eq!(f[1]["error"]["message"], "boom");
        assert_eq!(f[1]["error"]["code"], "agent_crashed");
        assert!(enc.is_finished());
    }

    #[test]
    fn notes_start_on_their_own_line() {
        let mut enc = encoder(false);
        let mut out = Vec::new();
        enc.encode(&Event::ReasoningDelta("thinking"), &mut out);
        enc.encode(
            &Event::Progress(crate::event::Progress::Reconnected),
            &mut out,
        );
        enc.encode(&Event::Finish(FinishReason::Stop), &mut out);
        let f = frames(&out);
        assert_eq!(
            f[1]["choices"][0]["delta"]["reasoning_content"],
            "\n[cursor-agent] reconnected\n"
        );
    }
}
