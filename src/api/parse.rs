//! What every dialect's request parser does the same way: reading the body into a JSON
//! object within the limits, the model-name rules, optional booleans, and the sizes of
//! inline attachments.
//!
//! # Model names
//!
//! `model` and `cursorModel` (a non-standard field some clients send to pick the Cursor
//! model while echoing their own name) are each at most 256 bytes (provider prefix
//! included) and hold no control characters, whichever of them is used: `model` is echoed
//! in every chunk, and an unbounded name would multiply the response. The name that
//! reaches `--model` — `cursorModel`, else `model` after its provider prefix (the part up
//! to the last `/`) — must be a Cursor model designation (see
//! [`Request::model`](super::Request::model)); a `model` with nothing after its prefix
//! (`"x/"`) is rejected rather than read as `auto`. Only an absent, `null` or blank `model`
//! (without `cursorModel`) means `auto`. The error's `param` names the field that was
//! wrong.

use serde_json::{Map, Value};

use super::request::{RequestError, RequestLimits, RequestProblem};
use super::surrogates;
use crate::conversation::{Role, ToolChoice, ToolSpec};

/// Reads a request body into its top-level JSON object: over the size limit is a 413,
/// anything but a JSON object a 400. A lone UTF-16 surrogate escape reads as U+FFFD
/// instead of failing the whole body.
pub(crate) fn read_object(
    body: &[u8],
    limits: &RequestLimits,
) -> Result<Map<String, Value>, RequestError> {
    if body.len() > limits.max_body_bytes {
        return Err(RequestError::new(
            RequestProblem::BodyTooLarge,
            format!(
                "The request body is {} bytes; the limit is {}.",
                body.len(),
                limits.max_body_bytes
            ),
            None,
        ));
    }
    let fixed = surrogates::replace_lone_surrogates(body);
    let value: Value = serde_json::from_slice(fixed.as_deref().unwrap_or(body)).map_err(|e| {
        RequestError::new(
            RequestProblem::InvalidJson,
            format!(
                "We could not parse the JSON body of your request ({}).",
                json_problem(&e)
            ),
            None,
        )
    })?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(RequestError::new(
            RequestProblem::InvalidType,
            "The request body must be a JSON object.",
            None,
        )),
    }
}

/// A short, retry-safe description of a JSON syntax error.
fn json_problem(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match error.classify() {
        Category::Eof => "the body ends early".to_owned(),
        Category::Syntax if error.to_string().contains("recursion limit") => {
            "it is nested too deeply".to_owned()
        }
        _ => format!("line {} column {}", error.line(), error.column()),
    }
}

/// The model for `--model` and the model to echo, from `model` and `cursorModel` (see the
/// module docs).
pub(crate) fn models(object: &Map<String, Value>) -> Result<(String, String), RequestError> {
    // Both fields are bounded and printable whichever one is used: `model` is echoed in
    // every chunk, `cursorModel` becomes an argument.
    let sent_model = model_field(object, "model")?;
    let cursor_model = model_field(object, "cursorModel")?;
    let model = if !cursor_model.is_empty() {
        check_model(&cursor_model, "cursorModel")?;
        cursor_model
    } else if sent_model.is_empty() {
        "auto".to_owned()
    } else {
        let name = sent_model
            .rsplit_once('/')
            .map_or(sent_model.as_str(), |(_, name)| name);
        if name.trim().is_empty() {
            return Err(RequestError::invalid_value(
                "Invalid model name: nothing follows the provider prefix.",
                "model",
            ));
        }
        check_model(name, "model")?;
        name.to_owned()
    };
    let response_model = if sent_model.is_empty() {
        model.clone()
    } else {
        sent_model
    };
    Ok((model, response_model))
}

/// The most bytes of `model` and of `cursorModel`, provider prefix included.
const MAX_MODEL_BYTES: usize = 256;

/// A model field, trimmed (empty when absent or `null`): at most [`MAX_MODEL_BYTES`] and
/// free of control characters, because it is echoed in every chunk or passed to the CLI.
fn model_field(object: &Map<String, Value>, param: &str) -> Result<String, RequestError> {
    let model = match object.get(param) {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::String(model)) => model.trim(),
        Some(_) => return Err(RequestError::invalid_type(param, "a string")),
    };
    if model.len() > MAX_MODEL_BYTES {
        return Err(RequestError::invalid_value(
            format!("Invalid model name: at most {MAX_MODEL_BYTES} bytes."),
            param,
        ));
    }
    if model.chars().any(char::is_control) {
        return Err(RequestError::invalid_value(
            "Invalid model name: control characters are not allowed.",
            param,
        ));
    }
    Ok(model.to_owned())
}

/// Model names become an argument of `--model`: letters, digits, `.`, `_`, `-`, `:` and
/// Cursor's bracket parameters (`name[key=value,key=value]`), starting with a letter or digit
/// so that no model can be read as a flag. (A provider prefix is stripped before this.)
/// `param` is the field it came from.
fn check_model(model: &str, param: &str) -> Result<(), RequestError> {
    let (name, params) = match model.split_once('[') {
        Some((name, rest)) => match rest.strip_suffix(']') {
            Some(params) => (name, Some(params)),
            None => ("", None),
        },
        None => (model, None),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'));
    let params_ok = params.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 256
            && p.split(',').all(|kv| {
                kv.split_once('=').is_some_and(|(k, v)| {
                    !k.is_empty()
                        && !v.is_empty()
                        && k.chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
                        && v.chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                })
            })
    });
    if name_ok && params_ok {
        Ok(())
    } else {
        Err(RequestError::invalid_value(
            "Invalid model name: use letters, digits, '.', '_', '-', ':' and optional [key=value,...] parameters.",
            param,
        ))
    }
}

/// The `messages` list: required, an array of at least one and at most
/// [`RequestLimits::max_messages`] entries.
pub(crate) fn message_list<'v>(
    value: Option<&'v Value>,
    limits: &RequestLimits,
) -> Result<&'v [Value], RequestError> {
    let messages = match value {
        None | Some(Value::Null) => {
            return Err(RequestError::missing(
                "Missing required parameter: 'messages'.",
                "messages",
            ));
        }
        Some(Value::Array(messages)) => messages,
        Some(_) => return Err(RequestError::invalid_type("messages", "an array")),
    };
    if messages.is_empty() {
        return Err(RequestError::invalid_value(
            "'messages' must contain at least one message.",
            "messages",
        ));
    }
    if messages.len() > limits.max_messages {
        return Err(RequestError::invalid_value(
            format!("At most {} messages are accepted.", limits.max_messages),
            "messages",
        ));
    }
    Ok(messages)
}

/// A message's `role`: one of `roles`, each a name in the dialect and its neutral role.
/// `param` is the message's path (`messages[3]`).
pub(crate) fn message_role(
    message: &Map<String, Value>,
    param: &str,
    roles: &[(&str, Role)],
) -> Result<Role, RequestError> {
    let Some(name) = message.get("role").and_then(Value::as_str) else {
        return Err(RequestError::missing(
            "Missing required parameter: role.",
            format!("{param}.role"),
        ));
    };
    if let Some((_, role)) = roles.iter().find(|(known, _)| *known == name) {
        return Ok(*role);
    }
    let name: String = name.chars().take(40).collect();
    let known: Vec<&str> = roles.iter().map(|(known, _)| *known).collect();
    Err(RequestError::invalid_value(
        format!("Invalid role '{name}': use {}.", known.join(", ")),
        format!("{param}.role"),
    ))
}

/// The `tools` list: empty when absent or `null`, else an array of at most
/// [`RequestLimits::max_tools`] entries.
pub(crate) fn tool_list<'v>(
    value: Option<&'v Value>,
    limits: &RequestLimits,
) -> Result<&'v [Value], RequestError> {
    let tools = match value {
        None | Some(Value::Null) => return Ok(&[]),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(RequestError::invalid_type("tools", "an array")),
    };
    if tools.len() > limits.max_tools {
        return Err(RequestError::invalid_value(
            format!("At most {} tools are accepted.", limits.max_tools),
            "tools",
        ));
    }
    Ok(tools)
}

/// The optional member `key` of an object at `path` (`tools[2]`; empty at the top
/// level), which must be of the type `read` accepts (`expected` names it): `None` when
/// absent or `null`; a wrong type is an error naming `path.key`.
pub(crate) fn member<'v, T>(
    object: &'v Map<String, Value>,
    key: &str,
    path: &str,
    expected: &str,
    read: impl FnOnce(&'v Value) -> Option<T>,
) -> Result<Option<T>, RequestError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value).map(Some).ok_or_else(|| {
            let param = if path.is_empty() {
                key.to_owned()
            } else {
                format!("{path}.{key}")
            };
            RequestError::invalid_type(&param, expected)
        }),
    }
}

/// An optional boolean member: `None` when absent or `null`.
pub(crate) fn optional_bool(
    object: &Map<String, Value>,
    key: &str,
) -> Result<Option<bool>, RequestError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(RequestError::invalid_type(key, "a boolean")),
    }
}

/// The names in `fields` that `object` holds with a value other than `null`: the fields
/// a request sent that the agent cannot honour ([`Request::ignored`](super::Request::ignored)).
/// An optional string field that identifies something (a key, an id): absent, `null`
/// and `""` are `None`; another type is a 400. Bounded, like model names, because it is
/// kept.
pub(crate) fn optional_id(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, RequestError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) if text.len() > MAX_ID_BYTES => Err(RequestError::invalid_value(
            format!("'{field}' is longer than {MAX_ID_BYTES} bytes."),
            field,
        )),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(RequestError::invalid_type(field, "a string")),
    }
}

/// The longest key or id kept from a request ([`optional_id`]).
pub(crate) const MAX_ID_BYTES: usize = 1024;

pub(crate) fn present(object: &Map<String, Value>, fields: &[&'static str]) -> Vec<&'static str> {
    fields
        .iter()
        .copied()
        .filter(|field| object.get(*field).is_some_and(|value| !value.is_null()))
        .collect()
}

/// `choice`, unless it requires a tool and there are none: a 400 naming `tool_choice`.
pub(crate) fn tool_choice_with(
    choice: ToolChoice,
    tools: &[ToolSpec],
) -> Result<ToolChoice, RequestError> {
    if tools.is_empty() && matches!(choice, ToolChoice::Required | ToolChoice::Named(_)) {
        return Err(RequestError::invalid_value(
            "tool_choice requires tools.",
            "tool_choice",
        ));
    }
    Ok(choice)
}

/// The media type and decoded size of a `data:` URL (`data:image/png;base64,…`), or
/// `None` when `url` is not one. The bytes are not decoded, only counted.
pub(crate) fn data_url(url: &str) -> Option<(Option<String>, u64)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let media_type = header
        .split(';')
        .next()
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    let size = if header.ends_with(";base64") {
        base64_size(data)
    } else {
        data.len() as u64
    };
    Some((media_type, size))
}

/// The number of bytes `data` (base64, padding and white space allowed) decodes to.
pub(crate) fn base64_size(data: &str) -> u64 {
    let digits = data
        .bytes()
        .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'))
        .count() as u64;
    digits * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_give_their_media_type_and_decoded_size() {
        assert_eq!(
            data_url("data:image/png;base64,iVBORw0KGgo="),
            Some((Some("image/png".to_owned()), 8))
        );
        assert_eq!(
            data_url("data:application/pdf;name=a.pdf;base64,JVBE\nRi0x"),
            Some((Some("application/pdf".to_owned()), 6))
        );
        assert_eq!(data_url("data:,hello"), Some((None, 5)));
        assert_eq!(data_url("https://example.com/a.png"), None);
        assert_eq!(data_url("data:image/png;base64"), None);
        assert_eq!(base64_size(""), 0);
        assert_eq!(base64_size("QUJD"), 3);
        assert_eq!(base64_size("QUI="), 2);
        assert_eq!(base64_size("QQ=="), 1);
    }
}
