//! The `initialize` exchange that opens a connection: what we say about ourselves, and
//! what the agent's answer tells (the protocol version it speaks, whether it closes
//! sessions).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::config::AcpConfig;
use super::message::RpcError;
use super::profile::Profile;
use crate::event::{Failure, FailureKind};

/// Where the handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handshake {
    Initializing,
    Ready,
    /// Failed or exited: nothing more is served.
    Dead,
}

/// The `initialize` params: ACP version 1, no client capability (no file system, no
/// terminal: the agent's requests for them are refused), and our name.
pub(super) fn initialize_params(config: &AcpConfig) -> Value {
    json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": config.client_name, "version": config.client_version},
    })
}

/// What a successful `initialize` answer says of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Agent {
    /// It offers `session/close`.
    pub(super) closes_sessions: bool,
    /// It takes an HTTP MCP server in `session/new` (`mcpCapabilities.http`).
    pub(super) mcp_http: bool,
    /// Which agent it is, as far as its MCP behaviour goes (from `agentInfo.name`).
    pub(super) profile: Profile,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Initialized {
    protocol_version: u64,
    #[serde(default)]
    agent_capabilities: Option<Capabilities>,
    #[serde(default)]
    agent_info: Option<AgentInfo>,
}

#[derive(Deserialize)]
struct AgentInfo {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Capabilities {
    #[serde(default)]
    session_capabilities: Option<SessionCapabilities>,
    #[serde(default)]
    mcp_capabilities: Option<McpCapabilities>,
}

#[derive(Deserialize)]
struct McpCapabilities {
    #[serde(default)]
    http: bool,
}

#[derive(Deserialize)]
struct SessionCapabilities {
    // Present (an object, possibly empty) when offered; `null` is not.
    #[serde(default)]
    close: Option<Value>,
}

/// The agent an `initialize` answer describes, or why it cannot be served: it refused,
/// or it speaks another protocol version.
pub(super) fn accept(result: Result<Option<&RawValue>, RpcError>) -> Result<Agent, Failure> {
    let raw = match result {
        Ok(raw) => raw,
        Err(error) => {
            let message = format!("The ACP agent refused `initialize`: {}", error.describe());
            return Err(Failure::new(FailureKind::Misconfigured, message));
        }
    };
    let initialized = raw.and_then(|r| serde_json::from_str::<Initialized>(r.get()).ok());
    let version = initialized.as_ref().map(|i| i.protocol_version);
    if version != Some(1) {
        let message = format!("The ACP agent speaks protocol version {version:?}, not 1.");
        return Err(Failure::new(FailureKind::Misconfigured, message));
    }
    let capabilities = initialized
        .as_ref()
        .and_then(|i| i.agent_capabilities.as_ref());
    let closes_sessions = capabilities
        .and_then(|c| c.session_capabilities.as_ref())
        .is_some_and(|s| s.close.as_ref().is_some_and(|c| !c.is_null()));
    let mcp_http = capabilities
        .and_then(|c| c.mcp_capabilities.as_ref())
        .is_some_and(|m| m.http);
    let name = initialized
        .as_ref()
        .and_then(|i| i.agent_info.as_ref())
        .and_then(|info| info.name.as_deref());
    Ok(Agent {
        closes_sessions,
        mcp_http,
        profile: Profile::of(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(result: &str) -> Result<Agent, Failure> {
        let raw = RawValue::from_string(result.to_owned()).unwrap();
        accept(Ok(Some(&raw)))
    }

    #[test]
    fn version_1_is_served_and_session_close_read_from_its_capabilities() {
        assert_eq!(
            answer(r#"{"protocolVersion":1}"#),
            Ok(Agent {
                closes_sessions: false,
                mcp_http: false,
                profile: Profile::Generic,
            })
        );
        let offered = r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"close":{}},"mcpCapabilities":{"http":true}},"agentInfo":{"name":"codex-acp"}}"#;
        assert_eq!(
            answer(offered),
            Ok(Agent {
                closes_sessions: true,
                mcp_http: true,
                profile: Profile::Codex,
            })
        );
        let null =
            r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"close":null}}}"#;
        assert_eq!(answer(null).map(|a| a.closes_sessions), Ok(false));
    }

    #[test]
    fn another_version_or_a_refusal_is_a_misconfiguration() {
        let other = answer(r#"{"protocolVersion":2}"#).unwrap_err();
        assert_eq!(other.kind, FailureKind::Misconfigured);
        assert_eq!(
            other.message,
            "The ACP agent speaks protocol version Some(2), not 1."
        );
        let refused: RpcError = serde_json::from_str(r#"{"code":-32603,"message":"no"}"#).unwrap();
        let refused = accept(Err(refused)).unwrap_err();
        assert_eq!(refused.message, "The ACP agent refused `initialize`: no");
    }
}
