//! `aw_registry`: the conversation registry (`registry::Registry`), which decides for each
//! request whether it resumes a parked agent session, and `aw_registry_config`, its
//! settings. A bridge made by `aw_bridge_new_in_conversation` takes its place in a
//! registry and gives it back with `aw_bridge_end_conversation_turn`.

use std::ffi::c_char;

use super::boundary::{
    Guarded, Handle, Out, boundary, call, call_mut, free_handle, impl_handle, input_bytes,
    input_enum, input_optional_str, last_error,
};
use super::names::{CEnum, mirrors, name_of};
use super::result::{Error, aw_result};
use super::views::aw_str;
use crate::bridge::Caller;
use crate::registry::{
    ConversationKeys, FreshReason, Owner, Registry, RegistryConfig, RegistryStats, Released,
};

/// Settings for `aw_registry_new` and for an ACP connection's conversations
/// (`aw_acp_config_set_conversations`): an opaque handle, created with the defaults of the
/// Rust `RegistryConfig::default()` by `aw_registry_config_new`, changed with the
/// `aw_registry_config_set_*` functions and freed with `aw_registry_config_free`. What is
/// made from it copies it, so a config may be changed or freed afterwards.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
pub struct aw_registry_config(Guarded<RegistryConfig>);
impl_handle!(aw_registry_config, RegistryConfig);

/// The parked agent sessions of one agent transport and the decision, for each request,
/// whether it continues one of them: an opaque handle created by `aw_registry_new` and
/// freed by `aw_registry_free`.
///
/// A request resumes a parked session only when its owner (the key it authenticated
/// with) and its conversation key are the session's and the session's transcript is an
/// exact prefix of the request's conversation; anything else starts fresh with the whole
/// conversation, which is always correct.
///
/// The loop: besides the bridges that take their place in it, after every input
/// (`aw_registry_handle_timeout`, `aw_registry_clear`, and every
/// `aw_bridge_new_in_conversation` and `aw_bridge_end_conversation_turn`) **drain
/// `aw_registry_poll_released` until it returns `AW_RESULT_DRAINED`** (each is an agent
/// session no request can reach any more: a cursor-agent chat to forget), then ask
/// `aw_registry_poll_timeout` for the next deadline.
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
pub struct aw_registry(Guarded<RegistryState>);
impl_handle!(aw_registry, RegistryState);

pub(crate) struct RegistryState {
    pub(crate) registry: Registry,
    /// The last polled release, which owns the id its view points at.
    released: Option<Released>,
}

/// Why a request starts a fresh agent session instead of resuming a parked one
/// (`aw_fresh_reason_name` names a value).
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum aw_fresh_reason {
    /// Conversations are turned off.
    Disabled = 0,
    /// No parked session of the request's owner and conversation key holds a prefix of
    /// its conversation (a new conversation, an edited or compacted history, a branch,
    /// another model or tool set, a side request, an expired or evicted session).
    NoSession = 1,
    /// The session holding its prefix is serving another request.
    Busy = 2,
    /// The request adds nothing after the session's transcript (a retry or a
    /// regeneration).
    NothingNew = 3,
    /// The session waits for the results of tool calls the request does not answer.
    UnansweredCalls = 4,
    /// The request carries a tool result for a call the session is not waiting for.
    UnknownResult = 5,
    /// The request adds an assistant message the agent did not write.
    ForeignAnswer = 6,
}

mirrors!(aw_fresh_reason => FreshReason {
    Disabled,
    NoSession,
    Busy,
    NothingNew,
    UnansweredCalls,
    UnknownResult,
    ForeignAnswer,
});

/// The name of an `aw_fresh_reason` value (`"no_session"`, `"busy"`, ...), or NULL for a
/// number that is not one.
///
/// Memory and lifetimes: static and NUL-terminated; do not free it.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub extern "C" fn aw_fresh_reason_name(reason: u32) -> *const c_char {
    name_of::<aw_fresh_reason>(reason)
}

/// What a registry has done so far (all but the fresh starts, which
/// `aw_registry_fresh` counts by reason).
///
/// Since ABI 1.3.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct aw_registry_stats {
    /// Requests that resumed a parked session.
    pub resumed: u64,
    /// Requests refused: a Responses `previous_response_id` whose session is not here.
    pub refused: u64,
    /// Sessions let go because their time to live passed.
    pub expired: u64,
    /// Sessions let go to make room (the least recently used first).
    pub evicted: u64,
    /// Sessions let go because the request holding them did not end where its client's
    /// conversation is (a failure, a client gone), or another session replaced them.
    pub dropped: u64,
}

impl aw_registry_stats {
    pub(crate) fn of(stats: &RegistryStats) -> aw_registry_stats {
        aw_registry_stats {
            resumed: stats.resumed,
            refused: stats.refused,
            expired: stats.expired,
            evicted: stats.evicted,
            dropped: stats.dropped,
        }
    }
}

/// How many requests of `stats` started fresh for `reason` (a C number, checked).
pub(crate) fn fresh_count(stats: &RegistryStats, reason: u32) -> Result<u64, Error> {
    let reason = input_enum(reason, "reason", aw_fresh_reason::from_u32)?;
    let index = FreshReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("ALL holds every reason");
    Ok(stats.fresh[index])
}

/// The ids of a request's conversation as C hands them over: each NULL when absent.
pub(crate) struct CallerArgs<'a> {
    owner: Owner,
    keys: ConversationKeys<'a>,
}

impl<'a> CallerArgs<'a> {
    /// Reads the arguments: `owner_key` (NULL: the local owner), then the optional
    /// strings.
    ///
    /// # Safety
    /// Each pointer is NULL or points to its length's readable bytes, unchanged during
    /// the call.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn read(
        owner_key: *const u8,
        owner_key_len: usize,
        client_session: *const c_char,
        client_session_len: usize,
        client_agent: *const c_char,
        client_agent_len: usize,
        caller_key: *const c_char,
        caller_key_len: usize,
    ) -> Result<CallerArgs<'a>, Error> {
        // SAFETY: forwarded contract.
        unsafe {
            let key = input_bytes(owner_key, owner_key_len, "owner_key")?;
            let owner = if owner_key.is_null() {
                Owner::LOCAL
            } else {
                Owner::from_key(key)
            };
            Ok(CallerArgs {
                owner,
                keys: ConversationKeys {
                    caller: input_optional_str(caller_key, caller_key_len, "caller_key")?,
                    client_session: input_optional_str(
                        client_session,
                        client_session_len,
                        "client_session",
                    )?,
                    client_agent: input_optional_str(
                        client_agent,
                        client_agent_len,
                        "client_agent",
                    )?,
                },
            })
        }
    }

    pub(crate) fn caller(&self) -> Caller<'a> {
        Caller {
            owner: self.owner,
            keys: self.keys,
        }
    }
}

/// A copy of the config behind `config`: the defaults when NULL; `AW_RESULT_POISONED` or
/// `AW_RESULT_BUSY` (the config is in a call on another thread).
///
/// # Safety
/// `config` is NULL or a live `aw_registry_config`.
pub(crate) unsafe fn registry_config_or_default(
    config: *const aw_registry_config,
) -> Result<RegistryConfig, aw_result> {
    if config.is_null() {
        return Ok(RegistryConfig::default());
    }
    // SAFETY: forwarded contract; not NULL.
    let guarded = unsafe { aw_registry_config::from_ptr(config) }?;
    guarded.read(RegistryConfig::clone)
}

/// Applies `f` to the config behind `config`.
///
/// # Safety
/// `config` is NULL or a live `aw_registry_config`.
unsafe fn set(config: *mut aw_registry_config, f: impl FnOnce(&mut RegistryConfig)) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call_mut(config, |c| {
            f(c);
            Ok(aw_result::Ok)
        })
    }
}

/// Writes `f(config)` to `*out`.
///
/// # Safety
/// `config` is NULL or a live `aw_registry_config`; `out` is NULL or writable as a `T`.
unsafe fn get<T>(
    config: *const aw_registry_config,
    out: *mut T,
    f: impl FnOnce(&RegistryConfig) -> T,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(config, |c| {
            Out::new(out, "out_value")?.write(f(c));
            Ok(aw_result::Ok)
        })
    }
}

/// Creates a registry config with the defaults (those of the Rust
/// `RegistryConfig::default()`: enabled, a 30-minute time to live, 256 parked sessions in
/// all, 32 per owner) and writes it to `*out_config`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_NULL_PARAMETER` when `out_config` is NULL.
///
/// Memory and lifetimes: the caller owns the new config and frees it with
/// `aw_registry_config_free`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_new(
    out_config: *mut *mut aw_registry_config,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_config` is NULL or writable.
        let out = match unsafe { Out::new(out_config, "out_config") } {
            Ok(out) => out,
            Err(error) => return error.code,
        };
        out.write(aw_registry_config::into_raw(RegistryConfig::default()));
        aw_result::Ok
    })
}

/// Frees a registry config. NULL does nothing. What was made from it is not affected. A
/// free that overlaps a call on the config (from another thread) is refused, as
/// `aw_config_free` says.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_free(config: *mut aw_registry_config) {
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
pub unsafe extern "C" fn aw_registry_config_last_error(
    config: *const aw_registry_config,
) -> *const c_char {
    // SAFETY: the pointer rules: `config` is NULL or a live config.
    unsafe { last_error(config) }
}

/// Sets `enabled`: whether requests may resume parked sessions at all (default true).
/// When false every request starts fresh (`AW_FRESH_REASON_DISABLED`) and nothing is
/// parked.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_set_enabled(
    config: *mut aw_registry_config,
    value: bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { set(config, |c| c.enabled = value) }
}

/// Reads `enabled` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_get_enabled(
    config: *const aw_registry_config,
    out_value: *mut bool,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.enabled) }
}

/// Sets `ttl_ms`: how long a parked session waits for its conversation's next request
/// (default 30 minutes: a client's tool may run for ten, and a person answering a
/// permission prompt longer).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_set_ttl_ms(
    config: *mut aw_registry_config,
    value: u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { set(config, |c| c.ttl_ms = value) }
}

/// Reads `ttl_ms` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_get_ttl_ms(
    config: *const aw_registry_config,
    out_value: *mut u64,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.ttl_ms) }
}

/// Sets `max_parked`: parked sessions in all; the least recently used goes first
/// (default 256).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_set_max_parked(
    config: *mut aw_registry_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { set(config, |c| c.max_parked = value) }
}

/// Reads `max_parked` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_get_max_parked(
    config: *const aw_registry_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.max_parked) }
}

/// Sets `max_parked_per_owner`: parked sessions of one owner; that owner's least
/// recently used goes first (default 32).
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_set_max_parked_per_owner(
    config: *mut aw_registry_config,
    value: usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { set(config, |c| c.max_parked_per_owner = value) }
}

/// Reads `max_parked_per_owner` into `*out_value`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_get_max_parked_per_owner(
    config: *const aw_registry_config,
    out_value: *mut usize,
) -> aw_result {
    // SAFETY: forwarded contract (the module's pointer rules).
    unsafe { get(config, out_value, |c| c.max_parked_per_owner) }
}

/// Creates an empty registry with the settings of `config` (copied; NULL for the
/// defaults) and writes it to `*out_registry`.
///
/// Returns `AW_RESULT_OK`; `AW_RESULT_NULL_PARAMETER` (`out_registry` NULL),
/// `AW_RESULT_POISONED` (a poisoned `config`), `AW_RESULT_BUSY` (`config` is in a call
/// on another thread).
///
/// Memory and lifetimes: the caller owns the new registry and frees it with
/// `aw_registry_free`, once no bridge made in it will give its place back.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_new(
    config: *const aw_registry_config,
    out_registry: *mut *mut aw_registry,
) -> aw_result {
    boundary(|| {
        // SAFETY: the pointer rules: `out_registry` is NULL or writable, `config` NULL or
        // a live registry config.
        let (out, config) = unsafe {
            let out = match Out::new(out_registry, "out_registry") {
                Ok(out) => out,
                Err(error) => return error.code,
            };
            match registry_config_or_default(config) {
                Ok(config) => (out, config),
                Err(code) => return code,
            }
        };
        out.write(aw_registry::into_raw(RegistryState {
            registry: Registry::new(config),
            released: None,
        }));
        aw_result::Ok
    })
}

/// Frees a registry. NULL does nothing. The agent sessions it still holds are not
/// reported: end them yourself (or call `aw_registry_clear` and drain
/// `aw_registry_poll_released` first). A free that overlaps a call on the registry
/// (from another thread) is refused, as `aw_bridge_free` says.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_free(registry: *mut aw_registry) {
    // SAFETY: the pointer rules: `registry` is NULL or a live registry, freed once.
    unsafe { free_handle(registry) }
}

/// The message of the last call on `registry` that failed, NUL-terminated; `""` when
/// none failed or `registry` is NULL.
///
/// Memory and lifetimes: valid until the next call on `registry` (from any thread) or its
/// free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_last_error(registry: *const aw_registry) -> *const c_char {
    // SAFETY: the pointer rules: `registry` is NULL or a live registry.
    unsafe { last_error(registry) }
}

/// The body of the registry getters: writes `f(registry)` to `*out`.
///
/// # Safety
/// The pointer rules: `registry` is NULL or a live registry, `out` NULL or writable.
unsafe fn read<T>(
    registry: *const aw_registry,
    out: *mut T,
    name: &'static str,
    f: impl FnOnce(&Registry) -> Result<T, Error>,
) -> aw_result {
    // SAFETY: forwarded contract.
    unsafe {
        call(registry, |state| {
            let out = Out::new(out, name)?;
            out.write(f(&state.registry)?);
            Ok(aw_result::Ok)
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
pub unsafe extern "C" fn aw_registry_parked(
    registry: *const aw_registry,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { read(registry, out_count, "out_count", |r| Ok(r.parked())) }
}

/// How many sessions are held by a request (a bridge that has not given its place back),
/// into `*out_count`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_busy(
    registry: *const aw_registry,
    out_count: *mut usize,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { read(registry, out_count, "out_count", |r| Ok(r.busy())) }
}

/// What the registry has done so far, into `*out_stats`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_get_stats(
    registry: *const aw_registry,
    out_stats: *mut aw_registry_stats,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(registry, out_stats, "out_stats", |r| {
            Ok(aw_registry_stats::of(r.stats()))
        })
    }
}

/// How many requests started fresh for `reason` (an `aw_fresh_reason`), into
/// `*out_count`.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_INVALID_ENUM`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_fresh(
    registry: *const aw_registry,
    reason: u32,
    out_count: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        read(registry, out_count, "out_count", |r| {
            fresh_count(r.stats(), reason)
        })
    }
}

/// The deadline from `aw_registry_poll_timeout` passed: sessions idle for the time to
/// live are let go. Calls before it are harmless. Drain `aw_registry_poll_released`
/// after.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_handle_timeout(
    registry: *mut aw_registry,
    now_ms: u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(registry, |state| {
            state.registry.handle_timeout(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// Lets every parked session go and forgets the busy ones (a server shutting down, or
/// conversations turned off): drain `aw_registry_poll_released` after. A bridge holding a
/// forgotten session gives its place back harmlessly.
///
/// Returns `AW_RESULT_OK`. Views from earlier calls become invalid.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_clear(registry: *mut aw_registry, now_ms: u64) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(registry, |state| {
            state.registry.clear(now_ms);
            Ok(aw_result::Ok)
        })
    }
}

/// The next agent session the registry let go (expired, evicted, replaced, failed or
/// cleared), into `*out_agent_session`: the agent's own id of it (a cursor-agent chat
/// id, an ACP session id), which no request will resume. End it if it still runs.
///
/// Returns `AW_RESULT_OK`, or `AW_RESULT_DRAINED` when there is none until the next input.
///
/// Memory and lifetimes: not NUL-terminated; valid until the next call on `registry` or
/// its free.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_poll_released(
    registry: *mut aw_registry,
    out_agent_session: *mut aw_str,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call_mut(registry, |state| {
            let out = Out::new(out_agent_session, "out_agent_session")?;
            state.released = state.registry.poll_released();
            let view = state
                .released
                .as_ref()
                .map(|released| aw_str::of(&released.agent_session));
            Ok(out.write_polled(view))
        })
    }
}

/// When `aw_registry_handle_timeout` is next due, on the caller's clock: writes whether a
/// deadline is scheduled to `*out_has_deadline` (none while nothing is parked), and the
/// deadline (or 0) to `*out_deadline_ms`.
///
/// Returns `AW_RESULT_OK`.
///
/// Since ABI 1.3.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_poll_timeout(
    registry: *const aw_registry,
    out_has_deadline: *mut bool,
    out_deadline_ms: *mut u64,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe {
        call(registry, |state| {
            let out_has = Out::new(out_has_deadline, "out_has_deadline")?;
            let out_deadline = Out::new(out_deadline_ms, "out_deadline_ms")?;
            let deadline = state.registry.poll_timeout();
            out_has.write(deadline.is_some());
            out_deadline.write(deadline.unwrap_or(0));
            Ok(aw_result::Ok)
        })
    }
}
