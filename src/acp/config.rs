//! What a [`Connection`](super::Connection) decides by policy rather than by protocol.

use crate::names::named;

/// How a `session/request_permission` is answered. The choice is made by the offered
/// option's `kind`, never by its id: every recorded agent names its options differently
/// (`allow` / `allow-once` / `proceed_once` for the same kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionChoice {
    /// Select the option of kind `allow_once` (the agent runs the tool this once).
    AllowOnce,
    /// Select the option of kind `reject_once`.
    RejectOnce,
}

// The option kinds they select.
named!(PermissionChoice, "permission choice" {
    AllowOnce => "allow_once",
    RejectOnce => "reject_once",
});

/// Whether the agent's own tools (its shell, file edits, web search, …) are offered to its
/// model. The client's tools, given as an MCP server, are offered either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeTools {
    /// Kept, except in sessions given the client's tools by an agent that turns them off
    /// per session (claude-agent-acp): a request's client tools are then the only tools.
    Keep,
    /// Off in every session: per session where the agent takes that (claude-agent-acp),
    /// and at launch where only its configuration can (codex-acp, Gemini CLI): the adapter
    /// starts the agent as [`launch_without_native_tools`](super::launch_without_native_tools)
    /// says.
    Off,
}

named!(NativeTools, "native tools setting" {
    Keep => "keep",
    Off => "off",
});

/// How agent→client requests other than permission requests (`fs/*`, `terminal/*`,
/// extension methods such as `cursor/create_plan`) are answered. agentwire advertises
/// no client capability, so none of them is served.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtensionPolicy {
    /// JSON-RPC error `-32601` (method not found).
    MethodNotFound,
    /// This fixed `result` (for example `{"outcome":{"outcome":"cancelled"}}`).
    Answer(serde_json::Value),
}

/// The settings of one ACP connection. [`Default`] gives the values documented on each
/// field.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpConfig {
    /// The working directory sessions are created in (`session/new` `cwd`; ACP wants an
    /// absolute path). Default `/`.
    pub cwd: String,
    /// `clientInfo.name` and `.version` in `initialize`. Default `agentwire` and this
    /// crate's version.
    pub client_name: String,
    /// See [`AcpConfig::client_name`].
    pub client_version: String,
    /// The permission answer. Default [`PermissionChoice::AllowOnce`]; `allow_always` is
    /// never chosen (some agents write it into the user's global configuration).
    pub permission: PermissionChoice,
    /// Answers to other agent requests. Default [`ExtensionPolicy::MethodNotFound`].
    pub extensions: ExtensionPolicy,
    /// Whether the agent's own tools are offered to its model. Default
    /// [`NativeTools::Keep`].
    pub native_tools: NativeTools,
    /// Fresh sessions kept ready ahead of need, to hide `session/new`'s latency. Default 1.
    pub pool_size: usize,
    /// Prompts running at once; more wait in a queue. Default 4 (concurrency inside one
    /// agent process is unmeasured).
    pub max_concurrent_prompts: usize,
    /// How long a request may wait in that queue before it fails with 503. Default 30 s.
    pub queue_timeout_ms: u64,
    /// Deadline for the `initialize` answer. Default 10 s.
    pub initialize_timeout_ms: u64,
    /// Deadline for a `session/new` answer. Default 30 s.
    pub new_session_timeout_ms: u64,
    /// Deadline for a `session/set_config_option` or `session/set_model` answer.
    /// Default 10 s.
    pub set_model_timeout_ms: u64,
    /// How long a cancelled prompt may take to end (`stopReason: "cancelled"`) before its
    /// session is given up. Default 10 s.
    pub cancel_timeout_ms: u64,
    /// Response bytes a turn may hold that the caller has not taken yet. A turn that
    /// exceeds it is cancelled with a clear error, so that one slow client never stops the
    /// agent's stdout, which every session shares. Default 8 MiB.
    pub turn_output_budget: usize,
    /// Model names that mean "the agent's own default" when the agent does not list them.
    /// Default `auto` and `default`.
    pub default_model_names: Vec<String>,
    /// The longest agent stdout line accepted. Default
    /// [`DEFAULT_MAX_LINE_LEN`](crate::framing::DEFAULT_MAX_LINE_LEN).
    pub max_line_len: usize,
    /// Bytes of the agent's stderr kept for failure messages. Default 4 KiB.
    pub stderr_tail_bytes: usize,
    /// Where the adapter serves the MCP endpoint of client-tool sessions, on loopback:
    /// the URL a session's server path is appended to (`http://127.0.0.1:PORT/mcp/`).
    /// With it, a request's client tools are given to the agent as an MCP server of their
    /// own session ([`Connection::handle_mcp`](super::Connection::handle_mcp)); without
    /// it (the default), a request with client tools is refused (400 naming `tools`).
    pub mcp_endpoint: Option<String>,
    /// The MCP server's name in `session/new`, which the agent puts in the tool names its
    /// model sees (`mcp__client__read` for Claude). Default `client`.
    pub mcp_server_name: String,
    /// The MCP servers' settings (keep-alive, limits).
    pub mcp: crate::mcp::Config,
    /// Which parked session a conversation's next request continues
    /// ([`Connection::start_conversation_turn`](super::Connection::start_conversation_turn)).
    /// Default: the registry's defaults, but at most 16 sessions parked (8 per owner): a
    /// parked ACP session is kept by the agent (claude-agent-acp keeps a Claude Code
    /// process for each), where a parked cursor-agent chat costs nothing but its id.
    pub conversations: crate::registry::RegistryConfig,
}

impl Default for AcpConfig {
    fn default() -> Self {
        AcpConfig {
            cwd: "/".into(),
            client_name: "agentwire".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            permission: PermissionChoice::AllowOnce,
            extensions: ExtensionPolicy::MethodNotFound,
            native_tools: NativeTools::Keep,
            pool_size: 1,
            max_concurrent_prompts: 4,
            queue_timeout_ms: 30_000,
            initialize_timeout_ms: 10_000,
            new_session_timeout_ms: 30_000,
            set_model_timeout_ms: 10_000,
            cancel_timeout_ms: 10_000,
            turn_output_budget: 8 << 20,
            default_model_names: vec!["auto".into(), "default".into()],
            max_line_len: crate::framing::DEFAULT_MAX_LINE_LEN,
            stderr_tail_bytes: 4096,
            mcp_endpoint: None,
            mcp_server_name: "client".into(),
            mcp: crate::mcp::Config::default(),
            conversations: crate::registry::RegistryConfig {
                max_parked: 16,
                max_parked_per_owner: 8,
                ..crate::registry::RegistryConfig::default()
            },
        }
    }
}
