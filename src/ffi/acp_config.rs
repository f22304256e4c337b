//! `aw_acp_config`: the settings of an ACP connection, one setter and one getter per field
//! of the Rust [`AcpConfig`] a C program needs.
//!
//! Not exposed: `extensions` (answers to agent requests other than permissions: always
//! "method not found" from C) and `default_model_names` (always `auto` and `default`).
//! The nested settings `mcp` and `conversations` are copied from and into their own
//! handles (`aw_mcp_config`, `aw_registry_config`).

use std::ffi::c_char;

use super::boundary::{
    Guarded, Handle, Out, boundary, call, call_mut, free_handle, impl_handle, input_enum,
    input_str, last_error,
};
use super::mcp::{aw_mcp_config, mcp_config_or_default};
use super::names::name_of;
use super::names::{CEnum, mirrors};
use super::registry::{aw_registry_config, registry_config_or_default};
use super::result::{Error, aw_result};
use super::views::aw_str;
use crate::acp::{AcpConfig, NativeTools, PermissionChoice};

/// Settings for `aw_acp_connection_new`: an opaque handle, created with the defaults of the
/// Rust `AcpConfig::default()` by `aw_acp_config_new`, changed with the `aw_acp_config_set_*`
/// functions and freed with `aw_acp_config_free`. A connection copies it when created, so
/// a config may be changed or freed afterwards.
#[allow(non_camel_case_types)]
pub struct aw_acp_config(Guarded<AcpConfig>);
impl_handle!(aw_acp_config, AcpConfig);

/// How an ACP agent's `session/request_permission` is answered: by the offered option's
/// kind, never its id; `allow_always` is never chosen.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_permission_choice {
    /// Select the option of kind `allow_once`: the agent runs the tool this once. The
    /// default.
    AllowOnce = 0,
    /// Select the option of kind `reject_once`.
    RejectOnce = 1,
}

mirrors!(aw_permission_choice => PermissionChoice {
    AllowOnce,
    RejectOnce,
});

/// Whether the agent's own tools (its shell, file edits, web search, ...) are offered to
/// its model; the client's tools, given as an MCP server, are offered either way.
/// `aw_native_tools_name` names a value.
///
/// Since ABI 1.4.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_native_tools {
    /// Kept, except in sessions given the client's tools by an agent that turns them off
    /// per session (claude-agent-acp). The default.
    Keep = 0,
    /// Off in every session: per session where the agent takes that (claude-agent-acp),
    /// and at launch where only its configuration can (codex-acp, Gemini CLI): start the
    /// agent as `aw_acp_launch_new` says.
    Off = 1,
}

mirrors!(aw_native_tools => NativeTools {
    Keep,
    Off,
});

/// The name of an `aw_native_tools` value (`"keep"`, `"off"`), or NULL for a number that
/// is not one.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub extern "C" fn aw_native_tools_name(native_tools: u32) -> *const c_char {
    name_of::<aw_native_tools>(native_tools)
}

/// A copy of the config behind `config`, for a connection being created: the defaults
/// when NULL; `AW_RESULT_POISONED` or `AW_RESULT_BUSY` (the config is in a call on another
/// thread).
///
/// # Safety
/// `config` is NULL or a live `aw_acp_config`.
pub(crate) unsafe fn acp_config_or_default(
    config: *const aw_acp_config,
) -> Result<AcpConfig, aw_result> {
    if config.is_null() {
        return Ok(AcpConfig::default());
    }
    // SAFETY: forwarded contract; not NULL.
    let guarded = unsafe { aw_acp_config::from_ptr(config) }?;
    guarded.read(AcpConfig::clone)
}

/// Applies `f` to the config behind `config`.
///
/// # Safety
/// `config` is NULL or a live `aw_acp_config`.
unsafe fn set(
    config: *mut aw_acp_config,
    f: impl FnOnce(&mut AcpConfig) -> Result<(), Error>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe { call_mut(config, |c| f(c).map(|()| aw_result::Ok)) }
}

/// Writes `f(config)` to `*out`.
///
/// # Safety
/// `config` is NULL or a live `aw_acp_config`; `out` is NULL or writable as a `T`.
unsafe fn get<T>(
    config: *const aw_acp_config,
    out: *mut T,
    f: impl FnOnce(&AcpConfig) -> T,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(config, |c| {
            Out::new(out, "out_value")?.write(f(c));
            Ok(aw_result::Ok)
        })
    }
}

/// Creates a config with the defaults (those of the Rust `AcpConfig::default()`) and
/// writes it to `*out_config`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NULL_PARAMETER` when `out_config` is NULL.
///
/// Memory and lifetimes: the caller owns the new config and frees it with
/// `aw_acp_config_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_new(out_config: *mut *mut aw_acp_config) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_config` is NULL or writable.
        let out = match unsafe { Out::new(out_config, "out_config") } {
            Ok(out) => out,
            Err(error) => return error.code,
        };
        out.write(aw_acp_config::into_raw(AcpConfig::default()));
        aw_result::Ok
    })
}

/// Frees a config. NULL does nothing. Connections created from it are not affected. A
/// free that overlaps a call on the config (from another thread) is refused, as
/// `aw_config_free` says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_free(config: *mut aw_acp_config) {
    // SAFETY: the pointer rules: `config` is NULL or a live config, freed once.
    unsafe { free_handle(config) }
}

/// The message of the last call on `config` that failed, NUL-terminated; `""` when none
/// failed or `config` is NULL.
///
/// Memory and lifetimes: valid until the next call on `config` (from any thread) or its
/// free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_last_error(config: *const aw_acp_config) -> *const c_char {
    // SAFETY: the pointer rules: `config` is NULL or a live config.
    unsafe { last_error(config) }
}

/// Sets `cwd`: the working directory sessions are created in (`session/new` `cwd`; ACP wants an absolute path; default `"/"`). `data` holds `len` bytes of UTF-8 (a terminator is not needed).
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_cwd(
    config: *mut aw_acp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.cwd = input_str(data, len, "cwd")?.to_owned();
            Ok(())
        })
    }
}

/// Reads `cwd` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on `config`
/// or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_cwd(
    config: *const aw_acp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| aw_str::of(&c.cwd)) }
}

/// Sets `client_name`: `clientInfo.name` in `initialize` (default `"agentwire"`). `data` holds `len` bytes of UTF-8 (a terminator is not needed).
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_client_name(
    config: *mut aw_acp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.client_name = input_str(data, len, "client_name")?.to_owned();
            Ok(())
        })
    }
}

/// Reads `client_name` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on `config`
/// or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_client_name(
    config: *const aw_acp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| aw_str::of(&c.client_name)) }
}

/// Sets `client_version`: `clientInfo.version` in `initialize` (default this library's crate version). `data` holds `len` bytes of UTF-8 (a terminator is not needed).
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_client_version(
    config: *mut aw_acp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.client_version = input_str(data, len, "client_version")?.to_owned();
            Ok(())
        })
    }
}

/// Reads `client_version` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on `config`
/// or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_client_version(
    config: *const aw_acp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| aw_str::of(&c.client_version)) }
}

/// Sets `permission`, an `aw_permission_choice` (default `AW_PERMISSION_CHOICE_ALLOW_ONCE`).
///
/// Returns `AW_RESULT_OK` or `AW_RESULT_INVALID_ENUM`; on failure the config is unchanged.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_permission(
    config: *mut aw_acp_config,
    value: u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.permission = input_enum(value, "permission", aw_permission_choice::from_u32)?;
            Ok(())
        })
    }
}

/// Reads `permission` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_permission(
    config: *const aw_acp_config,
    out_value: *mut aw_permission_choice,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            aw_permission_choice::of(c.permission)
        })
    }
}

/// Sets `native_tools`, an `aw_native_tools` (default `AW_NATIVE_TOOLS_KEEP`). With
/// `AW_NATIVE_TOOLS_OFF`, start a codex-acp or Gemini CLI agent as `aw_acp_launch_new`
/// says.
///
/// Returns `AW_RESULT_OK` or `AW_RESULT_INVALID_ENUM`; on failure the config is unchanged.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_native_tools(
    config: *mut aw_acp_config,
    value: u32,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.native_tools = input_enum(value, "native_tools", aw_native_tools::from_u32)?;
            Ok(())
        })
    }
}

/// Reads `native_tools` into `*out_value`.
///
/// Since ABI 1.4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_native_tools(
    config: *const aw_acp_config,
    out_value: *mut aw_native_tools,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| aw_native_tools::of(c.native_tools)) }
}

/// Sets `pool_size`: fresh sessions kept ready ahead of need, to hide `session/new`'s latency (default 1; 0 creates sessions on demand).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_pool_size(
    config: *mut aw_acp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.pool_size = value;
            Ok(())
        })
    }
}

/// Reads `pool_size` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_pool_size(
    config: *const aw_acp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.pool_size) }
}

/// Sets `max_concurrent_prompts`: prompts running at once; more wait in a queue (default 4).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_max_concurrent_prompts(
    config: *mut aw_acp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_concurrent_prompts = value;
            Ok(())
        })
    }
}

/// Reads `max_concurrent_prompts` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_max_concurrent_prompts(
    config: *const aw_acp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.max_concurrent_prompts) }
}

/// Sets `queue_timeout_ms`: how long a request may wait in that queue before it fails with 503 (default 30000).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_queue_timeout_ms(
    config: *mut aw_acp_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.queue_timeout_ms = value;
            Ok(())
        })
    }
}

/// Reads `queue_timeout_ms` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_queue_timeout_ms(
    config: *const aw_acp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.queue_timeout_ms) }
}

/// Sets `initialize_timeout_ms`: the deadline for the `initialize` answer (default 10000).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_initialize_timeout_ms(
    config: *mut aw_acp_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.initialize_timeout_ms = value;
            Ok(())
        })
    }
}

/// Reads `initialize_timeout_ms` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_initialize_timeout_ms(
    config: *const aw_acp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.initialize_timeout_ms) }
}

/// Sets `new_session_timeout_ms`: the deadline for a `session/new` answer (default 30000).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_new_session_timeout_ms(
    config: *mut aw_acp_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.new_session_timeout_ms = value;
            Ok(())
        })
    }
}

/// Reads `new_session_timeout_ms` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_new_session_timeout_ms(
    config: *const aw_acp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.new_session_timeout_ms) }
}

/// Sets `set_model_timeout_ms`: the deadline for a `session/set_config_option` or `session/set_model` answer (default 10000).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_set_model_timeout_ms(
    config: *mut aw_acp_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.set_model_timeout_ms = value;
            Ok(())
        })
    }
}

/// Reads `set_model_timeout_ms` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_set_model_timeout_ms(
    config: *const aw_acp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.set_model_timeout_ms) }
}

/// Sets `cancel_timeout_ms`: how long a cancelled prompt may take to end before its session is given up (default 10000).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_cancel_timeout_ms(
    config: *mut aw_acp_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.cancel_timeout_ms = value;
            Ok(())
        })
    }
}

/// Reads `cancel_timeout_ms` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_cancel_timeout_ms(
    config: *const aw_acp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.cancel_timeout_ms) }
}

/// Sets `turn_output_budget`: response bytes a turn may hold that the caller has not taken yet; a turn over it is cancelled with a clear error, so that one slow client never stops the agent's stdout (default 8 MiB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_turn_output_budget(
    config: *mut aw_acp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.turn_output_budget = value;
            Ok(())
        })
    }
}

/// Reads `turn_output_budget` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_turn_output_budget(
    config: *const aw_acp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.turn_output_budget) }
}

/// Sets `max_line_len`: the longest agent stdout line accepted (default 64 MiB).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_max_line_len(
    config: *mut aw_acp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_line_len = value;
            Ok(())
        })
    }
}

/// Reads `max_line_len` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_max_line_len(
    config: *const aw_acp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.max_line_len) }
}

/// Sets `stderr_tail_bytes`: bytes of the agent's stderr kept for failure messages (default 4096).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_stderr_tail_bytes(
    config: *mut aw_acp_config,
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

/// Reads `stderr_tail_bytes` into `*out_value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_stderr_tail_bytes(
    config: *const aw_acp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.stderr_tail_bytes) }
}

/// Sets `mcp_endpoint`: where the adapter serves the MCP endpoint of client-tool sessions,
/// on loopback: the URL a session's server path is appended to
/// (`http://127.0.0.1:PORT/mcp/`). With it, a conversation turn's client tools are given
/// to the agent as an MCP server of their own session (`aw_acp_connection_handle_mcp`);
/// without it (the default), a request with client tools is refused (400 naming `tools`).
/// `data` holds `len` bytes of UTF-8.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_mcp_endpoint(
    config: *mut aw_acp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.mcp_endpoint = Some(input_str(data, len, "mcp_endpoint")?.to_owned());
            Ok(())
        })
    }
}

/// Clears `mcp_endpoint`: requests with client tools are refused.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_clear_mcp_endpoint(config: *mut aw_acp_config) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.mcp_endpoint = None;
            Ok(())
        })
    }
}

/// Reads `mcp_endpoint` into `*out_value`: `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE`
/// when there is none.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on `config`
/// or its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_mcp_endpoint(
    config: *const aw_acp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        call(config, |c| {
            let out = Out::new(out_value, "out_value")?;
            Ok(out.write_optional(c.mcp_endpoint.as_deref().map(aw_str::of)))
        })
    }
}

/// Sets `mcp_server_name`: the MCP server's name in `session/new`, which the agent puts in
/// the tool names its model sees (`mcp__client__read` for Claude; default `"client"`).
/// `data` holds `len` bytes of UTF-8.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_mcp_server_name(
    config: *mut aw_acp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.mcp_server_name = input_str(data, len, "mcp_server_name")?.to_owned();
            Ok(())
        })
    }
}

/// Reads `mcp_server_name` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on `config`
/// or its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_mcp_server_name(
    config: *const aw_acp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| aw_str::of(&c.mcp_server_name)) }
}

/// Sets `mcp`, the settings of the sessions' MCP servers (keep-alive, call limit, body
/// and exchange limits), to a copy of `mcp_config`'s (NULL: the defaults).
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_POISONED` or `AW_RESULT_BUSY` about `mcp_config`
/// (the config is unchanged then).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_mcp(
    config: *mut aw_acp_config,
    mcp_config: *const aw_mcp_config,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.mcp = mcp_config_or_default(mcp_config).map_err(|code| {
                Error::new(code, "`mcp_config` is poisoned or in use by another call")
            })?;
            Ok(())
        })
    }
}

/// A copy of `mcp`, the settings of the sessions' MCP servers, as a new `aw_mcp_config`
/// written to `*out_mcp_config`.
///
/// Returns `AW_RESULT_OK`.
///
/// Memory and lifetimes: the caller owns the new config and frees it with
/// `aw_mcp_config_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_mcp(
    config: *const aw_acp_config,
    out_mcp_config: *mut *mut aw_mcp_config,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        call(config, |c| {
            let out = Out::new(out_mcp_config, "out_mcp_config")?;
            out.write(aw_mcp_config::into_raw(c.mcp.clone()));
            Ok(aw_result::Ok)
        })
    }
}

/// Sets `conversations`, the settings of the connection's conversations registry (on or
/// off, time to live, parked sessions in all and per owner), to a copy of
/// `registry_config`'s (NULL: the registry's defaults, which are not the connection's:
/// see `aw_acp_config_new`).
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_POISONED` or `AW_RESULT_BUSY` about
/// `registry_config` (the config is unchanged then).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_set_conversations(
    config: *mut aw_acp_config,
    registry_config: *const aw_registry_config,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.conversations = registry_config_or_default(registry_config).map_err(|code| {
                Error::new(
                    code,
                    "`registry_config` is poisoned or in use by another call",
                )
            })?;
            Ok(())
        })
    }
}

/// A copy of `conversations`, the settings of the connection's conversations registry,
/// as a new `aw_registry_config` written to `*out_registry_config`. By default at most 16
/// sessions are parked (8 per owner): a parked ACP session is kept by the agent.
///
/// Returns `AW_RESULT_OK`.
///
/// Memory and lifetimes: the caller owns the new config and frees it with
/// `aw_registry_config_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_get_conversations(
    config: *const aw_acp_config,
    out_registry_config: *mut *mut aw_registry_config,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        call(config, |c| {
            let out = Out::new(out_registry_config, "out_registry_config")?;
            out.write(aw_registry_config::into_raw(c.conversations.clone()));
            Ok(aw_result::Ok)
        })
    }
}
