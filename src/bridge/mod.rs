//! One request's state machine: the object adapters drive. It holds every decision that is
//! not about a dialect's bytes, the same for every [`Dialect`]; the dialect the caller
//! chose (from the route) parses the body and writes the responses (`dialect.rs` is the
//! one place that knows the dialect modules).
//!
//! ```text
//!  request body ──► Bridge::new ──► invocation() ──► adapter spawns cursor-agent, writes stdin
//!  stdout bytes ──► push_stdout ─┐
//!  stderr bytes ──► push_stderr ─┤                 ┌──► Output::Head { status, .. }   (once)
//!  exit status ───► agent_exited ├──► Bridge ──────┼──► Output::Body(bytes)          (any number)
//!  deadline ──────► handle_timeout                 ├──► Output::StopAgent            (at most once)
//!  hang-up ───────► client_gone ─┘                 └──► Output::End                  (exactly once)
//!                   poll_timeout ◄──────────────── next deadline
//! ```

mod client;
mod config;
mod conversation;
mod dialect;

use std::fmt;

use thiserror::Error;

pub use config::Config;
pub use dialect::{Dialect, Prepared, ResponseWriter};

use crate::api::{ErrorReply, Request};
use crate::conversation::ToolChoice;
use crate::cursor::diagnose::{self, Evidence, ExitStatus};
use crate::cursor::prompt::{render_continuation, render_prompt};
use crate::cursor::{AgentMode, Decoder, Invocation, InvocationSpec};
use crate::event::{Event, Failure, FailureKind};
use crate::framing;
use crate::names::named;
use crate::registry::{ConversationKeys, Decision, Owner, Registry, Resume};
use crate::tools::loop_guard::LoopGuard;
use crate::tools::{ToolPlan, ToolStrategy};
use client::ClientTools;
use conversation::InConversation;

/// Per-request values the caller supplies, because the core reads no clock and draws no
/// random numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BridgeParams {
    /// Now, on the caller's monotonic millisecond clock. Every later `now_ms` is on the
    /// same clock.
    pub now_ms: u64,
    /// Now in Unix seconds, for the response's creation time (`created`).
    pub created_unix: u64,
    /// A number unique to this request (a counter, mixed with the start time, is fine);
    /// the response id and generated tool-call ids derive from it.
    pub id_seed: u64,
}

/// The response head: send it before any body byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// HTTP status.
    pub status: u16,
    /// `text/event-stream` for a stream, `application/json` otherwise.
    pub content_type: &'static str,
    /// For errors: whether retrying may help. Send it as `x-should-retry: true|false`
    /// (the OpenAI and Anthropic SDKs honour it over the status).
    pub retryable: Option<bool>,
}

/// What the adapter must do next. Drain with [`Bridge::poll_output`] after every input.
#[derive(Debug, PartialEq, Eq)]
pub enum Output<'a> {
    /// Send the response head (exactly once, before any body).
    Head(Head),
    /// Write these bytes to the response body (and flush: streams are meant to be seen
    /// as they come). Valid until the next call on the bridge.
    Body(&'a [u8]),
    /// Terminate the agent's process group now.
    StopAgent,
    /// Start the agent again with [`Bridge::invocation`], which now describes a new run,
    /// and feed its output to this bridge as before. Only a bridge made with
    /// [`Bridge::in_conversation`] asks for it, at most once, after the run it replaces was
    /// reported exited: the agent could not resume its chat, and the whole conversation is
    /// given to a fresh one before anything was sent to the client.
    Respawn,
    /// Close the response. Nothing follows.
    End,
}

/// Who sends a request that may continue a conversation: the owner its sessions belong to
/// and the ids it gives the conversation (see [`registry`](crate::registry)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caller<'a> {
    /// The key the request authenticated with, or [`Owner::LOCAL`].
    pub owner: Owner,
    /// The conversation's ids from the request's headers or the embedding program.
    pub keys: ConversationKeys<'a>,
}

/// Caller misuse of a [`Bridge`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum BridgeError {
    /// Agent output was pushed after [`Bridge::agent_exited`].
    #[error("agent output was pushed after the agent exited")]
    AfterExit,
    /// The agent was reported exited twice.
    #[error("the agent was reported exited twice")]
    ExitedTwice,
}

named!(BridgeError, "bridge error" {
    AfterExit => "after_exit",
    ExitedTwice => "exited_twice",
});

/// One request's protocol state machine: everything between a request body, in the
/// [`Dialect`] the caller names, and the HTTP response, with no I/O of its own.
///
/// A `Bridge` has four kinds of methods:
/// - **getters** (`&self`): [`invocation`](Self::invocation), [`is_stream`](Self::is_stream),
///   [`is_ended`](Self::is_ended), [`session_id`](Self::session_id);
/// - **inputs**, all taking `now_ms`: [`push_stdout`](Self::push_stdout),
///   [`push_stderr`](Self::push_stderr), [`agent_exited`](Self::agent_exited),
///   [`handle_timeout`](Self::handle_timeout), [`client_gone`](Self::client_gone),
///   [`shutdown`](Self::shutdown);
/// - **outputs**: [`poll_output`](Self::poll_output), then [`poll_timeout`](Self::poll_timeout).
///
/// **After every input, drain [`poll_output`](Self::poll_output) until it returns `None`,
/// then ask [`poll_timeout`](Self::poll_timeout) for the next deadline.**
///
/// Rules it keeps:
/// - **The head waits for evidence.** A stream's head (200) is sent at the first answer
///   event (text, reasoning, a tool call, agent activity, the finish), or at
///   [`Config::head_deadline_ms`], after which the dialect's keep-alive frames start. A
///   failure before the head gets its true status and the dialect's error body (401 not
///   logged in, 404 model unavailable, 429 limits, 500 misconfiguration, 502 crash, 503
///   unreachable, 504 timeout) with [`Head::retryable`]; after it, the dialect's in-band
///   error frame(s) then its terminator (Chat Completions: `[DONE]`).
/// - **Nothing is held back without a reason**: only a possible recap, an open batch of
///   client tool calls, and a possible text envelope.
/// - **Client-owned tools end the turn**: the tool calls, the finish (Chat Completions:
///   `finish_reason: "tool_calls"`, `[DONE]`), then [`Output::StopAgent`], then
///   [`Output::End`].
/// - **Exactly one [`Output::End`]**, whatever happens. After it every `poll_*` returns
///   `None` and inputs are ignored.
/// - An invalid request never spawns anything: [`invocation`](Self::invocation) is `None`
///   and the outputs are the error head (400, or 413 for an over-limit body), the
///   dialect's error body and `End`.
///
/// Non-streaming requests run through the same machine; the body is assembled as events
/// arrive and sent, with its status, at the end.
///
/// ```
/// use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
/// use agentwire::cursor::ExitStatus;
///
/// let body = br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
/// let params = BridgeParams { now_ms: 0, created_unix: 1_700_000_000, id_seed: 1 };
/// let mut bridge = Bridge::new(Dialect::ChatCompletions, body, &Config::default(), params);
/// let invocation = bridge.invocation().expect("a valid request");
/// assert_eq!(invocation.program, "cursor-agent");
/// // ...spawn it, write invocation.stdin, then feed its output:
/// bridge.push_stdout(b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}}\n", 5).unwrap();
/// bridge.push_stdout(b"{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"Hi\"}\n", 9).unwrap();
/// let mut body = Vec::new();
/// while let Some(output) = bridge.poll_output() {
///     match output {
///         Output::Head(head) => assert_eq!(head.status, 200),
///         Output::Body(bytes) => body.extend_from_slice(bytes),
///         Output::StopAgent => unreachable!("the agent finished by itself"),
///         Output::Respawn => unreachable!("only a conversation's bridge respawns"),
///         Output::End => break,
///     }
/// }
/// assert!(body.ends_with(b"data: [DONE]\n\n"));
/// bridge.agent_exited(ExitStatus::Code(0), 10).unwrap();
/// assert!(bridge.poll_output().is_none() && bridge.poll_timeout().is_none());
/// ```
pub struct Bridge {
    decoder: Decoder,
    core: Core,
    /// The requested model, as the client named it (empty for a rejected request).
    model: String,
}

/// How a run begins: the whole conversation, or a resumed chat given only what follows;
/// or no run at all, for a transport that gives the agent its input itself.
enum Start {
    Fresh,
    Resume(Resume),
    Transport,
}

/// Everything but the decoder, so decoder events can be routed while it is borrowed.
struct Core {
    invocation: Option<Invocation>,
    stream: bool,
    emitter: Emitter,
    client: Option<ClientTools>,
    stderr_tail: Vec<u8>,
    stderr_limit: usize,
    exited: bool,
    stop: Once,
    end: Once,
    /// A fresh run replaces a resumed one that failed (see [`Output::Respawn`]).
    respawn: Once,
    /// The resumed run is being given up for a fresh one: its output is ignored until it
    /// exits.
    abandoning: bool,
    // Time.
    started_ms: u64,
    last_agent_ms: u64,
    head_deadline_ms: Option<u64>,
    keep_alive_ms: u64,
    idle_timeout_ms: u64,
    max_duration_ms: Option<u64>,
}

/// A one-shot output: not yet due, due, or already handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Once {
    No,
    Due,
    Done,
}

impl Bridge {
    /// Validates `body` as a request of `dialect` and prepares the run. An invalid body
    /// yields a bridge whose only outputs are the error head (400, or 413 for an
    /// over-limit body), the dialect's error body and `End`, and whose
    /// [`invocation`](Self::invocation) is `None`.
    pub fn new(dialect: Dialect, body: &[u8], config: &Config, params: BridgeParams) -> Bridge {
        let prepared = match dialect.prepare(body, config, &params) {
            Ok(prepared) => prepared,
            Err(error) => {
                return Bridge::rejected(dialect, &ErrorReply::from(&error), config, params);
            }
        };
        if prepared.request.continuation.previous_response_id.is_some() {
            // A continuation needs the session that answered the earlier response; a
            // bridge without a registry keeps none.
            return Bridge::rejected(dialect, &previous_response_unsupported(), config, params);
        }
        Bridge::start(dialect, prepared, config, params, Start::Fresh)
    }

    /// Like [`new`](Self::new), for a request that may continue a conversation: the
    /// `registry` decides whether it resumes the cursor-agent chat that answered the
    /// conversation so far (the invocation then passes `--resume` and its prompt holds
    /// only what is new: the results of the chat's tool calls and the new input) or runs
    /// fresh with the whole conversation, as `new` does.
    ///
    /// The caller gives the bridge's place back with
    /// [`end_conversation_turn`](Self::end_conversation_turn) once the response ended.
    /// A resumed chat the agent cannot continue (it fails before answering anything, or
    /// reports another chat) is stopped and replaced by a fresh run
    /// ([`Output::Respawn`]), once, before anything reaches the client.
    pub fn in_conversation(
        dialect: Dialect,
        body: &[u8],
        config: &Config,
        params: BridgeParams,
        registry: &mut Registry,
        caller: Caller<'_>,
    ) -> Bridge {
        let prepared = match dialect.prepare(body, config, &params) {
            Ok(prepared) => prepared,
            Err(error) => {
                return Bridge::rejected(dialect, &ErrorReply::from(&error), config, params);
            }
        };
        let decision =
            registry.decide(caller.owner, &caller.keys, &prepared.request, params.now_ms);
        Bridge::continuing(dialect, prepared, decision, config, params)
    }

    /// [`in_conversation`](Self::in_conversation) in three steps, for a caller that keeps
    /// the registry behind a lock: the body parsed first, with no lock
    /// ([`Dialect::prepare`]; a body it refuses is answered by [`Bridge::new`]), then the
    /// registry's [`decide`](Registry::decide) under the lock (a hash of the conversation
    /// and a few lookups), then this, with no lock: the run the decision says.
    pub fn continuing(
        dialect: Dialect,
        prepared: Prepared,
        decision: Decision,
        config: &Config,
        params: BridgeParams,
    ) -> Bridge {
        let response_id = prepared.response_id.clone();
        let (lease, start) = match decision {
            Decision::Refuse(reply) => return Bridge::rejected(dialect, &reply, config, params),
            Decision::Fresh { lease, .. } => (lease, Start::Fresh),
            Decision::Resume { lease, resume } => (Some(lease), Start::Resume(resume)),
        };
        let mut bridge = Bridge::start(dialect, prepared, config, params, start);
        let conversation = bridge
            .core
            .emitter
            .conversation
            .get_or_insert_with(|| Box::new(InConversation::new(None, None)));
        conversation.adopt(lease, response_id);
        bridge
    }

    /// A bridge for a transport that gives the agent its input itself and feeds the
    /// bridge neutral events (`acp`): the response's policy and writer, client mode when
    /// the request offers tools (their calls come through
    /// [`push_client_call`](Self::push_client_call)), and the request's place in its
    /// conversation when it has a `lease`. It has no [`invocation`](Self::invocation).
    pub(crate) fn for_transport(
        dialect: Dialect,
        prepared: Prepared,
        config: &Config,
        params: BridgeParams,
        lease: Option<crate::registry::Lease>,
    ) -> Bridge {
        let response_id = prepared.response_id.clone();
        let mut bridge = Bridge::start(dialect, prepared, config, params, Start::Transport);
        let mut conversation = InConversation::new(None, None);
        conversation.adopt(lease, response_id);
        bridge.core.emitter.conversation = Some(Box::new(conversation));
        bridge
    }

    /// A bridge whose only outputs are `reply`'s head and body, then `End`.
    pub(crate) fn rejected(
        dialect: Dialect,
        reply: &ErrorReply,
        config: &Config,
        params: BridgeParams,
    ) -> Bridge {
        let mut core = Core::new(None, false, Emitter::new(dialect, None), config, params);
        core.emitter.reject(reply);
        core.end = Once::Due;
        Bridge {
            decoder: Decoder::new(config.decoder.clone()),
            core,
            model: String::new(),
        }
    }

    fn start(
        dialect: Dialect,
        prepared: Prepared,
        config: &Config,
        params: BridgeParams,
        start: Start,
    ) -> Bridge {
        let Prepared {
            request, writer, ..
        } = prepared;
        let decoder = Decoder::new(config.decoder.clone());
        let conversation = &request.conversation;
        let client_mode =
            !conversation.tools.is_empty() && conversation.tool_choice != ToolChoice::None;
        let tools = if client_mode {
            conversation.tools.as_slice()
        } else {
            &[]
        };
        // A transport delivers the client's tools itself (as an MCP server) and hands
        // their calls over as such: nothing is taught in a prompt or mapped from the
        // agent's own tools.
        let planned = if matches!(start, Start::Transport) {
            &[]
        } else {
            tools
        };
        let plan = ToolPlan::new(planned, config.tool_strategy);
        // Client mode never passes --force: the agent's shell calls are handed to the
        // client, and with --force the agent would run them itself as well.
        let mode = match (client_mode, config.tool_strategy) {
            (false, _) => AgentMode::Native {
                force: config.allow_force,
            },
            (true, ToolStrategy::Native) => AgentMode::Native { force: false },
            (true, _) => AgentMode::ReadOnly,
        };
        let spec = |resume| InvocationSpec {
            program: &config.cursor_binary,
            model: &request.model,
            workspace: config.workspace.as_deref(),
            config_dir: config.cli_config_dir.as_deref(),
            mode,
            partial_output: config.partial_output,
            resume,
        };
        let mut resumed = None;
        let invocation = match &start {
            Start::Transport => None,
            Start::Fresh => Some(Invocation::new(
                &spec(None),
                render_prompt(conversation, &plan),
            )),
            Start::Resume(resume) => {
                let prompt = render_continuation(conversation, resume.delta);
                let fresh = Invocation::new(&spec(None), String::new());
                resumed = Some((resume.agent_session.clone(), fresh));
                Some(Invocation::new(&spec(Some(&resume.agent_session)), prompt))
            }
        };
        let client = client_mode.then(|| {
            let guard = LoopGuard::new(conversation, &config.loop_guard);
            ClientTools::new(
                plan,
                guard,
                conversation.parallel_tool_calls,
                config,
                params.id_seed,
            )
        });
        let emitter = Emitter::new(dialect, Some(writer));
        let Request {
            model,
            stream,
            conversation,
            ..
        } = request;
        let mut core = Core::new(invocation, stream, emitter, config, params);
        if let Some((chat, fresh)) = resumed {
            // The conversation itself is kept (not a copy): the bridge needs it no more.
            let mut record = InConversation::new(None, None);
            let plan = (conversation, client_mode, config.tool_strategy);
            record.resuming(chat, fresh, plan, config.decoder.clone());
            core.emitter.conversation = Some(Box::new(record));
        }
        Bridge {
            decoder,
            core: Core { client, ..core },
            model,
        }
    }

    // A. Getters.

    /// The agent run to start, or `None` when the request was rejected.
    pub fn invocation(&self) -> Option<&Invocation> {
        self.core.invocation.as_ref()
    }

    /// Whether the response is a stream.
    pub fn is_stream(&self) -> bool {
        self.core.stream
    }

    /// Whether [`Output::End`] has been handed out.
    pub fn is_ended(&self) -> bool {
        self.core.end == Once::Done
    }

    /// The agent's session (chat) id, once seen; for `--resume`.
    pub fn session_id(&self) -> Option<&str> {
        self.decoder.session_id()
    }

    // B. Inputs.

    /// Agent stdout, in any chunking.
    pub fn push_stdout(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), BridgeError> {
        if self.core.exited {
            return Err(BridgeError::AfterExit);
        }
        if self.core.ending() {
            return Ok(());
        }
        self.core.last_agent_ms = self.core.last_agent_ms.max(now_ms);
        // A line at a time, routing its events before the next line is decoded: a
        // non-streaming answer being built and the decoded text of one long line are the
        // only line-sized buffers alive at once.
        let mut input = bytes;
        loop {
            let used = self
                .decoder
                .push_stdout_line(input)
                .expect("stdout is not ended before the agent exits");
            input = &input[used..];
            self.route_events(now_ms);
            self.check_resumed_chat();
            if input.is_empty() || self.core.ending() {
                break;
            }
        }
        self.core.after_input(now_ms);
        Ok(())
    }

    /// Agent stderr, in any chunking. Only its tail is kept, for failure messages.
    pub fn push_stderr(&mut self, bytes: &[u8], now_ms: u64) -> Result<(), BridgeError> {
        if self.core.exited {
            return Err(BridgeError::AfterExit);
        }
        self.core.last_agent_ms = self.core.last_agent_ms.max(now_ms);
        let tail = &mut self.core.stderr_tail;
        tail.extend_from_slice(bytes);
        if tail.len() > self.core.stderr_limit {
            let cut = tail.len() - self.core.stderr_limit;
            tail.drain(..cut);
        }
        Ok(())
    }

    /// The agent exited. Call it after its stdout and stderr reached end of file and were
    /// pushed. Without a `result` on stdout this is a failure, classified from stdout,
    /// stderr and the exit status.
    pub fn agent_exited(&mut self, status: ExitStatus, now_ms: u64) -> Result<(), BridgeError> {
        if self.core.exited {
            return Err(BridgeError::ExitedTwice);
        }
        self.core.exited = true;
        if self.core.stop == Once::No {
            // Nothing left to stop.
            self.core.stop = Once::Done;
        }
        if self.core.ending() {
            return Ok(());
        }
        if !self.core.abandoning && self.core.resume_retryable() && !self.decoder.saw_result() {
            // The resumed run ended without answering anything.
            self.core.abandoning = true;
        }
        if self.core.abandoning {
            self.respawn(now_ms);
            return Ok(());
        }
        let core = &mut self.core;
        let stderr = std::mem::take(&mut core.stderr_tail);
        drain_after_exit(&mut self.decoder, &stderr, status, &mut |event| {
            core.route(event, now_ms);
            core.ending()
        });
        self.core.stderr_tail = stderr;
        self.core.after_input(now_ms);
        Ok(())
    }

    /// A deadline from [`poll_timeout`](Self::poll_timeout) passed. Spurious calls do
    /// nothing.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        if self.core.ending() {
            return;
        }
        self.core.handle_timeout(now_ms);
    }

    /// The HTTP client hung up: stop the agent, end without writing anything more.
    pub fn client_gone(&mut self, now_ms: u64) {
        let _ = now_ms;
        if self.core.end != Once::No {
            return;
        }
        if let Some(conversation) = &mut self.core.emitter.conversation {
            conversation.client_gone();
        }
        self.core.emitter.discard();
        self.core.request_stop();
        self.core.end = Once::Due;
    }

    /// Gives the request's place in its conversation back to `registry`: the chat is
    /// parked for the conversation's next request when the answer finished and reached
    /// the client; otherwise it is released. Call it once the response ended
    /// ([`Output::End`]; earlier, it counts as a response that did not finish). Does
    /// nothing for a bridge not made by [`in_conversation`](Self::in_conversation), and
    /// the second time.
    pub fn end_conversation_turn(&mut self, registry: &mut Registry, now_ms: u64) {
        let ended = self.is_ended();
        // Only an id `--resume` can take is kept.
        let chat = self
            .decoder
            .session_id()
            .filter(|chat| crate::cursor::is_chat_id(chat));
        if let Some(conversation) = &mut self.core.emitter.conversation {
            if !ended {
                conversation.client_gone();
            }
            conversation.settle(chat, registry, now_ms);
        }
    }

    /// The adapter is shutting down: the response ends now as a failure the client may
    /// retry (503 before the head; the dialect's in-band error and terminator after it), and the
    /// agent is stopped. Nothing happens if the response is already ending.
    pub fn shutdown(&mut self, now_ms: u64) {
        if self.core.ending() {
            return;
        }
        self.core.request_stop();
        let failure = Failure::new(
            FailureKind::Unavailable,
            "The server is shutting down; this request was stopped and may be retried.",
        );
        self.core.emitter.emit(&Event::Failed(failure));
        self.core.end = Once::Due;
        self.core.after_input(now_ms);
    }

    // C. Outputs.

    /// The next thing to do, or `None` until the next input.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output<'_>> {
        let core = &mut self.core;
        if core.end == Once::Done {
            return None;
        }
        core.emitter.recycle();
        if let Some(head) = core.emitter.take_head() {
            return Some(Output::Head(head));
        }
        if core.emitter.head_sent && !core.emitter.out.is_empty() {
            core.emitter.lent = true;
            return Some(Output::Body(&core.emitter.out));
        }
        if core.stop == Once::Due {
            core.stop = Once::Done;
            return Some(Output::StopAgent);
        }
        if core.respawn == Once::Due {
            core.respawn = Once::Done;
            return Some(Output::Respawn);
        }
        if core.end == Once::Due && (core.emitter.head_sent || core.emitter.discarded) {
            core.end = Once::Done;
            return Some(Output::End);
        }
        None
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due, on the caller's clock;
    /// `None` when nothing is scheduled.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        self.core.next_deadline()
    }

    // D. For transports with their own event source (`acp`): the same policy, fed
    // neutral events instead of cursor-agent's stdout, and asked for its stop decision
    // directly rather than through `Output::StopAgent` (which such a transport turns into
    // a cancellation of its own, not a kill).

    /// The model the client asked for.
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// Whether the request carries client tools the agent would have to call.
    pub(crate) fn has_client_tools(&self) -> bool {
        self.core.client.is_some()
    }

    /// One event from the transport, as if decoded from the agent's output.
    pub(crate) fn push_event(&mut self, event: &Event<'_>, now_ms: u64) {
        if self.core.ending() {
            return;
        }
        self.core.last_agent_ms = self.core.last_agent_ms.max(now_ms);
        self.core.route(event, now_ms);
        self.core.after_input(now_ms);
    }

    /// A call of one of the client's tools, received by the transport as such (an MCP
    /// server's `tools/call`), under the client-facing `id` the transport chose. It joins
    /// the open batch of such calls, which closes after [`Config::batch_window_ms`] or at
    /// the next other event; closing ends the response with the calls (and the bridge
    /// asks for the agent to be stopped, which such a transport takes with
    /// [`take_stop`](Self::take_stop) and does its own way).
    pub(crate) fn push_client_call(
        &mut self,
        id: String,
        name: &str,
        arguments: &str,
        now_ms: u64,
    ) {
        if self.core.ending() {
            return;
        }
        self.core.last_agent_ms = self.core.last_agent_ms.max(now_ms);
        if let Some(client) = &mut self.core.client {
            client.offer_direct(id, name, arguments, now_ms, &mut self.core.emitter);
            self.core.settle();
        }
        self.core.after_input(now_ms);
    }

    /// Gives the request's place in its conversation back to `registry`, with the
    /// transport's own id of the agent session it ran on (see
    /// [`end_conversation_turn`](Self::end_conversation_turn)).
    /// Returns whether the session was parked.
    pub(crate) fn settle_conversation(
        &mut self,
        agent_session: Option<&str>,
        registry: &mut Registry,
        now_ms: u64,
    ) -> bool {
        let ended = self.is_ending();
        match &mut self.core.emitter.conversation {
            Some(conversation) => {
                if !ended {
                    conversation.client_gone();
                }
                conversation.settle(agent_session, registry, now_ms)
            }
            None => false,
        }
    }

    /// Whether the response ended with calls of the client's tools (it waits for their
    /// results).
    pub(crate) fn ended_with_tool_calls(&self) -> bool {
        self.core
            .emitter
            .conversation
            .as_ref()
            .is_some_and(|c| c.ended_with_tool_calls())
    }

    /// Refuses the request before anything ran: the reply's head and body, then `End`.
    pub(crate) fn refuse(&mut self, reply: &ErrorReply) {
        self.core.invocation = None;
        self.core.stop = Once::Done;
        self.core.emitter.reject(reply);
        self.core.end = Once::Due;
    }

    /// Takes a due stop decision (the transport acts on it instead of `StopAgent`).
    pub(crate) fn take_stop(&mut self) -> bool {
        let due = self.core.stop == Once::Due;
        if due {
            self.core.stop = Once::Done;
        }
        due
    }

    /// Whether the response is over or its end decided (`End` due or handed out).
    pub(crate) fn is_ending(&self) -> bool {
        self.core.ending()
    }

    /// Whether `poll_output` would return something now.
    pub(crate) fn has_output(&self) -> bool {
        let core = &self.core;
        core.end != Once::Done
            && (core.emitter.head.is_some()
                || (core.emitter.head_sent && self.unsent_len() > 0)
                || core.stop == Once::Due
                || (core.end == Once::Due && (core.emitter.head_sent || core.emitter.discarded)))
    }

    /// Response bytes produced and not yet handed out by `poll_output`.
    pub(crate) fn unsent_len(&self) -> usize {
        if self.core.emitter.lent {
            0
        } else {
            self.core.emitter.out.len()
        }
    }

    /// A resumed run that reports another chat than the one resumed lost it (cursor-agent
    /// starts a new chat for an id it does not know): it is given up for a fresh run.
    fn check_resumed_chat(&mut self) {
        let Some(conversation) = &self.core.emitter.conversation else {
            return;
        };
        if let (Some(resumed), Some(reported)) =
            (conversation.retryable_chat(), self.decoder.session_id())
        {
            if resumed != reported && !self.core.abandoning {
                self.core.abandon();
            }
        }
    }

    /// Replaces the abandoned run, which has exited, by the fresh one.
    fn respawn(&mut self, now_ms: u64) {
        let (fresh, decoder) = self
            .core
            .emitter
            .conversation
            .as_mut()
            .and_then(|c| c.take_fallback())
            .expect("only a retryable resume is abandoned");
        self.core.invocation = Some(fresh);
        self.decoder = Decoder::new(decoder);
        self.core.abandoning = false;
        self.core.exited = false;
        self.core.stop = Once::No;
        self.core.respawn = Once::Due;
        self.core.stderr_tail.clear();
        self.core.last_agent_ms = now_ms;
    }

    fn route_events(&mut self, now_ms: u64) {
        while let Some(event) = self.decoder.poll_event() {
            self.core.route(&event, now_ms);
        }
    }
}

/// Ends a run whose agent exited, its stdout and stderr read to their end: the events
/// the decoder still holds go to `route` (which says whether the response is now
/// ending), a failure reported for a run without a `result` classified again with the
/// whole evidence (stderr and the exit status too), and, whatever the decoder reported,
/// a failure if the response is still not ending: one end is certain.
pub(crate) fn drain_after_exit(
    decoder: &mut Decoder,
    stderr_tail: &[u8],
    status: ExitStatus,
    route: &mut dyn FnMut(&Event<'_>) -> bool,
) {
    decoder.push_eof().expect("stdout ends once");
    let mut failure = (!decoder.saw_result()).then(|| {
        let stderr = String::from_utf8_lossy(stderr_tail);
        diagnose::classify(&Evidence {
            stderr: &stderr,
            exit: Some(status),
            ..decoder.evidence()
        })
    });
    let mut ending = false;
    while let Some(event) = decoder.poll_event() {
        ending = match (&event, failure.take()) {
            (Event::Failed(_), Some(failure)) => route(&Event::Failed(failure)),
            (_, unused) => {
                failure = unused;
                route(&event)
            }
        };
    }
    if !ending {
        let failure = failure.unwrap_or_else(|| {
            Failure::new(
                FailureKind::AgentCrashed,
                format!("cursor-agent ended ({status}) without an answer"),
            )
        });
        route(&Event::Failed(failure));
    }
}

/// The answer to `previous_response_id` where no conversation registry is in use.
pub(crate) fn previous_response_unsupported() -> ErrorReply {
    let mut reply = ErrorReply::new(
        crate::api::ErrorKind::InvalidRequest,
        "'previous_response_id' is not supported: this server keeps no responses. Send the whole conversation in 'input'.",
        "invalid_value",
    );
    reply.param = Some("previous_response_id".into());
    reply
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge")
            .field("stream", &self.core.stream)
            .field("head_sent", &self.core.emitter.head_sent)
            .field("stop", &self.core.stop)
            .field("end", &self.core.end)
            .finish_non_exhaustive()
    }
}

impl Core {
    fn new(
        invocation: Option<Invocation>,
        stream: bool,
        emitter: Emitter,
        config: &Config,
        params: BridgeParams,
    ) -> Core {
        Core {
            invocation,
            stream,
            emitter,
            client: None,
            stderr_tail: Vec::new(),
            stderr_limit: config.stderr_tail_bytes,
            exited: false,
            stop: Once::No,
            end: Once::No,
            respawn: Once::No,
            abandoning: false,
            started_ms: params.now_ms,
            last_agent_ms: params.now_ms,
            head_deadline_ms: stream.then(|| params.now_ms.saturating_add(config.head_deadline_ms)),
            keep_alive_ms: config.keep_alive_ms.max(1),
            idle_timeout_ms: config.idle_timeout_ms,
            max_duration_ms: config.max_duration_ms,
        }
    }

    /// Whether the response is over or ending (nothing more will be written).
    fn ending(&self) -> bool {
        self.end != Once::No
    }

    /// Whether this run resumes a chat and can still be replaced by a fresh one.
    fn resume_retryable(&self) -> bool {
        self.emitter
            .conversation
            .as_ref()
            .is_some_and(|c| c.retryable_chat().is_some())
    }

    /// Gives the resumed run up: it is stopped, and replaced once it exited.
    fn abandon(&mut self) {
        self.abandoning = true;
        self.request_stop();
    }

    fn request_stop(&mut self) {
        if self.stop == Once::No && !self.exited {
            self.stop = Once::Due;
        }
    }

    /// Routes one decoder event through client-tool handling (client mode) to the
    /// response.
    fn route(&mut self, event: &Event<'_>, now_ms: u64) {
        if self.ending() || self.abandoning {
            return;
        }
        if matches!(event, Event::Failed(_)) && self.resume_retryable() {
            // The agent could not continue the chat, and nothing was sent: a fresh run
            // answers instead.
            self.abandon();
            return;
        }
        match &mut self.client {
            Some(client) => client.route(event, now_ms, &mut self.emitter),
            None => self.emitter.emit(event),
        }
        self.settle();
    }

    /// After the response finished: the turn is over. If the agent is still running it is
    /// stopped, unless it finished its answer by itself (`result`), in which case it exits
    /// on its own.
    fn settle(&mut self) {
        if !self.emitter.finished || self.ending() {
            return;
        }
        if self.client.as_ref().is_some_and(ClientTools::ended_turn) || !self.emitter.agent_done {
            self.request_stop();
        }
        self.end = Once::Due;
    }

    fn after_input(&mut self, now_ms: u64) {
        self.emitter.stamp(now_ms);
    }

    fn handle_timeout(&mut self, now_ms: u64) {
        if let Some(client) = &mut self.client {
            client.handle_timeout(now_ms, &mut self.emitter);
            self.settle();
            if self.ending() {
                return;
            }
        }
        let idle_due = now_ms >= self.last_agent_ms.saturating_add(self.idle_timeout_ms);
        let total_due = self
            .max_duration_ms
            .is_some_and(|max| now_ms >= self.started_ms.saturating_add(max));
        if idle_due || total_due {
            let message = if idle_due {
                format!(
                    "cursor-agent produced no output for {} s; it was stopped. The request may be retried.",
                    self.idle_timeout_ms / 1000
                )
            } else {
                format!(
                    "cursor-agent did not finish within {} s; it was stopped. The request may be retried.",
                    self.max_duration_ms.unwrap_or_default() / 1000
                )
            };
            self.request_stop();
            self.emitter
                .emit(&Event::Failed(Failure::new(FailureKind::Timeout, message)));
            self.end = Once::Due;
            self.after_input(now_ms);
            return;
        }
        if let Some(deadline) = self.head_deadline_ms {
            if !self.emitter.head_decided() && now_ms >= deadline {
                self.emitter.commit_stream_head();
            }
        }
        if self.emitter.keep_alive_due(now_ms, self.keep_alive_ms) {
            self.emitter.keep_alive();
        }
        self.after_input(now_ms);
    }

    fn next_deadline(&self) -> Option<u64> {
        if self.ending() {
            return None;
        }
        let mut next = self.last_agent_ms.saturating_add(self.idle_timeout_ms);
        if let Some(max) = self.max_duration_ms {
            next = next.min(self.started_ms.saturating_add(max));
        }
        if self.stream {
            if !self.emitter.head_decided() {
                if let Some(deadline) = self.head_deadline_ms {
                    next = next.min(deadline);
                }
            } else if let Some(last) = self.emitter.last_output_ms {
                next = next.min(last.saturating_add(self.keep_alive_ms));
            }
        }
        if let Some(deadline) = self.client.as_ref().and_then(ClientTools::deadline) {
            next = next.min(deadline);
        }
        Some(next)
    }
}

/// Where events become response bytes: the dialect's stream encoder or body builder, the
/// head decision, and the body buffer handed out by `poll_output`.
struct Emitter {
    dialect: Dialect,
    /// `None` when the request was rejected.
    writer: Option<ResponseWriter>,
    out: Vec<u8>,
    /// `out` was lent by the last `poll_output`; clear it first.
    lent: bool,
    head: Option<Head>,
    head_sent: bool,
    /// The response is complete (its last bytes are in `out`).
    finished: bool,
    /// The agent ended its answer itself (`result`), so it need not be stopped.
    agent_done: bool,
    /// The client is gone: nothing more is written.
    discarded: bool,
    /// When body bytes were last produced (stream keep-alive clock); `None` before the head.
    last_output_ms: Option<u64>,
    /// Grows whenever body bytes are produced; compared at each stamp.
    produced: u64,
    stamped: u64,
    /// The request's place in a conversation ([`Bridge::in_conversation`]): it records
    /// what the client is sent.
    conversation: Option<Box<InConversation>>,
}

impl Emitter {
    fn new(dialect: Dialect, writer: Option<ResponseWriter>) -> Emitter {
        Emitter {
            dialect,
            writer,
            out: Vec::new(),
            lent: false,
            head: None,
            head_sent: false,
            finished: false,
            agent_done: false,
            discarded: false,
            last_output_ms: None,
            produced: 0,
            stamped: 0,
            conversation: None,
        }
    }

    fn head_decided(&self) -> bool {
        self.head.is_some() || self.head_sent
    }

    fn take_head(&mut self) -> Option<Head> {
        let head = self.head.take()?;
        self.head_sent = true;
        Some(head)
    }

    fn commit_stream_head(&mut self) {
        if !self.head_decided() {
            self.head = Some(Head {
                status: 200,
                content_type: "text/event-stream",
                retryable: None,
            });
        }
    }

    /// Clears the body buffer if `poll_output` lent it out: the caller has written it. A
    /// buffer that grew with a long line gives its memory back.
    fn recycle(&mut self) {
        if self.lent {
            framing::reclaim(&mut self.out);
            self.lent = false;
        }
    }

    /// An error before anything was sent: its head and the dialect's error body, and
    /// nothing else.
    fn reject(&mut self, reply: &ErrorReply) {
        self.head = Some(Head {
            status: reply.status(),
            content_type: "application/json",
            retryable: Some(reply.retryable()),
        });
        self.recycle();
        self.out.clear();
        self.dialect.write_error(reply, &mut self.out);
        self.finished = true;
    }

    fn discard(&mut self) {
        self.discarded = true;
        self.recycle();
        self.out.clear();
        self.head = None;
    }

    fn emit(&mut self, event: &Event<'_>) {
        if self.finished || self.discarded {
            return;
        }
        self.recycle();
        let before = self.out.len();
        self.emit_inner(event);
        if self.out.len() != before {
            self.produced += 1;
        }
    }

    fn emit_inner(&mut self, event: &Event<'_>) {
        if let Some(conversation) = &mut self.conversation {
            conversation.observe(event);
        }
        if matches!(event, Event::Finish(_)) {
            self.agent_done = true;
        }
        if matches!(self.writer, Some(ResponseWriter::Stream(_))) && !self.head_decided() {
            if let Event::Failed(failure) = event {
                // Nothing sent yet: the failure gets its true status.
                self.reject(&ErrorReply::from_failure(failure));
                return;
            }
            if event.is_answer() {
                self.commit_stream_head();
            }
        }
        match &mut self.writer {
            None => {}
            Some(ResponseWriter::Body(builder)) => {
                builder.push(event);
                if builder.is_finished() {
                    match builder.failure().map(ErrorReply::from_failure) {
                        Some(reply) => self.reject(&reply),
                        None => {
                            self.head = Some(Head {
                                status: 200,
                                content_type: "application/json",
                                retryable: None,
                            });
                            builder.write_body(&mut self.out);
                            self.finished = true;
                        }
                    }
                }
            }
            Some(ResponseWriter::Stream(encoder)) => {
                encoder.encode(event, &mut self.out);
                self.finished = encoder.is_finished();
            }
        }
    }

    /// The dialect's keep-alive frame.
    fn keep_alive(&mut self) {
        self.recycle();
        if let Some(ResponseWriter::Stream(encoder)) = &mut self.writer {
            encoder.keep_alive(&mut self.out);
            self.produced += 1;
        }
    }

    /// Notes whether the last input produced body bytes (the keep-alive clock).
    fn stamp(&mut self, now_ms: u64) {
        if !self.head_decided() {
            return;
        }
        if self.last_output_ms.is_none() || self.produced != self.stamped {
            self.last_output_ms = Some(now_ms);
        }
        self.stamped = self.produced;
    }

    fn keep_alive_due(&mut self, now_ms: u64, interval: u64) -> bool {
        matches!(self.writer, Some(ResponseWriter::Stream(_)))
            && self.head_decided()
            && !self.finished
            && self
                .last_output_ms
                .is_some_and(|last| now_ms >= last.saturating_add(interval))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of a run that failed with `stderr`, in every dialect.
    fn failed_heads(stderr: &[u8]) -> Vec<Head> {
        let requests: [(Dialect, &[u8]); 3] = [
            (
                Dialect::ChatCompletions,
                br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
            ),
            (Dialect::Responses, br#"{"model":"auto","stream":true,"input":"hi"}"#),
            (
                Dialect::Messages,
                br#"{"model":"auto","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
            ),
        ];
        let params = BridgeParams {
            now_ms: 0,
            created_unix: 1,
            id_seed: 1,
        };
        requests
            .iter()
            .map(|(dialect, body)| {
                let mut bridge = Bridge::new(*dialect, body, &Config::default(), params);
                bridge.push_stderr(stderr, 1).unwrap();
                bridge.agent_exited(ExitStatus::Code(1), 2).unwrap();
                let mut head = None;
                while let Some(output) = bridge.poll_output() {
                    if let Output::Head(h) = output {
                        head = Some(h);
                    }
                }
                head.expect("a failed run has a head")
            })
            .collect()
    }

    #[test]
    fn a_used_up_quota_is_a_429_no_client_retries() {
        // Retrying it only runs the agent into the same wall (Claude Code retried 8 times).
        for head in failed_heads(b"You've hit your usage limit. It resets on 12/01/2026.\n") {
            assert_eq!((head.status, head.retryable), (429, Some(false)));
        }
        for head in failed_heads(b"Error: rate limit exceeded (too many requests)\n") {
            assert_eq!((head.status, head.retryable), (429, Some(true)));
        }
    }
}
