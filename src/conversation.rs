//! The conversation a request carries, in no dialect's terms: who said what, the tool calls
//! made and what they returned, the tools the client offers and what it allows the next
//! reply to do.
//!
//! Every request dialect parses into a [`Conversation`] (inside an [`api::Request`]);
//! everything downstream reads only this: the tool plan ([`tools::ToolPlan`]), the loop
//! guard ([`tools::loop_guard`]) and the prompt the agent is given ([`cursor::prompt`]).
//! A new request dialect is therefore one new parser.
//!
//! What the model holds, and why each piece is here rather than in a dialect:
//!
//! - **Turns in place.** [`Role::System`] and [`Role::Developer`] messages may appear
//!   anywhere in [`Conversation::messages`], not only first: clients send instructions in
//!   the middle of a conversation, and some send their whole system prompt as developer
//!   messages. A dialect's top-level instructions (a separate `system` or `instructions`
//!   field) become a first system message.
//! - **Content as parts.** A message's content is a list of [`Part`]s: text, or an
//!   [`Attachment`] (an image, audio clip or document) kept as what it is — its kind, media
//!   type and size — but never its bytes: the agent reads text only, so the prompt shows a
//!   short placeholder in its place ([`cursor::prompt`]).
//! - **Tool results as messages** of [`Role::Tool`] with parts and an
//!   [`is_error`](Message::is_error) flag the client may set.
//! - **Function and freeform tools.** A [`ToolSpec`] takes a JSON object of arguments
//!   ([`ToolKind::Function`]) or raw text ([`ToolKind::Freeform`], such as a patch, with an
//!   optional grammar).
//! - **What the next reply may do**: [`ToolChoice`], whether calls may be parallel, and the
//!   [`OutputFormat`] (free text or JSON) the client wants.
//!
//! What is deliberately not here: opaque reasoning a client echoes back (signatures,
//! encrypted content) and earlier reasoning text, which the agent cannot use; tools the
//! client's provider would run itself (hosted search, server tools), which the agent cannot
//! call; per-message cache hints. Dialect parsers accept and drop them.
//!
//! [`api::Request`]: crate::api::Request
//! [`cursor::prompt`]: crate::cursor::prompt
//! [`tools::ToolPlan`]: crate::tools::ToolPlan
//! [`tools::loop_guard`]: crate::tools::loop_guard

use std::borrow::Cow;

use serde_json::Value;

/// One request's conversation and the client's tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// The client's tools.
    pub tools: Vec<ToolSpec>,
    /// Which tools the next reply may or must call.
    pub tool_choice: ToolChoice,
    /// Whether the next reply may call several tools at once.
    pub parallel_tool_calls: bool,
    /// The shape the client wants the next reply in.
    pub output_format: OutputFormat,
}

impl Default for Conversation {
    /// No messages, no tools, `tool_choice` none, parallel calls allowed, free text.
    fn default() -> Self {
        Conversation {
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
            parallel_tool_calls: true,
            output_format: OutputFormat::Text,
        }
    }
}

impl Conversation {
    /// The current turn: the messages after the last [`Role::User`] message (all of them
    /// when there is none). What the agent did since the user last spoke.
    #[must_use]
    pub fn current_turn(&self) -> &[Message] {
        let start = self
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |at| at + 1);
        &self.messages[start..]
    }
}

/// A message author.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// System instructions; anywhere in the conversation.
    System,
    /// Developer instructions (a newer name for system instructions); anywhere in the
    /// conversation.
    Developer,
    /// The user.
    User,
    /// The assistant: text, tool calls, or both.
    Assistant,
    /// A tool result.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Content, in order; empty when there is none.
    pub content: Vec<Part>,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<HistoryToolCall>,
    /// For a tool result: the call it answers.
    pub tool_call_id: Option<String>,
    /// Optional author name.
    pub name: Option<String>,
    /// For a tool result: the client reports that the call failed.
    pub is_error: bool,
}

impl Message {
    /// A message of `role` holding `text` (no part at all when `text` is empty).
    pub fn new(role: Role, text: impl Into<String>) -> Message {
        let text = text.into();
        Message {
            role,
            content: if text.is_empty() {
                Vec::new()
            } else {
                vec![Part::Text(text)]
            },
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            is_error: false,
        }
    }

    /// An assistant message with `text` (possibly empty) and these tool calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<HistoryToolCall>) -> Message {
        Message {
            tool_calls,
            ..Message::new(Role::Assistant, text)
        }
    }

    /// The result of the tool call `call_id`, as `text`.
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Message::new(Role::Tool, text)
        }
    }

    /// The text parts, joined by line breaks (attachments left out). Borrowed when there
    /// is at most one text part.
    #[must_use]
    pub fn text(&self) -> Cow<'_, str> {
        let mut texts = self.content.iter().filter_map(Part::as_text);
        let Some(first) = texts.next() else {
            return Cow::Borrowed("");
        };
        match texts.next() {
            None => Cow::Borrowed(first),
            Some(second) => {
                let mut joined = format!("{first}\n{second}");
                for text in texts {
                    joined.push('\n');
                    joined.push_str(text);
                }
                Cow::Owned(joined)
            }
        }
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text.
    Text(String),
    /// Something that is not text (the agent is shown a placeholder).
    Attachment(Attachment),
}

impl Part {
    /// The text, if this is a text part.
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text(text) => Some(text),
            Part::Attachment(_) => None,
        }
    }
}

/// An image, audio clip or document a client sent: what it is, never its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// What kind of thing it is.
    pub kind: AttachmentKind,
    /// Its media type as the client gave it (`image/png`, `application/pdf`), when known.
    pub media_type: Option<String>,
    /// Its size in bytes (decoded), when the client sent the bytes.
    pub size: Option<u64>,
    /// A file name, title or URL the client gave it, when any.
    pub name: Option<String>,
}

impl Attachment {
    /// The most characters of a name or media type a placeholder shows.
    const SHOWN_CHARS: usize = 200;

    /// Appends the one-line text shown in place of the attachment: its kind, name, media
    /// type and size as far as they are known, e.g. `[image "shot.png" not shown
    /// (image/png, 2.0 KiB): only text reaches you]`. Control characters in the name or
    /// media type are escaped and each is cut at 200 characters, so the placeholder is one
    /// line of bounded length.
    pub fn write_placeholder(&self, out: &mut String) {
        let shown = |text: &str, out: &mut String| {
            for (i, c) in text.chars().enumerate() {
                if i == Self::SHOWN_CHARS {
                    out.push('…');
                    break;
                }
                if c.is_control() {
                    out.extend(c.escape_unicode());
                } else {
                    out.push(c);
                }
            }
        };
        out.push('[');
        out.push_str(self.kind.as_str());
        if let Some(name) = &self.name {
            out.push_str(" \"");
            shown(name, out);
            out.push('"');
        }
        out.push_str(" not shown");
        match (&self.media_type, self.size) {
            (None, None) => {}
            (media_type, size) => {
                out.push_str(" (");
                if let Some(media_type) = media_type {
                    shown(media_type, out);
                    if size.is_some() {
                        out.push_str(", ");
                    }
                }
                if let Some(size) = size {
                    write_size(size, out);
                }
                out.push(')');
            }
        }
        out.push_str(": only text reaches you]");
    }
}

/// A byte count for people: `512 bytes`, `12.0 KiB`, `3.4 MiB`, `1.2 GiB`.
fn write_size(bytes: u64, out: &mut String) {
    use std::fmt::Write as _;
    const KIB: f64 = 1024.0;
    // Precision beyond the first decimal is irrelevant here.
    let n = bytes as f64;
    let _ = if bytes < 1024 {
        write!(out, "{bytes} bytes")
    } else if n < KIB * KIB {
        write!(out, "{:.1} KiB", n / KIB)
    } else if n < KIB * KIB * KIB {
        write!(out, "{:.1} MiB", n / (KIB * KIB))
    } else {
        write!(out, "{:.1} GiB", n / (KIB * KIB * KIB))
    };
}

/// The kind of an [`Attachment`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentKind {
    /// A picture.
    Image,
    /// A sound recording.
    Audio,
    /// A document or other file (PDF, text, …).
    Document,
}

impl AttachmentKind {
    /// A lower-case word for the kind.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AttachmentKind::Image => "image",
            AttachmentKind::Audio => "audio",
            AttachmentKind::Document => "document",
        }
    }
}

/// A tool call in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryToolCall {
    /// Call id, as the client knows it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The input as sent: JSON object text for a function tool, the raw text for a
    /// freeform one.
    pub arguments: String,
}

impl HistoryToolCall {
    /// A call of `name` with id `id` and input `arguments`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> HistoryToolCall {
        HistoryToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// A client tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Name, unique among the request's tools.
    pub name: String,
    /// Description (may be empty).
    pub description: String,
    /// JSON Schema of a function's arguments (`{}` when absent, and for a freeform tool).
    pub parameters: Value,
    /// What input the tool takes.
    pub kind: ToolKind,
}

impl ToolSpec {
    /// A function tool taking arguments described by the JSON Schema `parameters`.
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            kind: ToolKind::Function,
        }
    }

    /// A freeform tool taking raw text, optionally constrained by `grammar`.
    pub fn freeform(
        name: impl Into<String>,
        description: impl Into<String>,
        grammar: Option<Grammar>,
    ) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: Value::Object(serde_json::Map::new()),
            kind: ToolKind::Freeform { grammar },
        }
    }

    /// Whether the tool takes raw text rather than JSON arguments.
    #[must_use]
    pub fn is_freeform(&self) -> bool {
        matches!(self.kind, ToolKind::Freeform { .. })
    }
}

/// What input a tool takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolKind {
    /// A JSON object matching [`ToolSpec::parameters`].
    Function,
    /// Raw text (a patch, a command line), optionally in a grammar.
    Freeform {
        /// The grammar the text must match, when the client gave one.
        grammar: Option<Grammar>,
    },
}

/// The grammar of a freeform tool's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grammar {
    /// Its notation, as the client names it (`lark`, `regex`).
    pub syntax: String,
    /// The grammar itself.
    pub definition: String,
}

/// Which tools the next reply may or must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// No tools: the agent answers itself.
    None,
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Named(String),
}

/// The shape the client wants the next reply in.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum OutputFormat {
    /// Free text.
    #[default]
    Text,
    /// One JSON object, of any shape.
    JsonObject,
    /// One JSON value matching a schema.
    JsonSchema {
        /// The schema's name, when the client gave one.
        name: Option<String>,
        /// The JSON Schema.
        schema: Value,
    },
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A message with only a role and text.
    pub(crate) fn message(role: Role, content: &str) -> Message {
        Message::new(role, content)
    }

    #[test]
    fn sizes_for_people() {
        let size = |bytes| {
            let mut out = String::new();
            write_size(bytes, &mut out);
            out
        };
        assert_eq!(size(0), "0 bytes");
        assert_eq!(size(1023), "1023 bytes");
        assert_eq!(size(1024), "1.0 KiB");
        assert_eq!(size(5 << 20), "5.0 MiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
    }

    #[test]
    fn the_current_turn_starts_after_the_last_user_message() {
        let mut conversation = Conversation {
            messages: vec![
                message(Role::System, "s"),
                message(Role::Assistant, "a0"),
                message(Role::User, "u1"),
                message(Role::Assistant, "a1"),
                message(Role::User, "u2"),
                message(Role::Assistant, "a2"),
                message(Role::Tool, "t2"),
            ],
            ..Conversation::default()
        };
        let contents: Vec<Cow<'_, str>> = conversation
            .current_turn()
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(contents, ["a2", "t2"]);
        conversation.messages.push(message(Role::User, "u3"));
        assert!(conversation.current_turn().is_empty());
        conversation.messages.retain(|m| m.role != Role::User);
        assert_eq!(conversation.current_turn().len(), 5, "no user message: all");
    }

    #[test]
    fn text_joins_the_text_parts_and_borrows_a_single_one() {
        let image = Part::Attachment(Attachment {
            kind: AttachmentKind::Image,
            media_type: Some("image/png".into()),
            size: Some(3),
            name: None,
        });
        let mut m = Message::new(Role::User, "");
        assert!(m.content.is_empty());
        assert_eq!(m.text(), "");
        m.content = vec![image.clone(), Part::Text("a".into())];
        assert!(matches!(m.text(), Cow::Borrowed("a")));
        m.content.push(Part::Text("b".into()));
        m.content.push(image);
        m.content.push(Part::Text("c".into()));
        assert_eq!(m.text(), "a\nb\nc");
    }

    #[test]
    fn an_attachment_placeholder_is_one_bounded_line() {
        let attachment = |kind, media_type: Option<&str>, size, name: Option<&str>| {
            let mut out = String::new();
            Attachment {
                kind,
                media_type: media_type.map(str::to_owned),
                size,
                name: name.map(str::to_owned),
            }
            .write_placeholder(&mut out);
            out
        };
        assert_eq!(
            attachment(AttachmentKind::Image, Some("image/png"), Some(70), None),
            "[image not shown (image/png, 70 bytes): only text reaches you]"
        );
        assert_eq!(
            attachment(
                AttachmentKind::Document,
                Some("application/pdf"),
                Some(3 << 20),
                Some("report.pdf")
            ),
            "[document \"report.pdf\" not shown (application/pdf, 3.0 MiB): only text reaches you]"
        );
        assert_eq!(
            attachment(AttachmentKind::Audio, None, Some(12_345), None),
            "[audio not shown (12.1 KiB): only text reaches you]"
        );
        assert_eq!(
            attachment(AttachmentKind::Image, None, None, Some("shot\n<x>.jpg")),
            "[image \"shot\\u{a}<x>.jpg\" not shown: only text reaches you]"
        );
        let long = attachment(
            AttachmentKind::Document,
            Some(&"x".repeat(5000)),
            Some(5 << 30),
            Some(&"n".repeat(5000)),
        );
        assert!(long.len() < 500 && !long.contains('\n'), "{long}");
        assert!(long.contains("…") && long.ends_with("5.0 GiB): only text reaches you]"));
    }

    #[test]
    fn constructors() {
        let call = HistoryToolCall::new("c1", "read", "{}");
        let assistant = Message::assistant("", vec![call.clone()]);
        assert_eq!(
            (assistant.role, &assistant.tool_calls[..]),
            (Role::Assistant, &[call][..])
        );
        let result = Message::tool_result("c1", "ok");
        assert_eq!(
            (result.role, result.tool_call_id.as_deref(), result.text()),
            (Role::Tool, Some("c1"), Cow::Borrowed("ok"))
        );
        assert!(!result.is_error);
        let patch = ToolSpec::freeform("apply_patch", "", None);
        assert!(patch.is_freeform() && patch.parameters == serde_json::json!({}));
        assert!(!ToolSpec::function("read", "", serde_json::json!({})).is_freeform());
    }
}
