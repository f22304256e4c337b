//! The MCP endpoint on the proxy's own listener, with `--agent-protocol acp`: each
//! session given a request's client tools has an MCP server of its own at
//! `/mcp/<token>` ([`agentwire::acp::Connection::handle_mcp`]), which the agent calls for
//! those tools.
//!
//! ```text
//!  agent ── POST /mcp/<token> ──► Host, Origin (every route's checks; no API key)
//!        ──► body (at most body_limit) ──► Warm::mcp_request ──► the core: the secret, the server
//!        ◄── head, then JSON or an SSE stream (keep-alives while a call waits) ◄── Warm::poll_mcp
//! ```
//!
//! - **Credentials.** The agent has no API key: the bearer secret the session's
//!   `session/new` gave it is the credential, compared in constant time by the core (401
//!   when wrong, 404 for a token no session has). Host and Origin are checked as on every
//!   route, so a web page can reach none of it.
//! - **Paths.** Only `/mcp/<token>` (`POST`, `GET`, `DELETE`) is the endpoint. Anything
//!   else under `/mcp`, and the OAuth discovery probes Codex sends before `initialize`
//!   (`GET /.well-known/oauth-authorization-server…`), is 404, never a 401 (which would
//!   start an OAuth flow).
//! - **Bounds.** A body is read within `--request-timeout-ms` and at most
//!   [`body_limit`] bytes. An answer may be an SSE stream that stays open while the
//!   client runs its tool (minutes): the request deadlines end with the request, and the
//!   stream's waits are bounded by the core's keep-alives (every 15 s), by the session's
//!   end (the registry's time to live, shutdown), and by `--write-timeout-ms` on every
//!   write. The agent hanging up is [`Warm::mcp_gone`](crate::acp::Warm::mcp_gone).
//! - **Where.** The agent runs on this machine: it is given a loopback URL of the port
//!   actually bound ([`endpoint`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use agentwire::acp::McpRefusal;
use agentwire::mcp::{Head, HttpRequest};

use crate::Settings;
use crate::http::{Reply, RequestHead, ResponseContext};

/// The endpoint's path; a session's token follows.
pub const PATH: &str = "/mcp/";

/// The token `path` names, if it is the endpoint (`/mcp/<token>`, one trailing `/`
/// allowed).
pub fn token(path: &str) -> Option<&str> {
    let path = path.strip_suffix('/').unwrap_or(path);
    let token = path.strip_prefix(PATH)?;
    (!token.is_empty() && !token.contains('/')).then_some(token)
}

/// Whether `path` is the endpoint or around it (`/mcp`, `/mcp/…`, `/.well-known/…`):
/// answered without the API key.
pub fn is_mcp_path(path: &str) -> bool {
    path == "/mcp" || path.starts_with(PATH) || path.starts_with("/.well-known/")
}

/// The URL the agent is given, a session's token to be appended: loopback on the port
/// `bound`, or the address itself when the listener is on one address that is neither
/// loopback nor unspecified (the only one that reaches it).
pub fn endpoint(bound: SocketAddr) -> String {
    let ip = match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() || ip.is_loopback() => {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
        IpAddr::V6(ip) if ip.is_unspecified() || ip.is_loopback() => {
            IpAddr::V6(Ipv6Addr::LOCALHOST)
        }
        ip => ip,
    };
    format!("http://{}{PATH}", SocketAddr::new(ip, bound.port()))
}

/// The largest MCP request body read: the MCP servers' own limit, or `--max-body-bytes`
/// when lower.
pub fn body_limit(settings: &Settings) -> usize {
    let api = settings.config.request_limits.max_body_bytes;
    let mcp = settings.acp.as_ref().map(|acp| &acp.config.mcp);
    let mcp = mcp.or(settings.live.as_ref().map(|live| &live.config.mcp));
    mcp.map_or(api, |mcp| mcp.max_body_bytes.min(api))
}

/// What MCP reads of a request's head, owned so that it outlives the head's borrow
/// while the body is read.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    method: String,
    /// Every `Accept` field, joined with `, `.
    accept: Option<String>,
    content_type: Option<String>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// The `Authorization` field, which carries the session's secret.
    pub authorization: Option<Vec<u8>>,
}

impl Fields {
    /// The fields of `head`; a repeated field other than `Accept` counts as absent.
    pub fn of(head: &RequestHead<'_>) -> Fields {
        let text = |name| {
            head.one(name)
                .and_then(|v| std::str::from_utf8(v).ok())
                .map(|v| v.trim().to_owned())
        };
        let accept: Vec<&str> = head
            .all("accept")
            .filter_map(|v| std::str::from_utf8(v).ok())
            .collect();
        Fields {
            method: head.method.to_owned(),
            accept: (!accept.is_empty()).then(|| accept.join(", ")),
            content_type: text("content-type"),
            session_id: text("mcp-session-id"),
            protocol_version: text("mcp-protocol-version"),
            authorization: head.one("authorization").map(<[u8]>::to_vec),
        }
    }

    /// The request as the core takes it, with `body`.
    pub fn request<'a>(&'a self, body: &'a [u8]) -> HttpRequest<'a> {
        HttpRequest {
            method: &self.method,
            accept: self.accept.as_deref(),
            content_type: self.content_type.as_deref(),
            session_id: self.session_id.as_deref(),
            protocol_version: self.protocol_version.as_deref(),
            body,
        }
    }
}

/// An MCP response head as the proxies write it: its status, whether an SSE stream
/// follows (its body written as it comes), and its headers. A stream is marked
/// uncacheable and unbufferable, so that every keep-alive reaches the agent as it is
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// HTTP status.
    pub status: u16,
    /// Whether the body is an SSE stream.
    pub stream: bool,
    /// Every header but the body's framing.
    pub headers: Vec<(&'static str, String)>,
}

impl ResponseHead {
    /// The head the core gave, with the headers every response to the request carries.
    pub fn of(head: &Head<'_>, context: &ResponseContext) -> ResponseHead {
        let stream = head.content_type == Some("text/event-stream");
        let mut headers = Vec::new();
        if let Some(content_type) = head.content_type {
            headers.push(("content-type", content_type.to_owned()));
        }
        if stream {
            headers.push(("cache-control", "no-cache".to_owned()));
            headers.push(("x-accel-buffering", "no".to_owned()));
        }
        if let Some(session) = head.session_id {
            headers.push(("mcp-session-id", session.to_owned()));
        }
        if let Some(allow) = head.allow {
            headers.push(("allow", allow.to_owned()));
        }
        headers.extend(
            context
                .headers()
                .map(|(name, value)| (name, value.to_owned())),
        );
        ResponseHead {
            status: head.status,
            stream,
            headers,
        }
    }
}

/// 32 bytes of the operating system's randomness, from which an agent session's MCP
/// server takes its path and secret; a 500 reply when there are none.
pub fn entropy() -> Result<[u8; 32], Reply> {
    use std::io::Read;
    let mut bytes = [0; 32];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    match read {
        Ok(()) => Ok(bytes),
        Err(e) => {
            tracing::error!(%e, "cannot read /dev/urandom");
            let error = agentwire::api::ErrorReply::new(
                agentwire::api::ErrorKind::Internal,
                "The server could not draw the random secret of an agent session.",
                "server_error",
            );
            Err(Reply::error(500, error))
        }
    }
}

/// The answer to a request no session's server takes: 404 for an unknown token, 401
/// (with `WWW-Authenticate: Bearer`) without the session's secret; a JSON-RPC error body.
pub fn refused(refusal: McpRefusal) -> Reply {
    let status = refusal.status();
    let message = match refusal {
        McpRefusal::Unauthorized => "This MCP server needs its session's bearer secret.",
        _ => "No MCP server here: its session has ended, or never was.",
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": message},
    });
    let mut reply = Reply::json(status, body.to_string().into_bytes());
    if status == 401 {
        reply
            .headers
            .push(("www-authenticate", "Bearer".to_owned()));
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_and_its_tokens() {
        assert_eq!(token("/mcp/0a1b2c"), Some("0a1b2c"));
        assert_eq!(token("/mcp/0a1b2c/"), Some("0a1b2c"));
        for path in [
            "/mcp",
            "/mcp/",
            "/mcp//",
            "/mcp/a/b",
            "/v1/mcp/a",
            "/mcpx/a",
        ] {
            assert_eq!(token(path), None, "{path}");
        }
        for path in [
            "/mcp",
            "/mcp/",
            "/mcp/a/b",
            "/.well-known/oauth-authorization-server",
        ] {
            assert!(is_mcp_path(path), "{path}");
        }
        for path in ["/v1/chat/completions", "/mcpx", "/health", "/well-known/x"] {
            assert!(!is_mcp_path(path), "{path}");
        }
    }

    #[test]
    fn the_agent_is_given_loopback_unless_the_listener_is_on_one_other_address() {
        let url = |addr: &str| endpoint(addr.parse().unwrap());
        assert_eq!(url("127.0.0.1:4000"), "http://127.0.0.1:4000/mcp/");
        assert_eq!(url("0.0.0.0:4000"), "http://127.0.0.1:4000/mcp/");
        assert_eq!(url("[::]:4000"), "http://[::1]:4000/mcp/");
        assert_eq!(url("[::1]:4000"), "http://[::1]:4000/mcp/");
        assert_eq!(url("192.168.1.5:4000"), "http://192.168.1.5:4000/mcp/");
    }

    #[test]
    fn heads_carry_the_session_and_mark_streams() {
        let context = ResponseContext::default();
        let stream = ResponseHead::of(
            &Head {
                status: 200,
                content_type: Some("text/event-stream"),
                session_id: Some("abc"),
                allow: None,
            },
            &context,
        );
        assert!(stream.stream);
        for header in [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            ("mcp-session-id", "abc"),
        ] {
            assert!(
                stream.headers.contains(&(header.0, header.1.to_owned())),
                "{header:?}"
            );
        }
        let refused = ResponseHead::of(
            &Head {
                status: 405,
                content_type: None,
                session_id: None,
                allow: Some("POST, DELETE"),
            },
            &context,
        );
        assert!(!refused.stream);
        assert_eq!(refused.headers, [("allow", "POST, DELETE".to_owned())]);
    }

    #[test]
    fn refusals_say_why_in_json_rpc() {
        let context = ResponseContext::default();
        let reply = refused(McpRefusal::Unauthorized).render(&context);
        assert_eq!(reply.status, 401);
        assert!(
            reply
                .headers
                .iter()
                .any(|(n, v)| *n == "www-authenticate" && v == "Bearer")
        );
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(body["jsonrpc"], "2.0");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("secret")
        );
        assert_eq!(refused(McpRefusal::NotFound).render(&context).status, 404);
    }
}
