//! JSON-RPC 2.0 as MCP uses it: classifying what a client sent (request, notification,
//! response, or something invalid, with the error code it earns) and writing replies.
//!
//! Incoming messages are read borrowing from the input: the id, method and params stay
//! slices of the body or line until a reply needs them. Replies are written by hand around
//! serde's serialisation of their parts, which escapes every control character, so a reply
//! never contains a raw newline (stdio frames one message a line, SSE one `data:` line an
//! event), even when it echoes a client's id or text.

use std::borrow::Cow;
use std::io::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

/// `-32700`: the input is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// `-32600`: JSON, but not a valid JSON-RPC message (or one this server refuses as such:
/// a batch where none is allowed, a duplicate id, a request before `initialize`).
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// `-32601`: no such method.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// `-32602`: the method's params are wrong (not an object, an unknown tool, a malformed
/// `tools/call`).
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// `-32000`: the server refuses for a reason of its own (a limit, the transport's rules).
pub(crate) const SERVER_ERROR: i64 = -32000;

/// One message from the client, classified.
#[derive(Debug)]
pub(crate) enum Incoming<'a> {
    /// A request: it gets exactly one answer.
    Request {
        /// The id, as sent (a string or a number).
        id: &'a RawValue,
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// A notification: never answered.
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// A response to a request of ours. This server sends none, so every response is
    /// ignored.
    Response,
    /// Not a valid message: answered with this error, under the message's id when it has
    /// a usable one, else `null`.
    Invalid {
        id: Option<&'a RawValue>,
        code: i64,
        message: &'static str,
    },
}

/// The members of a message. A member given as `null` is kept (as the text `null`), so
/// that `"id": null` is told apart from no id.
#[derive(Deserialize)]
struct Members<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Deserializes a member as given, `null` included (serde's `Option` would make `null`
/// absent).
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A JSON string's value, borrowed when it has no escapes.
pub(crate) fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(text) {
        Ok(plain) => Some(Cow::Borrowed(plain)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// Whether `raw` is a JSON object.
pub(crate) fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// Whether `raw` is `null`.
pub(crate) fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

/// Classifies one message (an element of a batch, or the whole input).
pub(crate) fn classify(raw: &RawValue) -> Incoming<'_> {
    if !is_object(raw) {
        return invalid(None, "A JSON-RPC message must be an object.");
    }
    let Ok(members) = serde_json::from_str::<Members<'_>>(raw.get()) else {
        return invalid(None, "The message repeats a member.");
    };
    // MCP ids are strings or numbers; `null` is not allowed (unlike base JSON-RPC).
    let id = members
        .id
        .filter(|id| matches!(id.get().as_bytes()[0], b'"' | b'-' | b'0'..=b'9'));
    if members.jsonrpc.and_then(string).as_deref() != Some("2.0") {
        return invalid(id, "`jsonrpc` must be \"2.0\".");
    }
    if let Some(method) = members.method {
        let Some(method) = string(method) else {
            return invalid(id, "`method` must be a string.");
        };
        return match (members.id, id) {
            (None, _) => Incoming::Notification {
                method,
                params: members.params,
            },
            (Some(_), Some(id)) => Incoming::Request {
                id,
                method,
                params: members.params,
            },
            (Some(_), None) => invalid(None, "A request id must be a string or a number."),
        };
    }
    if members.id.is_some() && (members.result.is_some() || members.error.is_some()) {
        return Incoming::Response;
    }
    invalid(
        id,
        "The message is neither a request, a notification nor a response.",
    )
}

fn invalid<'a>(id: Option<&'a RawValue>, message: &'static str) -> Incoming<'a> {
    Incoming::Invalid {
        id,
        code: INVALID_REQUEST,
        message,
    }
}

/// What the input of one POST or one stdio line holds.
#[derive(Debug)]
pub(crate) enum Input<'a> {
    /// One message.
    Single(&'a RawValue),
    /// A batch (a JSON array), possibly empty.
    Batch(Vec<&'a RawValue>),
    /// Not JSON (or not UTF-8).
    Unparsable,
}

/// Parses the input of one POST body or one stdio line.
pub(crate) fn parse(bytes: &[u8]) -> Input<'_> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Input::Unparsable;
    };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return Input::Unparsable;
    };
    if raw.get().starts_with('[') {
        match serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
            Ok(batch) => Input::Batch(batch),
            Err(_) => Input::Unparsable,
        }
    } else {
        Input::Single(raw)
    }
}

/// Appends a success response whose `result` is the JSON text `result`.
pub(crate) fn write_result(out: &mut Vec<u8>, id: &str, result: &str) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.as_bytes());
    out.push(b'}');
}

/// Appends an error response. `id` is the request's id text, or `None` for `null`.
pub(crate) fn write_error(out: &mut Vec<u8>, id: Option<&str>, code: i64, message: &str) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.unwrap_or("null").as_bytes());
    out.extend_from_slice(b",\"error\":{\"code\":");
    let _ = write!(out, "{code}");
    out.extend_from_slice(b",\"message\":");
    serde_json::to_writer(&mut *out, message).expect("a string serialises");
    out.extend_from_slice(b"}}");
}

/// The id text of a request, compact: what is echoed and compared. The text as sent,
/// except that a string spelled with escapes is re-spelled canonically, so that two
/// spellings of one id are one id.
pub(crate) fn id_text(id: &RawValue) -> Cow<'_, str> {
    let text = id.get();
    if text.starts_with('"') && text.contains('\\') {
        if let Some(value) = string(id) {
            return Cow::Owned(serde_json::to_string(&value).expect("a string serialises"));
        }
    }
    Cow::Borrowed(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn messages_are_classified() {
        let cases: &[(&str, &str)] = &[
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "request"),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}"#,
                "request",
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "notification",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "response"),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#,
                "response",
            ),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "invalid 1"),
            (r#"{"id":1,"method":"ping"}"#, "invalid 1"),
            (r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#, "invalid 1"),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                "invalid null",
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
                "invalid null",
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
                "invalid null",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, "invalid 1"),
            (r#"{"jsonrpc":"2.0","id":1}"#, "invalid 1"),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
                "invalid null",
            ),
            (r#"[1]"#, "invalid null"),
            (r#""ping""#, "invalid null"),
        ];
        for (text, want) in cases {
            let got = match classify(raw(text)) {
                Incoming::Request { .. } => "request".to_owned(),
                Incoming::Notification { .. } => "notification".to_owned(),
                Incoming::Response => "response".to_owned(),
                Incoming::Invalid { id, code, .. } => {
                    assert_eq!(code, INVALID_REQUEST);
                    format!("invalid {}", id.map_or("null", RawValue::get))
                }
            };
            assert_eq!(&got, want, "{text}");
        }
    }

    #[test]
    fn an_escaped_method_is_read() {
        let Incoming::Request { method, .. } =
            classify(raw(r#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#))
        else {
            panic!()
        };
        assert_eq!(method, "tools/list");
    }

    #[test]
    fn input_is_one_message_a_batch_or_unparsable() {
        assert!(matches!(parse(b" {\"a\":1} "), Input::Single(_)));
        assert!(matches!(parse(b"[{},{}]"), Input::Batch(b) if b.len() == 2));
        assert!(matches!(parse(b"[]"), Input::Batch(b) if b.is_empty()));
        for bad in [&b"{"[..], b"", b"{} {}", b"\xff{}", b"nul"] {
            assert!(matches!(parse(bad), Input::Unparsable), "{bad:?}");
        }
    }

    #[test]
    fn replies_are_one_line_and_echo_the_id() {
        let mut out = Vec::new();
        write_error(&mut out, Some(r#""a\nb""#), INVALID_PARAMS, "bad\nthing");
        assert!(!out.contains(&b'\n'));
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["id"], "a\nb");
        assert_eq!(value["error"]["code"], INVALID_PARAMS);
        assert_eq!(value["error"]["message"], "bad\nthing");
        out.clear();
        write_result(&mut out, "7", "{}");
        assert_eq!(out, br#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
    }

    #[test]
    fn two_spellings_of_one_string_id_are_one_id() {
        assert_eq!(id_text(raw(r#""\u0061b""#)), r#""ab""#);
        assert_eq!(id_text(raw(r#""ab""#)), r#""ab""#);
        assert_eq!(id_text(raw("12")), "12");
    }
}
