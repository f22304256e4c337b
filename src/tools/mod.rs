//! The client's tools: which of them the agent can reach through its own tools and which
//! must be written as text envelopes, how the agent's tool calls map onto them, and the
//! guard against repeated calls.
//!
//! A request with tools (and `tool_choice` other than `none`) runs in *client mode*: the
//! client executes tools, and the agent must never change anything behind its back. A
//! cursor `tool_call/started` is only a notification (the CLI runs or rejects its own tool),
//! so under the default [`ToolStrategy::ReadOnly`] the agent runs read-only (`--mode ask`),
//! its non-mutating calls that map to an offered client tool are turned into client tool
//! calls ([`ToolPlan::map_native`]), and every mutating client tool is taught as a text
//! envelope ([`envelope`]).

pub mod aliases;
pub mod envelope;
pub mod ids;
pub mod loop_guard;
pub mod schema;

use serde_json::Value;

use crate::openai::request::ToolSpec;
use envelope::EnvelopeError;

/// How client tools are executed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolStrategy {
    /// The agent runs read-only (`--mode ask`); its non-mutating calls that map to a client
    /// tool become client calls; mutating tools (edit, write, task, todowrite, MCP, anything
    /// unknown) are text envelopes. The default.
    #[default]
    ReadOnly,
    /// The agent uses its own tools (its edits bypass the client and are reported as
    /// activity); client tools it has no form of are text envelopes. Its non-mutating calls
    /// are still intercepted like under [`ReadOnly`](Self::ReadOnly), so the agent must run
    /// without `--force` in client mode: with it, cursor would run a shell command itself
    /// *and* hand it to the client.
    Native,
    /// Every client tool is a text envelope; no interception.
    EnvelopeOnly,
}

/// How the model reaches one client tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Through the agent's own tool of this kind (`shell`, `read`, …).
    Native {
        /// The cursor tool kind.
        cursor_tool: &'static str,
    },
    /// Written as a text envelope.
    Envelope,
}

/// One client tool as the prompt presents it.
#[derive(Debug, Clone, Copy)]
pub struct CatalogueEntry<'a> {
    /// The client's name.
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its JSON Schema.
    pub parameters: &'a Value,
    /// How the model reaches it.
    pub delivery: Delivery,
}

/// A call for the client: its tool name and arguments (JSON object text).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct MappedCall {
    /// The client's tool name.
    pub name: String,
    /// Arguments as JSON object text.
    pub arguments: String,
}

/// The client's tools for one request, classified.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    tools: Vec<ToolSpec>,
    deliveries: Vec<Delivery>,
    strategy: ToolStrategy,
}

impl ToolPlan {
    /// Classifies `tools` under `strategy`.
    ///
    /// A client tool is delivered natively when its name is in the alias table
    /// ([`aliases`]), it is the kind's preferred tool among those offered, the strategy
    /// allows it (not [`ToolStrategy::EnvelopeOnly`]; under [`ToolStrategy::ReadOnly`] only
    /// non-mutating kinds), and — for kinds that are intercepted — every key its schema
    /// requires can be filled from cursor's arguments ([`aliases::producible`]).
    /// Everything else is an envelope.
    #[must_use]
    pub fn new(tools: &[ToolSpec], strategy: ToolStrategy) -> ToolPlan {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let deliveries = tools
            .iter()
            .map(|tool| {
                let Some(spec) = aliases::kind(&tool.name).filter(|spec| {
                    aliases::client_tool_for_kind(spec.kind, &names) == Some(tool.name.as_str())
                }) else {
                    return Delivery::Envelope;
                };
                let native = Delivery::Native {
                    cursor_tool: spec.kind,
                };
                let interceptable =
                    !spec.mutating && aliases::producible(spec, &tool.parameters);
                match strategy {
                    ToolStrategy::ReadOnly if interceptable => native,
                    ToolStrategy::Native if interceptable || spec.mutating => native,
                    _ => Delivery::Envelope,
                }
            })
            .collect();
        ToolPlan {
            tools: tools.to_vec(),
            deliveries,
            strategy,
        }
    }

    /// Whether there are no client tools (agent mode).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The strategy.
    #[must_use]
    pub fn strategy(&self) -> ToolStrategy {
        self.strategy
    }

    /// The tools with their delivery, in request order.
    pub fn catalogue(&self) -> impl Iterator<Item = CatalogueEntry<'_>> {
        self.tools
            .iter()
            .zip(&self.deliveries)
            .map(|(tool, delivery)| CatalogueEntry {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                delivery: *delivery,
            })
    }

    /// The client call an agent tool call maps to, or `None` (it stays agent activity).
    ///
    /// `cursor_tool` is resolved to a kind by the alias table; only non-mutating kinds
    /// whose client tool is delivered natively are intercepted. `arguments` (cursor's JSON
    /// object) are renamed and fitted by the kind's argument rows and must then be valid
    /// against the client's schema. Absent or non-object arguments, mutating kinds (an
    /// edit, whatever its arguments) and unknown kinds map to `None`.
    #[must_use]
    pub fn map_native(&self, cursor_tool: &str, arguments: Option<&str>) -> Option<MappedCall> {
        let spec = aliases::kind(cursor_tool).filter(|spec| !spec.mutating)?;
        let at = self.deliveries.iter().position(
            |d| matches!(d, Delivery::Native { cursor_tool: k } if *k == spec.kind),
        )?;
        let tool = &self.tools[at];
        let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments?) else {
            return None;
        };
        let mapped = Value::Object(aliases::map_arguments(spec, &args, &tool.parameters));
        if !schema::is_valid(&tool.parameters, &mapped) {
            return None;
        }
        Some(MappedCall {
            name: tool.name.clone(),
            arguments: mapped.to_string(),
        })
    }

    /// Validates a call written as an envelope against the client's tool: the name is
    /// resolved like any other ([`aliases::resolve_name`]), undeclared keys are renamed to
    /// the declared keys they stand for ([`aliases::rename_keys`]), and the result must be
    /// valid against the tool's schema. Any offered tool may be called this way, even one
    /// delivered natively.
    pub fn check_envelope(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<MappedCall, EnvelopeError> {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        let tool = aliases::resolve_name(name, &names)
            .and_then(|resolved| self.tools.iter().find(|t| t.name == resolved))
            .ok_or_else(|| EnvelopeError::UnknownTool(name.to_owned()))?;
        let Value::Object(arguments) = arguments else {
            return Err(EnvelopeError::InvalidArguments {
                tool: tool.name.clone(),
                problems: vec!["arguments must be a JSON object".to_owned()],
            });
        };
        let arguments = Value::Object(aliases::rename_keys(arguments, &tool.parameters));
        let problems = schema::validate(&tool.parameters, &arguments);
        if !problems.is_empty() {
            return Err(EnvelopeError::InvalidArguments {
                tool: tool.name.clone(),
                problems,
            });
        }
        Ok(MappedCall {
            name: tool.name.clone(),
            arguments: arguments.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opencode_tools() -> Vec<ToolSpec> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/requests/client_tools.json");
        let body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| ToolSpec {
                name: t["function"]["name"].as_str().unwrap().into(),
                description: t["function"]["description"].as_str().unwrap_or("").into(),
                parameters: t["function"]["parameters"].clone(),
            })
            .collect()
    }

    #[test]
    fn read_only_deliveries() {
        let plan = ToolPlan::new(&opencode_tools(), ToolStrategy::ReadOnly);
        let deliveries: Vec<(&str, Delivery)> =
            plan.catalogue().map(|e| (e.name, e.delivery)).collect();
        let native: Vec<&str> = deliveries
            .iter()
            .filter(|(_, d)| matches!(d, Delivery::Native { .. }))
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(native, ["bash", "read", "glob", "grep", "list", "webfetch"]);
        let all_envelope = ToolPlan::new(&opencode_tools(), ToolStrategy::EnvelopeOnly);
        assert!(
            all_envelope
                .catalogue()
                .all(|e| e.delivery == Delivery::Envelope)
        );
    }

    #[test]
    fn cursor_shell_and_read_map_to_client_calls() {
        let plan = ToolPlan::new(&opencode_tools(), ToolStrategy::ReadOnly);
        let shell = r#"{"command":"ls -la","workingDirectory":"","timeout":30000,"toolCallId":"x","simpleCommands":["ls"],"parsingResult":{"parsingFailed":false},"fileOutputThresholdBytes":"40000","isBackground":false}"#;
        let call = plan.map_native("shell", Some(shell)).unwrap();
        assert_eq!(call.name, "bash");
        assert_eq!(
            serde_json::from_str::<Value>(&call.arguments).unwrap(),
            json!({"command":"ls -la","timeout":30000})
        );
        let read = plan
            .map_native("read", Some(r#"{"path":"/a/b.rs","limit":20}"#))
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&read.arguments).unwrap(),
            json!({"filePath":"/a/b.rs","limit":20})
        );
        let glob = plan
            .map_native(
                "glob",
                Some(r#"{"globPattern":"**/*.rs","targetDirectory":"/a"}"#),
            )
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&glob.arguments).unwrap()["pattern"],
            "**/*.rs"
        );
        assert!(
            plan.map_native("edit", Some(r#"{"path":"a"}"#)).is_none(),
            "edits are never intercepted"
        );
        assert!(plan.map_native("read", None).is_none());
        assert!(
            plan.map_native("read", Some(r#"{"nothing":1}"#)).is_none(),
            "invalid against the schema"
        );
        assert!(
            plan.map_native("semSearch", Some(r#"{"query":"x"}"#))
                .is_none()
        );
    }

    #[test]
    fn envelopes_are_checked() {
        let plan = ToolPlan::new(&opencode_tools(), ToolStrategy::ReadOnly);
        let ok = plan
            .check_envelope("write", &json!({"filePath":"a","content":"b"}))
            .unwrap();
        assert_eq!(ok.name, "write");
        assert!(matches!(
            plan.check_envelope("nuke", &json!({})),
            Err(EnvelopeError::UnknownTool(_))
        ));
        let err = plan
            .check_envelope("write", &json!({"filePath":1}))
            .unwrap_err();
        assert!(err.to_string().contains("content"), "{err}");
        assert_eq!(
            plan.check_envelope("update_todos", &json!({"todos":[]}))
                .unwrap()
                .name,
            "todowrite"
        );
    }

    #[test]
    fn real_cursor_args_against_real_schemas() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/cursor-agent");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            println!("skipped: ../shared fixtures absent");
            return;
        };
        let plan = ToolPlan::new(&opencode_tools(), ToolStrategy::ReadOnly);
        let mut mapped = 0;
        for entry in entries {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
            for line in text.lines() {
                let Ok(event) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if event["type"] != "tool_call" || event["subtype"] != "started" {
                    continue;
                }
                for (key, body) in event["tool_call"].as_object().unwrap() {
                    let Some(kind) = key.strip_suffix("ToolCall") else {
                        continue;
                    };
                    if kind == "shell" || kind == "read" {
                        let call = plan
                            .map_native(kind, Some(&body["args"].to_string()))
                            .expect(line);
                        assert!(call.name == "bash" || call.name == "read");
                        mapped += 1;
                    }
                }
            }
        }
        assert!(mapped > 10, "{mapped}");
    }
}
