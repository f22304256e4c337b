//! What a [`Server`](super::Server) decides by policy rather than by protocol.

/// The settings of one MCP server. [`Default`] gives the values documented on each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `serverInfo.name` in the `initialize` answer. Default `agentwire`.
    pub server_name: String,
    /// `serverInfo.version`. Default this crate's version.
    pub server_version: String,
    /// `instructions` in the `initialize` answer (agents may show them to their model).
    /// Default none.
    pub instructions: Option<String>,
    /// The interval of `: keepalive` comments on an SSE answer while a call is pending;
    /// 0 sends none. Default 15 s: the recorded agents (Claude Code, Gemini CLI) cut a
    /// silent HTTP answer at about 60 s, and kept an SSE answer with a comment every 15 s
    /// open for the 330 s measured.
    pub keep_alive_ms: u64,
    /// When a call has been pending this long, [`McpEvent::CallLimit`] tells the owner
    /// (once per call), who may answer it before the agent gives up on its own. The server
    /// answers nothing by itself. Default none.
    ///
    /// [`McpEvent::CallLimit`]: super::McpEvent::CallLimit
    pub call_limit_ms: Option<u64>,
    /// Calls pending at once; one more is answered with a JSON-RPC error. Default 32.
    pub max_pending_calls: usize,
    /// The largest POST body, and the longest stdio line, accepted. A larger body is
    /// answered 413; a longer line, with a JSON-RPC error. Default 4 MiB.
    pub max_body_bytes: usize,
    /// HTTP exchanges open at once (answered or streaming, not yet ended and taken); one
    /// more is answered 503. Keep it above
    /// [`max_pending_calls`](Self::max_pending_calls), so that a notification (a
    /// cancellation) still gets in while every call holds a stream. Default 64.
    pub max_exchanges: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server_name: "agentwire".into(),
            server_version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            keep_alive_ms: 15_000,
            call_limit_ms: None,
            max_pending_calls: 32,
            max_body_bytes: 4 << 20,
            max_exchanges: 64,
        }
    }
}
