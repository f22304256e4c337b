//! What a client's retry policy reads in an error message, apart from the status and
//! `x-should-retry`: OpenCode's retries any error whose message matches, whatever its
//! status. Every message of a permanent failure (a request error, not logged in, an
//! unknown model) is kept free of what it looks for, so that the client does not retry it.

/// What OpenCode's retry policy looks for in an error message (case-insensitive): a status
/// number, or words of transient trouble. It retries a matching error up to five times
/// whatever its status, so messages of permanent failures (request errors, not logged in,
/// unknown model) must say none of them, even by quoting someone else's text.
pub const RETRY_TRIGGERS: &[&str] = &[
    "429",
    "500",
    "502",
    "503",
    "504",
    "524",
    "rate limit",
    "too many requests",
    "overloaded",
    "service unavailable",
    "internal error",
    "server error",
    "server_error",
    "terminated",
    "fetch failed",
    "connection",
    "econnreset",
    "etimedout",
    "timeout",
    "timed out",
    "try again",
    "resource exhausted",
    "currently at capacity",
];

/// Whether `message` would make OpenCode retry.
pub fn invites_retry(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    RETRY_TRIGGERS.iter().any(|t| lower.contains(t))
}
