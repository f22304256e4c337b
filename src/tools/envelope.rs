//! Text envelopes: how the model calls a client tool that the agent has no native form of
//! (or may not run itself), by writing the call in its answer text.
//!
//! The syntax, taught in the prompt:
//!
//! ```text
//! <tool_call>
//! {"name": "TOOL_NAME", "arguments": {...}}
//! </tool_call>
//! ```
//!
//! One envelope per call; envelopes written one after another are parallel calls. White
//! space around the JSON is ignored. The tags are recognised anywhere in the text (inside a
//! Markdown code block too: the model is told to use them only for calls).
//!
//! [`EnvelopeScanner`] finds them in streamed text deltas: text passes through at once,
//! except a suffix that could still become `<tool_call>` (at most 10 bytes) and the inside
//! of an envelope, which is buffered until `</tool_call>` (bounded by its limit). A partial
//! envelope never reaches the text; text that turns out not to be one is released. Work is
//! linear in the text, whatever its split into deltas.

use std::collections::VecDeque;

use serde_json::Value;
use thiserror::Error;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// The envelope instructions for the prompt, naming the tools that must be called this way.
pub fn instructions(tools: &[&str]) -> String {
    format!(
        "To call one of these tools ({}), write the call in your answer exactly like this, \
         with nothing else on those lines:\n\n{OPEN}\n{{\"name\": \"TOOL_NAME\", \"arguments\": {{...}}}}\n{CLOSE}\n\n\
         The arguments are a JSON object matching the tool's parameters. Write one block per \
         call; several blocks in a row are run together. After the last block, stop and wait: \
         the results come back in the next message. Never write these tags for any other purpose.",
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
}

/// What the scanner found, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ScanItem {
    /// Ordinary answer text.
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
    /// Text that may be the start of `<tool_call>`, or the inside of an envelope.
    held: String,
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
    /// A scanner accepting envelopes of up to `max_envelope_bytes`.
    pub fn new(max_envelope_bytes: usize) -> Self {
        EnvelopeScanner {
            max: max_envelope_bytes,
            state: State::Text,
            held: String::new(),
            items: VecDeque::new(),
        }
    }

    /// Whether some text is held back.
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
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

    /// The text ended: release held text; an unclosed envelope is malformed.
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
                    .push_back(ScanItem::Envelope(Err(EnvelopeError::Malformed(
                        "it was never closed".into(),
                    ))));
            }
            State::Skipping => self.held.clear(),
        }
        self.state = State::Text;
    }

    /// The next item.
    #[must_use]
    pub fn poll(&mut self) -> Option<ScanItem> {
        self.items.pop_front()
    }

    /// Scans text outside an envelope; returns what is left after an opening tag.
    fn scan_text<'t>(&mut self, text: &'t str) -> &'t str {
        // Only the held suffix (under 11 bytes) is searched twice.
        let base = self.held.len();
        self.held.push_str(text);
        if let Some(at) = self.held.find(OPEN) {
            let consumed = at + OPEN.len() - base;
            if at > 0 {
                self.items
                    .push_back(ScanItem::Text(self.held[..at].to_owned()));
            }
            self.held.clear();
            self.state = State::Inside;
            return &text[consumed..];
        }
        let keep = partial_suffix(&self.held, OPEN);
        let release = self.held.len() - keep;
        if release > 0 {
            let tail = self.held.split_off(release);
            let text = std::mem::replace(&mut self.held, tail);
            self.items.push_back(ScanItem::Text(text));
        }
        ""
    }

    /// Scans inside an envelope; returns what is left after the closing tag.
    fn scan_inside<'t>(&mut self, text: &'t str) -> &'t str {
        let base = self.held.len();
        let from = base.saturating_sub(CLOSE.len() - 1);
        self.held.push_str(text);
        let Some(found) = self.held[from..].find(CLOSE) else {
            if self.state == State::Skipping {
                let keep = partial_suffix(&self.held, CLOSE);
                self.held.drain(..self.held.len() - keep);
            } else if self.held.len() > self.max {
                self.items
                    .push_back(ScanItem::Envelope(Err(EnvelopeError::TooLong)));
                self.state = State::Skipping;
                let keep = partial_suffix(&self.held, CLOSE);
                self.held.drain(..self.held.len() - keep);
            }
            return "";
        };
        let at = from + found;
        let consumed = at + CLOSE.len() - base;
        if self.state == State::Inside {
            let item = parse(self.held[..at].trim());
            self.items.push_back(ScanItem::Envelope(item));
        }
        self.held.clear();
        self.state = State::Text;
        &text[consumed..]
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.is_char_boundary(text.len() - n) && text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

fn parse(body: &str) -> Result<RawEnvelope, EnvelopeError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| EnvelopeError::Malformed(format!("not JSON: {e}")))?;
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| EnvelopeError::Malformed("no \"name\"".into()))?;
    let arguments = match value.get("arguments") {
        Some(Value::Object(args)) => Value::Object(args.clone()),
        // A model may write the arguments as a JSON string.
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => object,
            _ => {
                return Err(EnvelopeError::Malformed(
                    "\"arguments\" is not an object".into(),
                ));
            }
        },
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(_) => {
            return Err(EnvelopeError::Malformed(
                "\"arguments\" is not an object".into(),
            ));
        }
    };
    Ok(RawEnvelope {
        name: name.to_owned(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&str]) -> Vec<ScanItem> {
        let mut scanner = EnvelopeScanner::new(1 << 20);
        let mut items = Vec::new();
        for piece in pieces {
            scanner.push(piece);
            items.extend(std::iter::from_fn(|| scanner.poll()));
        }
        scanner.finish();
        items.extend(std::iter::from_fn(|| scanner.poll()));
        // Adjacent text items are one text, however split.
        let mut merged: Vec<ScanItem> = Vec::new();
        for item in items {
            match (merged.last_mut(), item) {
                (Some(ScanItem::Text(a)), ScanItem::Text(b)) => a.push_str(&b),
                (_, item) => merged.push(item),
            }
        }
        merged
    }

    fn every_split(text: &str) -> Vec<ScanItem> {
        let whole = scan(&[text]);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(scan(&refs), whole, "char at a time");
        for at in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            assert_eq!(scan(&[&text[..at], &text[at..]]), whole, "split at {at}");
        }
        whole
    }

    #[test]
    fn envelope_between_text() {
        let text = "Writing it.\n<tool_call>\n{\"name\": \"write\", \"arguments\": {\"filePath\": \"a\", \"content\": \"<tool_call>?\"}}\n</tool_call>\nDone.";
        let items = every_split(text);
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], ScanItem::Text("Writing it.\n".into()));
        let ScanItem::Envelope(Ok(envelope)) = &items[1] else {
            panic!("{items:?}")
        };
        assert_eq!(envelope.name, "write");
        assert_eq!(envelope.arguments["content"], "<tool_call>?");
        assert_eq!(items[2], ScanItem::Text("\nDone.".into()));
    }

    #[test]
    fn near_misses_are_text() {
        for text in ["a < b and <tool and <tool_cal", "<tool_calls>x", "é<tool😀"] {
            assert_eq!(every_split(text), [ScanItem::Text(text.into())], "{text}");
        }
    }

    #[test]
    fn parallel_and_malformed() {
        let items = every_split(
            "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"b\"}</tool_call><tool_call>nope</tool_call><tool_call>{\"name\":\"c\"",
        );
        assert!(matches!(&items[0], ScanItem::Envelope(Ok(e)) if e.name == "a"));
        assert!(matches!(&items[1], ScanItem::Envelope(Ok(e)) if e.name == "b"));
        assert!(matches!(
            &items[2],
            ScanItem::Envelope(Err(EnvelopeError::Malformed(_)))
        ));
        assert!(matches!(
            &items[3],
            ScanItem::Envelope(Err(EnvelopeError::Malformed(_)))
        ));
        assert_eq!(items.len(), 4);
    }

    #[test]
    fn over_limit_envelope_is_reported_and_skipped() {
        let mut scanner = EnvelopeScanner::new(16);
        scanner.push("<tool_call>");
        for _ in 0..1000 {
            scanner.push("xxxxxxxxxx");
            assert!(scanner.held.len() <= 16 + 10);
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
    fn instructions_name_the_tools() {
        let text = instructions(&["write", "edit"]);
        assert!(text.contains("write, edit") && text.contains(OPEN) && text.contains(CLOSE));
    }
}
