//! `acp::Connection` for JavaScript: one warm ACP agent process and the turns it serves.
//!
//! A turn's outputs cross as the bridge's records (module `bridge`), so the TypeScript
//! layer reads them with the same decoder. Turns are numbers in JavaScript (`TurnId::get`,
//! exact as `f64` below 2^53); the core hands out `TurnId`s and takes only those back, so
//! the connection keeps the ids of the turns whose end was not yet handed out.
//!
//! Exchanges with the connection's MCP endpoint are numbers too, given by the connection
//! (rising from 1), whose outputs cross as module `mcp`'s records; it keeps the core's
//! handle of each until its end was handed out, its client left, or its server is gone.

use agentwire::acp::{Connection, Decision, McpExchange, TurnId};
use agentwire::bridge::Output;
use wasm_bindgen::prelude::wasm_bindgen;

use crate::acp_config;
use crate::bridge::{CallerArguments, encode, request_arguments};
use crate::error::{Code, RawError, millis};
use crate::inputs::agent_inputs;
use crate::mcp::{self, RequestArguments};

/// A connection; the TypeScript `AcpConnection` wraps it.
#[wasm_bindgen]
pub struct RawAcpConnection {
    connection: Connection,
    /// The turns whose `End` was not handed out yet, in the order they were started
    /// (their numbers rise).
    turns: Vec<TurnId>,
    /// The open MCP exchanges, by rising number.
    exchanges: Vec<(f64, McpExchange)>,
    /// The number of the last exchange.
    last_exchange: f64,
}

agent_inputs!(RawAcpConnection, connection);

#[wasm_bindgen]
impl RawAcpConnection {
    /// A connection to a just-spawned agent. `config` is the JSON of the package's
    /// `AcpConfig` (nothing: the defaults).
    #[wasm_bindgen(constructor)]
    pub fn new(config: Option<String>, now_ms: f64) -> Result<RawAcpConnection, RawError> {
        let config = acp_config::parse(config.as_deref())?;
        let now_ms = millis(now_ms, "nowMs")?;
        Ok(RawAcpConnection {
            connection: Connection::new(config, now_ms),
            turns: Vec::new(),
            exchanges: Vec::new(),
            last_exchange: 0.0,
        })
    }

    // Getters.

    /// Whether the handshake succeeded and the agent is serving.
    #[wasm_bindgen(js_name = isReady)]
    pub fn is_ready(&self) -> bool {
        self.connection.is_ready()
    }

    /// Whether the connection serves nothing more.
    #[wasm_bindgen(js_name = isDead)]
    pub fn is_dead(&self) -> bool {
        self.connection.is_dead()
    }

    /// Turns whose response has not ended yet.
    #[wasm_bindgen(js_name = activeTurns)]
    pub fn active_turns(&self) -> u32 {
        // Each turn holds memory of its own: far fewer than 2^32 fit in a wasm32 memory.
        self.connection.active_turns() as u32
    }

    /// The models the agent offers, in its order; nothing until a session was created.
    pub fn models(&self) -> Option<Vec<String>> {
        self.connection.models().map(<[String]>::to_vec)
    }

    /// The model a fresh session uses unless told otherwise, when the agent says.
    #[wasm_bindgen(js_name = currentModel)]
    pub fn current_model(&self) -> Option<String> {
        self.connection.current_model().map(str::to_owned)
    }

    /// Agent stdout lines that were not JSON-RPC.
    #[wasm_bindgen(js_name = malformedLines)]
    pub fn malformed_lines(&self) -> f64 {
        self.connection.malformed_lines() as f64
    }

    /// Sessions parked, waiting for their conversation's next request.
    #[wasm_bindgen(js_name = parkedSessions)]
    pub fn parked_sessions(&self) -> u32 {
        // Bounded by the registry's `maxParked`.
        self.connection.parked_sessions() as u32
    }

    /// The conversations' counters, as the JSON of `RawRegistry::stats`.
    #[wasm_bindgen(js_name = conversationStats)]
    pub fn conversation_stats(&self) -> String {
        crate::registry::stats_json(self.connection.conversation_stats())
    }

    /// Whether the MCP server of exchange `exchange` is still there; `false` (also for
    /// an exchange whose end was handed out, or an unknown one): nothing more comes for
    /// it, end its response. An exchange whose server is gone is forgotten.
    #[wasm_bindgen(js_name = hasMcpServer)]
    pub fn has_mcp_server(&mut self, exchange: f64) -> bool {
        let Some(index) = self.exchange_index(exchange) else {
            return false;
        };
        let live = self.connection.is_mcp_server_open(self.exchanges[index].1);
        if !live {
            self.exchanges.remove(index);
        }
        live
    }

    // Inputs (and those of `agent_inputs!`).

    /// A client request of `dialect`, with the same arguments as `RawBridge::new`: the
    /// turn's number.
    #[wasm_bindgen(js_name = startTurn)]
    pub fn start_turn(
        &mut self,
        dialect: &str,
        body: &[u8],
        config: Option<String>,
        now_ms: f64,
        created_unix: f64,
        id_seed: u64,
    ) -> Result<f64, RawError> {
        let (dialect, config, params) =
            request_arguments(dialect, config, now_ms, created_unix, id_seed)?;
        let turn = self.connection.start_turn(dialect, body, &config, params);
        self.turns.push(turn);
        Ok(turn.get() as f64)
    }

    /// A client request in a conversation: `start_turn`'s arguments, then who sends it (as
    /// `RawBridge::in_conversation` takes it) and 32 random bytes, from which a session
    /// made for the turn takes its MCP server's path and secret.
    #[wasm_bindgen(js_name = startConversationTurn)]
    #[allow(clippy::too_many_arguments)]
    pub fn start_conversation_turn(
        &mut self,
        dialect: &str,
        body: &[u8],
        config: Option<String>,
        now_ms: f64,
        created_unix: f64,
        id_seed: u64,
        owner_key: Option<Vec<u8>>,
        caller: Option<String>,
        client_session: Option<String>,
        client_agent: Option<String>,
        entropy: &[u8],
    ) -> Result<f64, RawError> {
        let (dialect, config, params) =
            request_arguments(dialect, config, now_ms, created_unix, id_seed)?;
        let entropy: [u8; 32] = entropy.try_into().map_err(|_| {
            RawError::new(
                Code::InvalidArgument,
                format!("entropy must be 32 random bytes, not {}", entropy.len()),
            )
        })?;
        let caller = CallerArguments::new(owner_key, caller, client_session, client_agent);
        let turn = self.connection.start_conversation_turn(
            dialect,
            body,
            &config,
            params,
            caller.caller(),
            entropy,
        );
        self.turns.push(turn);
        Ok(turn.get() as f64)
    }

    /// A request to the MCP endpoint under path segment `token`, with `authorization`
    /// (the `Authorization` header's value): the exchange's number, or a refusal as the
    /// negative of the HTTP status to answer (-404: no such server; -401: the wrong
    /// secret).
    #[wasm_bindgen(js_name = handleMcp)]
    #[allow(clippy::too_many_arguments)]
    pub fn handle_mcp(
        &mut self,
        token: &str,
        authorization: Option<Vec<u8>>,
        method: String,
        accept: Option<String>,
        content_type: Option<String>,
        session_id: Option<String>,
        protocol_version: Option<String>,
        body: &[u8],
        now_ms: f64,
    ) -> Result<f64, RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        let request = RequestArguments {
            method,
            accept,
            content_type,
            session_id,
            protocol_version,
        };
        // Exchanges of servers that are gone are let go here too, so that the list stays
        // bounded whether or not the caller asks.
        let connection = &self.connection;
        self.exchanges
            .retain(|&(_, e)| connection.is_mcp_server_open(e));
        match self.connection.handle_mcp(
            token,
            authorization.as_deref(),
            &request.request(body),
            now_ms,
        ) {
            Ok(exchange) => {
                self.last_exchange += 1.0;
                self.exchanges.push((self.last_exchange, exchange));
                Ok(self.last_exchange)
            }
            Err(refusal) => Ok(-f64::from(refusal.status())),
        }
    }

    /// The agent's HTTP connection of `exchange` closed (an unknown exchange: nothing).
    #[wasm_bindgen(js_name = mcpExchangeGone)]
    pub fn mcp_exchange_gone(&mut self, exchange: f64, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        if let Some(index) = self.exchange_index(exchange) {
            let (_, id) = self.exchanges.remove(index);
            self.connection.mcp_exchange_gone(id, now_ms);
        }
        Ok(())
    }

    /// The client of `turn` hung up (an unknown or ended turn: nothing happens).
    #[wasm_bindgen(js_name = clientGone)]
    pub fn client_gone(&mut self, turn: f64, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        if let Some(index) = self.index(turn) {
            self.connection.client_gone(self.turns[index], now_ms);
        }
        Ok(())
    }

    // Outputs.

    /// Bytes for the agent's stdin, or nothing.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.connection.poll_transmit().map(<[u8]>::to_vec)
    }

    /// A turn that has output, each named at most once between two inputs; nothing when
    /// no other turn has any.
    #[wasm_bindgen(js_name = pollReady)]
    pub fn poll_ready(&mut self) -> Option<f64> {
        self.connection.poll_ready().map(|turn| turn.get() as f64)
    }

    /// The next output of `turn` as one record (empty: none until the next input, or
    /// never again).
    #[wasm_bindgen(js_name = pollOutput)]
    pub fn poll_output(&mut self, turn: f64) -> Vec<u8> {
        self.outputs(turn, 1)
    }

    /// Every pending output of `turn`, as records (empty: none).
    #[wasm_bindgen(js_name = drainTurn)]
    pub fn drain_turn(&mut self, turn: f64) -> Vec<u8> {
        self.outputs(turn, usize::MAX)
    }

    /// An MCP exchange that has output, or nothing.
    #[wasm_bindgen(js_name = pollMcpReady)]
    pub fn poll_mcp_ready(&mut self) -> Option<f64> {
        while let Some(exchange) = self.connection.poll_mcp_ready() {
            if let Some(&(number, _)) = self.exchanges.iter().find(|(_, e)| *e == exchange) {
                return Some(number);
            }
        }
        None
    }

    /// The next output of MCP exchange `exchange` as one record (empty: none until the
    /// next input, or never again).
    #[wasm_bindgen(js_name = pollMcpOutput)]
    pub fn poll_mcp_output(&mut self, exchange: f64) -> Vec<u8> {
        self.mcp_outputs(exchange, 1)
    }

    /// Every pending output of MCP exchange `exchange`, as records (empty: none).
    #[wasm_bindgen(js_name = drainMcp)]
    pub fn drain_mcp(&mut self, exchange: f64) -> Vec<u8> {
        self.mcp_outputs(exchange, usize::MAX)
    }

    /// Why the agent must be restarted (its process group killed, a new connection made),
    /// or nothing.
    #[wasm_bindgen(js_name = pollDecision)]
    pub fn poll_decision(&mut self) -> Option<String> {
        self.connection
            .poll_decision()
            .map(|decision| match decision {
                Decision::Restart { reason } => reason,
                // `Decision` may grow; until it does, every decision is a restart.
                _ => "the connection decided to restart".to_owned(),
            })
    }

    /// When `handleTimeout` is next due, on the caller's clock; nothing when no deadline
    /// is scheduled.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        // As the bridge's: exact as f64 below 2^53 ms.
        self.connection.poll_timeout().map(|ms| ms as f64)
    }

    /// Test only: panics while the connection is borrowed, as a bug inside it would.
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = testPanic)]
    pub fn test_panic(&mut self) {
        panic!("RawAcpConnection::test_panic");
    }
}

impl RawAcpConnection {
    /// Where the exchange numbered `exchange` is in `exchanges`.
    fn exchange_index(&self, exchange: f64) -> Option<usize> {
        self.exchanges
            .binary_search_by(|(n, _)| n.total_cmp(&exchange))
            .ok()
    }

    /// Up to `most` outputs of MCP exchange `exchange`, as records; the exchange is
    /// forgotten once its end is handed out.
    fn mcp_outputs(&mut self, exchange: f64, most: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(index) = self.exchange_index(exchange) else {
            return out;
        };
        let id = self.exchanges[index].1;
        for _ in 0..most {
            let Some(output) = self.connection.poll_mcp_output(id) else {
                break;
            };
            if mcp::encode(&mut out, &output) {
                self.exchanges.remove(index);
                break;
            }
        }
        out
    }

    /// Where the turn numbered `turn` is in `turns`.
    fn index(&self, turn: f64) -> Option<usize> {
        self.turns
            .binary_search_by(|t| (t.get() as f64).total_cmp(&turn))
            .ok()
    }

    /// Up to `most` outputs of `turn`, as records; the turn is forgotten once its `End`
    /// is handed out.
    fn outputs(&mut self, turn: f64, most: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(index) = self.index(turn) else {
            return out;
        };
        let id = self.turns[index];
        let mut ended = false;
        for _ in 0..most {
            let Some(output) = self.connection.poll_output(id) else {
                break;
            };
            ended = matches!(output, Output::End);
            encode(&mut out, &output);
            if ended {
                break;
            }
        }
        if ended {
            self.turns.remove(index);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] =
        br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

    #[test]
    fn turns_are_numbered_and_forgotten_after_their_end() {
        let mut connection = RawAcpConnection::new(None, 0.0).unwrap();
        assert!(connection.poll_transmit().is_some(), "initialize first");
        let first = connection
            .start_turn("chat-completions", BODY, None, 0.0, 1.0, 1)
            .unwrap();
        let refused = connection
            .start_turn("messages", b"{}", None, 0.0, 1.0, 2)
            .unwrap();
        assert!(refused > first);
        // The refused request is answered at once: head, body, end.
        let records = connection.drain_turn(refused);
        assert_eq!(records[0], 1, "a head first");
        assert_eq!(records.last(), Some(&4), "the end last");
        assert!(connection.drain_turn(refused).is_empty());
        assert_eq!(connection.turns.len(), 1, "the ended turn is forgotten");
        assert!(
            connection.poll_output(first + 100.0).is_empty(),
            "an unknown turn has nothing"
        );
        connection.client_gone(first + 0.5, 1.0).unwrap();
        assert_eq!(connection.active_turns(), 1, "a fraction names no turn");
    }

    #[test]
    fn misuse_is_refused_with_its_code() {
        use crate::error::Code;
        let mut connection = RawAcpConnection::new(Some("{}".into()), 0.0).unwrap();
        assert_eq!(
            RawAcpConnection::new(None, -1.0)
                .err()
                .unwrap()
                .code_value(),
            Code::InvalidArgument
        );
        assert_eq!(
            connection
                .start_turn("anthropic", BODY, None, 0.0, 1.0, 1)
                .unwrap_err()
                .code_value(),
            Code::InvalidArgument
        );
        connection.agent_exited_code(0, 1.0).unwrap();
        assert_eq!(
            connection.push_stdout(b"{}\n", 2.0).unwrap_err().code(),
            "afterExit"
        );
        assert_eq!(
            connection.agent_exited_signal(9, 2.0).unwrap_err().code(),
            "exitedTwice"
        );
        assert!(connection.is_dead());
        assert!(connection.poll_decision().is_some(), "a restart is decided");
    }

    #[test]
    fn conversation_turns_take_32_bytes_and_unknown_mcp_paths_are_refused() {
        let config = r#"{"mcpEndpoint":"http://127.0.0.1:1/mcp/","poolSize":0}"#;
        let mut connection = RawAcpConnection::new(Some(config.into()), 0.0).unwrap();
        let short = connection
            .start_conversation_turn(
                "chat-completions",
                BODY,
                None,
                0.0,
                1.0,
                1,
                None,
                None,
                None,
                None,
                &[0; 31],
            )
            .unwrap_err();
        assert!(short.message().contains("32"), "{}", short.message());
        let turn = connection
            .start_conversation_turn(
                "chat-completions",
                BODY,
                None,
                0.0,
                1.0,
                1,
                Some(b"key".to_vec()),
                None,
                Some("session".into()),
                None,
                &[7; 32],
            )
            .unwrap();
        assert_eq!(connection.turns.len(), 1);
        assert_eq!(connection.turns[0].get() as f64, turn);
        let refused = connection
            .handle_mcp(
                "nope",
                None,
                "POST".into(),
                None,
                None,
                None,
                None,
                b"{}",
                1.0,
            )
            .unwrap();
        assert_eq!(refused, -404.0);
        assert!(connection.drain_mcp(1.0).is_empty());
        assert!(!connection.has_mcp_server(1.0));
        let stats: serde_json::Value =
            serde_json::from_str(&connection.conversation_stats()).unwrap();
        assert_eq!(stats["resumed"], 0);
        assert_eq!(connection.parked_sessions(), 0);
    }
}
