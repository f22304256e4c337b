//! The tools of a Responses request and what the reply may do with them: `tools` (and the
//! tools an `additional_tools` input item adds) flattened into the neutral
//! [`ToolSpec`]s, and `tool_choice` into a [`ToolChoice`].
//!
//! | tool `type` | becomes |
//! |---|---|
//! | `function` (flat: `name`, `description`, `parameters`) | a function tool |
//! | `custom` (`format` `text`, or `grammar` with `syntax` and `definition`) | a freeform tool, with its grammar |
//! | `namespace` (`name`, `tools` of type `function` or `custom`) | its tools, each named `<namespace>.<name>` |
//! | anything else (`web_search`, `file_search`, `tool_search`, `local_shell`, `shell`, `apply_patch`, `mcp`, `computer_use_preview`, `image_generation`, `code_interpreter`, …) | nothing: hosted tools and tools with item types of their own, which the agent cannot call; dropped without an error |
//!
//! A namespace's tools are flattened to qualified names because the agent (and the
//! neutral model) knows one flat list of tools. The `.` cannot occur in a plain tool name
//! (names are 1 to 64 letters, digits, `_` or `-`, as OpenAI requires), so a qualified
//! name is always split back into `namespace` and `name` on the way out.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::api::parse::tool_choice_with;
use crate::api::{RequestError, RequestLimits};
use crate::conversation::{Grammar, ToolChoice, ToolSpec};

/// What separates a namespace from the name of one of its tools in a flattened name.
pub(super) const NAMESPACE_SEPARATOR: char = '.';

/// `name` as `(namespace, name)` when it is a flattened namespace tool's name.
pub(super) fn split_namespace(name: &str) -> (Option<&str>, &str) {
    match name.split_once(NAMESPACE_SEPARATOR) {
        Some((namespace, name)) => (Some(namespace), name),
        None => (None, name),
    }
}

/// A tool, namespace or function name: 1 to 64 letters, digits, `_` or `-`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The client's tools as they are parsed: every tool in request order, flattened.
#[derive(Debug, Default)]
pub(super) struct Tools {
    pub(super) specs: Vec<ToolSpec>,
}

impl Tools {
    /// Parses a `tools` array: the request's, or an `additional_tools` item's, whose
    /// tools replace earlier ones of the same name (they are the current definition).
    /// `param` names the array.
    pub(super) fn add(
        &mut self,
        value: Option<&Value>,
        param: &str,
        limits: &RequestLimits,
    ) -> Result<(), RequestError> {
        let tools = match value {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(tools)) => tools,
            Some(_) => return Err(RequestError::invalid_type(param, "an array")),
        };
        let mut seen: HashSet<String> = HashSet::new();
        for (i, tool) in tools.iter().enumerate() {
            let param = format!("{param}[{i}]");
            let Value::Object(tool) = tool else {
                return Err(RequestError::invalid_type(&param, "an object"));
            };
            let mut found = Vec::new();
            match tool_type(tool, &param)? {
                None | Some("function") => found.push(function(tool, &param, None)?),
                Some("custom") => found.push(custom(tool, &param, None)?),
                Some("namespace") => namespace(tool, &param, &mut found)?,
                // Hosted and other typed tools: see the module docs.
                Some(_) => {}
            }
            for (spec, name_param) in found {
                if !seen.insert(spec.name.clone()) {
                    return Err(RequestError::invalid_value(
                        format!("Duplicate tool name '{}'.", spec.name),
                        name_param,
                    ));
                }
                match self.specs.iter_mut().find(|t| t.name == spec.name) {
                    Some(earlier) => *earlier = spec,
                    None => self.specs.push(spec),
                }
            }
            if self.specs.len() > limits.max_tools {
                return Err(RequestError::invalid_value(
                    format!("At most {} tools are accepted.", limits.max_tools),
                    "tools",
                ));
            }
        }
        Ok(())
    }
}

fn tool_type<'a>(
    tool: &'a Map<String, Value>,
    param: &str,
) -> Result<Option<&'a str>, RequestError> {
    match tool.get("type") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(kind)) => Ok(Some(kind)),
        Some(_) => Err(RequestError::invalid_type(
            &format!("{param}.type"),
            "a string",
        )),
    }
}

/// A tool's `name`, checked, qualified by `namespace` when it is in one; with the param
/// that names it.
fn name(
    tool: &Map<String, Value>,
    param: &str,
    namespace: Option<&str>,
) -> Result<(String, String), RequestError> {
    let name_param = format!("{param}.name");
    match tool.get("name") {
        Some(Value::String(name)) if valid_name(name) => {
            let name = match namespace {
                Some(namespace) => format!("{namespace}{NAMESPACE_SEPARATOR}{name}"),
                None => name.clone(),
            };
            Ok((name, name_param))
        }
        Some(Value::String(_)) => Err(RequestError::invalid_value(
            "Invalid tool name: use 1 to 64 letters, digits, '_' or '-'.",
            name_param,
        )),
        None | Some(Value::Null) => Err(RequestError::missing(
            "Missing required parameter: tool name.",
            name_param,
        )),
        Some(_) => Err(RequestError::invalid_type(&name_param, "a string")),
    }
}

fn description(tool: &Map<String, Value>, param: &str) -> Result<String, RequestError> {
    match tool.get("description") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(description)) => Ok(description.clone()),
        Some(_) => Err(RequestError::invalid_type(
            &format!("{param}.description"),
            "a string",
        )),
    }
}

/// A function tool: `name`, `description`, `parameters` (`strict`, `defer_loading` and
/// the rest are accepted and do not matter here).
fn function(
    tool: &Map<String, Value>,
    param: &str,
    namespace: Option<&str>,
) -> Result<(ToolSpec, String), RequestError> {
    let (name, name_param) = name(tool, param, namespace)?;
    let parameters = match tool.get("parameters") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(parameters @ Value::Object(_)) => parameters.clone(),
        Some(_) => {
            return Err(RequestError::invalid_type(
                &format!("{param}.parameters"),
                "an object",
            ));
        }
    };
    let spec = ToolSpec::function(name, description(tool, param)?, parameters);
    Ok((spec, name_param))
}

/// A custom (freeform) tool: raw text input, free or in a grammar.
fn custom(
    tool: &Map<String, Value>,
    param: &str,
    namespace: Option<&str>,
) -> Result<(ToolSpec, String), RequestError> {
    let (name, name_param) = name(tool, param, namespace)?;
    let format_param = format!("{param}.format");
    let grammar = match tool.get("format") {
        None | Some(Value::Null) => None,
        Some(Value::Object(format)) => match format.get("type").and_then(Value::as_str) {
            Some("text") => None,
            Some("grammar") => {
                let field = |key: &str| match format.get(key) {
                    Some(Value::String(text)) => Ok(text.clone()),
                    None | Some(Value::Null) => Err(RequestError::missing(
                        format!("Missing required parameter: grammar {key}."),
                        format!("{format_param}.{key}"),
                    )),
                    Some(_) => Err(RequestError::invalid_type(
                        &format!("{format_param}.{key}"),
                        "a string",
                    )),
                };
                Some(Grammar {
                    syntax: field("syntax")?,
                    definition: field("definition")?,
                })
            }
            _ => {
                return Err(RequestError::invalid_value(
                    "Invalid custom tool format: use 'text' or 'grammar'.",
                    format!("{format_param}.type"),
                ));
            }
        },
        Some(_) => return Err(RequestError::invalid_type(&format_param, "an object")),
    };
    let spec = ToolSpec::freeform(name, description(tool, param)?, grammar);
    Ok((spec, name_param))
}

/// A namespace's function and custom tools, named `<namespace>.<name>`.
fn namespace(
    tool: &Map<String, Value>,
    param: &str,
    found: &mut Vec<(ToolSpec, String)>,
) -> Result<(), RequestError> {
    let (namespace, _) = name(tool, param, None)?;
    let tools_param = format!("{param}.tools");
    let Some(Value::Array(tools)) = tool.get("tools") else {
        return Err(RequestError::invalid_type(&tools_param, "an array"));
    };
    for (j, child) in tools.iter().enumerate() {
        let param = format!("{tools_param}[{j}]");
        let Value::Object(child) = child else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        match tool_type(child, &param)? {
            None | Some("function") => found.push(function(child, &param, Some(&namespace))?),
            Some("custom") => found.push(custom(child, &param, Some(&namespace))?),
            Some(_) => {}
        }
    }
    Ok(())
}

/// `tool_choice`: `none`, `auto`, `required`; `{type: "function" | "custom", name}` (a
/// namespace's tool by its qualified name, or with `namespace`); `{type: "allowed_tools",
/// mode, tools}`, which keeps only the listed tools in `tools`; a hosted tool's choice
/// (`{type: "web_search_preview"}`, …) is the default, as hosted tools are not offered.
/// The default is `auto` with tools, `none` without.
pub(super) fn tool_choice(
    value: Option<&Value>,
    tools: &mut Vec<ToolSpec>,
) -> Result<ToolChoice, RequestError> {
    let default = |tools: &[ToolSpec]| {
        if tools.is_empty() {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        }
    };
    let choice = match value {
        None | Some(Value::Null) => return Ok(default(tools)),
        Some(Value::String(mode)) => match mode.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            _ => {
                return Err(RequestError::invalid_value(
                    "Invalid value for tool_choice: use none, auto, required or a tool.",
                    "tool_choice",
                ));
            }
        },
        Some(Value::Object(choice)) => match choice.get("type").and_then(Value::as_str) {
            Some("function" | "custom") => {
                ToolChoice::Named(named_tool(choice, "tool_choice", tools)?)
            }
            Some("allowed_tools") => allowed_tools(choice, tools)?,
            Some(_) => return Ok(default(tools)),
            None => {
                return Err(RequestError::missing(
                    "Missing required parameter: tool_choice.type.",
                    "tool_choice.type",
                ));
            }
        },
        Some(_) => {
            return Err(RequestError::invalid_type(
                "tool_choice",
                "a string or an object",
            ));
        }
    };
    tool_choice_with(choice, tools)
}

/// The offered tool a `{type, name, namespace?}` object names.
fn named_tool(
    choice: &Map<String, Value>,
    param: &str,
    tools: &[ToolSpec],
) -> Result<String, RequestError> {
    let name_param = format!("{param}.name");
    let Some(name) = choice.get("name").and_then(Value::as_str) else {
        return Err(RequestError::missing(
            "Missing required parameter: tool name.",
            name_param,
        ));
    };
    let name = match choice.get("namespace").and_then(Value::as_str) {
        Some(namespace) => format!("{namespace}{NAMESPACE_SEPARATOR}{name}"),
        None => name.to_owned(),
    };
    if !tools.iter().any(|t| t.name == name) {
        let shown: String = name.chars().take(80).collect();
        return Err(RequestError::invalid_value(
            format!("{param} names '{shown}', which is not among the tools."),
            name_param,
        ));
    }
    Ok(name)
}

/// `allowed_tools`: only the listed function and custom tools stay offered (hosted ones
/// in the list are not offered anyway); `mode` `required` or `auto` (the default).
fn allowed_tools(
    choice: &Map<String, Value>,
    tools: &mut Vec<ToolSpec>,
) -> Result<ToolChoice, RequestError> {
    let Some(Value::Array(listed)) = choice.get("tools") else {
        return Err(RequestError::invalid_type("tool_choice.tools", "an array"));
    };
    let mut allowed = HashSet::new();
    for (j, entry) in listed.iter().enumerate() {
        let param = format!("tool_choice.tools[{j}]");
        let Value::Object(entry) = entry else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        if matches!(
            entry.get("type").and_then(Value::as_str),
            None | Some("function" | "custom")
        ) {
            allowed.insert(named_tool(entry, &param, tools)?);
        }
    }
    tools.retain(|tool| allowed.contains(&tool.name));
    let required = match choice.get("mode") {
        None | Some(Value::Null) => false,
        Some(Value::String(mode)) if mode == "auto" => false,
        Some(Value::String(mode)) if mode == "required" => true,
        Some(_) => {
            return Err(RequestError::invalid_value(
                "Invalid value for tool_choice.mode: use auto or required.",
                "tool_choice.mode",
            ));
        }
    };
    Ok(match (tools.is_empty(), required) {
        (true, _) => ToolChoice::None,
        (false, true) => ToolChoice::Required,
        (false, false) => ToolChoice::Auto,
    })
}
