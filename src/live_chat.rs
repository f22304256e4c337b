//! A cursor-agent chat kept live across requests, the client's tools given to it as real
//! MCP tools: one `cursor-agent --print` process whose model calls the client's tools
//! through an MCP server of its own (`mcp::link`), each call ending the HTTP response with
//! the client's tool calls while the agent waits inside it, and the next request's results
//! answering the calls so that the same process goes on into that request's response.
//!
//! ```text
//!  request ─► LiveChat::start (Fresh: whole conversation; Resume: --resume <chat> + delta) ─► invocation() ─► adapter spawns it
//!  agent stdout ─► push_stdout ─► Decoder ─► event::Event ─► the request's Bridge (a transport's) ─► poll_output: Head / Body / End
//!  agent's MCP request ─► handle_mcp ─► McpLink ─► tools/call ─► the client's tool call ─► the response ends, the agent waits
//!  next request ─► attach (its results answer the calls) ─► the agent goes on into the new response
//! ```
//!
//! cursor-agent names no MCP server on its command line: it reads them from
//! `.cursor/mcp.json` in its workspace, approved by `--approve-mcps`. That file
//! ([`mcp_json`]) is the same for every chat — one URL for all, the bearer token in an
//! environment variable (`${env:…}`), which each run gets its own of — so that the
//! approval cursor-agent records for the entry holds; [`cli_json`] allows the calls of its
//! tools, which a headless run otherwise rejects. The adapter writes both, only when asked
//! to (the user's workspace is theirs), and serves the URL.
//!
//! Rules kept here:
//! - The agent's own calls of the server's tools (`mcpToolCall` on stdout) are not its
//!   activity: their calls come through the server.
//! - A response that ended with the client's calls leaves the agent running, suspended
//!   ([`is_suspended`](LiveChat::is_suspended)): what it writes meanwhile is held for the
//!   next response. A response that ended any other way stops it.
//! - A call the agent would give up on (cursor-agent's own MCP limit, [`LiveConfig`]) is
//!   answered before it with a note that the result follows; the chat then cannot take the
//!   result in that process, and the conversation's next request resumes the chat
//!   (`--resume`) with it, as it does once the agent has exited for any reason.
//! - A resumed chat the agent cannot continue (it fails before answering anything, or
//!   reports another chat) is replaced, once, by a fresh run of the whole conversation
//!   ([`Output::Respawn`]) before anything reaches the client.

use crate::bridge::Bridge;
use crate::bridge::{
    BridgeError, BridgeParams, Config, Dialect, Output, Prepared, drain_after_exit,
};
use crate::conversation::{Conversation, Message, Part, ToolChoice};
use crate::cursor::diagnose::ExitStatus;
use crate::cursor::prompt::{render_continuation, render_prompt};
use crate::cursor::{AgentMode, Decoder, Invocation, InvocationSpec};
use crate::event::Event;
use crate::mcp::link::{CallState, McpLink, delta_of};
use crate::mcp::{self, ExchangeId, ExchangeOutput, HttpRequest, McpEvent, ToolOutcome, ToolSet};
use crate::registry::{Decision, Registry, Resume};
use crate::tools::ToolPlan;

/// The settings of live chats.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveConfig {
    /// The MCP server's name in `.cursor/mcp.json`, which cursor-agent puts in its tool
    /// names (`agentwire-<tool>`). Default `agentwire`.
    pub server_name: String,
    /// The environment variable carrying each run's bearer token, named by the file's
    /// `Authorization` header. Default `AGENTWIRE_MCP_TOKEN`.
    pub token_env: String,
    /// How long cursor-agent waits inside one MCP call before giving up on it: a call is
    /// answered with a note before then. Default 60 s (the MCP SDK's default request
    /// timeout, which cursor-agent is believed to keep; unmeasured).
    pub call_limit_ms: u64,
    /// Bytes of the agent's output held while no response can take it; past it the agent
    /// is stopped. Default 1 MiB.
    pub held_output_limit: usize,
    /// The MCP servers' settings (keep-alive, limits).
    pub mcp: mcp::Config,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            server_name: "agentwire".into(),
            token_env: "AGENTWIRE_MCP_TOKEN".into(),
            call_limit_ms: 60_000,
            held_output_limit: 1 << 20,
            mcp: mcp::Config::default(),
        }
    }
}

/// `.cursor/mcp.json`: the server `config.server_name` at `url`, its bearer token read
/// from the environment variable `config.token_env` of each run.
#[must_use]
pub fn mcp_json(url: &str, config: &LiveConfig) -> String {
    let bearer = format!("Bearer ${{env:{}}}", config.token_env);
    let file = serde_json::json!({
        "mcpServers": {
            config.server_name.as_str(): {"url": url, "headers": {"Authorization": bearer}},
        }
    });
    let mut text = serde_json::to_string_pretty(&file).expect("a JSON value");
    text.push('\n');
    text
}

/// `.cursor/cli.json`: the calls of the server's tools allowed (a headless run rejects
/// an MCP call no rule allows, even from an approved server).
#[must_use]
pub fn cli_json(config: &LiveConfig) -> String {
    let rule = format!("Mcp({}:*)", config.server_name);
    let file = serde_json::json!({"permissions": {"allow": [rule], "deny": []}});
    let mut text = serde_json::to_string_pretty(&file).expect("a JSON value");
    text.push('\n');
    text
}

/// Why [`LiveChat::handle_mcp`] serves a request no server.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpDenied {
    /// The bearer token is not this chat's (answer 401).
    Unauthorized,
}

/// Why [`LiveChat::attach`] did not take a request: it is handed back, with its decision,
/// for a run of its own.
#[derive(Debug)]
pub struct NotAttached {
    /// The request, parsed.
    pub prepared: Prepared,
    /// Its conversation's decision (a resume of this chat).
    pub decision: Decision,
}

/// A run that resumes a chat, while it can still be replaced by a fresh one.
struct Fallback {
    chat: String,
    invocation: Invocation,
    conversation: Conversation,
}

/// One-shot outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Once {
    No,
    Due,
    Done,
}

/// A cursor-agent chat kept live across requests (see the [module](self) documentation).
/// Driven like a [`Bridge`]: spawn [`invocation`](Self::invocation), push the agent's
/// output, serve [`poll_output`](Self::poll_output) as the response; besides, the MCP
/// endpoint's requests bearing [`bearer`](Self::bearer) go to
/// [`handle_mcp`](Self::handle_mcp).
pub struct LiveChat {
    decoder: Decoder,
    link: McpLink,
    /// The current response.
    turn: Bridge,
    invocation: Option<Invocation>,
    fallback: Option<Box<Fallback>>,
    config: LiveConfig,
    decoder_config: crate::cursor::DecoderConfig,
    exited: bool,
    stderr_tail: Vec<u8>,
    stderr_limit: usize,
    /// The response ended with the client's calls; the agent waits inside them.
    suspended: bool,
    /// Agent output no response could take yet.
    held: Vec<u8>,
    /// A call was answered with a note: the process cannot take its result.
    deferred: bool,
    stop: Once,
    respawn: Once,
    /// The resumed run is being given up: its output is ignored until it exits.
    abandoning: bool,
}

impl LiveChat {
    // B. Inputs that make one.

    /// A live chat for a request with client tools whose conversation's decision is
    /// `decision` (fresh, or a resume of a chat no process holds any more): the run to
    /// spawn, its MCP server made from the request's tools and `entropy` (32 bytes the
    /// caller drew at random: the server's token and secret). A refused decision gives a
    /// chat whose only outputs are the refusal and `End`, with no invocation.
    pub fn start(
        dialect: Dialect,
        prepared: Prepared,
        decision: Decision,
        config: &Config,
        live: &LiveConfig,
        params: BridgeParams,
        entropy: [u8; 32],
    ) -> LiveChat {
        let tools = ToolSet::new(&prepared.request.conversation.tools);
        let link = McpLink::new(tools, &live.mcp, &entropy, Some(live.call_limit_ms));
        let conversation = &prepared.request.conversation;
        let spec = |resume| InvocationSpec {
            program: &config.cursor_binary,
            model: &prepared.request.model,
            workspace: config.workspace.as_deref(),
            config_dir: config.cli_config_dir.as_deref(),
            mode: AgentMode::ReadOnly,
            partial_output: config.partial_output,
            resume,
        };
        let bearer = link.shared_path_bearer();
        let with_mcp = |mut invocation: Invocation| {
            invocation.args.push("--approve-mcps".into());
            invocation
                .env
                .push((live.token_env.clone(), bearer.clone()));
            invocation
        };
        // The tools reach the agent as MCP tools: nothing is taught in the prompt.
        let plan = ToolPlan::new(&[], config.tool_strategy);
        let (lease, invocation, fallback) = match decision {
            Decision::Refuse(reply) => {
                let turn = Bridge::rejected(dialect, &reply, config, params);
                return LiveChat::new(link, turn, None, config, live);
            }
            Decision::Fresh { lease, .. } => {
                let prompt = render_prompt(conversation, &plan);
                (lease, with_mcp(Invocation::new(&spec(None), prompt)), None)
            }
            Decision::Resume { lease, resume } => {
                let prompt = render_continuation(conversation, resume.delta);
                let resumed = with_mcp(Invocation::new(&spec(Some(&resume.agent_session)), prompt));
                let fresh = with_mcp(Invocation::new(&spec(None), String::new()));
                let fallback = Fallback {
                    chat: resume.agent_session,
                    invocation: fresh,
                    conversation: conversation.clone(),
                };
                (Some(lease), resumed, Some(Box::new(fallback)))
            }
        };
        let turn = Bridge::for_transport(dialect, prepared, config, params, lease);
        let mut chat = LiveChat::new(link, turn, Some(invocation), config, live);
        chat.fallback = fallback;
        chat
    }

    fn new(
        link: McpLink,
        turn: Bridge,
        invocation: Option<Invocation>,
        config: &Config,
        live: &LiveConfig,
    ) -> LiveChat {
        LiveChat {
            decoder: Decoder::new(config.decoder.clone()),
            link,
            turn,
            invocation,
            fallback: None,
            config: live.clone(),
            decoder_config: config.decoder.clone(),
            exited: false,
            stderr_tail: Vec::new(),
            stderr_limit: config.stderr_tail_bytes,
            suspended: false,
            held: Vec::new(),
            deferred: false,
            stop: Once::No,
            respawn: Once::No,
            abandoning: false,
        }
    }

    /// Whether a request should be served by a live chat: `config` offers them and the
    /// request's client tools would be called (tools, and a tool choice other than
    /// `none`).
    #[must_use]
    pub fn serves(prepared: &Prepared) -> bool {
        let conversation = &prepared.request.conversation;
        !conversation.tools.is_empty() && conversation.tool_choice != ToolChoice::None
    }

    // A. Getters.

    /// The agent run to spawn (again after [`Output::Respawn`]); `None` for a refused
    /// request.
    pub fn invocation(&self) -> Option<&Invocation> {
        self.invocation.as_ref()
    }

    /// The bearer token of this chat's MCP server (what its run's environment variable
    /// holds): requests to the MCP endpoint presenting it belong here. Its part before the
    /// `.` names the chat and may be used to find it; the rest is compared in constant
    /// time by [`handle_mcp`](Self::handle_mcp).
    pub fn bearer(&self) -> String {
        self.link.shared_path_bearer()
    }

    /// The part of [`bearer`](Self::bearer) that names the chat.
    pub fn token(&self) -> &str {
        self.link.token()
    }

    /// The agent's chat id, once it reported one.
    pub fn chat_id(&self) -> Option<&str> {
        self.decoder
            .session_id()
            .filter(|chat| crate::cursor::is_chat_id(chat))
    }

    /// Whether the response ended with the client's tool calls while the agent waits
    /// inside them: the process is kept (not stopped) for the request that brings the
    /// results ([`attach`](Self::attach)).
    pub fn is_suspended(&self) -> bool {
        self.suspended && !self.exited && !self.deferred && self.stop == Once::No
    }

    /// Whether the agent has exited.
    pub fn has_exited(&self) -> bool {
        self.exited
    }

    /// Whether the response is a stream.
    pub fn is_stream(&self) -> bool {
        self.turn.is_stream()
    }

    /// Whether the response's [`Output::End`] has been handed out.
    pub fn is_ended(&self) -> bool {
        self.turn.is_ended()
    }

    // B. Inputs.

    /// Agent stdout, in any chunking.
    pub fn push_stdout(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), BridgeError> {
        if self.exited {
            return Err(BridgeError::AfterExit);
        }
        if self.abandoning {
            return Ok(());
        }
        if self.suspended || self.turn.is_ending() {
            if self.held.len() + bytes.len() > self.config.held_output_limit {
                self.request_stop();
            } else {
                self.held.extend_from_slice(bytes);
            }
            return Ok(());
        }
        self.decode(bytes, now_ms);
        self.after_input(now_ms);
        Ok(())
    }

    /// Agent stderr, in any chunking. Only its tail is kept, for failure messages.
    pub fn push_stderr(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), BridgeError> {
        let _ = now_ms;
        if self.exited {
            return Err(BridgeError::AfterExit);
        }
        let tail = &mut self.stderr_tail;
        tail.extend_from_slice(bytes);
        if tail.len() > self.stderr_limit {
            let cut = tail.len() - self.stderr_limit;
            tail.drain(..cut);
        }
        Ok(())
    }

    /// The agent exited, its stdout and stderr read to their end and pushed.
    pub fn agent_exited(&mut self, status: ExitStatus, now_ms: u64) -> Result<(), BridgeError> {
        if self.exited {
            return Err(BridgeError::ExitedTwice);
        }
        self.exited = true;
        if self.stop == Once::No {
            self.stop = Once::Done;
        }
        if self.fallback.is_some() && (self.abandoning || !self.decoder.saw_result()) {
            self.respawn(now_ms);
            return Ok(());
        }
        // The server goes with the process: calls still waiting end.
        self.link.server().close(now_ms);
        if self.suspended || self.turn.is_ending() {
            return Ok(());
        }
        let turn = &mut self.turn;
        let stderr = std::mem::take(&mut self.stderr_tail);
        let server = self.config.server_name.clone();
        drain_after_exit(&mut self.decoder, &stderr, status, &mut |event| {
            if !is_own_call(event, &server) {
                turn.push_event(event, now_ms);
            }
            turn.is_ending()
        });
        self.stderr_tail = stderr;
        self.after_input(now_ms);
        Ok(())
    }

    /// A request to the MCP endpoint bearing `authorization` (the `Authorization`
    /// header's value), after the adapter's Host and Origin checks. Its response comes
    /// from [`poll_mcp_output`](Self::poll_mcp_output).
    pub fn handle_mcp(
        &mut self,
        authorization: Option<&[u8]>,
        request: &HttpRequest<'_>,
        now_ms: u64,
    ) -> Result<ExchangeId, McpDenied> {
        if !self.link.admits_bearer(authorization) {
            return Err(McpDenied::Unauthorized);
        }
        let exchange = self.link.server().handle_http(request, now_ms);
        self.serve_mcp_events(now_ms);
        self.after_input(now_ms);
        Ok(exchange)
    }

    /// The agent's HTTP connection of `exchange` closed.
    pub fn mcp_exchange_gone(&mut self, exchange: ExchangeId, now_ms: u64) {
        self.link.server().exchange_gone(exchange, now_ms);
        self.serve_mcp_events(now_ms);
        self.after_input(now_ms);
    }

    /// A deadline from [`poll_timeout`](Self::poll_timeout) passed. Spurious calls do
    /// nothing.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        let server = self.link.server();
        if server.poll_timeout().is_some_and(|due| now_ms >= due) {
            server.handle_timeout(now_ms);
        }
        self.serve_mcp_events(now_ms);
        if !self.suspended
            && !self.turn.is_ending()
            && self.turn.poll_timeout().is_some_and(|due| now_ms >= due)
        {
            self.turn.handle_timeout(now_ms);
        }
        self.after_input(now_ms);
    }

    /// The HTTP client hung up: the agent is stopped and nothing more is written.
    pub fn client_gone(&mut self, now_ms: u64) {
        if self.suspended {
            return;
        }
        self.turn.client_gone(now_ms);
        self.request_stop();
        self.after_input(now_ms);
    }

    /// The adapter is shutting down (or gave the suspended chat up: its time to live
    /// passed): the response, if one is open, ends as a failure the client may retry, the
    /// MCP server closes and the agent is stopped.
    pub fn shutdown(&mut self, now_ms: u64) {
        if !self.suspended {
            self.turn.shutdown(now_ms);
        }
        self.link.server().close(now_ms);
        self.request_stop();
        self.after_input(now_ms);
    }

    /// The conversation's next request, for this suspended chat (`decision` resumes it:
    /// [`Resume::agent_session`] is its [`chat_id`](Self::chat_id)): its results answer
    /// the calls the agent waits in (new input after them joins the last result) and the
    /// agent goes on into this request's response, which [`poll_output`](Self::poll_output)
    /// gives from now on. Call it once the previous response's `End` was handed out and
    /// [`end_conversation_turn`](Self::end_conversation_turn) called.
    ///
    /// # Errors
    ///
    /// The request is handed back when this process cannot take it: it is not suspended
    /// (the agent exited, or was told its calls' results follow later), the decision is
    /// not a resume of this chat, or a result answers no call it still waits in. The
    /// adapter then stops this process and runs the request with
    /// [`start`](Self::start).
    pub fn attach(
        &mut self,
        dialect: Dialect,
        prepared: Prepared,
        decision: Decision,
        config: &Config,
        params: BridgeParams,
    ) -> Result<(), Box<NotAttached>> {
        let now_ms = params.now_ms;
        let takes = |chat: &LiveChat, resume: &Resume, messages: &[Message]| {
            let results = &messages[resume.delta..][..resume.shape.results];
            chat.is_suspended()
                && chat.turn.is_ended()
                && chat.chat_id() == Some(resume.agent_session.as_str())
                && results.iter().all(|m| {
                    let id = m.tool_call_id.as_deref().unwrap_or_default();
                    chat.link
                        .calls
                        .iter()
                        .any(|c| c.client_id == id && c.state != CallState::Deferred)
                })
        };
        let Decision::Resume { lease, resume } = decision else {
            return Err(Box::new(NotAttached { prepared, decision }));
        };
        if !takes(self, &resume, &prepared.request.conversation.messages) {
            let decision = Decision::Resume { lease, resume };
            return Err(Box::new(NotAttached { prepared, decision }));
        }
        let (results, mut input) = delta_of(&prepared.request.conversation.messages, &resume);
        self.turn = Bridge::for_transport(dialect, prepared, config, params, Some(lease));
        self.suspended = false;
        let count = results.len();
        for (position, (client_id, mut outcome)) in results.into_iter().enumerate() {
            if position + 1 == count {
                if let Some(text) = input.take() {
                    outcome.content.push(Part::Text(format!("\n\n{text}")));
                }
            }
            // Checked above: every result answers a call the agent waits in.
            let answered = self.link.answer(&client_id, &outcome, now_ms);
            debug_assert!(answered, "a result for a call the agent waits in");
        }
        // Calls made while no response could take them go to this one's client.
        let unannounced: Vec<(String, String, String)> = self
            .link
            .calls
            .iter_mut()
            .filter(|c| c.state == CallState::Unannounced)
            .map(|c| {
                c.state = CallState::Announced;
                (c.client_id.clone(), c.name.clone(), c.arguments.clone())
            })
            .collect();
        for (id, name, arguments) in unannounced {
            self.turn.push_client_call(id, &name, &arguments, now_ms);
        }
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            self.decode(&held, now_ms);
        }
        self.serve_mcp_events(now_ms);
        self.after_input(now_ms);
        Ok(())
    }

    /// Gives the request's place in its conversation back to `registry`: the chat is
    /// parked for the conversation's next request when the response reached its end (with
    /// the calls it waits in, if suspended), released otherwise. Call it once
    /// [`Output::End`] was handed out. Returns whether it was parked.
    pub fn end_conversation_turn(&mut self, registry: &mut Registry, now_ms: u64) -> bool {
        let chat = self
            .decoder
            .session_id()
            .filter(|chat| crate::cursor::is_chat_id(chat))
            .map(str::to_owned);
        self.turn
            .settle_conversation(chat.as_deref(), registry, now_ms)
    }

    // C. Outputs.

    /// The next thing to do for the current response (and the agent), or `None` until
    /// the next input. `StopAgent` and `Respawn` concern the agent process; `End` ends the
    /// response — after it, a chat that [`is_suspended`](Self::is_suspended) keeps its
    /// process for [`attach`](Self::attach).
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output<'_>> {
        if self.stop == Once::Due {
            self.stop = Once::Done;
            return Some(Output::StopAgent);
        }
        if self.respawn == Once::Due {
            self.respawn = Once::Done;
            return Some(Output::Respawn);
        }
        self.turn.poll_output()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due; `None` when nothing is
    /// scheduled.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        let turn = (!self.suspended && !self.turn.is_ending())
            .then(|| self.turn.poll_timeout())
            .flatten();
        turn.into_iter()
            .chain(self.link.server_ref().poll_timeout())
            .min()
    }

    /// An MCP exchange with output for [`poll_mcp_output`](Self::poll_mcp_output).
    #[must_use]
    pub fn poll_mcp_ready(&mut self) -> Option<ExchangeId> {
        self.link.server().poll_ready()
    }

    /// The next output of an MCP exchange: its head, body bytes, then its end.
    #[must_use]
    pub fn poll_mcp_output(&mut self, exchange: ExchangeId) -> Option<ExchangeOutput<'_>> {
        self.link.server().poll_exchange(exchange)
    }

    // Internals.

    /// Decodes `bytes` and routes their events to the current response.
    fn decode(&mut self, bytes: &[u8], now_ms: u64) {
        let mut input = bytes;
        while !input.is_empty() {
            let used = self
                .decoder
                .push_stdout_line(input)
                .expect("stdout is not ended before the agent exits");
            input = &input[used..];
            while let Some(event) = self.decoder.poll_event() {
                if is_own_call(&event, &self.config.server_name) {
                    continue;
                }
                if event.is_answer() {
                    // Evidence that the resumed chat goes on: no fresh run after this.
                    self.fallback = None;
                }
                if matches!(event, Event::Failed(_)) && self.fallback.is_some() {
                    self.abandon();
                    break;
                }
                self.turn.push_event(&event, now_ms);
            }
            if let (Some(fallback), Some(reported)) = (&self.fallback, self.decoder.session_id()) {
                if fallback.chat != reported {
                    // cursor-agent starts a new chat for an id it does not know.
                    self.abandon();
                }
            }
            if self.abandoning {
                return;
            }
            if self.suspended || self.turn.is_ending() {
                // The rest waits for the next response.
                self.held.extend_from_slice(input);
                return;
            }
        }
    }

    /// What the MCP server has for the chat: calls to give to the response, calls given
    /// up, calls the agent is about to give up.
    fn serve_mcp_events(&mut self, now_ms: u64) {
        while let Some(event) = self.link.server().poll_event() {
            match event {
                McpEvent::Call {
                    call,
                    tool,
                    arguments,
                } => {
                    let open = !self.suspended && !self.turn.is_ending();
                    let state = if open {
                        CallState::Announced
                    } else {
                        CallState::Unannounced
                    };
                    let linked = self.link.record(call, tool, arguments, state);
                    let (id, name, arguments) = (
                        linked.client_id.clone(),
                        linked.name.clone(),
                        linked.arguments.clone(),
                    );
                    if open {
                        self.turn.push_client_call(id, &name, &arguments, now_ms);
                    }
                }
                McpEvent::Cancelled { call, .. } => self.link.forget(call),
                McpEvent::CallLimit { call } => {
                    let Some(linked) = self.link.call_mut(call) else {
                        continue;
                    };
                    linked.state = CallState::Deferred;
                    let note = format!(
                        "The tool `{}` is still running on the user's side. Its result will be given to you in a later message: do not call it again, and end your turn now.",
                        linked.name
                    );
                    self.deferred = true;
                    let _ = self.link.server().answer_call(
                        call,
                        &ToolOutcome::text(note, false),
                        now_ms,
                    );
                }
                _ => {}
            }
        }
    }

    /// After any input: a response that ended with the client's calls suspends the chat;
    /// a stop the response asked for otherwise (it failed, its client left, the loop
    /// guard) stops the agent. A response that ended with the agent's own `result` leaves
    /// it to exit by itself, its chat saved.
    fn after_input(&mut self, now_ms: u64) {
        let _ = now_ms;
        if self.turn.take_stop() {
            if self.turn.ended_with_tool_calls() && !self.exited {
                self.suspended = true;
            } else {
                self.request_stop();
            }
        }
    }

    fn request_stop(&mut self) {
        if self.stop == Once::No && !self.exited {
            self.stop = Once::Due;
        }
    }

    /// Gives the resumed run up: it is stopped, and replaced once it exited.
    fn abandon(&mut self) {
        self.abandoning = true;
        self.request_stop();
    }

    /// Replaces the abandoned run, which has exited, by the fresh one.
    fn respawn(&mut self, now_ms: u64) {
        let _ = now_ms;
        let Fallback {
            mut invocation,
            conversation,
            ..
        } = *self.fallback.take().expect("checked by the caller");
        let plan = ToolPlan::new(&[], crate::tools::ToolStrategy::default());
        invocation.stdin = render_prompt(&conversation, &plan).into_bytes();
        self.invocation = Some(invocation);
        self.decoder = Decoder::new(self.decoder_config.clone());
        self.abandoning = false;
        self.exited = false;
        self.stop = Once::No;
        self.respawn = Once::Due;
        self.stderr_tail.clear();
        self.held.clear();
    }
}

/// Whether `event` is the agent's own record of a call of server `server`'s tools
/// (`mcpToolCall` on stdout), which comes through the server instead.
fn is_own_call(event: &Event<'_>, server: &str) -> bool {
    let Event::AgentActivity(activity) = event else {
        return false;
    };
    if activity.tool != "mcp" {
        return false;
    }
    let Some(arguments) = activity.arguments else {
        return false;
    };
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Named<'a> {
        #[serde(borrow, default)]
        provider_identifier: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        server_identifier: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Named<'_>>(arguments).is_ok_and(|named| {
        named.provider_identifier.as_deref() == Some(server)
            || named.server_identifier.as_deref() == Some(server)
    })
}

impl std::fmt::Debug for LiveChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveChat")
            .field("chat", &self.decoder.session_id())
            .field("suspended", &self.suspended)
            .field("exited", &self.exited)
            .field("pending_calls", &self.link.calls.len())
            .finish_non_exhaustive()
    }
}
