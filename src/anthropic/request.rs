//! Messages request bodies (`POST /v1/messages`, and the `count_tokens` body, which is the
//! same without `max_tokens` and `stream`): parsed, validated, and reduced to the neutral
//! [`Request`].
//!
//! # What becomes of each field
//!
//! - `system` (a string or text blocks) becomes a first [`Role::System`] message. Claude
//!   Code's first system block, `x-anthropic-billing-header: cc_version=…`, changes with
//!   every release and means nothing to the agent: it is left out, so that it neither
//!   reaches the prompt nor changes it between versions.
//! - `messages`: roles `user`, `assistant` and `system` (Claude Code sends its environment
//!   as a `role: "system"` turn in the middle of the conversation), each with a string or
//!   content blocks. A `mid_conv_system` block is a system turn in place, wherever it
//!   sits. Blocks:
//!   - `text` → text; `image` → an image [`Attachment`] (media type and decoded size,
//!     never the bytes); `document` → a document attachment, except a plain-text or
//!     content-block document, whose text the agent can read and is given; a
//!     `search_result` → its text blocks.
//!   - `tool_use` (assistant) → a [`HistoryToolCall`] with its `id`, `name` and `input`
//!     (as JSON text); `tool_result` (user) → a [`Role::Tool`] message answering
//!     `tool_use_id`, with its content (a string or text / image / document blocks) and
//!     `is_error`. A user message holding results and text becomes the tool messages and
//!     a user message, in the order of its blocks.
//!   - `thinking` and `redacted_thinking` (the model's earlier reasoning, signed) are
//!     accepted and dropped: the agent cannot use them.
//!   - Blocks of any other type (server-tool artefacts such as `server_tool_use`,
//!     `web_search_tool_result`, `tool_reference`, and whatever a new beta brings) are
//!     accepted and dropped.
//! - `tools`: client tools (no `type`, or `type: "custom"`) with `name`, `description`
//!   and `input_schema` are offered. Server tools (a dated `type` such as
//!   `web_search_20250305` or `bash_20250124`) and deferred tools (`defer_loading: true`,
//!   Claude Code's `DeferredToolPlaceholder`) are accepted and not offered: the agent
//!   cannot call the former, and the latter are not loaded yet.
//! - `tool_choice`: `auto`, `any` (some tool must be called), `tool` (that one), `none`;
//!   `disable_parallel_tool_use` → one call per turn. Absent: `auto` when tools are
//!   offered.
//! - `thinking` (`enabled` with `budget_tokens`, `adaptive`, `disabled`, each with an
//!   optional `display`) and `output_config.effort` → [`Reasoning`];
//!   `output_config.format` (or the older top-level `output_format`) of type
//!   `json_schema` → [`OutputFormat::JsonSchema`], which the prompt asks the agent to
//!   follow (Claude Code's session titles are asked for that way).
//! - `max_tokens` is required, as the API requires it (a 400 naming it otherwise), but
//!   never bounds the agent, which has no such switch.
//! - Accepted and not honoured (listed in [`Request::ignored`]): `max_tokens`,
//!   `temperature`, `top_p`, `top_k`, `stop_sequences`, `metadata` (Claude Code's
//!   `user_id` is a JSON string), `service_tier`, `context_management`, `container`,
//!   `inference_geo`, `mcp_servers`, `cache_control`. `cache_control` on any block or
//!   tool is ignored too.
//!
//! Unknown fields, block types and tool types are accepted: Claude Code answers a 400 by
//! sending the request again with fewer betas, up to six times, so refusing something a
//! new beta added costs six requests and then fails anyway. What is refused, with a 400
//! whose `param` names the field (the Anthropic error body puts it in the message): a body
//! that is not a JSON object, a missing or mistyped required field (`max_tokens`,
//! `messages`, a role, a block's `type`, a text block's `text`, a `tool_use`'s `id` and
//! `name`, a `tool_result`'s `tool_use_id`, a tool's `name`), an unknown role, a
//! `tool_result` answering no earlier `tool_use`, an invalid or duplicate tool name, a
//! `tool_choice` naming no tool, an unusable model name, and the limits of
//! [`RequestLimits`] (413 for the body size).

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::api::parse::{
    MAX_ID_BYTES, base64_size, member, message_list, message_role, models, optional_bool,
    read_object, tool_list,
};
use crate::api::{
    Continuation, Effort, Reasoning, ReasoningDisplay, Request, RequestError, RequestLimits,
    RequestProblem, Thinking,
};
use crate::conversation::{
    Attachment, AttachmentKind, Conversation, HistoryToolCall, Message, OutputFormat, Part, Role,
    ToolChoice, ToolSpec,
};

/// Fields accepted and not honoured (see the module docs).
const IGNORED: &[&str] = &[
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "metadata",
    "service_tier",
    "context_management",
    "container",
    "inference_geo",
    "mcp_servers",
    "cache_control",
];

/// The roles a message may have: `system` is a system turn in place.
const ROLES: &[(&str, Role)] = &[
    ("user", Role::User),
    ("assistant", Role::Assistant),
    ("system", Role::System),
];

/// How Claude Code's per-release billing block in `system` begins.
const BILLING_HEADER: &str = "x-anthropic-billing-header:";

/// Which endpoint a body was sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// `POST /v1/messages`: `max_tokens` required, `stream` honoured.
    Messages,
    /// `POST /v1/messages/count_tokens`: neither.
    CountTokens,
}

/// Parses and validates a Messages request body (see the module docs).
pub fn parse_request(body: &[u8], limits: &RequestLimits) -> Result<Request, RequestError> {
    parse(body, limits, Endpoint::Messages)
}

/// Parses a body sent to `endpoint`.
pub(super) fn parse(
    body: &[u8],
    limits: &RequestLimits,
    endpoint: Endpoint,
) -> Result<Request, RequestError> {
    let object = read_object(body, limits)?;
    let (model, response_model) = models(&object)?;
    let stream = match endpoint {
        Endpoint::Messages => {
            max_tokens(object.get("max_tokens"))?;
            optional_bool(&object, "stream")?.unwrap_or(false)
        }
        Endpoint::CountTokens => false,
    };
    let tools = parse_tools(object.get("tools"), limits)?;
    let (tool_choice, parallel_tool_calls) = parse_tool_choice(object.get("tool_choice"), &tools)?;
    let mut messages = system_message(object.get("system"))?
        .into_iter()
        .collect::<Vec<_>>();
    parse_messages(object.get("messages"), limits, &mut messages)?;
    let (effort, format) = output_config(&object)?;
    let reasoning = Reasoning {
        effort,
        ..thinking(object.get("thinking"))?
    };
    let ignored = IGNORED
        .iter()
        .copied()
        .filter(|f| object.get(*f).is_some_and(|v| !v.is_null()))
        .collect();
    Ok(Request {
        model,
        response_model,
        stream,
        conversation: Conversation {
            messages,
            tools: tools.offered,
            tool_choice,
            parallel_tool_calls,
            output_format: format,
        },
        reasoning,
        include_usage: true,
        ignored,
        continuation: Continuation {
            conversation_key: metadata_session(object.get("metadata")),
            previous_response_id: None,
        },
    })
}

/// The session a client names in `metadata.user_id`: Claude Code sends a JSON object text
/// with a `session_id` (older builds: `user_<hash>_account_<id>_session_<uuid>`). Anything
/// else names none; `metadata` is otherwise not read, so a shape not known here is no
/// error.
fn metadata_session(metadata: Option<&Value>) -> Option<String> {
    let user_id = metadata?.get("user_id")?.as_str()?;
    let session = match serde_json::from_str::<Value>(user_id) {
        Ok(Value::Object(object)) => object.get("session_id")?.as_str()?.to_owned(),
        _ => user_id.rsplit_once("_session_")?.1.to_owned(),
    };
    (!session.is_empty() && session.len() <= MAX_ID_BYTES).then_some(session)
}

/// `max_tokens`: required, a positive integer (`8000.0` too: JavaScript clients do not
/// tell integers from floats).
fn max_tokens(value: Option<&Value>) -> Result<(), RequestError> {
    match value {
        None | Some(Value::Null) => Err(RequestError::missing(
            "Missing required parameter: 'max_tokens'.",
            "max_tokens",
        )),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(()),
            _ => Err(RequestError::invalid_value(
                "'max_tokens' must be a positive integer.",
                "max_tokens",
            )),
        },
        Some(_) => Err(RequestError::invalid_type("max_tokens", "an integer")),
    }
}

/// The `system` field as a first system message, without Claude Code's billing block;
/// `None` when absent or empty.
fn system_message(value: Option<&Value>) -> Result<Option<Message>, RequestError> {
    let parts = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => vec![Part::Text(text.clone())],
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                let param = format!("system[{i}]");
                let text = text_of(block_object(block, &param)?, &param)?;
                if !text.trim_start().starts_with(BILLING_HEADER) {
                    parts.push(Part::Text(text.to_owned()));
                }
            }
            parts
        }
        Some(_) => {
            return Err(RequestError::invalid_type(
                "system",
                "a string or an array of text blocks",
            ));
        }
    };
    let mut message = Message::new(Role::System, "");
    message.content = parts;
    Ok((!message.content.is_empty()).then_some(message))
}

/// A content block as an object with a `type`.
fn block_object<'v>(block: &'v Value, param: &str) -> Result<&'v Map<String, Value>, RequestError> {
    let Value::Object(block) = block else {
        return Err(RequestError::invalid_type(param, "an object"));
    };
    match block.get("type") {
        Some(Value::String(_)) => Ok(block),
        None | Some(Value::Null) => Err(RequestError::missing(
            "Missing required parameter: the block's 'type'.",
            format!("{param}.type"),
        )),
        Some(_) => Err(RequestError::invalid_type(
            &format!("{param}.type"),
            "a string",
        )),
    }
}

fn block_type(block: &Map<String, Value>) -> &str {
    block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The `text` of a text block.
fn text_of<'v>(block: &'v Map<String, Value>, param: &str) -> Result<&'v str, RequestError> {
    match block.get("text") {
        Some(Value::String(text)) => Ok(text),
        _ => Err(RequestError::invalid_type(
            &format!("{param}.text"),
            "a string",
        )),
    }
}

/// A required string member.
fn required_str<'v>(
    object: &'v Map<String, Value>,
    key: &str,
    param: &str,
) -> Result<&'v str, RequestError> {
    match object.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(RequestError::missing(
            format!("Missing required parameter: '{key}'."),
            format!("{param}.{key}"),
        )),
        Some(_) => Err(RequestError::invalid_type(
            &format!("{param}.{key}"),
            "a string",
        )),
    }
}

/// The messages, appended to `out` (which may hold the system message).
fn parse_messages(
    value: Option<&Value>,
    limits: &RequestLimits,
    out: &mut Vec<Message>,
) -> Result<(), RequestError> {
    let messages = message_list(value, limits)?;
    let mut turns = Turns {
        out,
        call_ids: HashSet::new(),
        limits,
    };
    for (i, message) in messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        let Value::Object(message) = message else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        let role = message_role(message, &param, ROLES)?;
        turns.message(role, message.get("content"), &format!("{param}.content"))?;
    }
    Ok(())
}

/// Builds neutral messages from Messages API turns: one Anthropic message may become
/// several (tool results, system blocks in place).
struct Turns<'a> {
    out: &'a mut Vec<Message>,
    /// Ids of the `tool_use` blocks seen so far: a result must answer one of them.
    call_ids: HashSet<String>,
    limits: &'a RequestLimits,
}

impl Turns<'_> {
    fn message(
        &mut self,
        role: Role,
        content: Option<&Value>,
        param: &str,
    ) -> Result<(), RequestError> {
        let blocks = match content {
            None | Some(Value::Null) => {
                return Err(RequestError::missing(
                    "Missing required parameter: content.",
                    param,
                ));
            }
            Some(Value::String(text)) => {
                self.out.push(Message::new(role, text.as_str()));
                return Ok(());
            }
            Some(Value::Array(blocks)) => blocks,
            Some(_) => {
                return Err(RequestError::invalid_type(
                    param,
                    "a string or an array of content blocks",
                ));
            }
        };
        let first = self.out.len();
        let mut current = Message::new(role, "");
        for (j, block) in blocks.iter().enumerate() {
            let param = format!("{param}[{j}]");
            let block = block_object(block, &param)?;
            match block_type(block) {
                "text" => current
                    .content
                    .push(Part::Text(text_of(block, &param)?.to_owned())),
                "image" | "document" | "search_result" => {
                    self.media(block, &param, &mut current.content)?;
                }
                "tool_use" if role == Role::Assistant => {
                    let call = self.tool_use(block, &param)?;
                    current.tool_calls.push(call);
                }
                "tool_result" if role == Role::User => {
                    self.flush(&mut current);
                    let result = self.tool_result(block, &param)?;
                    self.out.push(result);
                }
                "mid_conv_system" => {
                    self.flush(&mut current);
                    let system = self.mid_conversation_system(block, &param)?;
                    self.out.push(system);
                }
                // Earlier reasoning, server-tool artefacts, blocks of newer betas, and
                // blocks in a role that cannot hold them: nothing the agent can use.
                _ => {}
            }
        }
        // A message with nothing usable in it still marks a turn.
        if !current.content.is_empty() || !current.tool_calls.is_empty() || self.out.len() == first
        {
            self.out.push(current);
        }
        Ok(())
    }

    /// Pushes `current` if it holds anything, leaving an empty message of its role.
    fn flush(&mut self, current: &mut Message) {
        if !current.content.is_empty() || !current.tool_calls.is_empty() {
            let role = current.role;
            self.out
                .push(std::mem::replace(current, Message::new(role, "")));
        }
    }

    fn tool_use(
        &mut self,
        block: &Map<String, Value>,
        param: &str,
    ) -> Result<HistoryToolCall, RequestError> {
        let id = required_str(block, "id", param)?;
        let name = required_str(block, "name", param)?;
        let arguments = match block.get("input") {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(input @ Value::Object(_)) => input.to_string(),
            Some(_) => {
                return Err(RequestError::invalid_type(
                    &format!("{param}.input"),
                    "an object",
                ));
            }
        };
        self.call_ids.insert(id.to_owned());
        Ok(HistoryToolCall::new(id, name, arguments))
    }

    fn tool_result(
        &mut self,
        block: &Map<String, Value>,
        param: &str,
    ) -> Result<Message, RequestError> {
        let id = required_str(block, "tool_use_id", param)?;
        if !self.call_ids.contains(id) {
            return Err(RequestError::invalid_value(
                "Each 'tool_result' must answer a 'tool_use' block of an earlier assistant message.",
                format!("{param}.tool_use_id"),
            ));
        }
        let is_error = member(block, "is_error", param, "a boolean", Value::as_bool)?;
        let mut result = Message::tool_result(id, "");
        result.is_error = is_error.unwrap_or(false);
        let content_param = format!("{param}.content");
        match block.get("content") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => {
                if !text.is_empty() {
                    result.content.push(Part::Text(text.clone()));
                }
            }
            Some(Value::Array(blocks)) => {
                for (k, inner) in blocks.iter().enumerate() {
                    let inner_param = format!("{content_param}[{k}]");
                    let inner = block_object(inner, &inner_param)?;
                    match block_type(inner) {
                        "text" => result
                            .content
                            .push(Part::Text(text_of(inner, &inner_param)?.to_owned())),
                        "image" | "document" | "search_result" => {
                            self.media(inner, &inner_param, &mut result.content)?;
                        }
                        // `tool_reference` (tool search) and newer kinds: nothing to read.
                        _ => {}
                    }
                }
            }
            Some(_) => {
                return Err(RequestError::invalid_type(
                    &content_param,
                    "a string or an array of content blocks",
                ));
            }
        }
        Ok(result)
    }

    fn mid_conversation_system(
        &mut self,
        block: &Map<String, Value>,
        param: &str,
    ) -> Result<Message, RequestError> {
        let content_param = format!("{param}.content");
        let mut system = Message::new(Role::System, "");
        match block.get("content") {
            Some(Value::String(text)) => system.content.push(Part::Text(text.clone())),
            Some(Value::Array(blocks)) => {
                for (k, inner) in blocks.iter().enumerate() {
                    let inner_param = format!("{content_param}[{k}]");
                    let inner = block_object(inner, &inner_param)?;
                    if block_type(inner) == "text" {
                        system
                            .content
                            .push(Part::Text(text_of(inner, &inner_param)?.to_owned()));
                    }
                }
            }
            _ => {
                return Err(RequestError::invalid_type(
                    &content_param,
                    "an array of text blocks",
                ));
            }
        }
        Ok(system)
    }

    /// An `image`, `document` or `search_result` block as parts: readable text as text,
    /// anything else as an attachment (or a 400 when attachments are refused).
    fn media(
        &self,
        block: &Map<String, Value>,
        param: &str,
        parts: &mut Vec<Part>,
    ) -> Result<(), RequestError> {
        let kind = block_type(block);
        let source = block.get("source").and_then(Value::as_object);
        let source_type = source
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let source_str = |key: &str| source.and_then(|s| s.get(key)).and_then(Value::as_str);
        match (kind, source_type) {
            ("search_result", _) => {
                push_texts(block.get("content"), parts);
                return Ok(());
            }
            ("document", "text") => {
                if let Some(text) = source_str("data") {
                    parts.push(Part::Text(text.to_owned()));
                }
                return Ok(());
            }
            ("document", "content") => {
                match source.and_then(|s| s.get("content")) {
                    Some(Value::String(text)) => parts.push(Part::Text(text.clone())),
                    other => push_texts(other, parts),
                }
                return Ok(());
            }
            _ => {}
        }
        if self.limits.reject_attachments {
            return Err(RequestError::new(
                RequestProblem::UnsupportedContent,
                format!(
                    "Content blocks of type '{kind}' are not supported: cursor-agent accepts text only."
                ),
                Some(param.to_owned()),
            ));
        }
        // Whatever cannot be read stays unknown: a block the agent will not see is never
        // a reason to reject the request.
        let mut attachment = Attachment {
            kind: if kind == "image" {
                AttachmentKind::Image
            } else {
                AttachmentKind::Document
            },
            media_type: source_str("media_type").map(str::to_owned),
            size: None,
            name: block
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        match source_type {
            "base64" => attachment.size = source_str("data").map(base64_size),
            "url" => attachment.name = attachment.name.or(source_str("url").map(str::to_owned)),
            "file" => {
                attachment.name = attachment.name.or(source_str("file_id").map(str::to_owned));
            }
            _ => {}
        }
        parts.push(Part::Attachment(attachment));
        Ok(())
    }
}

/// The text blocks of an array of blocks, as text parts (anything else skipped).
fn push_texts(blocks: Option<&Value>, parts: &mut Vec<Part>) {
    let Some(Value::Array(blocks)) = blocks else {
        return;
    };
    for block in blocks {
        if block.get("type").and_then(Value::as_str) == Some("text") {
            if let Some(text) = block.get("text").and_then(Value::as_str) {
                parts.push(Part::Text(text.to_owned()));
            }
        }
    }
}

/// The request's tools: those offered to the agent, and the names of every tool (server
/// and deferred ones included), which `tool_choice` may name.
struct Tools {
    offered: Vec<ToolSpec>,
    names: HashSet<String>,
}

/// Anthropic's rule for a client tool's name, with room for long MCP tool names.
fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn parse_tools(value: Option<&Value>, limits: &RequestLimits) -> Result<Tools, RequestError> {
    let mut tools = Tools {
        offered: Vec::new(),
        names: HashSet::new(),
    };
    let list = tool_list(value, limits)?;
    for (i, tool) in list.iter().enumerate() {
        let param = format!("tools[{i}]");
        let Value::Object(tool) = tool else {
            return Err(RequestError::invalid_type(&param, "an object"));
        };
        match tool.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(kind)) if kind == "custom" => {}
            Some(Value::String(_)) => {
                // A server tool (`web_search_20250305`, `bash_20250124`, …): the API's
                // provider runs it, the agent cannot. Its name may still be chosen.
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    tools.names.insert(name.to_owned());
                }
                continue;
            }
            Some(_) => {
                return Err(RequestError::invalid_type(
                    &format!("{param}.type"),
                    "a string",
                ));
            }
        }
        let name = required_str(tool, "name", &param)?;
        if !valid_tool_name(name) {
            return Err(RequestError::invalid_value(
                "Invalid tool name: use 1 to 128 letters, digits, '_' or '-'.",
                format!("{param}.name"),
            ));
        }
        if !tools.names.insert(name.to_owned()) {
            return Err(RequestError::invalid_value(
                format!("Duplicate tool name '{name}'."),
                format!("{param}.name"),
            ));
        }
        let description = member(tool, "description", &param, "a string", Value::as_str)?;
        let schema = member(tool, "input_schema", &param, "an object", |v| {
            v.is_object().then(|| v.clone())
        })?
        .unwrap_or_else(|| Value::Object(Map::new()));
        let deferred = member(tool, "defer_loading", &param, "a boolean", Value::as_bool)?;
        if deferred != Some(true) {
            let description = description.unwrap_or_default();
            tools
                .offered
                .push(ToolSpec::function(name, description, schema));
        }
    }
    Ok(tools)
}

/// `tool_choice` and whether parallel calls are allowed.
fn parse_tool_choice(
    value: Option<&Value>,
    tools: &Tools,
) -> Result<(ToolChoice, bool), RequestError> {
    let default = if tools.offered.is_empty() {
        ToolChoice::None
    } else {
        ToolChoice::Auto
    };
    let choice = match value {
        None | Some(Value::Null) => return Ok((default, true)),
        Some(Value::Object(choice)) => choice,
        Some(_) => return Err(RequestError::invalid_type("tool_choice", "an object")),
    };
    let serial = member(
        choice,
        "disable_parallel_tool_use",
        "tool_choice",
        "a boolean",
        Value::as_bool,
    )?;
    let kind = required_str(choice, "type", "tool_choice")?;
    let choice = match kind {
        "auto" => default,
        "none" => ToolChoice::None,
        "any" | "tool" if tools.names.is_empty() => {
            return Err(RequestError::invalid_value(
                format!("tool_choice '{kind}' requires tools."),
                "tool_choice.type",
            ));
        }
        "any" => ToolChoice::Required,
        "tool" => {
            let name = required_str(choice, "name", "tool_choice")?;
            if tools.offered.iter().any(|t| t.name == name) {
                ToolChoice::Named(name.to_owned())
            } else if tools.names.contains(name) {
                // A server or deferred tool: the agent is not offered it, so it cannot
                // be made to call it.
                default
            } else {
                return Err(RequestError::invalid_value(
                    "tool_choice names a tool that is not among the tools.",
                    "tool_choice.name",
                ));
            }
        }
        _ => {
            return Err(RequestError::invalid_value(
                "Invalid tool_choice type: use auto, any, tool or none.",
                "tool_choice.type",
            ));
        }
    };
    Ok((choice, serial != Some(true)))
}

/// `thinking`: whether and how the client wants the model to reason.
fn thinking(value: Option<&Value>) -> Result<Reasoning, RequestError> {
    let thinking = match value {
        None | Some(Value::Null) => return Ok(Reasoning::default()),
        Some(Value::Object(thinking)) => thinking,
        Some(_) => return Err(RequestError::invalid_type("thinking", "an object")),
    };
    let mut reasoning = Reasoning {
        thinking: match required_str(thinking, "type", "thinking")? {
            "enabled" => Thinking::On,
            "adaptive" => Thinking::Adaptive,
            "disabled" => Thinking::Off,
            // A newer kind: the request does not say anything known.
            _ => Thinking::Unspecified,
        },
        ..Reasoning::default()
    };
    reasoning.budget_tokens = match thinking.get("budget_tokens") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Some(_) => {
            return Err(RequestError::invalid_type(
                "thinking.budget_tokens",
                "a non-negative integer",
            ));
        }
    };
    reasoning.display = match thinking.get("display") {
        None | Some(Value::Null) => None,
        Some(Value::String(display)) => match display.as_str() {
            "summarized" => Some(ReasoningDisplay::Summarized),
            "omitted" => Some(ReasoningDisplay::Omitted),
            _ => None,
        },
        Some(_) => return Err(RequestError::invalid_type("thinking.display", "a string")),
    };
    Ok(reasoning)
}

/// `output_config`: the effort, and the reply format (or the older `output_format`).
fn output_config(
    object: &Map<String, Value>,
) -> Result<(Option<Effort>, OutputFormat), RequestError> {
    let config = match object.get("output_config") {
        None | Some(Value::Null) => None,
        Some(Value::Object(config)) => Some(config),
        Some(_) => return Err(RequestError::invalid_type("output_config", "an object")),
    };
    let effort = match config.and_then(|c| c.get("effort")) {
        None | Some(Value::Null) => None,
        Some(Value::String(effort)) => match effort.as_str() {
            "none" => Some(Effort::None),
            "minimal" => Some(Effort::Minimal),
            "low" => Some(Effort::Low),
            "medium" => Some(Effort::Medium),
            "high" => Some(Effort::High),
            "xhigh" => Some(Effort::XHigh),
            "max" => Some(Effort::Max),
            _ => None,
        },
        Some(_) => {
            return Err(RequestError::invalid_type(
                "output_config.effort",
                "a string",
            ));
        }
    };
    let (format, param) = match config.and_then(|c| c.get("format")) {
        Some(format) if !format.is_null() => (Some(format), "output_config.format"),
        _ => (object.get("output_format"), "output_format"),
    };
    let format = match format {
        None | Some(Value::Null) => OutputFormat::Text,
        Some(Value::Object(format)) => match required_str(format, "type", param)? {
            "json_schema" => match format.get("schema") {
                Some(schema @ Value::Object(_)) => OutputFormat::JsonSchema {
                    name: None,
                    schema: schema.clone(),
                },
                _ => {
                    return Err(RequestError::invalid_type(
                        &format!("{param}.schema"),
                        "an object",
                    ));
                }
            },
            _ => OutputFormat::Text,
        },
        Some(_) => return Err(RequestError::invalid_type(param, "an object")),
    };
    Ok((effort, format))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::invites_retry;

    fn parse(body: &str) -> Result<Request, RequestError> {
        parse_request(body.as_bytes(), &RequestLimits::default())
    }

    /// A body of `messages` (JSON text) with the required `max_tokens`.
    fn with(messages: &str, extra: &str) -> String {
        format!(r#"{{"model":"claude-x","max_tokens":1024,"messages":{messages}{extra}}}"#)
    }

    #[test]
    fn system_blocks_without_the_billing_header_and_system_turns_in_place() {
        let body = with(
            r##"[{"role":"user","content":[{"type":"text","text":"<reminder>"},{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},
                {"role":"system","content":"# Environment"},
                {"role":"assistant","content":[{"type":"mid_conv_system","content":[{"type":"text","text":"mid"}]},{"type":"text","text":"ok"}]}]"##,
            r#","system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.330.ff0; cc_entrypoint=sdk-cli;"},
                {"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be brief."}]"#,
        );
        let r = parse(&body).unwrap();
        let turns: Vec<(Role, String)> = r
            .conversation
            .messages
            .iter()
            .map(|m| (m.role, m.text().into_owned()))
            .collect();
        assert_eq!(
            turns,
            [
                (Role::System, "You are Claude Code.\nBe brief.".to_owned()),
                (Role::User, "<reminder>\nhi".to_owned()),
                (Role::System, "# Environment".to_owned()),
                (Role::System, "mid".to_owned()),
                (Role::Assistant, "ok".to_owned()),
            ]
        );
        assert!(r.include_usage && !r.stream);
        assert_eq!(r.ignored, ["max_tokens"]);
        // A system field holding only the billing block gives no system message.
        let body = with(
            r#"[{"role":"user","content":"hi"}]"#,
            r#","system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1;"}]"#,
        );
        assert_eq!(parse(&body).unwrap().conversation.messages.len(), 1);
        let body = with(
            r#"[{"role":"user","content":"hi"}]"#,
            r#","system":"Be brief.""#,
        );
        assert_eq!(
            parse(&body).unwrap().conversation.messages[0].role,
            Role::System
        );
    }

    #[test]
    fn a_tool_round_maps_results_to_their_calls() {
        let body = with(
            r#"[{"role":"user","content":"read it"},
                {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":""},{"type":"redacted_thinking","data":"x"},
                    {"type":"text","text":"Reading."},
                    {"type":"tool_use","id":"call_0123456789abcdef01234567","name":"Read","input":{"file_path":"/w/a"}},
                    {"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}]},
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0123456789abcdef01234567","content":"1\tline","cache_control":{"type":"ephemeral"}},
                    {"type":"tool_result","tool_use_id":"toolu_01","is_error":true,"content":[{"type":"text","text":"denied"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
                    {"type":"text","text":"and now?"}]}]"#,
            r#","tools":[{"name":"Read","input_schema":{"type":"object"}},{"name":"Bash","description":"Run","input_schema":{"type":"object"}}]"#,
        );
        let r = parse(&body).unwrap();
        let m = &r.conversation.messages;
        let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::User
            ]
        );
        assert_eq!(m[1].text(), "Reading.", "thinking is dropped");
        let calls: Vec<(&str, &str, &str)> = m[1]
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "call_0123456789abcdef01234567",
                    "Read",
                    r#"{"file_path":"/w/a"}"#
                ),
                ("toolu_01", "Bash", r#"{"command":"ls"}"#)
            ]
        );
        assert_eq!(
            m[2].tool_call_id.as_deref(),
            Some("call_0123456789abcdef01234567")
        );
        assert_eq!((m[2].text().as_ref(), m[2].is_error), ("1\tline", false));
        assert_eq!(
            (m[3].tool_call_id.as_deref(), m[3].is_error),
            (Some("toolu_01"), true)
        );
        assert_eq!(
            m[3].content[1],
            Part::Attachment(Attachment {
                kind: AttachmentKind::Image,
                media_type: Some("image/png".into()),
                size: Some(8),
                name: None
            })
        );
        assert_eq!(m[4].text(), "and now?");
        assert_eq!(r.conversation.tool_choice, ToolChoice::Auto);
        assert!(r.conversation.parallel_tool_calls);
        // The same results without their calls are refused.
        let orphan = with(
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"x"}]}]"#,
            "",
        );
        assert_eq!(
            parse(&orphan).unwrap_err().param.as_deref(),
            Some("messages[0].content[0].tool_use_id")
        );
    }

    #[test]
    fn documents_images_and_other_blocks() {
        let body = with(
            r#"[{"role":"user","content":[
                {"type":"document","title":"spec.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}},
                {"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain words"}},
                {"type":"document","source":{"type":"content","content":[{"type":"text","text":"block words"}]}},
                {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
                {"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"found"}]},
                {"type":"server_tool_use","id":"s1","name":"web_search","input":{}},
                {"type":"container_upload_2031","file_id":"f"}]}]"#,
            "",
        );
        let r = parse(&body).unwrap();
        let parts = &r.conversation.messages[0].content;
        assert_eq!(parts.len(), 5, "{parts:?}");
        assert_eq!(
            parts[0],
            Part::Attachment(Attachment {
                kind: AttachmentKind::Document,
                media_type: Some("application/pdf".into()),
                size: Some(6),
                name: Some("spec.pdf".into())
            })
        );
        assert_eq!(parts[1], Part::Text("plain words".into()));
        assert_eq!(parts[2], Part::Text("block words".into()));
        assert!(
            matches!(&parts[3], Part::Attachment(a) if a.name.as_deref() == Some("https://example.com/a.png"))
        );
        assert_eq!(parts[4], Part::Text("found".into()));
        let limits = RequestLimits {
            reject_attachments: true,
            ..RequestLimits::default()
        };
        let error = parse_request(body.as_bytes(), &limits).unwrap_err();
        assert_eq!(
            (error.problem, error.param.as_deref()),
            (
                RequestProblem::UnsupportedContent,
                Some("messages[0].content[0]")
            )
        );
    }

    #[test]
    fn tools_server_tools_and_choices() {
        let tools = r#","tools":[{"name":"Read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},
            {"type":"custom","name":"Write","input_schema":{"type":"object"},"strict":true,"eager_input_streaming":true},
            {"name":"DeferredToolPlaceholder","description":"d","input_schema":{"type":"object"},"defer_loading":true},
            {"type":"web_search_20250305","name":"web_search","max_uses":3},
            {"type":"bash_20250124","name":"bash"}]"#;
        let user = r#"[{"role":"user","content":"hi"}]"#;
        let r = parse(&with(user, tools)).unwrap();
        let names: Vec<&str> = r
            .conversation
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(names, ["Read", "Write"]);
        let choice = |choice: &str| {
            let r = parse(&with(user, &format!("{tools},\"tool_choice\":{choice}"))).unwrap();
            (
                r.conversation.tool_choice,
                r.conversation.parallel_tool_calls,
            )
        };
        assert_eq!(choice(r#"{"type":"auto"}"#), (ToolChoice::Auto, true));
        assert_eq!(
            choice(r#"{"type":"any","disable_parallel_tool_use":true}"#),
            (ToolChoice::Required, false)
        );
        assert_eq!(
            choice(r#"{"type":"tool","name":"Write"}"#),
            (ToolChoice::Named("Write".into()), true)
        );
        assert_eq!(choice(r#"{"type":"none"}"#), (ToolChoice::None, true));
        // A tool the agent is not offered cannot be forced.
        assert_eq!(
            choice(r#"{"type":"tool","name":"web_search"}"#),
            (ToolChoice::Auto, true)
        );
        let r = parse(&with(
            user,
            r#","tools":[{"type":"web_search_20250305","name":"web_search"}]"#,
        ))
        .unwrap();
        assert_eq!(
            r.conversation.tool_choice,
            ToolChoice::None,
            "nothing offered"
        );
    }

    #[test]
    fn thinking_effort_and_output_format() {
        let user = r#"[{"role":"user","content":"hi"}]"#;
        let r = parse(&with(
            user,
            r#","thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"high"},"metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"s\"}"},"context_management":{"edits":[]}"#,
        ))
        .unwrap();
        assert_eq!(
            r.reasoning,
            Reasoning {
                thinking: Thinking::Adaptive,
                effort: Some(Effort::High),
                budget_tokens: None,
                display: Some(ReasoningDisplay::Omitted)
            }
        );
        assert_eq!(r.ignored, ["max_tokens", "metadata", "context_management"]);
        let r = parse(&with(
            user,
            r#","thinking":{"type":"enabled","budget_tokens":31999},"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"title":{"type":"string"}}}}}"#,
        ))
        .unwrap();
        assert_eq!(
            (
                r.reasoning.thinking,
                r.reasoning.budget_tokens,
                r.reasoning.display
            ),
            (Thinking::On, Some(31999), None)
        );
        assert!(
            matches!(&r.conversation.output_format, OutputFormat::JsonSchema { schema, .. } if schema["properties"]["title"].is_object())
        );
        let r = parse(&with(
            user,
            r#","output_format":{"type":"json_schema","schema":{"type":"object"}},"thinking":{"type":"disabled"}"#,
        ))
        .unwrap();
        assert!(matches!(
            r.conversation.output_format,
            OutputFormat::JsonSchema { .. }
        ));
        assert_eq!(r.reasoning.thinking, Thinking::Off);
        // Newer kinds of thinking, efforts and displays are accepted as unknown.
        let r = parse(&with(
            user,
            r#","thinking":{"type":"deliberate","display":"verbatim"},"output_config":{"effort":"extreme","format":{"type":"grammar"}}"#,
        ))
        .unwrap();
        assert_eq!(r.reasoning, Reasoning::default());
        assert_eq!(r.conversation.output_format, OutputFormat::Text);
    }

    #[test]
    fn max_tokens_is_required_and_never_a_bound() {
        let error =
            parse(r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#).unwrap_err();
        assert_eq!(
            (error.status(), error.param.as_deref(), error.problem),
            (400, Some("max_tokens"), RequestProblem::MissingParameter)
        );
        for (value, problem) in [
            ("0", RequestProblem::InvalidValue),
            ("1.5", RequestProblem::InvalidValue),
            ("\"8\"", RequestProblem::InvalidType),
        ] {
            let body = format!(
                r#"{{"max_tokens":{value},"messages":[{{"role":"user","content":"hi"}}]}}"#
            );
            assert_eq!(parse(&body).unwrap_err().problem, problem, "{value}");
        }
        let r =
            parse(r#"{"max_tokens":8000.0,"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!(r.model, "auto");
    }

    #[test]
    fn errors_name_the_field() {
        let user = r#"[{"role":"user","content":"hi"}]"#;
        let cases = [
            (with(r#"[]"#, ""), "messages"),
            (with(r#"{}"#, ""), "messages"),
            (
                with(r#"[{"role":"robot","content":"x"}]"#, ""),
                "messages[0].role",
            ),
            (with(r#"[{"content":"x"}]"#, ""), "messages[0].role"),
            (with(r#"[{"role":"user"}]"#, ""), "messages[0].content"),
            (
                with(r#"[{"role":"user","content":5}]"#, ""),
                "messages[0].content",
            ),
            (
                with(r#"[{"role":"user","content":[{"text":"x"}]}]"#, ""),
                "messages[0].content[0].type",
            ),
            (
                with(r#"[{"role":"user","content":["x"]}]"#, ""),
                "messages[0].content[0]",
            ),
            (
                with(
                    r#"[{"role":"user","content":[{"type":"text","text":1}]}]"#,
                    "",
                ),
                "messages[0].content[0].text",
            ),
            (
                with(
                    r#"[{"role":"assistant","content":[{"type":"tool_use","name":"a","input":{}}]}]"#,
                    "",
                ),
                "messages[0].content[0].id",
            ),
            (
                with(
                    r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]"#,
                    "",
                ),
                "messages[0].content[0].name",
            ),
            (
                with(
                    r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":"{}"}]}]"#,
                    "",
                ),
                "messages[0].content[0].input",
            ),
            (
                with(
                    r#"[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]"#,
                    "",
                ),
                "messages[0].content[0].tool_use_id",
            ),
            (
                with(
                    r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":7}]}]"#,
                    "",
                ),
                "messages[1].content[0].content",
            ),
            (
                with(
                    r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]}]"#,
                    "",
                ),
                "messages[1].content[0].is_error",
            ),
            (
                with(
                    r#"[{"role":"user","content":[{"type":"mid_conv_system"}]}]"#,
                    "",
                ),
                "messages[0].content[0].content",
            ),
            (with(user, r#","system":5"#), "system"),
            (
                with(user, r#","system":[{"type":"text"}]"#),
                "system[0].text",
            ),
            (with(user, r#","stream":"yes""#), "stream"),
            (with(user, r#","tools":{}"#), "tools"),
            (with(user, r#","tools":[1]"#), "tools[0]"),
            (
                with(user, r#","tools":[{"input_schema":{}}]"#),
                "tools[0].name",
            ),
            (with(user, r#","tools":[{"name":"a b"}]"#), "tools[0].name"),
            (
                with(user, r#","tools":[{"name":"a"},{"name":"a"}]"#),
                "tools[1].name",
            ),
            (
                with(user, r#","tools":[{"name":"a","input_schema":"{}"}]"#),
                "tools[0].input_schema",
            ),
            (
                with(user, r#","tools":[{"name":"a","description":1}]"#),
                "tools[0].description",
            ),
            (
                with(user, r#","tools":[{"name":"a","defer_loading":"no"}]"#),
                "tools[0].defer_loading",
            ),
            (
                with(user, r#","tools":[{"type":7,"name":"a"}]"#),
                "tools[0].type",
            ),
            (with(user, r#","tool_choice":"auto""#), "tool_choice"),
            (with(user, r#","tool_choice":{}"#), "tool_choice.type"),
            (
                with(user, r#","tool_choice":{"type":"any"}"#),
                "tool_choice.type",
            ),
            (
                with(
                    user,
                    r#","tools":[{"name":"a"}],"tool_choice":{"type":"always"}"#,
                ),
                "tool_choice.type",
            ),
            (
                with(
                    user,
                    r#","tools":[{"name":"a"}],"tool_choice":{"type":"tool"}"#,
                ),
                "tool_choice.name",
            ),
            (
                with(
                    user,
                    r#","tools":[{"name":"a"}],"tool_choice":{"type":"tool","name":"b"}"#,
                ),
                "tool_choice.name",
            ),
            (
                with(
                    user,
                    r#","tools":[{"name":"a"}],"tool_choice":{"type":"auto","disable_parallel_tool_use":1}"#,
                ),
                "tool_choice.disable_parallel_tool_use",
            ),
            (with(user, r#","thinking":true"#), "thinking"),
            (with(user, r#","thinking":{}"#), "thinking.type"),
            (
                with(
                    user,
                    r#","thinking":{"type":"enabled","budget_tokens":"many"}"#,
                ),
                "thinking.budget_tokens",
            ),
            (
                with(user, r#","thinking":{"type":"enabled","display":false}"#),
                "thinking.display",
            ),
            (with(user, r#","output_config":[]"#), "output_config"),
            (
                with(user, r#","output_config":{"effort":3}"#),
                "output_config.effort",
            ),
            (
                with(user, r#","output_config":{"format":"json"}"#),
                "output_config.format",
            ),
            (
                with(
                    user,
                    r#","output_config":{"format":{"type":"json_schema"}}"#,
                ),
                "output_config.format.schema",
            ),
            (
                with(user, r#","output_format":{"schema":{}}"#),
                "output_format.type",
            ),
            (
                r#"{"model":"--force","max_tokens":1,"messages":[{"role":"user","content":"x"}]}"#
                    .to_owned(),
                "model",
            ),
        ];
        for (body, expected) in cases {
            let error = parse(&body).unwrap_err();
            assert_eq!(
                (error.status(), error.param.as_deref()),
                (400, Some(expected)),
                "{body}"
            );
            assert!(!invites_retry(&error.message), "{}", error.message);
        }
    }
}
