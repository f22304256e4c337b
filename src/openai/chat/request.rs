//! Chat Completions request bodies: parsed, validated, and reduced to the neutral
//! [`Request`] — the model, the response options, and the
//! [`Conversation`](crate::conversation::Conversation) (messages, tools, `tool_choice`,
//! `parallel_tool_calls`) that everything downstream reads in no dialect's terms.
//!
//! Honoured: `model` (and the non-standard `cursorModel`, which wins when non-empty; the
//! rules are in [`api`](crate::api)'s parser notes), `messages` (roles `system` and
//! `developer` — anywhere, kept in place —, `user`, `assistant` with `tool_calls`, `tool`
//! with `tool_call_id`; content as a string or an array of parts), `tools` (function tools:
//! name, description, parameters), `tool_choice` (`none`, `auto`, `required`, or a named
//! function), `parallel_tool_calls`, `stream`, `stream_options.include_usage`.
//!
//! Accepted but not honoured, because the CLI has no way to pass them on (listed in
//! [`Request::ignored`]): `temperature`, `top_p`, `max_tokens`,
//! `max_completion_tokens`, `stop`, `seed`, `presence_penalty`, `frequency_penalty`,
//! `logit_bias`, `logprobs`, `top_logprobs`, `n` (only 1, or `1.0`), `response_format`,
//! `reasoning_effort`, `verbosity`, `user`, `metadata`, `store`, `service_tier`,
//! `prompt_cache_key`, `safety_identifier`, `modalities`, `prediction`, `audio`,
//! `web_search_options`. Unknown fields are ignored: OpenAI-compatible clients routinely
//! add their own.
//!
//! Accepted as real clients send it: assistant turns with `content: ""` or `null` next to
//! `tool_calls` and a non-standard `reasoning_content` (OpenCode); tool results as a string
//! or text parts; the `developer` role; lone UTF-16 surrogate escapes (`"\ud800"`, which
//! JavaScript clients write when they slice a string inside a character), read as U+FFFD
//! anywhere in the body. Image, audio and file parts (`image_url`, `input_image`, `image`,
//! `input_audio`, `file`) become [`Attachment`]s — kind, media type and decoded size, never
//! the bytes — which the agent is shown as a placeholder; with
//! [`RequestLimits::reject_attachments`] they are a 400 (`unsupported_content`) instead.
//! Rejected with a 400 naming the offending `param`: malformed JSON, wrong types, empty
//! `messages`, unknown roles, a `tool` message answering no earlier call, invalid tool
//! names, an unusable model name, an over-limit body (413).

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::api::parse::{
    data_url, member, message_list, message_role, models, optional_bool, optional_id, present,
    read_object, tool_choice_with, tool_list,
};
use crate::api::{Continuation, Reasoning, Request, RequestError, RequestLimits, RequestProblem};
use crate::conversation::{
    Attachment, AttachmentKind, Conversation, HistoryToolCall, Message, OutputFormat, Part, Role,
    ToolChoice, ToolSpec,
};

/// Fields accepted and ignored (see the module docs).
const IGNORED: &[&str] = &[
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "n",
    "response_format",
    "reasoning_effort",
    "verbosity",
    "user",
    "metadata",
    "store",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "modalities",
    "prediction",
    "audio",
    "web_search_options",
];

/// The roles a message may have.
const ROLES: &[(&str, Role)] = &[
    ("system", Role::System),
    ("developer", Role::Developer),
    ("user", Role::User),
    ("assistant", Role::Assistant),
    ("tool", Role::Tool),
];

/// Parses and validates a Chat Completions request body.
pub fn parse_request(body: &[u8], limits: &RequestLimits) -> Result<Request, RequestError> {
    let object = read_object(body, limits)?;
    let (model, response_model) = models(&object)?;
    let stream = optional_bool(&object, "stream")?.unwrap_or(false);
    let include_usage = match object.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(options)) => {
            if !stream {
                return Err(RequestError::invalid_value(
                    "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                    "stream_options",
                ));
            }
            match options.get("include_usage") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    return Err(RequestError::invalid_type(
                        "stream_options.include_usage",
                        "a boolean",
                    ));
                }
            }
        }
        Some(_) => return Err(RequestError::invalid_type("stream_options", "an object")),
    };
    if let Some(n) = object.get("n") {
        // `1.0` is 1: JavaScript clients do not tell integers from floats.
        if !n.is_null() && n.as_f64() != Some(1.0) {
            return Err(RequestError::invalid_value("Only n = 1 is supported.", "n"));
        }
    }
    let parallel_tool_calls = optional_bool(&object, "parallel_tool_calls")?.unwrap_or(true);
    let tools = parse_tools(object.get("tools"), limits)?;
    let tool_choice = parse_tool_choice(object.get("tool_choice"), &tools)?;
    let messages = parse_messages(object.get("messages"), limits)?;
    let ignored = present(&object, IGNORED);
    let continuation = Continuation {
        conversation_key: optional_id(&object, "prompt_cache_key")?,
        previous_response_id: None,
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
            output_format: OutputFormat::Text,
        },
        reasoning: Reasoning::default(),
        include_usage,
        ignored,
        continuation,
    })
}

fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_tools(
    value: Option<&Value>,
    limits: &RequestLimits,
) -> Result<Vec<ToolSpec>, RequestError> {
    let tools = tool_list(value, limits)?;
    let mut seen = HashSet::new();
    let mut specs = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let param = format!("tools[{i}]");
        let Value::Object(tool) = tool else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        match tool.get("type").and_then(Value::as_str) {
            Some("function") | None => {}
            Some(other) => {
                return Err(RequestError::invalid_value(
                    format!("Unsupported tool type '{other}': only function tools are supported."),
                    format!("{param}.type"),
                ));
            }
        }
        let Some(Value::Object(function)) = tool.get("function") else {
            return Err(RequestError::invalid_type(
                &format!("{param}.function"),
                "an object",
            ));
        };
        let name = match function.get("name") {
            Some(Value::String(name)) if valid_tool_name(name) => name.clone(),
            Some(Value::String(_)) => {
                return Err(RequestError::invalid_value(
                    "Invalid function name: use 1 to 64 letters, digits, '_' or '-'.",
                    format!("{param}.function.name"),
                ));
            }
            _ => {
                return Err(RequestError::missing(
                    "Missing required parameter: function name.",
                    format!("{param}.function.name"),
                ));
            }
        };
        if !seen.insert(name.clone()) {
            return Err(RequestError::invalid_value(
                format!("Duplicate tool name '{name}'."),
                format!("{param}.function.name"),
            ));
        }
        let path = format!("{param}.function");
        let description = member(function, "description", &path, "a string", Value::as_str)?;
        let parameters = member(function, "parameters", &path, "an object", |v| {
            v.is_object().then(|| v.clone())
        })?
        .unwrap_or_else(|| Value::Object(Map::new()));
        specs.push(ToolSpec::function(
            name,
            description.unwrap_or_default(),
            parameters,
        ));
    }
    Ok(specs)
}

fn parse_tool_choice(
    value: Option<&Value>,
    tools: &[ToolSpec],
) -> Result<ToolChoice, RequestError> {
    let default = if tools.is_empty() {
        ToolChoice::None
    } else {
        ToolChoice::Auto
    };
    let choice = match value {
        None | Some(Value::Null) => return Ok(default),
        Some(Value::String(s)) => match s.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            _ => {
                return Err(RequestError::invalid_value(
                    "Invalid value for tool_choice: use none, auto, required or a function.",
                    "tool_choice",
                ));
            }
        },
        Some(Value::Object(object)) => {
            let name = object
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    RequestError::missing(
                        "Missing required parameter: tool_choice.function.name.",
                        "tool_choice.function.name",
                    )
                })?;
            if !tools.iter().any(|t| t.name == name) {
                return Err(RequestError::invalid_value(
                    format!("tool_choice names '{name}', which is not among the tools."),
                    "tool_choice.function.name",
                ));
            }
            ToolChoice::Named(name.to_owned())
        }
        Some(_) => {
            return Err(RequestError::invalid_type(
                "tool_choice",
                "a string or an object",
            ));
        }
    };
    tool_choice_with(choice, tools)
}

fn parse_messages(
    value: Option<&Value>,
    limits: &RequestLimits,
) -> Result<Vec<Message>, RequestError> {
    let messages = message_list(value, limits)?;
    let mut call_ids: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        let Value::Object(message) = message else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        let role = message_role(message, &param, ROLES)?;
        let content = content_parts(message.get("content"), &format!("{param}.content"), limits)?;
        let name = message
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut tool_calls = Vec::new();
        let mut tool_call_id = None;
        match role {
            Role::Assistant => match message.get("tool_calls") {
                None | Some(Value::Null) => {}
                Some(Value::Array(calls)) => {
                    for (j, call) in calls.iter().enumerate() {
                        let call = history_call(call, &format!("{param}.tool_calls[{j}]"))?;
                        call_ids.insert(call.id.clone());
                        tool_calls.push(call);
                    }
                }
                Some(_) => {
                    return Err(RequestError::invalid_type(
                        &format!("{param}.tool_calls"),
                        "an array",
                    ));
                }
            },
            Role::Tool => {
                let id = match message.get("tool_call_id") {
                    Some(Value::String(id)) => id.clone(),
                    _ => {
                        return Err(RequestError::missing(
                            "Missing required parameter: tool_call_id.",
                            format!("{param}.tool_call_id"),
                        ));
                    }
                };
                if !call_ids.contains(&id) {
                    return Err(RequestError::invalid_value(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'.",
                        format!("{param}.tool_call_id"),
                    ));
                }
                tool_call_id = Some(id);
            }
            _ => {}
        }
        out.push(Message {
            role,
            content,
            tool_calls,
            tool_call_id,
            name,
            is_error: false,
        });
    }
    Ok(out)
}

fn history_call(call: &Value, param: &str) -> Result<HistoryToolCall, RequestError> {
    let Value::Object(call) = call else {
        return Err(RequestError::invalid_type(param, "an object"));
    };
    let id = call.get("id").and_then(Value::as_str).ok_or_else(|| {
        RequestError::missing(
            "Missing required parameter: tool call id.",
            format!("{param}.id"),
        )
    })?;
    let function = call
        .get("function")
        .and_then(Value::as_object)
        .ok_or_else(|| RequestError::invalid_type(&format!("{param}.function"), "an object"))?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            RequestError::missing(
                "Missing required parameter: function name.",
                format!("{param}.function.name"),
            )
        })?;
    let arguments = match function.get("arguments") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(a)) => a.clone(),
        // Some clients send an object; keep its JSON text.
        Some(other @ Value::Object(_)) => other.to_string(),
        Some(_) => {
            return Err(RequestError::invalid_type(
                &format!("{param}.function.arguments"),
                "a string",
            ));
        }
    };
    Ok(HistoryToolCall::new(id, name, arguments))
}

/// The parts of `content`: a string, `null`, or an array of parts.
fn content_parts(
    value: Option<&Value>,
    param: &str,
    limits: &RequestLimits,
) -> Result<Vec<Part>, RequestError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) if text.is_empty() => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![Part::Text(text.clone())]),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (i, part) in parts.iter().enumerate() {
                let part_param = format!("{param}[{i}]");
                let Value::Object(part) = part else {
                    return Err(RequestError::invalid_type(&part_param, "an object"));
                };
                match part.get("type").and_then(Value::as_str) {
                    Some("text") | None => match part.get("text") {
                        Some(Value::String(text)) => out.push(Part::Text(text.clone())),
                        _ => {
                            return Err(RequestError::invalid_type(
                                &format!("{part_param}.text"),
                                "a string",
                            ));
                        }
                    },
                    Some("refusal") => {
                        if let Some(text) = part.get("refusal").and_then(Value::as_str) {
                            out.push(Part::Text(text.to_owned()));
                        }
                    }
                    Some(
                        kind @ ("image_url" | "input_image" | "input_audio" | "file" | "image"),
                    ) => {
                        if limits.reject_attachments {
                            return Err(RequestError::new(
                                RequestProblem::UnsupportedContent,
                                format!(
                                    "Content parts of type '{kind}' are not supported: cursor-agent accepts text only."
                                ),
                                Some(part_param),
                            ));
                        }
                        out.push(Part::Attachment(attachment(kind, part)));
                    }
                    Some(other) => {
                        let other: String = other.chars().take(40).collect();
                        return Err(RequestError::invalid_value(
                            format!("Unknown content part type '{other}'."),
                            format!("{part_param}.type"),
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(_) => Err(RequestError::invalid_type(
            param,
            "a string or an array of content parts",
        )),
    }
}

/// What an image, audio or file part is: its media type and size from a `data:` URL or
/// base64 data, its file name or web address otherwise. Whatever cannot be read stays
/// unknown: a part the agent will not see is never a reason to reject the request.
fn attachment(kind: &str, part: &Map<String, Value>) -> Attachment {
    let member = |key: &str| part.get(key);
    let string_at = |value: Option<&Value>, key: &str| -> Option<String> {
        match value? {
            Value::String(text) => Some(text.clone()),
            Value::Object(object) => object.get(key)?.as_str().map(str::to_owned),
            _ => None,
        }
    };
    let mut found = Attachment {
        kind: AttachmentKind::Image,
        media_type: None,
        size: None,
        name: None,
    };
    let url = match kind {
        "input_audio" => {
            found.kind = AttachmentKind::Audio;
            let audio = member("input_audio").and_then(Value::as_object);
            found.media_type = audio
                .and_then(|a| a.get("format"))
                .and_then(Value::as_str)
                .map(|format| format!("audio/{format}"));
            found.size = audio
                .and_then(|a| a.get("data"))
                .and_then(Value::as_str)
                .map(crate::api::parse::base64_size);
            None
        }
        "file" => {
            found.kind = AttachmentKind::Document;
            let file = member("file").and_then(Value::as_object);
            found.name = file
                .and_then(|f| f.get("filename").or_else(|| f.get("file_id")))
                .and_then(Value::as_str)
                .map(str::to_owned);
            string_at(member("file"), "file_data")
        }
        _ => string_at(member(kind), "url").or_else(|| string_at(member("image_url"), "url")),
    };
    if let Some(url) = url {
        match data_url(&url) {
            Some((media_type, size)) => {
                found.media_type = media_type;
                found.size = Some(size);
            }
            None if url.starts_with("http://") || url.starts_with("https://") => {
                found.name = found.name.or(Some(url));
            }
            // Bare base64 (a file's `file_data` may be sent without the `data:` prefix).
            None => found.size = Some(crate::api::parse::base64_size(&url)),
        }
    }
    found
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::api::invites_retry;

    fn parse(body: &str) -> Result<Request, RequestError> {
        parse_request(body.as_bytes(), &RequestLimits::default())
    }

    fn param(body: &str) -> (u16, Option<String>, Option<&'static str>) {
        let error = parse(body).unwrap_err();
        (error.status(), error.param, Some(error.problem.code()))
    }

    /// The first message's content of a body whose content is the JSON string text
    /// `escaped` (between the quotes, as sent).
    fn content_of(escaped: &str) -> String {
        let body = format!(r#"{{"messages":[{{"role":"user","content":"{escaped}"}}]}}"#);
        parse(&body)
            .unwrap_or_else(|e| panic!("{escaped}: {e:?}"))
            .conversation
            .messages
            .remove(0)
            .text()
            .into_owned()
    }

    #[test]
    fn lone_surrogate_escapes_read_as_replacement_characters() {
        for (escaped, expected) in [
            (r"\ud800", "\u{fffd}"),
            (r"\uDC00", "\u{fffd}"),
            (r"a\ud83dz", "a\u{fffd}z"),
            (r"\ud83d\ude00", "\u{1f600}"),
            (r"\uD83D\uDE00", "\u{1f600}"),
            (r"\ud83d\ud83d\ude00", "\u{fffd}\u{1f600}"),
            (r"\ude00\ud83d", "\u{fffd}\u{fffd}"),
            (r"\ud800\n", "\u{fffd}\n"),
            (r"\ud800\u0041", "\u{fffd}A"),
            (r"\ud800 \udc00", "\u{fffd} \u{fffd}"),
            // An escaped backslash followed by text is no escape.
            (r"\\ud800", r"\ud800"),
            (r"\\\ud800", "\\\u{fffd}"),
            (r"\\\\ud800", r"\\ud800"),
            (r#"\"\ud800\""#, "\"\u{fffd}\""),
        ] {
            assert_eq!(content_of(escaped), expected, "{escaped}");
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..Default::default() })]

        /// Any UTF-16 text, paired or not, written with escapes, reads as a lenient UTF-16
        /// decoder reads it: each unpaired surrogate becomes U+FFFD, nothing else changes.
        #[test]
        fn escaped_utf16_reads_as_lossy_utf16(
            units in proptest::collection::vec(
                prop_oneof![
                    0xd800u16..=0xdfff,
                    Just(u16::from(b'\\')),
                    Just(u16::from(b'u')),
                    Just(u16::from(b'"')),
                    0x20u16..0x7f,
                    0u16..=0xffff,
                ],
                0..24,
            ),
            plain in proptest::collection::vec(any::<bool>(), 24),
        ) {
            let mut escaped = String::new();
            for (unit, plain) in units.iter().zip(plain) {
                match char::from_u32(u32::from(*unit)) {
                    Some('\\') => escaped.push_str(r"\\"),
                    Some('"') => escaped.push_str(r#"\""#),
                    Some(c) if plain && !c.is_control() => escaped.push(c),
                    _ => escaped.push_str(&format!("\\u{unit:04x}")),
                }
            }
            prop_assert_eq!(content_of(&escaped), String::from_utf16_lossy(&units));
        }
    }

    #[test]
    fn lone_surrogates_anywhere_in_a_body() {
        // A tool result a JavaScript client cut in the middle of an emoji.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/requests/truncated_tool_output.json");
        let body = std::fs::read(path).unwrap();
        let request = parse_request(&body, &RequestLimits::default()).unwrap();
        let result = request.conversation.messages[3].text();
        assert!(result.ends_with("Build finished \u{fffd}"), "{result:?}");
        // In keys, names, ids and arguments, and at the very end of a string.
        let body = r#"{"messages":[{"role":"user","content":"x","\udbff":1},
            {"role":"assistant","name":"\ud800","tool_calls":[{"id":"c\udfff","function":{"name":"read","arguments":"{\"p\":\"\ud800\",\"q\":\"\\ud800\"}"}}]},
            {"role":"tool","tool_call_id":"c\udfff","content":"\ud800"}]}"#;
        let request = parse(body).unwrap();
        let call = &request.conversation.messages[1].tool_calls[0];
        assert_eq!(call.id, "c\u{fffd}");
        assert_eq!(
            call.arguments, "{\"p\":\"\u{fffd}\",\"q\":\"\\ud800\"}",
            "an escape in the arguments' own JSON text is text"
        );
        assert_eq!(
            request.conversation.messages[1].name.as_deref(),
            Some("\u{fffd}")
        );
        assert_eq!(request.conversation.messages[2].text(), "\u{fffd}");
        // Broken escapes stay errors, at the same place.
        for body in [
            r#"{"messages":[{"role":"user","content":"\ud8"}]}"#,
            r#"{"messages":[{"role":"user","content":"\ud800"#,
            r#"{"messages":[{"role":"user","content":"\ud800"}],}"#,
        ] {
            assert_eq!(param(body).2, Some("invalid_json"), "{body}");
        }
        // The rewrite keeps lengths: a later syntax error is reported where it is in the body sent.
        let error = parse("{\"messages\":\"\\ud800\" x}").unwrap_err();
        assert!(error.message.contains("column 22"), "{}", error.message);
    }

    #[test]
    fn n_may_be_written_as_a_float() {
        for n in ["1", "1.0", "1e0", "null"] {
            let body = format!(r#"{{"n":{n},"messages":[{{"role":"user","content":"x"}}]}}"#);
            assert!(parse(&body).is_ok(), "n = {n}");
        }
        for n in ["2", "1.5", "0", "-1", "\"1\"", "true"] {
            let body = format!(r#"{{"n":{n},"messages":[{{"role":"user","content":"x"}}]}}"#);
            assert_eq!(param(&body).1.as_deref(), Some("n"), "n = {n}");
        }
    }

    #[test]
    fn attachments_become_placeholders_or_are_rejected() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let body = serde_json::json!({"messages":[
            {"role":"user","content":[
                {"type":"text","text":"What is in these?"},
                {"type":"image_url","image_url":{"url": format!("data:image/png;base64,{png}"),"detail":"low"}},
                {"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}},
                {"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
                {"type":"file","file":{"filename":"report.pdf","file_data":"data:application/pdf;base64,JVBERi0x"}},
                {"type":"file","file":{"file_id":"file-123"}},
                {"type":"image_url","image_url":7},
                {"type":"text","text":"Thanks."}]}]})
        .to_string();
        let request = parse(&body).unwrap();
        let message = &request.conversation.messages[0];
        assert_eq!(message.text(), "What is in these?\nThanks.");
        let attachments: Vec<&Attachment> = message
            .content
            .iter()
            .filter_map(|part| match part {
                Part::Attachment(a) => Some(a),
                Part::Text(_) => None,
            })
            .collect();
        let described: Vec<Attachment> = attachments.into_iter().cloned().collect();
        let expected = [
            (AttachmentKind::Image, Some("image/png"), Some(70), None),
            (
                AttachmentKind::Image,
                None,
                None,
                Some("https://example.com/cat.jpg"),
            ),
            (AttachmentKind::Audio, Some("audio/wav"), Some(4), None),
            (
                AttachmentKind::Document,
                Some("application/pdf"),
                Some(6),
                Some("report.pdf"),
            ),
            (AttachmentKind::Document, None, None, Some("file-123")),
            (AttachmentKind::Image, None, None, None),
        ]
        .map(|(kind, media_type, size, name)| Attachment {
            kind,
            media_type: media_type.map(str::to_owned),
            size,
            name: name.map(str::to_owned),
        });
        assert_eq!(described, expected);
        // The same parts are a 400 naming each one when attachments are refused.
        let limits = RequestLimits {
            reject_attachments: true,
            ..RequestLimits::default()
        };
        let error = parse_request(body.as_bytes(), &limits).unwrap_err();
        assert_eq!(
            (error.status(), error.param.as_deref(), error.problem),
            (
                400,
                Some("messages[0].content[1]"),
                RequestProblem::UnsupportedContent
            )
        );
        assert_eq!(
            error.message,
            "Content parts of type 'image_url' are not supported: cursor-agent accepts text only."
        );
        for kind in ["input_image", "image", "input_audio", "file"] {
            let body =
                format!(r#"{{"messages":[{{"role":"user","content":[{{"type":"{kind}"}}]}}]}}"#);
            let error = parse_request(body.as_bytes(), &limits).unwrap_err();
            assert_eq!(
                error.param.as_deref(),
                Some("messages[0].content[0]"),
                "{kind}"
            );
            assert!(parse(&body).is_ok(), "{kind}: a placeholder by default");
        }
    }

    /// The request with `fields` (JSON object members) and one user message.
    fn with_fields(fields: &str) -> Result<Request, RequestError> {
        parse(&format!(
            r#"{{{fields}"messages":[{{"role":"user","content":"x"}}]}}"#
        ))
    }

    fn rejected_param(fields: &str) -> String {
        let shown = &fields[..fields.len().min(80)];
        let Err(error) = with_fields(fields) else {
            panic!("accepted: {shown}");
        };
        assert_eq!(
            (error.status(), Some(error.problem.code())),
            (400, Some("invalid_value")),
            "{shown}"
        );
        assert!(!invites_retry(&error.message), "{}", error.message);
        error.param.unwrap()
    }

    #[test]
    fn model_names_are_bounded_wherever_they_are_used() {
        let mib = "p".repeat(1 << 20);
        // A huge provider prefix, model, or cursorModel, alone or beside a valid one.
        for fields in [
            format!(r#""model":"{mib}/gpt-5","#),
            format!(r#""model":"{mib}","#),
            format!(r#""model":"{mib}","cursorModel":"gpt-5","#),
            format!(r#""model":"{mib}/gpt-5","cursorModel":"gpt-5","#),
        ] {
            assert_eq!(rejected_param(&fields), "model");
        }
        for fields in [
            format!(r#""cursorModel":"{mib}","#),
            format!(r#""model":"gpt-5","cursorModel":"{mib}","#),
            format!(
                r#""model":"gpt-5","cursorModel":"gpt-5[{}]","#,
                "k=v,".repeat(63) + "k=v"
            ),
        ] {
            assert_eq!(rejected_param(&fields), "cursorModel");
        }
        // 256 bytes is the limit of each.
        let prefix = "p".repeat(250);
        let ok = with_fields(&format!(r#""model":"{prefix}/gpt-5","#)).unwrap();
        assert_eq!((ok.model.as_str(), ok.response_model.len()), ("gpt-5", 256));
        assert_eq!(
            rejected_param(&format!(r#""model":"{prefix}x/gpt-5","#)),
            "model"
        );
        let params = "k=v,".repeat(62) + "k=v"; // 251 bytes
        let cursor = format!("gpt-5[{params}]");
        assert_eq!(cursor.len(), 258);
        assert_eq!(
            rejected_param(&format!(r#""cursorModel":"{cursor}","#)),
            "cursorModel"
        );
        let cursor = format!("gpt[{}]", "k=v,".repeat(62) + "k=v");
        assert_eq!(cursor.len(), 256);
        let ok = with_fields(&format!(r#""model":"m","cursorModel":"{cursor}","#)).unwrap();
        assert_eq!((ok.model, ok.response_model.as_str()), (cursor, "m"));
    }

    #[test]
    fn model_errors_name_the_field_that_was_wrong() {
        assert_eq!(rejected_param(r#""cursorModel":"--force","#), "cursorModel");
        assert_eq!(
            rejected_param(r#""model":"gpt-5","cursorModel":"a b","#),
            "cursorModel"
        );
        assert_eq!(rejected_param(r#""model":"--force","#), "model");
        // Echoed text must be printable, whichever field is used.
        assert_eq!(
            rejected_param(r#""model":"a\nb","cursorModel":"gpt-5","#),
            "model"
        );
        assert_eq!(rejected_param(r#""model":"x\u0000/gpt-5","#), "model");
    }

    #[test]
    fn a_model_empty_after_its_provider_prefix_is_rejected() {
        for model in ["x/", "--force/", "/", "a/b/", "cursor/ "] {
            assert_eq!(
                rejected_param(&format!(r#""model":"{model}","#)),
                "model",
                "{model}"
            );
        }
        // No model at all is `auto`, as documented.
        for fields in ["", r#""model":"","#, r#""model":null,"#, r#""model":"  ","#] {
            let request = with_fields(fields).unwrap();
            assert_eq!(
                (request.model.as_str(), request.response_model.as_str()),
                ("auto", "auto")
            );
        }
        // cursorModel decides the run: the model is only echoed.
        let request = with_fields(r#""model":"x/","cursorModel":"gpt-5","#).unwrap();
        assert_eq!(
            (request.model.as_str(), request.response_model.as_str()),
            ("gpt-5", "x/")
        );
    }

    #[test]
    fn minimal_and_defaults() {
        let r = parse(r#"{"model":"cursor/gpt-5","messages":[{"role":"user","content":"hi"}]}"#)
            .unwrap();
        assert_eq!(r.model, "gpt-5");
        assert_eq!(r.response_model, "cursor/gpt-5");
        assert!(!r.stream && !r.include_usage && r.conversation.parallel_tool_calls);
        assert_eq!(r.conversation.tool_choice, ToolChoice::None);
        let r = parse(r#"{"messages":[{"role":"user","content":"hi"}],"cursorModel":"sonnet-4[effort=high,fast=false]","model":"x"}"#).unwrap();
        assert_eq!(r.model, "sonnet-4[effort=high,fast=false]");
        let r = parse(r#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!(
            (r.model.as_str(), r.response_model.as_str()),
            ("auto", "auto")
        );
    }

    #[test]
    fn real_client_shapes() {
        let body = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":8000,"temperature":0.2,
            "reasoning_effort":"max","x-unknown":1,
            "messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{}}]},
              {"role":"user","content":"go"},
              {"role":"assistant","content":"","reasoning_content":"hm","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"filePath\":\"x\"}"}}]},
              {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"data"}]},
              {"role":"assistant","content":null}],
            "tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],"tool_choice":"auto"}"#;
        let r = parse(body).unwrap();
        assert!(r.stream && r.include_usage);
        assert_eq!(r.conversation.messages[0].text(), "a\nb");
        assert_eq!(r.conversation.messages[2].tool_calls[0].name, "read");
        assert_eq!(
            r.conversation.messages[3].tool_call_id.as_deref(),
            Some("c1")
        );
        assert_eq!(r.ignored, ["temperature", "max_tokens", "reasoning_effort"]);
        assert_eq!(r.conversation.tool_choice, ToolChoice::Auto);
    }

    #[test]
    fn errors_name_the_param() {
        assert_eq!(param("{"), (400, None, Some("invalid_json")));
        assert_eq!(param("[]"), (400, None, Some("invalid_type")));
        assert_eq!(param(r#"{"model":"m"}"#).1.as_deref(), Some("messages"));
        assert_eq!(param(r#"{"messages":[]}"#).1.as_deref(), Some("messages"));
        assert_eq!(
            param(r#"{"messages":[{"role":"robot","content":"x"}]}"#)
                .1
                .as_deref(),
            Some("messages[0].role")
        );
        assert_eq!(
            param(r#"{"messages":[{"role":"user","content":5}]}"#)
                .1
                .as_deref(),
            Some("messages[0].content")
        );
        assert_eq!(
            param(r#"{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]}"#)
                .1
                .as_deref(),
            Some("messages[0].tool_call_id")
        );
        assert_eq!(
            param(r#"{"model":"--force","messages":[{"role":"user","content":"x"}]}"#)
                .1
                .as_deref(),
            Some("model")
        );
        assert_eq!(
            param(r#"{"model":"a b","messages":[{"role":"user","content":"x"}]}"#)
                .1
                .as_deref(),
            Some("model")
        );
        assert_eq!(
            param(r#"{"model":"a[x=1","messages":[{"role":"user","content":"x"}]}"#)
                .1
                .as_deref(),
            Some("model")
        );
        assert_eq!(param(r#"{"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}"#).1.as_deref(), Some("stream_options"));
        assert_eq!(param(r#"{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}"#).1.as_deref(), Some("tools[0].function.name"));
        assert_eq!(param(r#"{"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"a"}},{"function":{"name":"a"}}]}"#).1.as_deref(), Some("tools[1].function.name"));
        assert_eq!(param(r#"{"messages":[{"role":"user","content":"x"}],"tools":[{"function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}"#).1.as_deref(), Some("tool_choice.function.name"));
        assert_eq!(
            param(r#"{"messages":[{"role":"user","content":"x"}],"n":3}"#)
                .1
                .as_deref(),
            Some("n")
        );
    }

    #[test]
    fn deep_nesting_and_size_limits() {
        let deep = format!(
            r#"{{"messages":{}1{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(param(&deep).2, Some("invalid_json"));
        let limits = RequestLimits {
            max_body_bytes: 10,
            ..RequestLimits::default()
        };
        let error =
            parse_request(br#"{"messages":[{"role":"user","content":"x"}]}"#, &limits).unwrap_err();
        assert_eq!(
            (error.status(), Some(error.problem.code())),
            (413, Some("body_too_large"))
        );
    }

    #[test]
    fn error_messages_do_not_invite_retries() {
        let words = [
            "timeout",
            "timed out",
            "rate limit",
            "connection",
            "500",
            "overloaded",
            "try again",
            "server error",
        ];
        for body in [
            "{",
            "[]",
            r#"{"messages":[{"role":"user","content":[{"type":"input_video"}]}]}"#,
            r#"{"model":"--x","messages":[]}"#,
        ] {
            let message = parse(body).unwrap_err().message.to_lowercase();
            assert!(words.iter().all(|w| !message.contains(w)), "{message}");
        }
    }

    #[test]
    fn quoted_request_text_cannot_invite_retries() {
        // A syntax error at column 500 and a role named after a transient failure: the
        // detailed message would quote "500" / "timeout", so the neutral one is sent.
        let late = format!(r#"{{"messages":"{}" x}}"#, "a".repeat(484));
        let detail = serde_json::from_str::<Value>(&late)
            .unwrap_err()
            .to_string();
        assert!(detail.contains("column 500"), "{detail}");
        let error = parse(&late).unwrap_err();
        assert_eq!(error.problem, RequestProblem::InvalidJson);
        assert!(!invites_retry(&error.message), "{}", error.message);
        let error = parse(r#"{"messages":[{"role":"Timeout","content":"x"}]}"#).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("messages[0].role"));
        assert!(!invites_retry(&error.message), "{}", error.message);
        // Messages that quote nothing hazardous keep their detail.
        let error = parse(r#"{"messages":[{"role":"robot","content":"x"}]}"#).unwrap_err();
        assert!(error.message.contains("robot"));
        let error = parse("{\n\n  \"messages\": ]").unwrap_err();
        assert!(error.message.contains("line 3"), "{}", error.message);
    }

    #[test]
    fn wrong_types_name_their_param() {
        let user = r#"{"role":"user","content":"x"}"#;
        let cases = [
            (r#"{"model":1,"messages":[USER]}"#, "model", "invalid_type"),
            (
                r#"{"cursorModel":[],"messages":[USER]}"#,
                "cursorModel",
                "invalid_type",
            ),
            (r#"{"messages":{}}"#, "messages", "invalid_type"),
            (r#"{"messages":[1]}"#, "messages[0]", "invalid_type"),
            (
                r#"{"messages":[{"content":"x"}]}"#,
                "messages[0].role",
                "missing_required_parameter",
            ),
            (
                r#"{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}"#,
                "messages[0].content[0].text",
                "invalid_type",
            ),
            (
                r#"{"messages":[{"role":"user","content":["x"]}]}"#,
                "messages[0].content[0]",
                "invalid_type",
            ),
            (
                r#"{"messages":[{"role":"user","content":[{"type":"video"}]}]}"#,
                "messages[0].content[0].type",
                "invalid_value",
            ),
            (
                r#"{"messages":[{"role":"assistant","tool_calls":{}}]}"#,
                "messages[0].tool_calls",
                "invalid_type",
            ),
            (
                r#"{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"a"}}]}]}"#,
                "messages[0].tool_calls[0].id",
                "missing_required_parameter",
            ),
            (
                r#"{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"a","arguments":5}}]}]}"#,
                "messages[0].tool_calls[0].function.arguments",
                "invalid_type",
            ),
            (
                r#"{"messages":[{"role":"tool","content":"x"}]}"#,
                "messages[0].tool_call_id",
                "missing_required_parameter",
            ),
            (
                r#"{"messages":[USER],"stream":"yes"}"#,
                "stream",
                "invalid_type",
            ),
            (
                r#"{"messages":[USER],"stream":true,"stream_options":true}"#,
                "stream_options",
                "invalid_type",
            ),
            (
                r#"{"messages":[USER],"stream":true,"stream_options":{"include_usage":1}}"#,
                "stream_options.include_usage",
                "invalid_type",
            ),
            (
                r#"{"messages":[USER],"parallel_tool_calls":0}"#,
                "parallel_tool_calls",
                "invalid_type",
            ),
            (r#"{"messages":[USER],"tools":{}}"#, "tools", "invalid_type"),
            (
                r#"{"messages":[USER],"tools":[{"type":"custom","custom":{}}]}"#,
                "tools[0].type",
                "invalid_value",
            ),
            (
                r#"{"messages":[USER],"tools":[{"type":"function"}]}"#,
                "tools[0].function",
                "invalid_type",
            ),
            (
                r#"{"messages":[USER],"tools":[{"function":{}}]}"#,
                "tools[0].function.name",
                "missing_required_parameter",
            ),
            (
                r#"{"messages":[USER],"tools":[{"function":{"name":"a","parameters":"{}"}}]}"#,
                "tools[0].function.parameters",
                "invalid_type",
            ),
            (
                r#"{"messages":[USER],"tools":[{"function":{"name":"a","description":1}}]}"#,
                "tools[0].function.description",
                "invalid_type",
            ),
            (
                r#"{"messages":[USER],"tool_choice":"always","tools":[{"function":{"name":"a"}}]}"#,
                "tool_choice",
                "invalid_value",
            ),
            (
                r#"{"messages":[USER],"tool_choice":"required"}"#,
                "tool_choice",
                "invalid_value",
            ),
            (
                r#"{"messages":[USER],"tool_choice":1}"#,
                "tool_choice",
                "invalid_type",
            ),
            (r#"{"messages":[USER],"n":2}"#, "n", "invalid_value"),
        ];
        for (body, expected_param, expected_code) in cases {
            let body = body.replace("USER", user);
            let error = parse(&body).unwrap_err();
            assert_eq!(
                (
                    error.status(),
                    error.param.as_deref(),
                    Some(error.problem.code())
                ),
                (400, Some(expected_param), Some(expected_code)),
                "{body}"
            );
            assert!(!invites_retry(&error.message), "{}", error.message);
        }
    }

    #[test]
    fn hostile_strings_and_bytes() {
        // NULs and huge strings are content like any other.
        let huge = "z".repeat(4 << 20);
        let body =
            serde_json::json!({"messages":[{"role":"user","content": format!("a\u{0}b{huge}")}]});
        let r = parse(&body.to_string()).unwrap();
        assert!(r.conversation.messages[0].text().starts_with("a\u{0}b"));
        assert_eq!(r.conversation.messages[0].text().len(), 3 + huge.len());
        // Raw invalid UTF-8 inside a string, a BOM, trailing data.
        for bytes in [
            &b"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}"[..],
            b"\xef\xbb\xbf{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
            br#"{"messages":[{"role":"user","content":"x"}]} {}"#,
            b"",
            b"\0",
        ] {
            let error = parse_request(bytes, &RequestLimits::default()).unwrap_err();
            assert_eq!(
                (error.status(), Some(error.problem.code())),
                (400, Some("invalid_json"))
            );
        }
        // Deep nesting of objects in an ignored field is still a clean 400.
        let deep = format!(
            r#"{{"metadata":{}1{},"messages":[]}}"#,
            r#"{"a":"#.repeat(50_000),
            "}".repeat(50_000)
        );
        assert_eq!(param(&deep).2, Some("invalid_json"));
    }

    #[test]
    fn counted_limits() {
        let limits = RequestLimits {
            max_messages: 2,
            max_tools: 1,
            ..RequestLimits::default()
        };
        let three = r#"{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]}"#;
        let error = parse_request(three.as_bytes(), &limits).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("messages"));
        let two_tools = r#"{"messages":[{"role":"user","content":"a"}],"tools":[{"function":{"name":"a"}},{"function":{"name":"b"}}]}"#;
        let error = parse_request(two_tools.as_bytes(), &limits).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("tools"));
    }

    #[test]
    fn tool_results_must_answer_an_earlier_call() {
        // The answer precedes the call: rejected even though the id exists later.
        let body = r#"{"messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"},
            {"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"a","arguments":"{}"}}]}]}"#;
        assert_eq!(param(body).1.as_deref(), Some("messages[1].tool_call_id"));
        // Arguments sent as an object are kept as JSON text; absent ones become `{}`.
        let body = r#"{"messages":[{"role":"assistant","content":null,"tool_calls":[
            {"id":"c1","function":{"name":"a","arguments":{"x":1}}},{"id":"c2","function":{"name":"b"}}]},
            {"role":"tool","tool_call_id":"c2","content":null},{"role":"tool","tool_call_id":"c1","content":"r"}]}"#;
        let r = parse(body).unwrap();
        assert_eq!(
            r.conversation.messages[0].tool_calls[0].arguments,
            r#"{"x":1}"#
        );
        assert_eq!(r.conversation.messages[0].tool_calls[1].arguments, "{}");
        assert_eq!(r.conversation.messages[1].text(), "");
    }

    #[test]
    fn project_request_bodies() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/requests");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let body = std::fs::read(&path).unwrap();
            let request = parse_request(&body, &RequestLimits::default())
                .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            assert!(!request.conversation.messages.is_empty());
            assert_eq!(request.model, "auto", "{}", path.display());
            seen += 1;
        }
        assert!(seen >= 3);
    }
}
