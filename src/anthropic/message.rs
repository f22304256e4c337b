//! Events → one `message` body (non-streaming responses).

use super::options::{OutputOptions, ResponseMeta};
use super::wire::{input_json, stop_reason, write_message_head, write_tool_use_head, write_usage};
use crate::api::BodyBuilder;
use crate::api::json::write_str;
use crate::api::notes::{activity_note, note_on_own_line, progress_note};
use crate::event::{Event, Failure, FinishReason, Usage};

/// Assembles a non-streaming Messages response from the same events a stream is made of,
/// as they arrive, and writes the `message` object at the end.
///
/// Its `content` holds the same blocks, in the same order, as the stream of the same
/// events ([`MessageStreamEncoder`](super::MessageStreamEncoder)): consecutive text as one
/// `text` block, consecutive reasoning (and notes) as one `thinking` block with
/// `"signature":""` when thinking is shown, each client tool call as a `tool_use` block
/// whose `input` is the call's arguments object. `stop_reason` and `usage` follow the
/// stream's rules; without a usage report, `usage` is `input_tokens` and
/// `output_tokens` zeros, the two fields the clients require. A failed answer has no
/// body: the bridge sends the Anthropic error body with the failure's status.
#[derive(Debug)]
pub struct MessageBuilder {
    meta: ResponseMeta,
    options: OutputOptions,
    blocks: Vec<Block>,
    tool_calls: usize,
    usage: Option<Usage>,
    outcome: Option<Result<FinishReason, Failure>>,
}

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking(String),
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
}

impl MessageBuilder {
    /// A builder for one response.
    pub fn new(meta: &ResponseMeta, options: &OutputOptions) -> Self {
        MessageBuilder {
            meta: meta.clone(),
            options: *options,
            blocks: Vec::new(),
            tool_calls: 0,
            usage: None,
            outcome: None,
        }
    }

    /// Whether a `Finish` or `Failed` event arrived.
    pub fn is_finished(&self) -> bool {
        self.outcome.is_some()
    }

    /// The failure, if the answer failed.
    pub fn failure(&self) -> Option<&Failure> {
        self.outcome.as_ref().and_then(|o| o.as_ref().err())
    }

    /// Takes in one event. Events after the answer finished are ignored.
    pub fn push(&mut self, event: &Event<'_>) {
        if self.outcome.is_some() {
            return;
        }
        let notes = self.options.thinking && self.options.activity_notes;
        match event {
            Event::TextDelta(text) => self.text(text),
            Event::ReasoningDelta(text) if self.options.thinking => self.thinking(text),
            Event::ToolCall(call) => {
                self.blocks.push(Block::ToolUse {
                    id: call.id.to_owned(),
                    name: call.name.to_owned(),
                    input: input_json(call.arguments).to_owned(),
                });
                self.tool_calls += 1;
            }
            Event::AgentActivity(activity) if notes => {
                self.note_with(|note| activity_note(activity, note));
            }
            Event::Progress(progress) if notes => {
                self.note_with(|note| progress_note(progress, note));
            }
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish(reason) => self.outcome = Some(Ok(*reason)),
            Event::Failed(failure) => self.outcome = Some(Err(failure.clone())),
            // Not shown.
            Event::ReasoningDelta(_) | Event::AgentActivity(_) | Event::Progress(_) => {}
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.blocks.last_mut() {
            Some(Block::Text(open)) => open.push_str(text),
            _ => self.blocks.push(Block::Text(text.to_owned())),
        }
    }

    /// Appends reasoning to the last block, opening a thinking block unless it is one.
    fn thinking(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.blocks.last_mut() {
            Some(Block::Thinking(open)) => open.push_str(text),
            _ => self.blocks.push(Block::Thinking(text.to_owned())),
        }
    }

    /// Appends a note as reasoning, on a line of its own; nothing when it renders empty.
    fn note_with(&mut self, render: impl FnOnce(&mut String)) {
        let line_break =
            matches!(self.blocks.last(), Some(Block::Thinking(open)) if !open.ends_with('\n'));
        let mut note = String::new();
        if note_on_own_line(&mut note, line_break, render) {
            self.thinking(&note);
        }
    }

    /// Appends the `message` object of the successful answer.
    pub fn write_body(&self, out: &mut Vec<u8>) {
        let reason = match self.outcome {
            Some(Ok(reason)) => reason,
            _ => FinishReason::Stop,
        };
        // The text dominates the body: room for it up front.
        let text: usize = self
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) | Block::Thinking(t) => t.len(),
                Block::ToolUse { input, .. } => input.len(),
            })
            .sum();
        out.reserve(text + 512);
        write_message_head(out, &self.meta);
        for (i, block) in self.blocks.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                Block::Text(text) => {
                    out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                    write_str(out, text);
                    out.push(b'}');
                }
                Block::Thinking(text) => {
                    out.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":");
                    write_str(out, text);
                    out.extend_from_slice(b",\"signature\":\"\"}");
                }
                Block::ToolUse { id, name, input } => {
                    write_tool_use_head(out, id, name);
                    write_input(out, input);
                    out.push(b'}');
                }
            }
        }
        out.extend_from_slice(b"],\"stop_reason\":\"");
        out.extend_from_slice(stop_reason(reason, self.tool_calls > 0).as_bytes());
        out.extend_from_slice(b"\",\"stop_sequence\":null,\"usage\":");
        write_usage(out, self.usage.as_ref(), true);
        out.push(b'}');
    }
}

/// Appends a call's arguments as the `input` object. The bridge hands over arguments
/// that are a JSON object; anything else (never seen) is sent as `{}` rather than
/// breaking the body.
fn write_input(out: &mut Vec<u8>, input: &str) {
    let is_object = input.trim_start().starts_with('{')
        && serde_json::from_str::<&serde_json::value::RawValue>(input).is_ok();
    out.extend_from_slice(if is_object { input.trim() } else { "{}" }.as_bytes());
}

impl BodyBuilder for MessageBuilder {
    fn push(&mut self, event: &Event<'_>) {
        MessageBuilder::push(self, event);
    }

    fn is_finished(&self) -> bool {
        MessageBuilder::is_finished(self)
    }

    fn failure(&self) -> Option<&Failure> {
        MessageBuilder::failure(self)
    }

    fn write_body(&self, out: &mut Vec<u8>) {
        MessageBuilder::write_body(self, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FailureKind, ToolCall};

    fn body(options: OutputOptions, events: &[Event<'_>]) -> serde_json::Value {
        let meta = ResponseMeta {
            id: "msg_1".into(),
            model: "claude-x".into(),
        };
        let mut builder = MessageBuilder::new(&meta, &options);
        for event in events {
            builder.push(event);
        }
        assert!(builder.is_finished() && builder.failure().is_none());
        let mut out = Vec::new();
        builder.write_body(&mut out);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn text_body() {
        let v = body(
            OutputOptions::default(),
            &[
                Event::ReasoningDelta("hidden"),
                Event::TextDelta("He"),
                Event::TextDelta("llo"),
                Event::Finish(FinishReason::Stop),
            ],
        );
        assert_eq!(
            v,
            serde_json::json!({"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
                "content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,
                "usage":{"input_tokens":0,"output_tokens":0}})
        );
    }

    #[test]
    fn thinking_text_and_tool_use_in_order() {
        let options = OutputOptions {
            thinking: true,
            activity_notes: true,
        };
        let v = body(
            options,
            &[
                Event::ReasoningDelta("a"),
                Event::Progress(crate::event::Progress::Reconnected),
                Event::TextDelta("t"),
                Event::ToolCall(ToolCall {
                    index: 0,
                    id: "call_1",
                    name: "Bash",
                    arguments: r#" {"command":"ls"} "#,
                }),
                Event::ToolCall(ToolCall {
                    index: 1,
                    id: "call_2",
                    name: "Bash",
                    arguments: "",
                }),
                Event::Usage(Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    cache_read_tokens: 3,
                    cache_write_tokens: 4,
                    ..Usage::default()
                }),
                Event::Finish(FinishReason::Stop),
            ],
        );
        assert_eq!(
            v["content"],
            serde_json::json!([
                {"type":"thinking","thinking":"a\n[cursor-agent] reconnected\n","signature":""},
                {"type":"text","text":"t"},
                {"type":"tool_use","id":"call_1","name":"Bash","input":{"command":"ls"}},
                {"type":"tool_use","id":"call_2","name":"Bash","input":{}}
            ])
        );
        assert_eq!(v["stop_reason"], "tool_use");
        assert_eq!(
            v["usage"],
            serde_json::json!({"input_tokens":1,"cache_creation_input_tokens":4,"cache_read_input_tokens":3,"output_tokens":2})
        );
    }

    #[test]
    fn malformed_input_never_breaks_the_body() {
        let mut out = Vec::new();
        write_input(&mut out, "[1]");
        write_input(&mut out, "{\"a\":");
        write_input(&mut out, "{\"a\":1}");
        assert_eq!(out, b"{}{}{\"a\":1}");
    }

    #[test]
    fn failure_is_kept_for_the_bridge() {
        let meta = ResponseMeta::new(1, "m");
        let mut builder = MessageBuilder::new(&meta, &OutputOptions::default());
        builder.push(&Event::TextDelta("x"));
        builder.push(&Event::Failed(Failure::new(FailureKind::Timeout, "slow")));
        builder.push(&Event::Finish(FinishReason::Stop));
        assert_eq!(
            builder.failure().map(|f| f.kind),
            Some(FailureKind::Timeout)
        );
    }
}
