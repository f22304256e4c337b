//! `aw_event`: the neutral event model as one tagged C struct.

use std::ffi::c_char;

use super::names::{CEnum, mirrors, name_of};
use super::views::aw_str;
use crate::event::{
    ActivityPhase, AgentActivity, Event, EventKind, Failure, FailureKind, FinishReason, Progress,
    ProgressKind, ToolCall, ToolOutcome, Usage,
};

/// Which member of an `aw_event` is meaningful.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_event_kind {
    /// `text`: answer text, in order, recaps removed: concatenated, the deltas are the
    /// answer exactly once.
    TextDelta = 0,
    /// `text`: model reasoning ("thinking") text.
    ReasoningDelta = 1,
    /// `tool_call`: a call of one of the client's tools, for the client to execute.
    ToolCall = 2,
    /// `activity`: a tool the agent ran (or tried to run) itself. Never hand it to the
    /// client to execute.
    AgentActivity = 3,
    /// `progress`: the agent is alive but not answering yet (reconnects, retries).
    Progress = 4,
    /// `usage`: token usage as the agent reported it; never estimated.
    Usage = 5,
    /// `finish_reason`: the answer is complete.
    Finish = 6,
    /// `failure`: the answer failed; no finish follows.
    Failed = 7,
}

mirrors!(aw_event_kind => EventKind {
    TextDelta,
    ReasoningDelta,
    ToolCall,
    AgentActivity,
    Progress,
    Usage,
    Finish,
    Failed,
});

/// A call of one of the client's tools.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_tool_call {
    /// Position in this turn's list of calls, from 0.
    pub index: u32,
    /// The call id (`call_…`), safe in every dialect.
    pub id: aw_str,
    /// The client's tool name.
    pub name: aw_str,
    /// Arguments as JSON object text.
    pub arguments: aw_str,
}

/// The phase of an agent activity.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_activity_phase {
    /// The agent announced the call.
    Started = 0,
    /// The call finished (see `outcome`).
    Completed = 1,
}

/// How an agent-run tool call ended (`aw_tool_outcome_name` names a value).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_tool_outcome {
    /// Not ended yet (`AW_ACTIVITY_PHASE_STARTED`).
    None = 0,
    /// It ran.
    Success = 1,
    /// The agent's approval policy rejected it (headless runs cannot ask).
    Rejected = 2,
    /// It ran and failed.
    Error = 3,
    /// The operating system or a permission rule refused it.
    PermissionDenied = 4,
    /// The result had a shape not known here.
    Unknown = 5,
}

// `None` stands for no outcome yet: it has no core value.
mirrors!(aw_tool_outcome => ToolOutcome {
    Success,
    Rejected,
    Error,
    PermissionDenied,
    Unknown,
});

/// The name of an `aw_tool_outcome` value (`"permission_denied"` for
/// `AW_TOOL_OUTCOME_PERMISSION_DENIED`, `"none"` for `AW_TOOL_OUTCOME_NONE`), or NULL for
/// a number that is not one.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.2.
#[unsafe(no_mangle)]
pub extern "C" fn aw_tool_outcome_name(outcome: u32) -> *const c_char {
    if outcome == aw_tool_outcome::None as u32 {
        return c"none".as_ptr();
    }
    name_of::<aw_tool_outcome>(outcome)
}

/// A tool call the agent handled itself.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_agent_activity {
    /// The agent's own id for the call (may contain newlines; never an OpenAI id).
    pub call_id: aw_str,
    /// The tool's kind as the agent names it (`shell`, `read`, `edit`, `webFetch`, …).
    pub tool: aw_str,
    /// Started or completed.
    pub phase: aw_activity_phase,
    /// `AW_ACTIVITY_PHASE_COMPLETED`: how it ended.
    pub outcome: aw_tool_outcome,
    /// `AW_ACTIVITY_PHASE_COMPLETED`: whether a matching start was seen (a rejected web
    /// search may only complete).
    pub started_seen: bool,
    /// A short, single-line human description (`cat sample.txt`, `src/main.rs`).
    pub summary: aw_str,
    /// Whether `arguments` is known.
    pub has_arguments: bool,
    /// The call's arguments as JSON object text.
    pub arguments: aw_str,
    /// Whether `model_call_id` is known.
    pub has_model_call_id: bool,
    /// The agent's id of the model call that issued it; calls issued together share it.
    pub model_call_id: aw_str,
}

/// What kind of progress (`aw_progress_kind_name` names a value).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_progress_kind {
    /// The agent lost its connection and is reconnecting (`attempt` from 1).
    Reconnecting = 0,
    /// The connection is back.
    Reconnected = 1,
    /// The agent is retrying its request (`attempt` from 1).
    Retrying = 2,
}

mirrors!(aw_progress_kind => ProgressKind {
    Reconnecting,
    Reconnected,
    Retrying,
});

/// The name of an `aw_progress_kind` value (`"reconnecting"`, …), or NULL for a number
/// that is not one.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.2.
#[unsafe(no_mangle)]
pub extern "C" fn aw_progress_kind_name(kind: u32) -> *const c_char {
    name_of::<aw_progress_kind>(kind)
}

/// A progress note.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_progress {
    /// What happened.
    pub kind: aw_progress_kind,
    /// Reconnecting, retrying: the attempt number, from 1; 0 otherwise.
    pub attempt: u32,
}

/// Token usage (and cost, when reported) in the agent's own terms.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_usage {
    /// Fresh (uncached) input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Whether `reasoning_tokens` was reported (cursor-agent does not).
    pub has_reasoning_tokens: bool,
    /// Reasoning tokens.
    pub reasoning_tokens: u64,
    /// Whether `cost` was reported.
    pub has_cost: bool,
    /// The run's cost as the agent reported it, in its currency (usually US dollars).
    pub cost: f64,
    /// The whole prompt: fresh, cache-read and cache-written input.
    pub prompt_tokens: u64,
    /// Prompt plus output.
    pub total_tokens: u64,
}

/// Why an answer ended (`aw_finish_reason_name` names a value).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_finish_reason {
    /// The answer is complete.
    Stop = 0,
    /// An output limit cut it.
    Length = 1,
    /// It ends with client tool calls to execute.
    ToolCalls = 2,
    /// A content filter stopped it.
    ContentFilter = 3,
}

mirrors!(aw_finish_reason => FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
});

/// The name of an `aw_finish_reason` value (`"tool_calls"` for
/// `AW_FINISH_REASON_TOOL_CALLS`, …), or NULL for a number that is not one.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.2.
#[unsafe(no_mangle)]
pub extern "C" fn aw_finish_reason_name(reason: u32) -> *const c_char {
    name_of::<aw_finish_reason>(reason)
}

/// Classes of failure, from the client's point of view (`aw_failure_kind_name` names a
/// value).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_failure_kind {
    /// The request itself is invalid (HTTP 400).
    InvalidRequest = 0,
    /// The agent is not logged in (401).
    NotAuthenticated = 1,
    /// The requested model does not exist or is not available to this account (404).
    ModelUnavailable = 2,
    /// A rate limit was hit (429; retrying shortly may succeed).
    RateLimited = 3,
    /// The agent or the bridge is misconfigured; retrying will not help until someone
    /// fixes it (500).
    Misconfigured = 4,
    /// The agent could not reach its service (503).
    Unavailable = 5,
    /// The agent was silent for longer than the idle timeout (504).
    Timeout = 6,
    /// The agent reported an error result.
    AgentError = 7,
    /// The agent exited (or its output ended) without an answer (502).
    AgentCrashed = 8,
    /// The agent's output broke a limit or could not be understood.
    BadOutput = 9,
    /// The account's usage limit or quota is used up (429, not retryable).
    UsageLimit = 10,
}

mirrors!(aw_failure_kind => FailureKind {
    InvalidRequest,
    NotAuthenticated,
    ModelUnavailable,
    RateLimited,
    Misconfigured,
    Unavailable,
    Timeout,
    AgentError,
    AgentCrashed,
    BadOutput,
    UsageLimit,
});

/// The name of an `aw_failure_kind` value (`"usage_limit"` for
/// `AW_FAILURE_KIND_USAGE_LIMIT`: the enumerator's name after its prefix, in lower case),
/// or NULL for a number that is not one. The Rust API, the bindings and the examples name
/// the classes alike.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.2.
#[unsafe(no_mangle)]
pub extern "C" fn aw_failure_kind_name(kind: u32) -> *const c_char {
    name_of::<aw_failure_kind>(kind)
}

/// A failed answer.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_failure {
    /// The class, which decides the HTTP status and whether clients retry.
    pub kind: aw_failure_kind,
    /// A human message; says what to do when something can be done.
    pub message: aw_str,
}

/// One decoded event: `kind` says which member is meaningful; the others are zero or
/// empty. All strings are UTF-8 and not NUL-terminated.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_event {
    /// Which member is meaningful.
    pub kind: aw_event_kind,
    /// `AW_EVENT_KIND_TEXT_DELTA`, `AW_EVENT_KIND_REASONING_DELTA`: the text.
    pub text: aw_str,
    /// `AW_EVENT_KIND_TOOL_CALL`.
    pub tool_call: aw_tool_call,
    /// `AW_EVENT_KIND_AGENT_ACTIVITY`.
    pub activity: aw_agent_activity,
    /// `AW_EVENT_KIND_PROGRESS`.
    pub progress: aw_progress,
    /// `AW_EVENT_KIND_USAGE`.
    pub usage: aw_usage,
    /// `AW_EVENT_KIND_FINISH`.
    pub finish_reason: aw_finish_reason,
    /// `AW_EVENT_KIND_FAILED`.
    pub failure: aw_failure,
}

impl aw_event {
    const fn empty(kind: aw_event_kind) -> aw_event {
        aw_event {
            kind,
            text: aw_str::EMPTY,
            tool_call: aw_tool_call {
                index: 0,
                id: aw_str::EMPTY,
                name: aw_str::EMPTY,
                arguments: aw_str::EMPTY,
            },
            activity: aw_agent_activity {
                call_id: aw_str::EMPTY,
                tool: aw_str::EMPTY,
                phase: aw_activity_phase::Started,
                outcome: aw_tool_outcome::None,
                started_seen: false,
                summary: aw_str::EMPTY,
                has_arguments: false,
                arguments: aw_str::EMPTY,
                has_model_call_id: false,
                model_call_id: aw_str::EMPTY,
            },
            progress: aw_progress {
                kind: aw_progress_kind::Reconnecting,
                attempt: 0,
            },
            usage: aw_usage {
                input_tokens: 0,
                output_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                has_reasoning_tokens: false,
                reasoning_tokens: 0,
                has_cost: false,
                cost: 0.0,
                prompt_tokens: 0,
                total_tokens: 0,
            },
            finish_reason: aw_finish_reason::Stop,
            failure: aw_failure {
                kind: aw_failure_kind::InvalidRequest,
                message: aw_str::EMPTY,
            },
        }
    }

    /// The C view of `event`; its strings borrow from the event's own.
    pub(crate) fn of(event: &Event<'_>) -> aw_event {
        match event {
            Event::TextDelta(text) => aw_event {
                text: aw_str::of(text),
                ..aw_event::empty(aw_event_kind::TextDelta)
            },
            Event::ReasoningDelta(text) => aw_event {
                text: aw_str::of(text),
                ..aw_event::empty(aw_event_kind::ReasoningDelta)
            },
            Event::ToolCall(call) => aw_event {
                tool_call: tool_call(call),
                ..aw_event::empty(aw_event_kind::ToolCall)
            },
            Event::AgentActivity(activity) => aw_event {
                activity: agent_activity(activity),
                ..aw_event::empty(aw_event_kind::AgentActivity)
            },
            Event::Progress(progress) => aw_event {
                progress: self::progress(*progress),
                ..aw_event::empty(aw_event_kind::Progress)
            },
            Event::Usage(usage) => aw_event {
                usage: self::usage(usage),
                ..aw_event::empty(aw_event_kind::Usage)
            },
            Event::Finish(reason) => aw_event {
                finish_reason: aw_finish_reason::of(*reason),
                ..aw_event::empty(aw_event_kind::Finish)
            },
            Event::Failed(failure) => aw_event::failed(failure),
        }
    }

    /// The C view of a failure event; its message borrows from `failure`.
    pub(crate) fn failed(failure: &Failure) -> aw_event {
        aw_event {
            failure: aw_failure {
                kind: aw_failure_kind::of(failure.kind),
                message: aw_str::of(&failure.message),
            },
            ..aw_event::empty(aw_event_kind::Failed)
        }
    }
}

fn tool_call(call: &ToolCall<'_>) -> aw_tool_call {
    let ToolCall {
        index,
        id,
        name,
        arguments,
    } = call;
    aw_tool_call {
        index: *index,
        id: aw_str::of(id),
        name: aw_str::of(name),
        arguments: aw_str::of(arguments),
    }
}

fn agent_activity(activity: &AgentActivity<'_>) -> aw_agent_activity {
    let AgentActivity {
        call_id,
        tool,
        phase,
        summary,
        arguments,
        model_call_id,
    } = activity;
    let (phase, outcome, started_seen) = match *phase {
        ActivityPhase::Started => (aw_activity_phase::Started, aw_tool_outcome::None, true),
        ActivityPhase::Completed {
            outcome,
            started_seen,
        } => (
            aw_activity_phase::Completed,
            aw_tool_outcome::of(outcome),
            started_seen,
        ),
    };
    aw_agent_activity {
        call_id: aw_str::of(call_id),
        tool: aw_str::of(tool),
        phase,
        outcome,
        started_seen,
        summary: aw_str::of(summary),
        has_arguments: arguments.is_some(),
        arguments: arguments.map_or(aw_str::EMPTY, aw_str::of),
        has_model_call_id: model_call_id.is_some(),
        model_call_id: model_call_id.map_or(aw_str::EMPTY, aw_str::of),
    }
}

fn progress(progress: Progress) -> aw_progress {
    let attempt = match progress {
        Progress::Reconnecting { attempt } | Progress::Retrying { attempt } => attempt,
        Progress::Reconnected => 0,
    };
    aw_progress {
        kind: aw_progress_kind::of(progress.kind()),
        attempt,
    }
}

fn usage(usage: &Usage) -> aw_usage {
    let Usage {
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_write_tokens,
        reasoning_tokens,
        cost,
    } = *usage;
    aw_usage {
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_write_tokens,
        has_reasoning_tokens: reasoning_tokens.is_some(),
        reasoning_tokens: reasoning_tokens.unwrap_or(0),
        has_cost: cost.is_some(),
        cost: cost.unwrap_or(0.0),
        prompt_tokens: usage.prompt_tokens(),
        total_tokens: usage.total_tokens(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn str_of(view: aw_str) -> &'static str {
        // SAFETY: test views point into strings that outlive the test's assertions.
        unsafe { std::str::from_utf8(std::slice::from_raw_parts(view.data.cast(), view.len)) }
            .unwrap()
    }

    #[test]
    fn usage_keeps_every_count_and_the_cost() {
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 4,
            cache_read_tokens: 5,
            cache_write_tokens: 6,
            reasoning_tokens: Some(2),
            cost: Some(0.25),
        };
        let view = aw_event::of(&Event::Usage(usage));
        assert_eq!(view.kind, aw_event_kind::Usage);
        let u = view.usage;
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens
            ),
            (3, 4, 5, 6)
        );
        assert!(u.has_reasoning_tokens && u.reasoning_tokens == 2);
        assert!(u.has_cost && u.cost == 0.25);
        assert_eq!((u.prompt_tokens, u.total_tokens), (14, 18));
        let unreported = aw_event::of(&Event::Usage(Usage::default())).usage;
        assert!(!unreported.has_cost && !unreported.has_reasoning_tokens);
    }

    #[test]
    fn activity_and_tool_call_views() {
        let activity = AgentActivity {
            call_id: "c1",
            tool: "webFetch",
            phase: ActivityPhase::Completed {
                outcome: ToolOutcome::Rejected,
                started_seen: false,
            },
            summary: "",
            arguments: None,
            model_call_id: Some("m1"),
        };
        let a = aw_event::of(&Event::AgentActivity(activity)).activity;
        assert_eq!(a.phase, aw_activity_phase::Completed);
        assert_eq!(a.outcome, aw_tool_outcome::Rejected);
        assert!(!a.started_seen && !a.has_arguments && a.has_model_call_id);
        assert_eq!(str_of(a.model_call_id), "m1");
        assert!(!a.arguments.data.is_null());
        let call = ToolCall {
            index: 2,
            id: "call_1",
            name: "bash",
            arguments: "{}",
        };
        let c = aw_event::of(&Event::ToolCall(call)).tool_call;
        assert_eq!(
            (c.index, str_of(c.name), str_of(c.arguments)),
            (2, "bash", "{}")
        );
    }
}
