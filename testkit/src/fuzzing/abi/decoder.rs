//! `aw_decoder` calls, each made on the handle and on a Rust [`Decoder`] in lockstep: the
//! same results, events, counters, session id and model.

use arbitrary::Arbitrary;

use super::views::{OutParam, Owner, ValidUntil, assert_empty_str, text};
use super::{
    Books, Hook, OK, OPTIONAL, POLL, Pass, Stdout, World, allowed, check_result, handle, null_out,
};
use agentwire::cursor::{Decoder, DecoderError};
use agentwire::event::{ActivityPhase, Event, Progress};
use agentwire::ffi::decoder::*;
use agentwire::ffi::event::*;
use agentwire::ffi::result::aw_result;
use agentwire::ffi::test_hooks::{aw_decoder_test_overlap, aw_decoder_test_panic};
use agentwire::ffi::views::aw_str;

/// Polls in a row before `Drain` gives up: `aw_decoder_poll_event` must run dry.
const MAX_POLLS: usize = 100_000;

/// A decoder handle, the Rust decoder it must behave as, and what was polled from it.
pub(super) struct Slot {
    ptr: *mut aw_decoder,
    shadow: Decoder,
    pub(super) books: Books,
    transcript: &'static [u8],
    offset: usize,
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
    /// `aw_decoder_test_overlap`: a call and a free from inside a call, refused as `BUSY`.
    Overlap,
}

/// Documented results.
const NEW: &[aw_result] = &[aw_result::Ok, aw_result::NullParameter, aw_result::Poisoned];
const PUSH: &[aw_result] = &[
    aw_result::Ok,
    aw_result::AfterEof,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];

fn decoder_error(error: DecoderError) -> aw_result {
    match error {
        DecoderError::AfterEof => aw_result::AfterEof,
        other => crate::fuzzing::unknown(other),
    }
}

impl super::Slot for Slot {
    type Handle = aw_decoder;
    fn ptr(&self) -> *mut aw_decoder {
        self.ptr
    }
    fn books(&self) -> &Books {
        &self.books
    }
}

impl World {
    /// One call on decoder `slot`.
    pub(super) fn decoder(&mut self, slot: usize, op: &DecoderOp) {
        let owner = Owner::Decoder(slot);
        let ptr = handle(&self.decoders[slot]);
        match op {
            DecoderOp::New {
                config,
                transcript,
                null_out: null,
            } => {
                self.decoder(slot, &DecoderOp::Free);
                let (config_ptr, config, poisoned) = self.config_arg(*config);
                let mut out = OutParam::<*mut aw_decoder>::new();
                // SAFETY: `config_ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_decoder_new(config_ptr, out.ptr(*null)) };
                let mut allowed = null_out(*null).to_vec();
                if poisoned {
                    allowed.push(aw_result::Poisoned);
                }
                if allowed.is_empty() {
                    allowed.push(aw_result::Ok);
                }
                check_result("aw_decoder_new", result, NEW, &allowed);
                if let Some(ptr) = out.outcome(result, "aw_decoder_new") {
                    assert!(!ptr.is_null(), "aw_decoder_new gave NULL");
                    self.decoders[slot] = Some(Slot {
                        ptr,
                        shadow: Decoder::new(config.decoder),
                        books: Books::new(),
                        transcript: super::transcript(*transcript),
                        offset: 0,
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
                self.before_call(owner, true);
                let passed = pass.apply(&data);
                // SAFETY: `ptr` is NULL or live; `passed` is a valid pointer and length,
                // NULL, or a length over PTRDIFF_MAX (checked before any read).
                let result = unsafe { aw_decoder_push_stdout(ptr, passed.ptr, passed.len) };
                let errors = passed.value.err().unwrap_or_default();
                let allowed = allowed(self.decoders[slot].as_mut(), errors, |s| {
                    let bytes = passed.value.expect("valid bytes");
                    s.shadow
                        .push_stdout(bytes)
                        .map_or_else(decoder_error, |()| aw_result::Ok)
                });
                check_result("aw_decoder_push_stdout", result, PUSH, &allowed);
                self.note(Owner::Decoder(slot), result);
            }
            DecoderOp::Eof => {
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_decoder_push_eof(ptr) };
                let allowed = allowed(self.decoders[slot].as_mut(), &[], |s| {
                    s.shadow
                        .push_eof()
                        .map_or_else(decoder_error, |()| aw_result::Ok)
                });
                check_result("aw_decoder_push_eof", result, OK, &allowed);
                self.note(Owner::Decoder(slot), result);
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
                self.before_call(owner, false);
                let mut out = OutParam::<aw_decoder_stats>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_decoder_get_stats(ptr, out.ptr(*null)) };
                let mut want = None;
                let allowed = allowed(self.decoders[slot].as_mut(), null_out(*null), |s| {
                    want = Some(*s.shadow.stats());
                    aw_result::Ok
                });
                let what = "aw_decoder_get_stats";
                check_result(what, result, OK, &allowed);
                self.note(Owner::Decoder(slot), result);
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
            DecoderOp::SessionId { null_out: null } => {
                let want = self.decoders[slot]
                    .as_ref()
                    .and_then(|s| s.shadow.session_id().map(str::to_owned));
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_decoder_session_id(ptr, out) };
                self.text_getter(owner, *null, "aw_decoder_session_id", OPTIONAL, want, call);
            }
            DecoderOp::Model { null_out: null } => {
                let want = self.decoders[slot]
                    .as_ref()
                    .and_then(|s| s.shadow.model().map(str::to_owned));
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_decoder_model(ptr, out) };
                self.text_getter(owner, *null, "aw_decoder_model", OPTIONAL, want, call);
            }
            DecoderOp::IsFinished => {
                self.before_call(owner, false);
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
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_decoder_last_error(ptr) };
                self.last_error_of(owner, "aw_decoder_last_error", call);
            }
            DecoderOp::Panic => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_decoder_test_panic(ptr) };
                self.test_hook(owner, Hook::Panic, call);
            }
            DecoderOp::Overlap => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_decoder_test_overlap(ptr) };
                self.test_hook(owner, Hook::Overlap, call);
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
        self.before_call(Owner::Decoder(slot), true);
        let ptr = handle(&self.decoders[slot]);
        let mut out = OutParam::<aw_event>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_decoder_poll_event(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = allowed(self.decoders[slot].as_mut(), null_out(null), |s| {
            want = s.shadow.poll_event().as_ref().map(describe);
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_decoder_poll_event";
        check_result(what, result, POLL, &allowed);
        self.note(Owner::Decoder(slot), result);
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
            // The order of events is the Rust decoder's, compared above. A failure is not
            // the end of the decoder: a `result` ends a turn, an error result with a
            // failure, and a later turn's `result` may finish it.
        }
        result
    }
}

/// A Rust event as text, in the form [`describe_c`] gives a C event. Enum values are
/// written by name: the C enums' names are the Rust ones.
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
                } => format!("completed {outcome:?} started_seen={started_seen}"),
                other => crate::fuzzing::unknown(other),
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
        Event::Progress(progress) => match *progress {
            Progress::Reconnecting { attempt } => format!("progress Reconnecting {attempt}"),
            Progress::Reconnected => "progress Reconnected 0".to_owned(),
            Progress::Retrying { attempt } => format!("progress Retrying {attempt}"),
            other => crate::fuzzing::unknown(other),
        },
        Event::Usage(usage) => format!(
            "usage {} {} {} {} {:?} {:?} {} {}",
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
            usage.cost.map(f64::to_bits),
            usage.prompt_tokens(),
            usage.total_tokens()
        ),
        Event::Finish(reason) => format!("finish {reason:?}"),
        Event::Failed(failure) => format!("failed {:?} {:?}", failure.kind, failure.message),
        other => crate::fuzzing::unknown(other),
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
