//! `aw_bridge` calls, each made on the handle and on a Rust [`Bridge`] in lockstep: the
//! same results, outputs, deadlines, invocation and session id.

use arbitrary::Arbitrary;

use super::views::{
    OutParam, Owner, ValidUntil, Views, assert_empty_bytes, assert_empty_str, bytes, c_text,
};
use super::{
    Books, DialectArg, Hook, OK, OPTIONAL, POLL, Pass, Passed, SLOTS, Stdout, World, allowed,
    check_result, handle, null_out,
};
use crate::fuzzing::RequestBody;
use agentwire::bridge::{Bridge, BridgeError, BridgeParams, Caller, Output};
use agentwire::cursor::{ExitStatus, Invocation};
use agentwire::ffi::bridge::*;
use agentwire::ffi::registry::aw_registry;
use agentwire::ffi::result::aw_result;
use agentwire::ffi::test_hooks::{aw_bridge_test_overlap, aw_bridge_test_panic};
use agentwire::ffi::views::{aw_bytes, aw_str};
use agentwire::registry::{ConversationKeys, Owner as KeyOwner};

/// Polls in a row before `Drain` gives up: `aw_bridge_poll_output` must run dry.
const MAX_POLLS: usize = 10_000;

/// A bridge handle, the Rust bridge it must behave as, and what was polled from it.
pub(super) struct Slot {
    ptr: *mut aw_bridge,
    shadow: Bridge,
    pub(super) books: Books,
    transcript: &'static [u8],
    offset: usize,
    heads: usize,
    stops: usize,
    respawns: usize,
    ended: bool,
    /// The registry a bridge of a conversation was made in.
    made_in: Option<*mut aw_registry>,
}

/// The ids `BridgeOp::NewInConversation` gives its request's conversation: each absent
/// (NULL) or these bytes (maybe not UTF-8), passed as its `Pass` says.
#[derive(Debug, Clone, Arbitrary)]
pub struct Keys {
    /// `owner_key`.
    pub owner: Option<(Vec<u8>, Pass)>,
    /// `client_session`.
    pub client_session: Option<(Vec<u8>, Pass)>,
    /// `client_agent`.
    pub client_agent: Option<(Vec<u8>, Pass)>,
    /// `caller_key`.
    pub caller: Option<(Vec<u8>, Pass)>,
}

/// A call on a bridge.
#[derive(Debug, Clone, Arbitrary)]
pub enum BridgeOp {
    /// `aw_bridge_new` (freeing the slot's handle first).
    New {
        /// The `dialect` argument.
        dialect: DialectArg,
        /// The request body, in that dialect (Chat Completions for an invalid one).
        body: RequestBody,
        /// How it is passed.
        pass: Pass,
        /// The config slot (`n % 3`; an empty slot is NULL), or NULL.
        config: Option<u8>,
        /// Which built-in transcript `Stdout::Transcript` reads.
        transcript: u8,
        /// `created_unix`.
        created_unix: u64,
        /// `id_seed`.
        id_seed: u64,
        /// Pass NULL as `out_bridge`.
        null_out: bool,
    },
    /// `aw_bridge_free`.
    Free,
    /// `aw_bridge_invocation_program`.
    Program {
        /// Pass NULL as `out_program`.
        null_out: bool,
    },
    /// `aw_bridge_invocation_arg_count`.
    ArgCount {
        /// Pass NULL as `out_count`.
        null_out: bool,
    },
    /// `aw_bridge_invocation_arg`.
    Arg {
        /// The index: small (`n % 32`) or any.
        index: Result<u8, u64>,
        /// Pass NULL as `out_arg`.
        null_out: bool,
    },
    /// `aw_bridge_invocation_stdin`.
    Stdin {
        /// Pass NULL as `out_stdin`.
        null_out: bool,
    },
    /// `aw_bridge_invocation_env_count`.
    EnvCount {
        /// Pass NULL as `out_count`.
        null_out: bool,
    },
    /// `aw_bridge_invocation_env`.
    Env {
        /// The index: small (`n % 8`) or any.
        index: Result<u8, u64>,
        /// Pass NULL as `out_name`.
        null_name: bool,
        /// Pass NULL as `out_value`.
        null_value: bool,
    },
    /// `aw_bridge_push_stdout`.
    Stdout(Stdout, Pass),
    /// `aw_bridge_push_stderr`.
    Stderr(Vec<u8>, Pass),
    /// `aw_bridge_agent_exited_code`.
    ExitCode(i32),
    /// `aw_bridge_agent_exited_signal`.
    ExitSignal(i32),
    /// `aw_bridge_handle_timeout`; when `due`, as a driver does: the clock first moves to
    /// the deadline, and after the call the outputs are drained and the next deadline must
    /// be later.
    HandleTimeout {
        /// Wait for the deadline first.
        due: bool,
    },
    /// `aw_bridge_client_gone`.
    ClientGone,
    /// `aw_bridge_shutdown`.
    Shutdown,
    /// `aw_bridge_poll_output` once.
    Poll {
        /// Pass NULL as `out_output`.
        null_out: bool,
    },
    /// `aw_bridge_poll_output` until `AW_RESULT_DRAINED`.
    Drain,
    /// `aw_bridge_poll_timeout`.
    PollTimeout {
        /// Pass NULL as `out_has_deadline`.
        null_has: bool,
        /// Pass NULL as `out_deadline_ms`.
        null_deadline: bool,
    },
    /// `aw_bridge_is_ended`.
    IsEnded,
    /// `aw_bridge_is_stream`.
    IsStream,
    /// `aw_bridge_session_id`.
    SessionId {
        /// Pass NULL as `out_session_id`.
        null_out: bool,
    },
    /// `aw_bridge_last_error`.
    LastError,
    /// `aw_bridge_test_panic`: poisons the handle.
    Panic,
    /// `aw_bridge_test_overlap`: a call and a free from inside a call, refused as `BUSY`.
    Overlap,
    /// `aw_bridge_new_in_conversation` (freeing the slot's handle first), in registry slot
    /// `registry % 3` (an empty slot is NULL).
    NewInConversation {
        /// The `dialect` argument.
        dialect: DialectArg,
        /// The request body, in that dialect (Chat Completions for an invalid one).
        body: RequestBody,
        /// How it is passed.
        pass: Pass,
        /// The config slot (`n % 3`; an empty slot is NULL), or NULL.
        config: Option<u8>,
        /// The registry slot.
        registry: u8,
        /// The conversation's ids.
        keys: Keys,
        /// Which built-in transcript `Stdout::Transcript` reads.
        transcript: u8,
        /// `id_seed`.
        id_seed: u64,
        /// Pass NULL as `out_bridge`.
        null_out: bool,
    },
    /// `aw_bridge_end_conversation_turn` with registry slot `n % 3` (an empty slot is
    /// NULL).
    EndTurn(u8),
}

/// A polled output, owned.
#[derive(Debug)]
pub(super) enum Polled {
    Head(u16, &'static str, Option<bool>),
    Body(Vec<u8>),
    StopAgent,
    Respawn,
    End,
}

/// Documented results.
const NEW: &[aw_result] = &[
    aw_result::Ok,
    aw_result::InvalidEnum,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
    aw_result::Poisoned,
    aw_result::InteriorNul,
];
const INVOCATION: &[aw_result] = &[aw_result::Ok, aw_result::Rejected];
const INVOCATION_INDEXED: &[aw_result] = &[
    aw_result::Ok,
    aw_result::Rejected,
    aw_result::IndexOutOfRange,
];
const PUSH: &[aw_result] = &[
    aw_result::Ok,
    aw_result::AfterExit,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];
const EXITED: &[aw_result] = &[aw_result::Ok, aw_result::ExitedTwice];
const NEW_IN_CONVERSATION: &[aw_result] = &[
    aw_result::Ok,
    aw_result::InvalidEnum,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
    aw_result::InvalidUtf8,
    aw_result::Poisoned,
    aw_result::Busy,
    aw_result::InteriorNul,
];
const END_TURN: &[aw_result] = &[
    aw_result::Ok,
    aw_result::WrongRegistry,
    aw_result::NullParameter,
    aw_result::Poisoned,
    aw_result::Busy,
];

fn bridge_error(error: BridgeError) -> aw_result {
    match error {
        BridgeError::AfterExit => aw_result::AfterExit,
        BridgeError::ExitedTwice => aw_result::ExitedTwice,
        other => crate::fuzzing::unknown(other),
    }
}

impl super::Slot for Slot {
    type Handle = aw_bridge;
    fn ptr(&self) -> *mut aw_bridge {
        self.ptr
    }
    fn books(&self) -> &Books {
        &self.books
    }
}

impl World {
    /// One call on bridge `slot`.
    pub(super) fn bridge(&mut self, slot: usize, op: &BridgeOp) {
        let owner = Owner::Bridge(slot);
        let ptr = handle(&self.bridges[slot]);
        let now = self.now;
        match op {
            BridgeOp::New {
                dialect,
                body,
                pass,
                config,
                transcript,
                created_unix,
                id_seed,
                null_out,
            } => {
                let params = BridgeParams {
                    now_ms: now,
                    created_unix: *created_unix,
                    id_seed: *id_seed,
                };
                let transcript = super::transcript(*transcript);
                self.bridge_new(
                    slot, *dialect, body, *pass, *config, params, transcript, *null_out,
                );
            }
            BridgeOp::Free => {
                self.views.before_free(owner);
                // SAFETY: `ptr` is NULL or the slot's live handle, forgotten just below.
                unsafe { aw_bridge_free(ptr) };
                self.bridges[slot] = None;
            }
            BridgeOp::Program { null_out: null } => {
                let what = "aw_bridge_invocation_program";
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_bridge_invocation_program(ptr, out) };
                self.invocation_str(slot, *null, what, INVOCATION, call, |i| {
                    Some(i.program.clone())
                });
            }
            BridgeOp::ArgCount { null_out: null } | BridgeOp::EnvCount { null_out: null } => {
                self.before_call(owner, false);
                let args = matches!(op, BridgeOp::ArgCount { .. });
                let mut out = OutParam::<usize>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe {
                    if args {
                        aw_bridge_invocation_arg_count(ptr, out.ptr(*null))
                    } else {
                        aw_bridge_invocation_env_count(ptr, out.ptr(*null))
                    }
                };
                let mut want = None;
                let allowed = allowed(self.bridges[slot].as_mut(), null_out(*null), |s| {
                    match s.shadow.invocation() {
                        None => aw_result::Rejected,
                        Some(invocation) => {
                            want = Some(if args {
                                invocation.args.len()
                            } else {
                                invocation.env.len()
                            });
                            aw_result::Ok
                        }
                    }
                });
                let what = "aw_bridge_invocation_<count>";
                check_result(what, result, INVOCATION, &allowed);
                self.note(Owner::Bridge(slot), result);
                if let Some(count) = out.outcome(result, what) {
                    assert_eq!(Some(count), want, "{what}");
                }
            }
            BridgeOp::Arg {
                index,
                null_out: null,
            } => {
                let index = match index {
                    Ok(n) => usize::from(*n % 32),
                    Err(n) => *n as usize,
                };
                let what = "aw_bridge_invocation_arg";
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_bridge_invocation_arg(ptr, index, out) };
                self.invocation_str(slot, *null, what, INVOCATION_INDEXED, call, |i| {
                    i.args.get(index).cloned()
                });
            }
            BridgeOp::Stdin { null_out: null } => {
                self.before_call(owner, false);
                let mut out = OutParam::<aw_bytes>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_bridge_invocation_stdin(ptr, out.ptr(*null)) };
                let mut want = None;
                let allowed = allowed(self.bridges[slot].as_mut(), null_out(*null), |s| {
                    match s.shadow.invocation() {
                        None => aw_result::Rejected,
                        Some(invocation) => {
                            want = Some(invocation.stdin.clone());
                            aw_result::Ok
                        }
                    }
                });
                let what = "aw_bridge_invocation_stdin";
                check_result(what, result, INVOCATION, &allowed);
                self.note(Owner::Bridge(slot), result);
                if let Some(view) = out.outcome(result, what) {
                    let got = bytes(view, what);
                    assert_eq!(Some(&got), want.as_ref(), "{what}");
                    self.views
                        .keep(owner, ValidUntil::Free, view.data, got, what.into());
                }
            }
            BridgeOp::Env {
                index,
                null_name,
                null_value,
            } => {
                self.before_call(owner, false);
                let index = match index {
                    Ok(n) => usize::from(*n % 8),
                    Err(n) => *n as usize,
                };
                let mut name = OutParam::<aw_str>::new();
                let mut value = OutParam::<aw_str>::new();
                // SAFETY: `ptr` is NULL or live; the outs are locals or NULL.
                let result = unsafe {
                    aw_bridge_invocation_env(
                        ptr,
                        index,
                        name.ptr(*null_name),
                        value.ptr(*null_value),
                    )
                };
                let mut want = None;
                let allowed = allowed(
                    self.bridges[slot].as_mut(),
                    null_out(*null_name || *null_value),
                    |s| match s.shadow.invocation().map(|i| i.env.get(index)) {
                        None => aw_result::Rejected,
                        Some(None) => aw_result::IndexOutOfRange,
                        Some(Some(pair)) => {
                            want = Some(pair.clone());
                            aw_result::Ok
                        }
                    },
                );
                let what = "aw_bridge_invocation_env";
                check_result(what, result, INVOCATION_INDEXED, &allowed);
                self.note(Owner::Bridge(slot), result);
                let name = name.outcome(result, what);
                let value = value.outcome(result, what);
                if let (Some(name), Some(value), Some((want_name, want_value))) =
                    (name, value, want)
                {
                    self.keep_c_text(
                        owner,
                        name,
                        Some(want_name),
                        "aw_bridge_invocation_env name",
                    );
                    self.keep_c_text(
                        owner,
                        value,
                        Some(want_value),
                        "aw_bridge_invocation_env value",
                    );
                }
            }
            BridgeOp::Stdout(source, pass) => {
                let data = match &mut self.bridges[slot] {
                    Some(s) => source.bytes(s.transcript, &mut s.offset),
                    None => source.bytes(&[], &mut 0),
                };
                self.bridge_push(slot, &data, *pass, true);
            }
            BridgeOp::Stderr(data, pass) => self.bridge_push(slot, data, *pass, false),
            BridgeOp::ExitCode(code) | BridgeOp::ExitSignal(code) => {
                self.before_call(owner, true);
                let status = if matches!(op, BridgeOp::ExitCode(_)) {
                    ExitStatus::Code(*code)
                } else {
                    ExitStatus::Signal(*code)
                };
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe {
                    match status {
                        ExitStatus::Code(code) => aw_bridge_agent_exited_code(ptr, code, now),
                        ExitStatus::Signal(signal) => {
                            aw_bridge_agent_exited_signal(ptr, signal, now)
                        }
                    }
                };
                let allowed = allowed(self.bridges[slot].as_mut(), &[], |s| {
                    s.shadow
                        .agent_exited(status, now)
                        .map_or_else(bridge_error, |()| aw_result::Ok)
                });
                check_result("aw_bridge_agent_exited_*", result, EXITED, &allowed);
                self.note(Owner::Bridge(slot), result);
            }
            BridgeOp::HandleTimeout { due } => self.bridge_timeout(slot, *due),
            BridgeOp::ClientGone | BridgeOp::Shutdown => {
                self.before_call(owner, true);
                let gone = matches!(op, BridgeOp::ClientGone);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe {
                    if gone {
                        aw_bridge_client_gone(ptr, now)
                    } else {
                        aw_bridge_shutdown(ptr, now)
                    }
                };
                let allowed = allowed(self.bridges[slot].as_mut(), &[], |s| {
                    if gone {
                        s.shadow.client_gone(now);
                    } else {
                        s.shadow.shutdown(now);
                    }
                    aw_result::Ok
                });
                check_result("aw_bridge_client_gone/shutdown", result, OK, &allowed);
                self.note(Owner::Bridge(slot), result);
            }
            BridgeOp::Poll { null_out } => {
                self.bridge_poll(slot, *null_out);
            }
            BridgeOp::Drain => self.bridge_drain(slot),
            BridgeOp::PollTimeout {
                null_has,
                null_deadline,
            } => self.bridge_poll_timeout(slot, *null_has, *null_deadline),
            BridgeOp::IsEnded | BridgeOp::IsStream => {
                self.before_call(owner, false);
                let ended = matches!(op, BridgeOp::IsEnded);
                // SAFETY: `ptr` is NULL or live.
                let got = unsafe {
                    if ended {
                        aw_bridge_is_ended(ptr)
                    } else {
                        aw_bridge_is_stream(ptr)
                    }
                };
                // Ended once `AW_OUTPUT_KIND_END` was handed out; the documented fallbacks
                // for NULL and poisoned: ended, and not a stream.
                let want = match &self.bridges[slot] {
                    Some(s) if !s.books.poisoned => {
                        if ended {
                            assert_eq!(s.shadow.is_ended(), s.ended, "the Rust bridge's is_ended");
                            s.ended
                        } else {
                            s.shadow.is_stream()
                        }
                    }
                    _ => ended,
                };
                assert_eq!(got, want, "aw_bridge_is_ended/is_stream ({op:?})");
            }
            BridgeOp::SessionId { null_out: null } => {
                let want = self.bridges[slot]
                    .as_ref()
                    .and_then(|s| s.shadow.session_id().map(str::to_owned));
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let call = |out| unsafe { aw_bridge_session_id(ptr, out) };
                self.text_getter(owner, *null, "aw_bridge_session_id", OPTIONAL, want, call);
            }
            BridgeOp::LastError => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_bridge_last_error(ptr) };
                self.last_error_of(owner, "aw_bridge_last_error", call);
            }
            BridgeOp::Panic => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_bridge_test_panic(ptr) };
                self.test_hook(owner, Hook::Panic, call);
            }
            BridgeOp::Overlap => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_bridge_test_overlap(ptr) };
                self.test_hook(owner, Hook::Overlap, call);
            }
            BridgeOp::NewInConversation {
                dialect,
                body,
                pass,
                config,
                registry,
                keys,
                transcript,
                id_seed,
                null_out,
            } => {
                let params = BridgeParams {
                    now_ms: now,
                    created_unix: 1_700_000_000,
                    id_seed: *id_seed,
                };
                let registry = usize::from(*registry) % SLOTS;
                let transcript = super::transcript(*transcript);
                self.bridge_new_in_conversation(
                    slot, *dialect, body, *pass, *config, registry, keys, params, transcript,
                    *null_out,
                );
                self.observe_registry(registry);
            }
            BridgeOp::EndTurn(registry) => {
                let registry = usize::from(*registry) % SLOTS;
                self.before_call(owner, true);
                self.before_call(super::views::Owner::Registry(registry), true);
                let registry_ptr = handle(&self.registries[registry]);
                // SAFETY: both are NULL or live.
                let result = unsafe { aw_bridge_end_conversation_turn(ptr, registry_ptr, now) };
                let want = match (&mut self.bridges[slot], &mut self.registries[registry]) {
                    (None, _) => aw_result::NullParameter,
                    (Some(b), _) if b.books.poisoned => aw_result::Poisoned,
                    (Some(_), None) => aw_result::NullParameter,
                    (Some(b), Some(r)) => {
                        if b.made_in.is_some_and(|made_in| made_in != r.ptr) {
                            aw_result::WrongRegistry
                        } else if r.books.poisoned {
                            aw_result::Poisoned
                        } else {
                            b.shadow.end_conversation_turn(&mut r.shadow, now);
                            aw_result::Ok
                        }
                    }
                };
                check_result("aw_bridge_end_conversation_turn", result, END_TURN, &[want]);
                self.note(owner, result);
                self.observe_registry(registry);
            }
        }
    }

    /// The getters of a live bridge after each call on it, so that every state a run
    /// reaches has them checked: deadline, ended, stream, session id.
    pub(super) fn observe_bridge(&mut self, slot: usize) {
        if self.bridges[slot]
            .as_ref()
            .is_some_and(|s| !s.books.poisoned)
        {
            self.bridge_poll_timeout(slot, false, false);
            self.bridge(slot, &BridgeOp::IsEnded);
            self.bridge(slot, &BridgeOp::IsStream);
            self.bridge(slot, &BridgeOp::SessionId { null_out: false });
        }
    }

    /// An invocation getter of one NUL-terminated string: `pick` gives the string of the
    /// Rust bridge's invocation, or `None` for an index out of range.
    fn invocation_str(
        &mut self,
        slot: usize,
        null: bool,
        what: &str,
        documented: &[aw_result],
        call: impl FnOnce(*mut aw_str) -> aw_result,
        pick: impl FnOnce(&Invocation) -> Option<String>,
    ) {
        self.before_call(Owner::Bridge(slot), false);
        let mut out = OutParam::<aw_str>::new();
        let result = call(out.ptr(null));
        let mut want = None;
        let allowed = allowed(self.bridges[slot].as_mut(), null_out(null), |s| {
            match s.shadow.invocation().map(pick) {
                None => aw_result::Rejected,
                Some(None) => aw_result::IndexOutOfRange,
                Some(Some(text)) => {
                    want = Some(text);
                    aw_result::Ok
                }
            }
        });
        check_result(what, result, documented, &allowed);
        self.note(Owner::Bridge(slot), result);
        if let Some(view) = out.outcome(result, what) {
            self.keep_c_text(Owner::Bridge(slot), view, want, what);
        }
    }

    /// Reads a NUL-terminated view of the invocation, valid until the bridge is freed.
    fn keep_c_text(&mut self, owner: Owner, view: aw_str, want: Option<String>, what: &str) {
        let got = c_text(view, what);
        assert_eq!(Some(&got), want.as_ref(), "{what}");
        let mut held = got.into_bytes();
        held.push(0);
        self.views
            .keep(owner, ValidUntil::Free, view.data.cast(), held, what.into());
    }

    #[allow(clippy::too_many_arguments)]
    fn bridge_new(
        &mut self,
        slot: usize,
        dialect: DialectArg,
        body: &RequestBody,
        pass: Pass,
        config: Option<u8>,
        params: BridgeParams,
        transcript: &'static [u8],
        null: bool,
    ) {
        self.bridge(slot, &BridgeOp::Free);
        let body = body.bytes(dialect.dialect().unwrap_or_default());
        let passed = pass.apply(&body);
        let (config_ptr, config, poisoned) = self.config_arg(config);
        let mut out = OutParam::<*mut aw_bridge>::new();
        // SAFETY: `passed` is a valid pointer and length, NULL, or a length over
        // PTRDIFF_MAX; `config_ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe {
            aw_bridge_new(
                dialect.value(),
                passed.ptr,
                passed.len,
                config_ptr,
                params.now_ms,
                params.created_unix,
                params.id_seed,
                out.ptr(null),
            )
        };
        let mut errors = null_out(null).to_vec();
        errors.extend(passed.value.err().unwrap_or_default());
        if poisoned {
            errors.push(aw_result::Poisoned);
        }
        if !errors.is_empty() {
            return check_new(result, &errors, out);
        }
        // The dialect is checked once the pointers and the config are.
        let Some(dialect) = dialect.dialect() else {
            return check_new(result, &[aw_result::InvalidEnum], out);
        };
        let shadow = Bridge::new(dialect, passed.value.unwrap_or_default(), &config, params);
        // The invocation's strings go to execvp and setenv: a NUL in one is refused.
        let nul = shadow.invocation().is_some_and(|i| {
            std::iter::once(&i.program)
                .chain(&i.args)
                .chain(i.env.iter().flat_map(|(k, v)| [k, v]))
                .any(|s| s.contains('\0'))
        });
        let allowed = if nul {
            aw_result::InteriorNul
        } else {
            aw_result::Ok
        };
        check_result("aw_bridge_new", result, NEW, &[allowed]);
        if let Some(ptr) = out.outcome(result, "aw_bridge_new") {
            assert!(!ptr.is_null(), "aw_bridge_new gave NULL");
            self.bridges[slot] = Some(Slot {
                ptr,
                shadow,
                books: Books::new(),
                transcript,
                offset: 0,
                heads: 0,
                stops: 0,
                respawns: 0,
                ended: false,
                made_in: None,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn bridge_new_in_conversation(
        &mut self,
        slot: usize,
        dialect: DialectArg,
        body: &RequestBody,
        pass: Pass,
        config: Option<u8>,
        registry: usize,
        keys: &Keys,
        params: BridgeParams,
        transcript: &'static [u8],
        null: bool,
    ) {
        self.bridge(slot, &BridgeOp::Free);
        let body = body.bytes(dialect.dialect().unwrap_or_default());
        let passed = pass.apply(&body);
        let (config_ptr, config, poisoned) = self.config_arg(config);
        self.before_call(super::views::Owner::Registry(registry), true);
        let registry_ptr = handle(&self.registries[registry]);
        let absent = || Passed {
            ptr: std::ptr::null(),
            len: 0,
            value: Ok(&[]),
        };
        let given: Vec<Passed<'_>> = [
            &keys.owner,
            &keys.client_session,
            &keys.client_agent,
            &keys.caller,
        ]
        .into_iter()
        .map(|k| match k {
            Some((bytes, pass)) => pass.apply(bytes),
            None => absent(),
        })
        .collect();
        let mut out = OutParam::<*mut aw_bridge>::new();
        // SAFETY: every data pointer is valid with its length, NULL, or with a length over
        // PTRDIFF_MAX; `config_ptr` and `registry_ptr` are NULL or live; `out` is a local
        // or NULL.
        let result = unsafe {
            aw_bridge_new_in_conversation(
                dialect.value(),
                passed.ptr,
                passed.len,
                config_ptr,
                params.now_ms,
                params.created_unix,
                params.id_seed,
                registry_ptr,
                given[0].ptr,
                given[0].len,
                given[1].ptr.cast(),
                given[1].len,
                given[2].ptr.cast(),
                given[2].len,
                given[3].ptr.cast(),
                given[3].len,
                out.ptr(null),
            )
        };
        let mut errors = null_out(null).to_vec();
        errors.extend(passed.value.err().unwrap_or_default());
        for (at, key) in given.iter().enumerate() {
            match key.value {
                Err(e) => errors.extend(e),
                // The headers and the caller's key are UTF-8; the owner key is bytes.
                Ok(bytes) if at > 0 && std::str::from_utf8(bytes).is_err() => {
                    errors.push(aw_result::InvalidUtf8)
                }
                Ok(_) => {}
            }
        }
        if poisoned {
            errors.push(aw_result::Poisoned);
        }
        if registry_ptr.is_null() {
            errors.push(aw_result::NullParameter);
        }
        let what = "aw_bridge_new_in_conversation";
        let refuse = |result: aw_result, errors: &[aw_result], out: OutParam<*mut aw_bridge>| {
            check_result(what, result, NEW_IN_CONVERSATION, errors);
            assert!(out.outcome(result, what).is_none());
        };
        if !errors.is_empty() {
            return refuse(result, &errors, out);
        }
        let Some(dialect) = dialect.dialect() else {
            return refuse(result, &[aw_result::InvalidEnum], out);
        };
        let shadow_registry = self.registries[registry].as_mut().expect("not NULL");
        if shadow_registry.books.poisoned {
            return refuse(result, &[aw_result::Poisoned], out);
        }
        let text = |at: usize| -> Option<&str> {
            let key = &given[at];
            (!key.ptr.is_null()).then(|| std::str::from_utf8(key.value.unwrap()).unwrap())
        };
        let caller = Caller {
            owner: if given[0].ptr.is_null() {
                KeyOwner::LOCAL
            } else {
                KeyOwner::from_key(given[0].value.unwrap())
            },
            keys: ConversationKeys {
                caller: text(3),
                client_session: text(1),
                client_agent: text(2),
            },
        };
        let shadow = Bridge::in_conversation(
            dialect,
            passed.value.unwrap_or_default(),
            &config,
            params,
            &mut shadow_registry.shadow,
            caller,
        );
        let nul = shadow.invocation().is_some_and(|i| {
            std::iter::once(&i.program)
                .chain(&i.args)
                .chain(i.env.iter().flat_map(|(k, v)| [k, v]))
                .any(|s| s.contains('\0'))
        });
        let allowed = if nul {
            aw_result::InteriorNul
        } else {
            aw_result::Ok
        };
        check_result(what, result, NEW_IN_CONVERSATION, &[allowed]);
        if let Some(ptr) = out.outcome(result, what) {
            assert!(!ptr.is_null(), "{what} gave NULL");
            self.bridges[slot] = Some(Slot {
                ptr,
                shadow,
                books: Books::new(),
                transcript,
                offset: 0,
                heads: 0,
                stops: 0,
                respawns: 0,
                ended: false,
                made_in: Some(registry_ptr),
            });
        }
    }

    /// `aw_bridge_push_stdout` (or `_stderr`) of `data`, passed as `pass`.
    fn bridge_push(&mut self, slot: usize, data: &[u8], pass: Pass, stdout: bool) {
        self.before_call(Owner::Bridge(slot), true);
        let ptr = handle(&self.bridges[slot]);
        let now = self.now;
        let passed = pass.apply(data);
        // SAFETY: `ptr` is NULL or live; `passed` is a valid pointer and length, NULL, or a
        // length over PTRDIFF_MAX (checked before any read).
        let result = unsafe {
            if stdout {
                aw_bridge_push_stdout(ptr, passed.ptr, passed.len, now)
            } else {
                aw_bridge_push_stderr(ptr, passed.ptr, passed.len, now)
            }
        };
        let errors = passed.value.err().unwrap_or_default();
        let allowed = allowed(self.bridges[slot].as_mut(), errors, |s| {
            let bytes = passed.value.expect("valid bytes");
            let pushed = if stdout {
                s.shadow.push_stdout(bytes, now)
            } else {
                s.shadow.push_stderr(bytes, now)
            };
            pushed.map_or_else(bridge_error, |()| aw_result::Ok)
        });
        check_result("aw_bridge_push_stdout/stderr", result, PUSH, &allowed);
        self.note(Owner::Bridge(slot), result);
    }

    /// `aw_bridge_handle_timeout`, maybe at the deadline and followed by a drain.
    fn bridge_timeout(&mut self, slot: usize, due: bool) {
        if due {
            let deadline = self.bridges[slot]
                .as_ref()
                .filter(|s| !s.books.poisoned)
                .and_then(|s| s.shadow.poll_timeout());
            if let Some(deadline) = deadline {
                self.now = self.now.max(deadline);
            }
        }
        let now = self.now;
        self.before_call(Owner::Bridge(slot), true);
        let ptr = handle(&self.bridges[slot]);
        // SAFETY: `ptr` is NULL or live.
        let result = unsafe { aw_bridge_handle_timeout(ptr, now) };
        let allowed = allowed(self.bridges[slot].as_mut(), &[], |s| {
            s.shadow.handle_timeout(now);
            aw_result::Ok
        });
        check_result("aw_bridge_handle_timeout", result, OK, &allowed);
        self.note(Owner::Bridge(slot), result);
        if due {
            self.bridge_drain(slot);
            self.bridge_poll_timeout(slot, false, false);
            if let Some(s) = self.bridges[slot].as_ref().filter(|s| !s.books.poisoned) {
                if let Some(next) = s.shadow.poll_timeout() {
                    assert!(
                        next > now || next == u64::MAX,
                        "the deadline handled at {now} left the next one at {next}"
                    );
                }
            }
        }
    }

    /// `aw_bridge_poll_output` once; its result.
    fn bridge_poll(&mut self, slot: usize, null: bool) -> aw_result {
        self.before_call(Owner::Bridge(slot), true);
        let ptr = handle(&self.bridges[slot]);
        let mut out = OutParam::<aw_output>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_bridge_poll_output(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = allowed(self.bridges[slot].as_mut(), null_out(null), |s| {
            want = s.shadow.poll_output().as_ref().map(Polled::of);
            if s.ended {
                assert!(want.is_none(), "an output after End: {want:?}");
            }
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_bridge_poll_output";
        check_result(what, result, POLL, &allowed);
        self.note(Owner::Bridge(slot), result);
        if let Some(output) = out.outcome(result, what) {
            let want = want.expect("an output");
            self.check_output(slot, &output, &want);
        }
        result
    }

    /// An `aw_output` is the Rust bridge's output, with the members its kind does not use
    /// zero or empty.
    fn check_output(&mut self, slot: usize, output: &aw_output, want: &Polled) {
        let what = format!("aw_bridge_poll_output ({want:?})");
        let s = self.bridges[slot].as_mut().expect("a live bridge");
        match want {
            Polled::Head(..) => {
                s.heads += 1;
                assert_eq!(s.heads, 1, "{what}: a second head");
            }
            Polled::Body(_) => assert_eq!(s.heads, 1, "{what}: a body before the head"),
            Polled::StopAgent => {
                s.stops += 1;
                assert!(s.stops <= 1 + s.respawns, "a second StopAgent for one run");
            }
            Polled::Respawn => {
                assert!(
                    s.made_in.is_some(),
                    "{what}: a bridge made by aw_bridge_new never respawns"
                );
                s.respawns += 1;
                assert_eq!(s.respawns, 1, "{what}: a second respawn");
            }
            Polled::End => s.ended = true,
        }
        check_output_members(&mut self.views, Owner::Bridge(slot), output, want, &what);
    }

    /// `aw_bridge_poll_output` until `AW_RESULT_DRAINED` (or another result that ends the
    /// loop: a NULL or poisoned handle).
    fn bridge_drain(&mut self, slot: usize) {
        for _ in 0..MAX_POLLS {
            if self.bridge_poll(slot, false) != aw_result::Ok {
                return;
            }
        }
        panic!("aw_bridge_poll_output does not run dry");
    }

    /// `aw_bridge_poll_timeout`: the Rust bridge's deadline; none after the end.
    fn bridge_poll_timeout(&mut self, slot: usize, null_has: bool, null_deadline: bool) {
        self.before_call(Owner::Bridge(slot), false);
        let ptr = handle(&self.bridges[slot]);
        let mut has = OutParam::<bool>::new();
        let mut deadline = OutParam::<u64>::new();
        // SAFETY: `ptr` is NULL or live; the outs are locals or NULL.
        let result =
            unsafe { aw_bridge_poll_timeout(ptr, has.ptr(null_has), deadline.ptr(null_deadline)) };
        let mut want = None;
        let allowed = allowed(
            self.bridges[slot].as_mut(),
            null_out(null_has || null_deadline),
            |s| {
                want = s.shadow.poll_timeout();
                if s.ended {
                    assert_eq!(want, None, "a deadline after End");
                }
                aw_result::Ok
            },
        );
        let what = "aw_bridge_poll_timeout";
        check_result(what, result, OK, &allowed);
        self.note(Owner::Bridge(slot), result);
        let has = has.outcome(result, what);
        let deadline = deadline.outcome(result, what);
        if let (Some(has), Some(deadline)) = (has, deadline) {
            assert_eq!(has, want.is_some(), "{what}: has_deadline");
            assert_eq!(deadline, want.unwrap_or(0), "{what}: deadline");
        }
    }
}

/// `aw_bridge_new` met misuse: one of `errors`, and no handle written.
fn check_new(result: aw_result, errors: &[aw_result], out: OutParam<*mut aw_bridge>) {
    check_result("aw_bridge_new", result, NEW, errors);
    assert!(out.outcome(result, "aw_bridge_new").is_none());
}

impl Polled {
    /// A Rust output, owned.
    pub(super) fn of(output: &Output<'_>) -> Polled {
        match output {
            Output::Head(head) => Polled::Head(head.status, head.content_type, head.retryable),
            Output::Body(bytes) => Polled::Body(bytes.to_vec()),
            Output::StopAgent => Polled::StopAgent,
            Output::Respawn => Polled::Respawn,
            Output::End => Polled::End,
        }
    }
}

/// An `aw_output` holds `want`, with the members its kind does not use zero or empty;
/// its views are kept (the content type static, the body until the next call on `owner`).
pub(super) fn check_output_members(
    views: &mut Views,
    owner: Owner,
    output: &aw_output,
    want: &Polled,
    what: &str,
) {
    let kind = match want {
        Polled::Head(..) => aw_output_kind::Head,
        Polled::Body(_) => aw_output_kind::Body,
        Polled::StopAgent => aw_output_kind::StopAgent,
        Polled::Respawn => aw_output_kind::Respawn,
        Polled::End => aw_output_kind::End,
    };
    assert_eq!(output.kind, kind, "{what}: kind");
    if let Polled::Head(status, content_type, retryable) = want {
        assert_eq!(output.status, *status, "{what}: status");
        // Static and NUL-terminated.
        let got = c_text(output.content_type, what);
        assert_eq!(got, *content_type, "{what}: content type");
        let mut held = got.into_bytes();
        held.push(0);
        views.keep(
            Owner::Static,
            ValidUntil::Free,
            output.content_type.data.cast(),
            held,
            what.into(),
        );
        assert_eq!(output.has_retryable, retryable.is_some(), "{what}");
        assert_eq!(output.retryable, retryable.unwrap_or(false), "{what}");
    } else {
        assert_eq!(output.status, 0, "{what}: status of a non-head");
        assert_empty_str(output.content_type, what);
        assert!(
            !output.has_retryable && !output.retryable,
            "{what}: retryable of a non-head"
        );
    }
    if let Polled::Body(want) = want {
        let got = bytes(output.body, what);
        assert_eq!(&got, want, "{what}: body");
        views.keep(
            owner,
            ValidUntil::NextCall,
            output.body.data,
            got,
            what.into(),
        );
    } else {
        assert_empty_bytes(output.body, what);
    }
}
