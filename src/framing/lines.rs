//! NDJSON line framing: arbitrary byte chunks in, complete UTF-8 lines out.

use thiserror::Error;

/// The default [`LineFramer`] limit: 64 MiB.
///
/// cursor-agent embeds whole files in `tool_call/completed` lines (`read` results, `edit`
/// before/after text, shell output), so lines are routinely far longer than the 64 KiB that
/// line readers default to. The longest line in the recorded corpus is about 9 KiB; 64 MiB
/// leaves room for any realistic file while still bounding memory.
pub const DEFAULT_MAX_LINE_LEN: usize = 64 * 1024 * 1024;

/// Spare capacity a buffer of the core keeps between lines. A longer line's buffer is given
/// back once the line is done with, so that one line of many megabytes does not keep its
/// memory for the rest of the run; below this, buffers are reused and steady state
/// allocates nothing.
pub const RETAINED_CAPACITY: usize = 1 << 20;

/// Empties `buffer`, giving its memory back when it outgrew [`RETAINED_CAPACITY`].
pub fn reclaim<T>(buffer: &mut Vec<T>) {
    buffer.clear();
    if buffer.capacity() > RETAINED_CAPACITY {
        *buffer = Vec::new();
    }
}

/// A line the framer could not deliver. The framer has already resynchronised: the next
/// call continues with the line after the bad one.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LineError {
    /// The line grew past the configured limit. Its bytes were discarded up to the next
    /// newline. The error says nothing about how far past the limit the line went: that
    /// depends on where the reads happened to split it, and the same stdout must give the
    /// same error in any chunking.
    #[error("line {line} is longer than the {limit}-byte limit")]
    TooLong {
        /// 1-based number of the offending line.
        line: u64,
        /// The configured limit.
        limit: usize,
    },
    /// The line is not valid UTF-8.
    #[error("line {line} is not valid UTF-8 (first bad byte at offset {valid_up_to})")]
    InvalidUtf8 {
        /// 1-based number of the offending line.
        line: u64,
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
}

/// What one call to [`LineFramer::next_line`] did.
#[must_use = "`consumed` bytes must be skipped before the next call"]
#[derive(Debug)]
pub struct Framed<'a> {
    /// How many bytes of the input were used. Always at least 1 for non-empty input, so a
    /// loop that skips them terminates.
    pub consumed: usize,
    /// A complete line (without its `\n` or `\r\n`), an error for one line, or `None`
    /// when the consumed bytes completed nothing yet (or were a blank line).
    pub line: Option<Result<&'a str, LineError>>,
}

/// Splits a byte stream into lines.
///
/// - Lines end at `\n`; a `\r` before it is dropped; blank lines are skipped.
/// - Complete lines inside one input chunk are returned **borrowed from the input**, with no
///   copy. Only a partial line at the end of a chunk is buffered, and it is never scanned
///   twice, so any chunking (including one byte at a time) costs O(total bytes).
/// - Buffered bytes never exceed the limit: a line that crosses it is reported once as
///   [`LineError::TooLong`] and skipped up to the next newline.
/// - UTF-8 is validated per complete line, so a character split across chunks is fine.
/// - At end of input, [`finish`](Self::finish) returns a last line that had no newline.
///
/// ```
/// use agentwire::framing::LineFramer;
/// let mut framer = LineFramer::new(1024);
/// let mut lines = Vec::new();
/// for chunk in [&b"{\"a\":1}\n{\"b\""[..], b":2}\r\n\n{\"c\":3}"] {
///     let mut input = chunk;
///     while !input.is_empty() {
///         let framed = framer.next_line(input);
///         input = &input[framed.consumed..];
///         if let Some(Ok(line)) = framed.line {
///             lines.push(line.to_owned());
///         }
///     }
/// }
/// if let Some(Ok(line)) = framer.finish() {
///     lines.push(line.to_owned());
/// }
/// assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
/// ```
#[derive(Debug)]
pub struct LineFramer {
    /// Head of a line whose newline has not arrived yet.
    partial: Vec<u8>,
    /// `partial` was lent out as a complete line by the previous call; clear it first.
    lent: bool,
    /// Inside an over-limit line: drop bytes up to the next newline.
    discarding: bool,
    limit: usize,
    /// Number of the line currently being assembled (1-based).
    line_no: u64,
}

impl LineFramer {
    /// A framer that accepts lines of up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        LineFramer {
            partial: Vec::new(),
            lent: false,
            discarding: false,
            limit,
            line_no: 1,
        }
    }

    /// The line limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes currently held for an incomplete line.
    pub fn buffered(&self) -> usize {
        if self.lent { 0 } else { self.partial.len() }
    }

    /// Number of newline-terminated lines seen so far, blank and bad ones included.
    pub fn lines_seen(&self) -> u64 {
        self.line_no - 1
    }

    /// Ends the loan of the last line delivered from the buffer and gives the buffer's
    /// memory back if that line was long (see [`RETAINED_CAPACITY`]). Otherwise the buffer
    /// keeps its capacity for the next long line (lines of megabytes tend to come in
    /// series: file contents in tool results); call this when what was made of the line
    /// is as large as the line, so the two are not both kept.
    pub fn reclaim(&mut self) {
        if self.lent {
            reclaim(&mut self.partial);
            self.lent = false;
        }
    }

    /// Ends the loan of the last line delivered from the buffer; keeps its capacity.
    fn end_loan(&mut self) {
        if self.lent {
            self.partial.clear();
            self.lent = false;
        }
    }

    /// Takes bytes from `input` up to and including the next newline (or all of it) and
    /// returns the line that completed, if any. See [`Framed`].
    #[inline]
    pub fn next_line<'a>(&'a mut self, input: &'a [u8]) -> Framed<'a> {
        self.end_loan();
        let Some(newline) = memchr::memchr(b'\n', input) else {
            return self.buffer_tail(input);
        };
        let consumed = newline + 1;
        let line_no = self.line_no;
        self.line_no += 1;
        if self.discarding {
            self.discarding = false;
            return Framed {
                consumed,
                line: None,
            };
        }
        let head = &input[..newline];
        if self.partial.len() + head.len() > self.limit {
            reclaim(&mut self.partial);
            return Framed {
                consumed,
                line: Some(Err(LineError::TooLong {
                    line: line_no,
                    limit: self.limit,
                })),
            };
        }
        let bytes: &'a [u8] = if self.partial.is_empty() {
            head
        } else {
            self.partial.extend_from_slice(head);
            self.lent = true;
            &self.partial
        };
        Framed {
            consumed,
            line: deliver(bytes, line_no),
        }
    }

    /// Ends the input: returns the last line if it had no terminating newline. The framer is
    /// then empty and may be reused for a new stream.
    pub fn finish(&mut self) -> Option<Result<&str, LineError>> {
        self.end_loan();
        if std::mem::take(&mut self.discarding) || self.partial.is_empty() {
            return None;
        }
        let line_no = self.line_no;
        self.line_no += 1;
        self.lent = true;
        deliver(&self.partial, line_no)
    }

    fn buffer_tail<'a>(&mut self, input: &'a [u8]) -> Framed<'a> {
        let consumed = input.len();
        if self.discarding {
            return Framed {
                consumed,
                line: None,
            };
        }
        if self.partial.len() + input.len() > self.limit {
            reclaim(&mut self.partial);
            self.discarding = true;
            let error = LineError::TooLong {
                line: self.line_no,
                limit: self.limit,
            };
            return Framed {
                consumed,
                line: Some(Err(error)),
            };
        }
        self.partial.extend_from_slice(input);
        Framed {
            consumed,
            line: None,
        }
    }
}

impl Default for LineFramer {
    fn default() -> Self {
        LineFramer::new(DEFAULT_MAX_LINE_LEN)
    }
}

/// Strips a trailing `\r`, skips blank lines and validates UTF-8.
fn deliver(bytes: &[u8], line: u64) -> Option<Result<&str, LineError>> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return None;
    }
    Some(
        std::str::from_utf8(bytes).map_err(|e| LineError::InvalidUtf8 {
            line,
            valid_up_to: e.valid_up_to(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `input` through a framer in the given chunks and collects every outcome.
    fn frame(chunks: &[&[u8]], limit: usize) -> Vec<Result<String, LineError>> {
        let mut framer = LineFramer::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            let mut input: &[u8] = chunk;
            while !input.is_empty() {
                let framed = framer.next_line(input);
                assert!(framed.consumed > 0);
                input = &input[framed.consumed..];
                if let Some(line) = framed.line {
                    out.push(line.map(str::to_owned));
                }
                assert!(framer.buffered() <= limit);
            }
        }
        if let Some(line) = framer.finish() {
            out.push(line.map(str::to_owned));
        }
        out
    }

    fn every_split(input: &[u8], limit: usize) -> Vec<Result<String, LineError>> {
        let whole = frame(&[input], limit);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(frame(&bytes, limit), whole, "byte at a time");
        for at in 0..=input.len() {
            assert_eq!(
                frame(&[&input[..at], &input[at..]], limit),
                whole,
                "split at {at}"
            );
        }
        whole
    }

    fn ok(lines: &[&str]) -> Vec<Result<String, LineError>> {
        lines.iter().map(|l| Ok(l.to_string())).collect()
    }

    #[test]
    fn lines_crlf_blank_and_unterminated_tail() {
        let got = every_split(b"a\r\n\n  \nb\nlast", 100);
        assert_eq!(got, ok(&["a", "b", "last"]));
    }

    #[test]
    fn multibyte_characters_split_across_chunks() {
        let text = "é—“x”😀\n®\n";
        assert_eq!(every_split(text.as_bytes(), 100), ok(&["é—“x”😀", "®"]));
    }

    #[test]
    fn invalid_utf8_is_reported_for_that_line_only() {
        let got = every_split(b"ok\n\xff\xfe\nnext\n", 100);
        assert_eq!(
            got,
            vec![
                Ok("ok".into()),
                Err(LineError::InvalidUtf8 {
                    line: 2,
                    valid_up_to: 0
                }),
                Ok("next".into())
            ]
        );
    }

    #[test]
    fn over_limit_line_is_reported_once_and_resynced() {
        let input = b"short\n0123456789abcdef\nafter\n";
        let whole = frame(&[input], 8);
        assert_eq!(whole[0], Ok("short".into()));
        assert!(matches!(
            whole[1],
            Err(LineError::TooLong {
                line: 2,
                limit: 8,
                ..
            })
        ));
        assert_eq!(whole[2], Ok("after".into()));
        assert_eq!(whole.len(), 3);
        // Chunked: the error may be reported before the line's end arrives, but it is the
        // same error, and the lines around it are identical.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(frame(&bytes, 8), whole);
        assert_eq!(every_split(input, 8), whole);
    }

    #[test]
    fn line_exactly_at_limit_passes() {
        assert_eq!(every_split(b"12345678\n123456789\n", 8).len(), 2);
        assert_eq!(frame(&[b"12345678\n"], 8), ok(&["12345678"]));
    }

    #[test]
    fn over_limit_unterminated_tail_is_dropped() {
        let got = frame(&[b"ok\n", b"0123456789"], 4);
        assert_eq!(got[0], Ok("ok".into()));
        assert!(matches!(got[1], Err(LineError::TooLong { .. })));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn nul_bytes_are_ordinary_bytes() {
        assert_eq!(every_split(b"a\0b\n", 10), ok(&["a\0b"]));
    }

    #[test]
    fn one_byte_pushes_scan_each_byte_once() {
        // A 1 MiB line pushed a byte at a time must not rescan the buffer: this finishes
        // instantly when linear and takes minutes when quadratic.
        let line = vec![b'x'; 1 << 20];
        let mut framer = LineFramer::new(DEFAULT_MAX_LINE_LEN);
        for byte in line.chunks(1) {
            assert!(framer.next_line(byte).line.is_none());
        }
        let framed = framer.next_line(b"\n");
        assert_eq!(framed.line.unwrap().unwrap().len(), 1 << 20);
    }
}
