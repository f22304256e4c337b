//! The package's `AcpConfig` object, as JSON, onto the Rust [`AcpConfig`].
//!
//! The same conventions as the bridge's `Config` (module `config`): camelCase field names,
//! a field left out keeps its default, and anything that does not fit (an unknown field, a
//! wrong type, `null`, a fraction or a negative number where a count goes) is an
//! `invalidArgument` error naming the field.

use agentwire::acp::{AcpConfig, ExtensionPolicy, NativeTools, PermissionChoice};
use serde::Deserialize;

use crate::config::{from_json, present, set};
use crate::error::{Code, RawError};
use crate::mcp::McpConfigPatch;
use crate::names::Camel;
use crate::registry::RegistryConfigPatch;

/// Parses `json` (or nothing: the defaults) into an [`AcpConfig`].
pub(crate) fn parse(json: Option<&str>) -> Result<AcpConfig, RawError> {
    let mut config = AcpConfig::default();
    if let Some(json) = json {
        let patch: AcpConfigPatch = from_json(json, "ACP config")?;
        patch.apply(&mut config)?;
    }
    Ok(config)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AcpConfigPatch {
    #[serde(default, deserialize_with = "present")]
    cwd: Option<String>,
    #[serde(default, deserialize_with = "present")]
    client_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    client_version: Option<String>,
    #[serde(default, deserialize_with = "present")]
    permission: Option<Camel<PermissionChoice>>,
    #[serde(default, deserialize_with = "present")]
    native_tools: Option<Camel<NativeTools>>,
    #[serde(default, deserialize_with = "present")]
    extensions: Option<Extensions>,
    #[serde(default, deserialize_with = "present")]
    pool_size: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_concurrent_prompts: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    queue_timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    initialize_timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    new_session_timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    set_model_timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    cancel_timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    turn_output_budget: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    default_model_names: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    max_line_len: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    stderr_tail_bytes: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    mcp_endpoint: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    mcp_server_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    mcp: Option<McpConfigPatch>,
    #[serde(default, deserialize_with = "present")]
    conversations: Option<RegistryConfigPatch>,
}

/// `AcpConfig::extensions`: `"methodNotFound"`, or `{"answer": <result>}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum Extensions {
    MethodNotFound,
    Answer(serde_json::Value),
}

impl AcpConfigPatch {
    fn apply(self, config: &mut AcpConfig) -> Result<(), RawError> {
        // Destructured whole, so a field added to the patch cannot be forgotten here.
        let AcpConfigPatch {
            cwd,
            client_name,
            client_version,
            permission,
            native_tools,
            extensions,
            pool_size,
            max_concurrent_prompts,
            queue_timeout_ms,
            initialize_timeout_ms,
            new_session_timeout_ms,
            set_model_timeout_ms,
            cancel_timeout_ms,
            turn_output_budget,
            default_model_names,
            max_line_len,
            stderr_tail_bytes,
            mcp_endpoint,
            mcp_server_name,
            mcp,
            conversations,
        } = self;
        // Zero prompt slots would queue every turn until it timed out; a zero-length line
        // limit would drop every message.
        for (name, value) in [
            ("maxConcurrentPrompts", max_concurrent_prompts),
            ("maxLineLen", max_line_len),
        ] {
            if value == Some(0) {
                return Err(RawError::new(
                    Code::InvalidArgument,
                    format!("invalid ACP config: {name} must be at least 1"),
                ));
            }
        }
        set(&mut config.cwd, cwd);
        set(&mut config.client_name, client_name);
        set(&mut config.client_version, client_version);
        set(
            &mut config.permission,
            permission.map(|Camel(choice)| choice),
        );
        set(
            &mut config.native_tools,
            native_tools.map(|Camel(setting)| setting),
        );
        set(
            &mut config.extensions,
            extensions.map(|e| match e {
                Extensions::MethodNotFound => ExtensionPolicy::MethodNotFound,
                Extensions::Answer(result) => ExtensionPolicy::Answer(result),
            }),
        );
        set(&mut config.pool_size, pool_size);
        set(&mut config.max_concurrent_prompts, max_concurrent_prompts);
        set(&mut config.queue_timeout_ms, queue_timeout_ms);
        set(&mut config.initialize_timeout_ms, initialize_timeout_ms);
        set(&mut config.new_session_timeout_ms, new_session_timeout_ms);
        set(&mut config.set_model_timeout_ms, set_model_timeout_ms);
        set(&mut config.cancel_timeout_ms, cancel_timeout_ms);
        set(&mut config.turn_output_budget, turn_output_budget);
        set(&mut config.default_model_names, default_model_names);
        set(&mut config.max_line_len, max_line_len);
        set(&mut config.stderr_tail_bytes, stderr_tail_bytes);
        set(&mut config.mcp_endpoint, mcp_endpoint);
        set(&mut config.mcp_server_name, mcp_server_name);
        if let Some(mcp) = mcp {
            mcp.apply(&mut config.mcp);
        }
        if let Some(conversations) = conversations {
            conversations.apply(&mut config.conversations);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_field_reaches_its_rust_field() {
        let json = json!({
            "cwd": "/srv", "clientName": "n", "clientVersion": "v", "permission": "rejectOnce",
            "nativeTools": "off", "extensions": {"answer": {"outcome": {"outcome": "cancelled"}}}, "poolSize": 0,
            "maxConcurrentPrompts": 2, "queueTimeoutMs": 1, "initializeTimeoutMs": 2,
            "newSessionTimeoutMs": 3, "setModelTimeoutMs": 4, "cancelTimeoutMs": 5,
            "turnOutputBudget": 6, "defaultModelNames": ["x"], "maxLineLen": 7,
            "stderrTailBytes": 8, "mcpEndpoint": "http://127.0.0.1:1/mcp/",
            "mcpServerName": "tools", "mcp": {"keepAliveMs": 9},
            "conversations": {"enabled": false},
        });
        let config = parse(Some(&json.to_string())).unwrap();
        let expected = AcpConfig {
            cwd: "/srv".into(),
            client_name: "n".into(),
            client_version: "v".into(),
            permission: PermissionChoice::RejectOnce,
            native_tools: NativeTools::Off,
            extensions: ExtensionPolicy::Answer(json!({"outcome": {"outcome": "cancelled"}})),
            pool_size: 0,
            max_concurrent_prompts: 2,
            queue_timeout_ms: 1,
            initialize_timeout_ms: 2,
            new_session_timeout_ms: 3,
            set_model_timeout_ms: 4,
            cancel_timeout_ms: 5,
            turn_output_budget: 6,
            default_model_names: vec!["x".into()],
            max_line_len: 7,
            stderr_tail_bytes: 8,
            mcp_endpoint: Some("http://127.0.0.1:1/mcp/".into()),
            mcp_server_name: "tools".into(),
            mcp: agentwire::mcp::Config {
                keep_alive_ms: 9,
                ..agentwire::mcp::Config::default()
            },
            conversations: agentwire::registry::RegistryConfig {
                enabled: false,
                ..AcpConfig::default().conversations
            },
        };
        assert_eq!(config, expected);
        assert_eq!(parse(None).unwrap(), AcpConfig::default());
        assert_eq!(parse(Some("{}")).unwrap(), AcpConfig::default());
        let named = parse(Some(r#"{"extensions":"methodNotFound"}"#)).unwrap();
        assert_eq!(named.extensions, ExtensionPolicy::MethodNotFound);
    }

    #[test]
    fn what_does_not_fit_is_refused_with_the_field_named() {
        for (json, named) in [
            (r#"{"poolSise":1}"#, "poolSise"),
            (r#"{"poolSize":-1}"#, "-1"),
            (r#"{"poolSize":1.5}"#, "1.5"),
            (r#"{"cwd":null}"#, "null"),
            (r#"{"permission":"allowAlways"}"#, "allowAlways"),
            (r#"{"nativeTools":"none"}"#, "none"),
            (r#"{"extensions":"ignore"}"#, "ignore"),
            (r#"{"maxConcurrentPrompts":0}"#, "maxConcurrentPrompts"),
            (r#"{"maxLineLen":0}"#, "maxLineLen"),
            (r#"{"mcpEndpoint":1}"#, "1"),
            (r#"{"mcp":{"keepAlive":1}}"#, "keepAlive"),
            (r#"{"conversations":{"ttlMs":"1"}}"#, "\"1\""),
        ] {
            let error = parse(Some(json)).unwrap_err();
            assert_eq!(error.code_value(), Code::InvalidArgument, "{json}");
            assert!(
                error.message().contains(named),
                "{json}: {}",
                error.message()
            );
            assert!(error.message().starts_with("invalid ACP config"), "{json}");
        }
    }
}
