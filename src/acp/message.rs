//! JSON-RPC 2.0 messages as ACP frames them: one object a line, in both directions.
//!
//! Incoming lines are parsed borrowing from the line (text deltas are not copied unless
//! they carry escapes). Outgoing messages are serialised by serde, which escapes every
//! control character, so no message we write can contain a raw newline — even when it
//! echoes an agent's id that contains one.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// One line from the agent: a request (id and method), a notification (method only) or
/// a response (id and result or error).
#[derive(Debug, Deserialize)]
pub(crate) struct Incoming<'a> {
    #[serde(borrow, default)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(default)]
    pub(crate) error: Option<RpcError>,
}

/// A JSON-RPC error object. `data` varies by agent (an object with `message` or
/// `details`, a validation issue array, a string), so it is kept as a value.
#[derive(Debug, Deserialize)]
pub(crate) struct RpcError {
    #[serde(default)]
    pub(crate) code: i64,
    #[serde(default)]
    pub(crate) message: String,
    #[serde(default)]
    pub(crate) data: Option<Value>,
}

impl RpcError {
    /// The message and, when the agent put a better one in `data`, that too.
    pub(crate) fn describe(&self) -> String {
        let detail = self.data.as_ref().and_then(|data| match data {
            Value::String(text) => Some(text.as_str()),
            Value::Object(map) => ["message", "details"]
                .iter()
                .find_map(|key| map.get(*key).and_then(Value::as_str)),
            _ => None,
        });
        match detail {
            Some(detail) if detail != self.message => format!("{} ({detail})", self.message),
            _ => self.message.clone(),
        }
    }
}

/// The `-32000` code: the agent is not logged in.
pub(crate) const AUTH_REQUIRED: i64 = -32000;
/// The `-32601` code: method not found.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// Appends one request line.
pub(crate) fn write_request(out: &mut Vec<u8>, id: u64, method: &str, params: Value) {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    write_line(out, &message);
}

/// Appends one notification line.
pub(crate) fn write_notification(out: &mut Vec<u8>, method: &str, params: Value) {
    let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
    write_line(out, &message);
}

/// Appends a response to the agent's request `id` (echoed whatever its JSON type).
pub(crate) fn write_result(out: &mut Vec<u8>, id: &RawValue, result: Value) {
    let message = json!({"jsonrpc": "2.0", "id": echo(id), "result": result});
    write_line(out, &message);
}

/// Appends an error response to the agent's request `id`.
pub(crate) fn write_error(out: &mut Vec<u8>, id: &RawValue, code: i64, message: &str) {
    let message =
        json!({"jsonrpc": "2.0", "id": echo(id), "error": {"code": code, "message": message}});
    write_line(out, &message);
}

/// The agent's id as a value: a number, a string (a UUID for codex-acp), anything.
fn echo(id: &RawValue) -> Value {
    serde_json::from_str(id.get()).unwrap_or(Value::Null)
}

fn write_line(out: &mut Vec<u8>, message: &Value) {
    serde_json::to_writer(&mut *out, message).expect("a JSON value serialises");
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_with_a_newline_is_echoed_escaped_on_one_line() {
        let line = r#"{"jsonrpc":"2.0","id":"a\nb","method":"x"}"#;
        let incoming: Incoming<'_> = serde_json::from_str(line).unwrap();
        let mut out = Vec::new();
        write_error(&mut out, incoming.id.unwrap(), METHOD_NOT_FOUND, "no");
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back["id"], "a\nb");
    }

    #[test]
    fn error_data_of_any_shape_is_described() {
        let error: RpcError = serde_json::from_str(
            r#"{"code":-32603,"message":"Internal error","data":{"details":"Invalid value"}}"#,
        )
        .unwrap();
        assert_eq!(error.describe(), "Internal error (Invalid value)");
        let error: RpcError =
            serde_json::from_str(r#"{"code":-32602,"message":"bad","data":[{"path":[]}]}"#)
                .unwrap();
        assert_eq!(error.describe(), "bad");
    }
}
