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
//! 4. **Authentication** (`--api-key`), before anything is exposed: 401, except that
//!    `/health` still says the server is up (and nothing more).
//! 5. **The route**: 404, 405, or the handler.
//! 6. **The media type** of a chat request's body: `application/json` (415 otherwise),
//!    which a page cannot send cross-origin without a preflight.
//!
//! Responses carry CORS headers only for an allowed `Origin`, which they echo.

use agentwire::bridge::Head;
use agentwire::openai::ApiError;
use subtle::ConstantTimeEq;

use crate::connections::Lane;
use crate::framing::Version;
use crate::{Settings, flags::CorsOrigins};

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/chat/completions` or `POST /chat/completions`.
    Chat,
    /// `GET /v1/models` (or `/models`).
    Models,
    /// `GET /health`.
    Health,
    /// `OPTIONS` on any path.
    Options,
    /// A path that does not exist.
    NotFound,
    /// A known path with the wrong method; the value is the `Allow` header.
    MethodNotAllowed(&'static str),
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
    let (route, allow) = match path {
        "/v1/chat/completions" | "/chat/completions" => (Route::Chat, "POST, OPTIONS"),
        "/v1/models" | "/models" => (Route::Models, "GET, HEAD, OPTIONS"),
        "/health" => (Route::Health, "GET, HEAD, OPTIONS"),
        _ => return Route::NotFound,
    };
    let allowed = match route {
        Route::Chat => method == "POST",
        _ => method == "GET" || method == "HEAD",
    };
    if allowed {
        route
    } else {
        Route::MethodNotAllowed(allow)
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

/// The CORS headers a response gets: none, or the allowed `Origin` echoed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cors {
    origin: Option<String>,
}

impl Cors {
    /// The headers to add to a response.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.origin.iter().flat_map(|origin| {
            [
                ("access-control-allow-origin", origin.as_str()),
                (
                    "access-control-expose-headers",
                    "x-should-retry, retry-after, x-request-id",
                ),
                ("vary", "origin"),
            ]
        })
    }
}

/// What [`check`] decided.
#[derive(Debug)]
pub struct Checked {
    /// The CORS headers every response to this request gets.
    pub cors: Cors,
    /// What to do.
    pub outcome: Outcome,
}

/// What the proxy does with a request that was checked.
#[derive(Debug)]
pub enum Outcome {
    /// Write this reply (a refusal, an error, a preflight) and nothing else.
    Reply(Reply),
    /// Read the body and run the agent.
    Chat,
    /// `/v1/models`.
    Models,
    /// `/health`; `detailed` when the caller may see more than "up".
    Health {
        /// Whether the caller is authenticated (or no key is configured).
        detailed: bool,
    },
}

/// Runs the checks of the module docs, in their order, on a request head that arrived on
/// a connection of `lane`.
pub fn check(settings: &Settings, head: &RequestHead<'_>, lane: Lane) -> Checked {
    let mut cors = Cors::default();
    let reply = |reply| Checked {
        cors: Cors::default(),
        outcome: Outcome::Reply(reply),
    };
    // 1. Host.
    let hosts = head.all("host").count();
    let host = match (head.target.authority, head.one("host")) {
        // An absolute-form target's authority is the host (RFC 9112 §3.2.2).
        (Some(authority), _) if hosts <= 1 => Some(authority.as_bytes()),
        (None, Some(host)) => Some(host),
        (None, None) if hosts == 0 && head.version == Version::Http10 => None,
        _ => return reply(bad_host("A request needs exactly one Host header.")),
    };
    if let Some(host) = host {
        if !host_allowed(host, &settings.allowed_hosts) {
            return reply(bad_host(
                "This Host is not allowed (see --allowed-host): requests must name the \
                 server by a loopback name or an IP address.",
            ));
        }
    }
    // 2. Origin.
    if head.all("origin").next().is_some() {
        match head.one("origin") {
            Some(origin) if settings.cors_origins.allows(origin) => {
                cors.origin = Some(String::from_utf8_lossy(origin).into_owned());
            }
            _ => return reply(origin_not_allowed()),
        }
    }
    let reply = |reply| Checked {
        cors: cors.clone(),
        outcome: Outcome::Reply(reply),
    };
    let route = route(head.method, head.target.path);
    // 3. Preflight: it carries no credentials, and only allowed origins get this far.
    if route == Route::Options {
        let requested = head
            .one("access-control-request-headers")
            .and_then(|h| std::str::from_utf8(h).ok());
        return reply(options(cors.origin.is_some(), requested));
    }
    // 4. Authentication.
    let authenticated = settings.auth.allows(head.one("authorization"));
    if !authenticated {
        if route == Route::Health {
            return Checked {
                cors,
                outcome: Outcome::Health { detailed: false },
            };
        }
        return reply(unauthorized());
    }
    // A connection over --max-connections is read only to answer /health.
    if lane == Lane::Overflow && route != Route::Health {
        return reply(too_many_connections());
    }
    // 5. The route; 6. the body's media type.
    let outcome = match route {
        Route::Chat if !is_json(head.one("content-type")) => {
            Outcome::Reply(unsupported_media_type())
        }
        Route::Chat => Outcome::Chat,
        Route::Models => Outcome::Models,
        Route::Health => Outcome::Health { detailed: true },
        Route::NotFound => Outcome::Reply(not_found(head.method, head.target.path)),
        Route::MethodNotAllowed(allow) => {
            Outcome::Reply(method_not_allowed(head.method, head.target.path, allow))
        }
        Route::Options => unreachable!("answered above"),
    };
    Checked { cors, outcome }
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

/// The bearer token every request must carry, if one is configured.
pub struct Auth {
    key: Option<Vec<u8>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("required", &self.key.is_some())
            .finish()
    }
}

impl Auth {
    /// Requires `Authorization: Bearer <key>` when `key` is set.
    pub fn new(key: Option<String>) -> Auth {
        Auth {
            key: key.map(String::into_bytes),
        }
    }

    /// Whether requests need a key.
    pub fn is_required(&self) -> bool {
        self.key.is_some()
    }

    /// The key, to keep it out of the agent's environment.
    pub fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }

    /// Whether a request with this `Authorization` header value may pass. The token is
    /// compared in constant time, so response timing does not reveal how much of a guess
    /// was right.
    pub fn allows(&self, authorization: Option<&[u8]>) -> bool {
        let Some(key) = &self.key else {
            return true;
        };
        let Some(value) = authorization else {
            return false;
        };
        let token = match value.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
            _ => return false,
        };
        bool::from(token.ct_eq(key))
    }
}

/// A complete response the proxy writes itself (everything but a bridge's response).
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Headers besides `Content-Length` and the CORS headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Whether the connection is closed after it (the request's framing cannot be
    /// trusted, or its body was not read).
    pub close: bool,
}

impl Reply {
    /// A JSON reply.
    pub fn json(status: u16, body: Vec<u8>) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body,
            close: false,
        }
    }

    /// The same reply, closing the connection after it.
    pub fn closing(mut self) -> Reply {
        self.close = true;
        self
    }

    /// An OpenAI error body with `status`.
    fn error(error: ApiError, retryable: bool) -> Reply {
        let mut reply = Reply::json(error.status, error.to_json());
        reply
            .headers
            .push(("x-should-retry", retryable.to_string()));
        reply
    }
}

fn api_error(
    status: u16,
    message: String,
    kind: &'static str,
    code: Option<&'static str>,
) -> ApiError {
    ApiError {
        message,
        kind,
        param: None,
        code,
        status,
    }
}

fn client_error(status: u16, message: String, code: &'static str) -> Reply {
    Reply::error(
        api_error(status, message, "invalid_request_error", Some(code)),
        false,
    )
}

/// 400 for a missing, repeated or foreign `Host`.
fn bad_host(message: &str) -> Reply {
    client_error(400, message.to_owned(), "invalid_host").closing()
}

/// 403 for a request from a web page whose origin is not allowed.
fn origin_not_allowed() -> Reply {
    client_error(
        403,
        "Requests from this web origin are not allowed. Start the server with \
         --cors-origin ORIGIN to allow a page to use it."
            .to_owned(),
        "origin_not_allowed",
    )
}

/// 401: no key, or the wrong one.
pub fn unauthorized() -> Reply {
    let mut reply = client_error(
        401,
        "Incorrect API key provided. Send it as `Authorization: Bearer <key>`.".to_owned(),
        "invalid_api_key",
    );
    reply
        .headers
        .push(("www-authenticate", "Bearer".to_owned()));
    reply
}

/// 404 for a path that does not exist.
pub fn not_found(method: &str, path: &str) -> Reply {
    client_error(404, format!("Invalid URL ({method} {path})"), "unknown_url")
}

/// 405 for a known path with another method.
pub fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> Reply {
    let mut reply = client_error(
        405,
        format!("Invalid method for URL ({method} {path}); allowed: {allow}"),
        "method_not_allowed",
    );
    reply.headers.push(("allow", allow.to_owned()));
    reply
}

/// 415 for a chat body that is not declared `application/json`.
fn unsupported_media_type() -> Reply {
    client_error(
        415,
        "The request body must be JSON, sent with `Content-Type: application/json`.".to_owned(),
        "unsupported_media_type",
    )
}

/// 413 for a body over the limit.
pub fn too_large(limit: usize) -> Reply {
    client_error(
        413,
        format!("Request body too large: the limit is {limit} bytes."),
        "request_too_large",
    )
    .closing()
}

/// 400 for a request the server cannot read (bad framing, bad encoding).
pub fn bad_request(message: &str) -> Reply {
    client_error(400, message.to_owned(), "bad_request").closing()
}

/// 501 for a transfer coding the server does not implement.
pub fn not_implemented(message: &str) -> Reply {
    Reply::error(
        api_error(
            501,
            message.to_owned(),
            "invalid_request_error",
            Some("not_implemented"),
        ),
        false,
    )
    .closing()
}

/// 408 when the request (head and body) did not arrive within `--request-timeout-ms`.
pub fn request_timeout() -> Reply {
    Reply::error(
        api_error(
            408,
            "The request did not arrive in time (see --request-timeout-ms).".to_owned(),
            "invalid_request_error",
            Some("request_timeout"),
        ),
        true,
    )
    .closing()
}

/// 429 when every agent slot is taken.
pub fn busy(max: u32) -> Reply {
    let mut reply = Reply::error(
        api_error(
            429,
            format!("Too many requests: {max} agent runs are already in progress. Retry shortly."),
            "rate_limit_error",
            Some("rate_limit_exceeded"),
        ),
        true,
    );
    reply.headers.push(("retry-after", "1".to_owned()));
    reply
}

/// 503 on a connection over `--max-connections`.
fn too_many_connections() -> Reply {
    let mut reply = Reply::error(
        api_error(
            503,
            "Too many open connections. Retry shortly.".to_owned(),
            "server_error",
            Some("too_many_connections"),
        ),
        true,
    );
    reply.headers.push(("retry-after", "1".to_owned()));
    reply.closing()
}

/// 503 while the server shuts down.
pub fn shutting_down() -> Reply {
    Reply::error(
        api_error(
            503,
            "The server is shutting down.".to_owned(),
            "server_error",
            Some("shutting_down"),
        ),
        true,
    )
}

/// 503 when the model list cannot be had.
pub fn models_unavailable(why: &str) -> Reply {
    Reply::error(
        api_error(
            503,
            format!("Could not list models: {why}"),
            "server_error",
            Some("models_unavailable"),
        ),
        true,
    )
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
                    .unwrap_or("authorization, content-type")
                    .to_owned(),
            ),
            ("access-control-max-age", "7200".to_owned()),
        ]);
    }
    Reply {
        status: 204,
        headers,
        body: Vec::new(),
        close: false,
    }
}

/// `GET /health`: that the server is up, and for `detailed` callers what it runs (never
/// where the agent binary lives).
pub fn health(settings: &Settings, detailed: bool, in_flight: u32) -> Reply {
    let body = if detailed {
        serde_json::json!({
            "status": "ok",
            "agentwire": env!("CARGO_PKG_VERSION"),
            "agent": {
                "version": settings.agent.version,
                "demo": settings.agent.demo,
            },
            "in_flight": in_flight,
            "max_concurrent": settings.max_concurrent,
        })
    } else {
        serde_json::json!({"status": "ok"})
    };
    Reply::json(200, body.to_string().into_bytes())
}

/// The headers of a bridge's response head. Streams are marked uncacheable and
/// unbufferable, so every frame reaches the client as it is written, through reverse
/// proxies too.
pub fn head_headers(head: &Head) -> Vec<(&'static str, String)> {
    let mut headers = vec![("content-type", head.content_type.to_owned())];
    if head.content_type == "text/event-stream" {
        headers.push(("cache-control", "no-cache".to_owned()));
        headers.push(("x-accel-buffering", "no".to_owned()));
    }
    if let Some(retryable) = head.retryable {
        headers.push(("x-should-retry", retryable.to_string()));
    }
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
        assert_eq!(route("POST", "/v1/chat/completions"), Route::Chat);
        assert_eq!(route("POST", "/chat/completions"), Route::Chat);
        assert_eq!(route("POST", "/v1/chat/completions/"), Route::Chat);
        assert_eq!(route("GET", "/v1/models"), Route::Models);
        assert_eq!(route("GET", "/health"), Route::Health);
        assert_eq!(route("OPTIONS", "/anything"), Route::Options);
        assert_eq!(
            route("GET", "/v1/chat/completions"),
            Route::MethodNotAllowed("POST, OPTIONS")
        );
        assert_eq!(
            route("DELETE", "/health"),
            Route::MethodNotAllowed("GET, HEAD, OPTIONS")
        );
        assert_eq!(route("GET", "/"), Route::NotFound);
        assert_eq!(route("POST", "/v1/completions"), Route::NotFound);
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
    fn bearer_tokens() {
        let auth = Auth::new(Some("sk-test".into()));
        assert!(auth.allows(Some(b"Bearer sk-test")));
        assert!(auth.allows(Some(b"bearer  sk-test ")));
        for wrong in [
            &b"Bearer sk-tes"[..],
            b"Bearer sk-test2",
            b"sk-test",
            b"Basic sk-test",
            b"Bearer",
            b"",
        ] {
            assert!(
                !auth.allows(Some(wrong)),
                "{}",
                String::from_utf8_lossy(wrong)
            );
        }
        assert!(!auth.allows(None));
        assert!(Auth::new(None).allows(None));
    }
}
