//! `mcp::Server` for JavaScript: the client's tools offered to an agent as an MCP server,
//! and what the package's MCP objects share with an ACP connection's MCP endpoint (the
//! settings, the HTTP request, the exchange records).
//!
//! An exchange's outputs cross as one byte string per poll, records the TypeScript layer
//! reads back into `McpOutput` objects:
//!
//! ```text
//! head:  1, status (u16 LE), then content type, session id and allow, each as a length (u8)
//!        and its bytes (length 0: none)
//! body:  2, length (u32 LE), bytes
//! end:   4
//! ```
//!
//! Exchanges and calls are numbers in JavaScript (their `get()`, exact as `f64` below
//! 2^53); the core takes only its own handles back, so the server keeps those of the open
//! exchanges and pending calls.

use agentwire::conversation::Part;
use agentwire::mcp::{
    self, CallId, CancelReason, ExchangeId, ExchangeOutput, HttpRequest, McpEvent, Server,
    ToolOutcome,
};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::wasm_bindgen;

use crate::bridge::request_arguments;
use crate::config::{from_json, present, set};
use crate::error::{Code, RawError, millis};

const HEAD: u8 = 1;
const BODY: u8 = 2;
const END: u8 = 4;

/// The package's `McpConfig`: `AcpConfig.mcp`, and a standalone server's settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct McpConfigPatch {
    #[serde(default, deserialize_with = "present")]
    server_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    server_version: Option<String>,
    #[serde(default, deserialize_with = "present")]
    instructions: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    keep_alive_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    call_limit_ms: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    max_pending_calls: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_body_bytes: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_exchanges: Option<usize>,
}

impl McpConfigPatch {
    pub(crate) fn apply(self, config: &mut mcp::Config) {
        // Destructured whole, so a field added to the patch cannot be forgotten here.
        let McpConfigPatch {
            server_name,
            server_version,
            instructions,
            keep_alive_ms,
            call_limit_ms,
            max_pending_calls,
            max_body_bytes,
            max_exchanges,
        } = self;
        set(&mut config.server_name, server_name);
        set(&mut config.server_version, server_version);
        set(&mut config.instructions, instructions);
        set(&mut config.keep_alive_ms, keep_alive_ms);
        set(&mut config.call_limit_ms, call_limit_ms);
        set(&mut config.max_pending_calls, max_pending_calls);
        set(&mut config.max_body_bytes, max_body_bytes);
        set(&mut config.max_exchanges, max_exchanges);
    }
}

/// Parses `json` (or nothing: the defaults) into an [`mcp::Config`].
pub(crate) fn parse_config(json: Option<&str>) -> Result<mcp::Config, RawError> {
    let mut config = mcp::Config::default();
    if let Some(json) = json {
        let patch: McpConfigPatch = from_json(json, "MCP config")?;
        patch.apply(&mut config);
    }
    Ok(config)
}

/// One HTTP request to an MCP endpoint as the package passes it: each header that MCP
/// reads, and the body.
pub(crate) struct RequestArguments {
    pub(crate) method: String,
    pub(crate) accept: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) protocol_version: Option<String>,
}

impl RequestArguments {
    pub(crate) fn request<'a>(&'a self, body: &'a [u8]) -> HttpRequest<'a> {
        HttpRequest {
            method: &self.method,
            accept: self.accept.as_deref(),
            content_type: self.content_type.as_deref(),
            session_id: self.session_id.as_deref(),
            protocol_version: self.protocol_version.as_deref(),
            body,
        }
    }
}

/// Appends `output` to `out` as one record (the module's doc lists them); whether it was
/// the end.
pub(crate) fn encode(out: &mut Vec<u8>, output: &ExchangeOutput<'_>) -> bool {
    match output {
        ExchangeOutput::Head(head) => {
            out.push(HEAD);
            out.extend_from_slice(&head.status.to_le_bytes());
            for text in [head.content_type, head.session_id, head.allow] {
                let text = text.unwrap_or_default().as_bytes();
                // Media types, `Allow` and session ids (a caller's random token) are short;
                // a longer session id is cut rather than corrupting the record.
                let length = text.len().min(255);
                out.push(length as u8);
                out.extend_from_slice(&text[..length]);
            }
            false
        }
        ExchangeOutput::Body(bytes) => {
            out.push(BODY);
            // A wasm32 buffer is below 4 GiB.
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
            false
        }
        ExchangeOutput::End => {
            out.push(END);
            true
        }
        // `ExchangeOutput` may grow; until it does, nothing else exists.
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// The `type` tags of the events [`event_json`] writes, for the TypeScript union's test.
#[cfg(test)]
pub(crate) const EVENT_TYPES: [&str; 4] = ["call", "cancelled", "callLimit", "closed"];

/// The `reason`s of a cancelled call, for the TypeScript union's test.
#[cfg(test)]
pub(crate) const CANCEL_REASONS: [&str; 3] = ["requested", "disconnected", "sessionDeleted"];

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum EventJson<'a> {
    Call {
        call: u64,
        tool: usize,
        name: &'a str,
        arguments: &'a str,
    },
    Cancelled {
        call: u64,
        reason: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a str>,
    },
    CallLimit {
        call: u64,
    },
    Closed,
}

/// The JSON of an event of a server offering `tools`.
fn event_json(event: &McpEvent, tools: &[mcp::Tool]) -> String {
    let json = match event {
        McpEvent::Call {
            call,
            tool,
            arguments,
        } => EventJson::Call {
            call: call.get(),
            tool: *tool,
            name: tools.get(*tool).map_or("", |t| t.name.as_str()),
            arguments,
        },
        McpEvent::Cancelled { call, reason } => {
            let (reason, message) = match reason {
                CancelReason::Requested(message) => ("requested", message.as_deref()),
                CancelReason::Disconnected => ("disconnected", None),
                CancelReason::SessionDeleted => ("sessionDeleted", None),
                #[allow(unreachable_patterns)]
                _ => ("requested", None),
            };
            EventJson::Cancelled {
                call: call.get(),
                reason,
                message,
            }
        }
        McpEvent::CallLimit { call } => EventJson::CallLimit { call: call.get() },
        McpEvent::Closed => EventJson::Closed,
        // `McpEvent` may grow; until it does, the server ending is the safe reading.
        #[allow(unreachable_patterns)]
        _ => EventJson::Closed,
    };
    serde_json::to_string(&json).expect("an event serializes")
}

/// A tool as the agent sees it, for `McpServer.tools`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolJson<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
}

/// A standalone MCP server; the TypeScript `McpServer` wraps it.
#[wasm_bindgen]
pub struct RawMcpServer {
    server: Server,
    /// Open exchanges, by rising number.
    exchanges: Vec<ExchangeId>,
    /// Pending calls, by rising number.
    calls: Vec<CallId>,
}

#[wasm_bindgen]
impl RawMcpServer {
    /// A server offering the client tools of `body`, a request of `dialect` (with
    /// `config`, the JSON of the package's `Config`), with `mcp_config` (the JSON of the
    /// package's `McpConfig`) and the session id `session_id`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        dialect: &str,
        body: &[u8],
        config: Option<String>,
        mcp_config: Option<String>,
        session_id: &str,
    ) -> Result<RawMcpServer, RawError> {
        let (dialect, config, params) = request_arguments(dialect, config, 0.0, 0.0, 0)?;
        let mcp_config = parse_config(mcp_config.as_deref())?;
        if !mcp::is_valid_session_id(session_id) {
            return Err(RawError::new(
                Code::InvalidArgument,
                "sessionId must be 1 or more visible ASCII characters",
            ));
        }
        let prepared = dialect.prepare(body, &config, &params).map_err(|error| {
            let reply = agentwire::api::ErrorReply::from(&error);
            RawError::new(
                Code::InvalidInput,
                format!("the request cannot be read: {}", reply.message),
            )
        })?;
        let tools = &prepared.request.conversation.tools;
        Ok(RawMcpServer {
            server: Server::new(tools, &mcp_config, session_id.to_owned()),
            exchanges: Vec::new(),
            calls: Vec::new(),
        })
    }

    // Getters.

    /// The session id.
    #[wasm_bindgen(js_name = sessionId)]
    pub fn session_id(&self) -> String {
        self.server.session_id().to_owned()
    }

    /// The protocol version agreed in `initialize`, or nothing.
    #[wasm_bindgen(js_name = protocolVersion)]
    pub fn protocol_version(&self) -> Option<String> {
        self.server.protocol_version().map(str::to_owned)
    }

    /// Whether `initialize` was answered and the session is not closed.
    #[wasm_bindgen(js_name = isInitialized)]
    pub fn is_initialized(&self) -> bool {
        self.server.is_initialized()
    }

    /// Whether the session ended.
    #[wasm_bindgen(js_name = isClosed)]
    pub fn is_closed(&self) -> bool {
        self.server.is_closed()
    }

    /// Calls made and neither answered nor ended.
    #[wasm_bindgen(js_name = pendingCalls)]
    pub fn pending_calls(&self) -> u32 {
        // At most `maxPendingCalls`.
        self.server.pending_calls() as u32
    }

    /// The tools as the agent sees them: JSON `[{"name", "description", "inputSchema"}]`.
    pub fn tools(&self) -> String {
        let tools: Vec<ToolJson<'_>> = self
            .server
            .tools()
            .iter()
            .map(|tool| ToolJson {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
            })
            .collect();
        serde_json::to_string(&tools).expect("tools serialize")
    }

    // Inputs.

    /// An HTTP request to the MCP endpoint: the exchange's number.
    #[wasm_bindgen(js_name = handleHttp)]
    #[allow(clippy::too_many_arguments)]
    pub fn handle_http(
        &mut self,
        method: String,
        accept: Option<String>,
        content_type: Option<String>,
        session_id: Option<String>,
        protocol_version: Option<String>,
        body: &[u8],
        now_ms: f64,
    ) -> Result<f64, RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        let request = RequestArguments {
            method,
            accept,
            content_type,
            session_id,
            protocol_version,
        };
        let exchange = self.server.handle_http(&request.request(body), now_ms);
        self.exchanges.push(exchange);
        Ok(exchange.get() as f64)
    }

    /// Bytes the agent wrote to the stdio server's stdin, in any chunking.
    #[wasm_bindgen(js_name = pushStdio)]
    pub fn push_stdio(&mut self, data: &[u8], now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.server.push_stdio(data, now_ms);
        Ok(())
    }

    /// Answers the pending call `call` with the text parts `content`.
    #[wasm_bindgen(js_name = answerCall)]
    pub fn answer_call(
        &mut self,
        call: f64,
        content: Vec<String>,
        is_error: bool,
        now_ms: f64,
    ) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        let Some(index) = self.calls.iter().position(|c| c.get() as f64 == call) else {
            return Err(RawError::new(
                Code::InvalidArgument,
                format!(
                    "call {call} is not pending (answered, cancelled or dropped, or never made)"
                ),
            ));
        };
        let outcome = ToolOutcome {
            content: content.into_iter().map(Part::Text).collect(),
            is_error,
        };
        let id = self.calls.remove(index);
        self.server
            .answer_call(id, &outcome, now_ms)
            .map_err(|error| RawError::new(Code::InvalidArgument, error.to_string()))
    }

    /// The agent's HTTP connection of `exchange` closed (an unknown exchange: nothing).
    #[wasm_bindgen(js_name = exchangeGone)]
    pub fn exchange_gone(&mut self, exchange: f64, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        if let Some(index) = self.exchange_index(exchange) {
            let id = self.exchanges.remove(index);
            self.server.exchange_gone(id, now_ms);
        }
        Ok(())
    }

    /// A deadline from `pollTimeout` passed.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.server.handle_timeout(now_ms);
        Ok(())
    }

    /// Ends the server from our side; pending calls are dropped.
    pub fn close(&mut self, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.server.close(now_ms);
        self.calls.clear();
        Ok(())
    }

    // Outputs.

    /// Bytes to write to the stdio server's stdout, or nothing.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.server.poll_transmit().map(<[u8]>::to_vec)
    }

    /// The next event, as JSON, or nothing.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> Option<String> {
        let event = self.server.poll_event()?;
        self.track(&event);
        Some(event_json(&event, self.server.tools()))
    }

    /// An exchange that has output, or nothing.
    #[wasm_bindgen(js_name = pollReady)]
    pub fn poll_ready(&mut self) -> Option<f64> {
        self.server.poll_ready().map(|id| id.get() as f64)
    }

    /// Every pending output of `exchange`, as records (empty: none); the exchange is
    /// forgotten after its end.
    #[wasm_bindgen(js_name = drainExchange)]
    pub fn drain_exchange(&mut self, exchange: f64) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(index) = self.exchange_index(exchange) else {
            return out;
        };
        let id = self.exchanges[index];
        while let Some(output) = self.server.poll_exchange(id) {
            if encode(&mut out, &output) {
                self.exchanges.remove(index);
                break;
            }
        }
        out
    }

    /// When `handleTimeout` is next due, on the caller's clock; nothing when nothing is
    /// scheduled.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        self.server.poll_timeout().map(|ms| ms as f64)
    }
}

impl RawMcpServer {
    fn exchange_index(&self, exchange: f64) -> Option<usize> {
        self.exchanges
            .binary_search_by(|e| (e.get() as f64).total_cmp(&exchange))
            .ok()
    }

    /// Keeps the handles of the calls an event makes or ends.
    fn track(&mut self, event: &McpEvent) {
        match event {
            McpEvent::Call { call, .. } => self.calls.push(*call),
            McpEvent::Cancelled { call, .. } => self.calls.retain(|c| c != call),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[u8] = br#"{"model":"auto","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash","description":"Run.","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}"#;

    fn post(server: &mut RawMcpServer, body: &str, session: Option<&str>, now: f64) -> f64 {
        server
            .handle_http(
                "POST".into(),
                Some("application/json, text/event-stream".into()),
                Some("application/json".into()),
                session.map(str::to_owned),
                None,
                body.as_bytes(),
                now,
            )
            .unwrap()
    }

    #[test]
    fn a_call_is_held_and_answered() {
        let mut server = RawMcpServer::new("chat-completions", TOOLS, None, None, "s-1").unwrap();
        assert!(server.tools().contains(r#""name":"bash""#));
        let init = post(
            &mut server,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            None,
            0.0,
        );
        let records = server.drain_exchange(init);
        assert_eq!(records[0], HEAD);
        assert_eq!(records.last(), Some(&END));
        assert!(
            server.drain_exchange(init).is_empty(),
            "forgotten after its end"
        );
        let call = post(
            &mut server,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"ls"}}}"#,
            Some("s-1"),
            1.0,
        );
        let event: serde_json::Value = serde_json::from_str(&server.poll_event().unwrap()).unwrap();
        assert_eq!(event["type"], "call");
        assert_eq!(event["name"], "bash");
        assert_eq!(event["arguments"], r#"{"command":"ls"}"#);
        let id = event["call"].as_f64().unwrap();
        let head = server.drain_exchange(call);
        assert_eq!(head[0], HEAD, "an SSE head at once");
        server
            .answer_call(id, vec!["a.txt".into()], false, 2.0)
            .unwrap();
        let answer = server.drain_exchange(call);
        assert!(String::from_utf8_lossy(&answer).contains("a.txt"));
        assert_eq!(answer.last(), Some(&END));
        let again = server.answer_call(id, vec![], false, 3.0).err().unwrap();
        assert_eq!(again.code_value(), Code::InvalidArgument);
    }

    #[test]
    fn bad_arguments_are_refused() {
        let error = RawMcpServer::new("chat-completions", b"{}", None, None, "s")
            .err()
            .unwrap();
        assert_eq!(error.code_value(), Code::InvalidInput);
        let error = RawMcpServer::new("chat-completions", TOOLS, None, None, "a b")
            .err()
            .unwrap();
        assert!(error.message().contains("sessionId"));
        let error = RawMcpServer::new(
            "chat-completions",
            TOOLS,
            None,
            Some(r#"{"keepAlive":1}"#.into()),
            "s",
        )
        .err()
        .unwrap();
        assert!(
            error.message().starts_with("invalid MCP config"),
            "{}",
            error.message()
        );
        let config = parse_config(Some(
            r#"{"serverName":"n","serverVersion":"v","instructions":"i","keepAliveMs":1,"callLimitMs":2,"maxPendingCalls":3,"maxBodyBytes":4,"maxExchanges":5}"#,
        ))
        .unwrap();
        assert_eq!(
            config,
            mcp::Config {
                server_name: "n".into(),
                server_version: "v".into(),
                instructions: Some("i".into()),
                keep_alive_ms: 1,
                call_limit_ms: Some(2),
                max_pending_calls: 3,
                max_body_bytes: 4,
                max_exchanges: 5,
            }
        );
    }
}
