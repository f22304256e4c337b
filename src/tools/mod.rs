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
//!
//! | client tool (OpenCode) | `ReadOnly` (default) | `Native` | `EnvelopeOnly` |
//! |---|---|---|---|
//! | bash, read, grep, glob, list, webfetch (websearch) | native, intercepted | native, intercepted | envelope |
//! | edit, write, todowrite, task | envelope | native, agent activity | envelope |
//! | skill, MCP tools, anything not in the alias table | envelope | envelope | envelope |
//!
//! "Native" needs the tool's schema to be fillable from cursor's arguments
//! ([`aliases::producible`]); a tool that is not is an envelope under every strategy.
//!
//! - [`aliases`]: name resolution and argument tables (data-driven, documented there);
//! - [`schema`]: the JSON Schema subset used to validate every call before the client sees
//!   it;
//! - [`envelope`]: the envelope syntax, the prompt text that teaches it, and the streaming
//!   detector;
//! - [`loop_guard`]: refusing the same call made again and again in a row in the current
//!   turn (never a rerun after an edit, never a call the user asked for again);
//! - [`ids`]: call ids safe in every dialect.

pub mod aliases;
pub mod envelope;
pub mod ids;
pub mod loop_guard;
pub mod schema;

use serde_json::Value;

use crate::conversation::{ToolKind, ToolSpec};
use crate::names::named;
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

named!(ToolStrategy, "tool strategy" {
    ReadOnly => "read_only",
    Native => "native",
    EnvelopeOnly => "envelope_only",
});

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
    /// Its JSON Schema (`{}` for a freeform tool).
    pub parameters: &'a Value,
    /// What input it takes.
    pub kind: &'a ToolKind,
    /// How the model reaches it.
    pub delivery: Delivery,
}

/// A call for the client: its tool name and input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct MappedCall {
    /// The client's tool name.
    pub name: String,
    /// The input: arguments as JSON object text for a function tool, the raw text for a
    /// freeform one.
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
                // Cursor's tools produce JSON arguments, never a freeform tool's text.
                if tool.is_freeform() {
                    return Delivery::Envelope;
                }
                let Some(spec) = aliases::kind(&tool.name).filter(|spec| {
                    aliases::client_tool_for_kind(spec.kind, &names) == Some(tool.name.as_str())
                }) else {
                    return Delivery::Envelope;
                };
                let native = Delivery::Native {
                    cursor_tool: spec.kind,
                };
                let interceptable = !spec.mutating && aliases::producible(spec, &tool.parameters);
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
                kind: &tool.kind,
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
        let at = self
            .deliveries
            .iter()
            .position(|d| matches!(d, Delivery::Native { cursor_tool: k } if *k == spec.kind))?;
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
    /// delivered natively. A freeform tool takes the envelope's `text` input instead of
    /// `arguments`, as it is.
    pub fn check_envelope(
        &self,
        name: &str,
        arguments: &Value,
        text: Option<&str>,
    ) -> Result<MappedCall, EnvelopeError> {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        let tool = aliases::resolve_name(name, &names)
            .and_then(|resolved| self.tools.iter().find(|t| t.name == resolved))
            .ok_or_else(|| EnvelopeError::UnknownTool(name.to_owned()))?;
        if tool.is_freeform() {
            return match text {
                Some(text) => Ok(MappedCall {
                    name: tool.name.clone(),
                    arguments: text.to_owned(),
                }),
                None => Err(EnvelopeError::InvalidArguments {
                    tool: tool.name.clone(),
                    problems: vec![
                        "its input is text: write it as \"input\", one JSON string".to_owned(),
                    ],
                }),
            };
        }
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
    use std::path::Path;

    fn spec(tool: &Value) -> ToolSpec {
        ToolSpec {
            name: tool["function"]["name"].as_str().unwrap().into(),
            description: tool["function"]["description"]
                .as_str()
                .unwrap_or("")
                .into(),
            parameters: tool["function"]["parameters"].clone(),
            kind: ToolKind::Function,
        }
    }

    /// The project's OpenCode-style request (with `list`).
    fn project_tools() -> Vec<ToolSpec> {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/requests/client_tools.json");
        let body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        body["tools"].as_array().unwrap().iter().map(spec).collect()
    }

    /// The tools of the first real OpenCode request body; `None` when `what` is skipped
    /// (the real captures absent: `crate::shared_fixtures`).
    fn real_opencode_tools(what: &str) -> Option<Vec<ToolSpec>> {
        let fixtures = crate::shared_fixtures::fixtures(what)?;
        let body = fixtures
            .request_bodies("opencode/opencode-1.18.33-requests-toolround.jsonl")
            .remove(0);
        Some(
            body["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .map(spec)
                .collect(),
        )
    }

    /// Every `tool_call/started` in the real cursor transcripts: (kind, args JSON); `None`
    /// when `what` is skipped.
    fn real_cursor_starts(what: &str) -> Option<Vec<(String, String)>> {
        let fixtures = crate::shared_fixtures::fixtures(what)?;
        let mut starts = Vec::new();
        for path in fixtures.files("cursor-agent", ".jsonl") {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for line in text.lines() {
                let Ok(event) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if event["type"] != "tool_call" || event["subtype"] != "started" {
                    continue;
                }
                for (key, body) in event["tool_call"].as_object().into_iter().flatten() {
                    let Some(stem) = key.strip_suffix("ToolCall") else {
                        continue;
                    };
                    // As the decoder names it: `shellToolCall` → `shell`.
                    let mut kind = stem[..1].to_lowercase();
                    kind.push_str(&stem[1..]);
                    starts.push((kind, body["args"].to_string()));
                }
            }
        }
        assert!(!starts.is_empty(), "no tool calls in the real transcripts");
        Some(starts)
    }

    fn deliveries(plan: &ToolPlan) -> Vec<(&str, Delivery)> {
        plan.catalogue().map(|e| (e.name, e.delivery)).collect()
    }

    fn natives(plan: &ToolPlan) -> Vec<&str> {
        deliveries(plan)
            .into_iter()
            .filter(|(_, d)| matches!(d, Delivery::Native { .. }))
            .map(|(n, _)| n)
            .collect()
    }

    fn args(call: &MappedCall) -> Value {
        serde_json::from_str(&call.arguments).unwrap()
    }

    #[test]
    fn deliveries_per_strategy() {
        let tools = project_tools();
        let read_only = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        assert_eq!(
            natives(&read_only),
            ["bash", "read", "glob", "grep", "list", "webfetch"]
        );
        assert!(deliveries(&read_only).contains(&(
            "bash",
            Delivery::Native {
                cursor_tool: "shell"
            }
        )));
        let native = ToolPlan::new(&tools, ToolStrategy::Native);
        for name in ["edit", "write", "todowrite", "task", "bash", "read"] {
            assert!(natives(&native).contains(&name), "{name}");
        }
        let envelope_only = ToolPlan::new(&tools, ToolStrategy::EnvelopeOnly);
        assert!(natives(&envelope_only).is_empty());
        assert!(
            envelope_only
                .map_native("shell", Some(r#"{"command":"ls"}"#))
                .is_none()
        );
        assert!(ToolPlan::new(&[], ToolStrategy::ReadOnly).is_empty());
        assert!(!read_only.is_empty());
        assert_eq!(read_only.strategy(), ToolStrategy::ReadOnly);
    }

    #[test]
    fn real_opencode_deliveries() {
        let Some(tools) = real_opencode_tools("tools::real_opencode_deliveries") else {
            return;
        };
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        assert_eq!(natives(&plan), ["bash", "glob", "grep", "read", "webfetch"]);
        let envelopes: Vec<&str> = deliveries(&plan)
            .into_iter()
            .filter(|(_, d)| *d == Delivery::Envelope)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(envelopes, ["edit", "skill", "task", "todowrite", "write"]);
    }

    #[test]
    fn a_tool_whose_schema_cursor_cannot_fill_is_an_envelope() {
        let tools = [ToolSpec {
            name: "bash".into(),
            description: String::new(),
            parameters: json!({"type":"object","properties":{"command":{"type":"string"},
                "sandbox_profile":{"type":"string"}},"required":["command","sandbox_profile"]}),
            kind: ToolKind::Function,
        }];
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        assert_eq!(deliveries(&plan), [("bash", Delivery::Envelope)]);
        assert!(
            plan.map_native("shell", Some(r#"{"command":"ls"}"#))
                .is_none()
        );
    }

    #[test]
    fn the_preferred_tool_of_a_kind_is_native_the_other_an_envelope() {
        let any =
            json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]});
        let tools: Vec<ToolSpec> = ["view", "read"]
            .iter()
            .map(|name| ToolSpec {
                name: (*name).into(),
                description: String::new(),
                parameters: any.clone(),
                kind: ToolKind::Function,
            })
            .collect();
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        assert_eq!(
            deliveries(&plan),
            [
                ("view", Delivery::Envelope),
                (
                    "read",
                    Delivery::Native {
                        cursor_tool: "read"
                    }
                )
            ]
        );
        let call = plan.map_native("read", Some(r#"{"path":"/a"}"#)).unwrap();
        assert_eq!(
            (call.name.as_str(), args(&call)),
            ("read", json!({"path":"/a"}))
        );
    }

    #[test]
    fn cursor_calls_map_to_client_calls() {
        let plan = ToolPlan::new(&project_tools(), ToolStrategy::ReadOnly);
        let shell = r#"{"command":"ls -la","workingDirectory":"","timeout":30000,"toolCallId":"x\ny","simpleCommands":["ls"],"parsingResult":{"parsingFailed":false},"fileOutputThresholdBytes":"40000","isBackground":false,"description":"List files"}"#;
        let call = plan.map_native("shell", Some(shell)).unwrap();
        assert_eq!(call.name, "bash");
        assert_eq!(
            args(&call),
            json!({"command":"ls -la","timeout":30000,"description":"List files"})
        );
        let call = plan
            .map_native("read", Some(r#"{"path":"/a/b.rs","limit":20}"#))
            .unwrap();
        assert_eq!(args(&call), json!({"filePath":"/a/b.rs","limit":20}));
        let call = plan
            .map_native(
                "glob",
                Some(r#"{"globPattern":"**/*.rs","targetDirectory":"/a"}"#),
            )
            .unwrap();
        assert_eq!(args(&call), json!({"pattern":"**/*.rs","path":"/a"}));
        let call = plan
            .map_native(
                "ls",
                Some(r#"{"path":"/a","ignore":["target"],"toolCallId":"t"}"#),
            )
            .unwrap();
        assert_eq!(
            (call.name.as_str(), args(&call)),
            ("list", json!({"path":"/a","ignore":["target"]}))
        );
        let call = plan
            .map_native(
                "webFetch",
                Some(r#"{"url":"https://example.com","toolCallId":"t"}"#),
            )
            .unwrap();
        assert_eq!(args(&call), json!({"url":"https://example.com"}));
        // A decoder name written another way still resolves.
        assert!(
            plan.map_native("Shell", Some(r#"{"command":"ls"}"#))
                .is_some()
        );
        assert!(
            plan.map_native("bash", Some(r#"{"command":"ls"}"#))
                .is_some()
        );
    }

    #[test]
    fn what_never_maps() {
        for strategy in [
            ToolStrategy::ReadOnly,
            ToolStrategy::Native,
            ToolStrategy::EnvelopeOnly,
        ] {
            let plan = ToolPlan::new(&project_tools(), strategy);
            for (tool, arguments) in [
                ("edit", Some(r#"{"path":"/a/b.rs"}"#)),
                ("edit", Some(r#"{"path":"/a/b.rs","streamContent":"x"}"#)),
                ("write", Some(r#"{"path":"/a","contents":"x"}"#)),
                ("delete", Some(r#"{"path":"/a"}"#)),
                ("updateTodos", Some(r#"{"todos":[]}"#)),
                ("mcp", Some(r#"{"name":"x","args":{},"toolName":"bash"}"#)),
                ("semSearch", Some(r#"{"query":"x"}"#)),
                ("askQuestion", Some(r#"{"title":"?","questions":[]}"#)),
                ("webSearch", Some(r#"{"searchTerm":"x"}"#)),
                ("someFutureKind", Some("{}")),
                ("read", None),
                ("read", Some("not json")),
                ("read", Some(r#"["/a"]"#)),
                ("read", Some(r#"{"nothing":1}"#)),
                ("read", Some(r#"{"path":""}"#)),
                ("shell", Some(r#"{"command":"   "}"#)),
                ("", Some("{}")),
            ] {
                assert!(
                    plan.map_native(tool, arguments).is_none(),
                    "{strategy:?} {tool} {arguments:?}"
                );
            }
        }
    }

    #[test]
    fn real_cursor_args_against_real_schemas() {
        let what = "tools::real_cursor_args_against_real_schemas";
        let Some(tools) = real_opencode_tools(what) else {
            return;
        };
        let starts = real_cursor_starts(what).expect("present, as the tools were");
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        let schema_of = |name: &str| &tools.iter().find(|t| t.name == name).unwrap().parameters;
        let mut mapped = std::collections::BTreeMap::<String, usize>::new();
        for (kind, arguments) in &starts {
            let call = plan.map_native(kind, Some(arguments));
            match kind.as_str() {
                "shell" | "read" | "webFetch" => {
                    let call = call.unwrap_or_else(|| panic!("{kind} {arguments}"));
                    let value = args(&call);
                    assert!(
                        schema::validate(schema_of(&call.name), &value).is_empty(),
                        "{value}"
                    );
                    let original: Value = serde_json::from_str(arguments).unwrap();
                    let key = match kind.as_str() {
                        "shell" => ("command", "command"),
                        "read" => ("path", "filePath"),
                        _ => ("url", "url"),
                    };
                    assert_eq!(original[key.0], value[key.1]);
                    // No cursor-only key survives.
                    for key in value.as_object().unwrap().keys() {
                        assert!(
                            [
                                "command", "timeout", "workdir", "filePath", "offset", "limit",
                                "url"
                            ]
                            .contains(&key.as_str()),
                            "{key}"
                        );
                    }
                    *mapped.entry(call.name).or_default() += 1;
                }
                // Edits (`{path}` only or with content), questions, and web searches the
                // client has no tool for stay agent activity.
                _ => assert!(call.is_none(), "{kind} {arguments}"),
            }
        }
        assert!(
            mapped["bash"] >= 20 && mapped["read"] >= 4 && mapped["webfetch"] >= 5,
            "{mapped:?}"
        );
    }

    #[test]
    fn protocol_grep_glob_ls_args_against_real_schemas() {
        let Some(mut tools) =
            real_opencode_tools("tools::protocol_grep_glob_ls_args_against_real_schemas")
        else {
            return;
        };
        // OpenCode 1.18 sends no `list`; the project fixture's stands in.
        tools.extend(project_tools().into_iter().filter(|t| t.name == "list"));
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        let cases = [
            (
                "grep",
                r#"{"pattern":"fn main","path":"/w/src","glob":"*.rs","outputMode":"content","caseInsensitive":false,"headLimit":50,"toolCallId":"t"}"#,
                json!({"pattern":"fn main","path":"/w/src","include":"*.rs"}),
            ),
            (
                "glob",
                r#"{"globPattern":"**/*.toml","targetDirectory":"/w"}"#,
                json!({"pattern":"**/*.toml","path":"/w"}),
            ),
            (
                "ls",
                r#"{"path":"/w","ignore":["target"],"toolCallId":"t"}"#,
                json!({"path":"/w","ignore":["target"]}),
            ),
        ];
        for (kind, cursor, expected) in cases {
            let call = plan.map_native(kind, Some(cursor)).unwrap();
            assert_eq!(args(&call), expected, "{kind}");
            let tool = tools.iter().find(|t| t.name == call.name).unwrap();
            assert!(schema::is_valid(&tool.parameters, &expected));
        }
    }

    #[test]
    fn required_keys_are_never_invented() {
        let tools = [ToolSpec {
            name: "bash".into(),
            description: String::new(),
            parameters: json!({"type":"object","properties":{"command":{"type":"string"},
                "description":{"type":"string"}},"required":["command","description"]}),
            kind: ToolKind::Function,
        }];
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        assert!(matches!(deliveries(&plan)[0].1, Delivery::Native { .. }));
        // Builds from 2026.08 send a description; older ones do not.
        let call = plan
            .map_native("shell", Some(r#"{"command":"ls","description":"List"}"#))
            .unwrap();
        assert_eq!(args(&call), json!({"command":"ls","description":"List"}));
        assert!(
            plan.map_native("shell", Some(r#"{"command":"ls"}"#))
                .is_none()
        );
    }

    #[test]
    fn forbidden_keys_are_dropped() {
        let tools = [ToolSpec {
            name: "read".into(),
            description: String::new(),
            parameters: json!({"type":"object","properties":{"file_path":{"type":"string"}},
                "required":["file_path"],"additionalProperties":false}),
            kind: ToolKind::Function,
        }];
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        let call = plan
            .map_native("read", Some(r#"{"path":"/a","offset":3,"limit":5}"#))
            .unwrap();
        assert_eq!(args(&call), json!({"file_path":"/a"}));
    }

    #[test]
    fn envelopes_are_checked() {
        let plan = ToolPlan::new(&project_tools(), ToolStrategy::ReadOnly);
        let ok = plan
            .check_envelope("write", &json!({"filePath":"a","content":"b"}), None)
            .unwrap();
        assert_eq!(ok.name, "write");
        assert!(matches!(
            plan.check_envelope("nuke", &json!({}), None),
            Err(EnvelopeError::UnknownTool(name)) if name == "nuke"
        ));
        let err = plan
            .check_envelope("write", &json!({"filePath":1}), None)
            .unwrap_err();
        assert!(err.to_string().contains("content"), "{err}");
        assert_eq!(
            plan.check_envelope("update_todos", &json!({"todos":[]}), None)
                .unwrap()
                .name,
            "todowrite"
        );
        let renamed = plan
            .check_envelope(
                "Edit",
                &json!({"file_path":"a","old_string":"x","new_string":"y"}),
                None,
            )
            .unwrap();
        assert_eq!(
            (renamed.name.as_str(), args(&renamed)),
            (
                "edit",
                json!({"filePath":"a","oldString":"x","newString":"y"})
            )
        );
        assert!(matches!(
            plan.check_envelope("write", &json!(["a"]), None),
            Err(EnvelopeError::InvalidArguments { tool, .. }) if tool == "write"
        ));
        // A natively delivered tool may still be called by envelope.
        assert_eq!(
            plan.check_envelope("shell", &json!({"command":"ls"}), None)
                .unwrap()
                .name,
            "bash"
        );
    }

    #[test]
    fn freeform_tools_are_envelopes_taking_text() {
        let mut tools = project_tools();
        tools.push(ToolSpec::freeform("apply_patch", "Apply a patch", None));
        for strategy in [ToolStrategy::ReadOnly, ToolStrategy::Native] {
            let plan = ToolPlan::new(&tools, strategy);
            let entry = plan.catalogue().find(|e| e.name == "apply_patch").unwrap();
            assert_eq!(entry.delivery, Delivery::Envelope);
            assert!(matches!(entry.kind, ToolKind::Freeform { grammar: None }));
        }
        let plan = ToolPlan::new(&tools, ToolStrategy::ReadOnly);
        let patch = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n";
        let call = plan
            .check_envelope("apply_patch", &json!({}), Some(patch))
            .unwrap();
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("apply_patch", patch)
        );
        assert!(matches!(
            plan.check_envelope("apply_patch", &json!({"patch": patch}), None),
            Err(EnvelopeError::InvalidArguments { tool, .. }) if tool == "apply_patch"
        ));
        // A function tool ignores a text input and is checked against its schema as ever.
        assert!(plan.check_envelope("write", &json!({}), Some("x")).is_err());
    }
}
