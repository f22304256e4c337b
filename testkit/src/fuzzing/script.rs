//! Real-shaped cursor-agent transcripts built from fuzz bytes, and what the decoder must
//! make of them.
//!
//! A [`Script`] is a sequence of lines drawn from a small table of templates (system init,
//! assistant deltas and recaps, thinking, tool calls, interaction queries, progress,
//! results, notes), with strings and numbers filled in from the fuzz input. While no line
//! is mutated, a [`Model`] of the decoder's *documented* rules (recaps by one-event
//! lookahead, reconciliation with `result`, turns) predicts the exact events; once a line
//! is mutated (truncated, spliced, a number or string replaced) only the general
//! invariants apply.
//!
//! The model follows the documentation of [`Decoder`](agentwire::cursor::Decoder), not its
//! code, so that it stays a second opinion while the decoder's internals change.

use std::collections::HashMap;

use arbitrary::{Result, Unstructured};

use agentwire::event::{ActivityPhase, Progress, ToolOutcome, Usage};

/// One event as the model predicts it. Failures are compared by presence only: their
/// class and wording come from failure classification, which is tested on its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expected {
    /// `Event::TextDelta`.
    Text(String),
    /// `Event::ReasoningDelta`.
    Reasoning(String),
    /// `Event::AgentActivity`, without its rendered summary.
    Activity {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Started or completed.
        phase: ActivityPhase,
        /// Raw argument text.
        arguments: Option<String>,
        /// The model call the tool call belongs to.
        model_call_id: Option<String>,
    },
    /// `Event::Progress`.
    Progress(Progress),
    /// `Event::Usage`.
    Usage(Usage),
    /// `Event::Finish` (cursor-agent only ever stops).
    Finish,
    /// `Event::Failed`, of any class.
    Failed,
}

/// A generated transcript.
#[derive(Debug, Default)]
pub(crate) struct Script {
    /// The stdout bytes.
    pub(crate) bytes: Vec<u8>,
    /// The exact events the decoder must produce, or `None` when a line was mutated and
    /// only the general invariants apply.
    pub(crate) expected: Option<Vec<Expected>>,
}

/// Lines in one script at most: enough for several turns, few enough for fast runs.
const MAX_LINES: usize = 64;

/// Bytes after which a script ends: repeated segments and `result` texts that copy the
/// whole turn grow fast, and a fuzz execution should take milliseconds.
const MAX_BYTES: usize = 256 * 1024;

/// Longest segment re-sent as a recap: longer ones would soon break the line limit (a
/// segment of repeats doubles with every released recap).
const MAX_RECAP: usize = 1024;

const SESSION: &str = "5b0c6a52-1f4e-4c1b-9a7e-2f1f0c3d9e01";
const MODEL_CALL: &str = "7d1f0e2a-4b7c-4d55-8f0e-3b2a1c9d8e77-0-ab12";

/// Text pieces seen in real transcripts, and the characters that stress escaping and
/// UTF-8 boundaries.
const WORDS: &[&str] = &[
    "Hi",
    " there",
    ".",
    "Let me",
    " check",
    " the file",
    "\n",
    "é",
    "日本語",
    "😀",
    "a\"b",
    "back\\slash",
    "tab\tstop",
    "\u{0}",
    "\u{7f}\u{80}",
    "<tool_call>",
    "</tool_call>",
    "```\ncode\n```",
    "ha",
    "haha",
];

/// Replacements for strings in mutated lines: other kinds, empty and hostile texts.
const STRING_MUTATIONS: &[&str] = &[
    "",
    "assistant",
    "thinking",
    "delta",
    "completed",
    "tool_call",
    "started",
    "result",
    "success",
    "error",
    "system",
    "init",
    "user",
    "connection",
    "reconnecting",
    "reconnected",
    "retry",
    "interaction_query",
    "text",
    "readToolCall",
    "ToolCall",
    "\\ud800",
    "\\udc00\\ud800",
    "\\u0000",
    "\\\"",
    "é",
    "\\n",
];

/// Replacements for numbers in mutated lines.
const NUMBER_MUTATIONS: &[&str] = &[
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e400",
    "-1e400",
    "1.5",
    "-0",
    "null",
    "\"7\"",
    "true",
];

/// Arrays with one element per field of the line envelope: a derived `Deserialize` would
/// read them as the envelope's sequence form, and they must be ignored like any
/// non-object (`json_arrays_are_not_events` in `tests/fuzz_regressions.rs`).
const ENVELOPE_ARRAYS: [&str; 2] = [
    r#"["result","success",null,{},null,null,null,"done",null,false,null,null,"s",null]"#,
    r#"["assistant",null,null,{"content":"hi"},null,null,null,null,null,null,null,null,null,null]"#,
];

/// Kinds of line, for weighted choice.
#[derive(Debug, Clone, Copy)]
enum Template {
    Init,
    User,
    Fragment,
    Recap,
    /// A recap with a tail the fragments never streamed.
    ExtendedRecap,
    /// An `assistant` event without text.
    EmptyAssistant,
    ThinkingDelta,
    ThinkingRecap,
    ThinkingCompleted,
    ToolStarted,
    ToolCompleted,
    Query,
    Reconnecting,
    Reconnected,
    Retry,
    ErrorEvent,
    Result,
    Note,
    Blank,
    Unknown,
    NotAnObject,
}

/// Templates with their weights: text and tool lines dominate, as in real transcripts.
const TEMPLATES: &[(Template, u32)] = &[
    (Template::Init, 2),
    (Template::User, 1),
    (Template::Fragment, 12),
    (Template::Recap, 4),
    (Template::ExtendedRecap, 2),
    (Template::EmptyAssistant, 2),
    (Template::ThinkingDelta, 5),
    (Template::ThinkingRecap, 2),
    (Template::ThinkingCompleted, 3),
    (Template::ToolStarted, 4),
    (Template::ToolCompleted, 4),
    (Template::Query, 1),
    (Template::Reconnecting, 1),
    (Template::Reconnected, 1),
    (Template::Retry, 1),
    (Template::ErrorEvent, 1),
    (Template::Result, 3),
    (Template::Note, 1),
    (Template::Blank, 1),
    (Template::Unknown, 1),
    (Template::NotAnObject, 1),
];

impl Script {
    /// Builds a script from fuzz bytes. Running out of bytes ends it early; it never
    /// fails. A line longer than `max_line` (the decoder's limit) is dropped by the
    /// decoder, so it ends the exact prediction like a mutation.
    pub(crate) fn generate(u: &mut Unstructured<'_>, max_line: usize) -> Script {
        let mut model = Model::default();
        let mut bytes = Vec::new();
        let mut exact = true;
        // Half the scripts stay intact, so that the exact prediction is checked often;
        // in the others about one line in eight is damaged.
        let mutating = u.arbitrary::<bool>().unwrap_or(false);
        for _ in 0..MAX_LINES {
            if u.is_empty() || bytes.len() > MAX_BYTES {
                break;
            }
            let Ok(mut line) = next_line(u, &mut model) else {
                break;
            };
            let mutated = mutating && mutate(u, &mut line).unwrap_or(false);
            // Line endings: `\n`, `\r\n` (the `\r` counts towards the limit, then is
            // dropped), or none at the very end.
            let ending: &[u8] = match u.int_in_range(0u8..=15).unwrap_or(0) {
                0 => b"\r\n",
                1 if u.is_empty() => b"",
                _ => b"\n",
            };
            let cr = usize::from(ending.starts_with(b"\r"));
            exact &= !mutated && line.len() + cr <= max_line;
            bytes.extend_from_slice(&line);
            bytes.extend_from_slice(ending);
        }
        model.eof();
        Script {
            bytes,
            expected: exact.then_some(model.events),
        }
    }
}

/// Renders one line for `u` and tells the model what it means.
fn next_line(u: &mut Unstructured<'_>, model: &mut Model) -> Result<Vec<u8>> {
    let total: u32 = TEMPLATES.iter().map(|(_, w)| w).sum();
    let mut pick = u.int_in_range(0..=total - 1)?;
    let mut template = Template::Fragment;
    for (candidate, weight) in TEMPLATES {
        if pick < *weight {
            template = *candidate;
            break;
        }
        pick -= weight;
    }
    let style = Style::pick(u)?;
    let line = match template {
        Template::Init => {
            model.init();
            format!(
                r#"{{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/home/dev/project","session_id":"{SESSION}","model":{},"permissionMode":"default"}}"#,
                style.string(u.choose(&["Auto", "GPT-5 Mini", "Composer 2.5 Fast"])?)
            )
        }
        Template::User => format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"text","text":{}}}]}},"session_id":"{SESSION}"}}"#,
            style.string(&text(u, "")?)
        ),
        Template::Fragment | Template::Recap | Template::ExtendedRecap => {
            let recap = model.text.streamed.len() <= MAX_RECAP;
            let text = match template {
                Template::Recap if recap => model.text.streamed.clone(),
                Template::ExtendedRecap if recap => {
                    model.text.streamed.clone() + u.choose(WORDS)?
                }
                _ => text(u, &model.text.streamed)?,
            };
            model.assistant(&text);
            assistant_line(u, &style, &text)?
        }
        Template::EmptyAssistant => {
            model.assistant("");
            let content = u.choose(&[
                r#"[{"type":"text","text":""}]"#,
                r#"[]"#,
                r#"[{"type":"tool_use","id":"toolu_1","name":"read","input":{}}]"#,
                r#"[{"type":"text","text":""},{"type":"image","text":"not text"}]"#,
                r#""""#,
            ])?;
            format!(
                r#"{{"type":"assistant","message":{{"role":"assistant","content":{content}}},"session_id":"{SESSION}","timestamp_ms":1790000000300}}"#
            )
        }
        Template::ThinkingDelta | Template::ThinkingRecap => {
            let text = if matches!(template, Template::ThinkingRecap)
                && model.thinking.streamed.len() <= MAX_RECAP
            {
                model.thinking.streamed.clone()
            } else {
                text(u, &model.thinking.streamed)?
            };
            model.thinking_delta(&text);
            format!(
                r#"{{"type":"thinking","subtype":"delta","text":{},"session_id":"{SESSION}","timestamp_ms":1790000000100}}"#,
                style.string(&text)
            )
        }
        Template::ThinkingCompleted => {
            model.thinking_completed();
            format!(
                r#"{{"type":"thinking","subtype":"completed","session_id":"{SESSION}","timestamp_ms":1790000000200}}"#
            )
        }
        Template::ToolStarted | Template::ToolCompleted => {
            tool_line(u, &style, model, matches!(template, Template::ToolStarted))?
        }
        Template::Query => {
            model.interaction_query();
            format!(
                r#"{{"type":"interaction_query","subtype":{},"query_type":"webFetchRequestQuery","query":{{"id":0,"webFetchRequestQuery":{{"args":{{"url":"https://example.com"}},"skipApproval":false}}}},"session_id":"{SESSION}"}}"#,
                style.string(u.choose(&["request", "response"])?)
            )
        }
        Template::Reconnecting => {
            let attempt = u.int_in_range(0u32..=5)?;
            model.progress(Progress::Reconnecting { attempt });
            format!(
                r#"{{"type":"connection","subtype":"reconnecting","session_id":"{SESSION}","attempt":{attempt},"endpoint_url":"https://api.example.invalid"}}"#
            )
        }
        Template::Reconnected => {
            model.progress(Progress::Reconnected);
            format!(r#"{{"type":"connection","subtype":"reconnected","session_id":"{SESSION}"}}"#)
        }
        Template::Retry => {
            let attempt = u.int_in_range(0u32..=5)?;
            model.progress(Progress::Retrying { attempt });
            format!(
                r#"{{"type":"retry","subtype":"starting","session_id":"{SESSION}","attempt":{attempt},"is_resume":false}}"#
            )
        }
        Template::ErrorEvent => format!(
            r#"{{"type":"error","error":{{"message":{}}},"session_id":"{SESSION}"}}"#,
            style.string(u.choose(&[
                "boom",
                "ConnectError: [unavailable] upstream",
                "rate limit",
                "not logged in"
            ])?)
        ),
        Template::Result => result_line(u, &style, model)?,
        Template::Note => u
            .choose(&[
                "ConnectError: [unavailable] upstream connection failed",
                "Error: not logged in",
                "  at Object.<anonymous> (index.js:1:1)",
                "plain text é",
            ])?
            .to_string(),
        Template::Blank => u.choose(&["", " ", "\t", "\r"])?.to_string(),
        Template::Unknown => u
            .choose(&[
                r#"{"type":"telemetry","subtype":"x","session_id":"s"}"#,
                r#"{"type":"thinking","subtype":"paused"}"#,
                r#"{"type":"tool_call","subtype":"progress","call_id":"c"}"#,
                r#"{"type":"connection","subtype":"lost"}"#,
                r#"{"subtype":"delta","text":"untyped"}"#,
                r#"{"type":7,"text":"typed by a number"}"#,
                r#"{}"#,
            ])?
            .to_string(),
        Template::NotAnObject => {
            let mut lines = vec!["[1,2,3]", "\"assistant\"", "42", "null", "true", "[]"];
            lines.extend(ENVELOPE_ARRAYS);
            u.choose(&lines)?.to_string()
        }
    };
    Ok(line.into_bytes())
}

/// An `assistant` line: content as one part, two parts, or a plain string.
fn assistant_line(u: &mut Unstructured<'_>, style: &Style, text: &str) -> Result<String> {
    let content = match u.int_in_range(0u8..=7)? {
        0 => style.string(text),
        1 if text.len() > 1 => {
            let mut cut = u.int_in_range(0..=text.len())?;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            format!(
                r#"[{{"type":"text","text":{}}},{{"text":{}}}]"#,
                style.string(&text[..cut]),
                style.string(&text[cut..])
            )
        }
        2 => format!(
            r#"[{{"type":"image","text":"not text"}},{{"type":"text","text":{}}}]"#,
            style.string(text)
        ),
        _ => format!(r#"[{{"type":"text","text":{}}}]"#, style.string(text)),
    };
    let tail = if u.ratio(1u8, 4)? {
        format!(r#","model_call_id":"{MODEL_CALL}""#)
    } else {
        r#","timestamp_ms":1790000000300"#.to_owned()
    };
    Ok(format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":{content}}},"session_id":"{SESSION}"{tail}}}"#
    ))
}

/// A `tool_call` line, started or completed, for a call id from a small pool so that
/// starts and completions meet.
fn tool_line(
    u: &mut Unstructured<'_>,
    style: &Style,
    model: &mut Model,
    started: bool,
) -> Result<String> {
    let call_id = format!(
        "call_{}\nfc_{}",
        u.int_in_range(0u8..=3)?,
        u.int_in_range(0u8..=1)?
    );
    let (key, tool) = *u.choose(&[
        ("readToolCall", "read"),
        ("shellToolCall", "shell"),
        ("editToolCall", "edit"),
        ("webFetchToolCall", "webFetch"),
        ("McpToolCall", "mcp"),
    ])?;
    let args = if started || u.ratio(1u8, 2)? {
        let field = match tool {
            "shell" => "command",
            "webFetch" => "url",
            _ => "path",
        };
        Some(format!(
            r#"{{"{field}":{},"timeout":30000}}"#,
            style.string(&text(u, "")?)
        ))
    } else {
        None
    };
    let (result, outcome) = if started {
        (String::new(), None)
    } else {
        let (result, outcome) = *u.choose(&[
            (
                r#","result":{"success":{"content":"hello\n","totalLines":1}}"#,
                ToolOutcome::Success,
            ),
            (
                r#","result":{"rejected":{"reason":""}}"#,
                ToolOutcome::Rejected,
            ),
            (
                r#","result":{"error":{"message":"no"}}"#,
                ToolOutcome::Error,
            ),
            (
                r#","result":{"isBackground":false,"permissionDenied":{}}"#,
                ToolOutcome::PermissionDenied,
            ),
            ("", ToolOutcome::Unknown),
        ])?;
        (result.to_owned(), Some(outcome))
    };
    let with_model_call = u.ratio(1u8, 2)?;
    model.tool(&call_id, tool, args.as_deref(), outcome, with_model_call);
    let args_field = args.map(|a| format!(r#""args":{a}"#)).unwrap_or_default();
    let result = if args_field.is_empty() {
        result.trim_start_matches(',').to_owned()
    } else {
        result
    };
    let model_call = if with_model_call {
        format!(r#","model_call_id":"{MODEL_CALL}""#)
    } else {
        String::new()
    };
    Ok(format!(
        r#"{{"type":"tool_call","subtype":"{}","call_id":{},"tool_call":{{"{key}":{{{args_field}{result}}},"toolCallId":{},"startedAtMs":"1790000000395"}}{model_call},"session_id":"{SESSION}","timestamp_ms":1790000000400}}"#,
        if started { "started" } else { "completed" },
        style.string(&call_id),
        style.string(&call_id),
    ))
}

/// A `result` line whose text is what was streamed, more, less or something else.
fn result_line(u: &mut Unstructured<'_>, style: &Style, model: &mut Model) -> Result<String> {
    let emitted = model.emitted.clone();
    let result = match u.int_in_range(0u8..=7)? {
        0..=3 => Some(emitted),
        4 => Some(emitted + &text(u, "")?),
        5 => {
            let mut cut = u.int_in_range(0..=emitted.len())?;
            while !emitted.is_char_boundary(cut) {
                cut -= 1;
            }
            Some(emitted[..cut].to_owned())
        }
        6 => Some(text(u, "")?),
        _ => None,
    };
    let is_error = u.ratio(1u8, 6)?;
    let usage = if u.ratio(2u8, 3)? {
        Some(Usage {
            input_tokens: u.int_in_range(0..=100_000)?,
            output_tokens: u.int_in_range(0..=100_000)?,
            cache_read_tokens: u.int_in_range(0..=100_000)?,
            cache_write_tokens: u.int_in_range(0..=100_000)?,
            reasoning_tokens: None,
            cost: None,
        })
    } else {
        None
    };
    let usage_field = match usage {
        Some(usage) if u.ratio(1u8, 4)? => format!(
            r#","usage":{{"input_tokens":{},"output_tokens":{},"cache_read_tokens":{},"cache_write_tokens":{}}}"#,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens
        ),
        Some(usage) => format!(
            r#","usage":{{"inputTokens":{},"outputTokens":{},"cacheReadTokens":{},"cacheWriteTokens":{}}}"#,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens
        ),
        None => String::new(),
    };
    model.result(result.as_deref(), usage, is_error);
    let result_field = result
        .map(|r| format!(r#","result":{}"#, style.string(&r)))
        .unwrap_or_default();
    Ok(format!(
        r#"{{"type":"result","subtype":"{}","duration_ms":4200,"is_error":{is_error}{result_field},"session_id":"{SESSION}","request_id":"7d1f0e2a"{usage_field}}}"#,
        if is_error { "error" } else { "success" },
    ))
}

/// A short text: a known word, a piece of the current segment (to provoke recap
/// candidates), or arbitrary characters.
fn text(u: &mut Unstructured<'_>, segment: &str) -> Result<String> {
    Ok(match u.int_in_range(0u8..=9)? {
        0..=5 => (*u.choose(WORDS)?).to_owned(),
        // Bounded, or repeats would double a segment on every line.
        6 if !segment.is_empty() && segment.len() <= MAX_RECAP => segment.to_owned(),
        7 if !segment.is_empty() => {
            let mut cut = u.int_in_range(1..=segment.len().min(MAX_RECAP))?;
            while !segment.is_char_boundary(cut) {
                cut -= 1;
            }
            segment[..cut].to_owned()
        }
        _ => {
            let len = u.int_in_range(0usize..=8)?;
            let mut text = String::new();
            for _ in 0..len {
                text.push(u.arbitrary::<char>()?);
            }
            text
        }
    })
}

/// How strings are written as JSON: as `serde_json` does, or with every non-ASCII
/// character (and `/`) as a `\u` escape, surrogate pairs included.
struct Style {
    escape_all: bool,
}

impl Style {
    fn pick(u: &mut Unstructured<'_>) -> Result<Style> {
        Ok(Style {
            escape_all: u.ratio(1u8, 5)?,
        })
    }

    fn string(&self, text: &str) -> String {
        if !self.escape_all {
            return serde_json::to_string(text).expect("a string serializes");
        }
        let mut out = String::from("\"");
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' => out.push_str("\\/"),
                ' '..='~' => out.push(c),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }
}

/// Maybe damages `line`; returns whether it did.
fn mutate(u: &mut Unstructured<'_>, line: &mut Vec<u8>) -> Result<bool> {
    if !u.ratio(1u8, 8)? {
        return Ok(false);
    }
    match u.int_in_range(0u8..=7)? {
        0 => {
            let at = u.int_in_range(0..=line.len())?;
            line.truncate(at);
        }
        1 => {
            let at = u.int_in_range(0..=line.len())?;
            let len = u.int_in_range(1usize..=8)?;
            let bytes = u.bytes(len.min(u.len()))?.to_vec();
            line.splice(at..at, bytes);
        }
        2 if !line.is_empty() => {
            let at = u.int_in_range(0..=line.len() - 1)?;
            let len = u.int_in_range(1..=line.len() - at)?;
            line.drain(at..at + len);
        }
        3 if !line.is_empty() => {
            let at = u.int_in_range(0..=line.len() - 1)?;
            line[at] = u.arbitrary()?;
        }
        4 => replace_nth(u, line, number_spans(line), NUMBER_MUTATIONS)?,
        5 => replace_nth(u, line, string_spans(line), STRING_MUTATIONS)?,
        6 => {
            // Two lines run together.
            let copy = line.clone();
            line.extend_from_slice(&copy);
        }
        _ => {
            // A line break inside the line.
            let at = u.int_in_range(0..=line.len())?;
            line.insert(at, b'\n');
        }
    }
    Ok(true)
}

/// Replaces one of `spans` with one of `choices`.
fn replace_nth(
    u: &mut Unstructured<'_>,
    line: &mut Vec<u8>,
    spans: Vec<(usize, usize)>,
    choices: &[&str],
) -> Result<()> {
    if spans.is_empty() {
        return Ok(());
    }
    let (start, end) = *u.choose(&spans)?;
    let with = u.choose(choices)?;
    line.splice(start..end, with.bytes());
    Ok(())
}

/// Byte ranges of digit runs (JSON numbers, and digits inside strings too).
fn number_spans(line: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_digit() {
            let start = i;
            while i < line.len() && line[i].is_ascii_digit() {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// Byte ranges of string contents (between the quotes).
fn string_spans(line: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i] == b'"' {
            let start = i + 1;
            i += 1;
            while i < line.len() && line[i] != b'"' {
                if line[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            spans.push((start, i.min(line.len())));
        }
        i += 1;
    }
    spans
}

/// Which line decided a held recap candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Assistant,
    Other,
    End,
}

/// The recap state of the answer text, as the decoder documents it.
#[derive(Debug, Default)]
struct Segment {
    streamed: String,
    /// A held candidate: the text, which starts with `streamed`.
    held: Option<String>,
}

/// The decoder's documented behaviour over well-formed lines.
#[derive(Debug, Default)]
pub(crate) struct Model {
    events: Vec<Expected>,
    text: Segment,
    thinking: Segment,
    /// Text emitted this turn, for reconciliation with `result`.
    emitted: String,
    /// Calls started this turn and not completed, with their arguments.
    calls: HashMap<String, Option<String>>,
    turn_done: bool,
}

impl Model {
    /// A line that carries answer content: opens a new turn after a `result`, and
    /// decides held recap candidates.
    fn decisive(&mut self, next: Next) {
        if self.turn_done {
            self.new_turn();
        }
        self.resolve(next);
    }

    /// A held candidate is ordinary text if the next decisive line is another fragment,
    /// and a recap otherwise: dropped but for the tail it adds to the segment, which ends.
    fn resolve(&mut self, next: Next) {
        if let Some(held) = self.text.held.take() {
            if next == Next::Assistant {
                self.commit_text(&held);
            } else {
                let tail = held[self.text.streamed.len()..].to_owned();
                if !tail.is_empty() {
                    self.commit_text(&tail);
                }
                self.text.streamed.clear();
            }
        }
    }

    fn commit_text(&mut self, text: &str) {
        self.text.streamed.push_str(text);
        self.emitted.push_str(text);
        self.events.push(Expected::Text(text.to_owned()));
    }

    fn commit_reasoning(&mut self, text: &str) {
        self.thinking.streamed.push_str(text);
        self.events.push(Expected::Reasoning(text.to_owned()));
    }

    fn new_turn(&mut self) {
        self.turn_done = false;
        self.emitted.clear();
        self.text = Segment::default();
        self.thinking = Segment::default();
        self.calls.clear();
    }

    fn boundary(&mut self) {
        self.text.streamed.clear();
        self.thinking.streamed.clear();
    }

    fn init(&mut self) {
        if self.turn_done {
            self.new_turn();
        }
    }

    /// An `assistant` line; without text it is no fragment and decides nothing.
    fn assistant(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.decisive(Next::Assistant);
        if !self.text.streamed.is_empty() && text.starts_with(self.text.streamed.as_str()) {
            self.text.held = Some(text.to_owned());
        } else {
            self.commit_text(text);
        }
    }

    /// Thinking is never recapped: every delta is emitted.
    fn thinking_delta(&mut self, text: &str) {
        self.decisive(Next::Other);
        if !text.is_empty() {
            self.commit_reasoning(text);
        }
    }

    fn thinking_completed(&mut self) {
        self.decisive(Next::Other);
        self.thinking.streamed.clear();
    }

    fn interaction_query(&mut self) {
        self.decisive(Next::Other);
        self.boundary();
    }

    fn tool(
        &mut self,
        call_id: &str,
        tool: &str,
        args: Option<&str>,
        outcome: Option<ToolOutcome>,
        with_model_call: bool,
    ) {
        self.decisive(Next::Other);
        self.boundary();
        let (phase, arguments) = match outcome {
            None => {
                self.calls
                    .insert(call_id.to_owned(), args.map(str::to_owned));
                (ActivityPhase::Started, args.map(str::to_owned))
            }
            Some(outcome) => {
                let cached = self.calls.remove(call_id);
                let started_seen = cached.is_some();
                let arguments = args.map(str::to_owned).or(cached.flatten());
                (
                    ActivityPhase::Completed {
                        outcome,
                        started_seen,
                    },
                    arguments,
                )
            }
        };
        self.events.push(Expected::Activity {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            phase,
            arguments,
            model_call_id: with_model_call.then(|| MODEL_CALL.to_owned()),
        });
    }

    fn progress(&mut self, progress: Progress) {
        self.events.push(Expected::Progress(progress));
    }

    fn result(&mut self, result: Option<&str>, usage: Option<Usage>, is_error: bool) {
        self.decisive(Next::Other);
        self.boundary();
        self.turn_done = true;
        // An error result's text is never answer content.
        if let Some(result) = result.filter(|_| !is_error) {
            // A strict prefix gets the missing suffix; anything else is left alone.
            if let Some(missing) = result.strip_prefix(self.emitted.as_str()) {
                if !missing.is_empty() {
                    let missing = missing.to_owned();
                    self.commit_text(&missing);
                }
            }
        }
        if let Some(usage) = usage {
            self.events.push(Expected::Usage(usage));
        }
        self.events.push(if is_error {
            Expected::Failed
        } else {
            Expected::Finish
        });
    }

    fn eof(&mut self) {
        self.resolve(Next::End);
        if !self.turn_done {
            self.events.push(Expected::Failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_strings_are_the_same_json_strings() {
        let style = Style { escape_all: true };
        for text in WORDS {
            let json = style.string(text);
            assert_eq!(serde_json::from_str::<String>(&json).unwrap(), *text);
        }
    }

    #[test]
    fn spans() {
        assert_eq!(
            number_spans(br#"{"a":12,"b":"x3"}"#),
            vec![(5, 7), (14, 15)]
        );
        assert_eq!(string_spans(br#"{"a":"b\"c"}"#), vec![(2, 3), (6, 10)]);
    }
}
