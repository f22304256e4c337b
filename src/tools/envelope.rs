//! Text envelopes: how the model calls a client tool the agent has no native form of (or
//! may not run itself), by writing the call in its answer text.
//!
//! # Syntax
//!
//! ```text
//! <tool_call>
//! {"name": "TOOL_NAME", "arguments": {"key": "value"}}
//! </tool_call>
//! ```
//!
//! - An envelope opens at `<tool_call>` and closes at the next `</tool_call>` that is
//!   outside a JSON string, or that starts a line (a raw line break, then only blanks,
//!   before it: valid JSON cannot hold a raw line break inside a string, so such a tag is
//!   the real end even when the JSON is broken). Arguments may therefore contain the tags
//!   themselves (a file that documents this syntax).
//! - The body is one JSON object, white space around it ignored: `name` (a non-empty
//!   string) and `arguments` (an object; also accepted: a string holding a JSON object,
//!   `parameters` or an `input` object instead of `arguments`, absent or `null` meaning
//!   `{}`, and the OpenAI shape `{"function": {"name", "arguments"}}`). A tool whose input
//!   is free text (a patch) takes it as `"input": "…"`, one JSON string, instead. A
//!   Markdown code fence around the JSON is removed, and raw line breaks and tabs inside
//!   strings are escaped before giving up.
//! - One envelope per call; envelopes in a row are parallel calls.
//! - The tags are recognised anywhere, inside Markdown code spans and fences too: the model
//!   is taught to write them only for calls, and a bridge cannot tell an example from a
//!   call.
//!
//! # Streaming
//!
//! [`EnvelopeScanner`] finds envelopes in streamed text deltas. Text passes through at
//! once, except a suffix that could still become `<tool_call>` (at most 10 bytes), which is
//! held until the next delta tells; the inside of an envelope is buffered until it closes,
//! never more than the scanner's limit (beyond it the envelope is reported
//! [`EnvelopeError::TooLong`] and skipped to its end). A partial envelope never reaches the
//! text, and text that turns out not to be an envelope is released. Every byte is looked
//! at a bounded number of times, so the work is linear in the text, and the items are the
//! same for any split of the text into deltas.

use std::collections::VecDeque;

use memchr::memmem;
use serde_json::{Map, Value};
use thiserror::Error;

/// The opening tag.
pub const OPEN: &str = "<tool_call>";
/// The closing tag.
pub const CLOSE: &str = "</tool_call>";

/// The envelope instructions for the prompt, naming the tools that must be called this
/// way.
#[must_use]
pub fn instructions(tools: &[&str]) -> String {
    let which = if tools.is_empty() {
        String::from("a tool")
    } else {
        format!("one of these tools ({})", tools.join(", "))
    };
    format!(
        "To call {which}, write the call in your answer exactly like this, each tag on its \
         own line:\n\n{OPEN}\n{{\"name\": \"TOOL_NAME\", \"arguments\": {{...}}}}\n{CLOSE}\n\n\
         - \"arguments\" is one JSON object matching the tool's parameters. It must be valid \
         JSON: write line breaks inside strings as \\n.\n\
         - Write one block per call. Several blocks in a row are run together.\n\
         - After the last block, stop: the results come back in the next message. Never \
         write a result yourself.\n\
         - Write these tags only to call a tool, never as an example, not even inside code \
         blocks."
    )
}

/// The envelope instructions for tools whose input is free text, to follow
/// [`instructions`] when some are offered.
#[must_use]
pub fn text_input_instructions(tools: &[&str]) -> String {
    format!(
        "- The input of {} is free text, not JSON arguments: write {{\"name\": \"TOOL_NAME\", \
         \"input\": \"...\"}} with the whole text as one JSON string (line breaks as \\n).",
        tools.join(", ")
    )
}

/// A problem with an envelope.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EnvelopeError {
    /// Not `{"name": "...", "arguments": {...}}`, or never closed.
    #[error("malformed tool call ({0})")]
    Malformed(String),
    /// Longer than the limit.
    #[error("tool call is longer than the limit")]
    TooLong,
    /// Names no offered tool.
    #[error("there is no tool named `{0}`")]
    UnknownTool(String),
    /// Arguments do not fit the tool's schema.
    #[error("invalid arguments for `{tool}`: {}", problems.join("; "))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong.
        problems: Vec<String>,
    },
}

/// A complete envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEnvelope {
    /// The tool name as written.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
    /// A text input (`"input": "…"`), for a tool taking free text.
    pub input: Option<String>,
}

/// What the scanner found, in order.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum ScanItem {
    /// Ordinary answer text (never empty).
    Text(String),
    /// An envelope, or why it is not a valid one.
    Envelope(Result<RawEnvelope, EnvelopeError>),
}

/// Finds envelopes in streamed text. Drain [`poll`](Self::poll) after every
/// [`push`](Self::push) and [`finish`](Self::finish).
#[derive(Debug)]
pub struct EnvelopeScanner {
    max: usize,
    state: State,
    /// Outside: a suffix that may be the start of `<tool_call>`. Inside: the body so far.
    held: String,
    /// Where the closing tag may be, inside an envelope.
    lexer: BodyLexer,
    items: VecDeque<ScanItem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    Inside,
    /// Skipping an over-limit envelope up to its end.
    Skipping,
}

impl EnvelopeScanner {
    /// A scanner accepting envelope bodies of up to `max_envelope_bytes`.
    #[must_use]
    pub fn new(max_envelope_bytes: usize) -> Self {
        EnvelopeScanner {
            max: max_envelope_bytes,
            state: State::Text,
            held: String::new(),
            lexer: BodyLexer::default(),
            items: VecDeque::new(),
        }
    }

    /// Whether text is held back: a possible opening tag, or an envelope in progress.
    #[must_use]
    pub fn holding(&self) -> bool {
        self.state != State::Text || !self.held.is_empty()
    }

    /// A text delta.
    pub fn push(&mut self, text: &str) {
        let mut rest = text;
        while !rest.is_empty() {
            rest = match self.state {
                State::Text => self.scan_text(rest),
                State::Inside | State::Skipping => self.scan_inside(rest),
            };
        }
    }

    /// The text ended: held text is released; an envelope still open is malformed.
    pub fn finish(&mut self) {
        match self.state {
            State::Text => {
                if !self.held.is_empty() {
                    let text = std::mem::take(&mut self.held);
                    self.items.push_back(ScanItem::Text(text));
                }
            }
            State::Inside => {
                self.held.clear();
                self.items
                    .push_back(ScanItem::Envelope(Err(EnvelopeError::Malformed(format!(
                        "the text ended before {CLOSE}"
                    )))));
            }
            State::Skipping => self.held.clear(),
        }
        self.state = State::Text;
        self.lexer = BodyLexer::default();
    }

    /// The next item.
    #[must_use]
    pub fn poll(&mut self) -> Option<ScanItem> {
        self.items.pop_front()
    }

    /// Scans text outside an envelope; returns what follows an opening tag.
    fn scan_text<'t>(&mut self, text: &'t str) -> &'t str {
        // `held` is a proper prefix of the tag (under 11 bytes): only it is searched twice.
        let base = self.held.len();
        self.held.push_str(text);
        if let Some(at) = memmem::find(self.held.as_bytes(), OPEN.as_bytes()) {
            // The tag cannot lie wholly in the old `held`, so it ends inside `text`.
            let consumed = at + OPEN.len() - base;
            self.held.truncate(at);
            if !self.held.is_empty() {
                let before = std::mem::take(&mut self.held);
                self.items.push_back(ScanItem::Text(before));
            }
            self.state = State::Inside;
            self.lexer = BodyLexer::default();
            return &text[consumed..];
        }
        let keep = partial_suffix(self.held.as_bytes(), OPEN.as_bytes());
        let release = self.held.len() - keep;
        if release > 0 {
            // The kept suffix starts with `<`: a character boundary.
            let tail = self.held.split_off(release);
            let text = std::mem::replace(&mut self.held, tail);
            self.items.push_back(ScanItem::Text(text));
        }
        ""
    }

    /// Scans inside an envelope; returns what follows its closing tag.
    fn scan_inside<'t>(&mut self, text: &'t str) -> &'t str {
        let end = text
            .bytes()
            .position(|byte| self.lexer.step(byte))
            .map(|at| at + 1);
        let piece = &text[..end.unwrap_or(text.len())];
        // Bytes certainly in the body: all but a closing tag, or the start of one.
        let pending = if end.is_some() {
            CLOSE.len()
        } else {
            self.lexer.matched
        };
        if self.state == State::Inside {
            let body_len = (self.held.len() + piece.len()).saturating_sub(pending);
            if body_len > self.max {
                self.items
                    .push_back(ScanItem::Envelope(Err(EnvelopeError::TooLong)));
                self.held.clear();
                self.state = State::Skipping;
            } else {
                self.held.push_str(piece);
            }
        }
        let Some(end) = end else {
            return "";
        };
        if self.state == State::Inside {
            // The closing tag is ASCII: cutting it off leaves a character boundary.
            self.held.truncate(self.held.len() - CLOSE.len());
            let item = parse(&self.held);
            self.items.push_back(ScanItem::Envelope(item));
        }
        self.held.clear();
        self.state = State::Text;
        self.lexer = BodyLexer::default();
        &text[end..]
    }
}

/// Tracks, byte by byte, JSON strings and the closing tag inside an envelope body.
#[derive(Debug, Default, Clone)]
struct BodyLexer {
    /// Bytes of `</tool_call>` matched so far.
    matched: usize,
    /// Whether the tag being matched may close the envelope.
    eligible: bool,
    /// A `{` has been seen: quotes now open and close strings.
    json: bool,
    in_string: bool,
    escape: bool,
    /// After a raw line break and only blanks since.
    line_start: bool,
}

impl BodyLexer {
    /// Takes one byte; whether it completes the closing tag.
    fn step(&mut self, byte: u8) -> bool {
        let close = CLOSE.as_bytes();
        if self.matched > 0 && byte == close[self.matched] {
            self.matched += 1;
        } else if byte == b'<' {
            self.matched = 1;
            self.eligible = !self.in_string || self.line_start;
        } else {
            self.matched = 0;
        }
        let closed = self.matched == close.len() && self.eligible;
        if self.matched == close.len() {
            self.matched = 0;
        }
        self.line_start = match byte {
            b'\n' => true,
            b' ' | b'\t' | b'\r' => self.line_start,
            _ => false,
        };
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if byte == b'\\' {
                self.escape = true;
            } else if byte == b'"' {
                self.in_string = false;
            }
        } else if byte == b'{' {
            self.json = true;
        } else if byte == b'"' && self.json {
            self.in_string = true;
        }
        closed
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_suffix(text: &[u8], tag: &[u8]) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

/// Reads an envelope body.
fn parse(body: &str) -> Result<RawEnvelope, EnvelopeError> {
    let body = strip_fence(body.trim());
    let value = match serde_json::from_str::<Value>(body) {
        Ok(value) => value,
        Err(error) => serde_json::from_str::<Value>(&escape_raw_controls(body)).map_err(|_| {
            EnvelopeError::Malformed(format!("the JSON could not be read: {error}"))
        })?,
    };
    let Value::Object(mut object) = value else {
        return Err(EnvelopeError::Malformed(
            "the body is not a JSON object".into(),
        ));
    };
    if !object.contains_key("name") {
        if let Some(Value::Object(function)) = object.remove("function") {
            object = function;
        }
    }
    let name = match object.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        _ => {
            return Err(EnvelopeError::Malformed(
                "\"name\" must be the tool's name".into(),
            ));
        }
    };
    let input = match object.remove("input") {
        Some(Value::String(text)) => Some(text),
        // An object is the arguments, as in Anthropic's `tool_use` blocks.
        Some(other) => {
            if !object.contains_key("arguments") && !object.contains_key("parameters") {
                object.insert("arguments".to_owned(), other);
            }
            None
        }
        None => None,
    };
    let arguments = object
        .remove("arguments")
        .or_else(|| object.remove("parameters"));
    let arguments = match arguments {
        Some(Value::Object(args)) => Value::Object(args),
        // A model may write the arguments as JSON text, as OpenAI sends them.
        Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(object @ Value::Object(_)) => object,
            _ => {
                return Err(EnvelopeError::Malformed(
                    "\"arguments\" must be a JSON object".into(),
                ));
            }
        },
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(_) => {
            return Err(EnvelopeError::Malformed(
                "\"arguments\" must be a JSON object".into(),
            ));
        }
    };
    Ok(RawEnvelope {
        name,
        arguments,
        input,
    })
}

/// The JSON inside a Markdown code fence, if the body is fenced.
fn strip_fence(body: &str) -> &str {
    let Some(rest) = body.strip_prefix("```") else {
        return body;
    };
    // The rest of the fence line is a language tag.
    let rest = rest.split_once('\n').map_or("", |(_, rest)| rest);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// `text` with raw line breaks, carriage returns and tabs inside JSON strings escaped: the
/// commonest way models break otherwise valid JSON.
fn escape_raw_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escape) = (false, false);
    for c in text.chars() {
        if in_string {
            match c {
                _ if escape => escape = false,
                '\\' => escape = true,
                '"' => in_string = false,
                '\n' => {
                    out.push_str("\\n");
                    continue;
                }
                '\r' => {
                    out.push_str("\\r");
                    continue;
                }
                '\t' => {
                    out.push_str("\\t");
                    continue;
                }
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn drain(scanner: &mut EnvelopeScanner, items: &mut Vec<ScanItem>) {
        while let Some(item) = scanner.poll() {
            if let ScanItem::Text(text) = &item {
                assert!(!text.is_empty(), "no empty text items");
            }
            items.push(item);
        }
    }

    /// Scans `pieces` with a `max`-byte limit; adjacent text items merged.
    fn scan_with(max: usize, pieces: &[&str]) -> Vec<ScanItem> {
        let mut scanner = EnvelopeScanner::new(max);
        let mut items = Vec::new();
        for piece in pieces {
            scanner.push(piece);
            drain(&mut scanner, &mut items);
        }
        scanner.finish();
        drain(&mut scanner, &mut items);
        assert!(!scanner.holding());
        let mut merged: Vec<ScanItem> = Vec::new();
        for item in items {
            match (merged.last_mut(), item) {
                (Some(ScanItem::Text(a)), ScanItem::Text(b)) => a.push_str(&b),
                (_, item) => merged.push(item),
            }
        }
        merged
    }

    /// The items for `text` whole, checked equal for every two-way split, every three-way
    /// split around each offset, and a byte (character) at a time.
    fn every_split(text: &str) -> Vec<ScanItem> {
        every_split_with(1 << 20, text)
    }

    fn every_split_with(max: usize, text: &str) -> Vec<ScanItem> {
        let whole = scan_with(max, &[text]);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(scan_with(max, &refs), whole, "a character at a time");
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for &at in &cuts {
            assert_eq!(
                scan_with(max, &[&text[..at], &text[at..]]),
                whole,
                "split at {at}"
            );
            let second = (at + 7).min(text.len());
            if text.is_char_boundary(second) {
                assert_eq!(
                    scan_with(max, &[&text[..at], "", &text[at..second], &text[second..]]),
                    whole,
                    "split at {at} and {second}"
                );
            }
        }
        whole
    }

    fn envelope(item: &ScanItem) -> &RawEnvelope {
        match item {
            ScanItem::Envelope(Ok(envelope)) => envelope,
            other => panic!("not an envelope: {other:?}"),
        }
    }

    #[test]
    fn envelope_between_text() {
        let text = "Writing it.\n<tool_call>\n{\"name\": \"write\", \"arguments\": {\"filePath\": \"a\", \"content\": \"<tool_call>?\"}}\n</tool_call>\nDone.";
        let items = every_split(text);
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], ScanItem::Text("Writing it.\n".into()));
        let call = envelope(&items[1]);
        assert_eq!(call.name, "write");
        assert_eq!(call.arguments["content"], "<tool_call>?");
        assert_eq!(items[2], ScanItem::Text("\nDone.".into()));
    }

    #[test]
    fn closing_tag_inside_a_json_string_does_not_close() {
        let text = "<tool_call>{\"name\":\"write\",\"arguments\":{\"content\":\"a </tool_call> b \\\" </tool_call>\"}}</tool_call>after";
        let items = every_split(text);
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(
            envelope(&items[0]).arguments["content"],
            "a </tool_call> b \" </tool_call>"
        );
        assert_eq!(items[1], ScanItem::Text("after".into()));
    }

    #[test]
    fn broken_json_still_closes_at_a_line_start() {
        // An unbalanced quote would leave the lexer "in a string" for ever.
        let text = "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo \"hi}}\n  </tool_call>\nafter";
        let items = every_split(text);
        assert!(
            matches!(
                &items[0],
                ScanItem::Envelope(Err(EnvelopeError::Malformed(_)))
            ),
            "{items:?}"
        );
        assert_eq!(items[1], ScanItem::Text("\nafter".into()));
        // Prose, not JSON: the first closing tag ends it.
        let items = every_split("<tool_call>I \"think </tool_call>x");
        assert_eq!(items.len(), 2);
        assert_eq!(items[1], ScanItem::Text("x".into()));
    }

    #[test]
    fn near_misses_are_text() {
        for text in [
            "a < b and <tool and <tool_cal",
            "<tool_calls>x",
            "é<tool😀",
            "<<<tool_call",
            "</tool_call> without an opening",
            "<",
            "",
        ] {
            let expected: Vec<ScanItem> = if text.is_empty() {
                vec![]
            } else {
                vec![ScanItem::Text(text.into())]
            };
            assert_eq!(every_split(text), expected, "{text}");
        }
    }

    #[test]
    fn only_a_possible_tag_is_held() {
        let mut scanner = EnvelopeScanner::new(1024);
        scanner.push("Hello <to");
        assert_eq!(scanner.poll(), Some(ScanItem::Text("Hello ".into())));
        assert_eq!(scanner.poll(), None);
        assert!(scanner.holding());
        scanner.push("day");
        assert_eq!(scanner.poll(), Some(ScanItem::Text("<today".into())));
        assert!(!scanner.holding());
        scanner.push("<tool_call>{\"name\":");
        assert_eq!(scanner.poll(), None, "a partial envelope never leaks");
        assert!(scanner.holding());
        scanner.push("\"x\"}</tool_call>");
        assert!(matches!(scanner.poll(), Some(ScanItem::Envelope(Ok(_)))));
        assert!(!scanner.holding());
    }

    #[test]
    fn parallel_and_malformed() {
        let items = every_split(
            "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"b\"}</tool_call><tool_call>nope</tool_call><tool_call>{\"name\":\"c\"",
        );
        assert_eq!(envelope(&items[0]).name, "a");
        assert_eq!(envelope(&items[1]).name, "b");
        assert!(matches!(
            &items[2],
            ScanItem::Envelope(Err(EnvelopeError::Malformed(_)))
        ));
        let ScanItem::Envelope(Err(EnvelopeError::Malformed(why))) = &items[3] else {
            panic!("{items:?}")
        };
        assert!(why.contains("ended"), "{why}");
        assert_eq!(items.len(), 4);
    }

    #[test]
    fn text_inputs_and_input_objects() {
        // A freeform tool's text, with the raw line breaks models write inside strings.
        let items = every_split(
            "<tool_call>\n{\"name\": \"apply_patch\", \"input\": \"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n\"}\n</tool_call>",
        );
        let call = envelope(&items[0]);
        assert_eq!(
            (call.name.as_str(), call.input.as_deref()),
            (
                "apply_patch",
                Some("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n")
            )
        );
        assert_eq!(call.arguments, json!({}));
        // An `input` object is the arguments (Anthropic's `tool_use` shape), unless
        // `arguments` is there too.
        let items = every_split(
            "<tool_call>{\"name\":\"read\",\"input\":{\"path\":\"a\"}}</tool_call><tool_call>{\"name\":\"read\",\"input\":{\"path\":\"a\"},\"arguments\":{\"path\":\"b\"}}</tool_call>",
        );
        assert_eq!(envelope(&items[0]).arguments, json!({"path":"a"}));
        assert_eq!(envelope(&items[0]).input, None);
        assert_eq!(envelope(&items[1]).arguments, json!({"path":"b"}));
    }

    #[test]
    fn lenient_shapes() {
        let cases = [
            (r#"{"name":"a","arguments":"{\"x\":1}"}"#, json!({"x":1})),
            (r#"{"name":"a","arguments":""}"#, json!({})),
            (r#"{"name":"a","arguments":null}"#, json!({})),
            (r#"{"name":"a","parameters":{"x":1}}"#, json!({"x":1})),
            (
                r#"{"function":{"name":"a","arguments":"{\"x\":1}"}}"#,
                json!({"x":1}),
            ),
            (
                "```json\n{\"name\":\"a\",\"arguments\":{\"x\":1}}\n```",
                json!({"x":1}),
            ),
            (
                "{\"name\":\"a\",\"arguments\":{\"x\":\"line\none\ttab\"}}",
                json!({"x":"line\none\ttab"}),
            ),
        ];
        for (body, arguments) in cases {
            let items = every_split(&format!("{OPEN}\n{body}\n{CLOSE}"));
            assert_eq!(items.len(), 1, "{body}");
            let call = envelope(&items[0]);
            assert_eq!(
                (call.name.as_str(), &call.arguments),
                ("a", &arguments),
                "{body}"
            );
        }
        for body in [
            r#"{"name":"","arguments":{}}"#,
            r#"{"name":1}"#,
            r#"{"name":"a","arguments":[1]}"#,
            r#"{"name":"a","arguments":"[1]"}"#,
            r#"["a"]"#,
            r#"{"name":"a"} trailing"#,
            "",
        ] {
            let items = every_split(&format!("{OPEN}{body}{CLOSE}"));
            assert!(
                matches!(
                    &items[..],
                    [ScanItem::Envelope(Err(EnvelopeError::Malformed(_)))]
                ),
                "{body}: {items:?}"
            );
        }
    }

    /// Item sequences agree for any chunking and never show an opening tag as text.
    mod props {
        use super::*;
        use proptest::prelude::*;

        const PIECES: &[&str] = &[
            OPEN,
            CLOSE,
            "<tool",
            "_call>",
            "</tool",
            "<",
            ">",
            "/",
            "\"",
            "\\",
            "{",
            "}",
            "\n",
            " ",
            "x",
            "é",
            "🐢",
            r#"{"name":"a","arguments":{"k":"v"}}"#,
            r#"{"name":"#,
            r#""a"}"#,
            "```",
            "tool_call",
        ];

        fn text() -> impl Strategy<Value = String> {
            prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|p| p.concat())
        }

        proptest! {
            #[test]
            fn any_chunking_gives_the_same_items(
                text in text(),
                cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
                max in prop_oneof![Just(1usize << 20), 1usize..48],
            ) {
                let mut offsets: Vec<usize> = cuts
                    .iter()
                    .map(|cut| cut.index(text.len() + 1))
                    .filter(|&at| text.is_char_boundary(at))
                    .collect();
                offsets.sort_unstable();
                let mut pieces = Vec::new();
                let mut from = 0;
                for at in offsets {
                    pieces.push(&text[from..at]);
                    from = at;
                }
                pieces.push(&text[from..]);
                let whole = scan_with(max, &[&text]);
                prop_assert_eq!(scan_with(max, &pieces), whole.clone());
                for item in &whole {
                    if let ScanItem::Text(t) = item {
                        prop_assert!(!t.contains(OPEN), "{:?}", t);
                    }
                }
                if !text.contains(OPEN) {
                    let expected: Vec<ScanItem> = if text.is_empty() {
                        vec![]
                    } else {
                        vec![ScanItem::Text(text.clone())]
                    };
                    prop_assert_eq!(whole, expected);
                }
            }

            #[test]
            fn arbitrary_text_never_panics(text in any::<String>(), max in 0usize..64) {
                let bytes: Vec<&str> = text
                    .char_indices()
                    .map(|(i, c)| &text[i..i + c.len_utf8()])
                    .collect();
                prop_assert_eq!(scan_with(max, &bytes), scan_with(max, &[&text]));
            }
        }
    }

    #[test]
    fn over_limit_envelope_is_reported_and_skipped() {
        let mut scanner = EnvelopeScanner::new(16);
        scanner.push("<tool_call>");
        for _ in 0..1000 {
            scanner.push("xxxxxxxxxx");
            assert!(scanner.held.len() <= 16 + CLOSE.len());
        }
        scanner.push("</tool_call>after");
        scanner.finish();
        let items: Vec<ScanItem> = std::iter::from_fn(|| scanner.poll()).collect();
        assert_eq!(
            items,
            [
                ScanItem::Envelope(Err(EnvelopeError::TooLong)),
                ScanItem::Text("after".into())
            ]
        );
    }

    #[test]
    fn the_limit_does_not_depend_on_the_split() {
        let body = r#"{"name":"a","arguments":{"x":"0123"}}"#;
        let text = format!("{OPEN}{body}{CLOSE}tail");
        let fits = every_split_with(body.len(), &text);
        assert_eq!(envelope(&fits[0]).name, "a");
        let over = every_split_with(body.len() - 1, &text);
        assert_eq!(
            over,
            [
                ScanItem::Envelope(Err(EnvelopeError::TooLong)),
                ScanItem::Text("tail".into())
            ]
        );
        // A skipped envelope's closing tag inside a string does not end the skip.
        let text = format!("{OPEN}{{\"name\":\"a\",\"x\":\"{CLOSE}\"}}{CLOSE}tail");
        assert_eq!(every_split_with(4, &text)[1], ScanItem::Text("tail".into()));
    }

    #[test]
    fn byte_at_a_time_is_linear() {
        // Quadratic rescanning would take minutes here.
        let body = format!(
            "{{\"name\":\"a\",\"arguments\":{{\"x\":\"{}\"}}}}",
            "<".repeat(200_000)
        );
        let text = format!(
            "{}{OPEN}{body}{CLOSE}{}",
            "<".repeat(200_000),
            "<tool_cal".repeat(20_000)
        );
        let mut scanner = EnvelopeScanner::new(1 << 20);
        let mut items = Vec::new();
        for i in 0..text.len() {
            scanner.push(&text[i..=i]);
            drain(&mut scanner, &mut items);
        }
        scanner.finish();
        drain(&mut scanner, &mut items);
        let envelopes = items
            .iter()
            .filter(|item| matches!(item, ScanItem::Envelope(Ok(_))))
            .count();
        let text_len: usize = items
            .iter()
            .map(|item| match item {
                ScanItem::Text(t) => t.len(),
                ScanItem::Envelope(_) => 0,
            })
            .sum();
        assert_eq!((envelopes, text_len), (1, 200_000 + 9 * 20_000));
    }

    #[test]
    fn multibyte_text_around_and_inside() {
        let text = "żółw 🐢 <tool_call>{\"name\":\"ścieżka\",\"arguments\":{\"t\":\"日本語 </tool_call>\"}}</tool_call> ü";
        let items = every_split(text);
        assert_eq!(items[0], ScanItem::Text("żółw 🐢 ".into()));
        assert_eq!(envelope(&items[1]).name, "ścieżka");
        assert_eq!(items[2], ScanItem::Text(" ü".into()));
    }

    #[test]
    fn instructions_teach_the_exact_syntax() {
        let text = instructions(&["write", "edit"]);
        assert!(text.contains("(write, edit)"), "{text}");
        assert!(text.contains(&format!(
            "{OPEN}\n{{\"name\": \"TOOL_NAME\", \"arguments\": {{...}}}}\n{CLOSE}"
        )));
        assert!(instructions(&[]).contains("To call a tool"));
    }
}
