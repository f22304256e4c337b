//! `input`: a string (one user message) or a list of items, reduced to the neutral
//! conversation's messages.
//!
//! | item `type` | becomes |
//! |---|---|
//! | `message` (or no `type`, with a `role`): roles `user`, `assistant`, `system`, `developer`; `content` a string or parts `input_text`, `output_text`, `refusal`, `input_image`, `input_file`, `input_audio` | a message in place (images, files and audio as attachments) |
//! | `function_call` (`call_id`, `name`, `arguments`, `namespace`), `custom_tool_call` (`call_id`, `name`, `input`) | a tool call of the assistant message before it (a new one when the item before is not the assistant's) |
//! | `function_call_output`, `custom_tool_call_output` (`call_id`, `output`: a string or `input_text` / `input_image` / `input_file` parts) | the result of that call, which must come earlier |
//! | `additional_tools` (`tools`) | its tools join the request's (replacing any of the same name) |
//! | `reasoning` | nothing: earlier reasoning (its summary, `content`, `encrypted_content`) is opaque to the agent, which reasons afresh |
//! | `item_reference` (or an item with an `id` and neither `type` nor `role`) | nothing, and `item_reference` is listed in [`Request::ignored`](crate::api::Request::ignored): it points at a stored item, and nothing is stored here. The AI SDK, storing by default, sends the assistant's earlier messages and reasoning this way (its calls and their outputs it sends whole); a 400 would fail its every tool round, while without them the agent still has the calls and their results. A client that wants them kept sends `store: false` and gets them whole. |
//! | any other type: hosted-tool artefacts (`web_search_call`, `file_search_call`, `computer_call(_output)`, `image_generation_call`, `code_interpreter_call`, `mcp_*`, `tool_search_call` / `_output`), calls of tool types never offered here (`local_shell_call(_output)`, `shell_call(_output)`, `apply_patch_call(_output)`), compaction and program items, types added later | nothing: they record the work of tools the agent cannot call or state it cannot read. Rejecting them would make every later request of the conversation fail too, as a client resends its whole history each time. |

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::tools::{NAMESPACE_SEPARATOR, Tools};
use crate::api::parse::{base64_size, data_url};
use crate::api::{RequestError, RequestLimits, RequestProblem};
use crate::conversation::{Attachment, AttachmentKind, HistoryToolCall, Message, Part, Role};

/// Appends the messages of `input` to `messages`; tools of `additional_tools` items join
/// `tools`. Returns how many item references were dropped.
pub(super) fn parse_input(
    value: Option<&Value>,
    limits: &RequestLimits,
    messages: &mut Vec<Message>,
    tools: &mut Tools,
) -> Result<usize, RequestError> {
    let items = match value {
        None | Some(Value::Null) => {
            return Err(RequestError::missing(
                "Missing required parameter: 'input'.",
                "input",
            ));
        }
        Some(Value::String(text)) => {
            messages.push(Message::new(Role::User, text.as_str()));
            return Ok(0);
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(RequestError::invalid_type(
                "input",
                "a string or an array of items",
            ));
        }
    };
    if items.is_empty() {
        return Err(RequestError::invalid_value(
            "'input' must contain at least one item.",
            "input",
        ));
    }
    if items.len() > limits.max_messages {
        return Err(RequestError::invalid_value(
            format!("At most {} input items are accepted.", limits.max_messages),
            "input",
        ));
    }
    let mut call_ids: HashSet<String> = HashSet::new();
    let mut references = 0;
    for (i, item) in items.iter().enumerate() {
        let param = format!("input[{i}]");
        let Value::Object(item) = item else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        let kind = match item.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::String(kind)) => Some(kind.as_str()),
            Some(_) => {
                return Err(RequestError::invalid_type(
                    &format!("{param}.type"),
                    "a string",
                ));
            }
        };
        match kind {
            Some("message") => messages.push(message(item, &param, limits)?),
            None if !item.contains_key("role") && item.contains_key("id") => {
                references += 1;
            }
            None => messages.push(message(item, &param, limits)?),
            Some("function_call" | "custom_tool_call") => {
                let call = tool_call(item, &param, kind == Some("custom_tool_call"))?;
                call_ids.insert(call.id.clone());
                match messages.last_mut() {
                    Some(last) if last.role == Role::Assistant => last.tool_calls.push(call),
                    _ => messages.push(Message::assistant("", vec![call])),
                }
            }
            Some("function_call_output" | "custom_tool_call_output") => {
                messages.push(tool_output(item, &param, &call_ids, limits)?);
            }
            Some("additional_tools") => {
                tools.add(item.get("tools"), &format!("{param}.tools"), limits)?;
            }
            Some("item_reference") => references += 1,
            // Reasoning and everything else: see the module docs.
            Some(_) => {}
        }
    }
    Ok(references)
}

/// A string member, `None` when absent or `null`.
fn optional_str<'a>(
    item: &'a Map<String, Value>,
    key: &str,
    param: &str,
) -> Result<Option<&'a str>, RequestError> {
    match item.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(RequestError::invalid_type(
            &format!("{param}.{key}"),
            "a string",
        )),
    }
}

/// A required string member.
fn required_str<'a>(
    item: &'a Map<String, Value>,
    key: &str,
    param: &str,
) -> Result<&'a str, RequestError> {
    optional_str(item, key, param)?.ok_or_else(|| {
        RequestError::missing(
            format!("Missing required parameter: '{key}'."),
            format!("{param}.{key}"),
        )
    })
}

fn message(
    item: &Map<String, Value>,
    param: &str,
    limits: &RequestLimits,
) -> Result<Message, RequestError> {
    let role = match required_str(item, "role", param)? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "developer" => Role::Developer,
        other => {
            let other: String = other.chars().take(40).collect();
            return Err(RequestError::invalid_value(
                format!("Invalid role '{other}'."),
                format!("{param}.role"),
            ));
        }
    };
    let content = parts(item.get("content"), &format!("{param}.content"), limits)?;
    Ok(Message {
        content,
        ..Message::new(role, "")
    })
}

/// A `function_call` (JSON arguments) or `custom_tool_call` (raw text input).
fn tool_call(
    item: &Map<String, Value>,
    param: &str,
    custom: bool,
) -> Result<HistoryToolCall, RequestError> {
    let id = required_str(item, "call_id", param)?;
    let name = required_str(item, "name", param)?;
    let name = match optional_str(item, "namespace", param)? {
        Some(namespace) => format!("{namespace}{NAMESPACE_SEPARATOR}{name}"),
        None => name.to_owned(),
    };
    let arguments = if custom {
        optional_str(item, "input", param)?
            .unwrap_or_default()
            .to_owned()
    } else {
        match item.get("arguments") {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(Value::String(arguments)) => arguments.clone(),
            // Some clients send an object; keep its JSON text.
            Some(arguments @ Value::Object(_)) => arguments.to_string(),
            Some(_) => {
                return Err(RequestError::invalid_type(
                    &format!("{param}.arguments"),
                    "a string",
                ));
            }
        }
    };
    Ok(HistoryToolCall::new(id, name, arguments))
}

/// A `function_call_output` or `custom_tool_call_output`: the result of an earlier call.
fn tool_output(
    item: &Map<String, Value>,
    param: &str,
    call_ids: &HashSet<String>,
    limits: &RequestLimits,
) -> Result<Message, RequestError> {
    let id = required_str(item, "call_id", param)?;
    if !call_ids.contains(id) {
        return Err(RequestError::invalid_value(
            "No tool call found for this output's call_id: an output must follow its call.",
            format!("{param}.call_id"),
        ));
    }
    let content = parts(item.get("output"), &format!("{param}.output"), limits)?;
    Ok(Message {
        content,
        ..Message::tool_result(id, "")
    })
}

/// The parts of a message's `content` or a tool output: a string, `null`, or an array of
/// parts.
fn parts(
    value: Option<&Value>,
    param: &str,
    limits: &RequestLimits,
) -> Result<Vec<Part>, RequestError> {
    let parts = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(text)) if text.is_empty() => return Ok(Vec::new()),
        Some(Value::String(text)) => return Ok(vec![Part::Text(text.clone())]),
        Some(Value::Array(parts)) => parts,
        Some(_) => {
            return Err(RequestError::invalid_type(
                param,
                "a string or an array of content parts",
            ));
        }
    };
    let mut out = Vec::with_capacity(parts.len());
    for (j, part) in parts.iter().enumerate() {
        let param = format!("{param}[{j}]");
        let Value::Object(part) = part else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        match required_str(part, "type", &param)? {
            "input_text" | "output_text" | "text" => {
                out.push(Part::Text(required_str(part, "text", &param)?.to_owned()));
            }
            "refusal" => {
                if let Some(refusal) = optional_str(part, "refusal", &param)? {
                    out.push(Part::Text(refusal.to_owned()));
                }
            }
            kind @ ("input_image" | "input_file" | "input_audio") => {
                if limits.reject_attachments {
                    return Err(RequestError::new(
                        RequestProblem::UnsupportedContent,
                        format!(
                            "Content parts of type '{kind}' are not supported: cursor-agent accepts text only."
                        ),
                        Some(param),
                    ));
                }
                out.push(Part::Attachment(attachment(kind, part)));
            }
            other => {
                let other: String = other.chars().take(40).collect();
                return Err(RequestError::invalid_value(
                    format!("Unknown content part type '{other}'."),
                    format!("{param}.type"),
                ));
            }
        }
    }
    Ok(out)
}

/// What an image, file or audio part is: its media type and size from a `data:` URL or
/// base64 data, its file name, web address or file id otherwise. Whatever cannot be read
/// stays unknown: a part the agent will not see is never a reason to reject the request.
fn attachment(kind: &str, part: &Map<String, Value>) -> Attachment {
    let text = |key: &str| part.get(key).and_then(Value::as_str);
    let mut found = Attachment {
        kind: AttachmentKind::Image,
        media_type: None,
        size: None,
        name: None,
    };
    let data = match kind {
        "input_audio" => {
            found.kind = AttachmentKind::Audio;
            let audio = part.get("input_audio").and_then(Value::as_object);
            let field = |key: &str| audio.and_then(|a| a.get(key)).and_then(Value::as_str);
            found.media_type = field("format").map(|format| format!("audio/{format}"));
            found.size = field("data").map(base64_size);
            return found;
        }
        "input_file" => {
            found.kind = AttachmentKind::Document;
            found.name = text("filename")
                .or_else(|| text("file_url"))
                .or_else(|| text("file_id"))
                .map(str::to_owned);
            text("file_data")
        }
        _ => {
            let url = text("image_url");
            if url.is_none_or(|url| url.starts_with("http://") || url.starts_with("https://")) {
                found.name = url.or_else(|| text("file_id")).map(str::to_owned);
                return found;
            }
            url
        }
    };
    match data.map(|data| (data, data_url(data))) {
        Some((_, Some((media_type, size)))) => {
            found.media_type = media_type;
            found.size = Some(size);
        }
        // Bare base64 (a file's `file_data` may come without the `data:` prefix).
        Some((data, None)) => found.size = Some(base64_size(data)),
        None => {}
    }
    found
}
