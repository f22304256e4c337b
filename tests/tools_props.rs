//! Property tests: schema validation, argument mapping and the tool plan never panic on
//! arbitrary JSON, and what they produce keeps its promises.

use agentwire::conversation::{ToolKind, ToolSpec};
use agentwire::tools::envelope::EnvelopeError;
use agentwire::tools::{ToolPlan, ToolStrategy, aliases, schema};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys that tool schemas and cursor arguments use, so that arbitrary values often hit
/// real code paths.
const KEYS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "enum",
    "const",
    "$ref",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "nullable",
    "description",
    "command",
    "path",
    "filePath",
    "timeout",
    "workingDirectory",
    "pattern",
    "globPattern",
    "targetDirectory",
    "url",
    "ignore",
    "offset",
    "limit",
    "name",
    "arguments",
];

const WORDS: &[&str] = &[
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "null",
    "#",
    "#/properties",
    "#/$defs/x",
    "seconds",
    "milliseconds",
    "",
    "ls -la",
    "/a/b",
    "command",
    "path",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KEYS).prop_map(str::to_owned),
        1 => "[a-zA-Z_$#/-]{0,8}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        prop::sample::select(KEYS).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((key(), json()), 0..8).prop_map(|entries| entries.into_iter().collect())
}

const TOOL_NAMES: &[&str] = &[
    "bash",
    "read",
    "grep",
    "glob",
    "list",
    "webfetch",
    "websearch",
    "edit",
    "write",
    "todowrite",
    "task",
    "skill",
    "Bash",
    "read_file",
    "x",
];

/// Up to five tools with distinct names: every request parser refuses a repeated name, so a
/// plan never sees one.
fn tools() -> impl Strategy<Value = Vec<ToolSpec>> {
    prop::collection::vec((prop::sample::select(TOOL_NAMES), json()), 0..6).prop_map(|tools| {
        let mut seen = std::collections::HashSet::new();
        tools
            .into_iter()
            .filter(|(name, _)| seen.insert(*name))
            .map(|(name, parameters)| ToolSpec {
                name: name.into(),
                description: String::new(),
                parameters,
                kind: ToolKind::Function,
            })
            .collect()
    })
}

fn strategy() -> impl Strategy<Value = ToolStrategy> {
    prop::sample::select(vec![
        ToolStrategy::ReadOnly,
        ToolStrategy::Native,
        ToolStrategy::EnvelopeOnly,
    ])
}

const KINDS: &[&str] = &[
    "shell",
    "read",
    "grep",
    "glob",
    "ls",
    "webFetch",
    "webSearch",
    "edit",
    "write",
    "delete",
    "updateTodos",
    "task",
    "mcp",
    "semSearch",
    "askQuestion",
    "bash",
    "",
    "unknown",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn validation_never_panics(schema_value in json(), value in json()) {
        let problems = schema::validate(&schema_value, &value);
        prop_assert!(problems.len() <= schema::MAX_PROBLEMS);
        prop_assert_eq!(problems.is_empty(), schema::is_valid(&schema_value, &value));
    }

    #[test]
    fn a_value_is_valid_against_an_empty_schema(value in json()) {
        let empty = json!({});
        prop_assert!(schema::is_valid(&empty, &value));
        prop_assert!(schema::is_valid(&json!(true), &value));
    }

    #[test]
    fn argument_mapping_never_panics(
        kind in prop::sample::select(KINDS),
        cursor_args in object(),
        tool_schema in json(),
    ) {
        if let Some(spec) = aliases::kind(kind) {
            let mapped = aliases::map_arguments(spec, &cursor_args, &tool_schema);
            // Only keys the schema declares, or the table's own when it declares none.
            if let Some(declared) = schema::properties(&tool_schema).filter(|d| !d.is_empty()) {
                for key in mapped.keys() {
                    prop_assert!(declared.contains_key(key), "{}", key);
                }
            }
            let _ = aliases::producible(spec, &tool_schema);
        }
        let renamed = aliases::rename_keys(&cursor_args, &tool_schema);
        prop_assert_eq!(renamed.len(), cursor_args.len(), "renaming never loses a key");
        let _ = aliases::resolve_name(kind, TOOL_NAMES);
    }

    #[test]
    fn the_plan_never_panics_and_only_emits_valid_calls(
        tools in tools(),
        strategy in strategy(),
        kind in prop::sample::select(KINDS),
        cursor_args in object(),
        raw in ".{0,40}",
        envelope_name in prop::sample::select(TOOL_NAMES),
        envelope_args in json(),
    ) {
        let plan = ToolPlan::new(&tools, strategy);
        prop_assert_eq!(plan.catalogue().count(), tools.len());
        let text = Value::Object(cursor_args).to_string();
        for arguments in [Some(text.as_str()), Some(raw.as_str()), None] {
            if let Some(call) = plan.map_native(kind, arguments) {
                prop_assert!(strategy != ToolStrategy::EnvelopeOnly);
                prop_assert!(!aliases::is_mutating(kind));
                let tool = tools.iter().find(|t| t.name == call.name).unwrap();
                let value: Value = serde_json::from_str(&call.arguments).unwrap();
                prop_assert!(value.is_object());
                prop_assert!(schema::is_valid(&tool.parameters, &value));
            }
        }
        match plan.check_envelope(envelope_name, &envelope_args, None) {
            Ok(call) => {
                let tool = tools.iter().find(|t| t.name == call.name).unwrap();
                let value: Value = serde_json::from_str(&call.arguments).unwrap();
                prop_assert!(schema::is_valid(&tool.parameters, &value));
            }
            Err(EnvelopeError::UnknownTool(name)) => prop_assert_eq!(name, envelope_name),
            Err(EnvelopeError::InvalidArguments { problems, .. }) => {
                prop_assert!(!problems.is_empty());
            }
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
        }
    }
}

fn project_tools() -> Vec<ToolSpec> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/requests/client_tools.json");
    let body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| ToolSpec {
            name: tool["function"]["name"].as_str().unwrap().into(),
            description: String::new(),
            parameters: tool["function"]["parameters"].clone(),
            kind: ToolKind::Function,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// OpenCode's schemas, cursor-shaped arguments with arbitrary values: a call comes out
    /// exactly when the key its tool requires has a usable value, and it is always valid.
    #[test]
    fn opencode_schemas_with_arbitrary_cursor_values(
        kind in prop::sample::select(&["shell", "read", "grep", "glob", "ls", "webFetch"][..]),
        cursor_args in object(),
        strategy in strategy(),
    ) {
        let tools = project_tools();
        let plan = ToolPlan::new(&tools, strategy);
        let text = Value::Object(cursor_args.clone()).to_string();
        let call = plan.map_native(kind, Some(&text));
        if strategy == ToolStrategy::EnvelopeOnly {
            prop_assert!(call.is_none());
            return Ok(());
        }
        let required_source: &[&str] = match kind {
            "shell" => &["command"],
            "read" => &["path", "filePath", "targetFile"],
            "grep" => &["pattern", "query", "regex"],
            "glob" => &["globPattern", "pattern"],
            "webFetch" => &["url"],
            _ => &[],
        };
        let usable = required_source.is_empty()
            || required_source
                .iter()
                .filter_map(|k| cursor_args.get(*k))
                .find(|v| !v.is_null() && v.as_str().is_none_or(|s| !s.trim().is_empty()))
                .is_some_and(Value::is_string);
        if let Some(call) = &call {
            let tool = tools.iter().find(|t| t.name == call.name).unwrap();
            let value: Value = serde_json::from_str(&call.arguments).unwrap();
            prop_assert!(schema::is_valid(&tool.parameters, &value));
        }
        prop_assert_eq!(call.is_some(), usable, "{}", text);
    }
}
