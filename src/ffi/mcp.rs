//! `aw_mcp_server`: an MCP server offering an agent a client's own tools (`mcp::Server`),
//! for an embedder that serves them itself; `aw_mcp_config`, its settings (and those of an
//! ACP connection's MCP servers); the outputs of an MCP exchange (`aw_mcp_output`), which
//! an ACP connection's MCP endpoint hands out too; and `aw_mcp_secret_matches`.

use std::ffi::{CStr, c_char};

use super::boundary::{
    Guarded, Handle, Out, boundary, boundary_or, call, call_mut, free_handle, impl_handle,
    input_bytes, input_enum, input_optional_str, input_str, last_error, predicate,
};
use super::bridge::aw_dialect;
use super::config::{aw_config, config_or_default};
use super::names::CEnum;
use super::result::{Error, aw_result};
use super::views::{aw_bytes, aw_str};
use crate::bridge::BridgeParams;
use crate::mcp::{
    self, CallId, CancelReason, ExchangeId, ExchangeOutput, HttpRequest, McpError, McpEvent,
    Server, ToolOutcome,
};

/// Settings for `aw_mcp_server_new` and for an ACP connection's MCP servers
/// (`aw_acp_config_set_mcp`): an opaque handle, created with the defaults of the Rust
/// `mcp::Config::default()` by `aw_mcp_config_new`, changed with the `aw_mcp_config_set_*`
/// functions and freed with `aw_mcp_config_free`. What is made from it copies it.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
pub struct aw_mcp_config(Guarded<mcp::Config>);
impl_handle!(aw_mcp_config, mcp::Config);

/// An MCP server (JSON-RPC 2.0 over MCP's Streamable HTTP or stdio, revisions 2025-03-26,
/// 2025-06-18 and 2025-11-25) offering one agent session the tools of a client's request:
/// an opaque handle created by `aw_mcp_server_new` and freed by `aw_mcp_server_free`. It
/// answers `initialize`, `ping` and `tools/list` itself and holds each `tools/call` pending
/// until `aw_mcp_server_answer_call`, for as long as that takes: the HTTP answer is an SSE
/// stream kept busy with keep-alive comments.
///
/// The loop: for every input (`aw_mcp_server_handle_http` for each HTTP request to the
/// endpoint, after the adapter's Host, Origin and secret checks; `aw_mcp_server_push_stdio`;
/// `aw_mcp_server_answer_call`; `aw_mcp_server_exchange_gone`;
/// `aw_mcp_server_handle_timeout`; `aw_mcp_server_close`) **drain
/// `aw_mcp_server_poll_transmit` (stdio bytes to write), `aw_mcp_server_poll_event`
/// (calls to run, calls cancelled), and `aw_mcp_server_poll_exchange` of every exchange
/// `aw_mcp_server_poll_ready` names, until each returns `AW_RESULT_DRAINED`**, then ask
/// `aw_mcp_server_poll_timeout` for the next deadline.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
pub struct aw_mcp_server(Guarded<ServerState>);
impl_handle!(aw_mcp_server, ServerState);

pub(crate) struct ServerState {
    server: Server,
    /// Exchanges handed out so far: exchange numbers below it were.
    exchanges_started: u64,
    /// The last polled event, which owns what its views point at.
    event: Option<McpEvent>,
}

impl ServerState {
    /// The exchange numbered `exchange`, if this server handed it out.
    fn exchange(&self, exchange: u64) -> Result<ExchangeId, Error> {
        if exchange < self.exchanges_started {
            Ok(ExchangeId(exchange))
        } else {
            Err(Error::new(
                aw_result::UnknownExchange,
                format!(
                    "exchange {exchange} was never handed out by this server ({} were)",
                    self.exchanges_started
                ),
            ))
        }
    }
}

impl From<McpError> for Error {
    fn from(error: McpError) -> Error {
        let code = match error {
            McpError::UnknownCall(_) => aw_result::UnknownCall,
            McpError::NotPending(_) => aw_result::CallNotPending,
        };
        Error::new(code, error.to_string())
    }
}

/// What an MCP exchange's response does next.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_mcp_output_kind {
    /// Send the head (exactly once, first): `status`, `content_type` when not empty (then
    /// also `Cache-Control: no-cache` for `text/event-stream`, whose body chunks are to be
    /// flushed as they come), `Mcp-Session-Id: session_id` when not empty, and
    /// `Allow: allow` when not empty.
    Head = 0,
    /// Write `body` to the response and flush it.
    Body = 1,
    /// End the response. Nothing follows: every later poll of the exchange returns
    /// `AW_RESULT_DRAINED`.
    End = 2,
}

/// One output of an MCP exchange. Only the members of its `kind` are meaningful; the
/// others are zero or empty.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_mcp_output {
    /// What to do.
    pub kind: aw_mcp_output_kind,
    /// `AW_MCP_OUTPUT_KIND_HEAD`: the HTTP status.
    pub status: u16,
    /// `AW_MCP_OUTPUT_KIND_HEAD`: the `Content-Type` (`application/json` or
    /// `text/event-stream`), empty for a response without a body; static and
    /// NUL-terminated.
    pub content_type: aw_str,
    /// `AW_MCP_OUTPUT_KIND_HEAD`: the `Mcp-Session-Id` to send, empty for none.
    pub session_id: aw_str,
    /// `AW_MCP_OUTPUT_KIND_HEAD`: the `Allow` header to send (with 405), empty for none;
    /// static and NUL-terminated.
    pub allow: aw_str,
    /// `AW_MCP_OUTPUT_KIND_BODY`: the bytes to write.
    pub body: aw_bytes,
}

impl aw_mcp_output {
    pub(crate) fn of(output: &ExchangeOutput<'_>) -> aw_mcp_output {
        let empty = aw_mcp_output {
            kind: aw_mcp_output_kind::End,
            status: 0,
            content_type: aw_str::EMPTY,
            session_id: aw_str::EMPTY,
            allow: aw_str::EMPTY,
            body: aw_bytes::EMPTY,
        };
        match output {
            ExchangeOutput::Head(head) => aw_mcp_output {
                kind: aw_mcp_output_kind::Head,
                status: head.status,
                content_type: head.content_type.map_or(aw_str::EMPTY, static_header),
                session_id: head.session_id.map_or(aw_str::EMPTY, aw_str::of),
                allow: head.allow.map_or(aw_str::EMPTY, static_header),
                ..empty
            },
            ExchangeOutput::Body(bytes) => aw_mcp_output {
                kind: aw_mcp_output_kind::Body,
                body: aw_bytes::of(bytes),
                ..empty
            },
            ExchangeOutput::End => empty,
        }
    }
}

/// A static header value as a NUL-terminated string.
fn static_header(value: &'static str) -> aw_str {
    let known: [&'static CStr; 3] = [c"application/json", c"text/event-stream", c"POST, DELETE"];
    known
        .into_iter()
        .find(|c| c.to_bytes() == value.as_bytes())
        .map_or_else(|| aw_str::of(value), aw_str::of_c)
}

/// What `aw_mcp_server_poll_event` hands out.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_mcp_event_kind {
    /// The agent called a client tool (`call`, `tool`, `tool_name`, `arguments`): run it,
    /// then answer with `aw_mcp_server_answer_call`.
    Call = 0,
    /// A pending call ended without an answer (`call`, `cancel_reason`, `cancel_message`);
    /// answering it now is `AW_RESULT_CALL_NOT_PENDING`.
    Cancelled = 1,
    /// The call (`call`) has been pending for the configured `call_limit_ms`: answer it
    /// now if the agent would give up on it. Sent once per call.
    CallLimit = 2,
    /// The agent ended the session (HTTP `DELETE`): every pending call was cancelled
    /// first, and the server serves nothing more.
    Closed = 3,
}

/// Why a pending call ended without an answer.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_mcp_cancel_reason {
    /// Not a cancellation (an event of another kind).
    None = 0,
    /// The agent sent `notifications/cancelled` (with `cancel_message` when it gave a
    /// reason).
    Requested = 1,
    /// The HTTP connection that would carry the answer closed
    /// (`aw_mcp_server_exchange_gone`).
    Disconnected = 2,
    /// The agent ended the session (HTTP `DELETE`).
    SessionDeleted = 3,
}

/// One event of an MCP server. Only the members of its `kind` are meaningful; the others
/// are zero or empty.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_mcp_event {
    /// What happened.
    pub kind: aw_mcp_event_kind,
    /// The call's number (every kind but `AW_MCP_EVENT_KIND_CLOSED`): unique within its
    /// server, rising in the order calls were made.
    pub call: u64,
    /// `AW_MCP_EVENT_KIND_CALL`: the tool's index in the request's `tools`.
    pub tool: usize,
    /// `AW_MCP_EVENT_KIND_CALL`: the tool's name as the client knows it.
    pub tool_name: aw_str,
    /// `AW_MCP_EVENT_KIND_CALL`: the client's input for the call: for a function tool the
    /// JSON arguments text as the agent sent it, for a freeform tool the raw text.
    pub arguments: aw_str,
    /// `AW_MCP_EVENT_KIND_CANCELLED`: why.
    pub cancel_reason: aw_mcp_cancel_reason,
    /// `AW_MCP_EVENT_KIND_CANCELLED`: whether the agent gave a reason.
    pub has_cancel_message: bool,
    /// `AW_MCP_EVENT_KIND_CANCELLED`: the agent's reason.
    pub cancel_message: aw_str,
}

impl aw_mcp_event {
    fn of(event: &McpEvent, server: &Server) -> aw_mcp_event {
        let empty = aw_mcp_event {
            kind: aw_mcp_event_kind::Closed,
            call: 0,
            tool: 0,
            tool_name: aw_str::EMPTY,
            arguments: aw_str::EMPTY,
            cancel_reason: aw_mcp_cancel_reason::None,
            has_cancel_message: false,
            cancel_message: aw_str::EMPTY,
        };
        match event {
            McpEvent::Call {
                call,
                tool,
                arguments,
            } => aw_mcp_event {
                kind: aw_mcp_event_kind::Call,
                call: call.get(),
                tool: *tool,
                tool_name: server
                    .tools()
                    .get(*tool)
                    .map_or(aw_str::EMPTY, |t| aw_str::of(&t.name)),
                arguments: aw_str::of(arguments),
                ..empty
            },
            McpEvent::Cancelled { call, reason } => {
                let (cancel_reason, message) = match reason {
                    CancelReason::Requested(message) => {
                        (aw_mcp_cancel_reason::Requested, message.as_deref())
                    }
                    CancelReason::Disconnected => (aw_mcp_cancel_reason::Disconnected, None),
                    CancelReason::SessionDeleted => (aw_mcp_cancel_reason::SessionDeleted, None),
                };
                aw_mcp_event {
                    kind: aw_mcp_event_kind::Cancelled,
                    call: call.get(),
                    cancel_reason,
                    has_cancel_message: message.is_some(),
                    cancel_message: message.map_or(aw_str::EMPTY, aw_str::of),
                    ..empty
                }
            }
            McpEvent::CallLimit { call } => aw_mcp_event {
                kind: aw_mcp_event_kind::CallLimit,
                call: call.get(),
                ..empty
            },
            McpEvent::Closed => empty,
        }
    }
}

/// An HTTP request to an MCP endpoint as C hands it over: pointer and length of each
/// part, the headers NULL when absent.
pub(crate) struct RequestArgs {
    pub(crate) method: *const c_char,
    pub(crate) method_len: usize,
    pub(crate) accept: *const c_char,
    pub(crate) accept_len: usize,
    pub(crate) content_type: *const c_char,
    pub(crate) content_type_len: usize,
    pub(crate) session_id: *const c_char,
    pub(crate) session_id_len: usize,
    pub(crate) protocol_version: *const c_char,
    pub(crate) protocol_version_len: usize,
    pub(crate) body: *const u8,
    pub(crate) body_len: usize,
}

impl RequestArgs {
    /// The request the arguments describe.
    ///
    /// # Safety
    /// Each pointer is NULL or points to its length's readable bytes, unchanged during
    /// the call and the use of the result.
    pub(crate) unsafe fn read<'a>(&self) -> Result<HttpRequest<'a>, Error> {
        // SAFETY: forwarded contract.
        unsafe {
            Ok(HttpRequest {
                method: input_str(self.method, self.method_len, "method")?,
                accept: input_optional_str(self.accept, self.accept_len, "accept")?,
                content_type: input_optional_str(
                    self.content_type,
                    self.content_type_len,
                    "content_type",
                )?,
                session_id: input_optional_str(self.session_id, self.session_id_len, "session_id")?,
                protocol_version: input_optional_str(
                    self.protocol_version,
                    self.protocol_version_len,
                    "protocol_version",
                )?,
                body: input_bytes(self.body, self.body_len, "body")?,
            })
        }
    }
}

/// A copy of the config behind `config`: the defaults when NULL; `AW_RESULT_POISONED` or
/// `AW_RESULT_BUSY` (the config is in a call on another thread).
///
/// # Safety
/// `config` is NULL or a live `aw_mcp_config`.
pub(crate) unsafe fn mcp_config_or_default(
    config: *const aw_mcp_config,
) -> Result<mcp::Config, aw_result> {
    if config.is_null() {
        return Ok(mcp::Config::default());
    }
    // SAFETY: forwarded contract; not NULL.
    let guarded = unsafe { aw_mcp_config::from_ptr(config) }?;
    guarded.read(mcp::Config::clone)
}

/// Applies `f` to the config behind `config`.
///
/// # Safety
/// `config` is NULL or a live `aw_mcp_config`.
unsafe fn set(
    config: *mut aw_mcp_config,
    f: impl FnOnce(&mut mcp::Config) -> Result<(), Error>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe { call_mut(config, |c| f(c).map(|()| aw_result::Ok)) }
}

/// Writes `f(config)` to `*out`, or returns `AW_RESULT_NOT_AVAILABLE` when it is `None`.
///
/// # Safety
/// `config` is NULL or a live `aw_mcp_config`; `out` is NULL or writable as a `T`.
unsafe fn get<T>(
    config: *const aw_mcp_config,
    out: *mut T,
    f: impl FnOnce(&mcp::Config) -> Option<T>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(config, |c| {
            let out = Out::new(out, "out_value")?;
            Ok(out.write_optional(f(c)))
        })
    }
}

/// Creates an MCP config with the defaults (those of the Rust `mcp::Config::default()`)
/// and writes it to `*out_config`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NULL_PARAMETER` when `out_config` is NULL.
///
/// Memory and lifetimes: the caller owns the new config and frees it with
/// `aw_mcp_config_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_new(out_config: *mut *mut aw_mcp_config) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_config` is NULL or writable.
        let out = match unsafe { Out::new(out_config, "out_config") } {
            Ok(out) => out,
            Err(error) => return error.code,
        };
        out.write(aw_mcp_config::into_raw(mcp::Config::default()));
        aw_result::Ok
    })
}

/// Frees an MCP config. NULL does nothing. What was made from it is not affected. A free
/// that overlaps a call on the config (from another thread) is refused, as
/// `aw_config_free` says.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_free(config: *mut aw_mcp_config) {
    // SAFETY: the pointer rules: `config` is NULL or a live config, freed once.
    unsafe { free_handle(config) }
}

/// The message of the last call on `config` that failed, NUL-terminated; `""` when none
/// failed or `config` is NULL.
///
/// Memory and lifetimes: valid until the next call on `config` (from any thread) or its
/// free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_last_error(config: *const aw_mcp_config) -> *const c_char {
    // SAFETY: the pointer rules: `config` is NULL or a live config.
    unsafe { last_error(config) }
}

/// Sets `server_name`: `serverInfo.name` in the `initialize` answer (default
/// `"agentwire"`). `data` holds `len` bytes of UTF-8 (a terminator is not needed).
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_server_name(
    config: *mut aw_mcp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.server_name = input_str(data, len, "server_name")?.to_owned();
            Ok(())
        })
    }
}

/// Reads `server_name` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on
/// `config` or its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_server_name(
    config: *const aw_mcp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(aw_str::of(&c.server_name))) }
}

/// Sets `server_version`: `serverInfo.version` in the `initialize` answer (default this
/// library's crate version). `data` holds `len` bytes of UTF-8.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_server_version(
    config: *mut aw_mcp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.server_version = input_str(data, len, "server_version")?.to_owned();
            Ok(())
        })
    }
}

/// Reads `server_version` into `*out_value`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on
/// `config` or its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_server_version(
    config: *const aw_mcp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(aw_str::of(&c.server_version))) }
}

/// Sets `instructions`: `instructions` in the `initialize` answer, which agents may show
/// their model (default none). `data` holds `len` bytes of UTF-8.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER` or
/// `AW_RESULT_LENGTH_TOO_LARGE`; on failure the config is unchanged.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_instructions(
    config: *mut aw_mcp_config,
    data: *const c_char,
    len: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.instructions = Some(input_str(data, len, "instructions")?.to_owned());
            Ok(())
        })
    }
}

/// Clears `instructions` (none are sent).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_clear_instructions(config: *mut aw_mcp_config) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.instructions = None;
            Ok(())
        })
    }
}

/// Reads `instructions` into `*out_value`: `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE`
/// when there are none.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on
/// `config` or its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_instructions(
    config: *const aw_mcp_config,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        get(config, out_value, |c| {
            c.instructions.as_deref().map(aw_str::of)
        })
    }
}

/// Sets `keep_alive_ms`: the interval of `: keepalive` comments on an SSE answer while a
/// call is pending; 0 sends none (default 15000: the recorded agents cut a silent answer
/// at about 60 s and kept one with a comment every 15 s open for the 330 s measured).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_keep_alive_ms(
    config: *mut aw_mcp_config,
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

/// Reads `keep_alive_ms` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_keep_alive_ms(
    config: *const aw_mcp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.keep_alive_ms)) }
}

/// Sets `call_limit_ms`: when a call has been pending this long, an
/// `AW_MCP_EVENT_KIND_CALL_LIMIT` event says so (once per call), so that it can be
/// answered before the agent gives up on its own; the server answers nothing by itself
/// (default none). An ACP connection lowers it below the agent's own limit where that is
/// known.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_call_limit_ms(
    config: *mut aw_mcp_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.call_limit_ms = Some(value);
            Ok(())
        })
    }
}

/// Clears `call_limit_ms` (no limit).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_clear_call_limit_ms(
    config: *mut aw_mcp_config,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.call_limit_ms = None;
            Ok(())
        })
    }
}

/// Reads `call_limit_ms` into `*out_value`: `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE`
/// when there is no limit.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_call_limit_ms(
    config: *const aw_mcp_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.call_limit_ms) }
}

/// Sets `max_pending_calls`: calls pending at once; one more is answered with a JSON-RPC
/// error (default 32).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_max_pending_calls(
    config: *mut aw_mcp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_pending_calls = value;
            Ok(())
        })
    }
}

/// Reads `max_pending_calls` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_max_pending_calls(
    config: *const aw_mcp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.max_pending_calls)) }
}

/// Sets `max_body_bytes`: the largest POST body, and the longest stdio line, accepted; a
/// larger body is answered 413, a longer line with a JSON-RPC error (default 4 MiB). The
/// adapter may stop reading a body past it and hand in what it read.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_max_body_bytes(
    config: *mut aw_mcp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_body_bytes = value;
            Ok(())
        })
    }
}

/// Reads `max_body_bytes` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_max_body_bytes(
    config: *const aw_mcp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.max_body_bytes)) }
}

/// Sets `max_exchanges`: HTTP exchanges open at once (not yet ended and taken); one more
/// is answered 503. Keep it above `max_pending_calls`, so that a cancellation still gets
/// in while every call holds a stream (default 64).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_set_max_exchanges(
    config: *mut aw_mcp_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe {
        set(config, |c| {
            c.max_exchanges = value;
            Ok(())
        })
    }
}

/// Reads `max_exchanges` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_get_max_exchanges(
    config: *const aw_mcp_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| Some(c.max_exchanges)) }
}

/// Creates an MCP server offering the tools of a client's request, writing it to
/// `*out_server`.
///
/// Parameters:
/// - `dialect`, `body`, `body_len`: the client's request, of the API its route speaks
///   (an `aw_dialect`); only its `tools` are read (each with its exact JSON schema; a
///   Responses freeform tool as one string parameter `input`).
/// - `config`: the request limits to read it with (an `aw_config`, read during the call;
///   NULL for the defaults).
/// - `mcp_config`: the server's settings (copied; NULL for the defaults).
/// - `session_id`, `session_id_len`: the MCP session id, sent as `Mcp-Session-Id`: a
///   random value the caller draws (at least 128 bits: it is a credential of the session),
///   1 or more visible ASCII characters.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_REQUEST` (the body is not a valid request of
/// `dialect`), `AW_RESULT_INVALID_SESSION_ID`, `AW_RESULT_INVALID_ENUM` (`dialect`),
/// `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`,
/// `AW_RESULT_POISONED` or `AW_RESULT_BUSY` (about a config). No server exists to hold a
/// message: the result says what was wrong.
///
/// Memory and lifetimes: the inputs are read during the call only. The caller owns the
/// new server and frees it with `aw_mcp_server_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_new(
    dialect: u32,
    body: *const u8,
    body_len: usize,
    config: *const aw_config,
    mcp_config: *const aw_mcp_config,
    session_id: *const c_char,
    session_id_len: usize,
    out_server: *mut *mut aw_mcp_server,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_server` is NULL or writable, the data pointers
        // NULL or their lengths' readable bytes, the configs NULL or live.
        let made = unsafe {
            (|| -> Result<_, aw_result> {
                let out = Out::new(out_server, "out_server").map_err(|e| e.code)?;
                let body = input_bytes(body, body_len, "body").map_err(|e| e.code)?;
                let session_id =
                    input_str(session_id, session_id_len, "session_id").map_err(|e| e.code)?;
                let config = config_or_default(config)?;
                let mcp_config = mcp_config_or_default(mcp_config)?;
                Ok((out, body, session_id, config, mcp_config))
            })()
        };
        let (out, body, session_id, config, mcp_config) = match made {
            Ok(made) => made,
            Err(code) => return code,
        };
        let dialect = match input_enum(dialect, "dialect", aw_dialect::from_u32) {
            Ok(dialect) => dialect,
            Err(error) => return error.code,
        };
        if !mcp::is_valid_session_id(session_id) {
            return aw_result::InvalidSessionId;
        }
        // Only the tools are read: the ids and times the response would carry are not.
        let params = BridgeParams {
            now_ms: 0,
            created_unix: 0,
            id_seed: 0,
        };
        let prepared = match dialect.prepare(body, &config, &params) {
            Ok(prepared) => prepared,
            Err(_) => return aw_result::InvalidRequest,
        };
        let server = Server::new(
            &prepared.request.conversation.tools,
            &mcp_config,
            session_id.to_owned(),
        );
        out.write(aw_mcp_server::into_raw(ServerState {
            server,
            exchanges_started: 0,
            event: None,
        }));
        aw_result::Ok
    })
}

/// Frees an MCP server. NULL does nothing. A free that overlaps a call on the server
/// (from another thread) is refused, as `aw_bridge_free` says.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_free(server: *mut aw_mcp_server) {
    // SAFETY: the pointer rules: `server` is NULL or a live server, freed once.
    unsafe { free_handle(server) }
}

/// The message of the last call on `server` that failed, NUL-terminated; `""` when none
/// failed or `server` is NULL.
///
/// Memory and lifetimes: valid until the next call on `server` (from any thread) or its
/// free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_last_error(server: *const aw_mcp_server) -> *const c_char {
    // SAFETY: the pointer rules: `server` is NULL or a live server.
    unsafe { last_error(server) }
}

/// The body of the server getters: writes `f(server)` to `*out`, `AW_RESULT_NOT_AVAILABLE`
/// for `None`.
///
/// # Safety
/// The pointer rules: `server` is NULL or a live server, `out` NULL or writable.
unsafe fn read<T>(
    server: *const aw_mcp_server,
    out: *mut T,
    name: &'static str,
    f: impl FnOnce(&Server) -> Result<Option<T>, Error>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(server, |state| {
            let out = Out::new(out, name)?;
            Ok(out.write_optional(f(&state.server)?))
        })
    }
}

/// The session id the server was made with, into `*out_session_id`.
///
/// Returns `AW_RESULT_OK`.
///
/// Memory and lifetimes: not NUL-terminated; valid until `aw_mcp_server_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_session_id(
    server: *const aw_mcp_server,
    out_session_id: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(server, out_session_id, "out_session_id", |s| {
            Ok(Some(aw_str::of(s.session_id())))
        })
    }
}

/// The protocol version agreed in `initialize`, into `*out_version`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` before `initialize` and after the
/// session closed.
///
/// Memory and lifetimes: static (not NUL-terminated); do not free it.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_protocol_version(
    server: *const aw_mcp_server,
    out_version: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(server, out_version, "out_version", |s| {
            Ok(s.protocol_version().map(aw_str::of))
        })
    }
}

/// Whether `initialize` was answered and the session is not closed. False for a NULL or
/// poisoned server, and while another thread is inside a call on it.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_is_initialized(server: *const aw_mcp_server) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(server, false, |state| state.server.is_initialized()) }
}

/// Whether the session ended (`aw_mcp_server_close`, or the agent's `DELETE`). True for a
/// NULL or poisoned server (nothing more will come from it) and while another thread is
/// inside a call on it.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_is_closed(server: *const aw_mcp_server) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(server, true, |state| state.server.is_closed()) }
}

/// How many calls were made and neither answered nor ended, into `*out_count`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_pending_calls(
    server: *const aw_mcp_server,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(server, out_count, "out_count", |s| {
            Ok(Some(s.pending_calls()))
        })
    }
}

/// How many tools the server offers (those of the request, in its order), into
/// `*out_count`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_tool_count(
    server: *const aw_mcp_server,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(server, out_count, "out_count", |s| {
            Ok(Some(s.tools().len()))
        })
    }
}

/// The name of tool `index` (from 0, in the request's order) as the agent sees it, into
/// `*out_name`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_INDEX_OUT_OF_RANGE`.
///
/// Memory and lifetimes: not NUL-terminated; valid until `aw_mcp_server_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_tool_name(
    server: *const aw_mcp_server,
    index: usize,
    out_name: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(server, out_name, "out_name", |s| {
            let tools = s.tools();
            let tool = tools.get(index).ok_or_else(|| {
                Error::new(
                    aw_result::IndexOutOfRange,
                    format!(
                        "tool index {index} is out of range (there are {})",
                        tools.len()
                    ),
                )
            })?;
            Ok(Some(aw_str::of(&tool.name)))
        })
    }
}

/// An HTTP request to the MCP endpoint (the adapter routes only the endpoint's path here,
/// and has checked Host, Origin and its own secret), into a new exchange whose number
/// goes to `*out_exchange`; its response comes from `aw_mcp_server_poll_exchange`.
/// Refusals (a bad method, header, session or body) are responses, not failures of this
/// call.
///
/// Parameters: `method` (as sent: `POST`, `GET`, `DELETE`, ...); the headers `Accept`
/// (several joined with `, `), `Content-Type`, `Mcp-Session-Id` and
/// `MCP-Protocol-Version`, each NULL when absent; the whole body (the adapter may stop
/// reading past `max_body_bytes` and hand in what it read: a longer body is answered 413).
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_UTF8` (a header that is not UTF-8: answer
/// 400 yourself), `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: the inputs are read during the call only. Views from earlier
/// calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_handle_http(
    server: *mut aw_mcp_server,
    method: *const c_char,
    method_len: usize,
    accept: *const c_char,
    accept_len: usize,
    content_type: *const c_char,
    content_type_len: usize,
    session_id: *const c_char,
    session_id_len: usize,
    protocol_version: *const c_char,
    protocol_version_len: usize,
    body: *const u8,
    body_len: usize,
    now_ms: u64,
    out_exchange: *mut u64,
) -> aw_result {
    let args = RequestArgs {
        method,
        method_len,
        accept,
        accept_len,
        content_type,
        content_type_len,
        session_id,
        session_id_len,
        protocol_version,
        protocol_version_len,
        body,
        body_len,
    };
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let out = Out::new(out_exchange, "out_exchange")?;
            let request = args.read()?;
            let exchange = state.server.handle_http(&request, now_ms);
            state.exchanges_started = exchange.get() + 1;
            out.write(exchange.get());
            Ok(aw_result::Ok)
        })
    }
}

/// Bytes the agent wrote to the stdio server's stdin, in any chunking: one JSON-RPC
/// message (or batch) a line. Ignored once the server is closed.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `data` is read during the call only. Views from earlier calls
/// become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_push_stdio(
    server: *mut aw_mcp_server,
    data: *const u8,
    len: usize,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let bytes = input_bytes(data, len, "data")?;
            state.server.push_stdio(bytes, now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// Answers the pending call `call` with what the client's tool returned: `text` (UTF-8),
/// and `is_error` when the client reports that the call failed (the agent's model reads
/// it as a failed tool, which it can correct).
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_UNKNOWN_CALL` (no call with this number was made),
/// `AW_RESULT_CALL_NOT_PENDING` (answered, cancelled or dropped already); nothing changes
/// then. `AW_RESULT_INVALID_UTF8`, `AW_RESULT_NULL_PARAMETER`,
/// `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `text` is read during the call only. Views from earlier calls
/// become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_answer_call(
    server: *mut aw_mcp_server,
    call: u64,
    text: *const c_char,
    text_len: usize,
    is_error: bool,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let text = input_str(text, text_len, "text")?;
            let outcome = ToolOutcome::text(text, is_error);
            state.server.answer_call(CallId(call), &outcome, now_ms)?;
            Ok(aw_result::Ok)
        })
    }
}

/// The agent's HTTP connection of `exchange` closed: nothing more is written to it, its
/// outputs need not be polled, and the calls whose answers it owed are cancelled
/// (`AW_MCP_EVENT_KIND_CANCELLED`).
///
/// Returns `AW_RESULT_OK` (for an exchange that ended already too), or
/// `AW_RESULT_UNKNOWN_EXCHANGE` (never handed out). Views from earlier calls become
/// invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_exchange_gone(
    server: *mut aw_mcp_server,
    exchange: u64,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let exchange = state.exchange(exchange)?;
            state.server.exchange_gone(exchange, now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The deadline from `aw_mcp_server_poll_timeout` passed: keep-alive comments and call
/// limits that are due. Calls before it are harmless.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_handle_timeout(
    server: *mut aw_mcp_server,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            state.server.handle_timeout(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// Ends the server from our side: every open exchange ends after what it holds (a stream
/// without its pending answers), pending calls are dropped without events, and every
/// later request is answered 404 (stdio input is ignored).
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_close(server: *mut aw_mcp_server, now_ms: u64) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            state.server.close(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// Bytes to write to the stdio server's stdout (whole JSON-RPC lines), into `*out_bytes`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when there is nothing to write until the
/// next input.
///
/// Memory and lifetimes: valid until the next call on `server` or its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_poll_transmit(
    server: *mut aw_mcp_server,
    out_bytes: *mut aw_bytes,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let out = Out::new(out_bytes, "out_bytes")?;
            Ok(out.write_polled(state.server.poll_transmit().map(aw_bytes::of)))
        })
    }
}

/// The next event, into `*out_event`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when there is none until the next input.
///
/// Memory and lifetimes: `arguments` and `cancel_message` are valid until the next call
/// on `server` or its free; `tool_name` until `aw_mcp_server_free`. None is
/// NUL-terminated.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_poll_event(
    server: *mut aw_mcp_server,
    out_event: *mut aw_mcp_event,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let out = Out::new(out_event, "out_event")?;
            state.event = state.server.poll_event();
            let event = state
                .event
                .as_ref()
                .map(|event| aw_mcp_event::of(event, &state.server));
            Ok(out.write_polled(event))
        })
    }
}

/// An exchange that has output for `aw_mcp_server_poll_exchange`, into `*out_exchange`:
/// each named at most once between two inputs, in the order requests came.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when no other exchange has output.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_poll_ready(
    server: *mut aw_mcp_server,
    out_exchange: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let out = Out::new(out_exchange, "out_exchange")?;
            Ok(out.write_polled(state.server.poll_ready().map(ExchangeId::get)))
        })
    }
}

/// The next output of `exchange`, into `*out_output`: its head, body bytes, then its end.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_DRAINED` until the next input, and for ever after
/// `AW_MCP_OUTPUT_KIND_END` or `aw_mcp_server_exchange_gone`; `AW_RESULT_UNKNOWN_EXCHANGE`
/// for an exchange never handed out.
///
/// Memory and lifetimes: `body` and `session_id` are valid until the next call on
/// `server` or its free; `content_type` and `allow` are static.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_poll_exchange(
    server: *mut aw_mcp_server,
    exchange: u64,
    out_output: *mut aw_mcp_output,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(server, |state| {
            let out = Out::new(out_output, "out_output")?;
            let exchange = state.exchange(exchange)?;
            let output = state.server.poll_exchange(exchange);
            Ok(out.write_polled(output.as_ref().map(aw_mcp_output::of)))
        })
    }
}

/// When `aw_mcp_server_handle_timeout` is next due, on the caller's clock: writes whether
/// a deadline is scheduled to `*out_has_deadline`, and the deadline (or 0) to
/// `*out_deadline_ms`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_poll_timeout(
    server: *const aw_mcp_server,
    out_has_deadline: *mut bool,
    out_deadline_ms: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(server, |state| {
            let out_has = Out::new(out_has_deadline, "out_has_deadline")?;
            let out_deadline = Out::new(out_deadline_ms, "out_deadline_ms")?;
            let deadline = state.server.poll_timeout();
            out_has.write(deadline.is_some());
            out_deadline.write(deadline.unwrap_or(0));
            Ok(aw_result::Ok)
        })
    }
}

/// Whether `given` equals `expected`, in a time that does not depend on where they
/// differ: for comparing a secret (a bearer token, a session id) with what a request
/// carries. A length mismatch returns false at once (the length is not the secret). False
/// for a NULL pointer with a non-zero length, or a length over `PTRDIFF_MAX`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_secret_matches(
    expected: *const u8,
    expected_len: usize,
    given: *const u8,
    given_len: usize,
) -> bool {
    boundary_or(false, || {
        // SAFETY: the pointer rules: each pointer is NULL or its length's readable bytes.
        let (expected, given) = unsafe {
            match (
                input_bytes(expected, expected_len, "expected"),
                input_bytes(given, given_len, "given"),
            ) {
                (Ok(expected), Ok(given)) => (expected, given),
                _ => return false,
            }
        };
        mcp::secret_matches(expected, given)
    })
}
