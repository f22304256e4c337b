//! One MCP server: the client's tools served to one agent session, over Streamable HTTP
//! or stdio, each `tools/call` held pending until the owner answers it.

use std::collections::VecDeque;
use std::fmt;

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use thiserror::Error;

use super::config::Config;
use super::content::{self, ToolOutcome};
use super::http::{self, Exchange, ExchangeId, ExchangeOutput, HttpRequest};
use super::rpc::{self, Incoming, Input};
use super::tools::{self, BadArguments, Tool, ToolSet};
use super::{BATCH_VERSION, PROTOCOL_VERSIONS, secret_matches};
use crate::conversation::ToolSpec;
use crate::framing::{self, LineError, LineFramer};

/// A call's handle: one `tools/call` the agent made, pending until answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId(pub(crate) u64);

impl CallId {
    /// The number behind the handle: unique within its [`Server`], rising in the order
    /// calls were made.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Why a pending call ended without an answer.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    /// The agent sent `notifications/cancelled`, with this reason when it gave one (a
    /// timeout, a cancelled turn).
    Requested(Option<String>),
    /// The HTTP connection that would carry the answer closed
    /// ([`Server::exchange_gone`]). MCP does not call a disconnection a cancellation,
    /// but without a resumable stream the answer can no longer reach the agent. Claude
    /// Code and Gemini CLI close a JSON answer's connection after about 60 s and go on
    /// without the result.
    Disconnected,
    /// The agent ended the session (HTTP `DELETE`).
    SessionDeleted,
}

/// What the server tells its owner.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpEvent {
    /// The agent called a client tool: answer with [`Server::answer_call`].
    Call {
        /// The call's handle.
        call: CallId,
        /// The tool: its index in the list the server was built from (and in
        /// [`Server::tools`]).
        tool: usize,
        /// The client's input for the call: for a function tool, the JSON arguments text
        /// as the agent sent it; for a freeform tool, the raw text.
        arguments: String,
    },
    /// A pending call ended without an answer; answering it now is an error.
    Cancelled {
        /// The call.
        call: CallId,
        /// Why.
        reason: CancelReason,
    },
    /// The call has been pending for [`Config::call_limit_ms`]: the owner may answer it
    /// before the agent gives up. Sent once per call.
    CallLimit {
        /// The call.
        call: CallId,
    },
    /// The agent ended the session (HTTP `DELETE`): every pending call was cancelled
    /// first ([`CancelReason::SessionDeleted`]), and the server serves nothing more.
    Closed,
}

/// Caller misuse of a [`Server`]. Nothing changes when one is returned.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum McpError {
    /// No call with this handle was ever made.
    #[error("no call {} was made", .0.get())]
    UnknownCall(CallId),
    /// The call was answered, cancelled or dropped already.
    #[error("call {} is not pending (answered, cancelled or dropped)", .0.get())]
    NotPending(CallId),
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for `initialize`.
    New,
    /// Initialized with this protocol version.
    Ready(&'static str),
    /// Closed by the agent (`DELETE`) or the owner: nothing more is served.
    Closed,
}

/// Where a call's answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Stdio,
    Exchange(ExchangeId),
}

#[derive(Debug)]
struct PendingCall {
    call: CallId,
    /// The request id, compact and canonical ([`rpc::id_text`]).
    request_id: Box<str>,
    route: Route,
    /// When [`McpEvent::CallLimit`] is due; `None` once sent (or without a limit).
    limit_at: Option<u64>,
}

/// How one input (a POST body, a stdio line) was taken: its replies are in the server's
/// reply buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// Refused whole (not JSON, not a message, a batch where none is allowed): one error.
    Refused,
    /// One message.
    Single,
    /// A batch.
    Batch,
}

/// Most reply-buffer capacity a server keeps between inputs: replies to the calls an agent
/// makes while it works (`ping`, a call's acknowledgement) fit, a `tools/list` answer is
/// given back.
const KEPT_REPLY_CAPACITY: usize = 4096;

/// An MCP server (JSON-RPC 2.0, MCP revisions 2025-03-26, 2025-06-18 and 2025-11-25)
/// offering one agent session the client's tools, over Streamable HTTP or stdio (one
/// server serves one transport; calls are answered where they came from). It answers
/// `initialize`, `ping` and `tools/list` itself and holds each `tools/call` pending until
/// its owner answers it, for as long as the owner takes: an HTTP answer is then an SSE
/// stream kept busy with comments.
///
/// Methods:
/// - **getters**: [`session_id`](Self::session_id),
///   [`protocol_version`](Self::protocol_version),
///   [`is_initialized`](Self::is_initialized), [`is_closed`](Self::is_closed),
///   [`pending_calls`](Self::pending_calls), [`tools`](Self::tools);
/// - **inputs**, all taking `now_ms`: [`handle_http`](Self::handle_http),
///   [`push_stdio`](Self::push_stdio), [`answer_call`](Self::answer_call),
///   [`exchange_gone`](Self::exchange_gone), [`handle_timeout`](Self::handle_timeout),
///   [`close`](Self::close);
/// - **outputs**: [`poll_transmit`](Self::poll_transmit) (stdio bytes to write),
///   [`poll_event`](Self::poll_event) ([`McpEvent`]s),
///   [`poll_ready`](Self::poll_ready) (which exchange has output),
///   [`poll_exchange`](Self::poll_exchange) (per exchange: [`ExchangeOutput`]), then
///   [`poll_timeout`](Self::poll_timeout).
///
/// **After every input, drain `poll_transmit`, `poll_event`, and `poll_exchange` of
/// every exchange `poll_ready` names (or of every open exchange) until each returns
/// `None`, then ask `poll_timeout`.**
///
/// Rules it keeps:
/// - **One answer per request, none per notification.** An HTTP POST holding only
///   notifications and responses is answered 202 with no body; one holding requests, 200
///   with a JSON body when every answer is immediate, or an SSE stream (`text/event-stream`)
///   when it holds a `tools/call` that becomes pending: the head at once, a `: keepalive`
///   comment every [`Config::keep_alive_ms`], each answer as an `event: message`, and the
///   end after the last. Over stdio every answer is a line. Stream events carry no ids:
///   a stream is not resumable, so a call whose stream is gone is cancelled.
/// - **Exactly one [`ExchangeOutput::End`] per exchange** (none after
///   [`exchange_gone`](Self::exchange_gone)), after its head and body.
/// - **The session**: its id ([`Server::new`]) goes out with the `initialize` answer and
///   every later success; a later request without it is answered 400, with another one 404;
///   `DELETE` with it ends the session ([`McpEvent::Closed`]). `GET` (an SSE stream for
///   server messages, which this server never sends) is answered 405. An unsupported
///   `MCP-Protocol-Version` is 400; none means the negotiated version. A POST must be
///   JSON (else 415) and accept both JSON and SSE (else 406: the specification requires
///   it, and every recorded agent sends both), and fit [`Config::max_body_bytes`] (else
///   413).
/// - **Hostile input changes no pending call**: malformed JSON (`-32700`), an invalid
///   message or `jsonrpc` version, a request before `initialize`, a batch outside protocol
///   version 2025-03-26, a request id already pending (`-32600`), an unknown method
///   (`-32601`), params that are not an object, an unknown tool or a malformed
///   `tools/call` (`-32602`), a response to a request never sent (ignored) — each is
///   answered and the pending calls stay as they were. Arguments that do not fit a tool
///   (a freeform tool's `input` not a string) are a tool result with `isError: true`,
///   which the agent's model can correct.
/// - **Calls end once**: answered ([`answer_call`](Self::answer_call)), or cancelled by
///   the agent, a closed connection or a deleted session ([`McpEvent::Cancelled`]), or
///   dropped by [`close`](Self::close). A pending call that waited
///   [`Config::call_limit_ms`] is reported once ([`McpEvent::CallLimit`]); the server
///   never answers on its own.
pub struct Server {
    config: Config,
    session_id: String,
    tools: ToolSet,
    state: State,
    framer: LineFramer,
    transmit: Vec<u8>,
    transmit_lent: bool,
    /// Open exchanges, by rising id.
    exchanges: Vec<Exchange>,
    next_exchange: u64,
    calls: Vec<PendingCall>,
    next_call: u64,
    events: VecDeque<McpEvent>,
    /// The last exchange `poll_ready` named since the last input.
    ready_after: Option<ExchangeId>,
    /// The immediate replies of the input being taken, each ending at an offset of
    /// `reply_ends`.
    replies: Vec<u8>,
    reply_ends: Vec<usize>,
}

/// Whether `id` may be an `Mcp-Session-Id`: 1 or more visible ASCII characters (0x21 to
/// 0x7E), as MCP requires.
pub fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

impl Server {
    /// A server offering `tools` (see [`Tool`] for how each is presented), with the
    /// session id `session_id`: a random value the caller draws (at least 128 bits, as
    /// the id is a credential of the session), sent as `Mcp-Session-Id`.
    ///
    /// # Panics
    ///
    /// If `session_id` is not a valid header value ([`is_valid_session_id`]).
    pub fn new(tools: &[ToolSpec], config: &Config, session_id: String) -> Server {
        Server::with_tools(ToolSet::new(tools), config, session_id)
    }

    /// A server offering a tool set built once for several servers (see [`ToolSet`]).
    ///
    /// # Panics
    ///
    /// If `session_id` is not a valid header value ([`is_valid_session_id`]).
    pub fn with_tools(tools: ToolSet, config: &Config, session_id: String) -> Server {
        assert!(
            is_valid_session_id(&session_id),
            "an MCP session id is 1 or more visible ASCII characters"
        );
        Server {
            tools,
            framer: LineFramer::new(config.max_body_bytes),
            config: config.clone(),
            session_id,
            state: State::New,
            transmit: Vec::new(),
            transmit_lent: false,
            exchanges: Vec::new(),
            next_exchange: 0,
            calls: Vec::new(),
            next_call: 0,
            events: VecDeque::new(),
            ready_after: None,
            replies: Vec::new(),
            reply_ends: Vec::new(),
        }
    }

    // A. Getters.

    /// The session id, as given to [`new`](Self::new).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The protocol version agreed in `initialize`; `None` before (and after close).
    pub fn protocol_version(&self) -> Option<&'static str> {
        match self.state {
            State::Ready(version) => Some(version),
            State::New | State::Closed => None,
        }
    }

    /// Whether `initialize` was answered and the session is not closed.
    pub fn is_initialized(&self) -> bool {
        matches!(self.state, State::Ready(_))
    }

    /// Whether the session ended ([`close`](Self::close) or the agent's `DELETE`).
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Calls made and neither answered nor ended.
    pub fn pending_calls(&self) -> usize {
        self.calls.len()
    }

    /// The tools as the agent sees them, in the order of the list the server was built
    /// from.
    pub fn tools(&self) -> &[Tool] {
        self.tools.tools()
    }

    // B. Inputs.

    /// An HTTP request to the MCP endpoint. Its response comes from
    /// [`poll_exchange`](Self::poll_exchange) under the returned id.
    pub fn handle_http(&mut self, request: &HttpRequest<'_>, now_ms: u64) -> ExchangeId {
        self.ready_after = None;
        let id = ExchangeId(self.next_exchange);
        self.next_exchange += 1;
        let exchange = self.exchange(id, request, now_ms);
        self.exchanges.push(exchange);
        self.release_replies();
        id
    }

    /// The input's replies were taken: the buffer keeps no peak between inputs (a
    /// `tools/list` answer is tens of kilobytes, and a parked session's server waits long).
    fn release_replies(&mut self) {
        self.replies.clear();
        if self.replies.capacity() > KEPT_REPLY_CAPACITY {
            self.replies = Vec::new();
        }
        self.reply_ends.clear();
    }

    /// Bytes the agent wrote to the stdio server's stdin, in any chunking: one JSON-RPC
    /// message (or batch) a line. Ignored once the server is closed.
    pub fn push_stdio(&mut self, bytes: &[u8], now_ms: u64) {
        self.ready_after = None;
        if self.state == State::Closed {
            return;
        }
        let mut input = bytes;
        while !input.is_empty() {
            // The framer lends the line from `input` or its own buffer; taking it needs
            // `self` whole, so the line is taken through a detached framer.
            let mut framer = std::mem::take(&mut self.framer);
            let framed = framer.next_line(input);
            input = &input[framed.consumed..];
            match framed.line {
                Some(Ok(line)) => self.stdio_line(line.as_bytes(), now_ms),
                Some(Err(LineError::TooLong { limit, .. })) => {
                    let message = format!("The message is longer than the {limit}-byte limit.");
                    self.stdio_error(rpc::INVALID_REQUEST, &message);
                }
                Some(Err(_)) => self.stdio_error(rpc::PARSE_ERROR, "The message is not UTF-8."),
                None => {}
            }
            self.framer = framer;
        }
        self.release_replies();
    }

    /// Answers the pending call `call` with what the client's tool returned.
    pub fn answer_call(
        &mut self,
        call: CallId,
        outcome: &ToolOutcome,
        now_ms: u64,
    ) -> Result<(), McpError> {
        self.ready_after = None;
        let Some(index) = self.calls.iter().position(|c| c.call == call) else {
            return Err(if call.0 < self.next_call {
                McpError::NotPending(call)
            } else {
                McpError::UnknownCall(call)
            });
        };
        let pending = self.calls.remove(index);
        let write = |out: &mut Vec<u8>| {
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            out.extend_from_slice(pending.request_id.as_bytes());
            out.extend_from_slice(b",\"result\":");
            content::write_result(out, outcome);
            out.push(b'}');
        };
        match pending.route {
            Route::Stdio => {
                let out = self.transmit();
                write(out);
                out.push(b'\n');
            }
            Route::Exchange(id) => {
                let keep_alive_ms = self.config.keep_alive_ms;
                if let Some(exchange) = self.exchange_mut(id) {
                    exchange.push_message(write);
                    exchange.settle_one(now_ms, keep_alive_ms);
                }
            }
        }
        Ok(())
    }

    /// The agent's HTTP connection of `exchange` closed: nothing more is written to it,
    /// its outputs need not be polled, and the calls whose answers it owed are cancelled
    /// ([`CancelReason::Disconnected`]).
    pub fn exchange_gone(&mut self, exchange: ExchangeId, now_ms: u64) {
        self.ready_after = None;
        let _ = now_ms;
        if let Ok(index) = self.exchanges.binary_search_by_key(&exchange, |e| e.id) {
            self.exchanges.remove(index);
        }
        let route = Route::Exchange(exchange);
        let events = &mut self.events;
        self.calls.retain(|pending| {
            let owed = pending.route == route;
            if owed {
                events.push_back(McpEvent::Cancelled {
                    call: pending.call,
                    reason: CancelReason::Disconnected,
                });
            }
            !owed
        });
    }

    /// A deadline from [`poll_timeout`](Self::poll_timeout) passed: keep-alive comments
    /// and call limits that are due. Spurious calls do nothing.
    pub fn handle_timeout(&mut self, now_ms: u64) {
        self.ready_after = None;
        let keep_alive_ms = self.config.keep_alive_ms;
        for exchange in &mut self.exchanges {
            if exchange.keep_alive_at.is_some_and(|at| now_ms >= at) {
                exchange.push_keep_alive();
                exchange.keep_alive_at = Some(now_ms.saturating_add(keep_alive_ms));
            }
        }
        for pending in &mut self.calls {
            if pending.limit_at.is_some_and(|at| now_ms >= at) {
                pending.limit_at = None;
                self.events
                    .push_back(McpEvent::CallLimit { call: pending.call });
            }
        }
    }

    /// Ends the server from our side: every open exchange ends after what it holds
    /// (a stream without its pending answers), pending calls are dropped without events,
    /// and every later request is answered 404 (stdio input is ignored).
    pub fn close(&mut self, now_ms: u64) {
        self.ready_after = None;
        let _ = now_ms;
        self.state = State::Closed;
        self.calls.clear();
        for exchange in &mut self.exchanges {
            exchange.finish();
        }
    }

    // C. Outputs.

    /// Bytes to write to the stdio server's stdout, or `None`. Valid until the next call.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<&[u8]> {
        if self.transmit_lent {
            framing::reclaim(&mut self.transmit);
            self.transmit_lent = false;
        }
        if self.transmit.is_empty() {
            return None;
        }
        self.transmit_lent = true;
        Some(&self.transmit)
    }

    /// The next event, or `None`.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<McpEvent> {
        self.events.pop_front()
    }

    /// An exchange that has output for [`poll_exchange`](Self::poll_exchange), each named
    /// at most once between two inputs, in the order requests came; `None` when no other
    /// has any.
    #[must_use]
    pub fn poll_ready(&mut self) -> Option<ExchangeId> {
        let start = match self.ready_after {
            Some(after) => self.exchanges.partition_point(|e| e.id <= after),
            None => 0,
        };
        let exchange = self.exchanges[start..].iter().find(|e| e.has_output())?;
        self.ready_after = Some(exchange.id);
        Some(exchange.id)
    }

    /// The next output of `exchange`: its head, body bytes, then `End`, after which the
    /// exchange is forgotten. `None` until the next input, and for ever after `End`, after
    /// [`exchange_gone`](Self::exchange_gone), or for an unknown exchange.
    #[must_use]
    pub fn poll_exchange(&mut self, exchange: ExchangeId) -> Option<ExchangeOutput<'_>> {
        let index = self
            .exchanges
            .binary_search_by_key(&exchange, |e| e.id)
            .ok()?;
        if self.exchanges[index].is_over() {
            self.exchanges.remove(index);
            return Some(ExchangeOutput::End);
        }
        self.exchanges[index].poll(&self.session_id)
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due; `None` when nothing is
    /// scheduled.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<u64> {
        let keep_alives = self.exchanges.iter().filter_map(|e| e.keep_alive_at);
        let limits = self.calls.iter().filter_map(|c| c.limit_at);
        keep_alives.chain(limits).min()
    }

    // Internals.

    fn transmit(&mut self) -> &mut Vec<u8> {
        if self.transmit_lent {
            framing::reclaim(&mut self.transmit);
            self.transmit_lent = false;
        }
        &mut self.transmit
    }

    fn exchange_mut(&mut self, id: ExchangeId) -> Option<&mut Exchange> {
        let index = self.exchanges.binary_search_by_key(&id, |e| e.id).ok()?;
        Some(&mut self.exchanges[index])
    }

    /// Whether a session was established and `given` is its id.
    fn is_our_session(&self, given: &str) -> bool {
        self.is_initialized() && secret_matches(self.session_id.as_bytes(), given.as_bytes())
    }

    /// The response to `request`.
    fn exchange(&mut self, id: ExchangeId, request: &HttpRequest<'_>, now_ms: u64) -> Exchange {
        if self.state == State::Closed {
            return Exchange::refused(id, 404, rpc::SERVER_ERROR, "The session is closed.");
        }
        if self.exchanges.len() >= self.config.max_exchanges {
            return Exchange::refused(
                id,
                503,
                rpc::SERVER_ERROR,
                "Too many requests are open on this session.",
            );
        }
        match request.method {
            "POST" => {}
            "DELETE" => return self.delete(id, request),
            _ => return Exchange::method_not_allowed(id),
        }
        if request.body.len() > self.config.max_body_bytes {
            let message = format!(
                "The body is longer than the {}-byte limit.",
                self.config.max_body_bytes
            );
            return Exchange::refused(id, 413, rpc::SERVER_ERROR, &message);
        }
        if !http::is_json(request.content_type) {
            return Exchange::refused(
                id,
                415,
                rpc::SERVER_ERROR,
                "The body must be JSON (Content-Type: application/json).",
            );
        }
        if !http::accepts(request.accept, http::JSON) || !http::accepts(request.accept, http::SSE) {
            return Exchange::refused(
                id,
                406,
                rpc::SERVER_ERROR,
                "The client must accept both application/json and text/event-stream.",
            );
        }
        let input = rpc::parse(request.body);
        let initialize = matches!(
            &input,
            Input::Single(raw) if matches!(
                rpc::classify(raw),
                Incoming::Request { method, .. } if method == "initialize"
            )
        );
        match request.session_id {
            None if !initialize => {
                return Exchange::refused(
                    id,
                    400,
                    rpc::SERVER_ERROR,
                    "The Mcp-Session-Id header is missing.",
                );
            }
            Some(given) if !self.is_our_session(given) => {
                return Exchange::refused(id, 404, rpc::SERVER_ERROR, "No such session.");
            }
            _ => {}
        }
        if !initialize {
            if let Some(refused) = self.check_version(id, request) {
                return refused;
            }
        }
        let taken = self.take(input, Route::Exchange(id), now_ms);
        let pending = self
            .calls
            .iter()
            .filter(|c| c.route == Route::Exchange(id))
            .count();
        let with_session = self.is_initialized();
        let replies = &self.replies;
        let ends = &self.reply_ends;
        let reply = |i: usize| &replies[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        if pending > 0 {
            let keep_alive_at = (self.config.keep_alive_ms > 0)
                .then(|| now_ms.saturating_add(self.config.keep_alive_ms));
            let mut exchange = Exchange::stream(id, pending, keep_alive_at);
            for i in 0..ends.len() {
                exchange.push_message(|out| out.extend_from_slice(reply(i)));
            }
            return exchange;
        }
        let mut body = Vec::new();
        let status = match (taken, ends.len()) {
            (Taken::Refused, _) => {
                body.extend_from_slice(replies);
                return Exchange::answered(id, 400, Some(http::JSON), false, body);
            }
            (_, 0) => return Exchange::answered(id, 202, None, with_session, body),
            (Taken::Single, _) => {
                body.extend_from_slice(replies);
                200
            }
            (Taken::Batch, n) => {
                body.push(b'[');
                for i in 0..n {
                    if i > 0 {
                        body.push(b',');
                    }
                    body.extend_from_slice(reply(i));
                }
                body.push(b']');
                200
            }
        };
        Exchange::answered(id, status, Some(http::JSON), with_session, body)
    }

    /// `MCP-Protocol-Version`, when given, must be one this server speaks.
    fn check_version(&self, id: ExchangeId, request: &HttpRequest<'_>) -> Option<Exchange> {
        let version = request.protocol_version?;
        if PROTOCOL_VERSIONS.contains(&version) {
            return None;
        }
        let shown: String = version.chars().take(40).collect();
        let message = format!(
            "Unsupported MCP-Protocol-Version `{shown}`; supported: {}.",
            PROTOCOL_VERSIONS.join(", ")
        );
        Some(Exchange::refused(id, 400, rpc::SERVER_ERROR, &message))
    }

    /// `DELETE`: the agent ends the session.
    fn delete(&mut self, id: ExchangeId, request: &HttpRequest<'_>) -> Exchange {
        match request.session_id {
            None => {
                return Exchange::refused(
                    id,
                    400,
                    rpc::SERVER_ERROR,
                    "The Mcp-Session-Id header is missing.",
                );
            }
            Some(given) if !self.is_our_session(given) => {
                return Exchange::refused(id, 404, rpc::SERVER_ERROR, "No such session.");
            }
            Some(_) => {}
        }
        if let Some(refused) = self.check_version(id, request) {
            return refused;
        }
        for pending in self.calls.drain(..) {
            self.events.push_back(McpEvent::Cancelled {
                call: pending.call,
                reason: CancelReason::SessionDeleted,
            });
        }
        for exchange in &mut self.exchanges {
            exchange.finish();
        }
        self.state = State::Closed;
        self.events.push_back(McpEvent::Closed);
        Exchange::answered(id, 200, None, false, Vec::new())
    }

    /// One stdio line: its replies, as one line (a batch's as one array).
    fn stdio_line(&mut self, line: &[u8], now_ms: u64) {
        let taken = self.take(rpc::parse(line), Route::Stdio, now_ms);
        if self.reply_ends.is_empty() {
            return;
        }
        if self.transmit_lent {
            framing::reclaim(&mut self.transmit);
            self.transmit_lent = false;
        }
        let out = &mut self.transmit;
        if taken == Taken::Batch {
            out.push(b'[');
            let mut start = 0;
            for (i, &end) in self.reply_ends.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&self.replies[start..end]);
                start = end;
            }
            out.push(b']');
        } else {
            out.extend_from_slice(&self.replies);
        }
        out.push(b'\n');
    }

    fn stdio_error(&mut self, code: i64, message: &str) {
        let out = self.transmit();
        rpc::write_error(out, None, code, message);
        out.push(b'\n');
    }

    /// Takes one input: its immediate replies into the reply buffer, its calls pending
    /// on `route`.
    fn take(&mut self, input: Input<'_>, route: Route, now_ms: u64) -> Taken {
        self.replies.clear();
        self.reply_ends.clear();
        match input {
            Input::Unparsable => {
                self.reply_error(None, rpc::PARSE_ERROR, "The message is not JSON.");
                Taken::Refused
            }
            Input::Single(raw) => {
                let incoming = rpc::classify(raw);
                if let Incoming::Invalid { id, code, message } = incoming {
                    self.reply_error(id.map(rpc::id_text).as_deref(), code, message);
                    return Taken::Refused;
                }
                self.message(incoming, false, route, now_ms);
                Taken::Single
            }
            Input::Batch(messages) => {
                if messages.is_empty() {
                    self.reply_error(None, rpc::INVALID_REQUEST, "The batch is empty.");
                    return Taken::Refused;
                }
                if self.protocol_version() != Some(BATCH_VERSION) {
                    let message = match self.protocol_version() {
                        Some(version) => format!(
                            "Batches are not part of protocol version {version}; send one message at a time."
                        ),
                        None => "Batches are served only after `initialize` agreed protocol version 2025-03-26.".to_owned(),
                    };
                    self.reply_error(None, rpc::INVALID_REQUEST, &message);
                    return Taken::Refused;
                }
                for raw in messages {
                    let incoming = rpc::classify(raw);
                    self.message(incoming, true, route, now_ms);
                }
                Taken::Batch
            }
        }
    }

    fn reply_error(&mut self, id: Option<&str>, code: i64, message: &str) {
        rpc::write_error(&mut self.replies, id, code, message);
        self.reply_ends.push(self.replies.len());
    }

    fn reply_result(&mut self, id: &str, result: &str) {
        rpc::write_result(&mut self.replies, id, result);
        self.reply_ends.push(self.replies.len());
    }

    /// One message of an input.
    fn message(&mut self, incoming: Incoming<'_>, in_batch: bool, route: Route, now_ms: u64) {
        match incoming {
            Incoming::Request { id, method, params } => {
                let id = rpc::id_text(id);
                self.request(&id, &method, params, in_batch, route, now_ms);
            }
            Incoming::Notification { method, params } => self.notification(&method, params, now_ms),
            Incoming::Response => {}
            Incoming::Invalid { id, code, message } => {
                self.reply_error(id.map(rpc::id_text).as_deref(), code, message);
            }
        }
    }

    fn request(
        &mut self,
        id: &str,
        method: &str,
        params: Option<&RawValue>,
        in_batch: bool,
        route: Route,
        now_ms: u64,
    ) {
        if self.calls.iter().any(|c| *c.request_id == *id) {
            let message = "The request id is already in use by a pending request.";
            return self.reply_error(Some(id), rpc::INVALID_REQUEST, message);
        }
        if !matches!(method, "initialize" | "ping" | "tools/list" | "tools/call") {
            let shown: String = method.chars().take(80).collect();
            let message = format!("Method not found: {shown}");
            return self.reply_error(Some(id), rpc::METHOD_NOT_FOUND, &message);
        }
        if params.is_some_and(|p| !rpc::is_object(p)) {
            let message = "`params` must be an object.";
            return self.reply_error(Some(id), rpc::INVALID_PARAMS, message);
        }
        match method {
            "ping" => self.reply_result(id, "{}"),
            "initialize" => self.initialize(id, params, in_batch),
            _ if !self.is_initialized() => self.reply_error(
                Some(id),
                rpc::INVALID_REQUEST,
                "The session is not initialized: send `initialize` first.",
            ),
            "tools/list" => {
                rpc::write_result(&mut self.replies, id, self.tools.list());
                self.reply_ends.push(self.replies.len());
            }
            _ => self.call(id, params, route, now_ms),
        }
    }

    fn initialize(&mut self, id: &str, params: Option<&RawValue>, in_batch: bool) {
        if in_batch {
            let message = "`initialize` must not be part of a batch.";
            return self.reply_error(Some(id), rpc::INVALID_REQUEST, message);
        }
        if self.state != State::New {
            let message = "The session is already initialized.";
            return self.reply_error(Some(id), rpc::INVALID_REQUEST, message);
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            #[serde(borrow)]
            protocol_version: Option<&'a RawValue>,
        }
        let requested = params
            .and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
            .and_then(|p| p.protocol_version)
            .and_then(rpc::string);
        let Some(requested) = requested else {
            let message = "`initialize` needs `protocolVersion`, a string.";
            return self.reply_error(Some(id), rpc::INVALID_PARAMS, message);
        };
        // The client's version when this server speaks it, else the latest.
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .copied()
            .unwrap_or(PROTOCOL_VERSIONS[0]);
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": self.config.server_name, "version": self.config.server_version},
        });
        if let Some(instructions) = &self.config.instructions {
            result["instructions"] = json!(instructions);
        }
        self.state = State::Ready(version);
        self.reply_result(id, &result.to_string());
    }

    fn call(&mut self, id: &str, params: Option<&RawValue>, route: Route, now_ms: u64) {
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow, default)]
            name: Option<&'a RawValue>,
            #[serde(borrow, default, deserialize_with = "rpc::present")]
            arguments: Option<&'a RawValue>,
        }
        let Some(params) = params.and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
        else {
            let message = "`tools/call` needs `params` with `name`.";
            return self.reply_error(Some(id), rpc::INVALID_PARAMS, message);
        };
        let Some(name) = params.name.and_then(rpc::string) else {
            let message = "`tools/call` needs `name`, a string.";
            return self.reply_error(Some(id), rpc::INVALID_PARAMS, message);
        };
        let Some(tool) = self.tools().iter().position(|t| t.name == name) else {
            let shown: String = name.chars().take(80).collect();
            let message = format!("Unknown tool: {shown}");
            return self.reply_error(Some(id), rpc::INVALID_PARAMS, &message);
        };
        let arguments = match tools::client_input(self.tools()[tool].shape, params.arguments) {
            Ok(arguments) => arguments,
            Err(BadArguments::Malformed(message)) => {
                return self.reply_error(Some(id), rpc::INVALID_PARAMS, message);
            }
            Err(BadArguments::Unfit(message)) => {
                // A tool execution error: the agent's model reads it and may correct.
                self.replies
                    .extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                self.replies.extend_from_slice(id.as_bytes());
                self.replies.extend_from_slice(b",\"result\":");
                content::write_text_result(&mut self.replies, message, true);
                self.replies.push(b'}');
                self.reply_ends.push(self.replies.len());
                return;
            }
        };
        if self.calls.len() >= self.config.max_pending_calls {
            let message = format!(
                "Too many tool calls are pending (at most {}); retry once one is answered.",
                self.config.max_pending_calls
            );
            return self.reply_error(Some(id), rpc::SERVER_ERROR, &message);
        }
        let call = CallId(self.next_call);
        self.next_call += 1;
        self.calls.push(PendingCall {
            call,
            request_id: id.into(),
            route,
            limit_at: self
                .config
                .call_limit_ms
                .map(|ms| now_ms.saturating_add(ms)),
        });
        self.events.push_back(McpEvent::Call {
            call,
            tool,
            arguments,
        });
    }

    fn notification(&mut self, method: &str, params: Option<&RawValue>, now_ms: u64) {
        if method != "notifications/cancelled" {
            // `notifications/initialized`, progress, roots changes: nothing to do.
            return;
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            #[serde(borrow)]
            request_id: Option<&'a RawValue>,
            #[serde(default)]
            reason: Option<String>,
        }
        // A malformed or unknown cancellation is ignored, as MCP asks.
        let Some(params) = params.and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
        else {
            return;
        };
        let Some(request_id) = params.request_id else {
            return;
        };
        let request_id = rpc::id_text(request_id);
        let Some(index) = self.calls.iter().position(|c| *c.request_id == *request_id) else {
            return;
        };
        let pending = self.calls.remove(index);
        if let Route::Exchange(exchange) = pending.route {
            let keep_alive_ms = self.config.keep_alive_ms;
            if let Some(exchange) = self.exchange_mut(exchange) {
                exchange.settle_one(now_ms, keep_alive_ms);
            }
        }
        self.events.push_back(McpEvent::Cancelled {
            call: pending.call,
            reason: CancelReason::Requested(params.reason),
        });
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("state", &self.state)
            .field("tools", &self.tools().len())
            .field("exchanges", &self.exchanges.len())
            .field("pending_calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post<'a>(session: Option<&'a str>, body: &'a str) -> HttpRequest<'a> {
        HttpRequest {
            method: "POST",
            accept: Some("application/json, text/event-stream"),
            content_type: Some("application/json"),
            session_id: session,
            protocol_version: session.map(|_| "2025-11-25"),
            body: body.as_bytes(),
        }
    }

    /// A server parked with a call pending keeps no buffer the size of the `tools/list`
    /// answer it served: with many sessions parked, that peak would be most of their memory.
    #[test]
    fn a_served_tools_list_leaves_no_buffer_of_its_size() {
        let description = "x".repeat(40_000);
        let tools = [ToolSpec::function(
            "bash",
            &description,
            json!({"type": "object"}),
        )];
        let mut server = Server::new(&tools, &Config::default(), "0".repeat(16));
        let session = server.session_id().to_owned();
        let mut answered = 0;
        for (body, session) in [
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                Some(session.as_str()),
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{}}}"#,
                Some(session.as_str()),
            ),
        ] {
            let exchange = server.handle_http(&post(session, body), 0);
            while let Some(output) = server.poll_exchange(exchange) {
                if let ExchangeOutput::Body(bytes) = output {
                    answered += bytes.len();
                }
            }
            while server.poll_event().is_some() {}
        }
        assert!(
            answered > description.len(),
            "the tools/list answer was served"
        );
        assert_eq!(server.pending_calls(), 1);
        assert!(server.replies.capacity() <= KEPT_REPLY_CAPACITY);
    }
}
