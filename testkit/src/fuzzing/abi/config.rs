//! `aw_config` calls: every setter with any value, valid or not, and every getter, against
//! a Rust [`Config`] changed only by the calls that succeed.

use arbitrary::Arbitrary;

use super::views::{OutParam, Owner};
use super::{Books, Hook, OK, OPTIONAL, Pass, World, allowed, check_result, handle, null_out};
use agentwire::bridge::Config;
use agentwire::ffi::config::*;
use agentwire::ffi::result::aw_result;
use agentwire::ffi::test_hooks::{aw_config_test_overlap, aw_config_test_panic};
use agentwire::openai::chat::ReasoningField;
use agentwire::tools::ToolStrategy;

/// A config handle and the Rust config it must equal.
pub(super) struct Slot {
    pub(super) ptr: *mut aw_config,
    pub(super) shadow: Config,
    pub(super) books: Books,
}

/// A call on a config.
#[derive(Debug, Clone, Arbitrary)]
pub enum ConfigOp {
    /// `aw_config_new` (freeing the slot's handle first).
    New {
        /// Pass NULL as `out_config`.
        null_out: bool,
    },
    /// `aw_config_free`.
    Free,
    /// `aw_config_set_cursor_binary`, `_workspace`, `_cli_config_dir`.
    SetText {
        /// Which setting.
        field: TextField,
        /// The bytes (any: UTF-8 or not, NUL bytes or not).
        text: Vec<u8>,
        /// How they are passed.
        pass: Pass,
    },
    /// `aw_config_clear_*`.
    Clear(ClearField),
    /// `aw_config_set_tool_strategy`, `_reasoning`.
    SetEnum {
        /// Which setting.
        field: EnumField,
        /// A valid value (`n % 3`) or any number.
        value: Result<u8, u32>,
    },
    /// A numeric setter.
    SetNumber {
        /// Which setting.
        field: NumberField,
        /// The value (truncated to the setter's type).
        value: Number,
    },
    /// A boolean setter.
    SetFlag {
        /// Which setting.
        field: FlagField,
        /// The value.
        value: bool,
    },
    /// A getter.
    Get {
        /// Which setting.
        field: Field,
        /// Pass NULL as `out_value`.
        null_out: bool,
    },
    /// `aw_config_last_error`.
    LastError,
    /// `aw_config_test_panic`: poisons the handle.
    Panic,
    /// `aw_config_test_overlap`: a call and a free from inside a call, refused as `BUSY`.
    Overlap,
}

/// A string setting.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum TextField {
    /// `cursor_binary`.
    CursorBinary,
    /// `workspace`.
    Workspace,
    /// `cli_config_dir`.
    CliConfigDir,
}

/// A setting that can be cleared.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum ClearField {
    /// `workspace`.
    Workspace,
    /// `cli_config_dir`.
    CliConfigDir,
    /// `max_duration_ms`.
    MaxDuration,
}

/// An enum setting.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum EnumField {
    /// `tool_strategy`.
    ToolStrategy,
    /// `reasoning`.
    Reasoning,
}

/// A boolean setting.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum FlagField {
    /// `allow_force`.
    AllowForce,
    /// `partial_output`.
    PartialOutput,
    /// `activity_notes`.
    ActivityNotes,
}

/// A numeric setting.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum NumberField {
    /// `max_duration_ms` (u64).
    MaxDuration,
    /// `head_deadline_ms` (u64).
    HeadDeadline,
    /// `keep_alive_ms` (u64).
    KeepAlive,
    /// `idle_timeout_ms` (u64).
    IdleTimeout,
    /// `batch_window_ms` (u64).
    BatchWindow,
    /// `stderr_tail_bytes` (size_t).
    StderrTail,
    /// `max_envelope_bytes` (size_t).
    MaxEnvelope,
    /// `decoder_max_line_len` (size_t).
    DecoderMaxLineLen,
    /// `decoder_max_notes` (size_t).
    DecoderMaxNotes,
    /// `request_max_body_bytes` (size_t).
    RequestMaxBody,
    /// `request_max_messages` (size_t).
    RequestMaxMessages,
    /// `request_max_tools` (size_t).
    RequestMaxTools,
    /// `loop_guard_max_failed_repeats` (uint32_t).
    LoopGuardMaxFailedRepeats,
    /// `loop_guard_max_repeats` (uint32_t).
    LoopGuardMaxRepeats,
}

/// Any setting, for the getters.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Field {
    /// A string.
    Text(TextField),
    /// An enum.
    Enum(EnumField),
    /// A boolean.
    Flag(FlagField),
    /// A number.
    Number(NumberField),
}

/// A numeric value.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Number {
    /// Small: milliseconds to a minute, bytes to 64 KiB; 0 included.
    Small(u16),
    /// Any.
    Any(u64),
    /// The largest of the setter's type.
    Max,
}

impl Number {
    fn get(self) -> u64 {
        match self {
            Number::Small(n) => u64::from(n),
            Number::Any(n) => n,
            Number::Max => u64::MAX,
        }
    }
}

impl NumberField {
    /// Every numeric setting.
    const ALL: [NumberField; 14] = [
        NumberField::MaxDuration,
        NumberField::HeadDeadline,
        NumberField::KeepAlive,
        NumberField::IdleTimeout,
        NumberField::BatchWindow,
        NumberField::StderrTail,
        NumberField::MaxEnvelope,
        NumberField::DecoderMaxLineLen,
        NumberField::DecoderMaxNotes,
        NumberField::RequestMaxBody,
        NumberField::RequestMaxMessages,
        NumberField::RequestMaxTools,
        NumberField::LoopGuardMaxFailedRepeats,
        NumberField::LoopGuardMaxRepeats,
    ];

    /// Every numeric setting. (A function, not a public constant: cbindgen, which reads
    /// the whole crate for the C header, would declare the type of a public associated
    /// constant there.)
    pub fn all() -> [NumberField; 14] {
        NumberField::ALL
    }

    /// The value as the setter's type takes it, widened back.
    fn truncate(self, value: u64) -> u64 {
        match self {
            NumberField::LoopGuardMaxFailedRepeats | NumberField::LoopGuardMaxRepeats => {
                u64::from(value as u32)
            }
            _ => value as usize as u64,
        }
    }

    /// The setting in `config` (`None`: not set).
    fn read(self, config: &Config) -> Option<u64> {
        let size = |n: usize| Some(n as u64);
        match self {
            NumberField::MaxDuration => config.max_duration_ms,
            NumberField::HeadDeadline => Some(config.head_deadline_ms),
            NumberField::KeepAlive => Some(config.keep_alive_ms),
            NumberField::IdleTimeout => Some(config.idle_timeout_ms),
            NumberField::BatchWindow => Some(config.batch_window_ms),
            NumberField::StderrTail => size(config.stderr_tail_bytes),
            NumberField::MaxEnvelope => size(config.max_envelope_bytes),
            NumberField::DecoderMaxLineLen => size(config.decoder.max_line_len),
            NumberField::DecoderMaxNotes => size(config.decoder.max_notes),
            NumberField::RequestMaxBody => size(config.request_limits.max_body_bytes),
            NumberField::RequestMaxMessages => size(config.request_limits.max_messages),
            NumberField::RequestMaxTools => size(config.request_limits.max_tools),
            NumberField::LoopGuardMaxFailedRepeats => {
                Some(u64::from(config.loop_guard.max_failed_repeats))
            }
            NumberField::LoopGuardMaxRepeats => Some(u64::from(config.loop_guard.max_repeats)),
        }
    }

    /// Sets the setting in `config` (`value` already truncated).
    fn write(self, config: &mut Config, value: u64) {
        let size = value as usize;
        let count = value as u32;
        match self {
            NumberField::MaxDuration => config.max_duration_ms = Some(value),
            NumberField::HeadDeadline => config.head_deadline_ms = value,
            NumberField::KeepAlive => config.keep_alive_ms = value,
            NumberField::IdleTimeout => config.idle_timeout_ms = value,
            NumberField::BatchWindow => config.batch_window_ms = value,
            NumberField::StderrTail => config.stderr_tail_bytes = size,
            NumberField::MaxEnvelope => config.max_envelope_bytes = size,
            NumberField::DecoderMaxLineLen => config.decoder.max_line_len = size,
            NumberField::DecoderMaxNotes => config.decoder.max_notes = size,
            NumberField::RequestMaxBody => config.request_limits.max_body_bytes = size,
            NumberField::RequestMaxMessages => config.request_limits.max_messages = size,
            NumberField::RequestMaxTools => config.request_limits.max_tools = size,
            NumberField::LoopGuardMaxFailedRepeats => config.loop_guard.max_failed_repeats = count,
            NumberField::LoopGuardMaxRepeats => config.loop_guard.max_repeats = count,
        }
    }

    /// Calls the setter.
    ///
    /// # Safety
    /// `config` is NULL or a live config.
    unsafe fn set(self, config: *mut aw_config, value: u64) -> aw_result {
        let size = value as usize;
        let count = value as u32;
        // SAFETY: the caller's contract; the values are plain numbers.
        unsafe {
            match self {
                NumberField::MaxDuration => aw_config_set_max_duration_ms(config, value),
                NumberField::HeadDeadline => aw_config_set_head_deadline_ms(config, value),
                NumberField::KeepAlive => aw_config_set_keep_alive_ms(config, value),
                NumberField::IdleTimeout => aw_config_set_idle_timeout_ms(config, value),
                NumberField::BatchWindow => aw_config_set_batch_window_ms(config, value),
                NumberField::StderrTail => aw_config_set_stderr_tail_bytes(config, size),
                NumberField::MaxEnvelope => aw_config_set_max_envelope_bytes(config, size),
                NumberField::DecoderMaxLineLen => aw_config_set_decoder_max_line_len(config, size),
                NumberField::DecoderMaxNotes => aw_config_set_decoder_max_notes(config, size),
                NumberField::RequestMaxBody => aw_config_set_request_max_body_bytes(config, size),
                NumberField::RequestMaxMessages => aw_config_set_request_max_messages(config, size),
                NumberField::RequestMaxTools => aw_config_set_request_max_tools(config, size),
                NumberField::LoopGuardMaxFailedRepeats => {
                    aw_config_set_loop_guard_max_failed_repeats(config, count)
                }
                NumberField::LoopGuardMaxRepeats => {
                    aw_config_set_loop_guard_max_repeats(config, count)
                }
            }
        }
    }

    /// Calls the getter; the value, widened, when it returned `AW_RESULT_OK`.
    ///
    /// # Safety
    /// `config` is NULL or a live config.
    unsafe fn get(self, config: *const aw_config, null: bool) -> (aw_result, Option<u64>) {
        /// Runs one getter with an out-parameter of its type.
        ///
        /// # Safety
        /// `config` is NULL or a live config.
        unsafe fn with<T: Into<u64>>(
            config: *const aw_config,
            null: bool,
            get: unsafe extern "C" fn(*const aw_config, *mut T) -> aw_result,
        ) -> (aw_result, Option<u64>) {
            let mut out = OutParam::<T>::new();
            // SAFETY: the caller's contract; `out` is a local of the getter's type.
            let result = unsafe { get(config, out.ptr(null)) };
            (result, out.outcome(result, "a getter").map(Into::into))
        }
        /// `size_t` does not widen with `Into`: a getter of it.
        ///
        /// # Safety
        /// As `with`.
        unsafe fn with_size(
            config: *const aw_config,
            null: bool,
            get: unsafe extern "C" fn(*const aw_config, *mut usize) -> aw_result,
        ) -> (aw_result, Option<u64>) {
            let mut out = OutParam::<usize>::new();
            // SAFETY: as `with`.
            let result = unsafe { get(config, out.ptr(null)) };
            (result, out.outcome(result, "a getter").map(|n| n as u64))
        }
        // SAFETY: the caller's contract.
        unsafe {
            match self {
                NumberField::MaxDuration => with(config, null, aw_config_get_max_duration_ms),
                NumberField::HeadDeadline => with(config, null, aw_config_get_head_deadline_ms),
                NumberField::KeepAlive => with(config, null, aw_config_get_keep_alive_ms),
                NumberField::IdleTimeout => with(config, null, aw_config_get_idle_timeout_ms),
                NumberField::BatchWindow => with(config, null, aw_config_get_batch_window_ms),
                NumberField::StderrTail => with_size(config, null, aw_config_get_stderr_tail_bytes),
                NumberField::MaxEnvelope => {
                    with_size(config, null, aw_config_get_max_envelope_bytes)
                }
                NumberField::DecoderMaxLineLen => {
                    with_size(config, null, aw_config_get_decoder_max_line_len)
                }
                NumberField::DecoderMaxNotes => {
                    with_size(config, null, aw_config_get_decoder_max_notes)
                }
                NumberField::RequestMaxBody => {
                    with_size(config, null, aw_config_get_request_max_body_bytes)
                }
                NumberField::RequestMaxMessages => {
                    with_size(config, null, aw_config_get_request_max_messages)
                }
                NumberField::RequestMaxTools => {
                    with_size(config, null, aw_config_get_request_max_tools)
                }
                NumberField::LoopGuardMaxFailedRepeats => {
                    with(config, null, aw_config_get_loop_guard_max_failed_repeats)
                }
                NumberField::LoopGuardMaxRepeats => {
                    with(config, null, aw_config_get_loop_guard_max_repeats)
                }
            }
        }
    }
}

impl super::Slot for Slot {
    type Handle = aw_config;
    fn ptr(&self) -> *mut aw_config {
        self.ptr
    }
    fn books(&self) -> &Books {
        &self.books
    }
}

impl World {
    /// One call on config slot `slot`.
    pub(super) fn config(&mut self, slot: usize, op: &ConfigOp) {
        let owner = Owner::Config(slot);
        let ptr = handle(&self.configs[slot]);
        match op {
            ConfigOp::New { null_out } => {
                self.config(slot, &ConfigOp::Free);
                let mut out = OutParam::<*mut aw_config>::new();
                // SAFETY: `out` is a local (or NULL).
                let result = unsafe { aw_config_new(out.ptr(*null_out)) };
                let allowed = if *null_out {
                    aw_result::NullParameter
                } else {
                    aw_result::Ok
                };
                check_result("aw_config_new", result, &[aw_result::Ok], &[allowed]);
                if let Some(ptr) = out.outcome(result, "aw_config_new") {
                    assert!(!ptr.is_null(), "aw_config_new gave NULL");
                    self.configs[slot] = Some(Slot {
                        ptr,
                        shadow: Config::default(),
                        books: Books::new(),
                    });
                }
            }
            ConfigOp::Free => {
                self.views.before_free(owner);
                // SAFETY: `ptr` is NULL or the slot's live handle, forgotten just below.
                unsafe { aw_config_free(ptr) };
                self.configs[slot] = None;
            }
            ConfigOp::SetText { field, text, pass } => {
                self.before_call(owner, true);
                let passed = pass.apply(text);
                let errors = match passed.value {
                    Err(errors) => errors,
                    Ok(bytes) => match std::str::from_utf8(bytes) {
                        Err(_) => &[aw_result::InvalidUtf8][..],
                        Ok(text) if text.contains('\0') => &[aw_result::InteriorNul][..],
                        Ok(_) => &[][..],
                    },
                };
                let data = passed.ptr.cast();
                // SAFETY: `ptr` is NULL or live; `data` points to `len` bytes of `text`, or
                // is NULL, or `len` is over PTRDIFF_MAX (checked before any read).
                let result = unsafe {
                    match field {
                        TextField::CursorBinary => {
                            aw_config_set_cursor_binary(ptr, data, passed.len)
                        }
                        TextField::Workspace => aw_config_set_workspace(ptr, data, passed.len),
                        TextField::CliConfigDir => {
                            aw_config_set_cli_config_dir(ptr, data, passed.len)
                        }
                    }
                };
                let value = passed
                    .value
                    .ok()
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .map(str::to_owned);
                self.after_config_call(
                    slot,
                    "aw_config_set_<text>",
                    result,
                    SET_TEXT,
                    errors,
                    |c| {
                        let value = value.expect("a valid string");
                        match field {
                            TextField::CursorBinary => c.cursor_binary = value,
                            TextField::Workspace => c.workspace = Some(value),
                            TextField::CliConfigDir => c.cli_config_dir = Some(value),
                        }
                        aw_result::Ok
                    },
                );
            }
            ConfigOp::Clear(field) => {
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe {
                    match field {
                        ClearField::Workspace => aw_config_clear_workspace(ptr),
                        ClearField::CliConfigDir => aw_config_clear_cli_config_dir(ptr),
                        ClearField::MaxDuration => aw_config_clear_max_duration_ms(ptr),
                    }
                };
                self.after_config_call(
                    slot,
                    "aw_config_clear_*",
                    result,
                    &[aw_result::Ok],
                    &[],
                    |c| {
                        match field {
                            ClearField::Workspace => c.workspace = None,
                            ClearField::CliConfigDir => c.cli_config_dir = None,
                            ClearField::MaxDuration => c.max_duration_ms = None,
                        }
                        aw_result::Ok
                    },
                );
            }
            ConfigOp::SetEnum { field, value } => {
                self.before_call(owner, true);
                let raw = match value {
                    Ok(n) => u32::from(*n % 3),
                    Err(n) => *n,
                };
                let errors = if raw < 3 {
                    &[][..]
                } else {
                    &[aw_result::InvalidEnum][..]
                };
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe {
                    match field {
                        EnumField::ToolStrategy => aw_config_set_tool_strategy(ptr, raw),
                        EnumField::Reasoning => aw_config_set_reasoning(ptr, raw),
                    }
                };
                let documented = &[aw_result::Ok, aw_result::InvalidEnum];
                self.after_config_call(
                    slot,
                    "aw_config_set_<enum>",
                    result,
                    documented,
                    errors,
                    |c| {
                        match field {
                            EnumField::ToolStrategy => {
                                c.tool_strategy = [
                                    ToolStrategy::ReadOnly,
                                    ToolStrategy::Native,
                                    ToolStrategy::EnvelopeOnly,
                                ][raw as usize];
                            }
                            EnumField::Reasoning => {
                                c.reasoning = [
                                    ReasoningField::ReasoningContent,
                                    ReasoningField::Reasoning,
                                    ReasoningField::Omitted,
                                ][raw as usize];
                            }
                        }
                        aw_result::Ok
                    },
                );
            }
            ConfigOp::SetNumber { field, value } => {
                self.before_call(owner, true);
                let value = field.truncate(value.get());
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { field.set(ptr, value) };
                self.after_config_call(
                    slot,
                    "aw_config_set_<number>",
                    result,
                    &[aw_result::Ok],
                    &[],
                    |c| {
                        field.write(c, value);
                        aw_result::Ok
                    },
                );
            }
            ConfigOp::SetFlag { field, value } => {
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe {
                    match field {
                        FlagField::AllowForce => aw_config_set_allow_force(ptr, *value),
                        FlagField::PartialOutput => aw_config_set_partial_output(ptr, *value),
                        FlagField::ActivityNotes => aw_config_set_activity_notes(ptr, *value),
                    }
                };
                self.after_config_call(
                    slot,
                    "aw_config_set_<flag>",
                    result,
                    &[aw_result::Ok],
                    &[],
                    |c| {
                        match field {
                            FlagField::AllowForce => c.allow_force = *value,
                            FlagField::PartialOutput => c.partial_output = *value,
                            FlagField::ActivityNotes => c.activity_notes = *value,
                        }
                        aw_result::Ok
                    },
                );
            }
            ConfigOp::Get { field, null_out } => self.config_get(slot, *field, *null_out),
            ConfigOp::LastError => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_config_last_error(ptr) };
                self.last_error_of(owner, "aw_config_last_error", call);
            }
            ConfigOp::Panic => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_config_test_panic(ptr) };
                self.test_hook(owner, Hook::Panic, call);
            }
            ConfigOp::Overlap => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_config_test_overlap(ptr) };
                self.test_hook(owner, Hook::Overlap, call);
            }
        }
    }

    /// Checks a call on config `slot` that returned `result`: the misuse `errors` (or a
    /// NULL or poisoned handle) allow one of theirs and leave the config as it was;
    /// otherwise `apply` changes the Rust config as the call must have and returns its
    /// result. Then every getter must give the Rust config's settings.
    fn after_config_call(
        &mut self,
        slot: usize,
        what: &str,
        result: aw_result,
        documented: &[aw_result],
        errors: &[aw_result],
        apply: impl FnOnce(&mut Config) -> aw_result,
    ) {
        let allowed = allowed(self.configs[slot].as_mut(), errors, |s| {
            apply(&mut s.shadow)
        });
        check_result(what, result, documented, &allowed);
        self.note(Owner::Config(slot), result);
        // Changed as the call must have, or unchanged after a failure.
        if self.configs[slot]
            .as_ref()
            .is_some_and(|s| !s.books.poisoned)
        {
            self.check_config(slot);
        }
    }

    /// Every getter of config `slot` gives what its Rust config holds.
    fn check_config(&mut self, slot: usize) {
        use FlagField::*;
        for field in [
            TextField::CursorBinary,
            TextField::Workspace,
            TextField::CliConfigDir,
        ] {
            self.config_get(slot, Field::Text(field), false);
        }
        for field in [EnumField::ToolStrategy, EnumField::Reasoning] {
            self.config_get(slot, Field::Enum(field), false);
        }
        for field in [AllowForce, PartialOutput, ActivityNotes] {
            self.config_get(slot, Field::Flag(field), false);
        }
        for field in NumberField::ALL {
            self.config_get(slot, Field::Number(field), false);
        }
    }

    /// A getter on config `slot`: its result, and the value it wrote, match the Rust
    /// config.
    fn config_get(&mut self, slot: usize, field: Field, null: bool) {
        self.before_call(Owner::Config(slot), false);
        let ptr = handle(&self.configs[slot]);
        let what = format!("aw_config_get ({field:?})");
        // What the Rust config holds, as a number or a string; `None` when not set.
        let (result, got, want, documented): (aw_result, Option<String>, Option<String>, _) =
            match field {
                Field::Text(field) => {
                    let want = self.configs[slot].as_ref().and_then(|s| match field {
                        TextField::CursorBinary => Some(s.shadow.cursor_binary.clone()),
                        TextField::Workspace => s.shadow.workspace.clone(),
                        TextField::CliConfigDir => s.shadow.cli_config_dir.clone(),
                    });
                    let documented = match field {
                        TextField::CursorBinary => OK,
                        _ => OPTIONAL,
                    };
                    // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                    let call = |out| unsafe {
                        match field {
                            TextField::CursorBinary => aw_config_get_cursor_binary(ptr, out),
                            TextField::Workspace => aw_config_get_workspace(ptr, out),
                            TextField::CliConfigDir => aw_config_get_cli_config_dir(ptr, out),
                        }
                    };
                    let owner = Owner::Config(slot);
                    return self.text_getter(owner, null, &what, documented, want, call);
                }
                Field::Enum(field) => {
                    let (result, got) = match field {
                        EnumField::ToolStrategy => {
                            let mut out = OutParam::<aw_tool_strategy>::new();
                            // SAFETY: `ptr` is NULL or live; `out` is a local.
                            let result = unsafe { aw_config_get_tool_strategy(ptr, out.ptr(null)) };
                            (result, out.outcome(result, &what).map(|v| v as u32))
                        }
                        EnumField::Reasoning => {
                            let mut out = OutParam::<aw_reasoning_field>::new();
                            // SAFETY: `ptr` is NULL or live; `out` is a local.
                            let result = unsafe { aw_config_get_reasoning(ptr, out.ptr(null)) };
                            (result, out.outcome(result, &what).map(|v| v as u32))
                        }
                    };
                    let want = self.configs[slot].as_ref().map(|s| match field {
                        EnumField::ToolStrategy => match s.shadow.tool_strategy {
                            ToolStrategy::ReadOnly => 0,
                            ToolStrategy::Native => 1,
                            ToolStrategy::EnvelopeOnly => 2,
                            other => crate::fuzzing::unknown(other),
                        },
                        EnumField::Reasoning => match s.shadow.reasoning {
                            ReasoningField::ReasoningContent => 0,
                            ReasoningField::Reasoning => 1,
                            ReasoningField::Omitted => 2,
                            other => crate::fuzzing::unknown(other),
                        },
                    });
                    (
                        result,
                        got.map(|n| n.to_string()),
                        want.map(|n: u32| n.to_string()),
                        OK,
                    )
                }
                Field::Flag(field) => {
                    let mut out = OutParam::<bool>::new();
                    // SAFETY: `ptr` is NULL or live; `out` is a local.
                    let result = unsafe {
                        match field {
                            FlagField::AllowForce => aw_config_get_allow_force(ptr, out.ptr(null)),
                            FlagField::PartialOutput => {
                                aw_config_get_partial_output(ptr, out.ptr(null))
                            }
                            FlagField::ActivityNotes => {
                                aw_config_get_activity_notes(ptr, out.ptr(null))
                            }
                        }
                    };
                    let got = out.outcome(result, &what);
                    let want = self.configs[slot].as_ref().map(|s| match field {
                        FlagField::AllowForce => s.shadow.allow_force,
                        FlagField::PartialOutput => s.shadow.partial_output,
                        FlagField::ActivityNotes => s.shadow.activity_notes,
                    });
                    (
                        result,
                        got.map(|b| b.to_string()),
                        want.map(|b| b.to_string()),
                        OK,
                    )
                }
                Field::Number(field) => {
                    // SAFETY: `ptr` is NULL or live.
                    let (result, got) = unsafe { field.get(ptr, null) };
                    let want = self.configs[slot]
                        .as_ref()
                        .and_then(|s| field.read(&s.shadow));
                    let documented = match field {
                        NumberField::MaxDuration => OPTIONAL,
                        _ => OK,
                    };
                    (
                        result,
                        got.map(|n| n.to_string()),
                        want.map(|n| n.to_string()),
                        documented,
                    )
                }
            };
        let allowed = allowed(self.configs[slot].as_mut(), null_out(null), |_| {
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::NotAvailable
            }
        });
        check_result(&what, result, documented, &allowed);
        self.note(Owner::Config(slot), result);
        if result == aw_result::Ok {
            assert_eq!(got, want, "{what}: not the value set");
        }
    }
}

/// Setters of strings document these results.
const SET_TEXT: &[aw_result] = &[
    aw_result::Ok,
    aw_result::InvalidUtf8,
    aw_result::InteriorNul,
    aw_result::NullParameter,
    aw_result::LengthTooLarge,
];
