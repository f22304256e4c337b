//! The JSON fragments of Responses events: how items are written, the end of every event,
//! usage.

use crate::api::json::write_u64;
use crate::event::Usage;

/// How a message or a reasoning item is written: the two differ only in names, and in
/// the text of a message's deltas carrying `logprobs`.
pub(super) struct ItemWire {
    pub(super) id_prefix: &'static str,
    /// The added item after its id.
    pub(super) added_item: &'static [u8],
    /// The finished item after its id, up to its part.
    pub(super) done_item: &'static [u8],
    pub(super) part_added: &'static str,
    pub(super) part_done: &'static str,
    pub(super) text_delta: &'static str,
    pub(super) text_done: &'static str,
    /// The part's index field, with a comma on either side.
    pub(super) part_index: &'static [u8],
    /// A part up to its text, and after it.
    pub(super) part_start: &'static [u8],
    pub(super) part_end: &'static [u8],
    /// What follows the text of a delta or a text's done event.
    pub(super) text_tail: &'static [u8],
}

pub(super) const MESSAGE: ItemWire = ItemWire {
    id_prefix: "msg_",
    added_item:
        b",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]},",
    done_item:
        b",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[",
    part_added: "response.content_part.added",
    part_done: "response.content_part.done",
    text_delta: "response.output_text.delta",
    text_done: "response.output_text.done",
    part_index: b",\"content_index\":0,",
    part_start: b"{\"type\":\"output_text\",\"text\":\"",
    part_end: b"\",\"annotations\":[]}",
    text_tail: b",\"logprobs\":[],",
};

pub(super) const REASONING: ItemWire = ItemWire {
    id_prefix: "rs_",
    added_item: b",\"type\":\"reasoning\",\"summary\":[]},",
    done_item: b",\"type\":\"reasoning\",\"summary\":[",
    part_added: "response.reasoning_summary_part.added",
    part_done: "response.reasoning_summary_part.done",
    text_delta: "response.reasoning_summary_text.delta",
    text_done: "response.reasoning_summary_text.done",
    part_index: b",\"summary_index\":0,",
    part_start: b"{\"type\":\"summary_text\",\"text\":\"",
    part_end: b"\"}",
    text_tail: b",",
};

/// The end of every event, `"sequence_number":N}` and the frame's blank line, kept
/// whole and counted up in place: formatting the number afresh for each event would cost
/// as much as the rest of a delta's frame.
#[derive(Debug, Clone)]
pub(super) struct SequenceNumber {
    /// The end of the frame, right-aligned; `frame[start..]` is it.
    frame: [u8; KEY.len() + 20 + END.len()],
    start: usize,
}

const KEY: &[u8] = b"\"sequence_number\":";
const END: &[u8] = b"}\n\n";

impl Default for SequenceNumber {
    /// Zero.
    fn default() -> Self {
        let mut frame = [b'0'; KEY.len() + 20 + END.len()];
        let digit = frame.len() - END.len() - 1;
        frame[digit + 1..].copy_from_slice(END);
        frame[digit - KEY.len()..digit].copy_from_slice(KEY);
        SequenceNumber {
            frame,
            start: digit - KEY.len(),
        }
    }
}

impl SequenceNumber {
    /// `"sequence_number":N}` and a blank line.
    pub(super) fn frame_end(&self) -> &[u8] {
        &self.frame[self.start..]
    }

    pub(super) fn increment(&mut self) {
        let first = self.start + KEY.len();
        for at in (first..self.frame.len() - END.len()).rev() {
            if self.frame[at] == b'9' {
                self.frame[at] = b'0';
            } else {
                self.frame[at] += 1;
                return;
            }
        }
        // One digit more: the key moves left (a u64 has at most 20 digits).
        if self.start > 0 {
            self.frame[first - 1] = b'1';
            self.start -= 1;
            self.frame[self.start..self.start + KEY.len()].copy_from_slice(KEY);
        }
    }
}

/// `event: <kind>` and the start of its data: `data: {"type":"<kind>",`.
pub(super) fn begin_event(kind: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: {\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",");
}

/// Appends a Responses `usage` object, every field present: `input_tokens` counts fresh,
/// cache-read and cache-written input; `input_tokens_details` has the cache reads as
/// `cached_tokens` and the cache writes as `cache_write_tokens`; reasoning tokens are 0
/// unless the agent reported them (they are counted in `output_tokens` either way);
/// `cost` only when the agent reported one.
pub(super) fn write_usage(out: &mut Vec<u8>, usage: &Usage) {
    out.extend_from_slice(b"{\"input_tokens\":");
    write_u64(out, usage.prompt_tokens());
    out.extend_from_slice(b",\"input_tokens_details\":{\"cached_tokens\":");
    write_u64(out, usage.cache_read_tokens);
    out.extend_from_slice(b",\"cache_write_tokens\":");
    write_u64(out, usage.cache_write_tokens);
    out.extend_from_slice(b"},\"output_tokens\":");
    write_u64(out, usage.output_tokens);
    out.extend_from_slice(b",\"output_tokens_details\":{\"reasoning_tokens\":");
    write_u64(out, usage.reasoning_tokens.unwrap_or(0));
    out.extend_from_slice(b"},\"total_tokens\":");
    write_u64(out, usage.total_tokens());
    if let Some(cost) = usage.cost.filter(|c| c.is_finite()) {
        out.extend_from_slice(b",\"cost\":");
        serde_json::to_writer(&mut *out, &cost).expect("a finite f64 serializes into a Vec");
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_count_in_decimal() {
        let mut number = SequenceNumber::default();
        for n in 0..=100_000u64 {
            let expected = format!("\"sequence_number\":{n}}}\n\n");
            assert_eq!(number.frame_end(), expected.as_bytes());
            number.increment();
        }
    }
}
