//! One stream-json line, read tolerantly.
//!
//! Every field except `type` is optional and captured raw, so a build that changes a
//! field's type loses that field, not the line. Unknown keys are skipped by `serde_json`
//! without being decoded.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::json::{
    Key, append_str_joined, ignore_other_shapes, is_nonempty_str, raw_bool, raw_str, raw_u64,
    starts_with_low_surrogate,
};
use super::tool_call::ToolCallPayload;

/// The envelope of one line: the fields any event type may carry.
#[derive(Deserialize, Default)]
pub(crate) struct RawLine<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) subtype: Option<&'a RawValue>,
    /// `thinking/delta` text.
    #[serde(borrow)]
    pub(crate) text: Option<&'a RawValue>,
    /// `user`/`assistant` message.
    #[serde(default)]
    pub(crate) message: TextParts<'a>,
    #[serde(borrow)]
    pub(crate) call_id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) model_call_id: Option<&'a RawValue>,
    /// `tool_call/*` payload, read in the same pass as the line.
    #[serde(borrow)]
    pub(crate) tool_call: Option<ToolCallPayload<'a>>,
    /// `result` text.
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) usage: Option<&'a RawValue>,
    /// The run's cost, under any of the names it has been reported with. Separate fields
    /// rather than aliases: a line carrying two of them must not fail as a duplicate field.
    #[serde(borrow)]
    pub(crate) cost: Option<&'a RawValue>,
    #[serde(borrow, rename = "totalCost")]
    pub(crate) total_cost_camel: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) total_cost: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) is_error: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) error: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) attempt: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) session_id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) model: Option<&'a RawValue>,
}

impl<'a> RawLine<'a> {
    /// Parses a line; `None` when it is not a JSON object.
    pub(crate) fn parse(line: &'a str) -> Option<Self> {
        // A derived `Deserialize` also accepts a struct's sequence form: without this
        // check, an array with one element per field would read as an event.
        let body = line.trim_start_matches([' ', '\t', '\r', '\n']);
        if !body.starts_with('{') {
            return None;
        }
        serde_json::from_str(line).ok()
    }

    pub(crate) fn kind(&self) -> Kind {
        let Some(kind) = self.kind.and_then(raw_str) else {
            return Kind::Untyped;
        };
        let subtype = self.subtype.and_then(raw_str);
        let sub = subtype.as_deref().unwrap_or("");
        match (&*kind, sub) {
            ("assistant", _) => Kind::Assistant,
            ("thinking", "delta") => Kind::ThinkingDelta,
            ("thinking", "completed") => Kind::ThinkingCompleted,
            ("tool_call", "started") => Kind::ToolStarted,
            ("tool_call", "completed") => Kind::ToolCompleted,
            ("interaction_query", _) => Kind::InteractionQuery,
            ("result", _) => Kind::Result,
            ("system", "init") => Kind::Init,
            ("user", _) => Kind::User,
            ("connection", "reconnecting") => Kind::Reconnecting,
            ("connection", "reconnected") => Kind::Reconnected,
            ("retry", _) => Kind::Retry,
            ("error", _) => Kind::Error,
            _ => Kind::Unknown,
        }
    }

    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
            .and_then(raw_u64)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Whether a `result` reports a failure: `is_error: true`, or a subtype other than
    /// `success` (the CLI's failures are not documented in detail, so anything but an
    /// explicit success is treated as one).
    pub(crate) fn is_error(&self) -> bool {
        self.is_error.and_then(raw_bool).unwrap_or(false)
            || self
                .subtype
                .filter(|s| s.get() != "null")
                .is_some_and(|s| raw_str(s).is_none_or(|s| s != "success"))
    }

    /// The cost reported at the top level of a `result`.
    pub(crate) fn cost(&self) -> Option<&'a RawValue> {
        self.cost.or(self.total_cost_camel).or(self.total_cost)
    }
}

/// What a line is, as far as the decoder cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Assistant,
    ThinkingDelta,
    ThinkingCompleted,
    ToolStarted,
    ToolCompleted,
    InteractionQuery,
    Result,
    Init,
    User,
    Reconnecting,
    Reconnected,
    Retry,
    /// A top-level `error` event (known from parsers of the CLI bundle only).
    Error,
    /// A JSON object without a string `type`.
    Untyped,
    /// A type or subtype not known here.
    Unknown,
}

/// The text parts of a `message`: `content` as a string, or the `text` of each
/// `{"type":"text"}` part of a content array. Anything else reads as no text.
#[derive(Default)]
pub(crate) struct TextParts<'a> {
    pub(crate) first: Option<TextRef<'a>>,
    /// Further text parts; cursor-agent sends one, so this rarely allocates.
    pub(crate) more: Vec<TextRef<'a>>,
}

/// One piece of message text.
pub(crate) enum TextRef<'a> {
    /// A JSON string, escapes intact (unescaped when appended).
    Raw(&'a RawValue),
    /// Text already unescaped.
    Plain(Cow<'a, str>),
}

impl TextRef<'_> {
    /// Appends the text to `out`, joining a surrogate pair split across pieces (see
    /// [`append_str_joined`]).
    pub(crate) fn append_joined(&self, out: &mut String, pending: &mut Option<u16>) {
        match self {
            TextRef::Raw(raw) => {
                append_str_joined(raw, out, pending);
            }
            TextRef::Plain(text) => {
                *pending = None;
                out.push_str(text);
            }
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            TextRef::Raw(raw) => !is_nonempty_str(raw),
            TextRef::Plain(text) => text.is_empty(),
        }
    }

    pub(crate) fn starts_with_low_surrogate(&self) -> bool {
        matches!(self, TextRef::Raw(raw) if starts_with_low_surrogate(raw))
    }
}

impl<'a> TextParts<'a> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &TextRef<'a>> + '_ {
        self.first.iter().chain(self.more.iter())
    }

    /// Whether there is any text: an `assistant` event without it (no text part, or only
    /// empty ones) is not a fragment of the answer.
    pub(crate) fn has_text(&self) -> bool {
        self.iter().any(|part| !part.is_empty())
    }

    /// Whether the text starts with the second half of a surrogate pair.
    pub(crate) fn starts_with_low_surrogate(&self) -> bool {
        self.iter()
            .find(|part| !part.is_empty())
            .is_some_and(TextRef::starts_with_low_surrogate)
    }

    fn push(&mut self, part: TextRef<'a>) {
        if self.first.is_none() {
            self.first = Some(part);
        } else {
            self.more.push(part);
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for TextParts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MessageVisitor)
    }
}

/// Visits `message`: a map whose `content` is a string or an array of parts.
struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = TextParts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut parts = TextParts::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if key.0 == "content" {
                parts = map.next_value::<Content<'de>>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(parts)
    }

    ignore_other_shapes!(TextParts::default());
}

/// `content`: a string (one part) or an array of parts.
struct Content<'a>(TextParts<'a>);

impl<'de> Deserialize<'de> for Content<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("message content")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Content(TextParts {
            first: Some(TextRef::Plain(Cow::Borrowed(text))),
            more: Vec::new(),
        }))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        let text = Cow::Owned(text.to_owned());
        Ok(Content(TextParts {
            first: Some(TextRef::Plain(text)),
            more: Vec::new(),
        }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut parts = TextParts::default();
        while let Some(part) = seq.next_element::<Part<'de>>()? {
            if let Some(text) = part.0 {
                parts.push(TextRef::Raw(text));
            }
        }
        Ok(Content(parts))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Content(TextParts::default()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Content(TextParts::default()))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Content(TextParts::default()))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Content(TextParts::default()))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Content(TextParts::default()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content(TextParts::default()))
    }
}

/// One content part: its `text` when `type` is `"text"` (or absent).
struct Part<'a>(Option<&'a RawValue>);

impl<'de> Deserialize<'de> for Part<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PartVisitor;
        impl<'de> Visitor<'de> for PartVisitor {
            type Value = Part<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content part")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut text = None;
                let mut is_text = true;
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    match &*key.0 {
                        "type" => {
                            let kind = map.next_value::<&'de RawValue>()?;
                            is_text = raw_str(kind).is_some_and(|k| k == "text");
                        }
                        "text" => text = Some(map.next_value::<&'de RawValue>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Part(text.filter(|t| is_text && t.get().starts_with('"'))))
            }

            ignore_other_shapes!(Part(None));
        }
        deserializer.deserialize_any(PartVisitor)
    }
}
