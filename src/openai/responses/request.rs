//! Responses request bodies (`POST /v1/responses`): parsed, validated and reduced to the
//! neutral [`Request`].
//!
//! Honoured: `model` (and `cursorModel`; the rules are in [`api`](crate::api)'s parser
//! notes), `input` (see [`input`](super::input) for every item type), `instructions` (a
//! first system message), `tools` and `tool_choice` (see [`tools`](super::tools)),
//! `parallel_tool_calls`, `stream`, `reasoning` (`effort`, `summary`; the summary decides
//! whether reasoning is shown: see [`OutputOptions`](super::OutputOptions)), `text.format`
//! (`text`, `json_object`, `json_schema` with its `name` and `schema`).
//!
//! Accepted but not honoured (listed in [`Request::ignored`]): `max_output_tokens` (it
//! never bounds the agent), `max_tool_calls`, `temperature`, `top_p`, `top_logprobs`,
//! `truncation`, `store` (nothing is ever stored), `include` (there is no encrypted
//! reasoning to include), `prompt_cache_key`, `prompt_cache_retention`, `client_metadata`,
//! `metadata`, `user`, `safety_identifier`, `service_tier`, `stream_options`,
//! `text.verbosity`. Unknown fields are ignored: clients add their own, and a 400 for one
//! would fail every request of that client.
//!
//! Rejected with a 400 naming the field, because each needs state this server does not
//! keep, and ignoring it would silently answer a different question:
//! `previous_response_id`, `conversation`, `prompt` (a stored prompt) and `background:
//! true`. (Codex sends none of them: it resends the whole conversation every time.) An
//! `item_reference` in `input` is dropped instead (see [`input`](super::input) for why).
//! Malformed JSON, wrong types, unknown roles or content parts, invalid tool names and a
//! tool output answering no earlier call are 400s naming their `param` too; an
//! over-limit body is a 413.

use serde_json::{Map, Value};

use super::input::parse_input;
use super::tools::{Tools, tool_choice};
use crate::api::parse::{models, optional_bool, optional_id, present, read_object};
use crate::api::{
    Continuation, Effort, Reasoning, ReasoningDisplay, Request, RequestError, RequestLimits,
    Thinking,
};
use crate::conversation::{Conversation, Message, OutputFormat, Role};

/// Fields accepted and not honoured (see the module docs).
const IGNORED: &[&str] = &[
    "max_output_tokens",
    "max_tool_calls",
    "temperature",
    "top_p",
    "top_logprobs",
    "truncation",
    "store",
    "include",
    "prompt_cache_key",
    "prompt_cache_retention",
    "client_metadata",
    "metadata",
    "user",
    "safety_identifier",
    "service_tier",
    "stream_options",
];

/// Fields that need state kept between requests (see the module docs).
const STATEFUL: &[(&str, &str)] = &[
    (
        "conversation",
        "'conversation' is not supported: this server keeps no conversations. Send the whole conversation in 'input'.",
    ),
    (
        "prompt",
        "'prompt' is not supported: this server keeps no stored prompts. Send the prompt in 'instructions' and 'input'.",
    ),
];

/// Parses and validates a Responses request body.
pub fn parse_request(body: &[u8], limits: &RequestLimits) -> Result<Request, RequestError> {
    let object = read_object(body, limits)?;
    for (field, message) in STATEFUL {
        if object.get(*field).is_some_and(|v| !v.is_null()) {
            return Err(RequestError::invalid_value(*message, *field));
        }
    }
    if optional_bool(&object, "background")? == Some(true) {
        return Err(RequestError::invalid_value(
            "'background' is not supported: responses are answered while the request waits, and none are stored to poll.",
            "background",
        ));
    }
    let (model, response_model) = models(&object)?;
    let stream = optional_bool(&object, "stream")?.unwrap_or(false);
    let parallel_tool_calls = optional_bool(&object, "parallel_tool_calls")?.unwrap_or(true);
    let mut messages = Vec::new();
    match object.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => messages.push(Message::new(Role::System, text.as_str())),
        Some(_) => return Err(RequestError::invalid_type("instructions", "a string")),
    }
    let mut tools = Tools::default();
    tools.add(object.get("tools"), "tools", limits)?;
    let references = parse_input(object.get("input"), limits, &mut messages, &mut tools)?;
    if messages.is_empty() {
        // Every item was one the agent cannot read (reasoning, references, hosted-tool
        // artefacts) and there are no instructions: nothing to answer, as a Chat
        // Completions request without messages, which is refused the same way.
        return Err(RequestError::invalid_value(
            "'input' holds no message, tool call or tool output the agent can read, and there are no 'instructions': include at least one message.",
            "input",
        ));
    }
    let mut tools = tools.specs;
    let tool_choice = tool_choice(object.get("tool_choice"), &mut tools)?;
    let reasoning = reasoning(object.get("reasoning"))?;
    let (output_format, verbosity) = text(object.get("text"))?;
    let mut ignored = present(&object, IGNORED);
    if verbosity {
        ignored.push("text.verbosity");
    }
    if references > 0 {
        ignored.push("item_reference");
    }
    let continuation = Continuation {
        conversation_key: optional_id(&object, "prompt_cache_key")?,
        previous_response_id: optional_id(&object, "previous_response_id")?,
    };
    Ok(Request {
        model,
        response_model,
        stream,
        conversation: Conversation {
            messages,
            tools,
            tool_choice,
            parallel_tool_calls,
            output_format,
        },
        reasoning,
        // The Responses API always reports usage.
        include_usage: true,
        ignored,
        continuation,
    })
}

/// `reasoning`: `effort` (`none` turns reasoning off; a value not known here still turns
/// it on) and `summary` (`auto`, `concise`, `detailed`, or a value not known here: any
/// asks for it to be shown); `generate_summary` is the older name of `summary`.
fn reasoning(value: Option<&Value>) -> Result<Reasoning, RequestError> {
    let reasoning = match value {
        None | Some(Value::Null) => return Ok(Reasoning::default()),
        Some(Value::Object(reasoning)) => reasoning,
        Some(_) => return Err(RequestError::invalid_type("reasoning", "an object")),
    };
    let string = |key: &str| -> Result<Option<&str>, RequestError> {
        match reasoning.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(RequestError::invalid_type(
                &format!("reasoning.{key}"),
                "a string",
            )),
        }
    };
    let effort = string("effort")?.map(|effort| match effort {
        "none" => Some(Effort::None),
        "minimal" => Some(Effort::Minimal),
        "low" => Some(Effort::Low),
        "medium" => Some(Effort::Medium),
        "high" => Some(Effort::High),
        "xhigh" => Some(Effort::XHigh),
        "max" => Some(Effort::Max),
        _ => None,
    });
    let summary = match string("summary")? {
        Some(summary) => Some(summary),
        None => string("generate_summary")?,
    };
    Ok(Reasoning {
        thinking: match effort {
            None => Thinking::Unspecified,
            Some(Some(Effort::None)) => Thinking::Off,
            Some(_) => Thinking::On,
        },
        effort: effort.flatten(),
        budget_tokens: None,
        display: summary.map(|_| ReasoningDisplay::Summarized),
    })
}

/// `text`: the reply format, and whether a `verbosity` was given.
fn text(value: Option<&Value>) -> Result<(OutputFormat, bool), RequestError> {
    let text = match value {
        None | Some(Value::Null) => return Ok((OutputFormat::Text, false)),
        Some(Value::Object(text)) => text,
        Some(_) => return Err(RequestError::invalid_type("text", "an object")),
    };
    let verbosity = text.get("verbosity").is_some_and(|v| !v.is_null());
    let format = match text.get("format") {
        None | Some(Value::Null) => OutputFormat::Text,
        Some(Value::Object(format)) => output_format(format)?,
        Some(_) => return Err(RequestError::invalid_type("text.format", "an object")),
    };
    Ok((format, verbosity))
}

fn output_format(format: &Map<String, Value>) -> Result<OutputFormat, RequestError> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(OutputFormat::Text),
        Some("json_object") => Ok(OutputFormat::JsonObject),
        Some("json_schema") => {
            let schema = match format.get("schema") {
                Some(schema @ Value::Object(_)) => schema.clone(),
                None | Some(Value::Null) => {
                    return Err(RequestError::missing(
                        "Missing required parameter: 'text.format.schema'.",
                        "text.format.schema",
                    ));
                }
                Some(_) => {
                    return Err(RequestError::invalid_type(
                        "text.format.schema",
                        "an object",
                    ));
                }
            };
            let name = match format.get("name") {
                None | Some(Value::Null) => None,
                Some(Value::String(name)) => Some(name.clone()),
                Some(_) => return Err(RequestError::invalid_type("text.format.name", "a string")),
            };
            Ok(OutputFormat::JsonSchema { name, schema })
        }
        _ => Err(RequestError::invalid_value(
            "Invalid value for text.format.type: use text, json_object or json_schema.",
            "text.format.type",
        )),
    }
}
