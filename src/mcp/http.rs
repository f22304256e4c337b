//! MCP's Streamable HTTP transport, the part that is not JSON-RPC: what a request to the
//! MCP endpoint says in its method and headers, and the response each exchange gives —
//! a head, body bytes (one JSON answer, or an SSE stream of answers and keep-alive
//! comments), then the end.

use super::rpc;

/// An HTTP exchange's handle: one request to the MCP endpoint and its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExchangeId(pub(crate) u64);

impl ExchangeId {
    /// The number behind the handle: unique within its [`Server`](super::Server), rising
    /// in the order requests were handed in.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// One HTTP request to the MCP endpoint, as much of it as MCP reads. The adapter routes
/// only the endpoint's path here (other paths, such as an OAuth discovery probe, are its
/// 404), and has already checked Host, Origin and its secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpRequest<'a> {
    /// The method, as sent (`POST`, `GET`, `DELETE`, …).
    pub method: &'a str,
    /// The `Accept` header; several are joined with `, `.
    pub accept: Option<&'a str>,
    /// The `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// The `Mcp-Session-Id` header.
    pub session_id: Option<&'a str>,
    /// The `MCP-Protocol-Version` header.
    pub protocol_version: Option<&'a str>,
    /// The whole body (empty for `GET` and `DELETE`). The adapter may stop reading past
    /// [`Config::max_body_bytes`](super::Config::max_body_bytes) and hand in what it read:
    /// any longer body is answered 413.
    pub body: &'a [u8],
}

/// A response head: send it before any body byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head<'a> {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`: `application/json`, `text/event-stream` (then also send
    /// `Cache-Control: no-cache`, and flush each body chunk), or none for a response
    /// without a body.
    pub content_type: Option<&'static str>,
    /// `Mcp-Session-Id` to send: the session's id, on every successful answer from the
    /// `initialize` answer on.
    pub session_id: Option<&'a str>,
    /// `Allow` to send (with 405).
    pub allow: Option<&'static str>,
}

/// What an exchange's response does next. Drain with
/// [`Server::poll_exchange`](super::Server::poll_exchange).
#[derive(Debug, PartialEq, Eq)]
pub enum ExchangeOutput<'a> {
    /// Send the head (exactly once, first).
    Head(Head<'a>),
    /// Write these bytes to the body (and flush). Valid until the next call on the server.
    Body(&'a [u8]),
    /// End the response. Nothing follows, and the exchange is forgotten.
    End,
}

/// `application/json`.
pub(crate) const JSON: &str = "application/json";
/// `text/event-stream`.
pub(crate) const SSE: &str = "text/event-stream";
/// The methods the MCP endpoint serves, for `Allow`.
pub(crate) const ALLOWED: &str = "POST, DELETE";

/// One exchange's response, as it is produced.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub(crate) id: ExchangeId,
    status: u16,
    content_type: Option<&'static str>,
    /// Whether the head carries the session id.
    with_session: bool,
    allow: Option<&'static str>,
    head_taken: bool,
    /// Body bytes not yet taken; lent out by the last poll when `out_lent`.
    out: Vec<u8>,
    out_lent: bool,
    /// An SSE stream's answers still owed: the calls pending on it.
    pub(crate) awaiting: usize,
    /// When the next keep-alive comment is due (an SSE stream with calls pending).
    pub(crate) keep_alive_at: Option<u64>,
    /// Nothing more is written: `End` follows the body.
    ending: bool,
}

impl Exchange {
    /// A complete response: `status`, then `body` (with `content_type`) if any, then the end.
    pub(crate) fn answered(
        id: ExchangeId,
        status: u16,
        content_type: Option<&'static str>,
        with_session: bool,
        body: Vec<u8>,
    ) -> Exchange {
        Exchange {
            id,
            status,
            content_type,
            with_session,
            allow: None,
            head_taken: false,
            out: body,
            out_lent: false,
            awaiting: 0,
            keep_alive_at: None,
            ending: true,
        }
    }

    /// A refusal: `status` and a JSON-RPC error with no id (`code`, `message`) as body.
    pub(crate) fn refused(id: ExchangeId, status: u16, code: i64, message: &str) -> Exchange {
        let mut body = Vec::new();
        rpc::write_error(&mut body, None, code, message);
        Exchange::answered(id, status, Some(JSON), false, body)
    }

    /// 405 with `Allow`, no body.
    pub(crate) fn method_not_allowed(id: ExchangeId) -> Exchange {
        Exchange {
            allow: Some(ALLOWED),
            ..Exchange::answered(id, 405, None, false, Vec::new())
        }
    }

    /// An SSE stream (200) owing the answers of `awaiting` calls.
    pub(crate) fn stream(id: ExchangeId, awaiting: usize, keep_alive_at: Option<u64>) -> Exchange {
        Exchange {
            awaiting,
            keep_alive_at,
            ending: false,
            ..Exchange::answered(id, 200, Some(SSE), true, Vec::new())
        }
    }

    /// The body buffer to append to, its last loan over.
    fn out(&mut self) -> &mut Vec<u8> {
        if self.out_lent {
            crate::framing::reclaim(&mut self.out);
            self.out_lent = false;
        }
        &mut self.out
    }

    /// Appends one SSE event holding the JSON-RPC message `write` writes.
    pub(crate) fn push_message(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let out = self.out();
        out.extend_from_slice(b"event: message\ndata: ");
        write(out);
        out.extend_from_slice(b"\n\n");
    }

    /// Appends an SSE comment, which clients ignore and which keeps the connection busy.
    pub(crate) fn push_keep_alive(&mut self) {
        self.out().extend_from_slice(b": keepalive\n\n");
    }

    /// One call's answer was written or is no longer owed; the stream ends with the last.
    pub(crate) fn settle_one(&mut self, now_ms: u64, keep_alive_ms: u64) {
        self.awaiting = self.awaiting.saturating_sub(1);
        if self.awaiting == 0 {
            self.finish();
        } else if keep_alive_ms > 0 {
            self.keep_alive_at = Some(now_ms.saturating_add(keep_alive_ms));
        }
    }

    /// Nothing more is written; what is written is still taken, then `End`.
    pub(crate) fn finish(&mut self) {
        self.awaiting = 0;
        self.keep_alive_at = None;
        self.ending = true;
    }

    /// Whether a poll would give something.
    pub(crate) fn has_output(&self) -> bool {
        !self.head_taken || (!self.out.is_empty() && !self.out_lent) || self.ending
    }

    /// Whether everything was taken and nothing more comes: `End` is next.
    pub(crate) fn is_over(&mut self) -> bool {
        if self.out_lent {
            crate::framing::reclaim(&mut self.out);
            self.out_lent = false;
        }
        self.head_taken && self.out.is_empty() && self.ending
    }

    /// The head, then body bytes, or `None`; once [`is_over`](Self::is_over), the caller
    /// ends the exchange.
    pub(crate) fn poll<'a>(&'a mut self, session_id: &'a str) -> Option<ExchangeOutput<'a>> {
        if !self.head_taken {
            self.head_taken = true;
            return Some(ExchangeOutput::Head(Head {
                status: self.status,
                content_type: self.content_type,
                session_id: self.with_session.then_some(session_id),
                allow: self.allow,
            }));
        }
        if self.out_lent {
            crate::framing::reclaim(&mut self.out);
            self.out_lent = false;
        }
        if !self.out.is_empty() {
            self.out_lent = true;
            return Some(ExchangeOutput::Body(&self.out));
        }
        None
    }
}

/// Whether a media type list (an `Accept` header) admits `wanted` (`type/subtype`):
/// named exactly or by a wildcard (`type/*`, `*/*`), with a non-zero `q`.
pub(crate) fn accepts(accept: Option<&str>, wanted: &str) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    let (wanted_type, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    accept.split(',').any(|range| {
        let mut pieces = range.split(';');
        let media = pieces.next().unwrap_or("").trim();
        let zero = pieces.any(|param| {
            let (key, value) = param.split_once('=').unwrap_or((param, ""));
            key.trim().eq_ignore_ascii_case("q")
                && value.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
        });
        if zero {
            return false;
        }
        let Some((kind, sub)) = media.split_once('/') else {
            return false;
        };
        media.eq_ignore_ascii_case(wanted)
            || (sub == "*" && (kind == "*" || kind.eq_ignore_ascii_case(wanted_type)))
    })
}

/// Whether a `Content-Type` header names JSON (`application/json`, parameters allowed).
pub(crate) fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|media| media.trim().eq_ignore_ascii_case(JSON))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists_are_read_as_http_reads_them() {
        // As the recorded agents send them.
        for accept in [
            "application/json, text/event-stream",
            "text/event-stream, application/json",
        ] {
            assert!(accepts(Some(accept), JSON) && accepts(Some(accept), SSE));
        }
        assert!(accepts(Some("*/*"), SSE));
        assert!(accepts(Some("application/*;q=0.5"), JSON));
        assert!(accepts(Some("Application/JSON; charset=utf-8"), JSON));
        assert!(!accepts(Some("application/json"), SSE));
        assert!(!accepts(Some("text/event-stream;q=0, */*;q=0"), SSE));
        assert!(!accepts(Some("text/*"), JSON));
        assert!(!accepts(Some("application/jsonx"), JSON));
        assert!(!accepts(Some(""), JSON));
        assert!(!accepts(None, JSON));
    }

    #[test]
    fn json_content_types() {
        assert!(is_json(Some("application/json")));
        assert!(is_json(Some("application/json; charset=utf-8")));
        assert!(is_json(Some(" APPLICATION/JSON")));
        assert!(!is_json(Some("text/plain")));
        assert!(!is_json(Some("application/json-seq")));
        assert!(!is_json(None));
    }

    #[test]
    fn an_exchange_gives_head_body_end_and_nothing_after() {
        let mut exchange = Exchange::stream(ExchangeId(0), 1, Some(10));
        assert!(matches!(
            exchange.poll("s"),
            Some(ExchangeOutput::Head(Head {
                status: 200,
                content_type: Some(SSE),
                session_id: Some("s"),
                allow: None
            }))
        ));
        assert!(!exchange.is_over() && exchange.poll("s").is_none() && !exchange.has_output());
        exchange.push_keep_alive();
        assert!(exchange.has_output());
        assert_eq!(
            exchange.poll("s"),
            Some(ExchangeOutput::Body(b": keepalive\n\n"))
        );
        assert!(!exchange.has_output());
        exchange.push_message(|out| out.extend_from_slice(b"{}"));
        exchange.settle_one(20, 15);
        assert!(!exchange.is_over());
        assert_eq!(
            exchange.poll("s"),
            Some(ExchangeOutput::Body(b"event: message\ndata: {}\n\n"))
        );
        assert!(exchange.is_over());
    }
}
