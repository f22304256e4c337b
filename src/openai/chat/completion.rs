//! Events → one `chat.completion` body (non-streaming responses).

use super::options::{OutputOptions, ResponseMeta};
use super::wire::{finish_reason, write_usage};
use crate::api::json::{write_str, write_u64};
use crate::api::notes::{activity_note, progress_note};
use crate::api::{BodyBuilder, ErrorReply};
use crate::event::{Event, Failure, FinishReason, Usage};
use crate::openai::ApiError;

/// Assembles a non-streaming response from the same events a stream is made of, as they
/// arrive (no raw output is buffered), and writes the body at the end.
///
/// `message.content` is the text (`null` when the answer is only tool calls),
/// reasoning goes in the configured field when there is any, `message.tool_calls` lists the
/// client tool calls, `usage` appears when the agent reported it.
///
/// The text is exactly what a stream of the same run carries: the decoder's text deltas,
/// recaps removed, plus the tail that `result.result` showed missing (reconciliation). When
/// the streamed text and `result.result` disagree otherwise (never seen in a real capture;
/// counted in [`DecoderStats::divergences`](crate::cursor::DecoderStats::divergences)), the
/// body keeps the streamed text and never appends `result.result` to it: appending is how
/// text gets doubled, the streamed text is what the agent actually produced token by
/// token, and in client mode it is the text after tool envelopes were taken out of it,
/// which `result.result` still contains.
#[derive(Debug)]
pub struct CompletionBuilder {
    meta: ResponseMeta,
    options: OutputOptions,
    content: String,
    reasoning: String,
    tool_calls: Vec<OwnedToolCall>,
    usage: Option<Usage>,
    outcome: Option<Result<FinishReason, Failure>>,
}

#[derive(Debug)]
struct OwnedToolCall {
    id: String,
    name: String,
    arguments: String,
}

impl CompletionBuilder {
    /// A builder for one response.
    pub fn new(meta: &ResponseMeta, options: &OutputOptions) -> Self {
        CompletionBuilder {
            meta: meta.clone(),
            options: options.clone(),
            content: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
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
        let notes = self.options.activity_notes && self.options.reasoning.key().is_some();
        match event {
            Event::TextDelta(text) => self.content.push_str(text),
            Event::ReasoningDelta(text) => self.reasoning.push_str(text),
            Event::ToolCall(call) => self.tool_calls.push(OwnedToolCall {
                id: call.id.to_owned(),
                name: call.name.to_owned(),
                arguments: call.arguments.to_owned(),
            }),
            Event::AgentActivity(activity) if notes => {
                self.note_line_start();
                activity_note(activity, &mut self.reasoning);
            }
            Event::Progress(progress) if notes => {
                self.note_line_start();
                progress_note(progress, &mut self.reasoning);
            }
            Event::AgentActivity(_) | Event::Progress(_) => {}
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish(reason) => self.outcome = Some(Ok(*reason)),
            Event::Failed(failure) => self.outcome = Some(Err(failure.clone())),
        }
    }

    fn note_line_start(&mut self) {
        if !self.reasoning.is_empty() && !self.reasoning.ends_with('\n') {
            self.reasoning.push('\n');
        }
    }

    /// The HTTP status of the body [`write_body`](Self::write_body) produces: 200, or the
    /// failure's status.
    pub fn status(&self) -> u16 {
        match self.failure() {
            Some(failure) => ErrorReply::from_failure(failure).status(),
            None => 200,
        }
    }

    /// Appends the response body: the completion, or the OpenAI error body when the
    /// answer failed.
    pub fn write_body(&self, out: &mut Vec<u8>) {
        if let Some(failure) = self.failure() {
            ApiError::from(&ErrorReply::from_failure(failure)).write_json(out);
            return;
        }
        let reason = match self.outcome {
            Some(Ok(_)) if !self.tool_calls.is_empty() => FinishReason::ToolCalls,
            Some(Ok(FinishReason::ToolCalls)) => FinishReason::Stop,
            Some(Ok(reason)) => reason,
            _ => FinishReason::Stop,
        };
        // The text dominates the body: room for it up front, so the buffer is not regrown
        // (and copied) while the text is written.
        out.reserve(self.content.len() + self.reasoning.len() + 1024);
        out.extend_from_slice(b"{\"id\":");
        write_str(out, &self.meta.id);
        out.extend_from_slice(b",\"object\":\"chat.completion\",\"created\":");
        write_u64(out, self.meta.created);
        out.extend_from_slice(b",\"model\":");
        write_str(out, &self.meta.model);
        out.extend_from_slice(
            b",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":",
        );
        if self.content.is_empty() && !self.tool_calls.is_empty() {
            out.extend_from_slice(b"null");
        } else {
            write_str(out, &self.content);
        }
        if let Some(key) = self
            .options
            .reasoning
            .key()
            .filter(|_| !self.reasoning.is_empty())
        {
            out.push(b',');
            write_str(out, key);
            out.push(b':');
            write_str(out, &self.reasoning);
        }
        if !self.tool_calls.is_empty() {
            out.extend_from_slice(b",\"tool_calls\":[");
            for (i, call) in self.tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"id\":");
                write_str(out, &call.id);
                out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
                write_str(out, &call.name);
                out.extend_from_slice(b",\"arguments\":");
                write_str(out, &call.arguments);
                out.extend_from_slice(b"}}");
            }
            out.push(b']');
        }
        out.extend_from_slice(b"},\"logprobs\":null,\"finish_reason\":\"");
        out.extend_from_slice(finish_reason(reason).as_bytes());
        out.extend_from_slice(b"\"}]");
        if let Some(usage) = &self.usage {
            out.extend_from_slice(b",\"usage\":");
            write_usage(out, usage);
        }
        out.push(b'}');
    }
}

impl BodyBuilder for CompletionBuilder {
    fn push(&mut self, event: &Event<'_>) {
        CompletionBuilder::push(self, event);
    }

    fn is_finished(&self) -> bool {
        CompletionBuilder::is_finished(self)
    }

    fn failure(&self) -> Option<&Failure> {
        CompletionBuilder::failure(self)
    }

    fn write_body(&self, out: &mut Vec<u8>) {
        CompletionBuilder::write_body(self, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{FailureKind, ToolCall};

    fn builder() -> CompletionBuilder {
        let meta = ResponseMeta {
            id: "chatcmpl-1".into(),
            created: 7,
            model: "auto".into(),
        };
        CompletionBuilder::new(&meta, &OutputOptions::default())
    }

    fn body(b: &CompletionBuilder) -> serde_json::Value {
        let mut out = Vec::new();
        b.write_body(&mut out);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn text_body() {
        let mut b = builder();
        b.push(&Event::ReasoningDelta("r"));
        b.push(&Event::TextDelta("He"));
        b.push(&Event::TextDelta("llo"));
        b.push(&Event::Usage(Usage {
            input_tokens: 1,
            output_tokens: 1,
            ..Usage::default()
        }));
        b.push(&Event::Finish(FinishReason::Stop));
        assert_eq!(b.status(), 200);
        assert_eq!(
            body(&b),
            serde_json::json!({"id":"chatcmpl-1","object":"chat.completion","created":7,"model":"auto",
                "choices":[{"index":0,"message":{"role":"assistant","content":"Hello","reasoning_content":"r"},
                            "logprobs":null,"finish_reason":"stop"}],
                "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":0}}})
        );
    }

    #[test]
    fn tool_call_body() {
        let mut b = builder();
        b.push(&Event::ToolCall(ToolCall {
            index: 0,
            id: "call_1",
            name: "bash",
            arguments: "{}",
        }));
        b.push(&Event::Finish(FinishReason::Stop));
        let v = body(&b);
        assert!(v["choices"][0]["message"]["content"].is_null());
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "bash"
        );
        assert!(v.get("usage").is_none());
    }

    #[test]
    fn failure_body() {
        let mut b = builder();
        b.push(&Event::Failed(Failure::new(
            FailureKind::NotAuthenticated,
            "log in",
        )));
        assert_eq!(b.status(), 401);
        assert_eq!(body(&b)["error"]["message"], "log in");
    }
}
