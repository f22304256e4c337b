//! What a tool returned, as MCP's `CallToolResult`: `{"content":[{"type":"text",
//! "text":…},…],"isError":…}`, one text item per part.
//!
//! The client's tool results are text and attachments in the neutral model; the agent's
//! model reads text only here, so an attachment becomes the one-line placeholder the prompt
//! uses ([`Attachment::write_placeholder`]). A result with no part at all is one empty text
//! item: clients and agents handle an empty text, and `content` stays a list of what the
//! tool said.
//!
//! [`Attachment::write_placeholder`]: crate::conversation::Attachment::write_placeholder

use serde::Serialize;

use crate::conversation::Part;

/// What a client's tool returned, to answer a pending call with
/// ([`Server::answer_call`](super::Server::answer_call)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutcome {
    /// The result's parts, in order.
    pub content: Vec<Part>,
    /// Whether the client reports that the call failed (`isError`).
    pub is_error: bool,
}

impl ToolOutcome {
    /// A result of one text part.
    pub fn text(text: impl Into<String>, is_error: bool) -> ToolOutcome {
        ToolOutcome {
            content: vec![Part::Text(text.into())],
            is_error,
        }
    }
}

#[derive(Serialize)]
struct TextItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// Appends the `CallToolResult` of `outcome`.
pub(crate) fn write_result(out: &mut Vec<u8>, outcome: &ToolOutcome) {
    out.extend_from_slice(b"{\"content\":[");
    let mut placeholder = String::new();
    for (i, part) in outcome.content.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let text = match part {
            Part::Text(text) => text.as_str(),
            Part::Attachment(attachment) => {
                placeholder.clear();
                attachment.write_placeholder(&mut placeholder);
                placeholder.as_str()
            }
        };
        write_item(out, text);
    }
    if outcome.content.is_empty() {
        write_item(out, "");
    }
    write_end(out, outcome.is_error);
}

/// Appends a `CallToolResult` of one text.
pub(crate) fn write_text_result(out: &mut Vec<u8>, text: &str, is_error: bool) {
    out.extend_from_slice(b"{\"content\":[");
    write_item(out, text);
    write_end(out, is_error);
}

fn write_item(out: &mut Vec<u8>, text: &str) {
    let item = TextItem { kind: "text", text };
    serde_json::to_writer(&mut *out, &item).expect("a text item serialises");
}

fn write_end(out: &mut Vec<u8>, is_error: bool) {
    out.extend_from_slice(if is_error {
        b"],\"isError\":true}"
    } else {
        b"],\"isError\":false}"
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{Attachment, AttachmentKind};
    use serde_json::{Value, json};

    fn result(outcome: &ToolOutcome) -> Value {
        let mut out = Vec::new();
        write_result(&mut out, outcome);
        assert!(!out.contains(&b'\n'));
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn parts_become_text_items() {
        let outcome = ToolOutcome {
            content: vec![
                Part::Text("line 1\nline 2".into()),
                Part::Attachment(Attachment {
                    kind: AttachmentKind::Image,
                    media_type: Some("image/png".into()),
                    size: Some(70),
                    name: None,
                }),
            ],
            is_error: true,
        };
        assert_eq!(
            result(&outcome),
            json!({"content":[
                {"type":"text","text":"line 1\nline 2"},
                {"type":"text","text":"[image not shown (image/png, 70 bytes): only text reaches you]"}
            ],"isError":true})
        );
        assert_eq!(
            result(&ToolOutcome::default()),
            json!({"content":[{"type":"text","text":""}],"isError":false})
        );
        let mut out = Vec::new();
        write_text_result(&mut out, "bad", true);
        assert_eq!(
            serde_json::from_slice::<Value>(&out).unwrap(),
            json!({"content":[{"type":"text","text":"bad"}],"isError":true})
        );
    }
}
