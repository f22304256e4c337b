//! The MCP client of the stand-in agents (`acp_agent --tool-rounds`, `replay_agent
//! --mcp-rounds`): what an agent with a model does with the client's tools given to it as
//! an HTTP MCP server. Plain HTTP/1.1 on a connection per request (Streamable HTTP):
//! `initialize` (protocol `2025-06-18`), `notifications/initialized`, `tools/list`, then
//! `tools/call`s whose answer, one JSON body or an SSE stream (keep-alive comments
//! skipped), is read however long the client's tool takes.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

/// The arguments a model would give a tool of input schema `schema`: `value` for every
/// string parameter it requires (every string parameter, when it names none), and a
/// default of its type for every other parameter it requires.
pub fn arguments_for(schema: &Value, value: &str) -> Value {
    let properties = schema["properties"].as_object();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut arguments = serde_json::Map::new();
    for (name, property) in properties.into_iter().flatten() {
        let named = required.contains(&name.as_str());
        let wanted = required.is_empty() || named;
        let argument = match property["type"].as_str() {
            Some("string") if wanted => json!(value),
            _ if !named => continue,
            Some("integer" | "number") => json!(0),
            Some("boolean") => json!(false),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => Value::Null,
        };
        arguments.insert(name.clone(), argument);
    }
    Value::Object(arguments)
}

/// An MCP client over HTTP/1.1, a connection per request, as the recorded agents talk
/// to an HTTP MCP server.
pub struct McpClient {
    /// `host:port`.
    authority: String,
    path: String,
    /// Sent with every request (`Authorization`, …), as configured.
    headers: Vec<(String, String)>,
    /// From the `initialize` answer.
    session_id: Option<String>,
    protocol_version: String,
    /// The listed tools: name and input schema, in order.
    pub tools: Vec<(String, Value)>,
}

/// How long a request waits for its answer: a client's tool may take minutes.
const MCP_ANSWER_WAIT: Duration = Duration::from_secs(900);

impl McpClient {
    /// `initialize` as `client_name`, `notifications/initialized`, `tools/list`; every
    /// request carries `headers`.
    pub fn connect(
        url: &str,
        headers: Vec<(String, String)>,
        client_name: &str,
    ) -> Result<McpClient, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("not an http URL: {url}"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let mut client = McpClient {
            authority: authority.to_owned(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            headers,
            session_id: None,
            protocol_version: "2025-06-18".into(),
            tools: Vec::new(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client_name, "version": env!("CARGO_PKG_VERSION")}}});
        let answer = client.post(&init, None)?;
        client.session_id = answer.session_id.clone();
        let result = answer.result(0)?;
        if let Some(version) = result["protocolVersion"].as_str() {
            client.protocol_version = version.to_owned();
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let status = client.post(&initialized, None)?.status;
        if status != 202 {
            return Err(format!("notifications/initialized: HTTP {status}"));
        }
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let listed = client.post(&list, None)?.result(1)?;
        client.tools = listed["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let name = t["name"].as_str().unwrap_or_default().to_owned();
                (name, t["inputSchema"].clone())
            })
            .collect();
        Ok(client)
    }

    /// `tools/call` of `name` for round `round`: the answer's text and whether it is an
    /// error. The connection is left in `in_flight`, if given, while the answer is read
    /// (to hang up on it).
    pub fn call(
        &self,
        round: u32,
        name: &str,
        arguments: &Value,
        in_flight: Option<&Mutex<Option<TcpStream>>>,
    ) -> Result<(String, bool), String> {
        let id = 100 + u64::from(round);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        let result = self.post(&request, in_flight)?.result(id)?;
        let text: Vec<&str> = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect();
        Ok((text.join("\n"), result["isError"] == true))
    }

    /// POSTs one JSON-RPC message and reads the whole answer (a JSON body, or an SSE
    /// stream's messages); the connection is left in `in_flight` while it is read.
    fn post(
        &self,
        message: &Value,
        in_flight: Option<&Mutex<Option<TcpStream>>>,
    ) -> Result<McpAnswer, String> {
        let body = message.to_string();
        let mut head = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n",
            self.path,
            self.authority,
            body.len()
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Some(session) = &self.session_id {
            head.push_str(&format!(
                "mcp-session-id: {session}\r\nmcp-protocol-version: {}\r\n",
                self.protocol_version
            ));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect(&self.authority).map_err(|e| e.to_string())?;
        let _ = stream.set_read_timeout(Some(MCP_ANSWER_WAIT));
        if let (Some(in_flight), Ok(clone)) = (in_flight, stream.try_clone()) {
            *in_flight.lock().unwrap_or_else(|e| e.into_inner()) = Some(clone);
        }
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        let read = stream.read_to_end(&mut raw);
        if let Some(in_flight) = in_flight {
            in_flight.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
        read.map_err(|e| e.to_string())?;
        McpAnswer::parse(&raw)
    }
}
/// An HTTP answer of an MCP server, read whole.
struct McpAnswer {
    status: u16,
    session_id: Option<String>,
    /// The JSON-RPC messages of its body (one JSON body, or an SSE stream's events).
    messages: Vec<Value>,
}

impl McpAnswer {
    fn parse(raw: &[u8]) -> Result<McpAnswer, String> {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("the connection ended before the answer's head")?;
        let head = String::from_utf8_lossy(&raw[..end]);
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or("a bad status line")?;
        let mut headers = HashMap::new();
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let mut body = raw[end + 4..].to_vec();
        if headers
            .get("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
        {
            body = dechunk(&body)?;
        }
        let content_type = headers.get("content-type").cloned().unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        let messages = if content_type.starts_with("text/event-stream") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else {
            serde_json::from_str(&text).into_iter().collect()
        };
        Ok(McpAnswer {
            status,
            session_id: headers.get("mcp-session-id").cloned(),
            messages,
        })
    }

    /// The result of the answer to request `id`.
    fn result(self, id: u64) -> Result<Value, String> {
        let status = self.status;
        let mut answer = self
            .messages
            .into_iter()
            .find(|m| m["id"] == id)
            .ok_or_else(|| format!("HTTP {status}: no answer to request {id}"))?;
        match answer.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(format!("request {id}: {}", answer["error"])),
        }
    }
}

/// A chunked body's data; an error if it ends before its last chunk.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("the chunked body ended early")?;
        let size = std::str::from_utf8(&body[..line_end])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next().unwrap_or("").trim(), 16).ok())
            .ok_or("a bad chunk size")?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size + 2 {
            return Err("the chunked body ended early".into());
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}
