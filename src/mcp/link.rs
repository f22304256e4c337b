//! The client's tools given to one session as an MCP server of its own: where the agent
//! reaches it (a path under the adapter's MCP endpoint and a bearer secret, both drawn
//! from the caller's entropy), the [`mcp::Server`] behind it, and every call the agent
//! made, under the id the client knows it by.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::conversation::{Message, Part, Role};
use crate::mcp::{self, CallId, McpError, ToolOutcome, ToolSet};
use crate::tools::ids;

/// Where a call is, as far as the client is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallState {
    /// Made while no turn could give it to a client: the next turn of the session does.
    Unannounced,
    /// Given to a client, whose result is awaited.
    Announced,
    /// Answered with a note that the result follows later, before the agent's own limit:
    /// the client's result is given to the agent as a new prompt when it comes.
    Deferred,
}

/// One call of a client tool the agent made.
#[derive(Debug)]
pub(crate) struct LinkedCall {
    pub(crate) call: CallId,
    /// The id the client knows it by.
    pub(crate) client_id: String,
    /// The tool's name, as the client knows it.
    pub(crate) name: String,
    /// The client's input for it.
    pub(crate) arguments: String,
    pub(crate) state: CallState,
}

/// A session's MCP server and what the agent called through it.
#[derive(Debug)]
pub(crate) struct McpLink {
    /// Its number among its owner's servers (an ACP connection's, naming it in an
    /// `McpExchange`).
    pub(crate) serial: u64,
    /// The path segment naming the server under the endpoint.
    token: String,
    /// The bearer secret the agent presents.
    secret: String,
    server: mcp::Server,
    /// The tools served, with their client names.
    tools: ToolSet,
    /// Calls the agent made and the client has not answered.
    pub(crate) calls: Vec<LinkedCall>,
    /// The agent's ids of its tool calls through this server, whose updates are not the
    /// agent's own activity.
    pub(crate) hidden: Vec<String>,
}

impl McpLink {
    /// A server for `tools`, reached at a token and with a secret taken from `entropy`
    /// (32 bytes the caller drew at random), with the agent's own call limit when known.
    pub(crate) fn new(
        tools: ToolSet,
        config: &mcp::Config,
        entropy: &[u8; 32],
        call_limit_ms: Option<u64>,
    ) -> McpLink {
        let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
        let token = hex(&entropy[..8]);
        let secret = hex(&entropy[8..24]);
        let session_id = hex(&entropy[24..]);
        let mut config = config.clone();
        // Answered before the agent's own limit, leaving it time to take the answer.
        if let Some(limit) = call_limit_ms {
            let margin = (limit / 6).clamp(1_000, 20_000);
            let ours = limit.saturating_sub(margin);
            config.call_limit_ms = Some(config.call_limit_ms.map_or(ours, |c| c.min(ours)));
        }
        McpLink {
            serial: 0,
            token,
            secret,
            server: mcp::Server::with_tools(tools.clone(), &config, session_id),
            tools,
            calls: Vec::new(),
            hidden: Vec::new(),
        }
    }

    /// The `mcpServers` entry of `session/new`: an HTTP server at `endpoint` + token,
    /// with the secret as a bearer token.
    pub(crate) fn server_entry(&self, name: &str, endpoint: &str) -> Value {
        let separator = if endpoint.ends_with('/') { "" } else { "/" };
        json!({
            "type": "http",
            "name": name,
            "url": format!("{endpoint}{separator}{}", self.token),
            "headers": [{"name": "Authorization", "value": format!("Bearer {}", self.secret)}],
        })
    }

    /// The MCP names of the tools, as the server lists them.
    pub(crate) fn tool_names(&self) -> Vec<&str> {
        self.server
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect()
    }

    /// Whether `token` names this server and `authorization` (the `Authorization`
    /// header's value) carries its secret, compared in constant time.
    pub(crate) fn admits(&self, token: &str, authorization: Option<&[u8]>) -> bool {
        let presented = authorization
            .and_then(|value| value.strip_prefix(b"Bearer "))
            .unwrap_or_default();
        token == self.token && mcp::secret_matches(self.secret.as_bytes(), presented)
    }

    /// The bearer value of a server reached at a path all servers share (a
    /// configuration file cannot name a path per session): the token naming it, a `.`, and
    /// the secret.
    pub(crate) fn shared_path_bearer(&self) -> String {
        format!("{}.{}", self.token, self.secret)
    }

    /// Whether `authorization` carries [`shared_path_bearer`](Self::shared_path_bearer),
    /// the secret compared in constant time.
    pub(crate) fn admits_bearer(&self, authorization: Option<&[u8]>) -> bool {
        let presented = authorization
            .and_then(|value| value.strip_prefix(b"Bearer "))
            .unwrap_or_default();
        let Some(dot) = presented.iter().position(|&b| b == b'.') else {
            return false;
        };
        let (token, secret) = (&presented[..dot], &presented[dot + 1..]);
        token == self.token.as_bytes() && mcp::secret_matches(self.secret.as_bytes(), secret)
    }

    /// The token naming this server.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The server.
    pub(crate) fn server(&mut self) -> &mut mcp::Server {
        &mut self.server
    }

    /// The server, to read.
    pub(crate) fn server_ref(&self) -> &mcp::Server {
        &self.server
    }

    /// Records a call the agent made of tool `tool`: its client-facing id, stable and
    /// unique within the conversation (from the server's session id and the call's
    /// number).
    pub(crate) fn record(
        &mut self,
        call: CallId,
        tool: usize,
        arguments: String,
        state: CallState,
    ) -> &LinkedCall {
        let client_id = ids::call_id(&format!("mcp:{}:{}", self.server.session_id(), call.get()));
        let name = self.tools.client_name(tool).unwrap_or_default().to_owned();
        self.calls.push(LinkedCall {
            call,
            client_id,
            name,
            arguments,
            state,
        });
        self.calls.last().expect("just pushed")
    }

    /// Answers the call the client knows as `client_id` with `outcome`; `false` when the
    /// agent no longer waits for it (it was deferred, cancelled, or never made).
    pub(crate) fn answer(&mut self, client_id: &str, outcome: &ToolOutcome, now_ms: u64) -> bool {
        let Some(position) = self.calls.iter().position(|c| c.client_id == client_id) else {
            return false;
        };
        let linked = self.calls.remove(position);
        if linked.state == CallState::Deferred {
            return false;
        }
        !matches!(
            self.server.answer_call(linked.call, outcome, now_ms),
            Err(McpError::UnknownCall(_) | McpError::NotPending(_))
        )
    }

    /// Forgets a call the agent gave up.
    pub(crate) fn forget(&mut self, call: CallId) {
        self.calls.retain(|c| c.call != call);
    }

    /// The call with handle `call`.
    pub(crate) fn call_mut(&mut self, call: CallId) -> Option<&mut LinkedCall> {
        self.calls.iter_mut().find(|c| c.call == call)
    }
}

/// New input for an agent that holds the conversation: the messages' text in order,
/// instructions marked as such, attachments as their placeholders.
pub(crate) fn render_input(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        if matches!(message.role, Role::System | Role::Developer) {
            out.push_str("Instructions: ");
        }
        write_parts(&message.content, &mut out);
    }
    out
}

fn write_parts(parts: &[Part], out: &mut String) {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Attachment(attachment) => attachment.write_placeholder(out),
        }
    }
}

/// Appends a result the agent's call can no longer take, for a prompt.
pub(crate) fn late_result(out: &mut String, client_id: &str, outcome: &ToolOutcome) {
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    let _ = writeln!(
        out,
        "The result of your earlier tool call {client_id}{}:",
        if outcome.is_error { " (it failed)" } else { "" }
    );
    write_parts(&outcome.content, out);
}
