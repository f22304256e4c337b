//! `--cursor-mcp`: cursor-agent given the client's tools as MCP tools, one process per
//! conversation kept running inside a tool call until the next request brings the result
//! ([`agentwire::live_chat::LiveChat`]). What both proxies share of it: the configuration
//! files in the workspace, the table of live chats, and how an MCP request finds its chat.
//!
//! ```text
//!  start-up ─► LiveFiles::write ─► <workspace>/.cursor/mcp.json, cli.json (removed at exit)
//!  request with tools ─► LiveChat::start ─► a run registered in LiveTable (token → the run)
//!  cursor-agent ── POST /mcp/cursor, Bearer <token>.<secret> ──► LiveTable::by_token ─► the run ─► LiveChat::handle_mcp
//!  response ended inside a tool call ─► the run parks (no slot held) ─► LiveTable::by_chat ◄─ the next request
//! ```
//!
//! - **The files.** cursor-agent names no MCP server on its command line: it reads them
//!   from `.cursor/mcp.json` in its workspace. The proxy writes it (and `.cursor/cli.json`,
//!   which allows the server's tool calls) only with `--cursor-mcp`, refuses to start if
//!   either exists with other content (they are the user's), and removes what it wrote at
//!   exit. One URL for every chat and the bearer in an environment variable keep the file
//!   the same for every run, so cursor-agent's approval of the entry holds.
//! - **Parked agents** hold no `--max-concurrent` slot: they are counted apart
//!   ([`LiveTable::parked`]) and bounded by the conversations' limits (`--max-parked`, the
//!   time to live): a chat the registry lets go has its parked agent stopped.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use agentwire::bridge::{Bridge, BridgeError, Output};
use agentwire::cursor::{ExitStatus, Invocation};
use agentwire::live_chat::{LiveChat, LiveConfig, cli_json, mcp_json};
use agentwire::mcp::{ExchangeId, ExchangeOutput};

/// The path segment of the live chats' MCP endpoint: `/mcp/cursor`.
pub const TOKEN: &str = "cursor";

/// The URL cursor-agent is given: the MCP endpoint's `endpoint` (see
/// [`mcp::endpoint`](crate::mcp::endpoint)) with the live chats' segment.
pub fn url(endpoint: &str) -> String {
    format!("{endpoint}{TOKEN}")
}

/// The chat token a request's `Authorization` names (`Bearer <token>.<secret>`): what
/// finds its chat. The secret is compared by the chat itself, in constant time.
pub fn token_of(authorization: Option<&[u8]>) -> Option<&str> {
    let bearer = authorization?.strip_prefix(b"Bearer ")?;
    let dot = bearer.iter().position(|&b| b == b'.')?;
    std::str::from_utf8(&bearer[..dot]).ok()
}

/// The configuration files the proxy wrote into the workspace's `.cursor/`, removed when
/// dropped (at exit).
#[derive(Debug)]
pub struct LiveFiles {
    /// Files written, to remove.
    written: Vec<PathBuf>,
    /// `.cursor/` itself, when the proxy made it.
    made_dir: Option<PathBuf>,
}

impl LiveFiles {
    /// Writes `.cursor/mcp.json` (naming `url`) and `.cursor/cli.json` into `workspace`.
    /// A file already there with the same content is left as it is (and not removed);
    /// one with other content is the user's, and refused.
    pub fn write(workspace: &Path, url: &str, config: &LiveConfig) -> Result<LiveFiles, String> {
        let dir = workspace.join(".cursor");
        let mut files = LiveFiles {
            written: Vec::new(),
            made_dir: None,
        };
        let wanted = [
            (dir.join("mcp.json"), mcp_json(url, config)),
            (dir.join("cli.json"), cli_json(config)),
        ];
        for (path, content) in &wanted {
            match std::fs::read(path) {
                Ok(existing) if existing == content.as_bytes() => {}
                Ok(_) => {
                    return Err(format!(
                        "--cursor-mcp: {} exists and is not agentwire's; move it away (agentwire writes its own there, and removes it at exit)",
                        path.display()
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("--cursor-mcp: {}: {e}", path.display())),
            }
        }
        if !dir.exists() {
            std::fs::create_dir(&dir)
                .map_err(|e| format!("--cursor-mcp: {}: {e}", dir.display()))?;
            files.made_dir = Some(dir.clone());
        }
        for (path, content) in wanted {
            if std::fs::read(&path).is_ok() {
                continue;
            }
            // Created, never overwritten: a file that appeared meanwhile is the user's.
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| format!("--cursor-mcp: {}: {e}", path.display()))?;
            io::Write::write_all(&mut file, content.as_bytes())
                .map_err(|e| format!("--cursor-mcp: {}: {e}", path.display()))?;
            files.written.push(path);
        }
        Ok(files)
    }
}

impl Drop for LiveFiles {
    fn drop(&mut self) {
        for path in self.written.drain(..) {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), %e, "cannot remove a file agentwire wrote");
            }
        }
        if let Some(dir) = self.made_dir.take() {
            // Only if empty: whatever else is there is not ours.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The live chats of a proxy, by the token of their MCP server and by their chat id:
/// `H` is how the proxy reaches the run holding one (a channel).
pub struct LiveTable<H> {
    inner: Mutex<Table<H>>,
}

struct Table<H> {
    by_token: HashMap<String, H>,
    /// Chat id → token, once the agent reported its chat.
    tokens: HashMap<String, String>,
    /// Tokens of parked runs.
    parked: std::collections::HashSet<String>,
}

impl<H: Clone> Default for LiveTable<H> {
    fn default() -> Self {
        LiveTable {
            inner: Mutex::new(Table {
                by_token: HashMap::new(),
                tokens: HashMap::new(),
                parked: std::collections::HashSet::new(),
            }),
        }
    }
}

impl<H: Clone> LiveTable<H> {
    fn lock(&self) -> MutexGuard<'_, Table<H>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the run of the chat whose MCP server has `token`.
    pub fn insert(&self, token: &str, handle: H) {
        self.lock().by_token.insert(token.to_owned(), handle);
    }

    /// The run's chat is `chat` (the agent reported it).
    pub fn name(&self, token: &str, chat: &str) {
        let mut table = self.lock();
        if table.by_token.contains_key(token) {
            table.tokens.insert(chat.to_owned(), token.to_owned());
        }
    }

    /// Whether the run is parked (its response ended inside a tool call) or serving a
    /// request.
    pub fn set_parked(&self, token: &str, parked: bool) {
        let mut table = self.lock();
        if parked {
            table.parked.insert(token.to_owned());
        } else {
            table.parked.remove(token);
        }
    }

    /// Forgets the run: its agent is gone.
    pub fn remove(&self, token: &str) {
        let mut table = self.lock();
        table.by_token.remove(token);
        table.parked.remove(token);
        table.tokens.retain(|_, t| t != token);
    }

    /// The run whose MCP server has `token`.
    pub fn by_token(&self, token: &str) -> Option<H> {
        self.lock().by_token.get(token).cloned()
    }

    /// The parked run of chat `chat`.
    pub fn parked_chat(&self, chat: &str) -> Option<H> {
        let table = self.lock();
        let token = table.tokens.get(chat)?;
        if !table.parked.contains(token) {
            return None;
        }
        table.by_token.get(token).cloned()
    }

    /// Runs now parked.
    pub fn parked(&self) -> usize {
        self.lock().parked.len()
    }

    /// Runs registered (serving a request or parked).
    pub fn len(&self) -> usize {
        self.lock().by_token.len()
    }

    /// Whether no run is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One output of a live chat's MCP exchange, for the connection that writes it.
#[derive(Debug)]
pub enum McpStep {
    /// The chat took the request as this exchange.
    Opened(ExchangeId),
    /// The response head.
    Head(crate::mcp::ResponseHead),
    /// Body bytes (an SSE stream's, written as they come).
    Body(Vec<u8>),
    /// The end of the response.
    End,
    /// The request is answered with this instead.
    Refused(crate::http::Reply),
}

/// Where a connection waits for its exchange's [`McpStep`]s: a channel of either proxy.
pub trait StepSink {
    /// Hands `step` on; `false` once the connection is gone.
    fn send_step(&self, step: McpStep) -> bool;
}

impl StepSink for std::sync::mpsc::Sender<McpStep> {
    fn send_step(&self, step: McpStep) -> bool {
        self.send(step).is_ok()
    }
}

impl StepSink for tokio::sync::mpsc::UnboundedSender<McpStep> {
    fn send_step(&self, step: McpStep) -> bool {
        self.send(step).is_ok()
    }
}

/// The exchanges a live chat's run answers, each with its connection and the headers every
/// response to it carries.
pub type Exchanges<S> = HashMap<ExchangeId, (S, crate::http::ResponseContext)>;

/// Hands the live chat's MCP outputs to the connections waiting for them (after every
/// input, as the core wants); an exchange whose connection is gone is told to the chat.
pub fn pump_mcp<S: StepSink>(chat: &mut LiveChat, exchanges: &mut Exchanges<S>, now_ms: u64) {
    let mut gone = Vec::new();
    while let Some(exchange) = chat.poll_mcp_ready() {
        let Some((sink, context)) = exchanges.get(&exchange) else {
            while chat.poll_mcp_output(exchange).is_some() {}
            continue;
        };
        let mut ended = false;
        while let Some(output) = chat.poll_mcp_output(exchange) {
            let step = match output {
                ExchangeOutput::Head(head) => {
                    McpStep::Head(crate::mcp::ResponseHead::of(&head, context))
                }
                ExchangeOutput::Body(bytes) => McpStep::Body(bytes.to_vec()),
                ExchangeOutput::End => {
                    ended = true;
                    McpStep::End
                }
            };
            if !sink.send_step(step) {
                gone.push(exchange);
                break;
            }
        }
        if ended {
            exchanges.remove(&exchange);
        }
    }
    for exchange in gone {
        exchanges.remove(&exchange);
        chat.mcp_exchange_gone(exchange, now_ms);
    }
}

/// The response of a run ended: the request's turn in its conversation ends (the chat
/// parked for the conversation's next request, or let go) and a live chat's run is named
/// in `table` by its chat, its token `token`. Whether a live chat was parked. Later calls
/// do nothing.
pub fn end_turn<H: Clone>(
    conversations: &crate::conversations::Conversations,
    driven: &mut Driven,
    table: Option<(&LiveTable<H>, &str)>,
) -> bool {
    match driven {
        Driven::Bridge(bridge) => {
            conversations.end_turn(bridge);
            false
        }
        Driven::Live(chat) => {
            let parked = conversations.end_live_turn(chat);
            if let (Some((table, token)), Some(id)) = (table, chat.chat_id()) {
                table.name(token, id);
            }
            parked
        }
    }
}

/// Adds the live chats' counters to the keyed `/health`'s `conversations`: agents parked
/// inside a tool call (`parked_agents`, holding no slot) and live chats in all.
pub fn add_health<H: Clone>(conversations: &mut serde_json::Value, table: &LiveTable<H>) {
    conversations["parked_agents"] = table.parked().into();
    conversations["live_chats"] = table.len().into();
}

/// What a per-request run drives: a request's own bridge, or a live chat (whose process
/// may outlive the request). The inputs and outputs are the same.
#[derive(Debug)]
pub enum Driven {
    /// One request, one agent run.
    Bridge(Box<Bridge>),
    /// A live chat (`--cursor-mcp`).
    Live(Box<LiveChat>),
}

impl Driven {
    /// The agent run to spawn.
    pub fn invocation(&self) -> Option<&Invocation> {
        match self {
            Driven::Bridge(bridge) => bridge.invocation(),
            Driven::Live(chat) => chat.invocation(),
        }
    }

    /// Agent stdout.
    pub fn push_stdout(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), BridgeError> {
        match self {
            Driven::Bridge(bridge) => bridge.push_stdout(bytes, now_ms),
            Driven::Live(chat) => chat.push_stdout(bytes, now_ms),
        }
    }

    /// Agent stderr.
    pub fn push_stderr(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), BridgeError> {
        match self {
            Driven::Bridge(bridge) => bridge.push_stderr(bytes, now_ms),
            Driven::Live(chat) => chat.push_stderr(bytes, now_ms),
        }
    }

    /// The agent exited.
    pub fn agent_exited(&mut self, status: ExitStatus, now_ms: u64) -> Result<(), BridgeError> {
        match self {
            Driven::Bridge(bridge) => bridge.agent_exited(status, now_ms),
            Driven::Live(chat) => chat.agent_exited(status, now_ms),
        }
    }

    /// A deadline passed.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        match self {
            Driven::Bridge(bridge) => bridge.handle_timeout(now_ms),
            Driven::Live(chat) => chat.handle_timeout(now_ms),
        }
    }

    /// The next deadline.
    pub fn poll_timeout(&self) -> Option<u64> {
        match self {
            Driven::Bridge(bridge) => bridge.poll_timeout(),
            Driven::Live(chat) => chat.poll_timeout(),
        }
    }

    /// The client hung up.
    pub fn client_gone(&mut self, now_ms: u64) {
        match self {
            Driven::Bridge(bridge) => bridge.client_gone(now_ms),
            Driven::Live(chat) => chat.client_gone(now_ms),
        }
    }

    /// The server shuts down (or a parked chat is let go).
    pub fn shutdown(&mut self, now_ms: u64) {
        match self {
            Driven::Bridge(bridge) => bridge.shutdown(now_ms),
            Driven::Live(chat) => chat.shutdown(now_ms),
        }
    }

    /// The next output.
    pub fn poll_output(&mut self) -> Option<Output<'_>> {
        match self {
            Driven::Bridge(bridge) => bridge.poll_output(),
            Driven::Live(chat) => chat.poll_output(),
        }
    }

    /// The live chat, if this is one.
    pub fn live(&mut self) -> Option<&mut LiveChat> {
        match self {
            Driven::Bridge(_) => None,
            Driven::Live(chat) => Some(chat),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_names_its_chat_by_the_part_before_the_dot() {
        assert_eq!(token_of(Some(b"Bearer abc.def")), Some("abc"));
        assert_eq!(token_of(Some(b"Bearer abcdef")), None);
        assert_eq!(token_of(Some(b"Basic abc.def")), None);
        assert_eq!(token_of(None), None);
    }

    #[test]
    fn the_files_are_written_once_refused_over_the_users_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let config = LiveConfig::default();
        let url = "http://127.0.0.1:9/mcp/cursor";
        let files = LiveFiles::write(dir.path(), url, &config).unwrap();
        let mcp = dir.path().join(".cursor/mcp.json");
        assert_eq!(
            std::fs::read_to_string(&mcp).unwrap(),
            mcp_json(url, &config)
        );
        // The same files again: taken as they are (and left at exit by the second).
        let again = LiveFiles::write(dir.path(), url, &config).unwrap();
        drop(again);
        assert!(mcp.exists());
        drop(files);
        assert!(
            !dir.path().join(".cursor").exists(),
            "removed with its directory"
        );
        // A file of the user's.
        std::fs::create_dir(dir.path().join(".cursor")).unwrap();
        std::fs::write(dir.path().join(".cursor/cli.json"), "{}").unwrap();
        let refused = LiveFiles::write(dir.path(), url, &config).unwrap_err();
        assert!(refused.contains("cli.json exists"), "{refused}");
        assert!(!mcp.exists(), "nothing written");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".cursor/cli.json")).unwrap(),
            "{}"
        );
    }

    #[test]
    fn the_table_finds_parked_chats_only() {
        let table: LiveTable<u32> = LiveTable::default();
        table.insert("t1", 1);
        table.name("t1", "chat-1");
        assert_eq!(table.by_token("t1"), Some(1));
        assert_eq!(table.parked_chat("chat-1"), None, "serving a request");
        table.set_parked("t1", true);
        assert_eq!(table.parked_chat("chat-1"), Some(1));
        assert_eq!(table.parked(), 1);
        table.remove("t1");
        assert_eq!(
            (table.by_token("t1"), table.parked_chat("chat-1")),
            (None, None)
        );
        assert_eq!(table.parked(), 0);
    }
}
