//! Turning what a failed run left behind (non-JSON stdout lines, stderr, exit status) into
//! a [`Failure`] with the right class and a message that says what to do.
//!
//! Messages are worded for real clients' retry policies: OpenCode retries any request
//! whose error message matches words such as "timeout", "rate limit", "connection" or
//! "500" (`openai-wire.md` §1.3). Permanent failures (4xx) therefore never quote agent
//! text that contains such words; retryable ones say so plainly.

use crate::api::invites_retry;
use crate::event::{Failure, FailureKind};

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl ExitStatus {
    /// Exit code 0.
    pub fn success(self) -> bool {
        self == ExitStatus::Code(0)
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatus::Code(code) => write!(f, "exit code {code}"),
            ExitStatus::Signal(signal) => write!(f, "signal {signal}"),
        }
    }
}

/// Everything known about a run that ended without an answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// Non-JSON stdout lines and agent error events, most recent last.
    pub stdout_notes: &'a str,
    /// The tail of stderr.
    pub stderr: &'a str,
    /// How the process ended, if it has.
    pub exit: Option<ExitStatus>,
    /// Reconnect/retry attempts seen on stdout.
    pub retries: u32,
    /// Whether any stdout line was dropped for breaking a limit or not being UTF-8.
    pub bad_lines: u64,
    /// Whether any JSON event was seen at all.
    pub saw_events: bool,
}

/// Classifies a failed run.
pub fn classify(evidence: &Evidence<'_>) -> Failure {
    let text = format!("{}\n{}", evidence.stdout_notes, evidence.stderr);
    let clean = strip_ansi(&text);
    let lower = clean.to_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));

    // 127 and 126 are what a shell (and the adapters, for a spawn that failed) report for a
    // program that is not there or cannot be run: no retry helps, someone must install it
    // or name the right one.
    if !evidence.saw_events && matches!(evidence.exit, Some(ExitStatus::Code(126 | 127))) {
        let mut message = String::from(
            "The agent could not be started: its binary was not found or is not executable. \
             Install the Cursor CLI (`curl https://cursor.com/install -fsS | bash`), or name \
             the binary to run (the proxies' `--agent`, `Config::cursor_binary`, the \
             JavaScript package's `cursorBinary`).",
        );
        let detail = excerpt(&clean);
        if !detail.is_empty() && !invites_retry(&detail) {
            message.push(' ');
            message.push_str(&detail);
        }
        return Failure::new(FailureKind::Misconfigured, message);
    }
    if has(&[
        "workspace trust required",
        "pass --trust",
        "do you trust the contents",
    ]) {
        return Failure::new(
            FailureKind::Misconfigured,
            "cursor-agent refused to run: the workspace is not trusted. Pass --trust (the \
             bridge's default invocation does) or run `cursor-agent` once interactively in \
             the workspace to trust it.",
        );
    }
    if has(&[
        "not logged in",
        "authentication required",
        "not authenticated",
        "unauthorized",
        "please log in",
        "login required",
        "invalid api key",
    ]) {
        return Failure::new(
            FailureKind::NotAuthenticated,
            "cursor-agent is not logged in. Run `cursor-agent login`, or set CURSOR_API_KEY \
             for the bridge.",
        );
    }
    if has(&[
        "cannot use this model",
        "model not found",
        "invalid model",
        "unknown model",
    ]) {
        let mut message = String::from("The requested model is not available to cursor-agent.");
        if let Some(models) = available_models(&clean).filter(|m| !invites_retry(m)) {
            message.push_str(" Available models: ");
            message.push_str(&models);
        }
        return Failure::new(FailureKind::ModelUnavailable, message);
    }
    // A used-up quota first: its messages may also say "limit", and retrying it only
    // runs the agent again into the same wall.
    if has(&["usage limit", "quota", "spend limit"]) {
        return Failure::new(
            FailureKind::UsageLimit,
            format!(
                "cursor-agent's usage limit is reached; retrying before it resets will not \
                 help: {}",
                excerpt(&clean)
            ),
        );
    }
    if has(&["rate limit", "too many requests", "resource exhausted"]) {
        return Failure::new(
            FailureKind::RateLimited,
            format!(
                "cursor-agent hit a usage or rate limit: {}",
                excerpt(&clean)
            ),
        );
    }
    if has(&[
        "unknown option",
        "invalid_argument",
        "unknown argument",
        "unknown command",
    ]) {
        return Failure::new(
            FailureKind::Misconfigured,
            format!(
                "cursor-agent rejected its invocation (check the bridge's configuration and \
                 the CLI version): {}",
                excerpt(&clean)
            ),
        );
    }
    if has(&[
        "econnrefused",
        "enotfound",
        "econnreset",
        "etimedout",
        "fetch failed",
        "network",
    ]) || evidence.retries > 0
    {
        return Failure::new(
            FailureKind::Unavailable,
            format!(
                "cursor-agent could not reach Cursor's service (connection retries \
                 exhausted); try again later. {}",
                excerpt(&clean)
            ),
        );
    }
    let how = match evidence.exit {
        Some(exit) => format!("cursor-agent ended ({exit}) without an answer"),
        None if !evidence.saw_events => "cursor-agent produced no output".to_owned(),
        None => "cursor-agent's output ended without an answer".to_owned(),
    };
    let mut message = how;
    if evidence.bad_lines > 0 {
        message.push_str(&format!(
            "; {} output line(s) were dropped for breaking the line limit or not being UTF-8",
            evidence.bad_lines
        ));
    }
    let tail = excerpt(&clean);
    if !tail.is_empty() {
        message.push_str(": ");
        message.push_str(&tail);
    }
    Failure::new(FailureKind::AgentCrashed, message)
}

/// Classifies the message of an error `result` event: a known class if its text says so,
/// else [`FailureKind::AgentError`].
pub fn classify_result_error(message: &str) -> Failure {
    let failure = classify(&Evidence {
        stdout_notes: message,
        saw_events: true,
        ..Evidence::default()
    });
    if failure.kind == FailureKind::AgentCrashed {
        let message = if message.trim().is_empty() {
            "cursor-agent reported an error".to_owned()
        } else {
            format!("cursor-agent reported an error: {}", excerpt(message))
        };
        return Failure::new(FailureKind::AgentError, message);
    }
    failure
}

/// The last few hundred characters of `text`, trimmed and on one line.
fn excerpt(text: &str) -> String {
    const MAX: usize = 600;
    let trimmed = text.trim();
    let start = trimmed.len().saturating_sub(MAX);
    let start = (start..=trimmed.len())
        .find(|&i| trimmed.is_char_boundary(i))
        .unwrap_or(0);
    let mut out = String::with_capacity(trimmed.len() - start);
    let mut space = false;
    for c in trimmed[start..].chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

/// The model list printed after `Available models:`, if any (first 40 entries).
fn available_models(text: &str) -> Option<String> {
    let at = text.to_lowercase().find("available models")?;
    let rest = &text[at + "available models".len()..];
    let rest = rest.trim_start_matches([':', ' ']);
    let models: Vec<&str> = rest
        .split([',', '\n'])
        .map(|m| m.trim().trim_start_matches(['-', '•', '*']).trim())
        .map(|m| m.split(" - ").next().unwrap_or(m).trim())
        .filter(|m| !m.is_empty() && m.len() <= 80 && !m.contains(' '))
        .take(40)
        .collect();
    (!models.is_empty()).then(|| models.join(", "))
}

/// Removes ANSI escape sequences (colours, cursor movement) from terminal text.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // CSI: parameters and intermediates, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stderr(text: &str, exit: i32) -> Failure {
        classify(&Evidence {
            stderr: text,
            exit: Some(ExitStatus::Code(exit)),
            ..Evidence::default()
        })
    }

    #[test]
    fn trust_gate() {
        let text = "\n\u{26a0} Workspace Trust Required\n\n  Cursor Agent can execute code and access files in this directory.\n  Do you trust the contents of this directory?\n\n    /ws\n\n  To proceed, you can either:\n    \u{2022} Run 'agent' interactively to decide\n    \u{2022} Pass --trust, --yolo, or -f if you trust this directory\n";
        let failure = stderr(text, 1);
        assert_eq!(failure.kind, FailureKind::Misconfigured);
        assert!(failure.message.contains("--trust"));
    }

    #[test]
    fn classes() {
        assert_eq!(
            stderr(
                "\u{1b}[31mError: Authentication required. Please run login\u{1b}[0m",
                1
            )
            .kind,
            FailureKind::NotAuthenticated
        );
        let model = stderr(
            "Cannot use this model: gpt-9. Available models: auto, gpt-5, sonnet-4.5",
            1,
        );
        assert_eq!(model.kind, FailureKind::ModelUnavailable);
        assert!(
            model
                .message
                .ends_with("Available models: auto, gpt-5, sonnet-4.5"),
            "{}",
            model.message
        );
        assert_eq!(
            stderr("You've hit your usage limit", 1).kind,
            FailureKind::UsageLimit
        );
        assert_eq!(
            stderr("Error: rate limit exceeded, too many requests", 1).kind,
            FailureKind::RateLimited
        );
        assert_eq!(
            stderr("fetch failed ECONNREFUSED", 1).kind,
            FailureKind::Unavailable
        );
        let crash = stderr("segmentation fault", 139);
        assert_eq!(crash.kind, FailureKind::AgentCrashed);
        assert!(
            crash.message.contains("exit code 139") && crash.message.contains("segmentation fault")
        );
    }

    #[test]
    fn a_binary_that_cannot_start_is_a_misconfiguration_with_the_install_hint() {
        for exit in [126, 127] {
            let failure = stderr(
                "could not start cursor-agent: No such file or directory (os error 2)",
                exit,
            );
            assert_eq!(failure.kind, FailureKind::Misconfigured);
            assert!(
                failure.message.contains("cursor.com/install"),
                "{}",
                failure.message
            );
            assert!(
                failure.message.contains("No such file"),
                "{}",
                failure.message
            );
            assert!(!invites_retry(&failure.message), "{}", failure.message);
        }
        // A run that answered something before ending 127 crashed; it was started.
        let started = classify(&Evidence {
            exit: Some(ExitStatus::Code(127)),
            saw_events: true,
            ..Evidence::default()
        });
        assert_eq!(started.kind, FailureKind::AgentCrashed);
    }

    #[test]
    fn rejected_option_after_retries_is_misconfiguration() {
        let failure = classify(&Evidence {
            stdout_notes: "RetriableError: [invalid_argument] unknown option '--system-prompt'",
            retries: 3,
            saw_events: true,
            ..Evidence::default()
        });
        assert_eq!(failure.kind, FailureKind::Misconfigured);
    }

    #[test]
    fn retries_alone_mean_unavailable() {
        let failure = classify(&Evidence {
            retries: 3,
            saw_events: true,
            ..Evidence::default()
        });
        assert_eq!(failure.kind, FailureKind::Unavailable);
    }

    #[test]
    fn permanent_messages_avoid_retry_words() {
        // OpenCode retries on these words even for a 4xx.
        for failure in [
            stderr("Error: not logged in (connection reset, timeout 500)", 1),
            stderr("Cannot use this model: x (timeout)", 1),
            stderr(
                "Cannot use this model: x. Available models: auto, turbo-500",
                1,
            ),
        ] {
            assert!(!invites_retry(&failure.message), "{}", failure.message);
        }
    }

    #[test]
    fn result_errors() {
        assert_eq!(classify_result_error("boom").kind, FailureKind::AgentError);
        assert_eq!(
            classify_result_error("").message,
            "cursor-agent reported an error"
        );
        assert_eq!(
            classify_result_error("You've hit your usage limit").kind,
            FailureKind::UsageLimit
        );
    }

    #[test]
    fn ansi() {
        assert_eq!(strip_ansi("\u{1b}[1;31mred\u{1b}[0m \u{1b}7x"), "red x");
    }
}
