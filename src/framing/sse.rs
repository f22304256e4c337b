//! Server-sent events: frames appended to a caller-owned buffer.
//!
//! Only what every real client parses safely is written: `data:` lines holding one line of
//! JSON, comment keep-alives, and each event ended by a blank line. Never `id:` or `retry:` (openai-python turns them into empty events and fails to
//! decode them), never `event:` (ignored by the AI SDK, and an `event:` without data breaks
//! openai-node), never a BOM.

/// The terminal frame of an OpenAI stream.
pub const DONE: &[u8] = b"data: [DONE]\n\n";

/// Appends SSE frames to a caller-owned buffer. Stateless; every method appends one
/// complete frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct SseWriter;

impl SseWriter {
    /// Starts a `data:` frame; the caller writes one line of JSON, then calls
    /// [`end_data`](Self::end_data). JSON from `serde_json` is always one line.
    pub fn begin_data(out: &mut Vec<u8>) {
        out.extend_from_slice(b"data: ");
    }

    /// Ends a frame started by [`begin_data`](Self::begin_data).
    pub fn end_data(out: &mut Vec<u8>) {
        out.extend_from_slice(b"\n\n");
    }

    /// Appends a whole `data:` frame. `payload` must not contain a line break.
    pub fn data(out: &mut Vec<u8>, payload: &[u8]) {
        debug_assert!(!payload.contains(&b'\n') && !payload.contains(&b'\r'));
        Self::begin_data(out);
        out.extend_from_slice(payload);
        Self::end_data(out);
    }

    /// Appends a comment frame (`: text`), which every client ignores and every proxy
    /// forwards: a keep-alive. Line breaks in `text` become spaces so the comment stays
    /// one line.
    pub fn comment(out: &mut Vec<u8>, text: &str) {
        out.push(b':');
        if !text.is_empty() {
            out.push(b' ');
            out.extend(
                text.bytes()
                    .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
            );
        }
        out.extend_from_slice(b"\n\n");
    }

    /// Appends `data: [DONE]`.
    pub fn done(out: &mut Vec<u8>) {
        out.extend_from_slice(DONE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        let mut out = b"x".to_vec();
        SseWriter::data(&mut out, br#"{"a":1}"#);
        SseWriter::comment(&mut out, "keep-alive\r\nforged: yes");
        SseWriter::comment(&mut out, "");
        SseWriter::done(&mut out);
        assert_eq!(
            out,
            b"xdata: {\"a\":1}\n\n: keep-alive  forged: yes\n\n:\n\ndata: [DONE]\n\n".as_slice()
        );
    }
}
