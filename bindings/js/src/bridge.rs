//! `bridge::Bridge` for JavaScript: one request's state machine.
//!
//! Outputs cross as one byte string per drain, a sequence of records the TypeScript layer
//! reads back into `BridgeOutput` objects:
//!
//! ```text
//! head:  1, status (u16 LE), retryable (0 none, 1 false, 2 true), content-type length (u8), content type
//! body:  2, length (u32 LE), bytes
//! stop:  3
//! end:   4
//! respawn: 5
//! ```

use agentwire::bridge::{Bridge, BridgeParams, Caller, Config, Dialect, Output};
use agentwire::registry::{ConversationKeys, Owner};
use serde::Serialize;
use wasm_bindgen::prelude::wasm_bindgen;

use crate::config;
use crate::error::{Code, RawError, millis};
use crate::inputs::agent_inputs;
use crate::names;
use crate::registry::RawRegistry;

const HEAD: u8 = 1;
const BODY: u8 = 2;
const STOP_AGENT: u8 = 3;
const END: u8 = 4;
const RESPAWN: u8 = 5;

/// The dialect of its name in the package (`Dialect`): the API names of the routes.
pub(crate) fn dialect(name: &str) -> Result<Dialect, RawError> {
    names::parse(name).ok_or_else(|| {
        RawError::new(
            Code::InvalidArgument,
            format!("dialect must be {}", names::choices::<Dialect>("'", " or ")),
        )
    })
}

/// The per-request arguments a bridge is made from, as the package passes them (a new
/// `Bridge`, or a turn of an `AcpConnection`): the dialect's name, the JSON of the
/// package's `Config` (nothing: the defaults), now, `created` in Unix seconds and the id
/// seed.
pub(crate) fn request_arguments(
    dialect: &str,
    config: Option<String>,
    now_ms: f64,
    created_unix: f64,
    id_seed: u64,
) -> Result<(Dialect, Config, BridgeParams), RawError> {
    let dialect = self::dialect(dialect)?;
    let config = config::parse(config.as_deref())?;
    let params = BridgeParams {
        now_ms: millis(now_ms, "nowMs")?,
        created_unix: millis(created_unix, "created")?,
        id_seed,
    };
    Ok((dialect, config, params))
}

/// Who sends a request, as the package passes it: the key it authenticated with (nothing:
/// the local user) and its conversation's ids.
pub(crate) struct CallerArguments {
    owner_key: Option<Vec<u8>>,
    caller: Option<String>,
    client_session: Option<String>,
    client_agent: Option<String>,
}

impl CallerArguments {
    pub(crate) fn new(
        owner_key: Option<Vec<u8>>,
        caller: Option<String>,
        client_session: Option<String>,
        client_agent: Option<String>,
    ) -> CallerArguments {
        CallerArguments {
            owner_key,
            caller,
            client_session,
            client_agent,
        }
    }

    /// As the core takes it.
    pub(crate) fn caller(&self) -> Caller<'_> {
        Caller {
            owner: self
                .owner_key
                .as_deref()
                .map_or(Owner::LOCAL, Owner::from_key),
            keys: ConversationKeys {
                caller: self.caller.as_deref(),
                client_session: self.client_session.as_deref(),
                client_agent: self.client_agent.as_deref(),
            },
        }
    }
}

/// A bridge; the TypeScript `Bridge` wraps it.
#[wasm_bindgen]
pub struct RawBridge {
    bridge: Bridge,
}

agent_inputs!(RawBridge, bridge);

/// The invocation's text parts, as JSON (the prompt goes separately, as bytes).
#[derive(Serialize)]
struct InvocationJson<'a> {
    program: &'a str,
    args: &'a [String],
    env: &'a [(String, String)],
}

#[wasm_bindgen]
impl RawBridge {
    /// Validates `body`, a request of `dialect` (`chat-completions`, `responses`,
    /// `messages`), and prepares the run. `config` is the JSON of the package's `Config`
    /// (nothing: the defaults); `created_unix` the response's `created` in Unix seconds;
    /// `id_seed` the number the response and tool-call ids derive from.
    #[wasm_bindgen(constructor)]
    pub fn new(
        dialect: &str,
        body: &[u8],
        config: Option<String>,
        now_ms: f64,
        created_unix: f64,
        id_seed: u64,
    ) -> Result<RawBridge, RawError> {
        let (dialect, config, params) =
            request_arguments(dialect, config, now_ms, created_unix, id_seed)?;
        Ok(RawBridge {
            bridge: Bridge::new(dialect, body, &config, params),
        })
    }

    /// Like `new`, for a request that may continue a conversation of `registry`: it resumes
    /// the chat that answered the conversation so far, or runs fresh. `owner_key` is the
    /// key the request authenticated with (nothing: the local user); `caller`,
    /// `client_session` and `client_agent` are the conversation's ids.
    #[wasm_bindgen(js_name = inConversation)]
    #[allow(clippy::too_many_arguments)]
    pub fn in_conversation(
        dialect: &str,
        body: &[u8],
        config: Option<String>,
        now_ms: f64,
        created_unix: f64,
        id_seed: u64,
        registry: &mut RawRegistry,
        owner_key: Option<Vec<u8>>,
        caller: Option<String>,
        client_session: Option<String>,
        client_agent: Option<String>,
    ) -> Result<RawBridge, RawError> {
        let (dialect, config, params) =
            request_arguments(dialect, config, now_ms, created_unix, id_seed)?;
        let caller = CallerArguments::new(owner_key, caller, client_session, client_agent);
        Ok(RawBridge {
            bridge: Bridge::in_conversation(
                dialect,
                body,
                &config,
                params,
                &mut registry.registry,
                caller.caller(),
            ),
        })
    }

    // Getters.

    /// `{"program", "args", "env": [[name, value], …]}`, or nothing when the request was
    /// rejected.
    pub fn invocation(&self) -> Option<String> {
        let invocation = self.bridge.invocation()?;
        let json = InvocationJson {
            program: &invocation.program,
            args: &invocation.args,
            env: &invocation.env,
        };
        Some(serde_json::to_string(&json).expect("an invocation serializes"))
    }

    /// The prompt to write to the agent's stdin, or nothing when the request was rejected.
    #[wasm_bindgen(js_name = invocationStdin)]
    pub fn invocation_stdin(&self) -> Option<Vec<u8>> {
        self.bridge.invocation().map(|i| i.stdin.clone())
    }

    /// Whether the response is a stream.
    #[wasm_bindgen(js_name = isStream)]
    pub fn is_stream(&self) -> bool {
        self.bridge.is_stream()
    }

    /// Whether the end was handed out.
    #[wasm_bindgen(js_name = isEnded)]
    pub fn is_ended(&self) -> bool {
        self.bridge.is_ended()
    }

    /// The agent's session id, once seen.
    #[wasm_bindgen(js_name = sessionId)]
    pub fn session_id(&self) -> Option<String> {
        self.bridge.session_id().map(str::to_owned)
    }

    // Inputs (and those of `agent_inputs!`).

    /// The client hung up.
    #[wasm_bindgen(js_name = clientGone)]
    pub fn client_gone(&mut self, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.bridge.client_gone(now_ms);
        Ok(())
    }

    /// Gives the request's place in its conversation back to `registry` (parked when the
    /// answer finished and reached the client, released otherwise).
    #[wasm_bindgen(js_name = endConversationTurn)]
    pub fn end_conversation_turn(
        &mut self,
        registry: &mut RawRegistry,
        now_ms: f64,
    ) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.bridge
            .end_conversation_turn(&mut registry.registry, now_ms);
        Ok(())
    }

    // Outputs.

    /// The next output as one record (empty: none until the next input).
    #[wasm_bindgen(js_name = pollOutput)]
    pub fn poll_output(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(output) = self.bridge.poll_output() {
            encode(&mut out, &output);
        }
        out
    }

    /// Every pending output, as records (empty: none).
    pub fn drain(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(output) = self.bridge.poll_output() {
            encode(&mut out, &output);
        }
        out
    }

    /// When `handleTimeout` is next due, on the caller's clock; nothing when no deadline
    /// is scheduled.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        // Deadlines are sums of caller times and configured durations: exact as f64 below
        // 2^53 ms (285,000 years).
        self.bridge.poll_timeout().map(|ms| ms as f64)
    }

    /// Test only: panics while the bridge is borrowed, as a bug inside it would.
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = testPanic)]
    pub fn test_panic(&mut self) {
        panic!("RawBridge::test_panic");
    }
}

/// Appends `output` to `out` as one record (the module's doc lists them).
pub(crate) fn encode(out: &mut Vec<u8>, output: &Output<'_>) {
    match output {
        Output::Head(head) => {
            out.push(HEAD);
            out.extend_from_slice(&head.status.to_le_bytes());
            out.push(match head.retryable {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            });
            let content_type = head.content_type.as_bytes();
            // `text/event-stream` or `application/json`: far below 256 bytes.
            out.push(content_type.len() as u8);
            out.extend_from_slice(content_type);
        }
        Output::Body(bytes) => {
            out.push(BODY);
            // A wasm32 buffer is below 4 GiB.
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        Output::StopAgent => out.push(STOP_AGENT),
        Output::Respawn => out.push(RESPAWN),
        Output::End => out.push(END),
    }
}
