//! A request that belongs to a conversation: the lease of its session in the
//! [`Registry`], what the answer adds to the session's transcript, and the one invisible
//! retry of a resumed chat the agent could not continue.

use crate::conversation::Conversation;
use crate::cursor::prompt::render_prompt;
use crate::cursor::{DecoderConfig, Invocation};
use crate::event::{Event, FinishReason};
use crate::registry::{AnswerDigest, Lease, Park, Registry};
use crate::tools::{ToolPlan, ToolStrategy};

/// What a conversation's request keeps besides the bridge's own state.
pub(super) struct InConversation {
    /// `None` when the conversation cannot be parked (conversations off, or a request
    /// ending in an assistant message).
    lease: Option<Lease>,
    /// What the client has been sent, as the session's transcript records it.
    answer: AnswerDigest,
    /// The client call ids sent.
    calls: Vec<String>,
    /// How the answer finished, once it has.
    finish: Option<FinishReason>,
    /// The answer failed (no finish), or the client left.
    failed: bool,
    /// The response id a later request may name (Responses).
    response_id: Option<String>,
    /// Set while this run resumes a chat and may still be retried fresh.
    resume: Option<Resumed>,
}

/// A run that resumes an agent's chat.
pub(super) struct Resumed {
    /// The chat resumed.
    chat: String,
    /// The fresh run, should the resume fail before any answer: the invocation without
    /// `--resume`, whose prompt is rendered when it is needed.
    fallback: Option<Box<Fallback>>,
}

struct Fallback {
    invocation: Invocation,
    conversation: Conversation,
    /// Whether the client's tools are offered (client mode), and how: the plan is made
    /// only if the fallback runs.
    client_mode: bool,
    strategy: ToolStrategy,
    decoder: DecoderConfig,
}

impl InConversation {
    pub(super) fn new(lease: Option<Lease>, response_id: Option<String>) -> InConversation {
        InConversation {
            lease,
            answer: AnswerDigest::default(),
            calls: Vec::new(),
            finish: None,
            failed: false,
            response_id,
            resume: None,
        }
    }

    /// Takes the request's lease and its response id.
    pub(super) fn adopt(&mut self, lease: Option<Lease>, response_id: Option<String>) {
        self.lease = lease;
        self.response_id = response_id;
    }

    /// This run resumes `chat`; `fresh` is what to run instead if the agent cannot.
    pub(super) fn resuming(
        &mut self,
        chat: String,
        fresh: Invocation,
        (conversation, client_mode, strategy): (Conversation, bool, ToolStrategy),
        decoder: DecoderConfig,
    ) {
        self.resume = Some(Resumed {
            chat,
            fallback: Some(Box::new(Fallback {
                invocation: fresh,
                conversation,
                client_mode,
                strategy,
                decoder,
            })),
        });
    }

    /// The chat this run resumes, while a retry is still possible.
    pub(super) fn retryable_chat(&self) -> Option<&str> {
        self.resume
            .as_ref()
            .filter(|r| r.fallback.is_some())
            .map(|r| r.chat.as_str())
    }

    /// An event on its way to the client: evidence that the resume worked (no retry
    /// after it), and part of the answer.
    pub(super) fn observe(&mut self, event: &Event<'_>) {
        if event.is_answer() {
            if let Some(resume) = &mut self.resume {
                resume.fallback = None;
            }
        }
        match event {
            Event::TextDelta(text) => self.answer.push_text(text),
            Event::ToolCall(call) => {
                self.answer.push_call(call.id, call.name, call.arguments);
                self.calls.push(call.id.to_owned());
            }
            Event::Finish(reason) => self.finish = Some(*reason),
            Event::Failed(_) => self.failed = true,
            _ => {}
        }
    }

    /// The fresh run that replaces a failed resume: its invocation, the prompt rendered
    /// now, and its decoder's settings. `None` once an answer event went to the client.
    pub(super) fn take_fallback(&mut self) -> Option<(Invocation, DecoderConfig)> {
        let fallback = self.resume.as_mut()?.fallback.take()?;
        let Fallback {
            mut invocation,
            conversation,
            client_mode,
            strategy,
            decoder,
        } = *fallback;
        let tools = if client_mode {
            conversation.tools.as_slice()
        } else {
            &[]
        };
        let plan = ToolPlan::new(tools, strategy);
        invocation.stdin = render_prompt(&conversation, &plan).into_bytes();
        self.resume = None;
        Some((invocation, decoder))
    }

    /// Whether the answer finished with calls of the client's tools.
    pub(super) fn ended_with_tool_calls(&self) -> bool {
        self.finish == Some(FinishReason::ToolCalls) && !self.failed
    }

    /// The client left: the session no longer matches what it has.
    pub(super) fn client_gone(&mut self) {
        self.failed = true;
    }

    /// Gives the lease back: parked with `chat` when the answer finished and reached the
    /// client, released otherwise. Returns whether it was parked.
    pub(super) fn settle(
        &mut self,
        chat: Option<&str>,
        registry: &mut Registry,
        now_ms: u64,
    ) -> bool {
        let Some(lease) = self.lease.take() else {
            return false;
        };
        let finished = !self.failed
            && matches!(
                self.finish,
                Some(FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Length)
            );
        match (finished, chat) {
            (true, Some(chat)) => {
                let pending: &[String] = if self.finish == Some(FinishReason::ToolCalls) {
                    &self.calls
                } else {
                    &[]
                };
                let park = Park {
                    answer: &self.answer,
                    agent_session: chat,
                    pending,
                    response_id: self.response_id.as_deref(),
                };
                // An answer that cannot follow its transcript is released by the registry.
                registry.park(lease, park, now_ms).is_ok()
            }
            _ => {
                registry.release(lease, now_ms);
                false
            }
        }
    }
}
