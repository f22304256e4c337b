//! Everything a [`Bridge`](super::Bridge) can be told, with documented defaults.

use crate::api::RequestLimits;
use crate::cursor::DecoderConfig;
use crate::openai::chat::ReasoningField;
use crate::tools::ToolStrategy;
use crate::tools::loop_guard::LoopGuardConfig;

/// Bridge configuration. `Config::default()` is a safe starting point: read-only agent in
/// client mode, no `--force`, generous timeouts.
#[derive(Debug, Clone)]
pub struct Config {
    /// The cursor-agent binary: a path, or a name looked up in `PATH`
    /// (default `cursor-agent`).
    pub cursor_binary: String,
    /// `--workspace` for every run (default none: the adapter's working directory).
    pub workspace: Option<String>,
    /// An isolated CLI configuration directory passed as `CURSOR_CONFIG_DIR` (default
    /// none). Every `--model` run rewrites the CLI's `cli-config.json`; isolating it keeps
    /// concurrent runs from racing on the user's file.
    pub cli_config_dir: Option<String>,
    /// Whether agent mode (a request without tools) may pass `--force` (client mode
    /// never does), letting the agent
    /// run shell and web tools without approval (default `false`: they are rejected, as
    /// headless runs cannot ask).
    pub allow_force: bool,
    /// How client tools are executed in client mode (default
    /// [`ToolStrategy::ReadOnly`]).
    pub tool_strategy: ToolStrategy,
    /// Pass `--stream-partial-output` for token-level text (default `true`).
    pub partial_output: bool,
    /// Chat Completions: where reasoning goes in the response (default
    /// `reasoning_content`).
    pub reasoning: ReasoningField,
    /// Show the agent's own tool use and reconnects as notes in the reasoning channel
    /// (default `true`).
    pub activity_notes: bool,
    /// Streaming only: how long to wait for the first answer event before committing the
    /// response head (200) anyway and starting keep-alives (default 30 s). Until then a
    /// failure still gets its true HTTP status.
    pub head_deadline_ms: u64,
    /// Interval of SSE comment keep-alives during silence, once the head is sent
    /// (default 15 s; proxies commonly drop idle streams after 30–60 s).
    pub keep_alive_ms: u64,
    /// Stop the agent and fail (504) after this long without any output from it
    /// (default 20 min: the CLI has been seen silent for over 12 minutes while generating).
    pub idle_timeout_ms: u64,
    /// Stop the agent and fail (504) after this long in total, however busy it is
    /// (default none).
    pub max_duration_ms: Option<u64>,
    /// How long a batch of client tool calls stays open for more calls of the same model
    /// call (default 250 ms; parallel calls arrive within milliseconds of each other).
    pub batch_window_ms: u64,
    /// Bytes of the agent's stderr kept for failure messages (default 16 KiB, the most
    /// recent).
    pub stderr_tail_bytes: usize,
    /// Largest text envelope a client tool call may be written in (default 4 MiB).
    pub max_envelope_bytes: usize,
    /// Stdout line limit and notes kept by the decoder.
    pub decoder: DecoderConfig,
    /// Request body limits, and whether attachments are refused.
    pub request_limits: RequestLimits,
    /// Repeated-call limits.
    pub loop_guard: LoopGuardConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cursor_binary: "cursor-agent".into(),
            workspace: None,
            cli_config_dir: None,
            allow_force: false,
            tool_strategy: ToolStrategy::ReadOnly,
            partial_output: true,
            reasoning: ReasoningField::ReasoningContent,
            activity_notes: true,
            head_deadline_ms: 30_000,
            keep_alive_ms: 15_000,
            idle_timeout_ms: 20 * 60 * 1000,
            max_duration_ms: None,
            batch_window_ms: 250,
            stderr_tail_bytes: 16 * 1024,
            max_envelope_bytes: 4 * 1024 * 1024,
            decoder: DecoderConfig::default(),
            request_limits: RequestLimits::default(),
            loop_guard: LoopGuardConfig::default(),
        }
    }
}
