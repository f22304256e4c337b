//! The command line both proxies take, and its checks.

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentwire::acp::{
    AcpConfig, AgentLaunch, NativeTools, PermissionChoice, launch_without_native_tools,
};
use agentwire::bridge::Config;
use agentwire::live_chat::LiveConfig;
use agentwire::openai::chat::ReasoningField;
use agentwire::registry::RegistryConfig;
use agentwire::tools::ToolStrategy;
use clap::{CommandFactory, Parser, ValueEnum};

use crate::agent::{AgentProgram, Hide};
use crate::aliases::ModelAliases;
use crate::http::Auth;

/// A server for the OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs
/// on top of cursor-agent (stream-json) or an ACP agent (`--agent-protocol acp`).
#[derive(Debug, Parser)]
#[command(version)]
pub struct Flags {
    /// Address to listen on. Binding anything but loopback needs --api-key (or
    /// --allow-unauthenticated).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:32124")]
    pub listen: SocketAddr,

    /// Require a key on every request, as `Authorization: Bearer KEY` or
    /// `x-api-key: KEY`. Repeatable, or several separated by commas: any one of them is
    /// accepted, and each is an owner of its own — a conversation opened with one key is
    /// never continued with another.
    #[arg(
        long,
        value_name = "KEY",
        env = "AGENTWIRE_API_KEY",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub api_key: Vec<String>,

    /// Serve a non-loopback address without an API key.
    #[arg(long)]
    pub allow_unauthenticated: bool,

    /// Let web pages from ORIGIN (`http://localhost:3000`; `*` for any) use the server:
    /// their requests get CORS headers. Requests from any other page are refused (403).
    /// Repeatable.
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,

    /// Also accept requests whose Host header is NAME (`.example.com`: that domain and
    /// every name under it). Loopback names and IP addresses are always accepted; any
    /// other Host is refused (400), which stops DNS rebinding. Repeatable.
    #[arg(long, value_name = "NAME")]
    pub allowed_host: Vec<String>,

    /// The agent binary: a path, or a name looked up in PATH.
    #[arg(long, value_name = "PATH", default_value = "cursor-agent")]
    pub agent_bin: String,

    /// How the proxy talks to the agent: `stream-json` runs one cursor-agent process per
    /// request; `acp` keeps one agent process warm for the server and serves every request
    /// on it as an Agent Client Protocol session.
    #[arg(long, value_name = "PROTOCOL", default_value = "stream-json")]
    pub agent_protocol: AgentProtocol,

    /// An argument for the ACP agent's command line (`acp` for cursor-agent, `--acp` for
    /// gemini). Repeatable; only with --agent-protocol acp.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub agent_arg: Vec<String>,

    /// ACP: most prompts running at once on the warm agent (default 4); more requests
    /// wait in a queue (--acp-queue-timeout-ms). Only with --agent-protocol acp.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub acp_max_prompts: Option<u32>,

    /// ACP: fresh sessions kept ready ahead of need (default 1; 0: each request waits
    /// for its `session/new`, and the model list is known after the first request).
    /// Only with --agent-protocol acp.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=64))]
    pub acp_pool_size: Option<u32>,

    /// ACP: how long a request may wait for a prompt slot before it gets 503 (default
    /// 30000). Only with --agent-protocol acp.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub acp_queue_timeout_ms: Option<u64>,

    /// ACP: how long a just-started agent may take to answer `initialize` before it is
    /// restarted (default 10000; an agent that relaunches itself on a loaded machine may
    /// need more). Only with --agent-protocol acp.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub acp_initialize_timeout_ms: Option<u64>,

    /// ACP: the directory the agent's sessions work in (`session/new` `cwd`); default
    /// --workspace, else the proxy's working directory, made absolute. Only with
    /// --agent-protocol acp.
    #[arg(long, value_name = "DIR")]
    pub acp_cwd: Option<PathBuf>,

    /// ACP: whether the agent's own tools (its shell, edits, web search) are offered to
    /// its model. `off`: in every session, per session for claude-agent-acp, through its
    /// launch for codex-acp (`-c` overrides) and `gemini --acp` (a policy file of the
    /// proxy's own, removed at exit); refused for an agent agentwire
    /// cannot turn them off for. `keep` (the default): off only in sessions given the
    /// client's tools by an agent that turns them off per session. Only with
    /// --agent-protocol acp.
    #[arg(long, value_enum, value_name = "SETTING")]
    pub acp_native_tools: Option<NativeToolsFlag>,

    /// Workspace directory the agent works in (`--workspace`).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Most agent runs at once; more requests get 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent: u32,

    /// Log format: one line per request at its end, and server events.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Answer from an embedded transcript: no Cursor account, no cursor-agent needed.
    #[arg(long)]
    pub demo: bool,

    /// Stop the agent and answer 504 after this long without output from it.
    #[arg(long, value_name = "MS", default_value_t = Config::default().idle_timeout_ms)]
    pub idle_timeout_ms: u64,

    /// Stop the agent and answer 504 after this long in total.
    #[arg(long, value_name = "MS")]
    pub max_duration_ms: Option<u64>,

    /// Streaming: commit the 200 head after this long without an answer event, then send
    /// keep-alives.
    #[arg(long, value_name = "MS", default_value_t = Config::default().head_deadline_ms)]
    pub head_deadline_ms: u64,

    /// Interval of SSE keep-alive comments during silence.
    #[arg(long, value_name = "MS", default_value_t = Config::default().keep_alive_ms)]
    pub keep_alive_ms: u64,

    /// How the client's tools are executed.
    #[arg(long, value_enum, default_value_t = ToolStrategyFlag::ReadOnly)]
    pub tool_strategy: ToolStrategyFlag,

    /// Where reasoning text goes in responses.
    #[arg(long, value_enum, default_value_t = ReasoningFlag::ReasoningContent)]
    pub reasoning: ReasoningFlag,

    /// Do not show the agent's own tool use as notes in the reasoning channel.
    #[arg(long)]
    pub no_activity_notes: bool,

    /// Let requests without tools run the agent with `--force` (shell and web tools run
    /// without approval).
    #[arg(long)]
    pub allow_force: bool,

    /// An isolated CLI configuration directory for the agent (`CURSOR_CONFIG_DIR`).
    #[arg(long, value_name = "DIR")]
    pub cli_config_dir: Option<PathBuf>,

    /// Largest request body accepted; larger ones get 413.
    #[arg(long, value_name = "BYTES", default_value_t = Config::default().request_limits.max_body_bytes)]
    pub max_body_bytes: usize,

    /// Drop a connection whose request head has not arrived within this long (also how
    /// long an idle kept-alive connection stays open).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,

    /// The whole request, head and body, must arrive within this long of its first
    /// byte; otherwise 408 and the connection is closed.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub request_timeout_ms: u64,

    /// Treat the client as gone (stop its agent, close the connection) when a write to
    /// it makes no progress for this long.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub write_timeout_ms: u64,

    /// Most connections served at once. Past it, a few more are read only to answer
    /// `/health` (anything else gets 503), and beyond those new connections are closed at
    /// once. Lowered at startup when the descriptor limit cannot hold it.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Become a child subreaper and reap orphaned processes (what an agent's detached
    /// descendants become when it exits). On by itself when the proxy is PID 1, as in a
    /// container started without `--init`.
    #[arg(long)]
    pub reap_orphans: bool,

    /// Between SIGTERM and SIGKILL when the agent's process group is stopped.
    #[arg(long, value_name = "MS", default_value_t = 2_000)]
    pub kill_grace_ms: u64,

    /// Map the model names a client sends to the agent's: `GLOB=MODEL`, where the glob
    /// takes `*` and `?` (`claude-*=auto` for Claude Code). Tried in order; the first
    /// match replaces the request's model before it is checked. Repeatable.
    #[arg(long, value_name = "GLOB=MODEL")]
    pub model_alias: Vec<String>,

    /// How long the model list from `cursor-agent models` is served from memory.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub models_ttl_secs: u64,

    /// Continue conversations: a request whose history extends an answer given earlier
    /// resumes the agent's chat that gave it (`--resume`; with --agent-protocol acp, the
    /// ACP session, whose tool calls wait for the next request's results) with only what
    /// is new, instead of a fresh run given the whole history. `off`: every request is
    /// fresh.
    #[arg(long, value_enum, value_name = "on|off", default_value_t = Switch::On, hide_possible_values = true)]
    pub conversations: Switch,

    /// cursor-agent (stream-json) with the client's tools as real MCP tools: writes
    /// `.cursor/mcp.json` and `.cursor/cli.json` into the workspace (--workspace, else the
    /// proxy's working directory; refused if either exists with other content; removed at
    /// exit), runs cursor-agent with `--approve-mcps`, and keeps the agent running inside
    /// a client tool call until the next request brings its result (a parked agent, not
    /// counted in --max-concurrent, stopped when its conversation expires). Needs
    /// conversations on.
    #[arg(long)]
    pub cursor_mcp: bool,

    /// How long an agent chat waits for its conversation's next request before it is let
    /// go (the next request is then fresh) [default: 1800].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 3600))]
    pub conversation_ttl_secs: Option<u64>,

    /// Most agent chats waiting for their conversation's next request; past it the least
    /// recently used is let go [default: 256; 16 with --agent-protocol acp, whose agent
    /// keeps each session].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_parked: Option<u32>,

    /// Most waiting agent chats of one key (of the keyless when no key is set); past it
    /// that key's least recently used is let go. At most --max-parked [default: 32, 8
    /// with --agent-protocol acp, or --max-parked when lower].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_parked_per_owner: Option<u32>,
}

/// An `on|off` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// `--agent-protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentProtocol {
    /// cursor-agent's `--output-format stream-json`, one process per request.
    StreamJson,
    /// The Agent Client Protocol over one warm process.
    Acp,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// `--acp-native-tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NativeToolsFlag {
    /// The agent's own tools are kept where only its launch could turn them off.
    Keep,
    /// The agent's own tools are off in every session.
    Off,
}

/// `--tool-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolStrategyFlag {
    /// The agent runs read-only; its reads and searches become the client's tool calls.
    ReadOnly,
    /// The agent uses its own tools; its edits bypass the client.
    Native,
    /// Every client tool is called through a text envelope.
    EnvelopeOnly,
}

/// `--reasoning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReasoningFlag {
    /// `reasoning_content` (AI SDK, LiteLLM, DeepSeek clients).
    ReasoningContent,
    /// `reasoning` (OpenRouter's name).
    Reasoning,
    /// Not sent.
    Omitted,
}

/// The web origins `--cors-origin` allows.
#[derive(Debug, Clone, Default)]
pub struct CorsOrigins {
    /// `--cors-origin '*'`: every origin.
    pub any: bool,
    /// The origins allowed by name (`scheme://host[:port]`, or `null`).
    pub exact: Vec<String>,
}

impl CorsOrigins {
    /// Checks the `--cors-origin` values.
    fn new(values: Vec<String>) -> Result<CorsOrigins, String> {
        let mut origins = CorsOrigins::default();
        for value in values {
            let value = value.trim().trim_end_matches('/').to_owned();
            let valid = value == "null"
                || value.split_once("://").is_some_and(|(scheme, host)| {
                    !scheme.is_empty()
                        && scheme
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                        && !host.is_empty()
                        && !host.contains(['/', '?', '#', '@', ' '])
                });
            if value == "*" {
                origins.any = true;
            } else if valid {
                origins.exact.push(value);
            } else {
                return Err(format!(
                    "--cors-origin {value:?}: give an origin such as http://localhost:3000 \
                     (scheme, host and port; no path), `null`, or `*` for any"
                ));
            }
        }
        Ok(origins)
    }
}

/// The checked settings a proxy runs with.
#[derive(Debug)]
pub struct Settings {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The API key requests must carry, if any.
    pub auth: Auth,
    /// The agent binary.
    pub agent: AgentProgram,
    /// The bridge's configuration for every request.
    pub config: Config,
    /// Most agent runs at once.
    pub max_concurrent: u32,
    /// How logs are written.
    pub log_format: LogFormat,
    /// Whether the embedded transcript answers.
    pub demo: bool,
    /// Web origins whose pages may use the server.
    pub cors_origins: CorsOrigins,
    /// Host names accepted besides loopback names and IP addresses (lowercase; a leading
    /// `.` allows a domain and the names under it).
    pub allowed_hosts: Vec<String>,
    /// Most time for a request head to arrive.
    pub header_timeout: Duration,
    /// Most time for a whole request to arrive, from its first byte.
    pub request_timeout: Duration,
    /// Most time a write to a client may make no progress.
    pub write_timeout: Duration,
    /// Most connections served at once.
    pub max_connections: u32,
    /// Whether orphaned processes are reaped (the proxy is their subreaper).
    pub reap_orphans: bool,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long a model list is served from memory.
    pub models_ttl: Duration,
    /// `--model-alias`.
    pub model_aliases: ModelAliases,
    /// With `--agent-protocol acp`: the warm agent's command line and connection.
    pub acp: Option<AcpSettings>,
    /// `--conversations`, `--conversation-ttl-secs`, `--max-parked`,
    /// `--max-parked-per-owner`, for the per-request path (over the registry's defaults;
    /// the warm ACP agent's are in the `config` of [`AcpSettings`]).
    pub conversations: RegistryConfig,
    /// `--cursor-mcp`: the client's tools given to cursor-agent as MCP tools, in live
    /// chats.
    pub live: Option<LiveSettings>,
}

/// `--cursor-mcp`: where cursor-agent finds the proxy's MCP server, and the live chats'
/// settings.
#[derive(Debug, Clone)]
pub struct LiveSettings {
    /// The workspace whose `.cursor/` gets the configuration files.
    pub workspace: PathBuf,
    /// The live chats' settings.
    pub config: LiveConfig,
}

/// The `--acp-*` values (and `--allow-force`) a connection's settings are made of.
struct AcpFlags {
    max_prompts: Option<u32>,
    pool_size: Option<u32>,
    queue_timeout_ms: Option<u64>,
    initialize_timeout_ms: Option<u64>,
    allow_force: bool,
    native_tools: NativeTools,
}

/// The warm agent `--agent-protocol acp` asks for.
#[derive(Debug, Clone)]
pub struct AcpSettings {
    /// The arguments of its command line (`--agent-arg`).
    pub args: Vec<String>,
    /// Its connection's settings (`--acp-*`, `--allow-force`, `--workspace`, the
    /// conversation flags over the connection's defaults). Its MCP endpoint is set once
    /// the listener is bound ([`mcp::endpoint`](crate::mcp::endpoint)).
    pub config: AcpConfig,
    /// What its launch adds so that its own tools are off (`--acp-native-tools off`).
    pub launch: AgentLaunch,
}

impl AcpSettings {
    /// The connection settings: the `--acp-*` values over the core's defaults; sessions
    /// in `cwd` (made absolute); the agent's permission requests (a shell command, an
    /// edit) refused unless `--allow-force` lets tool-less requests run such tools on the
    /// per-request path too.
    fn config(flags: &AcpFlags, cwd: &Path) -> Result<AcpConfig, String> {
        let defaults = AcpConfig::default();
        let cwd =
            std::path::absolute(cwd).map_err(|e| format!("--acp-cwd {}: {e}", cwd.display()))?;
        if !cwd.is_dir() {
            return Err(format!(
                "--acp-cwd {}: not a directory (the agent's sessions work there)",
                cwd.display()
            ));
        }
        let cwd = cwd.to_str().ok_or_else(|| {
            format!(
                "--acp-cwd {}: ACP sends the directory as a JSON string; give a UTF-8 path",
                cwd.display()
            )
        })?;
        Ok(AcpConfig {
            cwd: cwd.to_owned(),
            permission: if flags.allow_force {
                PermissionChoice::AllowOnce
            } else {
                PermissionChoice::RejectOnce
            },
            max_concurrent_prompts: flags
                .max_prompts
                .map_or(defaults.max_concurrent_prompts, |n| n as usize),
            pool_size: flags.pool_size.map_or(defaults.pool_size, |n| n as usize),
            queue_timeout_ms: flags.queue_timeout_ms.unwrap_or(defaults.queue_timeout_ms),
            initialize_timeout_ms: flags
                .initialize_timeout_ms
                .unwrap_or(defaults.initialize_timeout_ms),
            native_tools: flags.native_tools,
            ..defaults
        })
    }
}

impl Flags {
    /// Checks the flags and resolves the agent binary. The error is the message to print
    /// before exiting.
    pub fn settings(self) -> Result<Settings, String> {
        let api_keys: Vec<String> = self
            .api_key
            .into_iter()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        if !self.listen.ip().is_loopback() && api_keys.is_empty() && !self.allow_unauthenticated {
            return Err(format!(
                "refusing to listen on {} without authentication: pass --api-key KEY (or set \
                 AGENTWIRE_API_KEY), or --allow-unauthenticated to serve it open",
                self.listen
            ));
        }
        // The agent gets none of the proxy's own variables, nor the key under any name.
        let own: Vec<OsString> = Flags::command()
            .get_arguments()
            .filter_map(|arg| arg.get_env().map(OsStr::to_os_string))
            .collect();
        let secrets: Vec<&[u8]> = api_keys.iter().map(|k| k.as_bytes()).collect();
        let hide = Hide {
            names: &own,
            secrets: &secrets,
        };
        let acp_flags = AcpFlags {
            max_prompts: self.acp_max_prompts,
            pool_size: self.acp_pool_size,
            queue_timeout_ms: self.acp_queue_timeout_ms,
            initialize_timeout_ms: self.acp_initialize_timeout_ms,
            allow_force: self.allow_force,
            native_tools: match self.acp_native_tools {
                None | Some(NativeToolsFlag::Keep) => NativeTools::Keep,
                Some(NativeToolsFlag::Off) => NativeTools::Off,
            },
        };
        let acp_only = [
            ("--agent-arg", !self.agent_arg.is_empty()),
            ("--acp-max-prompts", self.acp_max_prompts.is_some()),
            ("--acp-pool-size", self.acp_pool_size.is_some()),
            (
                "--acp-queue-timeout-ms",
                self.acp_queue_timeout_ms.is_some(),
            ),
            (
                "--acp-initialize-timeout-ms",
                self.acp_initialize_timeout_ms.is_some(),
            ),
            ("--acp-cwd", self.acp_cwd.is_some()),
            ("--acp-native-tools", self.acp_native_tools.is_some()),
        ];
        let conversation_flags = ConversationFlags {
            conversations: self.conversations,
            conversation_ttl_secs: self.conversation_ttl_secs,
            max_parked: self.max_parked,
            max_parked_per_owner: self.max_parked_per_owner,
        };
        let conversations = conversation_flags.config(&RegistryConfig::default())?;
        let acp = match self.agent_protocol {
            AgentProtocol::Acp if self.demo => {
                return Err(
                    "--demo answers from a stream-json transcript: drop --agent-protocol acp"
                        .into(),
                );
            }
            AgentProtocol::Acp => {
                let cwd = match (&self.acp_cwd, &self.workspace) {
                    (Some(dir), _) | (None, Some(dir)) => dir.clone(),
                    (None, None) => std::env::current_dir()
                        .map_err(|e| format!("the working directory: {e}; give --acp-cwd"))?,
                };
                let mut config = AcpSettings::config(&acp_flags, &cwd)?;
                config.conversations = conversation_flags.config(&config.conversations)?;
                Some(AcpSettings {
                    config,
                    args: self.agent_arg.clone(),
                    launch: AgentLaunch::default(),
                })
            }
            AgentProtocol::StreamJson => {
                if let Some((flag, _)) = acp_only.iter().find(|(_, given)| *given) {
                    return Err(format!("{flag} is only for --agent-protocol acp"));
                }
                None
            }
        };
        let agent = if self.demo {
            AgentProgram::demo(hide)?
        } else {
            AgentProgram::resolve(&self.agent_bin, hide)?
        };
        let mut acp = acp;
        if let Some(acp) = acp
            .as_mut()
            .filter(|a| a.config.native_tools == NativeTools::Off)
        {
            let program = agent.path.to_string_lossy();
            acp.launch =
                launch_without_native_tools(&program, &acp.args, &|name| std::env::var(name).ok())
                    .map_err(|e| format!("--acp-native-tools off: {e}"))?;
        }
        let live = match (self.cursor_mcp, &acp, conversations.enabled) {
            (false, _, _) => None,
            (true, _, _) if self.demo => {
                return Err("--demo answers from a transcript without tools: drop --cursor-mcp".into());
            }
            (true, Some(_), _) => {
                return Err("--cursor-mcp is for cursor-agent's stream-json: drop --agent-protocol acp (ACP agents get the client's tools as MCP tools anyway)".into());
            }
            (true, None, false) => {
                return Err("--cursor-mcp keeps the agent inside a tool call for the conversation's next request: it needs --conversations on".into());
            }
            (true, None, true) => {
                let workspace = match &self.workspace {
                    Some(dir) => dir.clone(),
                    None => std::env::current_dir()
                        .map_err(|e| format!("the working directory: {e}; give --workspace"))?,
                };
                let workspace = std::path::absolute(&workspace)
                    .map_err(|e| format!("--workspace {}: {e}", workspace.display()))?;
                if !workspace.is_dir() {
                    return Err(format!(
                        "--cursor-mcp: {} is not a directory (its .cursor/ gets the MCP configuration)",
                        workspace.display()
                    ));
                }
                Some(LiveSettings {
                    workspace,
                    config: LiveConfig::default(),
                })
            }
        };
        let mut config = Config {
            cursor_binary: agent.path.to_string_lossy().into_owned(),
            workspace: self.workspace.map(|p| p.to_string_lossy().into_owned()),
            cli_config_dir: self
                .cli_config_dir
                .map(|p| p.to_string_lossy().into_owned()),
            allow_force: self.allow_force,
            tool_strategy: match self.tool_strategy {
                ToolStrategyFlag::ReadOnly => ToolStrategy::ReadOnly,
                ToolStrategyFlag::Native => ToolStrategy::Native,
                ToolStrategyFlag::EnvelopeOnly => ToolStrategy::EnvelopeOnly,
            },
            reasoning: match self.reasoning {
                ReasoningFlag::ReasoningContent => ReasoningField::ReasoningContent,
                ReasoningFlag::Reasoning => ReasoningField::Reasoning,
                ReasoningFlag::Omitted => ReasoningField::Omitted,
            },
            activity_notes: !self.no_activity_notes,
            head_deadline_ms: self.head_deadline_ms,
            keep_alive_ms: self.keep_alive_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            max_duration_ms: self.max_duration_ms,
            ..Config::default()
        };
        config.request_limits.max_body_bytes = self.max_body_bytes;
        let allowed_hosts = self
            .allowed_host
            .iter()
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        let ms = |ms: u64| Duration::from_millis(ms.max(1));
        Ok(Settings {
            listen: self.listen,
            auth: Auth::new(api_keys),
            agent,
            config,
            max_concurrent: self.max_concurrent,
            log_format: self.log_format,
            demo: self.demo,
            cors_origins: CorsOrigins::new(self.cors_origin)?,
            allowed_hosts,
            header_timeout: ms(self.header_timeout_ms.min(self.request_timeout_ms)),
            request_timeout: ms(self.request_timeout_ms),
            write_timeout: ms(self.write_timeout_ms),
            max_connections: self.max_connections,
            reap_orphans: self.reap_orphans || std::process::id() == 1,
            kill_grace: Duration::from_millis(self.kill_grace_ms),
            models_ttl: Duration::from_secs(self.models_ttl_secs),
            model_aliases: ModelAliases::new(&self.model_alias)?,
            acp,
            conversations,
            live,
        })
    }
}

/// The conversation flags, as given.
#[derive(Debug, Clone, Copy)]
struct ConversationFlags {
    conversations: Switch,
    conversation_ttl_secs: Option<u64>,
    max_parked: Option<u32>,
    max_parked_per_owner: Option<u32>,
}

impl ConversationFlags {
    /// The flags over `defaults` (a transport's own): a per-owner limit not given follows
    /// a lower `--max-parked`.
    fn config(&self, defaults: &RegistryConfig) -> Result<RegistryConfig, String> {
        let max_parked = self.max_parked.map_or(defaults.max_parked, |n| n as usize);
        let max_parked_per_owner = match self.max_parked_per_owner {
            Some(n) if n as usize > max_parked => {
                return Err(format!(
                    "--max-parked-per-owner {n} is more than --max-parked {max_parked}"
                ));
            }
            Some(n) => n as usize,
            None => defaults.max_parked_per_owner.min(max_parked),
        };
        Ok(RegistryConfig {
            enabled: self.conversations == Switch::On,
            ttl_ms: self
                .conversation_ttl_secs
                .map_or(defaults.ttl_ms, |secs| secs * 1000),
            max_parked,
            max_parked_per_owner,
        })
    }
}

impl Settings {
    /// The lines printed at startup: where to reach the server, and in demo mode a request
    /// to try.
    pub fn banner(&self, bound: SocketAddr) -> String {
        let mut out = format!(
            "agentwire {} listening on http://{bound}/v1 (agent: {} {})",
            env!("CARGO_PKG_VERSION"),
            self.agent.label(),
            self.agent.version.as_deref().unwrap_or("(version unknown)"),
        );
        if self.demo {
            let auth = if self.auth.is_required() {
                " -H 'Authorization: Bearer $AGENTWIRE_API_KEY'"
            } else {
                ""
            };
            out.push_str(&format!(
                "\nDemo mode: answers come from an embedded transcript. Try:\n  curl -N http://{bound}/v1/chat/completions{auth} -H 'Content-Type: application/json' -d '{{\"model\":\"auto\",\"stream\":true,\"messages\":[{{\"role\":\"user\",\"content\":\"Hello!\"}}]}}'"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Settings, String> {
        let argv = ["proxy", "--agent-bin", "/bin/sh"].iter().chain(args);
        Flags::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .settings()
    }

    #[test]
    fn acp_flags_set_the_connection_and_are_checked() {
        let dir = std::env::temp_dir();
        let settings = parse(&["--agent-protocol", "acp"]).unwrap();
        let acp = settings.acp.unwrap();
        // The defaults `--help` names.
        let defaults = AcpConfig {
            max_concurrent_prompts: 4,
            pool_size: 1,
            queue_timeout_ms: 30_000,
            ..AcpConfig::default()
        };
        assert_eq!(
            acp.config.max_concurrent_prompts,
            defaults.max_concurrent_prompts
        );
        assert_eq!(acp.config.pool_size, defaults.pool_size);
        assert_eq!(acp.config.queue_timeout_ms, defaults.queue_timeout_ms);
        assert!(Path::new(&acp.config.cwd).is_absolute());
        // The agent's permission prompts follow --allow-force, as tool-less requests do
        // on the per-request path.
        assert_eq!(acp.config.permission, PermissionChoice::RejectOnce);

        let settings = parse(&[
            "--agent-protocol",
            "acp",
            "--allow-force",
            "--acp-max-prompts",
            "1",
            "--acp-pool-size",
            "0",
            "--acp-queue-timeout-ms",
            "250",
            "--acp-initialize-timeout-ms",
            "30000",
            "--acp-cwd",
            dir.to_str().unwrap(),
        ])
        .unwrap();
        let config = settings.acp.unwrap().config;
        assert_eq!(config.permission, PermissionChoice::AllowOnce);
        assert_eq!(
            (
                config.max_concurrent_prompts,
                config.pool_size,
                config.queue_timeout_ms
            ),
            (1, 0, 250)
        );
        assert_eq!(config.initialize_timeout_ms, 30_000);
        assert_eq!(Path::new(&config.cwd), std::path::absolute(&dir).unwrap());

        for (args, says) in [
            (&["--acp-max-prompts", "0"][..], "--acp-max-prompts"),
            (&["--acp-max-prompts", "x"], "--acp-max-prompts"),
            (&["--acp-pool-size", "65"], "--acp-pool-size"),
            (&["--acp-queue-timeout-ms", "0"], "--acp-queue-timeout-ms"),
            (
                &["--acp-initialize-timeout-ms", "0"],
                "--acp-initialize-timeout-ms",
            ),
            (&["--acp-cwd", "/no/such/dir"], "not a directory"),
        ] {
            let args: Vec<&str> = ["--agent-protocol", "acp"]
                .iter()
                .chain(args)
                .copied()
                .collect();
            let error = parse(&args).unwrap_err();
            assert!(error.contains(says), "{args:?}: {error}");
        }
        for flag in [
            "--acp-max-prompts",
            "--acp-pool-size",
            "--acp-queue-timeout-ms",
            "--acp-initialize-timeout-ms",
        ] {
            let error = parse(&[flag, "1"]).unwrap_err();
            assert!(error.contains("only for --agent-protocol acp"), "{error}");
        }
        let error = parse(&["--acp-cwd", dir.to_str().unwrap()]).unwrap_err();
        assert!(error.contains("--acp-cwd is only for"), "{error}");
    }

    #[test]
    fn conversation_flags_set_the_registry_and_are_checked() {
        // The defaults `--help` names are the registry's own.
        let settings = parse(&[]).unwrap();
        assert_eq!(settings.conversations, RegistryConfig::default());
        let settings = parse(&[
            "--conversations",
            "off",
            "--conversation-ttl-secs",
            "60",
            "--max-parked",
            "8",
            "--max-parked-per-owner",
            "2",
        ])
        .unwrap();
        assert_eq!(
            settings.conversations,
            RegistryConfig {
                enabled: false,
                ttl_ms: 60_000,
                max_parked: 8,
                max_parked_per_owner: 2,
            }
        );
        // The per-owner default follows a lower --max-parked.
        let settings = parse(&["--max-parked", "4"]).unwrap();
        assert_eq!(settings.conversations.max_parked_per_owner, 4);
        // The warm ACP agent keeps its connection's defaults unless told otherwise.
        let acp = |args: &[&str]| {
            let args: Vec<&str> = ["--agent-protocol", "acp"]
                .iter()
                .chain(args)
                .copied()
                .collect();
            parse(&args).map(|s| s.acp.unwrap().config.conversations)
        };
        assert_eq!(acp(&[]).unwrap(), AcpConfig::default().conversations);
        assert_eq!(
            acp(&["--conversations", "off", "--conversation-ttl-secs", "5"]).unwrap(),
            RegistryConfig {
                enabled: false,
                ttl_ms: 5_000,
                ..AcpConfig::default().conversations
            }
        );
        let limits = acp(&["--max-parked", "4"]).unwrap();
        assert_eq!((limits.max_parked, limits.max_parked_per_owner), (4, 4));
        let limits = acp(&["--max-parked-per-owner", "2"]).unwrap();
        assert_eq!((limits.max_parked, limits.max_parked_per_owner), (16, 2));
        let error = acp(&["--max-parked-per-owner", "20"]).unwrap_err();
        assert!(error.contains("more than --max-parked 16"), "{error}");
        for (args, says) in [
            (&["--conversations", "maybe"][..], "--conversations"),
            (&["--conversation-ttl-secs", "0"], "--conversation-ttl-secs"),
            (&["--max-parked", "0"], "--max-parked"),
            (&["--max-parked-per-owner", "0"], "--max-parked-per-owner"),
            (
                &["--max-parked", "4", "--max-parked-per-owner", "5"],
                "more than --max-parked",
            ),
        ] {
            let error = parse(args).unwrap_err();
            assert!(error.contains(says), "{args:?}: {error}");
        }
    }

    #[test]
    fn api_keys_repeat_or_come_in_a_list() {
        let settings = parse(&["--api-key", "sk-a, sk-b", "--api-key", "sk-c"]).unwrap();
        let owner = |key: &str| {
            let bearer = format!("Bearer {key}");
            settings.auth.owner(Some(bearer.as_bytes()), None)
        };
        let owners: Vec<_> = ["sk-a", "sk-b", "sk-c"].map(owner).into_iter().collect();
        assert!(owners.iter().all(Option::is_some), "{owners:?}");
        assert!(owners[0] != owners[1] && owners[1] != owners[2] && owners[0] != owners[2]);
        assert_eq!(owner("sk-a, sk-b"), None);
        assert!(!parse(&[]).unwrap().auth.is_required());
        // Empty keys are no keys: a non-loopback address still needs one.
        let error = parse(&["--listen", "0.0.0.0:1", "--api-key", ","]).unwrap_err();
        assert!(error.contains("without authentication"), "{error}");
    }
}
