//! The client's tools given to one session as an MCP server of its own: where the agent
//! reaches it (a path under the adapter's MCP endpoint and a bearer secret, both drawn
//! from the caller's entropy), the [`mcp::Server`] behind it, and every call the agent
//! made, under the id the client knows it by.

use serde_json::{Value, json};

use crate::mcp::{self, CallId, McpError, ToolOutcome, ToolSet};
use crate::tools::ids;

/// Where a call is, as far as the client is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallState {
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
pub(super) struct LinkedCall {
    pub(super) call: CallId,
    /// The id the client knows it by.
    pub(super) client_id: String,
    /// The tool's name, as the client knows it.
    pub(super) name: String,
    /// The client's input for it.
    pub(super) arguments: String,
    pub(super) state: CallState,
}

/// A session's MCP server and what the agent called through it.
#[derive(Debug)]
pub(super) struct McpLink {
    /// Its number among the connection's servers, naming it in an
    /// [`McpExchange`](super::McpExchange).
    pub(super) serial: u64,
    /// The path segment naming the server under the endpoint.
    token: String,
    /// The bearer secret the agent presents.
    secret: String,
    server: mcp::Server,
    /// The tools served, with their client names.
    tools: ToolSet,
    /// Calls the agent made and the client has not answered.
    pub(super) calls: Vec<LinkedCall>,
    /// The agent's ids of its tool calls through this server, whose updates are not the
    /// agent's own activity.
    pub(super) hidden: Vec<String>,
}

impl McpLink {
    /// A server for `tools`, reached at a token and with a secret taken from `entropy`
    /// (32 bytes the caller drew at random), with the agent's own call limit when known.
    pub(super) fn new(
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
    pub(super) fn server_entry(&self, name: &str, endpoint: &str) -> Value {
        let separator = if endpoint.ends_with('/') { "" } else { "/" };
        json!({
            "type": "http",
            "name": name,
            "url": format!("{endpoint}{separator}{}", self.token),
            "headers": [{"name": "Authorization", "value": format!("Bearer {}", self.secret)}],
        })
    }

    /// The MCP names of the tools, as the server lists them.
    pub(super) fn tool_names(&self) -> Vec<&str> {
        self.server
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect()
    }

    /// Whether `token` names this server and `authorization` (the `Authorization`
    /// header's value) carries its secret, compared in constant time.
    pub(super) fn admits(&self, token: &str, authorization: Option<&[u8]>) -> bool {
        let presented = authorization
            .and_then(|value| value.strip_prefix(b"Bearer "))
            .unwrap_or_default();
        token == self.token && mcp::secret_matches(self.secret.as_bytes(), presented)
    }

    /// The token naming this server.
    pub(super) fn token(&self) -> &str {
        &self.token
    }

    /// The server.
    pub(super) fn server(&mut self) -> &mut mcp::Server {
        &mut self.server
    }

    /// The server, to read.
    pub(super) fn server_ref(&self) -> &mcp::Server {
        &self.server
    }

    /// Records a call the agent made of tool `tool`: its client-facing id, stable and
    /// unique within the conversation (from the server's session id and the call's
    /// number).
    pub(super) fn record(
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
    pub(super) fn answer(&mut self, client_id: &str, outcome: &ToolOutcome, now_ms: u64) -> bool {
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
    pub(super) fn forget(&mut self, call: CallId) {
        self.calls.retain(|c| c.call != call);
    }

    /// The call with handle `call`.
    pub(super) fn call_mut(&mut self, call: CallId) -> Option<&mut LinkedCall> {
        self.calls.iter_mut().find(|c| c.call == call)
    }
}
