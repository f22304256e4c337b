//! `aw_acp_connection`: one warm ACP agent process serving many requests, each a turn
//! addressed by a number, with the same outputs as an `aw_bridge`.

use std::ffi::c_char;

use super::acp_config::{acp_config_or_default, aw_acp_config};
use super::boundary::{
    Guarded, Handle, Out, Outcome, boundary, call, call_mut, free_handle, impl_handle, input_bytes,
    input_enum, input_optional_bytes, input_str, last_error, predicate,
};
use super::bridge::{aw_dialect, aw_output};
use super::config::{aw_config, config_or_default};
use super::mcp::{RequestArgs, aw_mcp_output};
use super::names::CEnum;
use super::registry::{CallerArgs, aw_registry_stats, fresh_count};
use super::result::{Error, aw_result};
use super::views::{aw_bytes, aw_str};
use crate::acp::{Connection, ConnectionError, Decision, McpExchange, McpRefusal, TurnId};
use crate::bridge::BridgeParams;
use crate::cursor::ExitStatus;
use crate::mcp::ExchangeId;

/// One ACP agent process (JSON-RPC 2.0 over its stdin and stdout: `gemini --acp`,
/// `claude-agent-acp`, `codex-acp`, ...) serving many requests, each a turn on a fresh
/// session: an opaque handle created by `aw_acp_connection_new` and freed by
/// `aw_acp_connection_free`.
///
/// The loop: spawn the agent in its own process group once, create the connection, then
/// for every input (`aw_acp_connection_start_turn` for each HTTP request,
/// `aw_acp_connection_push_stdout`, `aw_acp_connection_push_stderr`,
/// `aw_acp_connection_agent_exited_*`, `aw_acp_connection_handle_timeout`,
/// `aw_acp_connection_client_gone`, `aw_acp_connection_shutdown`) **drain
/// `aw_acp_connection_poll_transmit` (write the bytes to the agent's stdin),
/// `aw_acp_connection_poll_decision` (`AW_ACP_DECISION_KIND_RESTART`: kill the process group
/// and start a new agent with a new connection), and for every turn
/// `aw_acp_connection_poll_ready` names, `aw_acp_connection_poll_output` until each returns
/// `AW_RESULT_DRAINED`**, then ask `aw_acp_connection_poll_timeout` for the next deadline.
/// A turn's outputs are those of `aw_bridge_poll_output` except that
/// `AW_OUTPUT_KIND_STOP_AGENT` and `AW_OUTPUT_KIND_RESPAWN` never appear (the turn's
/// session is cancelled instead).
///
/// Conversations: a turn started with `aw_acp_connection_start_conversation_turn` resumes
/// the parked session holding its conversation so far when there is one, and serves the
/// request's client tools to the agent as an MCP server of the session's own when the
/// config has an MCP endpoint (`aw_acp_config_set_mcp_endpoint`). The adapter then serves
/// that endpoint on loopback: each HTTP request to it goes to
/// `aw_acp_connection_handle_mcp` (after the adapter's Host and Origin checks), and after
/// every input it also drains, for every exchange `aw_acp_connection_poll_mcp_ready`
/// names, `aw_acp_connection_poll_mcp_output` until `AW_RESULT_DRAINED`, writing each
/// head and body to that HTTP response; an HTTP connection that closes first is
/// `aw_acp_connection_mcp_exchange_gone`.
#[allow(non_camel_case_types)]
pub struct aw_acp_connection(Guarded<ConnectionState>);
impl_handle!(aw_acp_connection, ConnectionState);

pub(crate) struct ConnectionState {
    connection: Connection,
    /// Turns started so far: turn numbers below it were handed out.
    turns_started: u64,
    /// The last polled decision, which owns the reason its view points at.
    decision: Option<Decision>,
}

impl From<ConnectionError> for Error {
    fn from(error: ConnectionError) -> Error {
        let code = match error {
            ConnectionError::AfterExit => aw_result::AfterExit,
            ConnectionError::ExitedTwice => aw_result::ExitedTwice,
        };
        Error::new(code, error.to_string())
    }
}

impl ConnectionState {
    /// The turn numbered `turn`, if this connection handed it out.
    fn turn(&self, turn: u64) -> Result<TurnId, Error> {
        if turn < self.turns_started {
            Ok(TurnId(turn))
        } else {
            Err(Error::new(
                aw_result::UnknownTurn,
                format!(
                    "turn {turn} was never started on this connection ({} were)",
                    self.turns_started
                ),
            ))
        }
    }
}

/// What `aw_acp_connection_poll_decision` hands out.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_acp_decision_kind {
    /// Kill the agent's process group and start a new agent process with a new connection;
    /// this one serves nothing more.
    Restart = 0,
}

/// A connection-level decision.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_acp_decision {
    /// What to do.
    pub kind: aw_acp_decision_kind,
    /// Why, for logs (UTF-8, not NUL-terminated).
    pub reason: aw_str,
}

/// Creates a connection to a just-spawned ACP agent, writing it to `*out_connection`; its
/// first transmit is the `initialize` request.
///
/// Parameters:
/// - `config`: the settings, copied; NULL for the defaults.
/// - `now_ms`: now on the caller's monotonic millisecond clock; every later `now_ms` of
///   this connection is on the same clock.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_NULL_PARAMETER` (`out_connection` NULL),
/// `AW_RESULT_POISONED` (a poisoned `config`), `AW_RESULT_BUSY` (`config` is in a call on
/// another thread).
///
/// Memory and lifetimes: the caller owns the new connection and frees it with
/// `aw_acp_connection_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_new(
    config: *const aw_acp_config,
    now_ms: u64,
    out_connection: *mut *mut aw_acp_connection,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_connection` is NULL or writable, `config` NULL or
        // a live ACP config.
        let (out, config) = unsafe {
            let out = match Out::new(out_connection, "out_connection") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            match acp_config_or_default(config) {
                Ok(config) => (out, config),
                Err(code) => return code,
            }
        };
        out.write(aw_acp_connection::into_raw(ConnectionState {
            connection: Connection::new(config, now_ms),
            turns_started: 0,
            decision: None,
        }));
        aw_result::Ok
    })
}

/// Frees a connection and every turn in it. NULL does nothing. Free it whatever state it
/// is in (poisoned too); views it handed out become invalid. A free that overlaps a call
/// on the connection (from another thread) is refused, as `aw_bridge_free` says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_free(connection: *mut aw_acp_connection) {
    // SAFETY: the pointer rules: `connection` is NULL or a live connection, freed once.
    unsafe { free_handle(connection) }
}

/// The message of the last call on `connection` that failed, NUL-terminated; `""` when
/// none failed or `connection` is NULL.
///
/// Memory and lifetimes: valid until the next call on `connection` (from any thread) or
/// its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_last_error(
    connection: *const aw_acp_connection,
) -> *const c_char {
    // SAFETY: the pointer rules: `connection` is NULL or a live connection.
    unsafe { last_error(connection) }
}

/// Whether the handshake succeeded and the agent is serving. False for a NULL or poisoned
/// connection, and while another thread is inside a call on it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_is_ready(connection: *const aw_acp_connection) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(connection, false, |state| state.connection.is_ready()) }
}

/// Whether the connection serves nothing more (the handshake failed, the agent exited, or
/// a restart was decided). True for a NULL or poisoned connection (nothing more will come
/// from it) and while another thread is inside a call on it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_is_dead(connection: *const aw_acp_connection) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(connection, true, |state| state.connection.is_dead()) }
}

/// How many turns have a response that has not ended yet, into `*out_count`.
///
/// Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_active_turns(
    connection: *const aw_acp_connection,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { read(connection, out_count, "out_count", |c| c.active_turns()) }
}

/// How many agent stdout lines were not JSON-RPC (ignored), into `*out_count`.
///
/// Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_malformed_lines(
    connection: *const aw_acp_connection,
    out_count: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { read(connection, out_count, "out_count", |c| c.malformed_lines()) }
}

/// How many models the agent offers (from its latest `session/new` answer), into
/// `*out_count`.
///
/// Returns `AW_RESULT_OK` (0 when the agent lists none: then only its default is served),
/// or `AW_RESULT_NOT_AVAILABLE` until a session was created.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_model_count(
    connection: *const aw_acp_connection,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(connection, |state| {
            let out = Out::new(out_count, "out_count")?;
            Ok(out.write_optional(state.connection.models().map(<[String]>::len)))
        })
    }
}

/// The id of model `index` (from 0, in the agent's order), into `*out_model`: what a
/// request's `model` names.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_NOT_AVAILABLE` until a session was created, or
/// `AW_RESULT_INDEX_OUT_OF_RANGE`.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on
/// `connection` or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_model(
    connection: *const aw_acp_connection,
    index: usize,
    out_model: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(connection, |state| {
            let out = Out::new(out_model, "out_model")?;
            let Some(models) = state.connection.models() else {
                return Ok(aw_result::NotAvailable);
            };
            let model = models.get(index).ok_or_else(|| {
                Error::new(
                    aw_result::IndexOutOfRange,
                    format!(
                        "model index {index} is out of range (there are {})",
                        models.len()
                    ),
                )
            })?;
            out.write(aw_str::of(model));
            Ok(aw_result::Ok)
        })
    }
}

/// The model a fresh session uses unless told otherwise, into `*out_model`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` when the agent has not said.
///
/// Memory and lifetimes: as `aw_acp_connection_model`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_current_model(
    connection: *const aw_acp_connection,
    out_model: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(connection, |state| {
            let out = Out::new(out_model, "out_model")?;
            Ok(out.write_optional(state.connection.current_model().map(aw_str::of)))
        })
    }
}

/// A client request of `dialect`, validated and answered as `aw_bridge_new` would, then
/// queued for a session; its number goes to `*out_turn` and its outputs come from
/// `aw_acp_connection_poll_output`. An invalid body (or one with client `tools`, which the
/// agent cannot call) is not a failure of this call: the turn is created and its outputs
/// are the error head, body and end.
///
/// Parameters as `aw_bridge_new`'s: `config` (the request's settings, copied; NULL for the
/// defaults), `now_ms` (the connection's clock), `created_unix`, `id_seed`.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_ENUM` (`dialect`), `AW_RESULT_POISONED` or
/// `AW_RESULT_BUSY` (about `config`), `AW_RESULT_NULL_PARAMETER`,
/// `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `body` is read during the call only. Views from earlier calls
/// become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_start_turn(
    connection: *mut aw_acp_connection,
    dialect: u32,
    body: *const u8,
    body_len: usize,
    config: *const aw_config,
    now_ms: u64,
    created_unix: u64,
    id_seed: u64,
    out_turn: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_turn, "out_turn")?;
            let body = input_bytes(body, body_len, "body")?;
            let config = config_or_default(config).map_err(|code| {
                Error::new(code, "`config` is poisoned or in use by another call")
            })?;
            let dialect = input_enum(dialect, "dialect", aw_dialect::from_u32)?;
            let params = BridgeParams {
                now_ms,
                created_unix,
                id_seed,
            };
            let turn = state.connection.start_turn(dialect, body, &config, params);
            state.turns_started = turn.get() + 1;
            out.write(turn.get());
            Ok(aw_result::Ok)
        })
    }
}

/// Feeds bytes the agent wrote to stdout, in any chunking. Every line these bytes
/// complete is handled now; drain the outputs after.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_AFTER_EXIT` after `aw_acp_connection_agent_exited_*`;
/// `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: `data` is read during the call only. Views from earlier calls
/// become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_push_stdout(
    connection: *mut aw_acp_connection,
    data: *const u8,
    len: usize,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        push(connection, data, len, |c, bytes| {
            c.push_stdout(bytes, now_ms)
        })
    }
}

/// Feeds bytes the agent wrote to stderr, in any chunking; only the tail is kept, for
/// failure messages. Results, memory and lifetimes as `aw_acp_connection_push_stdout`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_push_stderr(
    connection: *mut aw_acp_connection,
    data: *const u8,
    len: usize,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        push(connection, data, len, |c, bytes| {
            c.push_stderr(bytes, now_ms)
        })
    }
}

/// The body of the pushes: `f` with the connection and the bytes.
///
/// # Safety
/// The pointer rules: `connection` is NULL or live; `data` is NULL or `len` readable bytes.
unsafe fn push(
    connection: *mut aw_acp_connection,
    data: *const u8,
    len: usize,
    f: impl FnOnce(&mut Connection, &[u8]) -> Result<(), ConnectionError>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call_mut(connection, |state| {
            let bytes = input_bytes(data, len, "data")?;
            f(&mut state.connection, bytes)?;
            Ok(aw_result::Ok)
        })
    }
}

fn agent_exited(state: &mut ConnectionState, status: ExitStatus, now_ms: u64) -> Outcome {
    state.connection.agent_exited(status, now_ms)?;
    Ok(aw_result::Ok)
}

/// The agent exited with status `code` (call it after its stdout and stderr reached end of
/// file and were pushed): every open turn fails with the agent's stderr tail, and the
/// connection is dead. Drain the outputs after.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_EXITED_TWICE`. Views from earlier calls become
/// invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_agent_exited_code(
    connection: *mut aw_acp_connection,
    code: i32,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            agent_exited(state, ExitStatus::Code(code), now_ms)
        })
    }
}

/// The agent was ended by signal `signal`. As `aw_acp_connection_agent_exited_code`
/// otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_agent_exited_signal(
    connection: *mut aw_acp_connection,
    signal: i32,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            agent_exited(state, ExitStatus::Signal(signal), now_ms)
        })
    }
}

/// The deadline from `aw_acp_connection_poll_timeout` passed: `now_ms` is at or after it.
/// Calls before it are harmless. Drain the outputs after.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_handle_timeout(
    connection: *mut aw_acp_connection,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            state.connection.handle_timeout(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The HTTP client of `turn` hung up: its prompt is cancelled and nothing more is written
/// for it. Drain the outputs after. A turn that already ended is left as it is.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_UNKNOWN_TURN` when this connection never handed
/// out `turn`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_client_gone(
    connection: *mut aw_acp_connection,
    turn: u64,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let turn = state.turn(turn)?;
            state.connection.client_gone(turn, now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The program is shutting down: every turn ends now as a failure the client may retry,
/// and every running prompt is cancelled. Drain the outputs after.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_shutdown(
    connection: *mut aw_acp_connection,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            state.connection.shutdown(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// Bytes to write to the agent's stdin (whole JSON-RPC lines), into `*out_bytes`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when there is nothing to write until the
/// next input.
///
/// Memory and lifetimes: valid until the next call on `connection` (this one included) or
/// its free: write them (or copy them) before anything else.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_transmit(
    connection: *mut aw_acp_connection,
    out_bytes: *mut aw_bytes,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_bytes, "out_bytes")?;
            Ok(out.write_polled(state.connection.poll_transmit().map(aw_bytes::of)))
        })
    }
}

/// A turn that has output for `aw_acp_connection_poll_output`, into `*out_turn`: each is
/// named at most once between two inputs, in the order turns were started.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when no other turn has output.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_ready(
    connection: *mut aw_acp_connection,
    out_turn: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_turn, "out_turn")?;
            Ok(out.write_polled(state.connection.poll_ready().map(TurnId::get)))
        })
    }
}

/// The next output of `turn`, into `*out_output`: as from `aw_bridge_poll_output`, except
/// that `AW_OUTPUT_KIND_STOP_AGENT` never appears.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_DRAINED` until the next input (and for ever after
/// `AW_OUTPUT_KIND_END`), or `AW_RESULT_UNKNOWN_TURN` when this connection never handed
/// out `turn`.
///
/// Memory and lifetimes: `out_output->body` is valid until the next call on `connection`
/// (this one included) or its free; `content_type` is static.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_output(
    connection: *mut aw_acp_connection,
    turn: u64,
    out_output: *mut aw_output,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_output, "out_output")?;
            let turn = state.turn(turn)?;
            let output = state.connection.poll_output(turn);
            Ok(out.write_polled(output.as_ref().map(aw_output::of)))
        })
    }
}

/// The next connection-level decision, into `*out_decision`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when there is none.
///
/// Memory and lifetimes: `out_decision->reason` is valid until the next call on
/// `connection` or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_decision(
    connection: *mut aw_acp_connection,
    out_decision: *mut aw_acp_decision,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_decision, "out_decision")?;
            state.decision = state.connection.poll_decision();
            let decision = state.decision.as_ref().map(|decision| match decision {
                Decision::Restart { reason } => aw_acp_decision {
                    kind: aw_acp_decision_kind::Restart,
                    reason: aw_str::of(reason),
                },
            });
            Ok(out.write_polled(decision))
        })
    }
}

/// When `aw_acp_connection_handle_timeout` is next due, on the caller's clock: writes
/// whether a deadline is scheduled to `*out_has_deadline`, and the deadline (or 0) to
/// `*out_deadline_ms`.
///
/// Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_timeout(
    connection: *const aw_acp_connection,
    out_has_deadline: *mut bool,
    out_deadline_ms: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(connection, |state| {
            let out_has = Out::new(out_has_deadline, "out_has_deadline")?;
            let out_deadline = Out::new(out_deadline_ms, "out_deadline_ms")?;
            let deadline = state.connection.poll_timeout();
            out_has.write(deadline.is_some());
            out_deadline.write(deadline.unwrap_or(0));
            Ok(aw_result::Ok)
        })
    }
}

/// The body of the counter getters: writes `f(connection)` to `*out`.
///
/// # Safety
/// The pointer rules: `connection` is NULL or a live connection, `out` NULL or writable.
unsafe fn read<T>(
    connection: *const aw_acp_connection,
    out: *mut T,
    name: &'static str,
    f: impl FnOnce(&Connection) -> T,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(connection, |state| {
            Out::new(out, name)?.write(f(&state.connection));
            Ok(aw_result::Ok)
        })
    }
}

/// One exchange of an ACP connection's MCP endpoint: an HTTP request and its response,
/// named by the server it went to and its number there. A value: copy it, keep it with
/// the HTTP connection, pass it back as it was handed out.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct aw_mcp_exchange {
    /// The MCP server (one per session with client tools).
    pub server: u64,
    /// The exchange within it.
    pub exchange: u64,
}

impl aw_mcp_exchange {
    fn of(exchange: McpExchange) -> aw_mcp_exchange {
        aw_mcp_exchange {
            server: exchange.server,
            exchange: exchange.exchange.get(),
        }
    }

    fn get(self) -> McpExchange {
        McpExchange {
            server: self.server,
            exchange: ExchangeId(self.exchange),
        }
    }
}

/// Like `aw_acp_connection_start_turn`, for a request that may continue a conversation:
/// the request resumes the parked session holding its conversation so far when there is
/// one (answering the calls it waits for with the request's tool results, through its MCP
/// server, and prompting it with only the new input), and otherwise starts a fresh
/// session with the whole conversation. When the config has an MCP endpoint, a request's
/// client tools are given to the agent as an MCP server of the session's own, and their
/// calls end the response with the client's tool calls while the agent stays inside them
/// (the session parks, waiting for the results); without one, a request with client
/// tools is refused (400) as by `aw_acp_connection_start_turn`.
///
/// Parameters, besides those of `aw_acp_connection_start_turn`: `owner_key`,
/// `client_session`, `client_agent` and `caller_key` as for
/// `aw_bridge_new_in_conversation` (each NULL when absent; a NULL `owner_key` is the
/// local owner), and `entropy`: 32 bytes the caller drew at random (from the operating
/// system's generator), from which a session made for the turn takes its MCP server's
/// path, secret and session id.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_ENUM` (`dialect`), `AW_RESULT_POISONED` or
/// `AW_RESULT_BUSY` (about `config`), `AW_RESULT_NULL_PARAMETER` (`out_turn` or `entropy`
/// NULL, or a data pointer NULL with a length), `AW_RESULT_LENGTH_TOO_LARGE`,
/// `AW_RESULT_INVALID_UTF8`.
///
/// Memory and lifetimes: every input is read during the call only. Views from earlier
/// calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_start_conversation_turn(
    connection: *mut aw_acp_connection,
    dialect: u32,
    body: *const u8,
    body_len: usize,
    config: *const aw_config,
    now_ms: u64,
    created_unix: u64,
    id_seed: u64,
    owner_key: *const u8,
    owner_key_len: usize,
    client_session: *const c_char,
    client_session_len: usize,
    client_agent: *const c_char,
    client_agent_len: usize,
    caller_key: *const c_char,
    caller_key_len: usize,
    entropy: *const u8,
    out_turn: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules; `entropy` is NULL or 32 readable bytes.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_turn, "out_turn")?;
            let body = input_bytes(body, body_len, "body")?;
            if entropy.is_null() {
                return Err(Error::null("entropy"));
            }
            let entropy: [u8; 32] = input_bytes(entropy, 32, "entropy")?
                .try_into()
                .expect("32 bytes were read");
            let caller = CallerArgs::read(
                owner_key,
                owner_key_len,
                client_session,
                client_session_len,
                client_agent,
                client_agent_len,
                caller_key,
                caller_key_len,
            )?;
            let config = config_or_default(config).map_err(|code| {
                Error::new(code, "`config` is poisoned or in use by another call")
            })?;
            let dialect = input_enum(dialect, "dialect", aw_dialect::from_u32)?;
            let params = BridgeParams {
                now_ms,
                created_unix,
                id_seed,
            };
            let turn = state.connection.start_conversation_turn(
                dialect,
                body,
                &config,
                params,
                caller.caller(),
                entropy,
            );
            state.turns_started = turn.get() + 1;
            out.write(turn.get());
            Ok(aw_result::Ok)
        })
    }
}

/// An HTTP request to the MCP endpoint, handed to the server of the session it names;
/// its exchange goes to `*out_exchange`, and its response comes from
/// `aw_acp_connection_poll_mcp_output`. The adapter routes here the requests whose path is
/// under the endpoint's URL, after its Host and Origin checks.
///
/// Parameters: `token` (the path segment after the endpoint's URL), `authorization` (the
/// `Authorization` header's value, NULL when absent: it is compared with the server's
/// secret in constant time), and the request as for `aw_mcp_server_handle_http`: `method`,
/// the headers `Accept`, `Content-Type`, `Mcp-Session-Id` and `MCP-Protocol-Version` (each
/// NULL when absent), the body.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_MCP_NOT_FOUND` (no session's server has this path:
/// answer 404) or `AW_RESULT_MCP_UNAUTHORIZED` (the secret was not presented: answer 401),
/// with no body and nothing changed; `AW_RESULT_INVALID_UTF8` (a header that is not UTF-8:
/// answer 400), `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`.
///
/// Memory and lifetimes: the inputs are read during the call only. Views from earlier
/// calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_handle_mcp(
    connection: *mut aw_acp_connection,
    token: *const c_char,
    token_len: usize,
    authorization: *const u8,
    authorization_len: usize,
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
    out_exchange: *mut aw_mcp_exchange,
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
        call_mut(connection, |state| {
            let out = Out::new(out_exchange, "out_exchange")?;
            let token = input_str(token, token_len, "token")?;
            let authorization =
                input_optional_bytes(authorization, authorization_len, "authorization")?;
            let request = args.read()?;
            match state
                .connection
                .handle_mcp(token, authorization, &request, now_ms)
            {
                Ok(exchange) => {
                    out.write(aw_mcp_exchange::of(exchange));
                    Ok(aw_result::Ok)
                }
                Err(McpRefusal::NotFound) => Err(Error::new(
                    aw_result::McpNotFound,
                    "no session's MCP server has this path: answer 404",
                )),
                Err(McpRefusal::Unauthorized) => Err(Error::new(
                    aw_result::McpUnauthorized,
                    "the MCP server's secret was not presented: answer 401",
                )),
            }
        })
    }
}

/// The agent's HTTP connection of `exchange` closed: nothing more is written to it, and
/// the calls whose answers it owed are cancelled. An exchange whose server is gone, or
/// one this connection never handed out, is ignored.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_mcp_exchange_gone(
    connection: *mut aw_acp_connection,
    exchange: aw_mcp_exchange,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            state.connection.mcp_exchange_gone(exchange.get(), now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// An MCP exchange that has output for `aw_acp_connection_poll_mcp_output`, into
/// `*out_exchange`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when no other exchange has output.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_mcp_ready(
    connection: *mut aw_acp_connection,
    out_exchange: *mut aw_mcp_exchange,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_exchange, "out_exchange")?;
            let ready = state.connection.poll_mcp_ready();
            Ok(out.write_polled(ready.map(aw_mcp_exchange::of)))
        })
    }
}

/// The next output of an MCP exchange, into `*out_output`: its head, body bytes, then its
/// end.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` until the next input, for ever after
/// `AW_MCP_OUTPUT_KIND_END`, and for an exchange whose server is gone (then end the
/// response) or that this connection never handed out.
///
/// Memory and lifetimes: `body` and `session_id` are valid until the next call on
/// `connection` or its free; `content_type` and `allow` are static.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_poll_mcp_output(
    connection: *mut aw_acp_connection,
    exchange: aw_mcp_exchange,
    out_output: *mut aw_mcp_output,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(connection, |state| {
            let out = Out::new(out_output, "out_output")?;
            let output = state.connection.poll_mcp_output(exchange.get());
            Ok(out.write_polled(output.as_ref().map(aw_mcp_output::of)))
        })
    }
}

/// How many sessions are parked, waiting for their conversation's next request, into
/// `*out_count`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_parked_sessions(
    connection: *const aw_acp_connection,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { read(connection, out_count, "out_count", |c| c.parked_sessions()) }
}

/// What the connection's conversations registry has done so far, into `*out_stats`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_conversation_stats(
    connection: *const aw_acp_connection,
    out_stats: *mut aw_registry_stats,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(connection, out_stats, "out_stats", |c| {
            aw_registry_stats::of(c.conversation_stats())
        })
    }
}

/// How many conversation turns started a fresh session for `reason` (an
/// `aw_fresh_reason`), into `*out_count`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_INVALID_ENUM`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_conversation_fresh(
    connection: *const aw_acp_connection,
    reason: u32,
    out_count: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(connection, |state| {
            let out = Out::new(out_count, "out_count")?;
            out.write(fresh_count(state.connection.conversation_stats(), reason)?);
            Ok(aw_result::Ok)
        })
    }
}
