//! `aw_config`: the settings of a bridge (and of a decoder), one setter and one getter per
//! field of the Rust [`Config`].

use std::ffi::c_char;

use super::boundary::{
    Guarded, Handle, Out, boundary, call, call_mut, free_handle, impl_handle, input_enum,
    input_str, last_error,
};
use super::names::{CEnum, mirrors};
use super::result::{Error, aw_result};
use super::views::aw_str;
use crate::bridge::Config;
use crate::openai::chat::ReasoningField;
use crate::tools::ToolStrategy;

/// Settings for `aw_bridge_new` and `aw_decoder_new`: an opaque handle, created with the
/// defaults of the Rust `Config::default()` by `aw_config_new`, changed with the
/// `aw_config_set_*` functions and freed with `aw_config_free`. Bridges and decoders copy
/// what they need when created, so a config may be changed or freed afterwards.
#[allow(non_camel_case_types)]
pub struct aw_config(Guarded<Config>);
impl_handle!(aw_config, Config);

/// How client tools are executed in client mode (a request with tools).
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_tool_strategy {
    /// The agent runs read-only (`--mode ask`); its non-mutating calls that map to a client
    /// tool become client tool calls; mutating tools are taught as text envelopes. The
    /// default.
    ReadOnly = 0,
    /// The agent uses its own tools (its edits bypass the client and are reported as
    /// activity); client tools it has no form of are text envelopes.
    Native = 1,
    /// Every client tool is a text envelope; nothing is intercepted.
    EnvelopeOnly = 2,
}

/// Where reasoning ("thinking") text goes in the response.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_reasoning_field {
    /// `reasoning_content` (the default): read by the AI SDK, LiteLLM, DeepSeek clients.
    ReasoningContent = 0,
    /// `reasoning`: OpenRouter's and newer vLLM's name.
    Reasoning = 1,
    /// Not sent.
    Omitted = 2,
}

mirrors!(aw_tool_strategy => ToolStrategy {
    ReadOnly,
    Native,
    EnvelopeOnly,
});

mirrors!(aw_reasoning_field => ReasoningField {
    ReasoningContent,
    Reasoning,
    Omitted,
});

/// A copy of the config behind `config`, for a bridge or decoder being created: the
/// defaults when NULL; `AW_RESULT_POISONED` or `AW_RESULT_BUSY` (the config is in a call
/// on another thread).
///
/// # Safety
/// `config` is NULL or a live `aw_config`.
pub(crate) unsafe fn config_or_default(config: *const aw_config) -> Result<Config, aw_result> {
    if config.is_null() {
        return Ok(Config::default());
    }
    // SAFETY: forwarded contract; not NULL.
    let guarded = unsafe { aw_config::from_ptr(config) }?;
    guarded.read(Config::clone)
}

/// Applies `f` to the config behind `config`.
///
/// # Safety
/// `config` is NULL or a live `aw_config`.
unsafe fn set(
    config: *mut aw_config,
    f: impl FnOnce(&mut Config) -> Result<(), Error>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe { call_mut(config, |c| f(c).map(|()| aw_result::Ok)) }
}

/// Writes `f(config)` to `*out`, or returns `AW_RESULT_NOT_AVAILABLE` when it is `None`.
///
/// # Safety
/// `config` is NULL or a live `aw_config`; `out` is NULL or writable as a `T`.
unsafe fn get<T>(
    config: *const aw_config,
    out: *mut T,
    f: impl FnOnce(&Config) -> Option<T>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(config, |c| {
            let out = Out::new(out, "out_value")?;
            Ok(out.write_optional(f(c)))
        })
    }
}

/// A string setting: UTF-8, and no NUL byte, since it ends up in a command line or the
/// environment.
///
/// # Safety
/// A non-NULL `data` points to `len` readable bytes.
unsafe fn setting_str(
    data: *const c_char,
    len: usize,
    name: &'static str,
) -> Result<String, Error> {
    // SAFETY: forwarded contract.
    let text = unsafe { input_str(data, len, name) }?;
    if text.contains('\0') {
        return Err(Error::new(
            aw_result::InteriorNul,
            format!("`{name}` contains a NUL byte, which no command line can carry"),
        ));
    }
    Ok(text.to_owned())
}

/// Creates a config with the defaults (those of the Rust `Config::default()`: read-only
/// agent in client mode, no `--force`, generous timeouts) and writes it to `*out_config`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NULL_PARAMETER` when `out_config` is NULL.
///
/// Memory and lifetimes: the caller owns the new config and frees it with `aw_config_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_new(out_config: *mut *mut aw_config) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_config` is NULL or writable.
        let out = match unsafe { Out::new(out_config, "out_config") } {
            Ok(out) => out,
            Err(error) => return error.code,
        };
        out.write(aw_config::into_raw(Config::default()));
        aw_result::Ok
    })
}

/// Frees a config. NULL does nothing. Bridges and decoders created from it are not
/// affected.
///
/// Freeing a config while another thread is inside a call on it is a caller bug. It is
/// detected and the free is refused: the config stays valid (free it once that call has
/// returned) rather than being freed under the call. A call that starts after the free is
/// a use after free, which nothing can detect.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_free(config: *mut aw_config) {
    // SAFETY: the pointer rules: `config` is NULL or a live config, freed once.
    unsafe { free_handle(config) }
}

/// The message of the last call on `config` that failed, NUL-terminated; `""` when none
/// failed or `config` is NULL; a message saying the config is in use while another thread is
/// inside a call on it.
///
/// Memory and lifetimes: valid until the next call on `config` (from any thread) or its
/// free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_last_error(config: *const aw_config) -> *const c_char {
    // SAFETY: the pointer rules: `config` is NULL or a live config.
    unsafe { last_error(config) }
}

/// Sets `cursor_binary`: the cursor-agent program, a path or a name looked up in `PATH`
/// (default `"cursor-agent"`). `data` holds `len` bytes of UTF-8 without NUL bytes (a
/// terminator is not needed).
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_INTERIOR_NUL`,
/// `AW_RESULT_NULL_PARAMETER` or `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is
/// unchanged.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_cursor_binary(
    config: *mut aw_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.cursor_binary = setting_str(data, len, "cursor_binary")?;
            Ok(())
        })
    }
}

/// Reads `cursor_binary` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on `config`
/// or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_cursor_binary(
    config: *const aw_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(aw_str::of(&c.cursor_binary))) }
}

/// Sets `workspace`: the `--workspace` of every run (default none: the agent runs in the
/// directory the plugin starts it in). String rules as `aw_config_set_cursor_binary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_workspace(
    config: *mut aw_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.workspace = Some(setting_str(data, len, "workspace")?);
            Ok(())
        })
    }
}

/// Clears `workspace` (no `--workspace`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_clear_workspace(config: *mut aw_config) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.workspace = None;
            Ok(())
        })
    }
}

/// Reads `workspace` into `*out_value`; `AW_RESULT_NOT_AVAILABLE` when none is set.
/// Lifetime as `aw_config_get_cursor_binary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_workspace(
    config: *const aw_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            c.workspace.as_deref().map(aw_str::of)
        })
    }
}

/// Sets `cli_config_dir`: an isolated CLI configuration directory, passed to the agent as
/// `CURSOR_CONFIG_DIR` (default none). Every `--model` run rewrites the CLI's
/// `cli-config.json`; isolating it keeps concurrent runs from racing on the user's file.
/// String rules as `aw_config_set_cursor_binary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_cli_config_dir(
    config: *mut aw_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.cli_config_dir = Some(setting_str(data, len, "cli_config_dir")?);
            Ok(())
        })
    }
}

/// Clears `cli_config_dir` (the agent uses the user's CLI configuration).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_clear_cli_config_dir(config: *mut aw_config) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.cli_config_dir = None;
            Ok(())
        })
    }
}

/// Reads `cli_config_dir` into `*out_value`; `AW_RESULT_NOT_AVAILABLE` when none is set.
/// Lifetime as `aw_config_get_cursor_binary`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_cli_config_dir(
    config: *const aw_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            c.cli_config_dir.as_deref().map(aw_str::of)
        })
    }
}

/// Sets `tool_strategy`, an `aw_tool_strategy` value (default
/// `AW_TOOL_STRATEGY_READ_ONLY`). Returns `AW_RESULT_INVALID_ENUM` for any other number.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_tool_strategy(
    config: *mut aw_config,
    value: u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.tool_strategy = input_enum(value, "tool_strategy", aw_tool_strategy::from_u32)?;
            Ok(())
        })
    }
}

/// Reads `tool_strategy` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_tool_strategy(
    config: *const aw_config,
    out_value: *mut aw_tool_strategy,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            Some(aw_tool_strategy::of(c.tool_strategy))
        })
    }
}

/// Sets `reasoning`, an `aw_reasoning_field` value (default
/// `AW_REASONING_FIELD_REASONING_CONTENT`). Returns `AW_RESULT_INVALID_ENUM` for any other
/// number.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_reasoning(config: *mut aw_config, value: u32) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.reasoning = input_enum(value, "reasoning", aw_reasoning_field::from_u32)?;
            Ok(())
        })
    }
}

/// Reads `reasoning` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_reasoning(
    config: *const aw_config,
    out_value: *mut aw_reasoning_field,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            Some(aw_reasoning_field::of(c.reasoning))
        })
    }
}

/// Sets `max_duration_ms`: milliseconds after which the agent is stopped and the request
/// fails with 504, however busy it is (default none).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_max_duration_ms(
    config: *mut aw_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_duration_ms = Some(value);
            Ok(())
        })
    }
}

/// Clears `max_duration_ms` (no limit on the total duration).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_clear_max_duration_ms(config: *mut aw_config) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_duration_ms = None;
            Ok(())
        })
    }
}

/// Reads `max_duration_ms` into `*out_value`; `AW_RESULT_NOT_AVAILABLE` when there is no
/// limit.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_max_duration_ms(
    config: *const aw_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.max_duration_ms) }
}

/// Sets `allow_force`: whether agent mode (a request without tools) may pass `--force`, letting the agent run shell and web tools without approval (default false). Client mode never passes it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_allow_force(
    config: *mut aw_config,
    value: bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.allow_force = value;
            Ok(())
        })
    }
}

/// Reads `allow_force` (see `aw_config_set_allow_force`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_allow_force(
    config: *const aw_config,
    out_value: *mut bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.allow_force)) }
}

/// Sets `partial_output`: whether to pass `--stream-partial-output` for token-level text (default true).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_partial_output(
    config: *mut aw_config,
    value: bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.partial_output = value;
            Ok(())
        })
    }
}

/// Reads `partial_output` (see `aw_config_set_partial_output`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_partial_output(
    config: *const aw_config,
    out_value: *mut bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.partial_output)) }
}

/// Sets `activity_notes`: whether the agent's own tool use and reconnects are shown as notes in the reasoning channel (default true).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_activity_notes(
    config: *mut aw_config,
    value: bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.activity_notes = value;
            Ok(())
        })
    }
}

/// Reads `activity_notes` (see `aw_config_set_activity_notes`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_activity_notes(
    config: *const aw_config,
    out_value: *mut bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.activity_notes)) }
}

/// Sets `head_deadline_ms`: streaming only: milliseconds to wait for the first answer event before committing the 200 head anyway and starting keep-alives (default 30,000). Until then a failure still gets its true HTTP status.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_head_deadline_ms(
    config: *mut aw_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.head_deadline_ms = value;
            Ok(())
        })
    }
}

/// Reads `head_deadline_ms` (see `aw_config_set_head_deadline_ms`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_head_deadline_ms(
    config: *const aw_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.head_deadline_ms)) }
}

/// Sets `keep_alive_ms`: milliseconds between SSE keep-alive comments during silence, once the head is sent (default 15,000).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_keep_alive_ms(
    config: *mut aw_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.keep_alive_ms = value;
            Ok(())
        })
    }
}

/// Reads `keep_alive_ms` (see `aw_config_set_keep_alive_ms`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_keep_alive_ms(
    config: *const aw_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.keep_alive_ms)) }
}

/// Sets `idle_timeout_ms`: milliseconds without any output from the agent after which it is stopped and the request fails with 504 (default 1,200,000: 20 minutes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_idle_timeout_ms(
    config: *mut aw_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.idle_timeout_ms = value;
            Ok(())
        })
    }
}

/// Reads `idle_timeout_ms` (see `aw_config_set_idle_timeout_ms`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_idle_timeout_ms(
    config: *const aw_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.idle_timeout_ms)) }
}

/// Sets `batch_window_ms`: milliseconds a batch of client tool calls stays open for more calls of the same model call (default 250).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_batch_window_ms(
    config: *mut aw_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.batch_window_ms = value;
            Ok(())
        })
    }
}

/// Reads `batch_window_ms` (see `aw_config_set_batch_window_ms`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_batch_window_ms(
    config: *const aw_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.batch_window_ms)) }
}

/// Sets `stderr_tail_bytes`: bytes of the agent's stderr kept for failure messages, the most recent (default 16 KiB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_stderr_tail_bytes(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.stderr_tail_bytes = value;
            Ok(())
        })
    }
}

/// Reads `stderr_tail_bytes` (see `aw_config_set_stderr_tail_bytes`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_stderr_tail_bytes(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.stderr_tail_bytes)) }
}

/// Sets `max_envelope_bytes`: largest text envelope a client tool call may be written in, in bytes (default 4 MiB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_max_envelope_bytes(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_envelope_bytes = value;
            Ok(())
        })
    }
}

/// Reads `max_envelope_bytes` (see `aw_config_set_max_envelope_bytes`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_max_envelope_bytes(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.max_envelope_bytes)) }
}

/// Sets `decoder_max_line_len`: longest stdout line accepted, in bytes (default 64 MiB). A longer line is dropped and decoding resumes at the next line.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_decoder_max_line_len(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.decoder.max_line_len = value;
            Ok(())
        })
    }
}

/// Reads `decoder_max_line_len` (see `aw_config_set_decoder_max_line_len`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_decoder_max_line_len(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.decoder.max_line_len)) }
}

/// Sets `decoder_max_notes`: bytes of non-JSON stdout lines kept for failure classification, the most recent (default 8 KiB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_decoder_max_notes(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.decoder.max_notes = value;
            Ok(())
        })
    }
}

/// Reads `decoder_max_notes` (see `aw_config_set_decoder_max_notes`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_decoder_max_notes(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.decoder.max_notes)) }
}

/// Sets `request_max_body_bytes`: largest request body accepted, in bytes (default 32 MiB); a larger one is answered with 400.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_request_max_body_bytes(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.request_limits.max_body_bytes = value;
            Ok(())
        })
    }
}

/// Reads `request_max_body_bytes` (see `aw_config_set_request_max_body_bytes`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_request_max_body_bytes(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.request_limits.max_body_bytes)) }
}

/// Sets `request_max_messages`: most messages a request may have (default 10,000); more is answered with 400.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_request_max_messages(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.request_limits.max_messages = value;
            Ok(())
        })
    }
}

/// Reads `request_max_messages` (see `aw_config_set_request_max_messages`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_request_max_messages(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.request_limits.max_messages)) }
}

/// Sets `request_max_tools`: most tools a request may offer (default 512); more is answered with 400.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_request_max_tools(
    config: *mut aw_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.request_limits.max_tools = value;
            Ok(())
        })
    }
}

/// Reads `request_max_tools` (see `aw_config_set_request_max_tools`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_request_max_tools(
    config: *const aw_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.request_limits.max_tools)) }
}

/// Sets `request_reject_attachments`: whether a request holding an image, audio clip or file is answered with 400 instead of passing each on to the agent as a text placeholder naming its kind, media type and size (default false).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_request_reject_attachments(
    config: *mut aw_config,
    value: bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.request_limits.reject_attachments = value;
            Ok(())
        })
    }
}

/// Reads `request_reject_attachments` (see `aw_config_set_request_reject_attachments`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_request_reject_attachments(
    config: *const aw_config,
    out_value: *mut bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            Some(c.request_limits.reject_attachments)
        })
    }
}

/// Sets `loop_guard_max_failed_repeats`: after this many identical calls in a row in the
/// current turn that all failed, the next identical one is refused (default 2; 0 turns
/// the limit off; see the Rust `LoopGuardConfig`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_loop_guard_max_failed_repeats(
    config: *mut aw_config,
    value: u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.loop_guard.max_failed_repeats = value;
            Ok(())
        })
    }
}

/// Reads `loop_guard_max_failed_repeats` (see `aw_config_set_loop_guard_max_failed_repeats`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_loop_guard_max_failed_repeats(
    config: *const aw_config,
    out_value: *mut u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.loop_guard.max_failed_repeats)) }
}

/// Sets `loop_guard_max_repeats`: after this many identical calls in a row in the current
/// turn, whatever their results, the next identical one is refused (default 7; 0 turns the
/// limit off; see the Rust `LoopGuardConfig`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_set_loop_guard_max_repeats(
    config: *mut aw_config,
    value: u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.loop_guard.max_repeats = value;
            Ok(())
        })
    }
}

/// Reads `loop_guard_max_repeats` (see `aw_config_set_loop_guard_max_repeats`) into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_get_loop_guard_max_repeats(
    config: *const aw_config,
    out_value: *mut u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.loop_guard.max_repeats)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RequestLimits;
    use crate::cursor::DecoderConfig;
    use crate::tools::loop_guard::LoopGuardConfig;

    /// Every `Config` field has a setter: the expected value below is a struct literal
    /// without `..`, so a new field fails to compile here until the C ABI covers it.
    #[test]
    fn every_field_has_a_setter_and_a_getter() {
        let expected = Config {
            cursor_binary: "/opt/agent".into(),
            workspace: Some("/srv".into()),
            cli_config_dir: Some("/cfg".into()),
            allow_force: true,
            tool_strategy: ToolStrategy::EnvelopeOnly,
            partial_output: false,
            reasoning: ReasoningField::Omitted,
            activity_notes: false,
            head_deadline_ms: 1,
            keep_alive_ms: 2,
            idle_timeout_ms: 3,
            max_duration_ms: Some(4),
            batch_window_ms: 5,
            stderr_tail_bytes: 6,
            max_envelope_bytes: 7,
            decoder: DecoderConfig {
                max_line_len: 8,
                max_notes: 9,
            },
            request_limits: RequestLimits {
                max_body_bytes: 10,
                max_messages: 11,
                max_tools: 12,
                reject_attachments: true,
            },
            loop_guard: LoopGuardConfig {
                max_failed_repeats: 13,
                max_repeats: 14,
            },
        };
        let mut config = std::ptr::null_mut();
        // SAFETY: every pointer is a live config or a local; strings are static.
        unsafe {
            assert_eq!(aw_config_new(&mut config), aw_result::Ok);
            let set = [
                aw_config_set_cursor_binary(config, c"/opt/agent".as_ptr(), 10),
                aw_config_set_workspace(config, c"/srv".as_ptr(), 4),
                aw_config_set_cli_config_dir(config, c"/cfg".as_ptr(), 4),
                aw_config_set_allow_force(config, true),
                aw_config_set_tool_strategy(config, aw_tool_strategy::EnvelopeOnly as u32),
                aw_config_set_partial_output(config, false),
                aw_config_set_reasoning(config, aw_reasoning_field::Omitted as u32),
                aw_config_set_activity_notes(config, false),
                aw_config_set_head_deadline_ms(config, 1),
                aw_config_set_keep_alive_ms(config, 2),
                aw_config_set_idle_timeout_ms(config, 3),
                aw_config_set_max_duration_ms(config, 4),
                aw_config_set_batch_window_ms(config, 5),
                aw_config_set_stderr_tail_bytes(config, 6),
                aw_config_set_max_envelope_bytes(config, 7),
                aw_config_set_decoder_max_line_len(config, 8),
                aw_config_set_decoder_max_notes(config, 9),
                aw_config_set_request_max_body_bytes(config, 10),
                aw_config_set_request_max_messages(config, 11),
                aw_config_set_request_max_tools(config, 12),
                aw_config_set_request_reject_attachments(config, true),
                aw_config_set_loop_guard_max_failed_repeats(config, 13),
                aw_config_set_loop_guard_max_repeats(config, 14),
            ];
            assert!(set.iter().all(|r| *r == aw_result::Ok), "{set:?}");
            let got = config_or_default(config).unwrap();
            assert_eq!(format!("{got:?}"), format!("{expected:?}"));
            let mut strategy = aw_tool_strategy::ReadOnly;
            assert_eq!(
                aw_config_get_tool_strategy(config, &mut strategy),
                aw_result::Ok
            );
            assert_eq!(strategy, aw_tool_strategy::EnvelopeOnly);
            let mut repeats = 0u32;
            assert_eq!(
                aw_config_get_loop_guard_max_repeats(config, &mut repeats),
                aw_result::Ok
            );
            assert_eq!(repeats, 14);
            aw_config_free(config);
        }
    }
}
