//! `aw_bridge`: one request's state machine, the object a plugin drives.

use std::ffi::{CString, c_char};

use super::boundary::{
    Guarded, Handle, Out, Outcome, boundary, call, call_mut, free_handle, impl_handle, input_bytes,
    input_enum, last_error, predicate,
};
use super::config::{aw_config, config_or_default};
use super::names::{CEnum, mirrors, name_of};
use super::registry::{CallerArgs, aw_registry};
use super::result::{Error, aw_result};
use super::views::{aw_bytes, aw_str};
use crate::bridge::{Bridge, BridgeParams, Dialect, Output};
use crate::cursor::{ExitStatus, Invocation};

/// One request, from its body to the end of its HTTP response: an opaque handle created
/// by `aw_bridge_new` (or `aw_bridge_new_in_conversation`) and freed by `aw_bridge_free`.
///
/// The loop: spawn the invocation (`aw_bridge_invocation_*`) in its own process group,
/// write its stdin, then for every input (`aw_bridge_push_stdout`, `aw_bridge_push_stderr`,
/// `aw_bridge_agent_exited_*`, `aw_bridge_handle_timeout`, `aw_bridge_client_gone`,
/// `aw_bridge_shutdown`)
/// **drain `aw_bridge_poll_output` until it returns `AW_RESULT_DRAINED`**, then ask
/// `aw_bridge_poll_timeout` for the next deadline. Stop when the output is
/// `AW_OUTPUT_KIND_END`. An `AW_OUTPUT_KIND_RESPAWN` (only from a bridge of a
/// conversation) says to spawn the invocation again, which now describes a new run, and
/// to feed that run's output and exit to the same bridge; the run it replaces was
/// reported exited before. A bridge of a conversation gives its place back with
/// `aw_bridge_end_conversation_turn` once the response ended.
#[allow(non_camel_case_types)]
pub struct aw_bridge(Guarded<BridgeState>);
impl_handle!(aw_bridge, BridgeState);

pub(crate) struct BridgeState {
    bridge: Bridge,
    /// The invocation's strings with NUL terminators, for `execvp` and `setenv`.
    invocation: Option<CInvocation>,
    /// The invocation a respawn replaced, kept so that the views of it stay valid until
    /// the bridge is freed.
    replaced: Option<CInvocation>,
    /// The registry a bridge of a conversation was made in (its address, compared only).
    registry: Option<usize>,
}

struct CInvocation {
    program: CString,
    args: Vec<CString>,
    env: Vec<(CString, CString)>,
    /// The prompt, copied, for a run the bridge may replace (one that resumes a chat):
    /// the core drops a replaced run's prompt, whose view must outlive it.
    stdin: Option<Vec<u8>>,
}

impl CInvocation {
    /// The C form of `invocation`; `keep_stdin` copies its prompt too.
    fn of(invocation: &Invocation, keep_stdin: bool) -> Result<CInvocation, Error> {
        let c = |s: &str| {
            CString::new(s).map_err(|_| {
                Error::new(
                    aw_result::InteriorNul,
                    "the invocation contains a NUL byte, which no command line can carry",
                )
            })
        };
        Ok(CInvocation {
            program: c(&invocation.program)?,
            args: invocation
                .args
                .iter()
                .map(|a| c(a))
                .collect::<Result<_, _>>()?,
            env: invocation
                .env
                .iter()
                .map(|(k, v)| Ok((c(k)?, c(v)?)))
                .collect::<Result<_, Error>>()?,
            stdin: keep_stdin.then(|| invocation.stdin.clone()),
        })
    }
}

/// Whether a run may be replaced by a fresh one (`Output::Respawn`): only a run that
/// resumes a chat is.
fn may_be_replaced(invocation: &Invocation) -> bool {
    invocation.args.iter().any(|arg| arg == "--resume")
}

impl BridgeState {
    fn invocation(&self) -> Result<(&Invocation, &CInvocation), Error> {
        match (self.bridge.invocation(), &self.invocation) {
            (Some(invocation), Some(c)) => Ok((invocation, c)),
            _ => Err(Error::new(
                aw_result::Rejected,
                "the request was rejected: there is no agent to run",
            )),
        }
    }
}

/// Runs `f` on the invocation; `AW_RESULT_REJECTED` (a status, not an error) when the
/// request was rejected.
fn with_invocation(
    state: &BridgeState,
    f: impl FnOnce(&Invocation, &CInvocation) -> Outcome,
) -> Outcome {
    match state.invocation() {
        Ok((invocation, c)) => f(invocation, c),
        Err(_) => Ok(aw_result::Rejected),
    }
}

/// The body of the invocation getters with one out-parameter: writes `f(invocation)`.
///
/// # Safety
/// The pointer rules: `bridge` is NULL or a live bridge, `out` NULL or writable.
unsafe fn invocation_part<T>(
    bridge: *const aw_bridge,
    out: *mut T,
    name: &'static str,
    f: impl FnOnce(&Invocation, &CInvocation) -> Result<T, Error>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(bridge, |state| {
            let out = Out::new(out, name)?;
            with_invocation(state, |invocation, c| {
                out.write(f(invocation, c)?);
                Ok(aw_result::Ok)
            })
        })
    }
}

fn index_error(what: &str, index: usize, count: usize) -> Error {
    Error::new(
        aw_result::IndexOutOfRange,
        format!("{what} index {index} is out of range (there are {count})"),
    )
}

/// The API a request speaks, chosen by the caller from the route the request came in on;
/// never guessed from the body. `aw_dialect_name` names a value.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_dialect {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    ChatCompletions = 0,
    /// OpenAI Responses: `POST /v1/responses` (what Codex speaks).
    Responses = 1,
    /// Anthropic Messages: `POST /v1/messages`, any query string (what Claude Code speaks).
    /// `POST /v1/messages/count_tokens` is answered by `aw_reply_new_count_tokens`.
    Messages = 2,
}

mirrors!(aw_dialect => Dialect {
    ChatCompletions,
    Responses,
    Messages,
});

/// The name of an `aw_dialect` value, the name of its API (`"chat-completions"`,
/// `"responses"`, `"messages"`), or NULL for a number that is not one.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.2.
#[unsafe(no_mangle)]
pub extern "C" fn aw_dialect_name(dialect: u32) -> *const c_char {
    name_of::<aw_dialect>(dialect)
}

/// What `aw_bridge_poll_output` hands out.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_output_kind {
    /// Send the response head: `status`, `content_type`, and for errors
    /// `x-should-retry: true|false` from `retryable` (when `has_retryable`). Exactly once,
    /// before any body, unless the client is gone.
    Head = 0,
    /// Write `body` to the response and flush it: streams are meant to be seen as they
    /// come.
    Body = 1,
    /// Terminate the agent's process group now (at most once).
    StopAgent = 2,
    /// Close the response. Nothing follows: every later poll returns `AW_RESULT_DRAINED`.
    End = 3,
    /// Start the agent again from the bridge's invocation (`aw_bridge_invocation_*`, read
    /// again), which now describes a new run, and feed its output and exit to the same
    /// bridge. Only a bridge made by `aw_bridge_new_in_conversation` asks for it, at most
    /// once, after the run it replaces was reported exited: the agent could not resume its
    /// chat, and the whole conversation goes to a fresh one before anything reached the
    /// client. Since ABI 1.3.
    Respawn = 4,
}

/// One output of a bridge. Only the members of its `kind` are meaningful; the others are
/// zero or empty.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct aw_output {
    /// What to do.
    pub kind: aw_output_kind,
    /// `AW_OUTPUT_KIND_HEAD`: the HTTP status.
    pub status: u16,
    /// `AW_OUTPUT_KIND_HEAD`: the `content-type`, `text/event-stream` or
    /// `application/json`; static and NUL-terminated.
    pub content_type: aw_str,
    /// `AW_OUTPUT_KIND_HEAD`: whether `retryable` says anything (error heads only).
    pub has_retryable: bool,
    /// `AW_OUTPUT_KIND_HEAD`: whether retrying the request may help; send it as
    /// `x-should-retry` (openai-python honours it over the status).
    pub retryable: bool,
    /// `AW_OUTPUT_KIND_BODY`: the bytes to write.
    pub body: aw_bytes,
}

impl aw_output {
    pub(crate) fn of(output: &Output<'_>) -> aw_output {
        let empty = aw_output {
            kind: aw_output_kind::End,
            status: 0,
            content_type: aw_str::EMPTY,
            has_retryable: false,
            retryable: false,
            body: aw_bytes::EMPTY,
        };
        match output {
            Output::Head(head) => aw_output {
                kind: aw_output_kind::Head,
                status: head.status,
                content_type: static_content_type(head.content_type),
                has_retryable: head.retryable.is_some(),
                retryable: head.retryable.unwrap_or(false),
                ..empty
            },
            Output::Body(bytes) => aw_output {
                kind: aw_output_kind::Body,
                body: aw_bytes::of(bytes),
                ..empty
            },
            Output::StopAgent => aw_output {
                kind: aw_output_kind::StopAgent,
                ..empty
            },
            Output::Respawn => aw_output {
                kind: aw_output_kind::Respawn,
                ..empty
            },
            Output::End => empty,
        }
    }
}

/// The content type as a NUL-terminated static string.
fn static_content_type(content_type: &'static str) -> aw_str {
    match content_type {
        "text/event-stream" => aw_str::of_c(c"text/event-stream"),
        "application/json" => aw_str::of_c(c"application/json"),
        other => aw_str::of(other),
    }
}

/// Validates a request body of `dialect` and prepares its run, writing the new bridge to
/// `*out_bridge`.
///
/// Parameters:
/// - `dialect`: an `aw_dialect`, the API of the route the request came in on.
/// - `body`, `body_len`: the request body (NULL allowed when `body_len` is 0). An invalid
///   body is not a failure of this call: the bridge is created, has no invocation
///   (`AW_RESULT_REJECTED`), and its outputs are the 400 (or 413) head, the dialect's
///   error body and the end.
/// - `config`: the settings, copied; NULL for the defaults.
/// - `now_ms`: now on the caller's monotonic millisecond clock; every later `now_ms` of
///   this bridge is on the same clock.
/// - `created_unix`: now in Unix seconds, for the response's `created` (`created_at`).
/// - `id_seed`: a number unique to this request (a counter mixed with the start time is
///   fine); the response id and generated tool-call ids derive from it.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_ENUM` (`dialect` is not an `aw_dialect`),
/// `AW_RESULT_NULL_PARAMETER` (`out_bridge` NULL, or `body` NULL with a length),
/// `AW_RESULT_LENGTH_TOO_LARGE`, `AW_RESULT_POISONED` (a poisoned `config`),
/// `AW_RESULT_BUSY` (`config` is in a call on another thread), `AW_RESULT_INTERIOR_NUL`.
/// No bridge exists to hold a message: the result says what was wrong.
///
/// Memory and lifetimes: `body` is read during the call only. The caller owns the new
/// bridge and frees it with `aw_bridge_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_new(
    dialect: u32,
    body: *const u8,
    body_len: usize,
    config: *const aw_config,
    now_ms: u64,
    created_unix: u64,
    id_seed: u64,
    out_bridge: *mut *mut aw_bridge,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_bridge` is NULL or writable, `body` is NULL or
        // `body_len` readable bytes, `config` is NULL or a live config.
        let (out, body, config) = unsafe {
            let out = match Out::new(out_bridge, "out_bridge") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            let body = match input_bytes(body, body_len, "body") {
                Ok(body) => body,
                Err(error) => return error.code,
            };
            let config = match config_or_default(config) {
                Ok(config) => config,
                Err(code) => return code,
            };
            (out, body, config)
        };
        let dialect = match input_enum(dialect, "dialect", aw_dialect::from_u32) {
            Ok(dialect) => dialect,
            Err(error) => return error.code,
        };
        let params = BridgeParams {
            now_ms,
            created_unix,
            id_seed,
        };
        let bridge = Bridge::new(dialect, body, &config, params);
        match BridgeState::of(bridge, None) {
            Ok(state) => {
                out.write(aw_bridge::into_raw(state));
                aw_result::Ok
            }
            Err(error) => error.code,
        }
    })
}

impl BridgeState {
    /// The C state of a new bridge, made in `registry` if it is a conversation's.
    fn of(bridge: Bridge, registry: Option<usize>) -> Result<BridgeState, Error> {
        let invocation = bridge
            .invocation()
            .map(|invocation| CInvocation::of(invocation, may_be_replaced(invocation)))
            .transpose()?;
        Ok(BridgeState {
            bridge,
            invocation,
            replaced: None,
            registry,
        })
    }
}

/// Like `aw_bridge_new`, for a request that may continue a conversation: `registry`
/// decides whether it resumes the cursor-agent chat that answered the conversation so far
/// (the invocation then passes `--resume CHAT` and its stdin holds only what is new: the
/// results of the chat's tool calls and the new input) or runs fresh with the whole
/// conversation, as `aw_bridge_new` does. A resumed chat the agent cannot continue (it
/// fails before answering anything, or reports another chat) is stopped
/// (`AW_OUTPUT_KIND_STOP_AGENT`) and replaced by a fresh run (`AW_OUTPUT_KIND_RESPAWN`),
/// once, before anything reaches the client. A Responses request carrying only
/// `previous_response_id` whose response this registry does not hold is answered with
/// OpenAI's error for it (the bridge is then rejected).
///
/// Parameters, besides those of `aw_bridge_new`:
/// - `registry`: the conversation registry (required); the bridge holds its place in it
///   until `aw_bridge_end_conversation_turn`, which must be given the same registry.
/// - `owner_key`, `owner_key_len`: the key the request authenticated with, as the client
///   sent it (after the server accepted it); NULL for a request without a key (a server
///   that takes none, on loopback). A session is only ever resumed by a request of the
///   same owner.
/// - `client_session`, `client_agent`: a client's session id header and its agent id
///   within that session (Claude Code's `X-Claude-Code-Session-Id` and
///   `X-Claude-Code-Agent-Id`); NULL when absent.
/// - `caller_key`: a key the embedding program gives the conversation; NULL when absent.
///   The strongest key present narrows which sessions the request may resume (the caller's,
///   then the client's session with its agent, then the body's own `prompt_cache_key`);
///   the content decides whether it does.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_INVALID_ENUM` (`dialect`), `AW_RESULT_NULL_PARAMETER`
/// (`out_bridge` or `registry` NULL, or a data pointer NULL with a length),
/// `AW_RESULT_LENGTH_TOO_LARGE`, `AW_RESULT_INVALID_UTF8` (a key or header that is not
/// UTF-8), `AW_RESULT_POISONED` or `AW_RESULT_BUSY` (about `config` or `registry`),
/// `AW_RESULT_INTERIOR_NUL`. No bridge exists to hold a message: the result says what was
/// wrong.
///
/// Memory and lifetimes: every input is read during the call only. The caller owns the
/// new bridge and frees it with `aw_bridge_free`, after `aw_bridge_end_conversation_turn`
/// (until then the registry counts its session busy). Drain
/// `aw_registry_poll_released` after this call.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_new_in_conversation(
    dialect: u32,
    body: *const u8,
    body_len: usize,
    config: *const aw_config,
    now_ms: u64,
    created_unix: u64,
    id_seed: u64,
    registry: *mut aw_registry,
    owner_key: *const u8,
    owner_key_len: usize,
    client_session: *const c_char,
    client_session_len: usize,
    client_agent: *const c_char,
    client_agent_len: usize,
    caller_key: *const c_char,
    caller_key_len: usize,
    out_bridge: *mut *mut aw_bridge,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_bridge` is NULL or writable, every data pointer
        // is NULL or its length's readable bytes, `config` is NULL or a live config,
        // `registry` NULL or a live registry.
        let (out, body, config, caller, guarded) = unsafe {
            let out = match Out::new(out_bridge, "out_bridge") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            let body = match input_bytes(body, body_len, "body") {
                Ok(body) => body,
                Err(error) => return error.code,
            };
            let caller = match CallerArgs::read(
                owner_key,
                owner_key_len,
                client_session,
                client_session_len,
                client_agent,
                client_agent_len,
                caller_key,
                caller_key_len,
            ) {
                Ok(caller) => caller,
                Err(error) => return error.code,
            };
            let config = match config_or_default(config) {
                Ok(config) => config,
                Err(code) => return code,
            };
            let guarded = match aw_registry::from_ptr(registry) {
                Ok(guarded) => guarded,
                Err(code) => return code,
            };
            (out, body, config, caller, guarded)
        };
        let dialect = match input_enum(dialect, "dialect", aw_dialect::from_u32) {
            Ok(dialect) => dialect,
            Err(error) => return error.code,
        };
        let params = BridgeParams {
            now_ms,
            created_unix,
            id_seed,
        };
        let mut made = None;
        let code = guarded.call(|state| {
            let bridge = Bridge::in_conversation(
                dialect,
                body,
                &config,
                params,
                &mut state.registry,
                caller.caller(),
            );
            made = Some(bridge);
            Ok(aw_result::Ok)
        });
        let Some(bridge) = made.filter(|_| code == aw_result::Ok) else {
            return code;
        };
        match BridgeState::of(bridge, Some(registry as usize)) {
            Ok(state) => {
                out.write(aw_bridge::into_raw(state));
                aw_result::Ok
            }
            Err(error) => error.code,
        }
    })
}

/// Gives a bridge's place in its conversation back to `registry`, the one it was made in:
/// the chat is parked for the conversation's next request when the answer finished and
/// reached the client; otherwise it is let go. Call it once the response ended
/// (`AW_OUTPUT_KIND_END`; earlier, it counts as a response that did not finish), and
/// before `aw_bridge_free`. It does nothing for a bridge made by `aw_bridge_new`, and the
/// second time. Drain `aw_registry_poll_released` after.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_WRONG_REGISTRY` (another registry than the bridge's:
/// nothing is done), `AW_RESULT_NULL_PARAMETER` (`registry` NULL), `AW_RESULT_POISONED` or
/// `AW_RESULT_BUSY` (about `registry`; the bridge's last error says so). Views from earlier
/// calls on either handle become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_end_conversation_turn(
    bridge: *mut aw_bridge,
    registry: *mut aw_registry,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules: `bridge` and `registry` are NULL or live handles.
    unsafe {
        call_mut(bridge, |state| {
            let guarded = aw_registry::from_ptr(registry).map_err(|_| Error::null("registry"))?;
            if state
                .registry
                .is_some_and(|made_in| made_in != registry as usize)
            {
                return Err(Error::new(
                    aw_result::WrongRegistry,
                    "`registry` is not the registry the bridge was made in",
                ));
            }
            let code = guarded.call(|inside| {
                state
                    .bridge
                    .end_conversation_turn(&mut inside.registry, now_ms);
                Ok(aw_result::Ok)
            });
            match code {
                aw_result::Ok => Ok(aw_result::Ok),
                code => Err(Error::new(
                    code,
                    "`registry` is poisoned, in use by another call, or panicked",
                )),
            }
        })
    }
}

/// Frees a bridge. NULL does nothing. Free it whatever state it is in (poisoned too);
/// views it handed out become invalid.
///
/// Freeing a bridge while another thread is inside a call on it is a caller bug. It is
/// detected and the free is refused: the bridge stays valid (free it once that call has
/// returned) rather than being freed under the call. A call that starts after the free is
/// a use after free, which nothing can detect.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_free(bridge: *mut aw_bridge) {
    // SAFETY: the pointer rules: `bridge` is NULL or a live bridge, freed once.
    unsafe { free_handle(bridge) }
}

/// The message of the last call on `bridge` that failed, NUL-terminated; `""` when none
/// failed or `bridge` is NULL; a message saying the bridge is in use while another thread is
/// inside a call on it.
///
/// Memory and lifetimes: valid until the next call on `bridge` (from any thread) or its
/// free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_last_error(bridge: *const aw_bridge) -> *const c_char {
    // SAFETY: the pointer rules: `bridge` is NULL or a live bridge.
    unsafe { last_error(bridge) }
}

/// The program to run (`cursor-agent` or the configured binary), into `*out_program`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_REJECTED` when the request was rejected (then
/// spawn nothing; drain the outputs).
///
/// Memory and lifetimes: the string is NUL-terminated (the terminator is not counted in
/// `len`), so it can go to `execvp` as is; valid until `aw_bridge_free`. The invocation
/// changes only for a bridge of a conversation whose resumed run the agent could not
/// continue: from the call that reports that run exited, it describes the fresh run
/// `AW_OUTPUT_KIND_RESPAWN` then asks for (read it again); the views of the replaced run
/// stay valid too.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_invocation_program(
    bridge: *const aw_bridge,
    out_program: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        invocation_part(bridge, out_program, "out_program", |_, c| {
            Ok(aw_str::of_c(&c.program))
        })
    }
}

/// How many arguments the program takes (not counting the program itself), into
/// `*out_count`. Returns `AW_RESULT_OK` or `AW_RESULT_REJECTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_invocation_arg_count(
    bridge: *const aw_bridge,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { invocation_part(bridge, out_count, "out_count", |_, c| Ok(c.args.len())) }
}

/// Argument `index` (from 0, not counting the program), into `*out_arg`. No argument
/// carries user text: the prompt goes to stdin.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_REJECTED`, or `AW_RESULT_INDEX_OUT_OF_RANGE`.
///
/// Memory and lifetimes: as `aw_bridge_invocation_program` (NUL-terminated, valid until
/// `aw_bridge_free`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_invocation_arg(
    bridge: *const aw_bridge,
    index: usize,
    out_arg: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        invocation_part(bridge, out_arg, "out_arg", |_, c| {
            let arg = c.args.get(index);
            arg.map(|a| aw_str::of_c(a))
                .ok_or_else(|| index_error("argument", index, c.args.len()))
        })
    }
}

/// The bytes to write to the agent's stdin (the prompt), into `*out_stdin`: write them
/// all, then close stdin. Returns `AW_RESULT_OK` or `AW_RESULT_REJECTED`.
///
/// Memory and lifetimes: as `aw_bridge_invocation_program` (valid until `aw_bridge_free`,
/// across a respawn too).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_invocation_stdin(
    bridge: *const aw_bridge,
    out_stdin: *mut aw_bytes,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        invocation_part(bridge, out_stdin, "out_stdin", |invocation, c| {
            Ok(aw_bytes::of(
                c.stdin.as_deref().unwrap_or(&invocation.stdin),
            ))
        })
    }
}

/// How many environment variables to set for the agent (on top of the plugin's own
/// environment), into `*out_count`. Returns `AW_RESULT_OK` or `AW_RESULT_REJECTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_invocation_env_count(
    bridge: *const aw_bridge,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { invocation_part(bridge, out_count, "out_count", |_, c| Ok(c.env.len())) }
}

/// Environment variable `index` (from 0): its name into `*out_name` and its value into
/// `*out_value`.
///
/// Returns `AW_RESULT_OK`, `AW_RESULT_REJECTED`, or `AW_RESULT_INDEX_OUT_OF_RANGE`.
///
/// Memory and lifetimes: both strings are NUL-terminated (ready for `setenv`) and valid
/// until `aw_bridge_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_invocation_env(
    bridge: *const aw_bridge,
    index: usize,
    out_name: *mut aw_str,
    out_value: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(bridge, |state| {
            let out_name = Out::new(out_name, "out_name")?;
            let out_value = Out::new(out_value, "out_value")?;
            with_invocation(state, |_, c| {
                let (name, value) = c
                    .env
                    .get(index)
                    .ok_or_else(|| index_error("environment", index, c.env.len()))?;
                out_name.write(aw_str::of_c(name));
                out_value.write(aw_str::of_c(value));
                Ok(aw_result::Ok)
            })
        })
    }
}

/// Feeds bytes the agent wrote to stdout, in any chunking (a read's worth at a time is
/// typical). Every line these bytes complete is decoded now; drain the outputs after.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_AFTER_EXIT` after `aw_bridge_agent_exited_*`;
/// `AW_RESULT_NULL_PARAMETER`, `AW_RESULT_LENGTH_TOO_LARGE`. Input after the end is
/// ignored.
///
/// Memory and lifetimes: `data` is read during the call only. Views from earlier calls
/// become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_push_stdout(
    bridge: *mut aw_bridge,
    data: *const u8,
    len: usize,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            let bytes = input_bytes(data, len, "data")?;
            state.bridge.push_stdout(bytes, now_ms)?;
            Ok(aw_result::Ok)
        })
    }
}

/// Feeds bytes the agent wrote to stderr, in any chunking. Only the tail is kept, for
/// failure messages. Results, memory and lifetimes as `aw_bridge_push_stdout`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_push_stderr(
    bridge: *mut aw_bridge,
    data: *const u8,
    len: usize,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            let bytes = input_bytes(data, len, "data")?;
            state.bridge.push_stderr(bytes, now_ms)?;
            Ok(aw_result::Ok)
        })
    }
}

fn agent_exited(state: &mut BridgeState, status: ExitStatus, now_ms: u64) -> Outcome {
    state.bridge.agent_exited(status, now_ms)?;
    // A resumed run the agent could not continue was just replaced by a fresh one
    // (`AW_OUTPUT_KIND_RESPAWN` follows): the invocation is the new run's from now on, as
    // the Rust bridge's is, and the replaced run's strings stay for the views of them.
    let replaced = state.invocation.as_ref().is_some_and(|c| c.stdin.is_some())
        && state
            .bridge
            .invocation()
            .is_some_and(|i| !may_be_replaced(i));
    if replaced {
        let fresh = state
            .bridge
            .invocation()
            .map(|invocation| CInvocation::of(invocation, false))
            .transpose()?;
        state.replaced = std::mem::replace(&mut state.invocation, fresh);
    }
    Ok(aw_result::Ok)
}

/// The agent exited with status `code`. Call it after its stdout and stderr reached end
/// of file and were pushed. Without an answer on stdout this is a failure, classified from
/// stdout, stderr and the exit status. Drain the outputs after.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_EXITED_TWICE`. Views from earlier calls become
/// invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_agent_exited_code(
    bridge: *mut aw_bridge,
    code: i32,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            agent_exited(state, ExitStatus::Code(code), now_ms)
        })
    }
}

/// The agent was ended by signal `signal`. As `aw_bridge_agent_exited_code` otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_agent_exited_signal(
    bridge: *mut aw_bridge,
    signal: i32,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            agent_exited(state, ExitStatus::Signal(signal), now_ms)
        })
    }
}

/// The deadline from `aw_bridge_poll_timeout` passed: `now_ms` is at or after it. Calls
/// before it are harmless no-ops. Drain the outputs after (a keep-alive, a head, a
/// timeout failure may be due).
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_handle_timeout(
    bridge: *mut aw_bridge,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            state.bridge.handle_timeout(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The HTTP client hung up: the bridge asks to stop the agent and ends without writing
/// anything more. Drain the outputs after (`AW_OUTPUT_KIND_STOP_AGENT`, then the end).
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_client_gone(bridge: *mut aw_bridge, now_ms: u64) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            state.bridge.client_gone(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The program is shutting down: the response ends now as a failure the client may retry
/// (503 before the head; an in-band error frame and `[DONE]` after it) and the bridge asks
/// to stop the agent. Drain the outputs after. Nothing happens if the response is already
/// ending.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_shutdown(bridge: *mut aw_bridge, now_ms: u64) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            state.bridge.shutdown(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The next thing to do, into `*out_output`.
///
/// Returns `AW_RESULT_OK` (`*out_output` written), or `AW_RESULT_DRAINED` when there is
/// nothing until the next input (and always after the end). Call it until
/// `AW_RESULT_DRAINED` after every input.
///
/// Memory and lifetimes: `out_output->body` is valid until the next call on `bridge`
/// (this one included) or its free; `content_type` is static.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_poll_output(
    bridge: *mut aw_bridge,
    out_output: *mut aw_output,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(bridge, |state| {
            let out = Out::new(out_output, "out_output")?;
            Ok(out.write_polled(state.bridge.poll_output().as_ref().map(aw_output::of)))
        })
    }
}

/// When `aw_bridge_handle_timeout` is next due, on the caller's clock: writes whether a
/// deadline is scheduled to `*out_has_deadline`, and the deadline (or 0) to
/// `*out_deadline_ms`. Nothing is scheduled after the end.
///
/// Returns `AW_RESULT_OK`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_poll_timeout(
    bridge: *const aw_bridge,
    out_has_deadline: *mut bool,
    out_deadline_ms: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(bridge, |state| {
            let out_has = Out::new(out_has_deadline, "out_has_deadline")?;
            let out_deadline = Out::new(out_deadline_ms, "out_deadline_ms")?;
            let deadline = state.bridge.poll_timeout();
            out_has.write(deadline.is_some());
            out_deadline.write(deadline.unwrap_or(0));
            Ok(aw_result::Ok)
        })
    }
}

/// Whether `AW_OUTPUT_KIND_END` has been handed out. Also true for a NULL or poisoned
/// bridge (nothing more will come from it) and while another thread is inside a call on
/// it (a caller bug).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_is_ended(bridge: *const aw_bridge) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(bridge, true, |state| state.bridge.is_ended()) }
}

/// Whether the response is a stream (`text/event-stream`) rather than one JSON body.
/// False for a NULL or poisoned bridge, and while another thread is inside a call on it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_is_stream(bridge: *const aw_bridge) -> bool {
    // SAFETY: the pointer rules.
    unsafe { predicate(bridge, false, |state| state.bridge.is_stream()) }
}

/// The agent's session (chat) id, for `--resume`, into `*out_session_id`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NOT_AVAILABLE` until the agent has sent one.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next mutating call on
/// `bridge` or its free.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_session_id(
    bridge: *const aw_bridge,
    out_session_id: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(bridge, |state| {
            let out = Out::new(out_session_id, "out_session_id")?;
            Ok(out.write_optional(state.bridge.session_id().map(aw_str::of)))
        })
    }
}
