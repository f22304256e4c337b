//! Drives an `mcp::Server` as an adapter would, keeping what came out of it and checking
//! the output contract on every drain: per exchange the head first and once, body only
//! between head and end, at most one end, nothing after it; `poll_ready` names every
//! exchange that has output.
#![allow(dead_code)]

use std::collections::BTreeMap;

use agentwire::mcp::{ExchangeId, ExchangeOutput, HttpRequest, McpEvent, Server};
use serde_json::Value;

/// An owned response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedHead {
    pub status: u16,
    pub content_type: Option<&'static str>,
    pub session_id: Option<String>,
    pub allow: Option<&'static str>,
}

/// What one exchange's response was, so far.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub head: Option<OwnedHead>,
    pub body: Vec<u8>,
    pub ends: usize,
    /// Reported gone ([`Server::exchange_gone`]): no end is owed.
    pub gone: bool,
}

impl Response {
    pub fn status(&self) -> u16 {
        self.head.as_ref().expect("a head").status
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The JSON-RPC messages of an SSE body, in order.
    pub fn events(&self) -> Vec<Value> {
        let text = std::str::from_utf8(&self.body).unwrap();
        assert!(text.is_empty() || text.ends_with("\n\n"), "{text:?}");
        text.split_terminator("\n\n")
            .filter(|event| !event.starts_with(':'))
            .map(|event| {
                let data = event
                    .strip_prefix("event: message\ndata: ")
                    .unwrap_or_else(|| panic!("not a message event: {event:?}"));
                assert!(!data.contains('\n'));
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }

    /// The keep-alive comments of an SSE body.
    pub fn keep_alives(&self) -> usize {
        std::str::from_utf8(&self.body)
            .unwrap()
            .split_terminator("\n\n")
            .filter(|event| *event == ": keepalive")
            .count()
    }

    /// Every JSON-RPC message the response carried: a JSON body (one or a batch), or
    /// the SSE events.
    pub fn messages(&self) -> Vec<Value> {
        match self.head.as_ref().and_then(|h| h.content_type) {
            Some("text/event-stream") => self.events(),
            Some("application/json") => match self.json() {
                Value::Array(items) => items,
                one => vec![one],
            },
            _ => {
                assert!(self.body.is_empty());
                Vec::new()
            }
        }
    }
}

/// A server and everything it gave.
pub struct Driver {
    pub server: Server,
    pub responses: BTreeMap<ExchangeId, Response>,
    pub events: Vec<McpEvent>,
    pub stdout: Vec<u8>,
    pub now: u64,
}

impl Driver {
    pub fn new(server: Server) -> Driver {
        Driver {
            server,
            responses: BTreeMap::new(),
            events: Vec::new(),
            stdout: Vec::new(),
            now: 0,
        }
    }

    /// Drains every output, checking the contract.
    pub fn drain(&mut self) {
        while let Some(bytes) = self.server.poll_transmit() {
            assert!(!bytes.is_empty());
            self.stdout.extend_from_slice(bytes);
        }
        while let Some(event) = self.server.poll_event() {
            self.events.push(event);
        }
        while let Some(id) = self.server.poll_ready() {
            self.take(id);
        }
        // Nothing was left behind that poll_ready did not name.
        let ids: Vec<ExchangeId> = self.responses.keys().copied().collect();
        for id in ids {
            if let Some(output) = self.server.poll_exchange(id) {
                panic!("exchange {id:?} had output poll_ready did not name: {output:?}");
            }
        }
    }

    fn take(&mut self, id: ExchangeId) {
        let response = self.responses.entry(id).or_default();
        assert!(!response.gone, "output after exchange_gone");
        while let Some(output) = self.server.poll_exchange(id) {
            assert_eq!(response.ends, 0, "output after End: {output:?}");
            match output {
                ExchangeOutput::Head(head) => {
                    assert!(response.head.is_none(), "a second head");
                    response.head = Some(OwnedHead {
                        status: head.status,
                        content_type: head.content_type,
                        session_id: head.session_id.map(str::to_owned),
                        allow: head.allow,
                    });
                }
                ExchangeOutput::Body(bytes) => {
                    assert!(response.head.is_some(), "body before head");
                    assert!(!bytes.is_empty());
                    response.body.extend_from_slice(bytes);
                }
                ExchangeOutput::End => {
                    assert!(response.head.is_some(), "end before head");
                    response.ends += 1;
                }
            }
        }
    }

    /// Hands in an HTTP request at `now` and drains.
    pub fn http(&mut self, request: &HttpRequest<'_>, now: u64) -> ExchangeId {
        self.advance(now);
        let id = self.server.handle_http(request, now);
        self.responses.entry(id).or_default();
        self.drain();
        id
    }

    /// Pushes stdio bytes at `now` and drains.
    pub fn stdio(&mut self, bytes: &[u8], now: u64) {
        self.advance(now);
        self.server.push_stdio(bytes, now);
        self.drain();
    }

    /// Reports the exchange's connection gone at `now` and drains.
    pub fn gone(&mut self, id: ExchangeId, now: u64) {
        self.advance(now);
        self.server.exchange_gone(id, now);
        self.responses.entry(id).or_default().gone = true;
        self.drain();
    }

    /// Fires every deadline up to `now` at its own time.
    pub fn advance(&mut self, now: u64) {
        while let Some(deadline) = self.server.poll_timeout() {
            if deadline > now {
                break;
            }
            assert!(deadline >= self.now.min(deadline));
            self.server.handle_timeout(deadline);
            self.drain();
        }
        self.now = self.now.max(now);
    }

    /// The response of `id`.
    pub fn response(&self, id: ExchangeId) -> &Response {
        &self.responses[&id]
    }

    /// The events since the last call, taken.
    pub fn take_events(&mut self) -> Vec<McpEvent> {
        std::mem::take(&mut self.events)
    }

    /// The stdout lines since the last call, taken, as JSON.
    pub fn take_lines(&mut self) -> Vec<Value> {
        let stdout = std::mem::take(&mut self.stdout);
        let text = std::str::from_utf8(&stdout).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'));
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Checks that every exchange not reported gone has ended exactly once.
    pub fn assert_all_ended(&self) {
        for (id, response) in &self.responses {
            if !response.gone {
                assert_eq!(response.ends, 1, "exchange {id:?}: {response:?}");
            }
        }
    }
}

/// A POST as the recorded agents send it: JSON, accepting JSON and SSE.
pub fn post<'a>(session_id: Option<&'a str>, body: &'a [u8]) -> HttpRequest<'a> {
    HttpRequest {
        method: "POST",
        accept: Some("application/json, text/event-stream"),
        content_type: Some("application/json"),
        session_id,
        protocol_version: None,
        body,
    }
}
