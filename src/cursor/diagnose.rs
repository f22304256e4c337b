//! Turning what a failed run left behind (non-JSON stdout lines, stderr, exit status) into
//! a [`Failure`] with the right class and a message that says what to do.
//!
//! [`classify`] checks a table of rules in order; a run none of them explains crashed.
//!
//! Messages are worded for real clients' retry policies: OpenCode retries any request
//! whose error message matches words such as "timeout", "rate limit", "connection" or
//! "500", whatever its status. Permanent failures (4xx) therefore never quote agent text
//! that contains such words; retryable ones say so plainly.

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

/// Classifies a failed run: the first rule that applies gives the class and the message;
/// a run no rule explains crashed.
pub fn classify(evidence: &Evidence<'_>) -> Failure {
    let clues = Clues::new(evidence);
    match RULES.iter().find(|rule| rule.when.applies(&clues)) {
        Some(rule) => Failure::new(rule.kind, rule.message.write(&clues)),
        None => Failure::new(FailureKind::AgentCrashed, crashed(&clues)),
    }
}

/// One row of [`RULES`]: when it applies, and the failure it gives.
struct Rule {
    when: When,
    kind: FailureKind,
    message: Message,
}

/// When a [`Rule`] applies.
enum When {
    /// The process ended 126 or 127 before any event.
    NotStarted,
    /// The text (stdout notes and stderr, ANSI codes removed) says one of these,
    /// case-insensitively.
    Says(&'static [&'static str]),
    /// It says one of these, or the agent retried its connection.
    SaysOrRetried(&'static [&'static str]),
}

/// A [`Rule`]'s message.
enum Message {
    /// This text, whatever the agent said.
    Fixed(&'static str),
    /// This text followed by an excerpt of what the agent said.
    Quoting(&'static str),
    /// Written from the clues.
    Written(fn(&Clues) -> String),
}

/// The rules, checked in order. Order matters where texts overlap: a binary that never
/// started may print anything, and a used-up quota's text may also say "limit".
const RULES: &[Rule] = &[
    // 127 and 126 are what a shell (and the adapters, for a spawn that failed) report for a
    // program that is not there or cannot be run: no retry helps, someone must install it
    // or name the right one.
    Rule {
        when: When::NotStarted,
        kind: FailureKind::Misconfigured,
        message: Message::Written(not_started),
    },
    Rule {
        when: When::Says(&[
            "workspace trust required",
            "pass --trust",
            "do you trust the contents",
        ]),
        kind: FailureKind::Misconfigured,
        message: Message::Fixed(
            "cursor-agent refused to run: the workspace is not trusted. Pass --trust (the \
             bridge's default invocation does) or run `cursor-agent` once interactively in \
             the workspace to trust it.",
        ),
    },
    Rule {
        when: When::Says(&[
            "not logged in",
            "authentication required",
            "not authenticated",
            "unauthorized",
            "please log in",
            "login required",
            "invalid api key",
        ]),
        kind: FailureKind::NotAuthenticated,
        message: Message::Fixed(
            "cursor-agent is not logged in. Run `cursor-agent login`, or set CURSOR_API_KEY \
             for the bridge.",
        ),
    },
    Rule {
        when: When::Says(&[
            "cannot use this model",
            "model not found",
            "invalid model",
            "unknown model",
        ]),
        kind: FailureKind::ModelUnavailable,
        message: Message::Written(model_unavailable),
    },
    // Before the rate limit: retrying a used-up quota only runs the agent again into the
    // same wall.
    Rule {
        when: When::Says(&["usage limit", "quota", "spend limit"]),
        kind: FailureKind::UsageLimit,
        message: Message::Quoting(
            "cursor-agent's usage limit is reached; retrying before it resets will not help: ",
        ),
    },
    Rule {
        when: When::Says(&["rate limit", "too many requests", "resource exhausted"]),
        kind: FailureKind::RateLimited,
        message: Message::Quoting("cursor-agent hit a usage or rate limit: "),
    },
    Rule {
        when: When::Says(&[
            "unknown option",
            "invalid_argument",
            "unknown argument",
            "unknown command",
        ]),
        kind: FailureKind::Misconfigured,
        message: Message::Quoting(
            "cursor-agent rejected its invocation (check the bridge's configuration and the \
             CLI version): ",
        ),
    },
    Rule {
        when: When::SaysOrRetried(&[
            "econnrefused",
            "enotfound",
            "econnreset",
            "etimedout",
            "fetch failed",
            "network",
        ]),
        kind: FailureKind::Unavailable,
        message: Message::Quoting(
            "cursor-agent could not reach Cursor's service (connection retries exhausted); \
             try again later. ",
        ),
    },
];

/// What the rules look at.
struct Clues<'a> {
    evidence: &'a Evidence<'a>,
    /// Stdout notes and stderr, ANSI codes removed.
    clean: String,
    /// `clean` in lower case, for matching.
    lower: String,
}

impl<'a> Clues<'a> {
    fn new(evidence: &'a Evidence<'a>) -> Self {
        let clean = strip_ansi(&format!("{}\n{}", evidence.stdout_notes, evidence.stderr));
        let lower = clean.to_lowercase();
        Clues {
            evidence,
            clean,
            lower,
        }
    }

    fn says(&self, needles: &[&str]) -> bool {
        needles.iter().any(|needle| self.lower.contains(needle))
    }
}

impl When {
    fn applies(&self, clues: &Clues<'_>) -> bool {
        match self {
            When::NotStarted => {
                !clues.evidence.saw_events
                    && matches!(clues.evidence.exit, Some(ExitStatus::Code(126 | 127)))
            }
            When::Says(needles) => clues.says(needles),
            When::SaysOrRetried(needles) => clues.says(needles) || clues.evidence.retries > 0,
        }
    }
}

impl Message {
    fn write(&self, clues: &Clues<'_>) -> String {
        match self {
            Message::Fixed(text) => (*text).to_owned(),
            Message::Quoting(text) => format!("{text}{}", excerpt(&clues.clean)),
            Message::Written(write) => write(clues),
        }
    }
}

/// The install hint, and what the agent said unless it invites a retry.
fn not_started(clues: &Clues<'_>) -> String {
    let mut message = String::from(
        "The agent could not be started: its binary was not found or is not executable. \
         Install the Cursor CLI (`curl https://cursor.com/install -fsS | bash`), or name \
         the binary to run (the proxies' `--agent-bin`, `Config::cursor_binary`, the \
         JavaScript package's `cursorBinary`).",
    );
    let detail = excerpt(&clues.clean);
    if !detail.is_empty() && !invites_retry(&detail) {
        message.push(' ');
        message.push_str(&detail);
    }
    message
}

/// The models the agent listed, unless the list invites a retry.
fn model_unavailable(clues: &Clues<'_>) -> String {
    let mut message = String::from("The requested model is not available to cursor-agent.");
    if let Some(models) = available_models(&clues.clean).filter(|m| !invites_retry(m)) {
        message.push_str(" Available models: ");
        message.push_str(&models);
    }
    message
}

/// A run no rule explains: how it ended, the lines dropped, and the tail of what it said.
fn crashed(clues: &Clues<'_>) -> String {
    let evidence = clues.evidence;
    let mut message = match evidence.exit {
        Some(exit) => format!("cursor-agent ended ({exit}) without an answer"),
        None if !evidence.saw_events => "cursor-agent produced no output".to_owned(),
        None => "cursor-agent's output ended without an answer".to_owned(),
    };
    if evidence.bad_lines > 0 {
        message.push_str(&format!(
            "; {} output line(s) were dropped for breaking the line limit or not being UTF-8",
            evidence.bad_lines
        ));
    }
    let tail = excerpt(&clues.clean);
    if !tail.is_empty() {
        message.push_str(": ");
        message.push_str(&tail);
    }
    message
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

    // One test per rule of `RULES`, in its order, then one for a run no rule explains;
    // each pins the class and the whole message.

    fn notes(text: &str) -> Failure {
        classify(&Evidence {
            stdout_notes: text,
            saw_events: true,
            ..Evidence::default()
        })
    }

    #[test]
    fn rule_not_started() {
        let failure = stderr("sh: cursor-agent: command not found", 127);
        assert_eq!(failure.kind, FailureKind::Misconfigured);
        assert_eq!(
            failure.message,
            "The agent could not be started: its binary was not found or is not executable. \
             Install the Cursor CLI (`curl https://cursor.com/install -fsS | bash`), or name \
             the binary to run (the proxies' `--agent-bin`, `Config::cursor_binary`, the \
             JavaScript package's `cursorBinary`). sh: cursor-agent: command not found"
        );
        // Checked before every other rule: its text may say anything.
        let failure = stderr("not logged in; rate limit", 126);
        assert_eq!(failure.kind, FailureKind::Misconfigured);
        assert!(
            failure.message.ends_with("`cursorBinary`)."),
            "{}",
            failure.message
        );
        // Nothing quoted that invites a retry; nothing quoted when there is nothing.
        let failure = stderr("", 127);
        assert!(
            failure.message.ends_with("`cursorBinary`)."),
            "{}",
            failure.message
        );
    }

    #[test]
    fn rule_untrusted_workspace() {
        let failure = notes("Pass --trust to continue");
        assert_eq!(failure.kind, FailureKind::Misconfigured);
        assert_eq!(
            failure.message,
            "cursor-agent refused to run: the workspace is not trusted. Pass --trust (the \
             bridge's default invocation does) or run `cursor-agent` once interactively in \
             the workspace to trust it."
        );
    }

    #[test]
    fn rule_not_logged_in() {
        let failure = notes("Error: Invalid API key");
        assert_eq!(failure.kind, FailureKind::NotAuthenticated);
        assert_eq!(
            failure.message,
            "cursor-agent is not logged in. Run `cursor-agent login`, or set CURSOR_API_KEY \
             for the bridge."
        );
    }

    #[test]
    fn rule_model_unavailable() {
        let failure = notes("Unknown model: gpt-9");
        assert_eq!(failure.kind, FailureKind::ModelUnavailable);
        assert_eq!(
            failure.message,
            "The requested model is not available to cursor-agent."
        );
        let failure = notes("Invalid model. Available models:\n- auto\n- gpt-5 - GPT-5\n");
        assert_eq!(
            failure.message,
            "The requested model is not available to cursor-agent. Available models: auto, gpt-5"
        );
    }

    #[test]
    fn rule_usage_limit() {
        // A quota's text may also say "rate limit": the quota wins.
        let failure = notes("Quota exceeded (rate limit)");
        assert_eq!(failure.kind, FailureKind::UsageLimit);
        assert_eq!(
            failure.message,
            "cursor-agent's usage limit is reached; retrying before it resets will not help: \
             Quota exceeded (rate limit)"
        );
    }

    #[test]
    fn rule_rate_limited() {
        let failure = notes("Resource exhausted,\n  try later");
        assert_eq!(failure.kind, FailureKind::RateLimited);
        assert_eq!(
            failure.message,
            "cursor-agent hit a usage or rate limit: Resource exhausted, try later"
        );
    }

    #[test]
    fn rule_rejected_invocation() {
        let failure = stderr("error: unknown option '--nope'", 1);
        assert_eq!(failure.kind, FailureKind::Misconfigured);
        assert_eq!(
            failure.message,
            "cursor-agent rejected its invocation (check the bridge's configuration and the \
             CLI version): error: unknown option '--nope'"
        );
    }

    #[test]
    fn rule_unreachable() {
        let failure = stderr("getaddrinfo ENOTFOUND api2.cursor.sh", 1);
        assert_eq!(failure.kind, FailureKind::Unavailable);
        assert_eq!(
            failure.message,
            "cursor-agent could not reach Cursor's service (connection retries exhausted); \
             try again later. getaddrinfo ENOTFOUND api2.cursor.sh"
        );
        let failure = classify(&Evidence {
            retries: 1,
            saw_events: true,
            ..Evidence::default()
        });
        assert_eq!(
            failure.message,
            "cursor-agent could not reach Cursor's service (connection retries exhausted); \
             try again later. "
        );
    }

    #[test]
    fn no_rule_means_crashed() {
        let failure = classify(&Evidence {
            stderr: "panic: \u{1b}[1mboom\u{1b}[0m",
            exit: Some(ExitStatus::Signal(9)),
            bad_lines: 2,
            saw_events: true,
            ..Evidence::default()
        });
        assert_eq!(failure.kind, FailureKind::AgentCrashed);
        assert_eq!(
            failure.message,
            "cursor-agent ended (signal 9) without an answer; 2 output line(s) were dropped \
             for breaking the line limit or not being UTF-8: panic: boom"
        );
        let silent = classify(&Evidence::default());
        assert_eq!(silent.kind, FailureKind::AgentCrashed);
        assert_eq!(silent.message, "cursor-agent produced no output");
        let cut = classify(&Evidence {
            saw_events: true,
            ..Evidence::default()
        });
        assert_eq!(cut.message, "cursor-agent's output ended without an answer");
    }

    #[test]
    fn ansi() {
        assert_eq!(strip_ansi("\u{1b}[1;31mred\u{1b}[0m \u{1b}7x"), "red x");
    }
}
