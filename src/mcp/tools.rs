//! The client's tools as MCP tools: a [`ToolSpec`] becomes a [`Tool`] (name, description,
//! `inputSchema`), and a `tools/call`'s `arguments` become what the client's own tool call
//! carries.
//!
//! | the client's tool | MCP `inputSchema` | the client's arguments |
//! |---|---|---|
//! | function, schema of `type` `object` | the schema, exactly | `arguments`, the JSON text as the agent sent it (`{}` when absent) |
//! | function, schema with no `type` (`{}` included) | the schema with `"type": "object"` added | as above |
//! | function, any other schema (`type` `string`, `array`, a list of types, `true`) | `{"type":"object","properties":{"input": <schema>},"required":["input"]}` | the JSON text of `arguments.input` |
//! | freeform (raw text, optionally in a grammar) | one string property `input`, described as raw text (and the grammar, when given) | the string `arguments.input` |
//!
//! MCP requires `inputSchema` to be an object schema (`type: "object"`); every client tool
//! takes an object of arguments except a freeform one, and a function whose schema says
//! otherwise, hence the one-property wrapper.
//!
//! Names: MCP allows letters, digits, `_`, `-` and `.`, but the agents turn a tool name
//! into a function name for their model, which allows no `.`. A `.` (how a Responses
//! namespace qualifies its tools: `ns.tool`) becomes `__` (`ns__tool`), any other
//! character outside `A–Z a–z 0–9 _ -` becomes `_`, and a name already taken gets `_2`,
//! `_3`, … A `tools/call` names the MCP name; its [`McpEvent::Call`] gives the tool's index
//! in the list the server was built from, so nothing is parsed back.
//!
//! [`McpEvent::Call`]: super::McpEvent::Call

use std::collections::HashSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::rpc;
use crate::conversation::{ToolKind, ToolSpec};

/// How a tool's MCP `arguments` become the client's tool-call input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentShape {
    /// The `arguments` object is the client's input, as sent.
    Object,
    /// The JSON value of `arguments.input` is the client's input (a function whose schema
    /// is not an object schema).
    Wrapped,
    /// The string `arguments.input` is the client's input, raw (a freeform tool).
    Text,
}

/// One tool as the MCP client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name the MCP client lists and calls.
    pub name: String,
    /// The description, as the client gave it (left out of `tools/list` when empty).
    pub description: String,
    /// The `inputSchema`: always an object schema.
    pub input_schema: Value,
    /// How a call's arguments map back to the client's input.
    pub shape: ArgumentShape,
}

/// The one property of a wrapped or freeform tool's input.
const INPUT: &str = "input";

/// A client's tools as MCP serves them, and their `tools/list` answer, built once and
/// shared by every server offering the same tools (a cheap clone): the schemas of a
/// coding client's tools run to tens of kilobytes, and every session of its conversations
/// offers the same ones.
#[derive(Debug, Clone)]
pub struct ToolSet(Arc<Built>);

#[derive(Debug)]
struct Built {
    tools: Vec<Tool>,
    /// The client's names of the tools, in the same order.
    client_names: Vec<String>,
    /// The `tools/list` result.
    list: String,
}

impl ToolSet {
    /// The tool set of `specs` (see [`Tool`] for how each is presented).
    #[must_use]
    pub fn new(specs: &[ToolSpec]) -> ToolSet {
        let tools = tools(specs);
        let list = list_result(&tools);
        let client_names = specs.iter().map(|spec| spec.name.clone()).collect();
        ToolSet(Arc::new(Built {
            tools,
            client_names,
            list,
        }))
    }

    /// The client's name of the tool at `index` (what its calls are handed over as).
    #[must_use]
    pub fn client_name(&self, index: usize) -> Option<&str> {
        self.0.client_names.get(index).map(String::as_str)
    }

    /// The tools, in the order of the specs the set was built from.
    #[must_use]
    pub fn tools(&self) -> &[Tool] {
        &self.0.tools
    }

    /// The `tools/list` result.
    pub(crate) fn list(&self) -> &str {
        &self.0.list
    }
}

/// The tools for `specs`, in their order.
fn tools(specs: &[ToolSpec]) -> Vec<Tool> {
    let mut taken = HashSet::new();
    specs
        .iter()
        .map(|spec| {
            let name = unique(mcp_name(&spec.name), &mut taken);
            let (input_schema, shape) = input_schema(spec);
            Tool {
                name,
                description: spec.description.clone(),
                input_schema,
                shape,
            }
        })
        .collect()
}

fn mcp_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    for c in name.chars() {
        match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' => out.push(c),
            '.' => out.push_str("__"),
            _ => out.push('_'),
        }
    }
    if out.is_empty() {
        out.push_str("tool");
    }
    out
}

fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

fn input_schema(spec: &ToolSpec) -> (Value, ArgumentShape) {
    let wrap = |property: Value| {
        json!({
            "type": "object",
            "properties": {INPUT: property},
            "required": [INPUT],
            "additionalProperties": false,
        })
    };
    if let ToolKind::Freeform { grammar } = &spec.kind {
        let mut description = String::from("The tool's input as raw text, not JSON.");
        if let Some(grammar) = grammar {
            description.push_str(&format!(
                " It must match this {} grammar:\n{}",
                grammar.syntax, grammar.definition
            ));
        }
        let property = json!({"type": "string", "description": description});
        return (wrap(property), ArgumentShape::Text);
    }
    match &spec.parameters {
        Value::Null => (json!({"type": "object"}), ArgumentShape::Object),
        Value::Object(schema) => match schema.get("type") {
            Some(Value::String(kind)) if kind == "object" => {
                (spec.parameters.clone(), ArgumentShape::Object)
            }
            None => {
                let mut schema = schema.clone();
                schema.insert("type".into(), Value::String("object".into()));
                (Value::Object(schema), ArgumentShape::Object)
            }
            Some(_) => (wrap(spec.parameters.clone()), ArgumentShape::Wrapped),
        },
        other => (wrap(other.clone()), ArgumentShape::Wrapped),
    }
}

/// The `tools/list` result for `tools`: `{"tools":[…]}`, written once per server.
fn list_result(tools: &[Tool]) -> String {
    #[derive(Serialize)]
    struct Listed<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        description: &'a str,
        #[serde(rename = "inputSchema")]
        input_schema: &'a Value,
    }
    #[derive(Serialize)]
    struct List<'a> {
        tools: Vec<Listed<'a>>,
    }
    let list = List {
        tools: tools
            .iter()
            .map(|tool| Listed {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
            })
            .collect(),
    };
    serde_json::to_string(&list).expect("a tool list serialises")
}

/// Why a `tools/call`'s arguments give the client nothing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BadArguments {
    /// The request itself is malformed (`arguments` not an object): a JSON-RPC error
    /// `-32602`.
    Malformed(&'static str),
    /// The arguments do not fit the tool: a tool result with `isError: true`, which the
    /// model can read and correct.
    Unfit(&'static str),
}

/// The client's input for a call of a tool of `shape` with these `arguments`.
pub(crate) fn client_input(
    shape: ArgumentShape,
    arguments: Option<&RawValue>,
) -> Result<String, BadArguments> {
    let arguments = arguments.filter(|a| !rpc::is_null(a));
    if let Some(arguments) = arguments {
        if !rpc::is_object(arguments) {
            return Err(BadArguments::Malformed(
                "`arguments` of `tools/call` must be an object.",
            ));
        }
    }
    #[derive(Deserialize)]
    struct Input<'a> {
        #[serde(borrow, default, deserialize_with = "rpc::present")]
        input: Option<&'a RawValue>,
    }
    let input = || {
        arguments
            .and_then(|a| serde_json::from_str::<Input<'_>>(a.get()).ok())
            .and_then(|a| a.input)
    };
    match shape {
        ArgumentShape::Object => {
            Ok(arguments.map_or_else(|| "{}".to_owned(), |a| a.get().to_owned()))
        }
        ArgumentShape::Wrapped => {
            input()
                .map(|input| input.get().to_owned())
                .ok_or(BadArguments::Unfit(
                    "The arguments must hold the tool's input as `input`.",
                ))
        }
        ArgumentShape::Text => input()
            .and_then(rpc::string)
            .map(|text| text.into_owned())
            .ok_or(BadArguments::Unfit(
                "The arguments must hold the tool's input as the string `input`.",
            )),
    }
}

/// Whether `schema` is an object schema, as MCP requires of `inputSchema`.
#[cfg(test)]
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type") == Some(&Value::String("object".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Grammar;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn an_object_schema_is_served_exactly() {
        let schema = json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false});
        let tools = tools(&[ToolSpec::function("bash", "Run it.", schema.clone())]);
        assert_eq!(tools[0].name, "bash");
        assert_eq!(tools[0].input_schema, schema);
        assert_eq!(tools[0].shape, ArgumentShape::Object);
        let list: Value = serde_json::from_str(&list_result(&tools)).unwrap();
        assert_eq!(
            list,
            json!({"tools":[{"name":"bash","description":"Run it.","inputSchema":schema}]})
        );
    }

    #[test]
    fn every_schema_becomes_an_object_schema() {
        let cases = [
            (json!({}), json!({"type":"object"}), ArgumentShape::Object),
            (Value::Null, json!({"type":"object"}), ArgumentShape::Object),
            (
                json!({"properties":{"a":{"type":"number"}}}),
                json!({"type":"object","properties":{"a":{"type":"number"}}}),
                ArgumentShape::Object,
            ),
            (
                json!({"type":"string"}),
                json!({"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false}),
                ArgumentShape::Wrapped,
            ),
            (
                json!({"type":["object","null"]}),
                json!({"type":"object","properties":{"input":{"type":["object","null"]}},"required":["input"],"additionalProperties":false}),
                ArgumentShape::Wrapped,
            ),
            (
                json!(true),
                json!({"type":"object","properties":{"input":true},"required":["input"],"additionalProperties":false}),
                ArgumentShape::Wrapped,
            ),
        ];
        for (parameters, want, shape) in cases {
            let tool = &tools(&[ToolSpec::function("t", "", parameters.clone())])[0];
            assert_eq!(
                (&tool.input_schema, tool.shape),
                (&want, shape),
                "{parameters}"
            );
            assert!(is_object_schema(&tool.input_schema));
        }
        let list: Value = serde_json::from_str(&list_result(&tools(&[ToolSpec::function(
            "t",
            "",
            json!({}),
        )])))
        .unwrap();
        assert!(list["tools"][0].get("description").is_none(), "{list}");
    }

    #[test]
    fn a_freeform_tool_is_one_string_parameter() {
        let free = ToolSpec::freeform("apply_patch", "Patch files.", None);
        let grammar = ToolSpec::freeform(
            "sql",
            "",
            Some(Grammar {
                syntax: "lark".into(),
                definition: "start: \"SELECT\"".into(),
            }),
        );
        let tools = tools(&[free, grammar]);
        let input = &tools[0].input_schema["properties"]["input"];
        assert_eq!(input["type"], "string");
        assert_eq!(tools[0].input_schema["required"], json!(["input"]));
        assert_eq!(tools[0].shape, ArgumentShape::Text);
        let described = tools[1].input_schema["properties"]["input"]["description"]
            .as_str()
            .unwrap();
        assert!(
            described.contains("lark grammar:\nstart: \"SELECT\""),
            "{described}"
        );
    }

    #[test]
    fn names_are_agent_safe_and_unique() {
        let spec = |name: &str| ToolSpec::function(name, "", json!({}));
        let names: Vec<String> = tools(&[
            spec("read"),
            spec("files.read"),
            spec("files__read"),
            spec("a b/c"),
            spec(""),
            spec("read"),
        ])
        .into_iter()
        .map(|t| t.name)
        .collect();
        assert_eq!(
            names,
            [
                "read",
                "files__read",
                "files__read_2",
                "a_b_c",
                "tool",
                "read_2"
            ]
        );
    }

    #[test]
    fn arguments_map_back_to_the_clients_input() {
        use ArgumentShape::*;
        let ok = |shape, args: Option<&str>| client_input(shape, args.map(raw));
        assert_eq!(
            ok(Object, Some(r#"{"command": "ls"}"#)),
            Ok(r#"{"command": "ls"}"#.into())
        );
        assert_eq!(ok(Object, None), Ok("{}".into()));
        assert_eq!(ok(Object, Some("null")), Ok("{}".into()));
        assert_eq!(
            ok(Wrapped, Some(r#"{"input":[1, 2]}"#)),
            Ok("[1, 2]".into())
        );
        assert_eq!(ok(Wrapped, Some(r#"{"input":null}"#)), Ok("null".into()));
        assert_eq!(
            ok(Text, Some(r#"{"input":"*** Begin Patch\n\u0041"}"#)),
            Ok("*** Begin Patch\nA".into())
        );
        for shape in [Object, Wrapped, Text] {
            assert!(matches!(
                ok(shape, Some("[1]")),
                Err(BadArguments::Malformed(_))
            ));
            assert!(matches!(
                ok(shape, Some("\"x\"")),
                Err(BadArguments::Malformed(_))
            ));
        }
        assert!(matches!(ok(Wrapped, None), Err(BadArguments::Unfit(_))));
        assert!(matches!(
            ok(Text, Some(r#"{"input":3}"#)),
            Err(BadArguments::Unfit(_))
        ));
        assert!(matches!(ok(Text, Some("{}")), Err(BadArguments::Unfit(_))));
    }
}
