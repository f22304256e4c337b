//! What the `request`, `bridge` and `abi` bodies need to know of each dialect: its request
//! parser, request bodies of every kind, its error body, and the checkers of its
//! responses (streams whole or cut, single bodies).
//!
//! The Responses and Messages checkers are the integration tests' own
//! ([`responses`](crate::responses), [`messages`](crate::messages)), so that the fuzzer
//! holds every response to exactly the rules the tests hold the fixtures to.

use agentwire::api::{ErrorReply, Request, RequestError, RequestLimits};
use agentwire::bridge::Dialect;
use agentwire::{anthropic, openai};
use arbitrary::Arbitrary;
use serde_json::Value;

use crate::chat::{self, Ending};
use crate::fuzzing::unknown;
use crate::{messages, responses};

/// Every dialect, in the order of `aw_dialect`'s values.
pub(crate) const DIALECTS: [Dialect; 3] = [
    Dialect::ChatCompletions,
    Dialect::Responses,
    Dialect::Messages,
];

/// The dialect of `n`, modulo their number.
pub(crate) fn dialect(n: u8) -> Dialect {
    DIALECTS[usize::from(n) % DIALECTS.len()]
}

/// The dialect's request parser.
pub(crate) fn parse(
    dialect: Dialect,
    body: &[u8],
    limits: &RequestLimits,
) -> Result<Request, RequestError> {
    match dialect {
        Dialect::ChatCompletions => openai::chat::parse_request(body, limits),
        Dialect::Responses => openai::responses::parse_request(body, limits),
        Dialect::Messages => anthropic::parse_request(body, limits),
        other => unknown(other),
    }
}

/// The dialect's error body for `reply`.
pub(crate) fn error_body(dialect: Dialect, reply: &ErrorReply) -> Vec<u8> {
    let mut body = Vec::new();
    dialect.write_error(reply, &mut body);
    body
}

/// Asserts `body` is the dialect's error body for an error of `status`: the OpenAI shape
/// (`{"error":{"message","type","param","code"}}`) or the Anthropic one
/// (`{"type":"error","error":{"type","message"}}`) with the type of that status.
pub(crate) fn check_error_body(dialect: Dialect, status: u16, body: &[u8]) {
    let value: Value = serde_json::from_slice(body).unwrap_or_else(|e| {
        panic!(
            "{dialect:?} error body is not JSON ({e}): {}",
            String::from_utf8_lossy(body)
        )
    });
    match dialect {
        Dialect::ChatCompletions | Dialect::Responses => chat::error_body(&value),
        Dialect::Messages => {
            messages::check_error_object(&value);
            let object = value.as_object().expect("an object");
            assert_eq!(object.len(), 2, "error body has other members: {value}");
            let kind = &value["error"]["type"];
            match status {
                400 | 405 | 415 => assert_eq!(kind, "invalid_request_error", "{value}"),
                404 => assert_eq!(kind, "not_found_error", "{value}"),
                413 => assert_eq!(kind, "request_too_large", "{value}"),
                _ => {}
            }
        }
        other => unknown(other),
    }
}

/// Which request body a bridge is built from; each exists in every dialect.
#[derive(Debug, Clone, Arbitrary)]
pub enum RequestBody {
    /// Agent mode, streaming.
    AgentStream,
    /// Agent mode, streaming, asking for more: usage (Chat Completions), reasoning
    /// summaries (Responses, as Codex asks), thinking (Messages, as Claude Code asks).
    AgentStreamMore,
    /// Agent mode, one JSON body.
    AgentPlain,
    /// Client tools, streaming (the project's client-shaped fixture of the dialect).
    ClientStream,
    /// Client tools, one JSON body.
    ClientPlain,
    /// Tools listed with a tool choice of none: agent mode.
    ToolsNone,
    /// A tool choice naming one tool.
    ToolsNamed,
    /// An invalid body.
    Invalid,
    /// Any bytes.
    Raw(Vec<u8>),
}

/// The two tools the built-in bodies list, in the Chat Completions and Responses shape
/// (`parameters`) and the Messages one (`input_schema`).
const READ_SCHEMA: &str =
    r#"{"type":"object","properties":{"filePath":{"type":"string"}},"required":["filePath"]}"#;
const BASH_SCHEMA: &str = r#"{"type":"object","properties":{"command":{"type":"string"}}}"#;

impl RequestBody {
    /// The body in `dialect`.
    pub(crate) fn bytes(&self, dialect: Dialect) -> Vec<u8> {
        if let RequestBody::Raw(bytes) = self {
            return bytes.clone();
        }
        let text = match dialect {
            Dialect::ChatCompletions => self.chat(),
            Dialect::Responses => self.responses(),
            Dialect::Messages => self.messages(),
            other => unknown(other),
        };
        text.into_bytes()
    }

    fn chat(&self) -> String {
        let hi = r#""messages":[{"role":"user","content":"hi"}]"#;
        let tools = format!(
            r#""tools":[{{"type":"function","function":{{"name":"read","parameters":{READ_SCHEMA}}}}},{{"type":"function","function":{{"name":"bash","parameters":{BASH_SCHEMA}}}}}]"#
        );
        match self {
            RequestBody::AgentStream => format!(r#"{{"model":"auto","stream":true,{hi}}}"#),
            RequestBody::AgentStreamMore => format!(
                r#"{{"model":"auto","stream":true,"stream_options":{{"include_usage":true}},{hi}}}"#
            ),
            RequestBody::AgentPlain => format!(r#"{{"model":"auto",{hi}}}"#),
            RequestBody::ClientStream => {
                include_str!("../../../tests/fixtures/requests/client_tools.json").into()
            }
            RequestBody::ClientPlain => {
                include_str!("../../../tests/fixtures/requests/client_tools_nostream.json").into()
            }
            RequestBody::ToolsNone => {
                format!(r#"{{"model":"auto","stream":true,"tool_choice":"none",{tools},{hi}}}"#)
            }
            RequestBody::ToolsNamed => format!(
                r#"{{"model":"auto","stream":true,"tool_choice":{{"type":"function","function":{{"name":"read"}}}},{tools},{hi}}}"#
            ),
            RequestBody::Invalid => r#"{"model":"auto","messages":"nope"}"#.into(),
            RequestBody::Raw(_) => unreachable!("raw bytes are no dialect's"),
        }
    }

    fn responses(&self) -> String {
        let hi = r#""input":"hi""#;
        let tools = format!(
            r#""tools":[{{"type":"function","name":"read","parameters":{READ_SCHEMA}}},{{"type":"function","name":"bash","parameters":{BASH_SCHEMA}}}]"#
        );
        match self {
            RequestBody::AgentStream => format!(r#"{{"model":"auto","stream":true,{hi}}}"#),
            RequestBody::AgentStreamMore => {
                format!(r#"{{"model":"auto","stream":true,"reasoning":{{"summary":"auto"}},{hi}}}"#)
            }
            RequestBody::AgentPlain => format!(r#"{{"model":"auto",{hi}}}"#),
            RequestBody::ClientStream => {
                include_str!("../../../tests/fixtures/requests/responses/client_tools.json").into()
            }
            RequestBody::ClientPlain => include_str!(
                "../../../tests/fixtures/requests/responses/client_tools_nostream.json"
            )
            .into(),
            RequestBody::ToolsNone => {
                format!(r#"{{"model":"auto","stream":true,"tool_choice":"none",{tools},{hi}}}"#)
            }
            RequestBody::ToolsNamed => format!(
                r#"{{"model":"auto","stream":true,"tool_choice":{{"type":"function","name":"read"}},{tools},{hi}}}"#
            ),
            RequestBody::Invalid => r#"{"model":"auto","input":42}"#.into(),
            RequestBody::Raw(_) => unreachable!("raw bytes are no dialect's"),
        }
    }

    fn messages(&self) -> String {
        let hi = r#""max_tokens":1024,"messages":[{"role":"user","content":"hi"}]"#;
        let tools = format!(
            r#""tools":[{{"name":"read","input_schema":{READ_SCHEMA}}},{{"name":"bash","input_schema":{BASH_SCHEMA}}}]"#
        );
        match self {
            RequestBody::AgentStream => format!(r#"{{"model":"auto","stream":true,{hi}}}"#),
            RequestBody::AgentStreamMore => {
                include_str!("../../../tests/fixtures/requests/messages/thinking.json").into()
            }
            RequestBody::AgentPlain => format!(r#"{{"model":"auto",{hi}}}"#),
            RequestBody::ClientStream => {
                include_str!("../../../tests/fixtures/requests/messages/client_tools.json").into()
            }
            RequestBody::ClientPlain => {
                include_str!("../../../tests/fixtures/requests/messages/client_tools_nostream.json")
                    .into()
            }
            RequestBody::ToolsNone => format!(
                r#"{{"model":"auto","stream":true,"tool_choice":{{"type":"none"}},{tools},{hi}}}"#
            ),
            RequestBody::ToolsNamed => format!(
                r#"{{"model":"auto","stream":true,"tool_choice":{{"type":"tool","name":"read"}},{tools},{hi}}}"#
            ),
            RequestBody::Invalid => {
                r#"{"model":"auto","max_tokens":1024,"messages":"nope"}"#.into()
            }
            RequestBody::Raw(_) => unreachable!("raw bytes are no dialect's"),
        }
    }
}

/// The names of a request body's tools, in any dialect's shape (`function.name` or
/// `name`).
pub(crate) fn tool_names(body: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    value["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or_else(|| t["name"].as_str())
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts a stream body of `dialect` is well formed: whole with [`Ending::Complete`]
/// (the dialect's whole state machine), a run of whole frames with [`Ending::Cut`].
/// `model` is the model the response echoes. Returns the names of the tools it called.
pub(crate) fn check_stream(
    dialect: Dialect,
    body: &[u8],
    ending: Ending,
    model: &str,
) -> Vec<String> {
    match (dialect, ending) {
        (Dialect::ChatCompletions, _) => chat::stream(body, ending)
            .tool_calls
            .into_iter()
            .map(|(_, name, _)| name)
            .collect(),
        (_, Ending::Cut) => {
            check_frames(body);
            Vec::new()
        }
        (Dialect::Responses, Ending::Complete) => {
            let summary = responses::check_responses_stream(body);
            called(&summary.done_items)
        }
        (Dialect::Messages, Ending::Complete) => messages::check_stream(body, model)
            .tool_uses()
            .into_iter()
            .map(|(_, name, _)| name)
            .collect(),
        (other, Ending::Complete) => unknown(other),
    }
}

/// Asserts a successful JSON body of `dialect`: a `chat.completion`, a `response` or a
/// `message` echoing `model`. Returns the names of the tools it called.
pub(crate) fn check_body(dialect: Dialect, value: &Value, model: &str) -> Vec<String> {
    match dialect {
        Dialect::ChatCompletions => {
            chat::completion(value);
            value["choices"][0]["message"]["tool_calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| c["function"]["name"].as_str().expect("name").to_owned())
                        .collect()
                })
                .unwrap_or_default()
        }
        Dialect::Responses => {
            responses::check_responses_body(value);
            assert_eq!(value["model"], model, "{value}");
            called(value["output"].as_array().expect("output"))
        }
        Dialect::Messages => {
            messages::check_body(value, model);
            value["content"]
                .as_array()
                .expect("content")
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["name"].as_str().expect("name").to_owned())
                .collect()
        }
        other => unknown(other),
    }
}

/// The names of the tool calls among Responses output items.
fn called(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .filter(|item| {
            matches!(
                item["type"].as_str(),
                Some("function_call" | "custom_tool_call")
            )
        })
        .map(|item| item["name"].as_str().expect("name").to_owned())
        .collect()
}

/// A stream cut short by the client leaving: whole frames, each a comment or an `event:`
/// line and one `data:` line of JSON whose `type` is the event's name.
fn check_frames(body: &[u8]) {
    let text = std::str::from_utf8(body).expect("the stream is UTF-8");
    if text.is_empty() {
        return;
    }
    assert!(
        text.ends_with("\n\n"),
        "the stream stops inside a frame: {text:?}"
    );
    for frame in text[..text.len() - 2].split("\n\n") {
        if frame.starts_with(':') {
            assert!(!frame.contains('\n'), "a comment spans lines: {frame:?}");
            continue;
        }
        let (event, data) = frame
            .split_once('\n')
            .unwrap_or_else(|| panic!("an event line and a data line: {frame:?}"));
        let name = event.strip_prefix("event: ").expect("an event line");
        let data = data.strip_prefix("data: ").expect("a data line");
        assert!(!data.contains('\n'), "one line of data: {frame:?}");
        let value: Value =
            serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"));
        assert_eq!(value["type"], name, "the event line and the data agree");
    }
}
