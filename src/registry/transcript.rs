//! What the agent has been given, as digests: a conversation reduced to a chain of entry
//! digests, one per message as the client's conversation holds it, so that a later
//! request can be checked for extending it exactly without keeping its text.
//!
//! Entries, in order:
//! - the **header**: the model, the tool set (order-free: the agent gets the set at the
//!   session's start), whether the client offers tools at all, what the next reply may call
//!   and the output format;
//! - each **system**, **developer**, **user** and **tool** message: its role, its parts
//!   exactly (text byte for byte; an attachment by what is known of it), a tool result's
//!   call id and error flag — these are the client's words, echoed as they were sent;
//! - each run of consecutive **assistant** messages as one entry: its text with every
//!   whitespace character removed, then its tool calls (id, name, and the arguments as JSON
//!   read with object keys in any order, or as text when they are not JSON). Dialects
//!   split an answer differently when clients echo it (Responses items, Anthropic blocks,
//!   one Chat message), and clients retouch whitespace; none of that changes what the
//!   agent said. Reasoning is not part of it: no parser keeps it.
//!
//! The digest after `n` entries identifies the prefix of `n` entries. It is a 64-bit
//! SipHash chain (the standard library's [`DefaultHasher`], created with fixed keys, so the
//! same conversation gives the same digests within one build); digests are never stored
//! nor sent anywhere, and a collision needs two conversations of the same owner, which
//! can only cost that owner a wrong resume of their own session.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::api::Request;
use crate::conversation::{
    Attachment, Conversation, Message, OutputFormat, Part, Role, ToolChoice, ToolKind,
};

/// The digest of a conversation prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub(crate) u64);

/// A conversation's digests, entry by entry: where each entry ends, and the digest of
/// every prefix.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// `(digest after the entry, index of the first message after it)`, one per entry,
    /// the header first.
    boundaries: Vec<(Digest, usize)>,
    tail: Tail,
}

impl Transcript {
    /// The digests of `request`'s conversation.
    #[must_use]
    pub fn of(request: &Request) -> Transcript {
        let conversation = &request.conversation;
        let mut chain = DefaultHasher::new();
        chain.write_u64(header_digest(&request.model, conversation));
        let mut boundaries = Vec::with_capacity(conversation.messages.len() + 1);
        boundaries.push((Digest(chain.finish()), 0));
        let mut tail = Tail {
            chain,
            entries: 1,
            open: false,
        };
        tail.push_messages(&conversation.messages, |digest, next| {
            boundaries.push((digest, next));
        });
        Transcript { boundaries, tail }
    }

    /// The number of entries, the header included.
    #[must_use]
    pub fn entries(&self) -> usize {
        self.boundaries.len()
    }

    /// Every prefix, shortest first: `(entries, digest, first message after it)`.
    pub fn prefixes(&self) -> impl DoubleEndedIterator<Item = (usize, Digest, usize)> + '_ {
        self.boundaries
            .iter()
            .enumerate()
            .map(|(index, &(digest, next))| (index + 1, digest, next))
    }

    /// The digest of the whole conversation.
    #[must_use]
    pub fn digest(&self) -> Digest {
        self.boundaries
            .last()
            .expect("the header is always there")
            .0
    }

    /// The end of the transcript, which an answer extends.
    #[must_use]
    pub fn into_tail(self) -> Tail {
        self.tail
    }
}

/// The end of a transcript: enough to extend it with more messages or an answer, without
/// the digests of its prefixes.
#[derive(Debug, Clone)]
pub struct Tail {
    chain: DefaultHasher,
    entries: usize,
    /// The transcript ends in an assistant message: a reply continues it rather than
    /// following it, and how a client echoes the two together cannot be known.
    open: bool,
}

impl Tail {
    /// The digest of the whole transcript.
    #[must_use]
    pub fn digest(&self) -> Digest {
        Digest(self.chain.finish())
    }

    /// The number of entries, the header included.
    #[must_use]
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// The transcript with `messages` after it.
    pub(crate) fn push_messages(
        &mut self,
        messages: &[Message],
        mut boundary: impl FnMut(Digest, usize),
    ) {
        let mut at = 0;
        while at < messages.len() {
            let entry = if messages[at].role == Role::Assistant {
                let mut answer = AnswerDigest::default();
                while at < messages.len() && messages[at].role == Role::Assistant {
                    answer.push_message(&messages[at]);
                    at += 1;
                }
                answer.finish()
            } else {
                let digest = message_digest(&messages[at]);
                at += 1;
                digest
            };
            self.chain.write_u64(entry);
            self.entries += 1;
            boundary(self.digest(), at);
        }
        if let Some(last) = messages.last() {
            self.open = last.role == Role::Assistant;
        }
    }

    /// The transcript after the agent answered with `answer`: what a later request that
    /// carries this answer back must start with. `None` when the transcript ended in an
    /// assistant message.
    #[must_use]
    pub fn extended(&self, answer: &AnswerDigest) -> Option<Tail> {
        if self.open {
            return None;
        }
        let mut chain = self.chain.clone();
        chain.write_u64(answer.finish());
        Some(Tail {
            chain,
            entries: self.entries + 1,
            open: true,
        })
    }

    /// Whether the transcript ends with an answer of the agent's (or a client's assistant
    /// message).
    #[must_use]
    pub fn ends_with_answer(&self) -> bool {
        self.open
    }
}

/// The digest of one answer as the client will echo it: its text without whitespace and
/// its tool calls, fed as the answer is written (a bridge feeds every text delta and tool
/// call it sends), in any split.
#[derive(Debug, Clone, Default)]
pub struct AnswerDigest {
    text: DefaultHasher,
    calls: DefaultHasher,
    call_count: u32,
}

impl AnswerDigest {
    /// Answer text, in any split.
    pub fn push_text(&mut self, text: &str) {
        for c in text.chars().filter(|c| !c.is_whitespace()) {
            self.text.write_u32(c as u32);
        }
    }

    /// A tool call of the answer.
    pub fn push_call(&mut self, id: &str, name: &str, arguments: &str) {
        self.call_count += 1;
        id.hash(&mut self.calls);
        name.hash(&mut self.calls);
        match serde_json::from_str::<Value>(arguments) {
            Ok(value) => {
                self.calls.write_u8(1);
                hash_value(&value, &mut self.calls);
            }
            Err(_) => {
                self.calls.write_u8(0);
                arguments.hash(&mut self.calls);
            }
        }
    }

    /// The tool calls pushed so far.
    #[must_use]
    pub fn call_count(&self) -> u32 {
        self.call_count
    }

    fn push_message(&mut self, message: &Message) {
        for part in &message.content {
            if let Part::Text(text) = part {
                self.push_text(text);
            }
        }
        for call in &message.tool_calls {
            self.push_call(&call.id, &call.name, &call.arguments);
        }
    }

    fn finish(&self) -> u64 {
        let mut entry = DefaultHasher::new();
        entry.write_u8(b'A');
        entry.write_u64(self.text.finish());
        entry.write_u64(self.calls.finish());
        entry.write_u32(self.call_count);
        entry.finish()
    }
}

fn header_digest(model: &str, conversation: &Conversation) -> u64 {
    let mut header = DefaultHasher::new();
    header.write_u8(b'H');
    model.hash(&mut header);
    // The tool set: a sum of the tools' digests is the same in any order.
    let tools = conversation
        .tools
        .iter()
        .map(|tool| {
            let mut one = DefaultHasher::new();
            tool.name.hash(&mut one);
            tool.description.hash(&mut one);
            hash_value(&tool.parameters, &mut one);
            match &tool.kind {
                ToolKind::Function => one.write_u8(0),
                ToolKind::Freeform { grammar } => {
                    one.write_u8(1);
                    if let Some(grammar) = grammar {
                        grammar.syntax.hash(&mut one);
                        grammar.definition.hash(&mut one);
                    }
                }
            }
            one.finish()
        })
        .fold(0u64, u64::wrapping_add);
    header.write_u64(tools);
    header.write_usize(conversation.tools.len());
    match &conversation.tool_choice {
        ToolChoice::None => header.write_u8(0),
        ToolChoice::Auto => header.write_u8(1),
        ToolChoice::Required => header.write_u8(2),
        ToolChoice::Named(name) => {
            header.write_u8(3);
            name.hash(&mut header);
        }
    }
    match &conversation.output_format {
        OutputFormat::Text => header.write_u8(0),
        OutputFormat::JsonObject => header.write_u8(1),
        OutputFormat::JsonSchema { name, schema } => {
            header.write_u8(2);
            name.hash(&mut header);
            hash_value(schema, &mut header);
        }
    }
    header.finish()
}

fn message_digest(message: &Message) -> u64 {
    let mut entry = DefaultHasher::new();
    entry.write_u8(match message.role {
        Role::System => b'S',
        Role::Developer => b'D',
        Role::User => b'U',
        Role::Assistant => b'A',
        Role::Tool => b'T',
    });
    entry.write_usize(message.content.len());
    for part in &message.content {
        match part {
            Part::Text(text) => {
                entry.write_u8(0);
                text.hash(&mut entry);
            }
            Part::Attachment(Attachment {
                kind,
                media_type,
                size,
                name,
            }) => {
                entry.write_u8(1);
                kind.as_str().hash(&mut entry);
                media_type.hash(&mut entry);
                size.hash(&mut entry);
                name.hash(&mut entry);
            }
        }
    }
    message.tool_call_id.hash(&mut entry);
    message.name.hash(&mut entry);
    entry.write_u8(u8::from(message.is_error));
    entry.finish()
}

/// A JSON value's structure, object keys in sorted order (whatever order the map keeps).
fn hash_value(value: &Value, state: &mut DefaultHasher) {
    match value {
        Value::Null => state.write_u8(0),
        Value::Bool(b) => {
            state.write_u8(1);
            state.write_u8(u8::from(*b));
        }
        Value::Number(n) => {
            state.write_u8(2);
            // The number as written: 1 and 1.0 are different JSON texts, and a client
            // echoing arguments keeps them as they were.
            n.to_string().hash(state);
        }
        Value::String(s) => {
            state.write_u8(3);
            s.hash(state);
        }
        Value::Array(items) => {
            state.write_u8(4);
            state.write_usize(items.len());
            for item in items {
                hash_value(item, state);
            }
        }
        Value::Object(map) => {
            state.write_u8(5);
            state.write_usize(map.len());
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for key in keys {
                key.hash(state);
                hash_value(&map[key], state);
            }
        }
    }
}
