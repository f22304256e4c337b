//! The HTTP surface, independent of the server library: who may ask, what they ask for,
//! and the replies the proxy writes itself.
//!
//! A server on the loopback interface is still reachable from every web page the user
//! opens: a page can send "simple" cross-origin requests (no preflight) and, through a DNS
//! name it rebinds to 127.0.0.1, even read the answers. So [`check`] runs, for every
//! request and in this order:
//!
//! 1. **Host.** It must name a loopback name (`localhost`, `*.localhost`), an IP address,
//!    or an `--allowed-host`; one `Host` field at most, and one is required in HTTP/1.1.
//!    A rebinding page's requests carry its own DNS name, so they stop here (400). IP
//!    addresses are safe to accept: a page can only be same-origin with an IP literal by
//!    being served from it.
//! 2. **Origin.** A request that says it comes from a web page (`Origin`) must come from
//!    an `--cors-origin`; any other is refused (403) before anything runs. Requests
//!    without `Origin` (SDKs, curl, editors) are not browsers' cross-origin requests.
//! 3. **Preflight.** `OPTIONS` from an allowed origin is answered with what it may do.
//! 4. **Authentication** (`--api-key`, as `Authorization: Bearer` or `x-api-key`), before
//!    anything is exposed: 401, except that `/health` still says the server is up (and
//!    nothing more) and `/api/hello`, Claude Code's probe, is answered empty. The MCP
//!    endpoint (`/mcp/<token>`, see [`mcp`](crate::mcp)) takes no key: its credential is
//!    the secret of the session it names, which the agent presents and the core checks.
//!    The paths around it (`/mcp…`, OAuth discovery's `/.well-known/…`) are 404 without a
//!    key too, never a 401 that would send an MCP client into an OAuth flow.
//! 5. **The route**: 404, 405, or the handler.
//! 6. **The media type** of a request body: `application/json` (415 otherwise), which a
//!    page cannot send cross-origin without a preflight.
//!
//! Every error the proxy writes itself is in the error shape of the route's API dialect
//! (an Anthropic body on `/v1/messages`, an OpenAI one elsewhere), so each client's SDK
//! raises its own typed error. Responses carry CORS headers only for an allowed `Origin`,
//! which they echo, and on the Messages routes a `request-id`.

use agentwire::anthropic;
use agentwire::api::{ErrorKind, ErrorReply};
use agentwire::bridge::{Dialect, Head};
use agentwire::registry::Owner;
use subtle::ConstantTimeEq;

use crate::connections::Lane;
use crate::framing::Version;
use crate::{Settings, flags::CorsOrigins};

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// An agent run in an API dialect: `POST /v1/chat/completions`, `POST /v1/responses`,
    /// `POST /v1/messages` (each also without `/v1`).
    Run(Dialect),
    /// `POST /v1/messages/count_tokens`: answered without an agent.
    CountTokens,
    /// `GET /v1/models` (or `/models`).
    Models,
    /// `GET /health`.
    Health,
    /// `HEAD /api/hello`: the reachability probe Claude Code sends before its requests.
    Hello,
    /// `POST`, `GET` or `DELETE` `/mcp/<token>`: the MCP server of the warm agent's
    /// session named by the token ([`mcp`](crate::mcp)).
    Mcp,
    /// `OPTIONS` on any path.
    Options,
    /// A path that does not exist.
    NotFound,
    /// A known path with the wrong method: the `Allow` header, and the path's dialect.
    MethodNotAllowed(&'static str, Dialect),
}

impl Route {
    /// The API dialect whose error shape the route's errors take: the dialect of its
    /// requests, and OpenAI's for everything else (the models list, unknown paths).
    pub fn dialect(self) -> Dialect {
        match self {
            Route::Run(dialect) | Route::MethodNotAllowed(_, dialect) => dialect,
            Route::CountTokens => Dialect::Messages,
            _ => Dialect::ChatCompletions,
        }
    }

    /// Whether the route reads a request body (and so needs it declared JSON).
    fn takes_body(self) -> bool {
        matches!(self, Route::Run(_) | Route::CountTokens)
    }
}

/// Routes `method` and `path` (without query).
pub fn route(method: &str, path: &str) -> Route {
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    if method == "OPTIONS" {
        return Route::Options;
    }
    if crate::mcp::token(path).is_some() {
        return match method {
            "POST" | "GET" | "DELETE" => Route::Mcp,
            _ => Route::MethodNotAllowed("POST, GET, DELETE", Dialect::ChatCompletions),
        };
    }
    // `/v1` is optional: clients configured with a base URL without it (`http://host`)
    // post to `/chat/completions`.
    let api = path
        .strip_prefix("/v1")
        .filter(|p| p.starts_with('/'))
        .unwrap_or(path);
    let (route, allow) = match api {
        "/chat/completions" => (Route::Run(Dialect::ChatCompletions), "POST, OPTIONS"),
        "/responses" => (Route::Run(Dialect::Responses), "POST, OPTIONS"),
        "/messages" => (Route::Run(Dialect::Messages), "POST, OPTIONS"),
        "/messages/count_tokens" => (Route::CountTokens, "POST, OPTIONS"),
        "/models" => (Route::Models, "GET, HEAD, OPTIONS"),
        _ => match path {
            "/health" => (Route::Health, "GET, HEAD, OPTIONS"),
            "/api/hello" => (Route::Hello, "GET, HEAD, OPTIONS"),
            _ => return Route::NotFound,
        },
    };
    let allowed = if route.takes_body() {
        method == "POST"
    } else {
        method == "GET" || method == "HEAD"
    };
    if allowed {
        route
    } else {
        Route::MethodNotAllowed(allow, route.dialect())
    }
}

/// A request-target (RFC 9112 §3.2) as routing and the `Host` check need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    /// The authority of an absolute-form target (`http://HOST/path`), which stands in for
    /// the `Host` field.
    pub authority: Option<&'a str>,
    /// The path, without query or fragment (`*` for `OPTIONS *`).
    pub path: &'a str,
}

impl<'a> Target<'a> {
    /// Reads an origin-form (`/path?query`), absolute-form (`http://host/path`) or
    /// asterisk-form (`*`) target; `None` for anything else.
    pub fn parse(raw: &'a str) -> Option<Target<'a>> {
        let path_of = |s: &'a str| s.split(['?', '#']).next().unwrap_or_default();
        if raw.starts_with('/') {
            return Some(Target {
                authority: None,
                path: path_of(raw),
            });
        }
        if raw == "*" {
            return Some(Target {
                authority: None,
                path: "*",
            });
        }
        let (scheme, rest) = raw.split_once("://")?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return None;
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(end);
        let path = path_of(rest);
        Some(Target {
            authority: Some(authority),
            path: if path.is_empty() { "/" } else { path },
        })
    }
}

/// A request head as [`check`] reads it, from either server library.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    /// The method.
    pub method: &'a str,
    /// The request-target.
    pub target: Target<'a>,
    /// The HTTP version.
    pub version: Version,
    /// Every header field line, in order, repeated names included.
    pub headers: &'a [(&'a str, &'a [u8])],
}

impl<'a> RequestHead<'a> {
    /// The values of every field named `name`.
    pub fn all(&self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// The value of the field named `name`, if there is exactly one.
    pub fn one(&self, name: &'a str) -> Option<&'a [u8]> {
        let mut values = self.all(name);
        let first = values.next()?;
        values.next().is_none().then_some(first)
    }

    /// Whether the client asked for `100 Continue` before sending its body.
    pub fn expects_continue(&self) -> bool {
        self.version == Version::Http11
            && self
                .one("expect")
                .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"100-continue"))
    }
}

/// What every response to one request carries besides its own headers: the CORS headers
/// (none, or the allowed `Origin` echoed), the dialect its errors are written in, and on
/// the Messages routes the `request-id` Anthropic's SDKs read into their errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseContext {
    origin: Option<String>,
    /// The dialect of the route's errors.
    pub dialect: Dialect,
    request_id: Option<String>,
}

impl ResponseContext {
    /// The context of request `id_seed` on `route`, before its `Origin` is known.
    pub fn new(route: Route, id_seed: u64) -> ResponseContext {
        let dialect = route.dialect();
        ResponseContext {
            origin: None,
            dialect,
            request_id: (dialect == Dialect::Messages).then(|| anthropic::request_id(id_seed)),
        }
    }

    /// The headers to add to a response.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let cors = self.origin.iter().flat_map(|origin| {
            [
                ("access-control-allow-origin", origin.as_str()),
                (
                    "access-control-expose-headers",
                    "x-should-retry, retry-after, x-request-id, request-id",
                ),
                ("vary", "origin"),
            ]
        });
        let id = self.request_id.iter().map(|id| ("request-id", id.as_str()));
        cors.chain(id)
    }
}

/// What [`check`] decided.
#[derive(Debug)]
pub struct Checked {
    /// What every response to this request carries.
    pub context: ResponseContext,
    /// What to do.
    pub outcome: Outcome,
    /// Whose request it is: the owner of the key it authenticated with ([`Owner::LOCAL`]
    /// when the server takes none); `None` when it did not authenticate.
    pub owner: Option<Owner>,
}

/// What the proxy does with a request that was checked.
#[derive(Debug)]
pub enum Outcome {
    /// Write this reply (a refusal, an error, a preflight, the probe's answer) and nothing
    /// else.
    Reply(Reply),
    /// Read the body and run the agent for a request in this dialect.
    Run(Dialect),
    /// Read the body and answer `count_tokens` ([`count_tokens`]).
    CountTokens,
    /// `/v1/models`.
    Models,
    /// `/health`; `detailed` when the caller may see more than "up".
    Health {
        /// Whether the caller is authenticated (or no key is configured).
        detailed: bool,
    },
    /// Read the body (at most [`mcp::body_limit`](crate::mcp::body_limit)) and hand the
    /// request to the MCP server of the session named by `token`.
    Mcp {
        /// The path segment naming the session's server.
        token: String,
    },
}

/// Runs the checks of the module docs, in their order, on a request head that arrived on
/// a connection of `lane`; `id_seed` is the request's (for its `request-id`).
pub fn check(settings: &Settings, head: &RequestHead<'_>, lane: Lane, id_seed: u64) -> Checked {
    let route = route(head.method, head.target.path);
    let mut context = ResponseContext::new(route, id_seed);
    let reply = |context: &ResponseContext, reply| Checked {
        context: context.clone(),
        outcome: Outcome::Reply(reply),
        owner: None,
    };
    // 1. Host.
    let hosts = head.all("host").count();
    let host = match (head.target.authority, head.one("host")) {
        // An absolute-form target's authority is the host (RFC 9112 §3.2.2).
        (Some(authority), _) if hosts <= 1 => Some(authority.as_bytes()),
        (None, Some(host)) => Some(host),
        (None, None) if hosts == 0 && head.version == Version::Http10 => None,
        _ => {
            return reply(
                &context,
                bad_host("A request needs exactly one Host header."),
            );
        }
    };
    if let Some(host) = host {
        if !host_allowed(host, &settings.allowed_hosts) {
            return reply(
                &context,
                bad_host(
                    "This Host is not allowed (see --allowed-host): requests must name the \
                     server by a loopback name or an IP address.",
                ),
            );
        }
    }
    // 2. Origin.
    if head.all("origin").next().is_some() {
        match head.one("origin") {
            Some(origin) if settings.cors_origins.allows(origin) => {
                context.origin = Some(String::from_utf8_lossy(origin).into_owned());
            }
            _ => return reply(&context, origin_not_allowed()),
        }
    }
    // 3. Preflight: it carries no credentials, and only allowed origins get this far.
    if route == Route::Options {
        let requested = head
            .one("access-control-request-headers")
            .and_then(|h| std::str::from_utf8(h).ok());
        let preflight = options(context.origin.is_some(), requested);
        return reply(&context, preflight);
    }
    // The MCP endpoint and the paths around it: no key (see the module docs).
    if crate::mcp::is_mcp_path(head.target.path) {
        let outcome = match route {
            _ if lane == Lane::Overflow => Outcome::Reply(too_many_connections()),
            Route::Mcp => Outcome::Mcp {
                token: crate::mcp::token(head.target.path)
                    .unwrap_or_default()
                    .to_owned(),
            },
            Route::MethodNotAllowed(allow, _) => {
                Outcome::Reply(method_not_allowed(head.method, head.target.path, allow))
            }
            _ => Outcome::Reply(not_found(head.method, head.target.path)),
        };
        return Checked {
            context,
            outcome,
            owner: None,
        };
    }
    // 4. Authentication.
    let owner = settings
        .auth
        .owner(head.one("authorization"), head.one("x-api-key"));
    if owner.is_none() {
        return match route {
            Route::Health => Checked {
                context,
                outcome: Outcome::Health { detailed: false },
                owner: None,
            },
            Route::Hello => reply(&context, hello()),
            _ => reply(&context, unauthorized()),
        };
    }
    // A connection over --max-connections is read only to answer /health.
    if lane == Lane::Overflow && route != Route::Health {
        return reply(&context, too_many_connections());
    }
    // 5. The route; 6. the body's media type.
    let outcome = match route {
        _ if route.takes_body() && !is_json(head.one("content-type")) => {
            Outcome::Reply(unsupported_media_type())
        }
        Route::Run(dialect) => Outcome::Run(dialect),
        Route::CountTokens => Outcome::CountTokens,
        Route::Models => Outcome::Models,
        Route::Health => Outcome::Health { detailed: true },
        Route::Hello => Outcome::Reply(hello()),
        Route::NotFound => Outcome::Reply(not_found(head.method, head.target.path)),
        Route::MethodNotAllowed(allow, _) => {
            Outcome::Reply(method_not_allowed(head.method, head.target.path, allow))
        }
        Route::Options | Route::Mcp => unreachable!("answered above"),
    };
    Checked {
        context,
        outcome,
        owner,
    }
}

/// Whether a `Host` value (`name[:port]`) may be served (see the module docs).
fn host_allowed(host: &[u8], allowed: &[String]) -> bool {
    let Ok(host) = std::str::from_utf8(host) else {
        return false;
    };
    let host = host.trim();
    // `[v6]:port`, `[v6]`, `name:port`, `name`.
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((v6, after))
                if after.is_empty() || after.strip_prefix(':').is_some_and(is_port) =>
            {
                return v6.parse::<std::net::Ipv6Addr>().is_ok();
            }
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        }
    };
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    {
        return false;
    }
    name == "localhost"
        || name.ends_with(".localhost")
        || allowed.iter().any(|a| {
            // `.example.com` allows example.com and every name under it.
            match a.strip_prefix('.') {
                Some(domain) => {
                    name == domain
                        || name
                            .strip_suffix(domain)
                            .is_some_and(|sub| sub.ends_with('.'))
                }
                None => name == *a,
            }
        })
}

fn is_port(port: &str) -> bool {
    port.is_empty() || (port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()))
}

/// `application/json`, with or without parameters (`; charset=utf-8`).
fn is_json(content_type: Option<&[u8]>) -> bool {
    content_type.is_some_and(|value| {
        let media = value.split(|&b| b == b';').next().unwrap_or_default();
        media.trim_ascii().eq_ignore_ascii_case(b"application/json")
    })
}

/// The keys requests must carry, if any are configured: any one of them lets a request
/// in, and each is an [`Owner`] of its own, whose conversations no other key continues.
pub struct Auth {
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl Auth {
    /// Requires one of `keys` (`Authorization: Bearer <key>` or `x-api-key: <key>`) when
    /// there are any.
    pub fn new(keys: Vec<String>) -> Auth {
        Auth {
            keys: keys.into_iter().map(String::into_bytes).collect(),
        }
    }

    /// Whether requests need a key.
    pub fn is_required(&self) -> bool {
        !self.keys.is_empty()
    }

    /// Whether a request with these `Authorization` and `x-api-key` header values may
    /// pass: see [`owner`](Self::owner).
    pub fn allows(&self, authorization: Option<&[u8]>, x_api_key: Option<&[u8]>) -> bool {
        self.owner(authorization, x_api_key).is_some()
    }

    /// Who a request with these `Authorization` and `x-api-key` header values is: the
    /// owner of the key it carries, [`Owner::LOCAL`] when no key is configured, `None`
    /// when it may not pass. OpenAI's SDKs send the key as a bearer token, Anthropic's (and
    /// Claude Code) as `x-api-key`; either one right is enough (the bearer token's key
    /// when both are). Tokens are compared in constant time with every key, so response
    /// timing does not reveal how much of a guess was right.
    pub fn owner(&self, authorization: Option<&[u8]>, x_api_key: Option<&[u8]>) -> Option<Owner> {
        if self.keys.is_empty() {
            return Some(Owner::LOCAL);
        }
        let bearer = authorization.and_then(|value| match value.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => {
                Some(value[7..].trim_ascii())
            }
            _ => None,
        });
        let header = x_api_key.map(<[u8]>::trim_ascii);
        let matches =
            |token: Option<&[u8]>, key: &[u8]| token.is_some_and(|t| bool::from(t.ct_eq(key)));
        let (mut by_bearer, mut by_header) = (None, None);
        // Every comparison is made, whatever the earlier ones gave, for the same reason.
        for key in &self.keys {
            let (bearer, header) = (matches(bearer, key), matches(header, key));
            if bearer && by_bearer.is_none() {
                by_bearer = Some(key);
            }
            if header && by_header.is_none() {
                by_header = Some(key);
            }
        }
        by_bearer.or(by_header).map(|key| Owner::from_key(key))
    }
}

/// A complete response the proxy writes itself (everything but a bridge's response),
/// before the request's [`ResponseContext`] renders it.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Headers besides `Content-Length`, the context's and an error's.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    body: ReplyBody,
    /// Whether the connection is closed after it (the request's framing cannot be
    /// trusted, or its body was not read).
    pub close: bool,
}

/// A reply's body: bytes, or an error the route's dialect writes.
#[derive(Debug)]
enum ReplyBody {
    Bytes(Vec<u8>),
    Error(ErrorReply),
}

/// A reply rendered for its request: every header, and the body.
#[derive(Debug)]
pub struct Rendered {
    /// HTTP status.
    pub status: u16,
    /// Every header but `Content-Length`.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Whether the connection is closed after it.
    pub close: bool,
}

impl Reply {
    /// A JSON reply.
    pub fn json(status: u16, body: Vec<u8>) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: ReplyBody::Bytes(body),
            close: false,
        }
    }

    /// An error reply with `status` (usually the class's own; 408 and 501 have no class
    /// of their own), and `x-should-retry` as the class says.
    pub fn error(status: u16, error: ErrorReply) -> Reply {
        Reply {
            status,
            headers: vec![
                ("content-type", "application/json".to_owned()),
                ("x-should-retry", error.retryable().to_string()),
            ],
            body: ReplyBody::Error(error),
            close: false,
        }
    }

    /// The same reply, closing the connection after it.
    pub fn closing(mut self) -> Reply {
        self.close = true;
        self
    }

    /// The reply as it is sent for a request of `context`: an error in the route's
    /// dialect, with the context's headers.
    pub fn render(self, context: &ResponseContext) -> Rendered {
        let body = match self.body {
            ReplyBody::Bytes(bytes) => bytes,
            ReplyBody::Error(error) => {
                let mut out = Vec::with_capacity(128 + error.message.len());
                context.dialect.write_error(&error, &mut out);
                out
            }
        };
        let mut headers = self.headers;
        headers.extend(
            context
                .headers()
                .map(|(name, value)| (name, value.to_owned())),
        );
        Rendered {
            status: self.status,
            headers,
            body,
            close: self.close,
        }
    }
}

fn refusal(kind: ErrorKind, message: impl Into<String>, code: &'static str) -> Reply {
    Reply::error(kind.status(), ErrorReply::new(kind, message, code))
}

/// 400 for a missing, repeated or foreign `Host`.
fn bad_host(message: &str) -> Reply {
    refusal(ErrorKind::InvalidRequest, message, "invalid_host").closing()
}

/// 403 for a request from a web page whose origin is not allowed.
fn origin_not_allowed() -> Reply {
    refusal(
        ErrorKind::PermissionDenied,
        "Requests from this web origin are not allowed. Start the server with \
         --cors-origin ORIGIN to allow a page to use it.",
        "origin_not_allowed",
    )
}

/// 401: no key, or the wrong one.
pub fn unauthorized() -> Reply {
    let mut reply = refusal(
        ErrorKind::Authentication,
        "Incorrect API key provided. Send it as `Authorization: Bearer <key>` or `x-api-key: <key>`.",
        "invalid_api_key",
    );
    reply
        .headers
        .push(("www-authenticate", "Bearer".to_owned()));
    reply
}

/// 404 for a path that does not exist.
pub fn not_found(method: &str, path: &str) -> Reply {
    refusal(
        ErrorKind::NotFound,
        format!("Invalid URL ({method} {path})"),
        "unknown_url",
    )
}

/// 405 for a known path with another method.
pub fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> Reply {
    let mut reply = refusal(
        ErrorKind::MethodNotAllowed,
        format!("Invalid method for URL ({method} {path}); allowed: {allow}"),
        "method_not_allowed",
    );
    reply.headers.push(("allow", allow.to_owned()));
    reply
}

/// 415 for a body that is not declared `application/json`.
fn unsupported_media_type() -> Reply {
    refusal(
        ErrorKind::UnsupportedMediaType,
        "The request body must be JSON, sent with `Content-Type: application/json`.",
        "unsupported_media_type",
    )
}

/// 413 for a body over the limit.
pub fn too_large(limit: usize) -> Reply {
    refusal(
        ErrorKind::RequestTooLarge,
        format!("Request body too large: the limit is {limit} bytes."),
        "request_too_large",
    )
    .closing()
}

/// 400 for a request the server cannot read (bad framing, bad encoding).
pub fn bad_request(message: &str) -> Reply {
    refusal(ErrorKind::InvalidRequest, message, "bad_request").closing()
}

/// 501 for a transfer coding the server does not implement.
pub fn not_implemented(message: &str) -> Reply {
    let error = ErrorReply::new(ErrorKind::InvalidRequest, message, "not_implemented");
    Reply::error(501, error).closing()
}

/// 408 when the request (head and body) did not arrive within `--request-timeout-ms`.
pub fn request_timeout() -> Reply {
    let error = ErrorReply::new(
        ErrorKind::Timeout,
        "The request did not arrive in time (see --request-timeout-ms).",
        "request_timeout",
    );
    Reply::error(408, error).closing()
}

/// 429 when every agent slot is taken.
pub fn busy(max: u32) -> Reply {
    let mut reply = refusal(
        ErrorKind::RateLimited,
        format!("Too many requests: {max} agent runs are already in progress. Retry shortly."),
        "rate_limit_exceeded",
    );
    reply.headers.push(("retry-after", "1".to_owned()));
    reply
}

/// 503 on a connection over `--max-connections`.
fn too_many_connections() -> Reply {
    let mut reply = refusal(
        ErrorKind::Unavailable,
        "Too many open connections. Retry shortly.",
        "too_many_connections",
    );
    reply.headers.push(("retry-after", "1".to_owned()));
    reply.closing()
}

/// 503 while the server shuts down.
pub fn shutting_down() -> Reply {
    refusal(
        ErrorKind::Unavailable,
        "The server is shutting down.",
        "shutting_down",
    )
}

/// 503 when the model list cannot be had.
pub fn models_unavailable(why: &str) -> Reply {
    refusal(
        ErrorKind::Unavailable,
        format!("Could not list models: {why}"),
        "models_unavailable",
    )
}

/// `count_tokens` for a request body: a 400 naming the field of a bad body, else the 404
/// that says tokens cannot be counted here ([`anthropic::count_tokens`]). It never runs
/// an agent.
pub fn count_tokens(body: &[u8], limits: &agentwire::api::RequestLimits) -> Reply {
    let error = anthropic::count_tokens(body, limits);
    Reply::error(error.status(), error)
}

/// `HEAD /api/hello`: the server is reachable.
fn hello() -> Reply {
    Reply {
        status: 200,
        headers: Vec::new(),
        body: ReplyBody::Bytes(Vec::new()),
        close: false,
    }
}

/// 204 for `OPTIONS`: for an allowed origin's preflight, what the browser asked for.
fn options(preflight: bool, requested_headers: Option<&str>) -> Reply {
    let mut headers = vec![("allow", "GET, HEAD, POST, OPTIONS".to_owned())];
    if preflight {
        headers.extend([
            (
                "access-control-allow-methods",
                "GET, POST, OPTIONS".to_owned(),
            ),
            (
                "access-control-allow-headers",
                requested_headers
                    .filter(|h| !h.trim().is_empty())
                    .unwrap_or("authorization, x-api-key, content-type")
                    .to_owned(),
            ),
            ("access-control-max-age", "7200".to_owned()),
        ]);
    }
    Reply {
        status: 204,
        headers,
        body: ReplyBody::Bytes(Vec::new()),
        close: false,
    }
}

/// `GET /health`: that the server is up, and for `detailed` callers what it runs (never
/// where the agent binary lives), the warm agent's state (`warm`, with
/// `--agent-protocol acp`) and the conversations' counters (`conversations`).
pub fn health(
    settings: &Settings,
    detailed: bool,
    in_flight: u32,
    warm: Option<serde_json::Value>,
    conversations: Option<serde_json::Value>,
) -> Reply {
    let body = if detailed {
        let mut body = serde_json::json!({
            "status": "ok",
            "agentwire": env!("CARGO_PKG_VERSION"),
            "agent": {
                "version": settings.agent.version,
                "demo": settings.agent.demo,
            },
            "in_flight": in_flight,
            "max_concurrent": settings.max_concurrent,
        });
        if let Some(warm) = warm {
            body["acp"] = warm;
        }
        if let Some(conversations) = conversations {
            body["conversations"] = conversations;
        }
        body
    } else {
        serde_json::json!({"status": "ok"})
    };
    Reply::json(200, body.to_string().into_bytes())
}

/// The headers of a bridge's response head. Streams are marked uncacheable and
/// unbufferable, so every frame reaches the client as it is written, through reverse
/// proxies too.
pub fn head_headers(head: &Head, context: &ResponseContext) -> Vec<(&'static str, String)> {
    let mut headers = vec![("content-type", head.content_type.to_owned())];
    if head.content_type == "text/event-stream" {
        headers.push(("cache-control", "no-cache".to_owned()));
        headers.push(("x-accel-buffering", "no".to_owned()));
    }
    if let Some(retryable) = head.retryable {
        headers.push(("x-should-retry", retryable.to_string()));
    }
    headers.extend(
        context
            .headers()
            .map(|(name, value)| (name, value.to_owned())),
    );
    headers
}

/// The reason phrase of the statuses the proxies send.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

impl CorsOrigins {
    /// Whether a request with this `Origin` may be served.
    pub fn allows(&self, origin: &[u8]) -> bool {
        let origin = origin.trim_ascii();
        self.any
            || self
                .exact
                .iter()
                .any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(origin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let chat = Route::Run(Dialect::ChatCompletions);
        assert_eq!(route("POST", "/v1/chat/completions"), chat);
        assert_eq!(route("POST", "/chat/completions"), chat);
        assert_eq!(route("POST", "/v1/chat/completions/"), chat);
        assert_eq!(
            route("POST", "/v1/responses"),
            Route::Run(Dialect::Responses)
        );
        assert_eq!(route("POST", "/responses"), Route::Run(Dialect::Responses));
        assert_eq!(route("POST", "/v1/messages"), Route::Run(Dialect::Messages));
        assert_eq!(
            route("POST", "/v1/messages/count_tokens"),
            Route::CountTokens
        );
        assert_eq!(route("GET", "/v1/models"), Route::Models);
        assert_eq!(route("GET", "/health"), Route::Health);
        assert_eq!(route("HEAD", "/api/hello"), Route::Hello);
        assert_eq!(route("OPTIONS", "/anything"), Route::Options);
        for method in ["POST", "GET", "DELETE"] {
            assert_eq!(route(method, "/mcp/0123abcd"), Route::Mcp, "{method}");
        }
        assert_eq!(
            route("PUT", "/mcp/0123abcd"),
            Route::MethodNotAllowed("POST, GET, DELETE", Dialect::ChatCompletions)
        );
        for path in [
            "/mcp",
            "/mcp/",
            "/mcp/a/b",
            "/mcp//",
            "/v1/mcp/x",
            "/.well-known/oauth-authorization-server",
            "/.well-known/oauth-authorization-server/mcp/0123abcd",
        ] {
            assert_eq!(route("GET", path), Route::NotFound, "{path}");
        }
        for path in [
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/messages",
            "/v1/messages/count_tokens",
        ] {
            assert_eq!(
                route("GET", path),
                Route::MethodNotAllowed("POST, OPTIONS", route("POST", path).dialect()),
                "{path}"
            );
        }
        assert_eq!(
            route("DELETE", "/health"),
            Route::MethodNotAllowed("GET, HEAD, OPTIONS", Dialect::ChatCompletions)
        );
        assert_eq!(
            route("POST", "/api/hello"),
            Route::MethodNotAllowed("GET, HEAD, OPTIONS", Dialect::ChatCompletions)
        );
        for path in [
            "/",
            "/v1/completions",
            "/v1",
            "/v1/health",
            "/v1/api/hello",
            "/v1v1/messages",
            "/v1/messages/batches",
        ] {
            assert_eq!(route("POST", path), Route::NotFound, "{path}");
        }
    }

    #[test]
    fn errors_take_the_route_dialect() {
        assert_eq!(route("POST", "/v1/messages").dialect(), Dialect::Messages);
        assert_eq!(
            route("POST", "/v1/messages/count_tokens").dialect(),
            Dialect::Messages
        );
        assert_eq!(route("POST", "/v1/responses").dialect(), Dialect::Responses);
        assert_eq!(
            route("GET", "/v1/models").dialect(),
            Dialect::ChatCompletions
        );
        let render = |route: Route| {
            let reply = unauthorized().render(&ResponseContext::new(route, 7));
            let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
            let has = |name: &str| reply.headers.iter().any(|(n, _)| *n == name);
            (reply.status, body, has("request-id"), has("x-should-retry"))
        };
        let (status, body, request_id, retry) = render(Route::Run(Dialect::Messages));
        assert_eq!((status, request_id, retry), (401, true, true));
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "authentication_error");
        let (status, body, request_id, _) = render(Route::Run(Dialect::Responses));
        assert_eq!((status, request_id), (401, false));
        assert_eq!(body["error"]["type"], "authentication_error");
        assert_eq!(body["error"]["code"], "invalid_api_key");
        // 408 and 501 keep their status in every dialect.
        for route in [Route::CountTokens, Route::Run(Dialect::ChatCompletions)] {
            let context = ResponseContext::new(route, 1);
            assert_eq!(request_timeout().render(&context).status, 408);
            assert_eq!(not_implemented("x").render(&context).status, 501);
        }
    }

    #[test]
    fn count_tokens_never_counts() {
        let limits = agentwire::api::RequestLimits::default();
        let context = ResponseContext::new(Route::CountTokens, 3);
        let valid = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let reply = count_tokens(valid, &limits).render(&context);
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(reply.status, 404);
        assert_eq!(body["error"]["type"], "not_found_error");
        let reply = count_tokens(br#"{"model":"m","messages":5}"#, &limits).render(&context);
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(reply.status, 400);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("'messages'"),
            "{body}"
        );
    }

    #[test]
    fn targets() {
        let origin = |path| {
            Some(Target {
                authority: None,
                path,
            })
        };
        assert_eq!(Target::parse("/v1/models?x=1#f"), origin("/v1/models"));
        assert_eq!(Target::parse("*"), origin("*"));
        assert_eq!(
            Target::parse("http://localhost:32124/v1/chat/completions?a"),
            Some(Target {
                authority: Some("localhost:32124"),
                path: "/v1/chat/completions"
            })
        );
        assert_eq!(
            Target::parse("HTTPS://x"),
            Some(Target {
                authority: Some("x"),
                path: "/"
            })
        );
        for bad in ["", "v1/models", "localhost:80", "ftp://x/", "http:/x"] {
            assert_eq!(Target::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn hosts() {
        let allowed = vec!["proxy.internal".to_owned(), ".example.com".to_owned()];
        for ok in [
            "localhost",
            "LOCALHOST:32124",
            "localhost.",
            "app.localhost:3000",
            "127.0.0.1",
            "127.0.0.1:32124",
            "10.1.2.3:80",
            "[::1]",
            "[::1]:32124",
            "proxy.internal:8080",
            "example.com",
            "a.b.example.com",
        ] {
            assert!(host_allowed(ok.as_bytes(), &allowed), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "localhost.evil.example",
            "notexample.com",
            "127.0.0.1.nip.io",
            "proxy.internal.evil",
            "[::1",
            "[::1]x",
            "[evil]",
            "localhost:abc",
            "localhost:123456",
            "user@localhost",
            "local host",
            "::1",
        ] {
            assert!(!host_allowed(bad.as_bytes(), &allowed), "{bad}");
        }
    }

    #[test]
    fn json_media_type() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert!(is_json(Some(ok.as_bytes())), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "",
        ] {
            assert!(!is_json(Some(bad.as_bytes())), "{bad}");
        }
        assert!(!is_json(None));
    }

    #[test]
    fn keys() {
        let auth = Auth::new(vec!["sk-test".into()]);
        assert!(auth.allows(Some(b"Bearer sk-test"), None));
        assert!(auth.allows(Some(b"bearer  sk-test "), None));
        assert!(auth.allows(None, Some(b"sk-test")));
        assert!(auth.allows(Some(b"Bearer wrong"), Some(b"sk-test")));
        assert!(auth.allows(Some(b"Bearer sk-test"), Some(b"wrong")));
        for wrong in [
            &b"Bearer sk-tes"[..],
            b"Bearer sk-test2",
            b"sk-test",
            b"Basic sk-test",
            b"Bearer",
            b"",
        ] {
            let shown = String::from_utf8_lossy(wrong);
            assert!(!auth.allows(Some(wrong), None), "{shown}");
        }
        for wrong in [&b"sk-tes"[..], b"sk-test2", b"Bearer sk-test", b""] {
            let shown = String::from_utf8_lossy(wrong);
            assert!(!auth.allows(None, Some(wrong)), "{shown}");
        }
        assert!(!auth.allows(None, None));
        assert_eq!(Auth::new(Vec::new()).owner(None, None), Some(Owner::LOCAL));
    }

    #[test]
    fn each_key_is_an_owner() {
        let auth = Auth::new(vec!["sk-a".into(), "sk-b".into()]);
        let a = auth.owner(Some(b"Bearer sk-a"), None).unwrap();
        let b = auth.owner(None, Some(b"sk-b")).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, Owner::LOCAL);
        assert_eq!(auth.owner(None, Some(b"sk-a")), Some(a));
        assert_eq!(auth.owner(Some(b"Bearer sk-b"), Some(b"sk-a")), Some(b));
        assert_eq!(auth.owner(Some(b"Bearer sk-c"), Some(b"sk-a")), Some(a));
        assert_eq!(auth.owner(Some(b"Bearer sk-c"), None), None);
    }
}
