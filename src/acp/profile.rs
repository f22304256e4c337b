//! What differs between ACP agents once a client's tools are given to them as an MCP
//! server: how each names the server's tools, how its permission requests and tool-call
//! updates for them look, how its native tools can be turned off for a session, and how
//! long it waits inside one tool call. One row per agent, recognised by the `agentInfo.name`
//! of its `initialize` answer; what is not recognised gets the generic row, which relies
//! only on what ACP itself says.
//!
//! Measured with the agents' own recordings (claude-agent-acp 0.23.1, codex-acp 0.16.0,
//! gemini-cli 0.61.0), each given a client's tools as an HTTP MCP server in `session/new`:
//!
//! | | Claude | Codex | Gemini |
//! |---|---|---|---|
//! | tool name the model sees | `mcp__<server>__<tool>` | `<tool>` in namespace `mcp__<server>` | `mcp_<server>_<tool>` |
//! | permission request for it | title `mcp__<server>__<tool>` | `rawInput.server_name`, `codex_approval_kind: mcp_tool_call` | tool call id `mcp_<server>_<tool>__…` |
//! | tool-call update for it | title `mcp__<server>__<tool>` | `rawInput.server` | tool call id `mcp_<server>_<tool>__…` |
//! | native tools off, per session | `_meta.claudeCode.options.tools: []` | no (its config only: `launch.rs`) | no (its settings only: `launch.rs`) |
//! | permission skipped, per session | `_meta.claudeCode.options.allowedTools` | no | no |
//! | longest wait in one call, HTTP | none seen up to 330 s with an SSE answer and keep-alives | 120 s | none seen up to 330 s with an SSE answer and keep-alives |

use serde_json::{Value, json};

/// Which agent a connection talks to, as far as its MCP behaviour goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// claude-agent-acp (Claude Code through the Claude Agent SDK).
    Claude,
    /// codex-acp.
    Codex,
    /// Gemini CLI (`gemini --acp`).
    Gemini,
    /// Any other agent (cursor-agent `acp` among them): only what ACP says.
    Generic,
}

impl Profile {
    /// The profile of the agent named `name` in its `initialize` answer.
    pub(crate) fn of(name: Option<&str>) -> Profile {
        let name = name.unwrap_or_default();
        if name.contains("claude") {
            Profile::Claude
        } else if name.contains("codex") {
            Profile::Codex
        } else if name.contains("gemini") {
            Profile::Gemini
        } else {
            Profile::Generic
        }
    }

    /// The `_meta` of a `session/new` that gives the agent `tools` (the MCP tool names of
    /// server `server`) and nothing else, where the agent takes that per session; `None`
    /// where it does not.
    pub(crate) fn tools_only_meta(self, server: &str, tools: &[&str]) -> Option<Value> {
        match self {
            Profile::Claude => {
                let allowed: Vec<String> = tools
                    .iter()
                    .map(|tool| format!("mcp__{server}__{tool}"))
                    .collect();
                Some(json!({"claudeCode": {"options": {"tools": [], "allowedTools": allowed}}}))
            }
            Profile::Codex | Profile::Gemini | Profile::Generic => None,
        }
    }

    /// The `_meta` of a `session/new` without the client's tools whose agent's own tools are
    /// off ([`NativeTools::Off`](super::NativeTools::Off)), where the agent takes that per
    /// session; `None` where it does not (its launch does it: `launch.rs`).
    pub(crate) fn no_tools_meta(self) -> Option<Value> {
        match self {
            Profile::Claude => Some(json!({"claudeCode": {"options": {"tools": []}}})),
            Profile::Codex | Profile::Gemini | Profile::Generic => None,
        }
    }

    /// How long the agent waits inside one MCP tool call before giving up on it, when that
    /// is known and shorter than a client's tools may take; `None` when it waits long
    /// enough (kept inside the call by keep-alives) or is not known.
    pub(crate) fn call_limit_ms(self) -> Option<u64> {
        match self {
            // An ACP-supplied server gets Codex's default `tool_timeout_sec`, which ACP
            // cannot change.
            Profile::Codex => Some(120_000),
            Profile::Claude | Profile::Gemini | Profile::Generic => None,
        }
    }

    /// Whether a tool call — a `session/request_permission`'s `toolCall`, or a
    /// `tool_call` update — is a call of server `server`'s tools.
    pub(crate) fn is_server_tool(self, server: &str, call: &CallFacts<'_>) -> bool {
        let prefixed =
            |name: &str, prefix: &str| name.strip_prefix(prefix).is_some_and(|t| !t.is_empty());
        let raw = |key: &str| {
            call.raw_input
                .and_then(|r| r.get(key))
                .and_then(Value::as_str)
        };
        match self {
            Profile::Claude => prefixed(call.title, &format!("mcp__{server}__")),
            Profile::Codex => raw("server_name") == Some(server) || raw("server") == Some(server),
            Profile::Gemini => prefixed(call.id, &format!("mcp_{server}_")),
            // What any of the known shapes would say, for agents that copy one.
            Profile::Generic => [Profile::Claude, Profile::Codex, Profile::Gemini]
                .iter()
                .any(|p| p.is_server_tool(server, call)),
        }
    }
}

/// What identifies a tool call, in a permission request or a `tool_call` update.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallFacts<'a> {
    /// `title`.
    pub(crate) title: &'a str,
    /// `toolCallId`.
    pub(crate) id: &'a str,
    /// `rawInput`, when it is a JSON object.
    pub(crate) raw_input: Option<&'a Value>,
}

impl<'a> CallFacts<'a> {
    /// The facts of a tool call object (`toolCall` of a permission request).
    pub(crate) fn of(call: &'a Value) -> CallFacts<'a> {
        CallFacts {
            title: call.get("title").and_then(Value::as_str).unwrap_or(""),
            id: call.get("toolCallId").and_then(Value::as_str).unwrap_or(""),
            raw_input: call.get("rawInput").filter(|r| r.is_object()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_shapes_are_recognised_and_others_are_not() {
        let claude = json!({"toolCallId":"toolu_1","rawInput":{"command":"ls"},"title":"mcp__client__bash","kind":"other"});
        let codex_permission = json!({"toolCallId":"call_1","title":"Approve MCP tool call","rawInput":{"server_name":"client","request":{"_meta":{"codex_approval_kind":"mcp_tool_call"}}}});
        let codex_update = json!({"toolCallId":"call_1","title":"Tool: client/bash","rawInput":{"server":"client","tool":"bash"}});
        let gemini = json!({"toolCallId":"mcp_client_read_file__mcp_client_read_file_1795822773967_0","title":"read_file (client MCP Server)","kind":"other"});
        assert!(Profile::Claude.is_server_tool("client", &CallFacts::of(&claude)));
        assert!(Profile::Codex.is_server_tool("client", &CallFacts::of(&codex_permission)));
        assert!(Profile::Codex.is_server_tool("client", &CallFacts::of(&codex_update)));
        assert!(Profile::Gemini.is_server_tool("client", &CallFacts::of(&gemini)));
        for shape in [&claude, &codex_permission, &gemini] {
            assert!(Profile::Generic.is_server_tool("client", &CallFacts::of(shape)));
            assert!(!Profile::Generic.is_server_tool("other", &CallFacts::of(shape)));
        }
        let native = json!({"toolCallId":"toolu_2","title":"Bash","rawInput":{"command":"ls"},"kind":"execute"});
        for profile in [
            Profile::Claude,
            Profile::Codex,
            Profile::Gemini,
            Profile::Generic,
        ] {
            assert!(!profile.is_server_tool("client", &CallFacts::of(&native)));
        }
    }

    #[test]
    fn profiles_by_name() {
        assert_eq!(
            Profile::of(Some("@zed-industries/claude-agent-acp")),
            Profile::Claude
        );
        assert_eq!(Profile::of(Some("codex-acp")), Profile::Codex);
        assert_eq!(Profile::of(Some("gemini-cli")), Profile::Gemini);
        assert_eq!(Profile::of(Some("cursor-agent")), Profile::Generic);
        assert_eq!(Profile::of(None), Profile::Generic);
    }
}
