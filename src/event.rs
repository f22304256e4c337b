//! The neutral event model every input and output dialect meets at.
//!
//! The cursor-agent decoder produces [`Event`]s; every API dialect's response writers (an
//! [`api::StreamEncoder`](crate::api::StreamEncoder) or
//! [`api::BodyBuilder`](crate::api::BodyBuilder)) consume them. Events borrow their text
//! from the producer, so handing one over allocates nothing; copy what you keep.

use std::fmt;

use crate::names::named;

/// One thing that happened in the agent's answer.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// Answer text, in order. Recaps are already removed: concatenated, the deltas are the
    /// answer exactly once.
    TextDelta(&'a str),
    /// Model reasoning ("thinking") text.
    ReasoningDelta(&'a str),
    /// A call of one of the **client's** tools that the client must execute. Produced only
    /// in client mode; indices of one turn are contiguous from 0.
    ToolCall(ToolCall<'a>),
    /// A tool the agent ran (or tried to run) itself. Informational only: it must never be
    /// handed to the client as something to execute.
    AgentActivity(AgentActivity<'a>),
    /// Liveness and progress notes (reconnects, retries).
    Progress(Progress),
    /// Token usage as reported by the agent. Never estimated: absent when not reported.
    Usage(Usage),
    /// The answer is complete.
    Finish(FinishReason),
    /// The answer failed; no [`Finish`](Event::Finish) follows.
    Failed(Failure),
}

impl Event<'_> {
    /// Which kind of event this is.
    #[must_use]
    pub fn kind(&self) -> EventKind {
        match self {
            Event::TextDelta(_) => EventKind::TextDelta,
            Event::ReasoningDelta(_) => EventKind::ReasoningDelta,
            Event::ToolCall(_) => EventKind::ToolCall,
            Event::AgentActivity(_) => EventKind::AgentActivity,
            Event::Progress(_) => EventKind::Progress,
            Event::Usage(_) => EventKind::Usage,
            Event::Finish(_) => EventKind::Finish,
            Event::Failed(_) => EventKind::Failed,
        }
    }

    /// Whether this event is evidence that the agent is producing an answer (as opposed to
    /// progress notes). The bridge commits a streaming response's head at the first one.
    pub fn is_answer(&self) -> bool {
        !matches!(
            self,
            Event::Progress(_) | Event::Usage(_) | Event::Failed(_)
        )
    }
}

/// The kinds of [`Event`]: an event's variant without its data.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// [`Event::TextDelta`].
    TextDelta,
    /// [`Event::ReasoningDelta`].
    ReasoningDelta,
    /// [`Event::ToolCall`].
    ToolCall,
    /// [`Event::AgentActivity`].
    AgentActivity,
    /// [`Event::Progress`].
    Progress,
    /// [`Event::Usage`].
    Usage,
    /// [`Event::Finish`].
    Finish,
    /// [`Event::Failed`].
    Failed,
}

named!(EventKind, "event kind" {
    TextDelta => "text_delta",
    ReasoningDelta => "reasoning_delta",
    ToolCall => "tool_call",
    AgentActivity => "agent_activity",
    Progress => "progress",
    Usage => "usage",
    Finish => "finish",
    Failed => "failed",
});

/// A client tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall<'a> {
    /// Position in this turn's list of calls, from 0.
    pub index: u32,
    /// The call id: `call_` and 24 hex digits, safe in every dialect
    /// (`^[a-zA-Z0-9_-]+$`) and stable across a conversation's requests.
    pub id: &'a str,
    /// The client's tool name.
    pub name: &'a str,
    /// The input: arguments as JSON object text for a function tool; the raw text for a
    /// freeform one (see the tool's [`ToolKind`](crate::conversation::ToolKind)).
    pub arguments: &'a str,
}

/// A tool call the agent handled itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentActivity<'a> {
    /// The agent's own id for the call (may contain newlines; never a client's call id).
    pub call_id: &'a str,
    /// The tool's kind as the agent names it (`shell`, `read`, `edit`, `webFetch`, …).
    pub tool: &'a str,
    /// Whether the call started or finished.
    pub phase: ActivityPhase,
    /// A short, single-line human description (`cat sample.txt`, `src/main.rs`).
    pub summary: &'a str,
    /// The call's arguments as JSON object text, when known (from this event or cached
    /// from the call's start).
    pub arguments: Option<&'a str>,
    /// The agent's id of the model call that issued it; calls issued together (in
    /// parallel) share it.
    pub model_call_id: Option<&'a str>,
}

/// The phase of an [`AgentActivity`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityPhase {
    /// The agent announced the call.
    Started,
    /// The call finished with this outcome. `started_seen` is false when the agent never
    /// announced it (it happens: a rejected web search may only complete).
    Completed {
        /// How it ended.
        outcome: ToolOutcome,
        /// Whether a matching start was seen.
        started_seen: bool,
    },
}

/// How an agent-run tool call ended.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolOutcome {
    /// It ran.
    Success,
    /// The agent's approval policy rejected it (headless runs cannot ask).
    Rejected,
    /// It ran and failed.
    Error,
    /// The operating system or a permission rule refused it.
    PermissionDenied,
    /// The result had a shape not known here.
    Unknown,
}

named!(ToolOutcome, "tool outcome" {
    Success => "success",
    Rejected => "rejected",
    Error => "error",
    PermissionDenied => "permission_denied",
    Unknown => "unknown",
});

impl ToolOutcome {
    /// A lower-case word for the outcome, for a person to read in an activity note (its
    /// stable name is [`name`](Self::name)).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolOutcome::Success => "done",
            ToolOutcome::Rejected => "rejected",
            ToolOutcome::Error => "failed",
            ToolOutcome::PermissionDenied => "permission denied",
            ToolOutcome::Unknown => "finished",
        }
    }
}

/// Progress notes: the agent is alive but not answering yet.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The agent lost its connection and is reconnecting (`attempt` from 1).
    Reconnecting {
        /// Attempt number.
        attempt: u32,
    },
    /// The connection is back.
    Reconnected,
    /// The agent is retrying its request (`attempt` from 1).
    Retrying {
        /// Attempt number.
        attempt: u32,
    },
}

impl Progress {
    /// Which kind of progress this is.
    #[must_use]
    pub fn kind(self) -> ProgressKind {
        match self {
            Progress::Reconnecting { .. } => ProgressKind::Reconnecting,
            Progress::Reconnected => ProgressKind::Reconnected,
            Progress::Retrying { .. } => ProgressKind::Retrying,
        }
    }
}

/// The kinds of [`Progress`]: a note's variant without its attempt number.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProgressKind {
    /// [`Progress::Reconnecting`].
    Reconnecting,
    /// [`Progress::Reconnected`].
    Reconnected,
    /// [`Progress::Retrying`].
    Retrying,
}

named!(ProgressKind, "progress kind" {
    Reconnecting => "reconnecting",
    Reconnected => "reconnected",
    Retrying => "retrying",
});

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Progress::Reconnecting { attempt } => write!(f, "reconnecting (attempt {attempt})"),
            Progress::Reconnected => f.write_str("reconnected"),
            Progress::Retrying { attempt } => write!(f, "retrying (attempt {attempt})"),
        }
    }
}

/// Token usage (and cost, when reported) in the agent's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Fresh (uncached) input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Reasoning tokens, only when the agent reports them (cursor-agent does not).
    pub reasoning_tokens: Option<u64>,
    /// The run's cost as the agent reported it (`cost`, `totalCost` or `total_cost`, in
    /// its currency, usually US dollars). Never estimated: `None` when not reported.
    pub cost: Option<f64>,
}

impl Usage {
    /// The whole prompt: fresh, cache-read and cache-written input.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// Prompt plus output.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens().saturating_add(self.output_tokens)
    }
}

/// Why an answer ended.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The answer is complete.
    Stop,
    /// An output limit cut it.
    Length,
    /// It ends with client tool calls to execute.
    ToolCalls,
    /// A content filter stopped it.
    ContentFilter,
}

named!(FinishReason, "finish reason" {
    Stop => "stop",
    Length => "length",
    ToolCalls => "tool_calls",
    ContentFilter => "content_filter",
});

/// A failed answer: what class of failure, and a message for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The class, which decides the HTTP status and whether clients retry.
    pub kind: FailureKind,
    /// A human message; says what to do when something can be done.
    pub message: String,
}

impl Failure {
    /// A failure of `kind` with `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Classes of failure, from the client's point of view.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The request itself is invalid.
    InvalidRequest,
    /// The agent is not logged in.
    NotAuthenticated,
    /// The requested model does not exist or is not available to this account.
    ModelUnavailable,
    /// A rate limit was hit: retrying shortly may succeed.
    RateLimited,
    /// The agent or the bridge is misconfigured (untrusted workspace, unknown option,
    /// missing binary); retrying will not help until someone fixes it.
    Misconfigured,
    /// The agent could not reach its service (reconnects and retries exhausted).
    Unavailable,
    /// The agent was silent for longer than the idle timeout.
    Timeout,
    /// The agent reported an error result.
    AgentError,
    /// The agent exited (or its output ended) without an answer.
    AgentCrashed,
    /// The agent's output broke a limit or could not be understood.
    BadOutput,
    /// The account's usage limit or quota is used up: retrying before it resets (or the
    /// plan changes) will not help, so clients are told not to retry.
    UsageLimit,
}

named!(FailureKind, "failure kind" {
    InvalidRequest => "invalid_request",
    NotAuthenticated => "not_authenticated",
    ModelUnavailable => "model_unavailable",
    RateLimited => "rate_limited",
    Misconfigured => "misconfigured",
    Unavailable => "unavailable",
    Timeout => "timeout",
    AgentError => "agent_error",
    AgentCrashed => "agent_crashed",
    BadOutput => "bad_output",
    UsageLimit => "usage_limit",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_the_variants() {
        let events = [
            (Event::TextDelta("a"), "text_delta"),
            (Event::ReasoningDelta("a"), "reasoning_delta"),
            (
                Event::ToolCall(ToolCall {
                    index: 0,
                    id: "call_1",
                    name: "bash",
                    arguments: "{}",
                }),
                "tool_call",
            ),
            (
                Event::AgentActivity(AgentActivity {
                    call_id: "c",
                    tool: "shell",
                    phase: ActivityPhase::Started,
                    summary: "",
                    arguments: None,
                    model_call_id: None,
                }),
                "agent_activity",
            ),
            (Event::Progress(Progress::Reconnected), "progress"),
            (Event::Usage(Usage::default()), "usage"),
            (Event::Finish(FinishReason::Stop), "finish"),
            (
                Event::Failed(Failure::new(FailureKind::Timeout, "slow")),
                "failed",
            ),
        ];
        let kinds: Vec<EventKind> = events.iter().map(|(event, _)| event.kind()).collect();
        assert_eq!(kinds, EventKind::ALL);
        for (event, name) in &events {
            assert_eq!(event.kind().name(), *name);
        }
        let notes = [
            Progress::Reconnecting { attempt: 1 },
            Progress::Reconnected,
            Progress::Retrying { attempt: 2 },
        ];
        let kinds: Vec<&str> = notes.iter().map(|p| p.kind().name()).collect();
        assert_eq!(kinds, ["reconnecting", "reconnected", "retrying"]);
    }
}
