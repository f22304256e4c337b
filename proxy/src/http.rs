//! The HTTP surface, independent of the server library: routes, authentication,
//! OpenAI-shaped error replies, CORS and the headers of a bridge's response head.
//!
//! Order of checks for every request: a CORS preflight is answered (it carries no
//! credentials and exposes nothing); then authentication, before anything else — an
//! unauthenticated client learns nothing, not even which paths exist; then the route.

use agentwire::bridge::Head;
use agentwire::openai::ApiError;
use subtle::ConstantTimeEq;

use super::Settings;

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/chat/completions` or `POST /chat/completions`.
    Chat,
    /// `GET /v1/models` (or `/models`).
    Models,
    /// `GET /health`.
    Health,
    /// `OPTIONS` on any path: a CORS preflight.
    Preflight,
    /// A path that does not exist.
    NotFound,
    /// A known path with the wrong method; the value is the `Allow` header.
    MethodNotAllowed(&'static str),
}

/// Routes `method` and `target` (a path, possibly with a query).
pub fn route(method: &str, target: &str) -> Route {
    let path = target.split(['?', '#']).next().unwrap_or_default();
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    if method == "OPTIONS" {
        return Route::Preflight;
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
    /// Headers besides `Content-Length` and the CORS headers every response gets.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON reply.
    pub fn json(status: u16, body: Vec<u8>) -> Reply {
        Reply {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body,
        }
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

/// 401: no key, or the wrong one.
pub fn unauthorized() -> Reply {
    let mut reply = Reply::error(
        api_error(
            401,
            "Incorrect API key provided. Send it as `Authorization: Bearer <key>`.".to_owned(),
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        false,
    );
    reply
        .headers
        .push(("www-authenticate", "Bearer".to_owned()));
    reply
}

/// 404 for a path that does not exist.
pub fn not_found(method: &str, path: &str) -> Reply {
    Reply::error(
        api_error(
            404,
            format!("Invalid URL ({method} {path})"),
            "invalid_request_error",
            Some("unknown_url"),
        ),
        false,
    )
}

/// 405 for a known path with another method.
pub fn method_not_allowed(method: &str, path: &str, allow: &'static str) -> Reply {
    let mut reply = Reply::error(
        api_error(
            405,
            format!("Invalid method for URL ({method} {path}); allowed: {allow}"),
            "invalid_request_error",
            Some("method_not_allowed"),
        ),
        false,
    );
    reply.headers.push(("allow", allow.to_owned()));
    reply
}

/// 413 for a body over the limit.
pub fn too_large(limit: usize) -> Reply {
    Reply::error(
        api_error(
            413,
            format!("Request body too large: the limit is {limit} bytes."),
            "invalid_request_error",
            Some("request_too_large"),
        ),
        false,
    )
}

/// 400 for a request the server cannot read (bad framing, bad encoding).
pub fn bad_request(message: &str) -> Reply {
    Reply::error(
        api_error(
            400,
            message.to_owned(),
            "invalid_request_error",
            Some("bad_request"),
        ),
        false,
    )
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

/// 204 for a CORS preflight, allowing what the browser asked for.
pub fn preflight(requested_headers: Option<&str>) -> Reply {
    Reply {
        status: 204,
        headers: vec![
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
            ("access-control-max-age", "86400".to_owned()),
        ],
        body: Vec::new(),
    }
}

/// `GET /health`.
pub fn health(settings: &Settings, in_flight: u32) -> Reply {
    let body = serde_json::json!({
        "status": "ok",
        "agentwire": env!("CARGO_PKG_VERSION"),
        "agent": {
            "binary": settings.agent.label(),
            "version": settings.agent.version,
        },
        "in_flight": in_flight,
        "max_concurrent": settings.max_concurrent,
    });
    Reply::json(200, body.to_string().into_bytes())
}

/// Headers on every response, so browser clients can read them.
pub const CORS_HEADERS: [(&str, &str); 2] = [
    ("access-control-allow-origin", "*"),
    (
        "access-control-expose-headers",
        "x-should-retry, retry-after, x-request-id",
    ),
];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("POST", "/v1/chat/completions"), Route::Chat);
        assert_eq!(route("POST", "/chat/completions?x=1"), Route::Chat);
        assert_eq!(route("POST", "/v1/chat/completions/"), Route::Chat);
        assert_eq!(route("GET", "/v1/models"), Route::Models);
        assert_eq!(route("GET", "/health"), Route::Health);
        assert_eq!(route("OPTIONS", "/anything"), Route::Preflight);
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
