//! Conversations over one warm agent: a session that answered a request is parked with the
//! conversation's transcript ([`Registry`]), and the conversation's next request resumes it
//! with only what is new — the results of the calls it waits for, answered through its MCP
//! server, then any new input as a prompt — or starts fresh with the whole conversation.
//! The client's tools reach the agent as an MCP server of the session's own
//! ([`McpLink`]), whose calls end the HTTP response with the client's tool calls while
//! the agent stays inside them.
//!
//! ```text
//!  request ─► start_conversation_turn ─► Registry::decide ─┬─ Fresh: session/new (+ MCP server) ─► prompt (whole conversation)
//!                                                           └─ Resume: the parked session ─► answer its calls / prompt the delta
//!  agent ─► MCP tools/call ─► handle_mcp ─► the turn's bridge: tool calls, finish ─► the session parks, the call pending
//!  agent's turn over (end_turn) ─► the session parks, waiting for the next user turn
//!  time ─► expiry / eviction ─► the parked session is cancelled and closed
//! ```
//!
//! Rules kept here:
//! - A parked session holds no prompt slot: it waits for a client, not for the agent.
//! - A call the agent makes while no turn can take it (a late parallel call, a call after
//!   the response ended) is announced by the session's next turn.
//! - A call the agent would give up on (its own limit, when known: Codex's 120 s) is
//!   answered before that with a note that the result follows; the client's result is
//!   then given as a prompt when it comes. Nothing is lost, and the agent is never told
//!   that the tool failed.
//! - New input that comes with the results while the agent is inside its calls is added
//!   to the last result, so that the model reads it with the results, as the client's
//!   conversation has it.
//! - A response that did not reach its end with the agent (a failure, a client gone) ends
//!   the session: it is cancelled and closed, and the conversation's next request is fresh.

use serde_json::json;

use super::connection::Connection;
use super::handshake::Handshake;
use super::rpc::PendingKind;
use super::session::Session;
use super::turn::{Phase, Turn, TurnId, Work};
use crate::api::{ErrorKind, ErrorReply};
use crate::bridge::{Bridge, BridgeParams, Caller, Config, Dialect};
use crate::conversation::{Message, Part, ToolChoice, ToolSpec};
use crate::cursor::prompt::render_prompt;
use crate::event::{Failure, FailureKind};
use crate::mcp::link::{CallState, McpLink, late_result, render_input};
use crate::mcp::{ExchangeId, ExchangeOutput, HttpRequest, McpEvent, ToolOutcome, ToolSet};
use crate::registry::{Decision, Registry, RegistryStats, Resume};
use crate::tools::ToolPlan;

/// One exchange of an MCP server of the connection: which server, and which of its
/// exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct McpExchange {
    pub(crate) server: u64,
    pub(crate) exchange: ExchangeId,
}

/// Why [`Connection::handle_mcp`] serves a request to the MCP endpoint no server.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpRefusal {
    /// No session's server has this path (answer 404).
    NotFound,
    /// The server's secret was not presented (answer 401).
    Unauthorized,
}

impl McpRefusal {
    /// The HTTP status to answer.
    #[must_use]
    pub fn status(self) -> u16 {
        match self {
            McpRefusal::NotFound => 404,
            McpRefusal::Unauthorized => 401,
        }
    }
}

/// A session no turn holds, waiting for its conversation's next request.
#[derive(Debug)]
pub(super) struct Parked {
    /// Its number among the connection's parked sessions (what its held prompt is
    /// awaited under).
    pub(super) serial: u64,
    pub(super) session: Session,
}

/// The conversation state of a connection: the registry, and the sessions it parked.
#[derive(Debug)]
pub(super) struct Conversations {
    pub(super) registry: Registry,
    pub(super) parked: Vec<Parked>,
    next_serial: u64,
    /// The tool sets recently served, most recent last: the sessions of one client's
    /// conversations offer the same tools, built and held once.
    tool_sets: Vec<(Vec<ToolSpec>, ToolSet)>,
}

impl Conversations {
    pub(super) fn new(registry: Registry) -> Conversations {
        Conversations {
            registry,
            parked: Vec::new(),
            next_serial: 0,
            tool_sets: Vec::new(),
        }
    }

    /// The tool set of `specs`: one served recently, or a new one.
    fn tool_set(&mut self, specs: &[ToolSpec]) -> ToolSet {
        /// Distinct tool sets kept (a client's main agent, its subagents, a second client).
        const KEPT: usize = 4;
        if let Some(at) = self.tool_sets.iter().position(|(kept, _)| kept == specs) {
            let entry = self.tool_sets.remove(at);
            let set = entry.1.clone();
            self.tool_sets.push(entry);
            return set;
        }
        let set = ToolSet::new(specs);
        if self.tool_sets.len() == KEPT {
            self.tool_sets.remove(0);
        }
        self.tool_sets.push((specs.to_vec(), set.clone()));
        set
    }

    fn serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial
    }
}

/// Where a session with an MCP server is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    Turn(usize),
    Parked(usize),
}

impl Connection {
    // A. Getters.

    /// What the conversations registry has done so far.
    pub fn conversation_stats(&self) -> &RegistryStats {
        self.conversations.registry.stats()
    }

    /// Sessions parked, waiting for their conversation's next request.
    pub fn parked_sessions(&self) -> usize {
        self.conversations.parked.len()
    }

    /// Sessions of a conversation held by a request, until its response ends.
    pub fn busy_sessions(&self) -> usize {
        self.conversations.registry.busy()
    }

    /// Whether the MCP server of `exchange` is still served. Once its session has ended
    /// (expired, evicted, its response failed, shutdown, the agent gone), the exchange
    /// gives nothing more from [`poll_mcp_output`](Self::poll_mcp_output): the adapter
    /// ends the response.
    pub fn is_mcp_server_open(&self, exchange: McpExchange) -> bool {
        self.holder_of_serial(exchange.server).is_some()
    }

    // B. Inputs.

    /// A client request of `dialect` in a conversation: like
    /// [`start_turn`](Self::start_turn), but the request resumes the parked session
    /// holding its conversation so far when there is one (answering the calls it waits
    /// for with the request's tool results, prompting it with the new input), and serves
    /// the request's client tools to the agent as an MCP server when
    /// [`AcpConfig::mcp_endpoint`](super::AcpConfig::mcp_endpoint) is set. `caller` says
    /// whose conversation it is; `entropy` is 32 bytes the caller drew at random, from
    /// which a session made for the turn takes its MCP server's path and secret.
    pub fn start_conversation_turn(
        &mut self,
        dialect: Dialect,
        body: &[u8],
        config: &Config,
        params: BridgeParams,
        caller: Caller<'_>,
        entropy: [u8; 32],
    ) -> TurnId {
        self.ready_after_reset();
        let id = self.next_turn_id();
        let now_ms = params.now_ms;
        let prepared = match dialect.prepare(body, config, &params) {
            Ok(prepared) => prepared,
            Err(error) => {
                return self.refused_turn(id, dialect, &ErrorReply::from(&error), config, params);
            }
        };
        let conversation = &prepared.request.conversation;
        let client_tools =
            !conversation.tools.is_empty() && conversation.tool_choice != ToolChoice::None;
        if client_tools && self.config.mcp_endpoint.is_none() {
            return self.refused_turn(id, dialect, &tools_refused(), config, params);
        }
        if self.handshake == Handshake::Dead {
            let reply = ErrorReply::from_failure(&dead_failure());
            return self.refused_turn(id, dialect, &reply, config, params);
        }
        let registry = &mut self.conversations.registry;
        let mut decision = registry.decide(caller.owner, &caller.keys, &prepared.request, now_ms);
        if let Decision::Resume { resume, .. } = &decision {
            if self.parked_index(&resume.agent_session).is_none() {
                // Parked in the registry but no longer held here: the decision is made
                // again, and is fresh.
                if let Decision::Resume { lease, .. } = decision {
                    self.conversations.registry.release(lease, now_ms);
                }
                self.release_parked(now_ms);
                decision = self.conversations.registry.decide(
                    caller.owner,
                    &caller.keys,
                    &prepared.request,
                    now_ms,
                );
            }
        }
        let (lease, work, session) = match decision {
            Decision::Refuse(reply) => {
                return self.refused_turn(id, dialect, &reply, config, params);
            }
            Decision::Fresh { lease, .. } => {
                let plan = ToolPlan::new(&[], config.tool_strategy);
                let prompt = render_prompt(conversation, &plan);
                let tools = if client_tools {
                    conversation.tools.clone()
                } else {
                    Vec::new()
                };
                (lease, Work::Fresh { prompt, tools }, None)
            }
            Decision::Resume { lease, resume } => {
                let (work, session) = self.take_resumed(id, &conversation.messages, &resume);
                (Some(lease), work, Some(session))
            }
        };
        let bridge = Bridge::for_transport(dialect, prepared, config, params, lease);
        let deadline = now_ms.saturating_add(self.config.queue_timeout_ms);
        let mut turn = Turn::new(id, bridge, Phase::Queued { deadline });
        turn.work = work;
        turn.entropy = entropy;
        turn.session = session;
        self.turns.push(turn);
        self.schedule(now_ms);
        id
    }

    /// A request to the MCP endpoint, under path segment `token` (what follows the
    /// endpoint's URL) with `authorization` (the `Authorization` header's value): handed
    /// to the server of the session it names. The adapter has checked Host and Origin.
    /// Its response comes from [`poll_mcp_output`](Self::poll_mcp_output).
    pub fn handle_mcp(
        &mut self,
        token: &str,
        authorization: Option<&[u8]>,
        request: &HttpRequest<'_>,
        now_ms: u64,
    ) -> Result<McpExchange, McpRefusal> {
        self.ready_after_reset();
        let Some(holder) = self.holder_of_token(token) else {
            return Err(McpRefusal::NotFound);
        };
        let link = self.link_mut(holder).expect("a holder has a link");
        if !link.admits(token, authorization) {
            return Err(McpRefusal::Unauthorized);
        }
        let serial = link.serial;
        let exchange = link.server().handle_http(request, now_ms);
        self.serve_mcp_events(now_ms);
        self.schedule(now_ms);
        Ok(McpExchange {
            server: serial,
            exchange,
        })
    }

    /// The agent's HTTP connection of `exchange` closed.
    pub fn mcp_exchange_gone(&mut self, exchange: McpExchange, now_ms: u64) {
        self.ready_after_reset();
        if let Some(holder) = self.holder_of_serial(exchange.server) {
            let link = self.link_mut(holder).expect("a holder has a link");
            link.server().exchange_gone(exchange.exchange, now_ms);
            self.serve_mcp_events(now_ms);
        }
    }

    /// A turn answered at once with `reply`.
    fn refused_turn(
        &mut self,
        id: TurnId,
        dialect: Dialect,
        reply: &ErrorReply,
        config: &Config,
        params: BridgeParams,
    ) -> TurnId {
        let bridge = Bridge::rejected(dialect, reply, config, params);
        self.turns.push(Turn::new(id, bridge, Phase::Done));
        id
    }

    /// Where the parked session `agent_session` is, if it is held here.
    fn parked_index(&self, agent_session: &str) -> Option<usize> {
        self.conversations
            .parked
            .iter()
            .position(|p| p.session.id() == agent_session)
    }

    /// Takes the parked session `resume` names for turn `id`: its held prompt is now the
    /// turn's, and the turn's work the request's delta (`messages` from `resume.delta`).
    fn take_resumed(
        &mut self,
        id: TurnId,
        messages: &[Message],
        resume: &Resume,
    ) -> (Work, Session) {
        let at = self
            .parked_index(&resume.agent_session)
            .expect("checked by the caller");
        let parked = self.conversations.parked.remove(at);
        if parked.session.prompting {
            self.rpc.rekey(
                PendingKind::HeldPrompt(parked.serial),
                PendingKind::Prompt(id),
            );
        }
        let (results, input) = messages[resume.delta..].split_at(resume.shape.results);
        let results = results
            .iter()
            .map(|m| {
                let outcome = ToolOutcome {
                    content: m.content.clone(),
                    is_error: m.is_error,
                };
                (m.tool_call_id.clone().unwrap_or_default(), outcome)
            })
            .collect();
        let input = (!input.is_empty()).then(|| render_input(input));
        (Work::Resume { results, input }, parked.session)
    }

    // C. Outputs.

    /// An MCP exchange with output for [`poll_mcp_output`](Self::poll_mcp_output), or
    /// `None`.
    #[must_use]
    pub fn poll_mcp_ready(&mut self) -> Option<McpExchange> {
        let links = self.turns.iter_mut().filter_map(Turn::link_mut).chain(
            self.conversations
                .parked
                .iter_mut()
                .filter_map(|p| p.session.link.as_mut()),
        );
        for link in links {
            if let Some(exchange) = link.server().poll_ready() {
                return Some(McpExchange {
                    server: link.serial,
                    exchange,
                });
            }
        }
        None
    }

    /// The next output of an MCP exchange: its head, body bytes, then its end. `None`
    /// until the next input, and for ever after its end or for a server that is gone
    /// (then end the response).
    #[must_use]
    pub fn poll_mcp_output(&mut self, exchange: McpExchange) -> Option<ExchangeOutput<'_>> {
        let holder = self.holder_of_serial(exchange.server)?;
        self.link_mut(holder)?
            .server()
            .poll_exchange(exchange.exchange)
    }

    // Internals.

    /// What the MCP servers have for their owners: calls to give to turns, calls given
    /// up, calls the agent is about to give up.
    pub(super) fn serve_mcp_events(&mut self, now_ms: u64) {
        let holders: Vec<Holder> = self.link_holders();
        for holder in holders {
            while let Some(event) = self
                .link_mut(holder)
                .and_then(|link| link.server().poll_event())
            {
                self.serve_mcp_event(holder, event, now_ms);
            }
        }
    }

    fn serve_mcp_event(&mut self, holder: Holder, event: McpEvent, now_ms: u64) {
        match event {
            McpEvent::Call {
                call,
                tool,
                arguments,
            } => {
                let taker = match holder {
                    Holder::Turn(index)
                        if self.turns[index].phase == Phase::Prompting
                            && !self.turns[index].bridge.is_ending() =>
                    {
                        Some(index)
                    }
                    _ => None,
                };
                let state = if taker.is_some() {
                    CallState::Announced
                } else {
                    CallState::Unannounced
                };
                let link = self.link_mut(holder).expect("a holder has a link");
                let linked = link.record(call, tool, arguments, state);
                let (id, name, arguments) = (
                    linked.client_id.clone(),
                    linked.name.clone(),
                    linked.arguments.clone(),
                );
                if let Some(index) = taker {
                    self.turns[index]
                        .bridge
                        .push_client_call(id, &name, &arguments, now_ms);
                    self.after_turn_input(index, now_ms);
                }
            }
            McpEvent::Cancelled { call, .. } => {
                if let Some(link) = self.link_mut(holder) {
                    link.forget(call);
                }
            }
            McpEvent::CallLimit { call } => {
                let Some(link) = self.link_mut(holder) else {
                    return;
                };
                let Some(linked) = link.call_mut(call) else {
                    return;
                };
                linked.state = CallState::Deferred;
                let note = format!(
                    "The tool `{}` is still running on the user's side. Its result will be given to you in a later message: do not call it again, and end your turn now.",
                    linked.name
                );
                let _ = link
                    .server()
                    .answer_call(call, &ToolOutcome::text(note, false), now_ms);
            }
            // The agent ended the MCP session: every call was cancelled first. Other
            // events are not the owner's concern.
            _ => {}
        }
    }

    /// Gives the turn at `index` its resumed session's work: the results answer the calls
    /// they answer (the new input added to the last), the calls made meanwhile are
    /// announced, and what could not answer a call (and the new input, when the agent's
    /// turn is over) is prompted.
    pub(super) fn begin_resume(&mut self, index: usize, now_ms: u64) {
        let Work::Resume { results, input } =
            std::mem::replace(&mut self.turns[index].work, Work::Bridge)
        else {
            return;
        };
        let turn = &mut self.turns[index];
        let session = turn
            .session
            .as_mut()
            .expect("a resumed turn holds its session");
        let mut late = std::mem::take(&mut session.late_results);
        let mut input = input;
        let mut answered = false;
        let count = results.len();
        for (position, (client_id, mut outcome)) in results.into_iter().enumerate() {
            let last = position + 1 == count;
            let Some(link) = session.link.as_mut() else {
                late_result(&mut late, &client_id, &outcome);
                continue;
            };
            if last && session.prompting {
                if let Some(text) = input.take() {
                    outcome.content.push(Part::Text(format!("\n\n{text}")));
                }
            }
            if link.answer(&client_id, &outcome, now_ms) {
                answered = true;
            } else {
                late_result(&mut late, &client_id, &outcome);
            }
        }
        if let Some(text) = input {
            if !late.is_empty() {
                late.push_str("\n\n");
            }
            late.push_str(&text);
        }
        turn.phase = Phase::Prompting;
        // Calls made while no turn could take them go to this turn's client.
        let unannounced: Vec<(String, String, String)> = session
            .link
            .as_mut()
            .map(|link| {
                link.calls
                    .iter_mut()
                    .filter(|c| c.state == CallState::Unannounced)
                    .map(|c| {
                        c.state = CallState::Announced;
                        (c.client_id.clone(), c.name.clone(), c.arguments.clone())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let prompting = session.prompting;
        for (id, name, arguments) in unannounced {
            turn.bridge.push_client_call(id, &name, &arguments, now_ms);
        }
        if !late.is_empty() {
            if prompting {
                // The agent's turn is not over (it goes on with the answered calls, or
                // finishes after a deferred one): the rest follows as soon as it is.
                turn.session.as_mut().expect("held").late_results = late;
            } else {
                self.prompt_text(index, late);
            }
        } else if !prompting && !answered {
            // Nothing to give the agent: the results answered calls it no longer
            // waits for, and there is no new input. Its turn is over, so is this one's.
            turn.bridge.push_event(
                &crate::event::Event::Finish(crate::event::FinishReason::Stop),
                now_ms,
            );
        }
        self.serve_mcp_events(now_ms);
        self.after_turn_input(index, now_ms);
    }

    /// Sends `text` as the prompt of the turn at `index`, on its session.
    pub(super) fn prompt_text(&mut self, index: usize, text: String) {
        let turn = &mut self.turns[index];
        turn.phase = Phase::Prompting;
        let session = turn
            .session
            .as_mut()
            .expect("a prompting turn holds a session");
        session.prompting = true;
        let params = json!({
            "sessionId": session.id(),
            "prompt": [{"type": "text", "text": text}],
        });
        self.rpc
            .request(PendingKind::Prompt(turn.id), "session/prompt", params, None);
    }

    /// The agent is done with the session of the turn at `index`, as far as the turn's
    /// response goes: the session is parked when the response reached its end and the
    /// conversation can continue there; otherwise it is cancelled (when a prompt runs)
    /// and retired.
    pub(super) fn settle_session(&mut self, index: usize, now_ms: u64) {
        let Some(session) = self.turns[index].session.take() else {
            return;
        };
        let turn = &mut self.turns[index];
        let id = turn.id;
        // Parked only while the agent serves: a session of a going agent is let go.
        let serving = self.handshake == Handshake::Ready;
        let parked = turn.bridge.settle_conversation(
            serving.then(|| session.id()),
            &mut self.conversations.registry,
            now_ms,
        );
        if parked {
            let serial = self.conversations.serial();
            if session.prompting {
                self.rpc
                    .rekey(PendingKind::Prompt(id), PendingKind::HeldPrompt(serial));
            }
            self.conversations.parked.push(Parked { serial, session });
        } else {
            self.end_session(session, Some(id), now_ms);
        }
        self.release_parked(now_ms);
    }

    /// Ends a session no conversation continues: its running prompt is cancelled (and no
    /// longer awaited), its MCP server closed, and the session retired.
    pub(super) fn end_session(&mut self, mut session: Session, turn: Option<TurnId>, now_ms: u64) {
        if session.prompting && self.handshake == Handshake::Ready {
            self.rpc
                .notify("session/cancel", json!({"sessionId": session.id()}));
        }
        if let Some(turn) = turn {
            self.rpc.forget(PendingKind::Prompt(turn));
        }
        if let Some(link) = session.link.as_mut() {
            link.server().close(now_ms);
        }
        if self.handshake == Handshake::Ready {
            let deadline = now_ms.saturating_add(self.config.cancel_timeout_ms);
            self.pool.retire(session, &mut self.rpc, deadline);
        }
    }

    /// Ends the parked sessions the registry let go (expired, evicted, replaced).
    pub(super) fn release_parked(&mut self, now_ms: u64) {
        while let Some(released) = self.conversations.registry.poll_released() {
            let Some(at) = self
                .conversations
                .parked
                .iter()
                .position(|p| p.session.id() == released.agent_session)
            else {
                // Held by a turn: that turn ends it.
                continue;
            };
            let parked = self.conversations.parked.remove(at);
            self.rpc.forget(PendingKind::HeldPrompt(parked.serial));
            self.end_session(parked.session, None, now_ms);
        }
    }

    /// The prompt of parked session `serial` was answered: the agent finished a turn no
    /// client waits for. What it said is not kept; the session waits on.
    pub(super) fn held_prompt_answered(&mut self, serial: u64) {
        if let Some(parked) = self
            .conversations
            .parked
            .iter_mut()
            .find(|p| p.serial == serial)
        {
            parked.session.prompting = false;
        }
    }

    /// Drives the registry's and the MCP servers' deadlines.
    pub(super) fn expire_conversations(&mut self, now_ms: u64) {
        let registry = &mut self.conversations.registry;
        if registry.poll_timeout().is_some_and(|due| now_ms >= due) {
            registry.handle_timeout(now_ms);
        }
        self.release_parked(now_ms);
        for holder in self.link_holders() {
            if let Some(link) = self.link_mut(holder) {
                let server = link.server();
                if server.poll_timeout().is_some_and(|due| now_ms >= due) {
                    server.handle_timeout(now_ms);
                }
            }
        }
        self.serve_mcp_events(now_ms);
    }

    /// The earliest deadline of the registry and the MCP servers.
    pub(super) fn conversations_deadline(&self) -> Option<u64> {
        let links = self
            .turns
            .iter()
            .filter_map(Turn::link)
            .chain(
                self.conversations
                    .parked
                    .iter()
                    .filter_map(|p| p.session.link.as_ref()),
            )
            .filter_map(|link| link.server_ref().poll_timeout());
        self.conversations
            .registry
            .poll_timeout()
            .into_iter()
            .chain(links)
            .min()
    }

    /// Ends every parked session (the adapter is shutting down): cancelled, closed, and
    /// forgotten by the registry.
    pub(super) fn end_parked(&mut self, now_ms: u64) {
        self.conversations.registry.clear(now_ms);
        self.release_parked(now_ms);
    }

    /// Forgets every parked session and its registry entry (the agent is gone).
    pub(super) fn forget_conversations(&mut self, now_ms: u64) {
        self.conversations.registry.clear(now_ms);
        while self.conversations.registry.poll_released().is_some() {}
        self.conversations.parked.clear();
    }

    /// A session for the queued turn at `index` with the client's tools: `session/new`
    /// with its MCP server (and the agent's own means of giving it those tools only).
    pub(super) fn create_session_for(&mut self, index: usize, now_ms: u64) -> Result<(), Failure> {
        let agent = self.agent.ok_or_else(|| {
            Failure::new(
                FailureKind::Unavailable,
                "The ACP agent is not ready; the request may be retried.",
            )
        })?;
        if !agent.mcp_http {
            return Err(Failure::new(
                FailureKind::Misconfigured,
                "This ACP agent takes no HTTP MCP server (`mcpCapabilities.http`), so the client's tools cannot be given to it. Send the request without `tools`, or use the per-request transport.",
            ));
        }
        let endpoint = self.config.mcp_endpoint.clone().unwrap_or_default();
        let tools = self.conversations.tool_set(self.turns[index].work.tools());
        let turn = &mut self.turns[index];
        let mut link = McpLink::new(
            tools,
            &self.config.mcp,
            &turn.entropy,
            agent.profile.call_limit_ms(),
        );
        link.serial = self.conversations.serial();
        let server = link.server_entry(&self.config.mcp_server_name, &endpoint);
        let meta = agent
            .profile
            .tools_only_meta(&self.config.mcp_server_name, &link.tool_names());
        let params = Session::new_params_with(&self.config.cwd, server, meta);
        turn.pending_link = Some(link);
        turn.phase = Phase::Creating;
        let deadline = now_ms.saturating_add(self.config.new_session_timeout_ms);
        self.rpc.request(
            PendingKind::NewSessionFor(turn.id),
            "session/new",
            params,
            Some(deadline),
        );
        Ok(())
    }

    fn link_holders(&self) -> Vec<Holder> {
        let turns = self
            .turns
            .iter()
            .enumerate()
            .filter(|(_, t)| t.link().is_some())
            .map(|(i, _)| Holder::Turn(i));
        let parked = self
            .conversations
            .parked
            .iter()
            .enumerate()
            .filter(|(_, p)| p.session.has_client_tools())
            .map(|(i, _)| Holder::Parked(i));
        turns.chain(parked).collect()
    }

    fn link_mut(&mut self, holder: Holder) -> Option<&mut McpLink> {
        match holder {
            Holder::Turn(index) => self.turns.get_mut(index)?.link_mut(),
            Holder::Parked(index) => self
                .conversations
                .parked
                .get_mut(index)?
                .session
                .link
                .as_mut(),
        }
    }

    fn holder_of_token(&self, token: &str) -> Option<Holder> {
        self.holder_where(|link| link.token() == token)
    }

    fn holder_of_serial(&self, serial: u64) -> Option<Holder> {
        self.holder_where(|link| link.serial == serial)
    }

    fn holder_where(&self, matches: impl Fn(&McpLink) -> bool) -> Option<Holder> {
        let found = |session: &Session| session.link.as_ref().is_some_and(&matches);
        if let Some(index) = self
            .turns
            .iter()
            .position(|t| t.link().is_some_and(&matches))
        {
            return Some(Holder::Turn(index));
        }
        self.conversations
            .parked
            .iter()
            .position(|p| found(&p.session))
            .map(Holder::Parked)
    }
}

/// The refusal of client tools where no MCP endpoint is configured.
pub(super) fn tools_refused() -> ErrorReply {
    let mut reply = ErrorReply::new(
        ErrorKind::InvalidRequest,
        "`tools` are not supported over ACP without an MCP endpoint: the agent runs its own tools and cannot call the client's. Send the request without `tools`, or use the per-request transport.",
        "unsupported_parameter",
    );
    reply.param = Some("tools".into());
    reply
}

/// The failure of a turn started while the agent is going.
pub(super) fn dead_failure() -> Failure {
    Failure::new(
        FailureKind::Unavailable,
        "The ACP agent is restarting; the request may be retried.",
    )
}
