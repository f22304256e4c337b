//! `aw_decoder`: cursor-agent stdout to typed events, for plugins that render the answer
//! themselves and need no HTTP.

use std::ffi::c_char;

use super::boundary::{
    Guarded, Handle, Out, boundary, call, call_mut, free_handle, impl_handle, input_bytes,
    last_error, predicate,
};
use super::config::{aw_config, config_or_default};
use super::event::aw_event;
use super::result::aw_result;
use super::views::aw_str;
use crate::cursor::{Decoder, DecoderStats};
use crate::event::{Event, Failure};

/// A decoder of cursor-agent `--output-format stream-json` stdout: an opaque handle
/// created by `aw_decoder_new` and freed by `aw_decoder_free`.
///
/// The loop: for every read of the agent's stdout call `aw_decoder_push_stdout`, at its
/// end `aw_decoder_push_eof`, and after each **drain `aw_decoder_poll_event` until it
/// returns `AW_RESULT_DRAINED`**.
#[allow(non_camel_case_types)]
pub struct aw_decoder(Guarded<DecoderState>);
impl_handle!(aw_decoder, DecoderState);

pub(crate) struct DecoderState {
    decoder: Decoder,
    /// The last polled failure, which owns the message its `aw_event` points at.
    failure: Option<Failure>,
}

/// Counters over everything a decoder decoded so far.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct aw_decoder_stats {
    /// Non-blank lines read.
    pub lines: u64,
    /// JSON lines of a type or subtype not known here (ignored).
    pub unknown: u64,
    /// Lines that are not JSON objects (kept as notes for failure classification).
    pub non_json: u64,
    /// Lines dropped for breaking the line limit or not being UTF-8.
    pub bad_lines: u64,
    /// Recaps (re-sent segments) removed.
    pub recaps: u64,
    /// Times the final `result` text revealed text that had not been streamed, which was
    /// then emitted.
    pub reconciled: u64,
    /// Times the streamed text did not match the final `result` text and could not be
    /// repaired.
    pub divergences: u64,
    /// `result` events seen.
    pub results: u64,
}

impl aw_decoder_stats {
    fn of(stats: &DecoderStats) -> aw_decoder_stats {
        let DecoderStats {
            lines,
            unknown,
            non_json,
            bad_lines,
            recaps,
            reconciled,
            divergences,
            results,
        } = *stats;
        aw_decoder_stats {
            lines,
            unknown,
            non_json,
            bad_lines,
            recaps,
            reconciled,
            divergences,
            results,
        }
    }
}

/// Creates a decoder with the decoder limits of `config` (`decoder_max_line_len`,
/// `decoder_max_notes`; NULL for the defaults) and writes it to `*out_decoder`.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_NULL_PARAMETER` (`out_decoder` NULL), or
/// `AW_RESULT_POISONED` (a poisoned `config`), or `AW_RESULT_BUSY` (`config` is in a call
/// on another thread).
///
/// Memory and lifetimes: `config` is read during the call only. The caller owns the new
/// decoder and frees it with `aw_decoder_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_new(
    config: *const aw_config,
    out_decoder: *mut *mut aw_decoder,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_decoder` is NULL or writable, `config` is NULL
        // or a live config.
        let (out, config) = unsafe {
            let out = match Out::new(out_decoder, "out_decoder") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            match config_or_default(config) {
                Ok(config) => (out, config),
                Err(code) => return code,
            }
        };
        out.write(aw_decoder::into_raw(DecoderState {
            decoder: Decoder::new(config.decoder),
            failure: None,
        }));
        aw_result::Ok
    })
}

/// Frees a decoder. NULL does nothing. Views it handed out become invalid.
///
/// Freeing a decoder while another thread is inside a call on it is a caller bug. It is
/// detected and the free is refused: the decoder stays valid (free it once that call has
/// returned) rather than being freed under the call. A call that starts after the free is
/// a use after free, which nothing can detect.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_free(decoder: *mut aw_decoder) {
    // SAFETY: the pointer rules: `decoder` is NULL or a live decoder, freed once.
    unsafe { free_handle(decoder) }
}

/// The message of the last call on `decoder` that failed, NUL-terminated; `""` when none
/// failed or `decoder` is NULL; a message saying the decoder is in use while another thread is
/// inside a call on it.
///
/// Memory and lifetimes: valid until the next call on `decoder` (from any thread) or its
/// free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_last_error(decoder: *const aw_decoder) -> *const c_char {
    // SAFETY: the pointer rules: `decoder` is NULL or a live decoder.
    unsafe { last_error(decoder) }
}

/// Feeds stdout bytes, in any chunking. Every line these bytes complete is decoded now;
/// drain the events after.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_AFTER_EOF` after `aw_decoder_push_eof`;
/// `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `data` is read during the call only. Views from earlier calls
/// become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_push_stdout(
    decoder: *mut aw_decoder,
    data: *const u8,
    len: usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(decoder, |state| {
            let bytes = input_bytes(data, len, "data")?;
            state.decoder.push_stdout(bytes)?;
            Ok(aw_result::Ok)
        })
    }
}

/// Ends stdout: decodes a last line without a newline, resolves held text, and reports a
/// failure event if the output never produced a `result`. Calling it again does nothing.
/// Drain the events after.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_push_eof(decoder: *mut aw_decoder) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(decoder, |state| {
            state.decoder.push_eof()?;
            Ok(aw_result::Ok)
        })
    }
}

/// The next decoded event, into `*out_event`.
///
/// Returns `AW_RESULT_OK` (`*out_event` written), or `AW_RESULT_DRAINED` when there is
/// nothing until the next input.
///
/// Memory and lifetimes: the event's strings are valid until the next call on `decoder`
/// (this one included) or its free; copy what you keep.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_poll_event(
    decoder: *mut aw_decoder,
    out_event: *mut aw_event,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(decoder, |state| {
            let out = Out::new(out_event, "out_event")?;
            let Some(event) = state.decoder.poll_event() else {
                return Ok(aw_result::Drained);
            };
            let view = match event {
                // The event owns its failure: keep it in the state, where the view's
                // message can borrow it until the next call.
                Event::Failed(failure) => aw_event::failed(state.failure.insert(failure)),
                event => aw_event::of(&event),
            };
            out.write(view);
            Ok(aw_result::Ok)
        })
    }
}

/// The decoder's counters, into `*out_stats`. Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_get_stats(
    decoder: *const aw_decoder,
    out_stats: *mut aw_decoder_stats,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(decoder, |state| {
            let out = Out::new(out_stats, "out_stats")?;
            out.write(aw_decoder_stats::of(state.decoder.stats()));
            Ok(aw_result::Ok)
        })
    }
}

/// The agent's session (chat) id, into `*out_session_id`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` until an event carried one.
///
/// Memory and lifetimes: valid until the next mutating call on `decoder` or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_session_id(
    decoder: *const aw_decoder,
    out_session_id: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(decoder, |state| {
            let out = Out::new(out_session_id, "out_session_id")?;
            Ok(out.write_optional(state.decoder.session_id().map(aw_str::of)))
        })
    }
}

/// The model's display name from the agent's `system/init` event (`"Composer 2.5
/// Fast"`, not a slug), into `*out_model`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` until the agent sent it.
///
/// Memory and lifetimes: valid until the next mutating call on `decoder` or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_model(
    decoder: *const aw_decoder,
    out_model: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(decoder, |state| {
            let out = Out::new(out_model, "out_model")?;
            Ok(out.write_optional(state.decoder.model().map(aw_str::of)))
        })
    }
}

/// Whether `aw_decoder_push_eof` was called and every event was polled. Also true for a
/// NULL or poisoned decoder (nothing more will come from it) and while another thread is
/// inside a call on it (a caller bug).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_is_finished(decoder: *const aw_decoder) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(decoder, true, |state| state.decoder.is_finished()) }
}
