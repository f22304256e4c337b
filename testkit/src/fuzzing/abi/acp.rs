//! `aw_acp_connection` (and `aw_acp_config`) calls, each made on the handle and on a Rust
//! [`Connection`] in lockstep: the same results, transmits, ready turns, turn outputs,
//! decisions, deadlines, counters and models; an unknown turn is `UNKNOWN_TURN`.

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use serde_json::Value;

use super::bridge::{Polled, check_output_members};
use super::views::{OutParam, Owner, ValidUntil, bytes, text};
use super::{
    Books, DialectArg, Hook, OK, OPTIONAL, POLL, Pass, World, allowed, check_result, handle,
    null_out,
};
use crate::fuzzing::RequestBody;
use agentwire::acp::{AcpConfig, Connection, ConnectionError, Decision, PermissionChoice, TurnId};
use agentwire::bridge::BridgeParams;
use agentwire::cursor::ExitStatus;
use agentwire::ffi::acp::*;
use agentwire::ffi::acp_config::*;
use agentwire::ffi::bridge::aw_output;
use agentwire::ffi::result::aw_result;
use agentwire::ffi::test_hooks::{aw_acp_connection_test_overlap, aw_acp_connection_test_panic};
use agentwire::ffi::views::{aw_bytes, aw_str};

/// Polls in a row before a drain gives up: every poll must run dry.
const MAX_POLLS: usize = 100_000;

/// The project's ACP recordings, whose agent lines `AcpStdout::Recording` plays.
const RECORDINGS: &[&str] = &[
    include_str!("../../../../tests/fixtures/acp/synthetic__cancel-updates-after.jsonl"),
    include_str!("../../../../tests/fixtures/acp/synthetic__exit-mid-turn.jsonl"),
    include_str!("../../../../tests/fixtures/acp/synthetic__ids-with-newlines.jsonl"),
    include_str!("../../../../tests/fixtures/acp/synthetic__interleaved-sessions.jsonl"),
    include_str!("../../../../tests/fixtures/acp/synthetic__malformed-line.jsonl"),
    include_str!("../../../../tests/fixtures/acp/synthetic__not-logged-in.jsonl"),
];

/// Each recording's agent stdout lines, newline included.
fn agent_lines(n: u8) -> &'static [Vec<u8>] {
    static LINES: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    let all = LINES.get_or_init(|| {
        RECORDINGS
            .iter()
            .map(|recording| {
                recording
                    .lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .filter(|record| record["dir"] == "agent→client")
                    .map(|record| {
                        let mut line = match record["raw"].as_str() {
                            Some(raw) => raw.as_bytes().to_vec(),
                            None => serde_json::to_vec(&record["msg"]).expect("JSON"),
                        };
                        line.push(b'\n');
                        line
                    })
                    .collect()
            })
            .collect()
    });
    &all[usize::from(n) % all.len()]
}

/// An ACP connection handle, the Rust connection it must behave as, and where its
/// recording is.
pub(super) struct Slot {
    ptr: *mut aw_acp_connection,
    shadow: Connection,
    pub(super) books: Books,
    /// The turns started, in order: the C ABI numbers them from 0 as the Rust connection
    /// does.
    turns: Vec<TurnId>,
    recording: u8,
    line: usize,
}

impl Slot {
    /// The Rust connection's turn that the C ABI numbers `turn`, if it was started.
    fn turn(&self, turn: u64) -> Option<TurnId> {
        let index = usize::try_from(turn).ok()?;
        self.turns.get(index).copied()
    }
}

impl super::Slot for Slot {
    type Handle = aw_acp_connection;
    fn ptr(&self) -> *mut aw_acp_connection {
        self.ptr
    }
    fn books(&self) -> &Books {
        &self.books
    }
}

/// The settings `AcpOp::New` gives its config, each through its setter.
#[derive(Debug, Clone, Arbitrary)]
pub struct AcpSettings {
    /// `pool_size` (`n % 4`).
    pub pool_size: u8,
    /// `max_concurrent_prompts` (`n % 4`).
    pub max_concurrent_prompts: u8,
    /// `queue_timeout_ms`.
    pub queue_timeout_ms: u16,
    /// `turn_output_budget`, or the default.
    pub turn_output_budget: Option<u16>,
    /// `permission`: any number (2 and up are `INVALID_ENUM`).
    pub permission: u32,
    /// `cwd`, as bytes (maybe not UTF-8), passed as the second member says.
    pub cwd: (Vec<u8>, Pass),
}

/// What the agent writes to its stdout.
#[derive(Debug, Clone, Arbitrary)]
pub enum AcpStdout {
    /// The next agent line of the connection's recording (none after its last).
    Recording,
    /// The answer to our request `id` of a shape an agent gives.
    Answer(u8, AnswerShape),
    /// A message chunk of session `s-{n % 4}`.
    Update(u8, String),
    /// A permission request of session `s-{n % 4}`, with the agent's own id.
    Permission(u8, u8),
    /// These bytes and a newline.
    Line(Vec<u8>),
    /// Any bytes.
    Raw(Vec<u8>),
}

/// The `result` (or `error`) of an agent's answer.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum AnswerShape {
    /// `initialize`'s.
    Initialize,
    /// `session/new`'s: session `s-{n % 4}` with two models.
    Session(u8),
    /// A prompt's end.
    PromptEnd,
    /// A cancelled prompt's end.
    Cancelled,
    /// `error` -32000.
    Error,
    /// `{}`.
    Empty,
}

impl AcpStdout {
    fn bytes(&self, slot: Option<&mut Slot>) -> Vec<u8> {
        let line = |value: Value| {
            let mut line = serde_json::to_vec(&value).expect("JSON");
            line.push(b'\n');
            line
        };
        match self {
            AcpStdout::Recording => match slot {
                Some(s) => {
                    let lines = agent_lines(s.recording);
                    let next = lines.get(s.line).cloned().unwrap_or_default();
                    s.line += 1;
                    next
                }
                None => Vec::new(),
            },
            AcpStdout::Answer(id, shape) => {
                let result = match shape {
                    AnswerShape::Initialize => {
                        serde_json::json!({"protocolVersion": 1, "agentCapabilities": {}})
                    }
                    AnswerShape::Session(n) => serde_json::json!({
                        "sessionId": format!("s-{}", n % 4),
                        "models": {"currentModelId": "m-a", "availableModels": [
                            {"modelId": "m-a", "name": "A"}, {"modelId": "auto", "name": "Auto"}]},
                    }),
                    AnswerShape::PromptEnd => serde_json::json!({"stopReason": "end_turn"}),
                    AnswerShape::Cancelled => serde_json::json!({"stopReason": "cancelled"}),
                    AnswerShape::Error => {
                        return line(serde_json::json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32000, "message": "no"}}));
                    }
                    AnswerShape::Empty => serde_json::json!({}),
                };
                line(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            AcpStdout::Update(session, text) => line(serde_json::json!({
                "jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": format!("s-{}", session % 4), "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text}}},
            })),
            AcpStdout::Permission(session, id) => line(serde_json::json!({
                "jsonrpc": "2.0", "id": format!("p-{id}"), "method": "session/request_permission",
                "params": {"sessionId": format!("s-{}", session % 4),
                    "toolCall": {"toolCallId": "t", "title": "run"},
                    "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"},
                                {"optionId": "r", "name": "Reject", "kind": "reject_once"}]},
            })),
            AcpStdout::Line(bytes) => {
                let mut line = bytes.clone();
                line.push(b'\n');
                line
            }
            AcpStdout::Raw(bytes) => bytes.clone(),
        }
    }
}

/// A turn number argument.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum TurnArg {
    /// `n % (turns started + 1)`: a started turn, or the next number (unknown).
    Started(u8),
    /// Any number.
    Any(u64),
}

impl TurnArg {
    fn value(self, started: u64) -> u64 {
        match self {
            TurnArg::Started(n) => u64::from(n) % (started + 1),
            TurnArg::Any(n) => n,
        }
    }
}

/// A call on an ACP connection.
#[derive(Debug, Clone, Arbitrary)]
pub enum AcpOp {
    /// `aw_acp_config_new`, its setters and getters, `aw_acp_connection_new` with it (or
    /// with NULL), `aw_acp_config_free` (freeing the slot's connection first).
    New {
        /// The settings, or NULL for the defaults.
        settings: Option<AcpSettings>,
        /// Which built-in recording `AcpStdout::Recording` plays.
        recording: u8,
        /// Pass NULL as `out_connection`.
        null_out: bool,
    },
    /// `aw_acp_connection_free`.
    Free,
    /// `aw_acp_connection_start_turn`.
    StartTurn {
        /// The `aw_dialect` argument.
        dialect: DialectArg,
        /// The request body.
        body: RequestBody,
        /// How the body is passed.
        pass: Pass,
        /// The config slot (`n % 3`; an empty slot is NULL), or NULL.
        config: Option<u8>,
        /// Pass NULL as `out_turn`.
        null_out: bool,
    },
    /// `aw_acp_connection_push_stdout`.
    Stdout(AcpStdout, Pass),
    /// `aw_acp_connection_push_stderr`.
    Stderr(Vec<u8>, Pass),
    /// `aw_acp_connection_agent_exited_code` (or `_signal`).
    Exited {
        /// The signal variant.
        signal: bool,
        /// The code or signal.
        code: i32,
    },
    /// `aw_acp_connection_handle_timeout`, at the deadline (the clock moves there) and
    /// drained after, or at the current time.
    Timeout {
        /// Move the clock to the deadline.
        due: bool,
    },
    /// `aw_acp_connection_client_gone`.
    ClientGone(TurnArg),
    /// `aw_acp_connection_shutdown`.
    Shutdown,
    /// `aw_acp_connection_poll_transmit` once.
    PollTransmit {
        /// Pass NULL as `out_bytes`.
        null_out: bool,
    },
    /// `aw_acp_connection_poll_ready` once.
    PollReady {
        /// Pass NULL as `out_turn`.
        null_out: bool,
    },
    /// `aw_acp_connection_poll_output` once.
    PollOutput {
        /// The turn.
        turn: TurnArg,
        /// Pass NULL as `out_output`.
        null_out: bool,
    },
    /// `aw_acp_connection_poll_decision` once.
    PollDecision {
        /// Pass NULL as `out_decision`.
        null_out: bool,
    },
    /// Every poll until each runs dry: transmits, decisions, and the outputs of every
    /// turn `poll_ready` names.
    Drain,
    /// `aw_acp_connection_poll_timeout`.
    PollTimeout {
        /// Pass NULL as `out_has_deadline`.
        null_has: bool,
        /// Pass NULL as `out_deadline_ms`.
        null_deadline: bool,
    },
    /// `aw_acp_connection_model`.
    Model {
        /// The index.
        index: u8,
        /// Pass NULL as `out_model`.
        null_out: bool,
    },
    /// `aw_acp_connection_last_error`.
    LastError,
    /// `aw_acp_connection_test_panic`: poisons the handle.
    Panic,
    /// `aw_acp_connection_test_overlap`: a call and a free from inside a call, refused as
    /// `BUSY`.
    Overlap,
}

/// Documented results.
const NEW: &[aw_result] = &[aw_result::Ok, aw_result::NullParameter, aw_result::Poisoned];
const START: &[aw_result] = &[
    aw_result::Ok,
    aw_result::InvalidEnum,
    aw_result::Poisoned,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];
const PUSH: &[aw_result] = &[
    aw_result::Ok,
    aw_result::AfterExit,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];
const EXIT: &[aw_result] = &[aw_result::Ok, aw_result::ExitedTwice];
const TURN: &[aw_result] = &[aw_result::Ok, aw_result::UnknownTurn];
const POLL_TURN: &[aw_result] = &[aw_result::Ok, aw_result::Drained, aw_result::UnknownTurn];
const MODEL: &[aw_result] = &[
    aw_result::Ok,
    aw_result::NotAvailable,
    aw_result::IndexOutOfRange,
];
const SET_STR: &[aw_result] = &[
    aw_result::Ok,
    aw_result::InvalidUtf8,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];
const SET_ENUM: &[aw_result] = &[aw_result::Ok, aw_result::InvalidEnum];

fn connection_error(error: ConnectionError) -> aw_result {
    match error {
        ConnectionError::AfterExit => aw_result::AfterExit,
        ConnectionError::ExitedTwice => aw_result::ExitedTwice,
        other => crate::fuzzing::unknown(other),
    }
}

/// A getter's result: `OK` with `got` equal to `want`.
fn expect_ok<T: PartialEq + std::fmt::Debug>(
    result: aw_result,
    got: Option<T>,
    want: T,
    what: &str,
) {
    check_result(what, result, OK, OK);
    assert_eq!(got, Some(want), "{what}");
}

/// Builds an `aw_acp_config` from `settings` through its setters, each checked against
/// the Rust model, then every getter against the model; returns the handle and the model.
fn acp_config(settings: &AcpSettings) -> (*mut aw_acp_config, AcpConfig) {
    let mut model = AcpConfig::default();
    let mut out = OutParam::<*mut aw_acp_config>::new();
    // SAFETY: `out` is a local.
    let result = unsafe { aw_acp_config_new(out.ptr(false)) };
    check_result("aw_acp_config_new", result, OK, OK);
    let config = out.outcome(result, "aw_acp_config_new").expect("a config");
    let pool = usize::from(settings.pool_size % 4);
    let prompts = usize::from(settings.max_concurrent_prompts % 4);
    let queue = u64::from(settings.queue_timeout_ms);
    // SAFETY: `config` is live; the data pointers are valid, NULL, or with a length over
    // PTRDIFF_MAX (checked before any read); the outs are locals.
    unsafe {
        check_result(
            "set_pool_size",
            aw_acp_config_set_pool_size(config, pool),
            OK,
            OK,
        );
        model.pool_size = pool;
        let result = aw_acp_config_set_max_concurrent_prompts(config, prompts);
        check_result("set_max_concurrent_prompts", result, OK, OK);
        model.max_concurrent_prompts = prompts;
        let result = aw_acp_config_set_queue_timeout_ms(config, queue);
        check_result("set_queue_timeout_ms", result, OK, OK);
        model.queue_timeout_ms = queue;
        if let Some(budget) = settings.turn_output_budget {
            let result = aw_acp_config_set_turn_output_budget(config, usize::from(budget));
            check_result("set_turn_output_budget", result, OK, OK);
            model.turn_output_budget = usize::from(budget);
        }
        let permission = match settings.permission {
            0 => Some(PermissionChoice::AllowOnce),
            1 => Some(PermissionChoice::RejectOnce),
            _ => None,
        };
        let result = aw_acp_config_set_permission(config, settings.permission);
        let want = permission.map_or(aw_result::InvalidEnum, |_| aw_result::Ok);
        check_result("aw_acp_config_set_permission", result, SET_ENUM, &[want]);
        model.permission = permission.unwrap_or(model.permission);
        let (cwd, pass) = &settings.cwd;
        let passed = pass.apply(cwd);
        let result = aw_acp_config_set_cwd(config, passed.ptr.cast(), passed.len);
        let want: Vec<aw_result> = match passed.value {
            Err(errors) => errors.to_vec(),
            Ok(bytes) => match std::str::from_utf8(bytes) {
                Ok(cwd) => {
                    if result == aw_result::Ok {
                        model.cwd = cwd.to_owned();
                    }
                    vec![aw_result::Ok]
                }
                Err(_) => vec![aw_result::InvalidUtf8],
            },
        };
        check_result("aw_acp_config_set_cwd", result, SET_STR, &want);

        let mut size = OutParam::<usize>::new();
        let result = aw_acp_config_get_pool_size(config, size.ptr(false));
        expect_ok(
            result,
            size.outcome(result, "get"),
            model.pool_size,
            "get_pool_size",
        );
        let mut size = OutParam::<usize>::new();
        let result = aw_acp_config_get_max_concurrent_prompts(config, size.ptr(false));
        let want = model.max_concurrent_prompts;
        expect_ok(
            result,
            size.outcome(result, "get"),
            want,
            "get_max_concurrent_prompts",
        );
        let mut size = OutParam::<usize>::new();
        let result = aw_acp_config_get_turn_output_budget(config, size.ptr(false));
        let want = model.turn_output_budget;
        expect_ok(
            result,
            size.outcome(result, "get"),
            want,
            "get_turn_output_budget",
        );
        let mut ms = OutParam::<u64>::new();
        let result = aw_acp_config_get_queue_timeout_ms(config, ms.ptr(false));
        let want = model.queue_timeout_ms;
        expect_ok(
            result,
            ms.outcome(result, "get"),
            want,
            "get_queue_timeout_ms",
        );
        let mut choice = OutParam::<aw_permission_choice>::new();
        let result = aw_acp_config_get_permission(config, choice.ptr(false));
        let want = match model.permission {
            PermissionChoice::AllowOnce => aw_permission_choice::AllowOnce,
            PermissionChoice::RejectOnce => aw_permission_choice::RejectOnce,
        };
        expect_ok(
            result,
            choice.outcome(result, "get"),
            want,
            "get_permission",
        );
        let mut view = OutParam::<aw_str>::new();
        let result = aw_acp_config_get_cwd(config, view.ptr(false));
        let got = view.outcome(result, "get_cwd").map(|v| text(v, "get_cwd"));
        expect_ok(result, got, model.cwd.clone(), "get_cwd");
    }
    (config, model)
}

impl World {
    /// One call on ACP connection `slot`.
    pub(super) fn acp(&mut self, slot: usize, op: &AcpOp) {
        let owner = Owner::Acp(slot);
        let ptr = handle(&self.acps[slot]);
        let now = self.now;
        match op {
            AcpOp::New {
                settings,
                recording,
                null_out: null,
            } => {
                self.acp(slot, &AcpOp::Free);
                let (config, model) = match settings {
                    Some(settings) => acp_config(settings),
                    None => (std::ptr::null_mut(), AcpConfig::default()),
                };
                let mut out = OutParam::<*mut aw_acp_connection>::new();
                // SAFETY: `config` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_acp_connection_new(config, now, out.ptr(*null)) };
                // SAFETY: `config` is NULL or live, and not used again.
                unsafe { aw_acp_config_free(config) };
                let want = if *null {
                    aw_result::NullParameter
                } else {
                    aw_result::Ok
                };
                check_result("aw_acp_connection_new", result, NEW, &[want]);
                if let Some(ptr) = out.outcome(result, "aw_acp_connection_new") {
                    assert!(!ptr.is_null(), "aw_acp_connection_new gave NULL");
                    self.acps[slot] = Some(Slot {
                        ptr,
                        shadow: Connection::new(model, now),
                        books: Books::new(),
                        turns: Vec::new(),
                        recording: *recording,
                        line: 0,
                    });
                }
            }
            AcpOp::Free => {
                self.views.before_free(owner);
                // SAFETY: `ptr` is NULL or the slot's live handle, forgotten just below.
                unsafe { aw_acp_connection_free(ptr) };
                self.acps[slot] = None;
            }
            AcpOp::StartTurn {
                dialect,
                body,
                pass,
                config,
                null_out: null,
            } => {
                let body = body.bytes(dialect.dialect().unwrap_or_default());
                let passed = pass.apply(&body);
                let (config_ptr, config, poisoned) = self.config_arg(*config);
                self.before_call(owner, true);
                let mut out = OutParam::<u64>::new();
                let params = BridgeParams {
                    now_ms: now,
                    created_unix: 1_700_000_000,
                    id_seed: 7,
                };
                // SAFETY: `ptr` and `config_ptr` are NULL or live; `passed` is a valid
                // pointer and length, NULL, or a length over PTRDIFF_MAX; `out` is a local
                // or NULL.
                let result = unsafe {
                    aw_acp_connection_start_turn(
                        ptr,
                        dialect.value(),
                        passed.ptr,
                        passed.len,
                        config_ptr,
                        params.now_ms,
                        params.created_unix,
                        params.id_seed,
                        out.ptr(*null),
                    )
                };
                let mut errors = null_out(*null).to_vec();
                errors.extend(passed.value.err().unwrap_or_default());
                if poisoned {
                    errors.push(aw_result::Poisoned);
                }
                if errors.is_empty() && dialect.dialect().is_none() {
                    errors.push(aw_result::InvalidEnum);
                }
                let mut want = None;
                let allowed = allowed(self.acps[slot].as_mut(), &errors, |s| {
                    let dialect = dialect.dialect().expect("a valid dialect");
                    let body = passed.value.expect("valid bytes");
                    let turn = s.shadow.start_turn(dialect, body, &config, params);
                    s.turns.push(turn);
                    want = Some(turn.get());
                    aw_result::Ok
                });
                let what = "aw_acp_connection_start_turn";
                check_result(what, result, START, &allowed);
                self.note(owner, result);
                if let Some(turn) = out.outcome(result, what) {
                    assert_eq!(Some(turn), want, "{what}");
                }
            }
            AcpOp::Stdout(source, pass) => {
                let data = source.bytes(self.acps[slot].as_mut());
                self.acp_push(slot, &data, *pass, true);
            }
            AcpOp::Stderr(data, pass) => self.acp_push(slot, data, *pass, false),
            AcpOp::Exited { signal, code } => {
                self.before_call(owner, true);
                let status = if *signal {
                    ExitStatus::Signal(*code)
                } else {
                    ExitStatus::Code(*code)
                };
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe {
                    if *signal {
                        aw_acp_connection_agent_exited_signal(ptr, *code, now)
                    } else {
                        aw_acp_connection_agent_exited_code(ptr, *code, now)
                    }
                };
                let allowed = allowed(self.acps[slot].as_mut(), &[], |s| {
                    let exited = s.shadow.agent_exited(status, now);
                    exited.map_or_else(connection_error, |()| aw_result::Ok)
                });
                check_result("aw_acp_connection_agent_exited", result, EXIT, &allowed);
                self.note(owner, result);
            }
            AcpOp::Timeout { due } => {
                if *due {
                    let deadline = self.acps[slot]
                        .as_ref()
                        .filter(|s| !s.books.poisoned)
                        .and_then(|s| s.shadow.poll_timeout());
                    if let Some(deadline) = deadline {
                        self.now = self.now.max(deadline);
                    }
                }
                let now = self.now;
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_acp_connection_handle_timeout(ptr, now) };
                let allowed = allowed(self.acps[slot].as_mut(), &[], |s| {
                    s.shadow.handle_timeout(now);
                    aw_result::Ok
                });
                check_result("aw_acp_connection_handle_timeout", result, OK, &allowed);
                self.note(owner, result);
                if *due {
                    self.acp_drain(slot);
                }
            }
            AcpOp::ClientGone(turn) => {
                self.before_call(owner, true);
                let started = self.acps[slot].as_ref().map_or(0, |s| s.turns.len() as u64);
                let turn = turn.value(started);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_acp_connection_client_gone(ptr, turn, now) };
                let allowed = allowed(self.acps[slot].as_mut(), &[], |s| {
                    let Some(turn) = s.turn(turn) else {
                        return aw_result::UnknownTurn;
                    };
                    s.shadow.client_gone(turn, now);
                    aw_result::Ok
                });
                check_result("aw_acp_connection_client_gone", result, TURN, &allowed);
                self.note(owner, result);
            }
            AcpOp::Shutdown => {
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_acp_connection_shutdown(ptr, now) };
                let allowed = allowed(self.acps[slot].as_mut(), &[], |s| {
                    s.shadow.shutdown(now);
                    aw_result::Ok
                });
                check_result("aw_acp_connection_shutdown", result, OK, &allowed);
                self.note(owner, result);
            }
            AcpOp::PollTransmit { null_out } => {
                self.acp_poll_transmit(slot, *null_out);
            }
            AcpOp::PollReady { null_out } => {
                self.acp_poll_ready(slot, *null_out);
            }
            AcpOp::PollOutput { turn, null_out } => {
                let started = self.acps[slot].as_ref().map_or(0, |s| s.turns.len() as u64);
                self.acp_poll_output(slot, turn.value(started), *null_out);
            }
            AcpOp::PollDecision { null_out } => {
                self.acp_poll_decision(slot, *null_out);
            }
            AcpOp::Drain => self.acp_drain(slot),
            AcpOp::PollTimeout {
                null_has,
                null_deadline,
            } => self.acp_poll_timeout(slot, *null_has, *null_deadline),
            AcpOp::Model { index, null_out } => {
                self.before_call(owner, false);
                let index = usize::from(*index % 4);
                let mut out = OutParam::<aw_str>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_acp_connection_model(ptr, index, out.ptr(*null_out)) };
                let mut want = None;
                let errors = super::null_out(*null_out);
                let allowed = allowed(self.acps[slot].as_mut(), errors, |s| {
                    match s.shadow.models() {
                        None => aw_result::NotAvailable,
                        Some(models) => match models.get(index) {
                            None => aw_result::IndexOutOfRange,
                            Some(model) => {
                                want = Some(model.clone());
                                aw_result::Ok
                            }
                        },
                    }
                });
                let what = "aw_acp_connection_model";
                check_result(what, result, MODEL, &allowed);
                self.note(owner, result);
                if let Some(view) = out.outcome(result, what) {
                    let got = text(view, what);
                    assert_eq!(Some(&got), want.as_ref(), "{what}");
                    let (data, held) = (view.data.cast(), got.into_bytes());
                    let until = ValidUntil::MutatingCall;
                    self.views.keep(owner, until, data, held, what.into());
                }
            }
            AcpOp::LastError => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_acp_connection_last_error(ptr) };
                self.last_error_of(owner, "aw_acp_connection_last_error", call);
            }
            AcpOp::Panic => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_acp_connection_test_panic(ptr) };
                self.test_hook(owner, Hook::Panic, call);
            }
            AcpOp::Overlap => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_acp_connection_test_overlap(ptr) };
                self.test_hook(owner, Hook::Overlap, call);
            }
        }
    }

    /// The getters of a live connection after each call on it, so that every state a run
    /// reaches has them checked: ready, dead, counters, models, the deadline.
    pub(super) fn observe_acp(&mut self, slot: usize) {
        let owner = Owner::Acp(slot);
        let ptr = handle(&self.acps[slot]);
        self.before_call(owner, false);
        // SAFETY: `ptr` is NULL or live.
        let (ready, dead) = unsafe {
            (
                aw_acp_connection_is_ready(ptr),
                aw_acp_connection_is_dead(ptr),
            )
        };
        let (want_ready, want_dead) = match &self.acps[slot] {
            Some(s) if !s.books.poisoned => (s.shadow.is_ready(), s.shadow.is_dead()),
            _ => (false, true),
        };
        assert_eq!((ready, dead), (want_ready, want_dead), "is_ready, is_dead");
        let Some(s) = self.acps[slot].as_ref().filter(|s| !s.books.poisoned) else {
            return;
        };
        let (active, malformed) = (s.shadow.active_turns(), s.shadow.malformed_lines());
        let models = s.shadow.models().map(<[String]>::len);
        let current = s.shadow.current_model().map(str::to_owned);
        let mut count = OutParam::<usize>::new();
        let mut lines = OutParam::<u64>::new();
        let mut model_count = OutParam::<usize>::new();
        // SAFETY: `ptr` is live; the outs are locals.
        let (r1, r2, r3) = unsafe {
            (
                aw_acp_connection_active_turns(ptr, count.ptr(false)),
                aw_acp_connection_malformed_lines(ptr, lines.ptr(false)),
                aw_acp_connection_model_count(ptr, model_count.ptr(false)),
            )
        };
        expect_ok(
            r1,
            count.outcome(r1, "active_turns"),
            active,
            "active_turns",
        );
        expect_ok(
            r2,
            lines.outcome(r2, "malformed_lines"),
            malformed,
            "malformed_lines",
        );
        let want = if models.is_some() {
            aw_result::Ok
        } else {
            aw_result::NotAvailable
        };
        check_result("aw_acp_connection_model_count", r3, OPTIONAL, &[want]);
        assert_eq!(
            model_count.outcome(r3, "model_count"),
            models,
            "model_count"
        );
        // SAFETY: `ptr` is live; `out` is a local.
        let call = |out| unsafe { aw_acp_connection_current_model(ptr, out) };
        self.text_getter(
            owner,
            false,
            "aw_acp_connection_current_model",
            OPTIONAL,
            current,
            call,
        );
        self.acp_poll_timeout(slot, false, false);
    }

    /// `aw_acp_connection_push_stdout` (or `_stderr`) of `data`, passed as `pass`.
    fn acp_push(&mut self, slot: usize, data: &[u8], pass: Pass, stdout: bool) {
        self.before_call(Owner::Acp(slot), true);
        let ptr = handle(&self.acps[slot]);
        let now = self.now;
        let passed = pass.apply(data);
        // SAFETY: `ptr` is NULL or live; `passed` is a valid pointer and length, NULL, or a
        // length over PTRDIFF_MAX (checked before any read).
        let result = unsafe {
            if stdout {
                aw_acp_connection_push_stdout(ptr, passed.ptr, passed.len, now)
            } else {
                aw_acp_connection_push_stderr(ptr, passed.ptr, passed.len, now)
            }
        };
        let errors = passed.value.err().unwrap_or_default();
        let allowed = allowed(self.acps[slot].as_mut(), errors, |s| {
            let bytes = passed.value.expect("valid bytes");
            let pushed = if stdout {
                s.shadow.push_stdout(bytes, now)
            } else {
                s.shadow.push_stderr(bytes, now)
            };
            pushed.map_or_else(connection_error, |()| aw_result::Ok)
        });
        check_result(
            "aw_acp_connection_push_stdout/stderr",
            result,
            PUSH,
            &allowed,
        );
        self.note(Owner::Acp(slot), result);
    }

    /// `aw_acp_connection_poll_transmit` once; its result.
    fn acp_poll_transmit(&mut self, slot: usize, null: bool) -> aw_result {
        let owner = Owner::Acp(slot);
        self.before_call(owner, true);
        let ptr = handle(&self.acps[slot]);
        let mut out = OutParam::<aw_bytes>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_acp_connection_poll_transmit(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = allowed(self.acps[slot].as_mut(), null_out(null), |s| {
            want = s.shadow.poll_transmit().map(<[u8]>::to_vec);
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_acp_connection_poll_transmit";
        check_result(what, result, POLL, &allowed);
        self.note(owner, result);
        if let Some(view) = out.outcome(result, what) {
            let got = bytes(view, what);
            assert_eq!(Some(&got), want.as_ref(), "{what}");
            assert!(got.ends_with(b"\n"), "{what}: whole lines");
            let data = view.data;
            self.views
                .keep(owner, ValidUntil::NextCall, data, got, what.into());
        }
        result
    }

    /// `aw_acp_connection_poll_ready` once; the turn it named.
    fn acp_poll_ready(&mut self, slot: usize, null: bool) -> Option<u64> {
        let owner = Owner::Acp(slot);
        self.before_call(owner, true);
        let ptr = handle(&self.acps[slot]);
        let mut out = OutParam::<u64>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_acp_connection_poll_ready(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = allowed(self.acps[slot].as_mut(), null_out(null), |s| {
            want = s.shadow.poll_ready().map(TurnId::get);
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_acp_connection_poll_ready";
        check_result(what, result, POLL, &allowed);
        self.note(owner, result);
        let got = out.outcome(result, what);
        if got.is_some() {
            assert_eq!(got, want, "{what}");
        }
        got
    }

    /// `aw_acp_connection_poll_output` of `turn` once; its result.
    fn acp_poll_output(&mut self, slot: usize, turn: u64, null: bool) -> aw_result {
        let owner = Owner::Acp(slot);
        self.before_call(owner, true);
        let ptr = handle(&self.acps[slot]);
        let mut out = OutParam::<aw_output>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_acp_connection_poll_output(ptr, turn, out.ptr(null)) };
        let mut want = None;
        let errors = null_out(null);
        let allowed = allowed(self.acps[slot].as_mut(), errors, |s| {
            let Some(turn) = s.turn(turn) else {
                return aw_result::UnknownTurn;
            };
            want = s.shadow.poll_output(turn).as_ref().map(Polled::of);
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_acp_connection_poll_output";
        check_result(what, result, POLL_TURN, &allowed);
        self.note(owner, result);
        if let Some(output) = out.outcome(result, what) {
            let want = want.expect("an output");
            assert!(
                !matches!(want, Polled::StopAgent),
                "{what}: StopAgent from a turn"
            );
            let what = format!("{what} ({want:?})");
            check_output_members(&mut self.views, owner, &output, &want, &what);
        }
        result
    }

    /// `aw_acp_connection_poll_decision` once; its result.
    fn acp_poll_decision(&mut self, slot: usize, null: bool) -> aw_result {
        let owner = Owner::Acp(slot);
        self.before_call(owner, true);
        let ptr = handle(&self.acps[slot]);
        let mut out = OutParam::<aw_acp_decision>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_acp_connection_poll_decision(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = allowed(self.acps[slot].as_mut(), null_out(null), |s| {
            want = s.shadow.poll_decision().map(|decision| match decision {
                Decision::Restart { reason } => reason,
                other => crate::fuzzing::unknown(other),
            });
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_acp_connection_poll_decision";
        check_result(what, result, POLL, &allowed);
        self.note(owner, result);
        if let Some(decision) = out.outcome(result, what) {
            assert_eq!(decision.kind, aw_acp_decision_kind::Restart, "{what}");
            let got = text(decision.reason, what);
            assert_eq!(Some(&got), want.as_ref(), "{what}");
            let data = decision.reason.data.cast();
            self.views.keep(
                owner,
                ValidUntil::NextCall,
                data,
                got.into_bytes(),
                what.into(),
            );
        }
        result
    }

    /// Every poll until each runs dry, as the header's loop says: transmits, decisions,
    /// and the outputs of every turn `poll_ready` names.
    fn acp_drain(&mut self, slot: usize) {
        let dry = |result| result != aw_result::Ok;
        for _ in 0..MAX_POLLS {
            if dry(self.acp_poll_transmit(slot, false)) {
                break;
            }
        }
        for _ in 0..MAX_POLLS {
            if dry(self.acp_poll_decision(slot, false)) {
                break;
            }
        }
        for _ in 0..MAX_POLLS {
            let Some(turn) = self.acp_poll_ready(slot, false) else {
                return;
            };
            for polls in 0.. {
                assert!(polls < MAX_POLLS, "poll_output does not run dry");
                if dry(self.acp_poll_output(slot, turn, false)) {
                    break;
                }
            }
        }
        panic!("aw_acp_connection_poll_ready does not run dry");
    }

    /// `aw_acp_connection_poll_timeout`: the Rust connection's deadline.
    fn acp_poll_timeout(&mut self, slot: usize, null_has: bool, null_deadline: bool) {
        let owner = Owner::Acp(slot);
        self.before_call(owner, false);
        let ptr = handle(&self.acps[slot]);
        let mut has = OutParam::<bool>::new();
        let mut deadline = OutParam::<u64>::new();
        // SAFETY: `ptr` is NULL or live; the outs are locals or NULL.
        let result = unsafe {
            aw_acp_connection_poll_timeout(ptr, has.ptr(null_has), deadline.ptr(null_deadline))
        };
        let mut want = None;
        let errors = null_out(null_has || null_deadline);
        let allowed = allowed(self.acps[slot].as_mut(), errors, |s| {
            want = s.shadow.poll_timeout();
            aw_result::Ok
        });
        let what = "aw_acp_connection_poll_timeout";
        check_result(what, result, OK, &allowed);
        self.note(owner, result);
        let has = has.outcome(result, what);
        let deadline = deadline.outcome(result, what);
        if let (Some(has), Some(deadline)) = (has, deadline) {
            assert_eq!(has, want.is_some(), "{what}: has_deadline");
            assert_eq!(deadline, want.unwrap_or(0), "{what}: deadline");
        }
    }
}
