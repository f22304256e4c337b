//! The package's `Config` object, as JSON, onto the Rust [`Config`].
//!
//! JavaScript sends `JSON.stringify(config)`: field names in camelCase, the nested groups
//! of the Rust struct (`decoder`, `requestLimits`, `loopGuard`) as nested objects. A field
//! left out keeps its default; `null` is accepted only where the Rust field is an `Option`
//! (it means "none"); anything else that does not fit (an unknown field, a wrong type, a
//! fraction or a negative number where a count goes) is an `invalidArgument` error naming
//! the field.

use agentwire::bridge::Config;
use agentwire::openai::chat::ReasoningField;
use agentwire::tools::ToolStrategy;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Code, RawError};
use crate::names::Camel;

/// Parses `json` (or nothing: the defaults) into a [`Config`].
pub(crate) fn parse(json: Option<&str>) -> Result<Config, RawError> {
    let mut config = Config::default();
    if let Some(json) = json {
        let patch: ConfigPatch = from_json(json, "config")?;
        patch.apply(&mut config)?;
    }
    Ok(config)
}

/// Deserializes the JSON text of one of the package's option objects (`what` names it in
/// errors): a field that does not fit is `invalidArgument`, text that is not Unicode
/// `invalidInput`.
pub(crate) fn from_json<'de, T: Deserialize<'de>>(
    json: &'de str,
    what: &str,
) -> Result<T, RawError> {
    serde_json::from_str(json).map_err(|error| {
        // The text comes from JSON.stringify, so a syntax error can only be a string
        // holding a lone surrogate (escaped as `\udXXX`): input that is not Unicode.
        if error.classify() == serde_json::error::Category::Syntax {
            RawError::new(Code::InvalidInput, format!("invalid {what}: {error}"))
        } else {
            RawError::new(Code::InvalidArgument, format!("invalid {what}: {error}"))
        }
    })
}

/// The JSON text of `Config::default()`.
pub(crate) fn default_json() -> String {
    let config = Config::default();
    let view = ConfigView {
        cursor_binary: &config.cursor_binary,
        workspace: config.workspace.as_deref(),
        cli_config_dir: config.cli_config_dir.as_deref(),
        allow_force: config.allow_force,
        tool_strategy: Camel(config.tool_strategy),
        partial_output: config.partial_output,
        reasoning: Camel(config.reasoning),
        activity_notes: config.activity_notes,
        head_deadline_ms: config.head_deadline_ms,
        keep_alive_ms: config.keep_alive_ms,
        idle_timeout_ms: config.idle_timeout_ms,
        max_duration_ms: config.max_duration_ms,
        batch_window_ms: config.batch_window_ms,
        stderr_tail_bytes: config.stderr_tail_bytes,
        max_envelope_bytes: config.max_envelope_bytes,
        decoder: DecoderLimits {
            max_line_len: Some(config.decoder.max_line_len),
            max_notes: Some(config.decoder.max_notes),
        },
        request_limits: RequestLimits {
            max_body_bytes: Some(config.request_limits.max_body_bytes),
            max_messages: Some(config.request_limits.max_messages),
            max_tools: Some(config.request_limits.max_tools),
            reject_attachments: Some(config.request_limits.reject_attachments),
        },
        loop_guard: LoopGuard {
            max_failed_repeats: Some(config.loop_guard.max_failed_repeats),
            max_repeats: Some(config.loop_guard.max_repeats),
        },
    };
    serde_json::to_string(&view).expect("a config serializes")
}

/// Deserializes a field that is present: missing fields are `None` through
/// `#[serde(default)]`, and `null` reaches `T` (an error unless `T` is an `Option`).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConfigPatch {
    #[serde(default, deserialize_with = "present")]
    cursor_binary: Option<String>,
    #[serde(default, deserialize_with = "present")]
    workspace: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    cli_config_dir: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    allow_force: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    tool_strategy: Option<Camel<ToolStrategy>>,
    #[serde(default, deserialize_with = "present")]
    partial_output: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    reasoning: Option<Camel<ReasoningField>>,
    #[serde(default, deserialize_with = "present")]
    activity_notes: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    head_deadline_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    keep_alive_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    idle_timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    max_duration_ms: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    batch_window_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    stderr_tail_bytes: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_envelope_bytes: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    decoder: Option<DecoderLimits>,
    #[serde(default, deserialize_with = "present")]
    request_limits: Option<RequestLimits>,
    #[serde(default, deserialize_with = "present")]
    loop_guard: Option<LoopGuard>,
}

/// `Config::decoder`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DecoderLimits {
    #[serde(default, deserialize_with = "present")]
    max_line_len: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_notes: Option<usize>,
}

/// `Config::request_limits`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RequestLimits {
    #[serde(default, deserialize_with = "present")]
    max_body_bytes: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_messages: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_tools: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    reject_attachments: Option<bool>,
}

/// `Config::loop_guard`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LoopGuard {
    #[serde(default, deserialize_with = "present")]
    max_failed_repeats: Option<u32>,
    #[serde(default, deserialize_with = "present")]
    max_repeats: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigView<'a> {
    cursor_binary: &'a str,
    workspace: Option<&'a str>,
    cli_config_dir: Option<&'a str>,
    allow_force: bool,
    tool_strategy: Camel<ToolStrategy>,
    partial_output: bool,
    reasoning: Camel<ReasoningField>,
    activity_notes: bool,
    head_deadline_ms: u64,
    keep_alive_ms: u64,
    idle_timeout_ms: u64,
    max_duration_ms: Option<u64>,
    batch_window_ms: u64,
    stderr_tail_bytes: usize,
    max_envelope_bytes: usize,
    decoder: DecoderLimits,
    request_limits: RequestLimits,
    loop_guard: LoopGuard,
}

/// A path or program name ends up in the agent's command line or environment, where a NUL
/// cannot be represented.
fn command_line_text(field: &str, value: String) -> Result<String, RawError> {
    if value.contains('\0') {
        return Err(RawError::new(
            Code::InvalidInput,
            format!("invalid config: {field} contains a NUL character"),
        ));
    }
    Ok(value)
}

impl ConfigPatch {
    fn apply(self, config: &mut Config) -> Result<(), RawError> {
        // Destructured whole, so a field added to the patch cannot be forgotten here.
        let ConfigPatch {
            cursor_binary,
            workspace,
            cli_config_dir,
            allow_force,
            tool_strategy,
            partial_output,
            reasoning,
            activity_notes,
            head_deadline_ms,
            keep_alive_ms,
            idle_timeout_ms,
            max_duration_ms,
            batch_window_ms,
            stderr_tail_bytes,
            max_envelope_bytes,
            decoder,
            request_limits,
            loop_guard,
        } = self;
        if let Some(value) = cursor_binary {
            config.cursor_binary = command_line_text("cursorBinary", value)?;
        }
        if let Some(value) = workspace {
            config.workspace = value
                .map(|v| command_line_text("workspace", v))
                .transpose()?;
        }
        if let Some(value) = cli_config_dir {
            config.cli_config_dir = value
                .map(|v| command_line_text("cliConfigDir", v))
                .transpose()?;
        }
        set(&mut config.allow_force, allow_force);
        set(
            &mut config.tool_strategy,
            tool_strategy.map(|Camel(strategy)| strategy),
        );
        set(&mut config.partial_output, partial_output);
        set(&mut config.reasoning, reasoning.map(|Camel(field)| field));
        set(&mut config.activity_notes, activity_notes);
        set(&mut config.head_deadline_ms, head_deadline_ms);
        set(&mut config.keep_alive_ms, keep_alive_ms);
        set(&mut config.idle_timeout_ms, idle_timeout_ms);
        set(&mut config.max_duration_ms, max_duration_ms);
        set(&mut config.batch_window_ms, batch_window_ms);
        set(&mut config.stderr_tail_bytes, stderr_tail_bytes);
        set(&mut config.max_envelope_bytes, max_envelope_bytes);
        if let Some(DecoderLimits {
            max_line_len,
            max_notes,
        }) = decoder
        {
            set(&mut config.decoder.max_line_len, max_line_len);
            set(&mut config.decoder.max_notes, max_notes);
        }
        if let Some(RequestLimits {
            max_body_bytes,
            max_messages,
            max_tools,
            reject_attachments,
        }) = request_limits
        {
            set(&mut config.request_limits.max_body_bytes, max_body_bytes);
            set(&mut config.request_limits.max_messages, max_messages);
            set(&mut config.request_limits.max_tools, max_tools);
            set(
                &mut config.request_limits.reject_attachments,
                reject_attachments,
            );
        }
        if let Some(LoopGuard {
            max_failed_repeats,
            max_repeats,
        }) = loop_guard
        {
            set(
                &mut config.loop_guard.max_failed_repeats,
                max_failed_repeats,
            );
            set(&mut config.loop_guard.max_repeats, max_repeats);
        }
        Ok(())
    }
}

/// Overwrites `field` with `value` when the patch holds one.
pub(crate) fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

#[cfg(test)]
mod tests {
    use agentwire::api::RequestLimits as CoreRequestLimits;
    use agentwire::cursor::DecoderConfig;
    use agentwire::tools::loop_guard::LoopGuardConfig;

    use super::*;

    #[test]
    fn every_field_reaches_its_rust_field() {
        let json = r#"{
            "cursorBinary": "/opt/agent", "workspace": "/srv", "cliConfigDir": "/cfg",
            "allowForce": true, "toolStrategy": "envelopeOnly", "partialOutput": false,
            "reasoning": "omitted", "activityNotes": false, "headDeadlineMs": 1,
            "keepAliveMs": 2, "idleTimeoutMs": 3, "maxDurationMs": 4, "batchWindowMs": 5,
            "stderrTailBytes": 6, "maxEnvelopeBytes": 7,
            "decoder": {"maxLineLen": 8, "maxNotes": 9},
            "requestLimits": {"maxBodyBytes": 10, "maxMessages": 11, "maxTools": 12, "rejectAttachments": true},
            "loopGuard": {"maxFailedRepeats": 13, "maxRepeats": 14}
        }"#;
        // Every field named, none defaulted: a field added to the Rust `Config` fails to
        // compile here until the package's `Config` has it.
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
            request_limits: CoreRequestLimits {
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
        assert_eq!(
            format!("{:?}", parse(Some(json)).unwrap()),
            format!("{expected:?}")
        );
    }

    #[test]
    fn left_out_fields_keep_the_defaults_and_null_clears_an_option() {
        let defaults = format!("{:?}", Config::default());
        let config = parse(Some(r#"{"maxDurationMs": 9, "decoder": {}}"#)).unwrap();
        let expected = Config {
            max_duration_ms: Some(9),
            ..Config::default()
        };
        assert_eq!(format!("{config:?}"), format!("{expected:?}"));
        let config = parse(Some(r#"{"workspace": null, "maxDurationMs": null}"#)).unwrap();
        assert_eq!(format!("{config:?}"), defaults);
        assert_eq!(format!("{:?}", parse(None).unwrap()), defaults);
    }

    #[test]
    fn what_does_not_fit_is_refused_with_the_field_named() {
        for (json, code, says) in [
            (r#"{"idleTimeoutMs": null}"#, Code::InvalidArgument, "null"),
            (r#"{"idleTimeoutMs": -1}"#, Code::InvalidArgument, "-1"),
            (r#"{"idleTimeoutMs": 1.5}"#, Code::InvalidArgument, "1.5"),
            (
                r#"{"idleTimeout": 1}"#,
                Code::InvalidArgument,
                "idleTimeout",
            ),
            (
                r#"{"decoder": {"maxLines": 1}}"#,
                Code::InvalidArgument,
                "maxLines",
            ),
            (
                r#"{"toolStrategy": "read-only"}"#,
                Code::InvalidArgument,
                "read-only",
            ),
            (r#"{"allowForce": "yes"}"#, Code::InvalidArgument, "yes"),
            (
                r#"{"workspace": "a\u0000b"}"#,
                Code::InvalidInput,
                "workspace",
            ),
            (
                r#"{"cursorBinary": "\ud800"}"#,
                Code::InvalidInput,
                "escape",
            ),
        ] {
            let error = parse(Some(json)).unwrap_err();
            assert_eq!(error.code_value(), code, "{json}");
            assert!(
                error.message().contains(says),
                "{json}: {}",
                error.message()
            );
        }
    }

    #[test]
    fn the_defaults_read_back_as_the_patch_that_sets_them() {
        let json = default_json();
        let config = parse(Some(&json)).unwrap();
        assert_eq!(format!("{config:?}"), format!("{:?}", Config::default()));
        assert!(
            json.contains(r#""workspace":null"#) && json.contains(r#""toolStrategy":"readOnly""#)
        );
    }
}
