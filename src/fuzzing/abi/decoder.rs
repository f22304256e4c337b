//! `aw_decoder` calls, each made on the handle and on a Rust [`Decoder`] in lockstep: the
//! same results, events, counters, session id and model.

use arbitrary::Arbitrary;

use super::views::{OutParam, Owner, ValidUntil, assert_empty_str, c_string, text};
use super::{Books, Pass, SLOTS, Stdout, World, check_result, misuse, null_out};
use crate::cursor::{Decoder, DecoderConfig, DecoderError};
use crate::event::{ActivityPhase, Event, FailureKind, FinishReason, Progress, ToolOutcome, Usage};
use crate::ffi::decoder::*;
use crate::ffi::event::*;
use crate::ffi::result::aw_result;
use crate::ffi::test_hooks::aw_decoder_test_panic;
use crate::ffi::views::aw_str;

/// Polls in a row before `Drain` gives up: `aw_decoder_poll_event` must run dry.
const MAX_POLLS: usize = 100_000;

/// A decoder handle, the Rust decoder it must behave as, and what was polled from it.
pub(super) struct Slot {
    ptr: *mut aw_decoder,
    shadow: Decoder,
    pub(super) books: Books,
    transcript: &'static [u8],
    offset: usize,
    failed: bool,
    /// `aw_decoder_push_eof` returned OK.
    eof: bool,
    /// `aw_decoder_poll_event` returned DRAINED since the end of stdout.
    drained_after_eof: bool,
}

/// A call on a decoder.
#[derive(Debug, Clone, Arbitrary)]
pub enum DecoderOp {
    /// `aw_decoder_new` (freeing the slot's handle first).
    New {
        /// The config slot (`n % 3`; an empty slot is NULL), or NULL.
        config: Option<u8>,
        /// Which built-in transcript `Stdout::Transcript` reads.
        transcript: u8,
        /// Pass NULL as `out_decoder`.
        null_out: bool,
    },
    /// `aw_decoder_free`.
    Free,
    /// `aw_decoder_push_stdout`.
    Stdout(Stdout, Pass),
    /// `aw_decoder_push_eof`.
    Eof,
    /// `aw_decoder_poll_event` once.
    Poll {
        /// Pass NULL as `out_event`.
        null_out: bool,
    },
    /// `aw_decoder_poll_event` until `AW_RESULT_DRAINED`.
    Drain,
    /// `aw_decoder_get_stats`.
    Stats {
        /// Pass NULL as `out_stats`.
        null_out: bool,
    },
    /// `aw_decoder_session_id`.
    SessionId {
        /// Pass NULL as `out_session_id`.
        null_out: bool,
    },
    /// `aw_decoder_model`.
    Model {
        /// Pass NULL as `out_model`.
        null_out: bool,
    },
    /// `aw_decoder_is_finished`.
    IsFinished,
    /// `aw_decoder_last_error`.
    LastError,
    /// `aw_decoder_test_panic`: poisons the handle.
    Panic,
}

/// Documented results.
const NEW: &[aw_result] = &[aw_result::Ok, aw_result::NullParameter, aw_result::Poisoned];
const PUSH: &[aw_result] = &[
    aw_result::Ok,
    aw_result::AfterEof,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];
const OK: &[aw_result] = &[aw_result::Ok];
const POLL: &[aw_result] = &[aw_result::Ok, aw_result::Drained];
const OPTIONAL: &[aw_result] = &[aw_result::Ok, aw_result::NotAvailable];

fn decoder_error(error: DecoderError) -> aw_result {
    match error {
        DecoderError::AfterEof => aw_result::AfterEof,
    }
}

impl World {
    fn decoder_ptr(&self, slot: usize) -> *mut aw_decoder {
        self.decoders[slot]
            .as_ref()
            .map_or(std::ptr::null_mut(), |s| s.ptr)
    }

    /// A call on decoder `slot` is about to happen.
    fn before_decoder_call(&mut self, slot: usize, mutating: bool) {
        if self.decoders[slot].is_some() {
            self.views.before_call(Owner::Decoder(slot), mutating);
        } else {
            self.views.reread();
        }
    }

    /// The results a call on decoder `slot` may return: those of its misuse, or else what
    /// `work` makes of the Rust decoder.
    fn decoder_allowed(
        &mut self,
        slot: usize,
        errors: &[aw_result],
        work: impl FnOnce(&mut Slot) -> aw_result,
    ) -> Vec<aw_result> {
        let s = self.decoders[slot].as_mut();
        match misuse(s.as_deref().map(|s| &s.books), errors) {
            Some(allowed) => allowed,
            None => vec![work(s.expect("a live decoder"))],
        }
    }

    fn note_decoder(&mut self, slot: usize, result: aw_result) {
        if let Some(s) = &mut self.decoders[slot] {
            s.books.note(result);
        }
    }

    /// One call on decoder `slot`.
    pub(super) fn decoder(&mut self, slot: usize, op: &DecoderOp) {
        let owner = Owner::Decoder(slot);
        let ptr = self.decoder_ptr(slot);
        match op {
            DecoderOp::New {
                config,
                transcript,
                null_out: null,
            } => {
                self.decoder(slot, &DecoderOp::Free);
                let config = config.map(|c| usize::from(c) % SLOTS);
                let config_ptr = config.map_or(std::ptr::null_mut(), |c| self.config_ptr(c));
                if let Some(c) = config.filter(|_| !config_ptr.is_null()) {
                    self.views.before_call(Owner::Config(c), false);
                }
                let config = config.and_then(|c| self.configs[c].as_ref());
                let mut out = OutParam::<*mut aw_decoder>::new();
                // SAFETY: `config_ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_decoder_new(config_ptr, out.ptr(*null)) };
                let mut allowed = null_out(*null).to_vec();
                if config.is_some_and(|c| c.books.poisoned) {
                    allowed.push(aw_result::Poisoned);
                }
                if allowed.is_empty() {
                    allowed.push(aw_result::Ok);
                }
                check_result("aw_decoder_new", result, NEW, &allowed);
                let decoder_config =
                    config.map_or_else(DecoderConfig::default, |c| c.shadow.decoder.clone());
                if let Some(ptr) = out.outcome(result, "aw_decoder_new") {
                    assert!(!ptr.is_null(), "aw_decoder_new gave NULL");
                    self.decoders[slot] = Some(Slot {
                        ptr,
                        shadow: Decoder::new(decoder_config),
                        books: Books::new(),
                        transcript: super::transcript(*transcript),
                        offset: 0,
                        failed: false,
                        eof: false,
                        drained_after_eof: false,
                    });
                }
            }
            DecoderOp::Free => {
                self.views.before_free(owner);
                // SAFETY: `ptr` is NULL or the slot's live handle, forgotten just below.
                unsafe { aw_decoder_free(ptr) };
                self.decoders[slot] = None;
            }
            DecoderOp::Stdout(source, pass) => {
                let data = match &mut self.decoders[slot] {
                    Some(s) => source.bytes(s.transcript, &mut s.offset),
                    None => source.bytes(&[], &mut 0),
                };
                self.before_decoder_call(slot, true);
                let passed = pass.apply(&data);
                // SAFETY: `ptr` is NULL or live; `passed` is a valid pointer and length,
                // NULL, or a length over PTRDIFF_MAX (checked before any read).
                let result = unsafe { aw_decoder_push_stdout(ptr, passed.ptr, passed.len) };
                let errors = passed.value.err().unwrap_or_default();
                let allowed = self.decoder_allowed(slot, errors, |s| {
                    let bytes = passed.value.expect("valid bytes");
                    s.shadow
                        .push_stdout(bytes)
                        .map_or_else(decoder_error, |()| aw_result::Ok)
                });
                check_result("aw_decoder_push_stdout", result, PUSH, &allowed);
                self.note_decoder(slot, result);
            }
            DecoderOp::Eof => {
                self.before_decoder_call(slot, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_decoder_push_eof(ptr) };
                let allowed = self.decoder_allowed(slot, &[], |s| {
                    s.shadow
                        .push_eof()
                        .map_or_else(decoder_error, |()| aw_result::Ok)
                });
                check_result("aw_decoder_push_eof", result, OK, &allowed);
                self.note_decoder(slot, result);
                if let (Some(s), aw_result::Ok) = (&mut self.decoders[slot], result) {
                    s.eof = true;
                }
            }
            DecoderOp::Poll { null_out } => {
                self.decoder_poll(slot, *null_out);
            }
            DecoderOp::Drain => {
                for _ in 0..MAX_POLLS {
                    if self.decoder_poll(slot, false) != aw_result::Ok {
                        return;
                    }
                }
                panic!("aw_decoder_poll_event does not run dry");
            }
            DecoderOp::Stats { null_out: null } => {
                self.before_decoder_call(slot, false);
                let mut out = OutParam::<aw_decoder_stats>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_decoder_get_stats(ptr, out.ptr(*null)) };
                let mut want = None;
                let allowed = self.decoder_allowed(slot, null_out(*null), |s| {
                    want = Some(*s.shadow.stats());
                    aw_result::Ok
                });
                let what = "aw_decoder_get_stats";
                check_result(what, result, OK, &allowed);
                self.note_decoder(slot, result);
                if let Some(got) = out.outcome(result, what) {
                    let want = want.expect("stats");
                    let got = [
                        got.lines,
                        got.unknown,
                        got.non_json,
                        got.bad_lines,
                        got.recaps,
                        got.reconciled,
                        got.divergences,
                        got.results,
                    ];
                    let want = [
                        want.lines,
                        want.unknown,
                        want.non_json,
                        want.bad_lines,
                        want.recaps,
                        want.reconciled,
                        want.divergences,
                        want.results,
                    ];
                    assert_eq!(got, want, "{what}");
                }
            }
            DecoderOp::SessionId { null_out: null } | DecoderOp::Model { null_out: null } => {
                self.before_decoder_call(slot, false);
                let session = matches!(op, DecoderOp::SessionId { .. });
                let mut out = OutParam::<aw_str>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe {
                    if session {
                        aw_decoder_session_id(ptr, out.ptr(*null))
                    } else {
                        aw_decoder_model(ptr, out.ptr(*null))
                    }
                };
                let mut want = None;
                let allowed = self.decoder_allowed(slot, null_out(*null), |s| {
                    want = if session {
                        s.shadow.session_id()
                    } else {
                        s.shadow.model()
                    }
                    .map(str::to_owned);
                    if want.is_some() {
                        aw_result::Ok
                    } else {
                        aw_result::NotAvailable
                    }
                });
                let what = if session {
                    "aw_decoder_session_id"
                } else {
                    "aw_decoder_model"
                };
                check_result(what, result, OPTIONAL, &allowed);
                self.note_decoder(slot, result);
                if let Some(view) = out.outcome(result, what) {
                    let got = text(view, what);
                    assert_eq!(Some(&got), want.as_ref(), "{what}");
                    self.views.keep(
                        owner,
                        ValidUntil::MutatingCall,
                        view.data.cast(),
                        got.into_bytes(),
                        what.into(),
                    );
                }
            }
            DecoderOp::IsFinished => {
                self.before_decoder_call(slot, false);
                // SAFETY: `ptr` is NULL or live.
                let got = unsafe { aw_decoder_is_finished(ptr) };
                // Finished: the end of stdout was pushed and every event polled; the
                // documented fallback for NULL and poisoned: finished.
                let want = match &self.decoders[slot] {
                    Some(s) if !s.books.poisoned => {
                        let finished = s.shadow.is_finished();
                        assert!(!finished || s.eof, "finished before the end of stdout");
                        assert!(
                            finished || !s.drained_after_eof,
                            "drained after the end, not finished"
                        );
                        finished
                    }
                    _ => true,
                };
                assert_eq!(got, want, "aw_decoder_is_finished");
            }
            DecoderOp::LastError => {
                self.before_decoder_call(slot, false);
                // SAFETY: `ptr` is NULL or live.
                let message_ptr = unsafe { aw_decoder_last_error(ptr) };
                let what = "aw_decoder_last_error";
                let message = c_string(message_ptr, what);
                match &mut self.decoders[slot] {
                    None => assert_eq!(message, "", "{what}(NULL)"),
                    Some(s) => {
                        s.books.check_last_error(message.clone(), what);
                        let mut held = message.into_bytes();
                        held.push(0);
                        self.views.keep(
                            owner,
                            ValidUntil::NextCall,
                            message_ptr.cast(),
                            held,
                            what.into(),
                        );
                    }
                }
            }
            DecoderOp::Panic => {
                self.before_decoder_call(slot, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_decoder_test_panic(ptr) };
                self.after_test_panic(owner, result);
            }
        }
    }

    /// The getters of a live decoder after each call on it, so that every state a run
    /// reaches has them checked: counters, session id, model, finished.
    pub(super) fn observe_decoder(&mut self, slot: usize) {
        if self.decoders[slot]
            .as_ref()
            .is_some_and(|s| !s.books.poisoned)
        {
            self.decoder(slot, &DecoderOp::Stats { null_out: false });
            self.decoder(slot, &DecoderOp::SessionId { null_out: false });
            self.decoder(slot, &DecoderOp::Model { null_out: false });
            self.decoder(slot, &DecoderOp::IsFinished);
        }
    }

    /// `aw_decoder_poll_event` once; its result.
    fn decoder_poll(&mut self, slot: usize, null: bool) -> aw_result {
        self.before_decoder_call(slot, true);
        let ptr = self.decoder_ptr(slot);
        let mut out = OutParam::<aw_event>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_decoder_poll_event(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = self.decoder_allowed(slot, null_out(null), |s| {
            want = s.shadow.poll_event().as_ref().map(describe);
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_decoder_poll_event";
        check_result(what, result, POLL, &allowed);
        self.note_decoder(slot, result);
        if let Some(s) = &mut self.decoders[slot] {
            s.drained_after_eof = s.eof && result == aw_result::Drained;
        }
        if let Some(event) = out.outcome(result, what) {
            let mut strings = Vec::new();
            let got = describe_c(&event, &mut strings);
            assert_eq!(Some(&got), want.as_ref(), "{what}");
            for (view, held) in strings {
                self.views.keep(
                    Owner::Decoder(slot),
                    ValidUntil::NextCall,
                    view.data.cast(),
                    held.into_bytes(),
                    format!("{what} ({got})"),
                );
            }
            let s = self.decoders[slot].as_mut().expect("a live decoder");
            match event.kind {
                aw_event_kind::Failed => s.failed = true,
                aw_event_kind::Finish => {
                    assert!(!s.failed, "{what}: a finish after a failure");
                }
                _ => {}
            }
        }
        result
    }
}

/// A Rust event as text, in the form [`describe_c`] gives a C event.
fn describe(event: &Event<'_>) -> String {
    match event {
        Event::TextDelta(text) => format!("text {text:?}"),
        Event::ReasoningDelta(text) => format!("reasoning {text:?}"),
        Event::ToolCall(call) => format!(
            "tool call {} {:?} {:?} {:?}",
            call.index, call.id, call.name, call.arguments
        ),
        Event::AgentActivity(activity) => {
            let phase = match activity.phase {
                ActivityPhase::Started => "started".to_owned(),
                ActivityPhase::Completed {
                    outcome,
                    started_seen,
                } => {
                    let outcome = match outcome {
                        ToolOutcome::Success => aw_tool_outcome::Success,
                        ToolOutcome::Rejected => aw_tool_outcome::Rejected,
                        ToolOutcome::Error => aw_tool_outcome::Error,
                        ToolOutcome::PermissionDenied => aw_tool_outcome::PermissionDenied,
                        ToolOutcome::Unknown => aw_tool_outcome::Unknown,
                    };
                    format!("completed {outcome:?} started_seen={started_seen}")
                }
            };
            format!(
                "activity {:?} {:?} {phase} {:?} {:?} {:?}",
                activity.call_id,
                activity.tool,
                activity.summary,
                activity.arguments,
                activity.model_call_id
            )
        }
        Event::Progress(progress) => {
            let (kind, attempt) = match *progress {
                Progress::Reconnecting { attempt } => (aw_progress_kind::Reconnecting, attempt),
                Progress::Reconnected => (aw_progress_kind::Reconnected, 0),
                Progress::Retrying { attempt } => (aw_progress_kind::Retrying, attempt),
            };
            format!("progress {kind:?} {attempt}")
        }
        Event::Usage(usage) => {
            let Usage {
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_write_tokens,
                reasoning_tokens,
                cost,
            } = *usage;
            format!(
                "usage {input_tokens} {output_tokens} {cache_read_tokens} {cache_write_tokens} \
                 {reasoning_tokens:?} {:?} {} {}",
                cost.map(f64::to_bits),
                usage.prompt_tokens(),
                usage.total_tokens()
            )
        }
        Event::Finish(reason) => {
            let reason = match reason {
                FinishReason::Stop => aw_finish_reason::Stop,
                FinishReason::Length => aw_finish_reason::Length,
                FinishReason::ToolCalls => aw_finish_reason::ToolCalls,
                FinishReason::ContentFilter => aw_finish_reason::ContentFilter,
            };
            format!("finish {reason:?}")
        }
        Event::Failed(failure) => {
            let kind = match failure.kind {
                FailureKind::InvalidRequest => aw_failure_kind::InvalidRequest,
                FailureKind::NotAuthenticated => aw_failure_kind::NotAuthenticated,
                FailureKind::ModelUnavailable => aw_failure_kind::ModelUnavailable,
                FailureKind::RateLimited => aw_failure_kind::RateLimited,
                FailureKind::Misconfigured => aw_failure_kind::Misconfigured,
                FailureKind::Unavailable => aw_failure_kind::Unavailable,
                FailureKind::Timeout => aw_failure_kind::Timeout,
                FailureKind::AgentError => aw_failure_kind::AgentError,
                FailureKind::AgentCrashed => aw_failure_kind::AgentCrashed,
                FailureKind::BadOutput => aw_failure_kind::BadOutput,
            };
            format!("failed {kind:?} {:?}", failure.message)
        }
    }
}

/// A C event as text, reading every string it holds (into `strings`, to be read again
/// while they are valid), and checking that the members its kind does not use are zero or
/// empty.
fn describe_c(event: &aw_event, strings: &mut Vec<(aw_str, String)>) -> String {
    let kind = event.kind;
    let mut read = |view: aw_str, what: &str| {
        let value = text(view, what);
        strings.push((view, value.clone()));
        value
    };
    let what = format!("aw_event {kind:?}");
    let text_used = matches!(
        kind,
        aw_event_kind::TextDelta | aw_event_kind::ReasoningDelta
    );
    if !text_used {
        assert_empty_str(event.text, &format!("{what}: text"));
    }
    if kind != aw_event_kind::ToolCall {
        let call = &event.tool_call;
        assert_eq!(call.index, 0, "{what}: tool_call");
        for view in [call.id, call.name, call.arguments] {
            assert_empty_str(view, &format!("{what}: tool_call"));
        }
    }
    if kind != aw_event_kind::AgentActivity {
        let a = &event.activity;
        for view in [a.call_id, a.tool, a.summary, a.arguments, a.model_call_id] {
            assert_empty_str(view, &format!("{what}: activity"));
        }
        assert!(
            a.phase == aw_activity_phase::Started
                && a.outcome == aw_tool_outcome::None
                && !a.started_seen
                && !a.has_arguments
                && !a.has_model_call_id,
            "{what}: activity not zero"
        );
    }
    if kind != aw_event_kind::Progress {
        let p = &event.progress;
        assert!(
            p.kind == aw_progress_kind::Reconnecting && p.attempt == 0,
            "{what}: progress not zero"
        );
    }
    if kind != aw_event_kind::Usage {
        let u = &event.usage;
        assert!(
            [
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.reasoning_tokens,
                u.prompt_tokens,
                u.total_tokens,
                u.cost.to_bits(),
            ] == [0; 8]
                && !u.has_reasoning_tokens
                && !u.has_cost,
            "{what}: usage not zero"
        );
    }
    if kind != aw_event_kind::Finish {
        assert_eq!(
            event.finish_reason,
            aw_finish_reason::Stop,
            "{what}: finish_reason"
        );
    }
    if kind != aw_event_kind::Failed {
        assert_eq!(
            event.failure.kind,
            aw_failure_kind::InvalidRequest,
            "{what}: failure"
        );
        assert_empty_str(event.failure.message, &format!("{what}: failure"));
    }
    match kind {
        aw_event_kind::TextDelta => format!("text {:?}", read(event.text, &what)),
        aw_event_kind::ReasoningDelta => format!("reasoning {:?}", read(event.text, &what)),
        aw_event_kind::ToolCall => {
            let call = &event.tool_call;
            format!(
                "tool call {} {:?} {:?} {:?}",
                call.index,
                read(call.id, &what),
                read(call.name, &what),
                read(call.arguments, &what)
            )
        }
        aw_event_kind::AgentActivity => {
            let a = &event.activity;
            let phase = match a.phase {
                aw_activity_phase::Started => {
                    assert_eq!(
                        a.outcome,
                        aw_tool_outcome::None,
                        "{what}: outcome of a start"
                    );
                    "started".to_owned()
                }
                aw_activity_phase::Completed => {
                    format!("completed {:?} started_seen={}", a.outcome, a.started_seen)
                }
            };
            let mut optional = |has: bool, view: aw_str| {
                if has {
                    Some(read(view, &what))
                } else {
                    assert_empty_str(view, &what);
                    None
                }
            };
            let arguments = optional(a.has_arguments, a.arguments);
            let model_call_id = optional(a.has_model_call_id, a.model_call_id);
            format!(
                "activity {:?} {:?} {phase} {:?} {arguments:?} {model_call_id:?}",
                read(a.call_id, &what),
                read(a.tool, &what),
                read(a.summary, &what),
            )
        }
        aw_event_kind::Progress => {
            format!(
                "progress {:?} {}",
                event.progress.kind, event.progress.attempt
            )
        }
        aw_event_kind::Usage => {
            let u = &event.usage;
            let reasoning = u.has_reasoning_tokens.then_some(u.reasoning_tokens);
            let cost = u.has_cost.then_some(u.cost.to_bits());
            if !u.has_reasoning_tokens {
                assert_eq!(
                    u.reasoning_tokens, 0,
                    "{what}: reasoning_tokens not reported"
                );
            }
            if !u.has_cost {
                assert_eq!(u.cost.to_bits(), 0, "{what}: cost not reported");
            }
            format!(
                "usage {} {} {} {} {reasoning:?} {cost:?} {} {}",
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.prompt_tokens,
                u.total_tokens
            )
        }
        aw_event_kind::Finish => format!("finish {:?}", event.finish_reason),
        aw_event_kind::Failed => format!(
            "failed {:?} {:?}",
            event.failure.kind,
            read(event.failure.message, &what)
        ),
    }
}
