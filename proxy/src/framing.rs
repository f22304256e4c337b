//! Where a request body ends (RFC 9112 §6.3), strictly, as a sans-IO decoder.
//!
//! A front proxy and this server must agree on where every body ends, or a request can be
//! hidden inside another one's body ("request smuggling"). So anything the RFC leaves to
//! the recipient's judgement is refused here rather than guessed:
//!
//! - `Content-Length` must be digits only (no sign, no space inside); several values
//!   (repeated fields or a list) must all be equal;
//! - `Transfer-Encoding` must end in `chunked`, exactly once (400 otherwise: the length
//!   cannot be known), with no other coding before it (501: none is implemented); it is
//!   refused in HTTP/1.0 requests and together with `Content-Length` (400);
//! - a chunk-size line is 1–16 hex digits, optionally `;` extensions of visible characters,
//!   and CRLF; every chunk's data is followed by CRLF; trailer fields are CRLF lines with a
//!   colon. Bare CR or LF anywhere in that framing is an error;
//! - a body over the limit is refused as soon as a declared length says so — a
//!   `Content-Length`, or a chunk size that, added to what came before, passes it — without
//!   waiting for the bytes.
//!
//! `blocking_proxy` reads bodies with [`BodyDecoder`]; `tokio_proxy`, whose bodies hyper
//! reads, runs the same decoder over the same bytes ([`crate::scan`]) so both proxies
//! refuse the same requests and answer an oversize chunk at once.

use std::fmt;

use crate::http::{self, Reply};

/// Longest chunk-size line (size, extensions) accepted.
const MAX_SIZE_LINE: usize = 4096;
/// Largest trailer section accepted.
const MAX_TRAILERS: usize = 16 * 1024;
/// Most hex digits in a chunk size: 16 fill a `u64`.
const MAX_SIZE_DIGITS: u8 = 16;

/// The HTTP version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0: no chunked coding either way, no `Host` required.
    Http10,
    /// HTTP/1.1.
    Http11,
}

/// How a request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    /// Exactly this many bytes (0 when the request declares no body).
    Length(u64),
    /// The chunked transfer coding.
    Chunked,
}

/// Why a request's framing was refused. Each maps to the status the RFC asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingError {
    /// A `Content-Length` that is not a plain decimal number.
    InvalidContentLength,
    /// Several `Content-Length` values that differ.
    ConflictingContentLengths,
    /// Both `Transfer-Encoding` and `Content-Length`.
    LengthAndTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    TransferEncodingInHttp10,
    /// A `Transfer-Encoding` whose final coding is not `chunked`, or that applies it twice:
    /// the body's end cannot be known.
    NotChunked,
    /// A coding other than `chunked` (e.g. `gzip, chunked`): none is implemented (501).
    UnsupportedCoding(String),
    /// A declared length over the limit (413).
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// Malformed chunked framing; the value says where.
    BadChunk(&'static str),
    /// A request head that does not parse, or is too large.
    MalformedHead,
}

impl fmt::Display for FramingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingError::InvalidContentLength => f.write_str("Invalid Content-Length."),
            FramingError::ConflictingContentLengths => {
                f.write_str("Conflicting Content-Length values.")
            }
            FramingError::LengthAndTransferEncoding => {
                f.write_str("Transfer-Encoding and Content-Length together.")
            }
            FramingError::TransferEncodingInHttp10 => {
                f.write_str("Transfer-Encoding in an HTTP/1.0 request.")
            }
            FramingError::NotChunked => {
                f.write_str("Transfer-Encoding must end in chunked, applied once.")
            }
            FramingError::UnsupportedCoding(coding) => {
                write!(f, "Transfer coding `{coding}` is not implemented.")
            }
            FramingError::TooLarge { limit } => {
                write!(f, "Request body too large: the limit is {limit} bytes.")
            }
            FramingError::BadChunk(what) => write!(f, "Malformed chunked body: {what}."),
            FramingError::MalformedHead => f.write_str("Malformed or too large request head."),
        }
    }
}

impl FramingError {
    /// The reply: 413, 501, or 400. The connection is closed after it.
    pub fn reply(&self) -> Reply {
        match self {
            FramingError::TooLarge { limit } => {
                http::too_large(usize::try_from(*limit).unwrap_or(usize::MAX))
            }
            FramingError::UnsupportedCoding(_) => http::not_implemented(&self.to_string()),
            _ => http::bad_request(&self.to_string()),
        }
    }
}

/// The body framing of a request head (RFC 9112 §6.3), checked against `limit` bytes.
/// `headers` is every header field line in order, repeated names included.
pub fn body_length(
    version: Version,
    headers: &[(&str, &[u8])],
    limit: u64,
) -> Result<BodyLength, FramingError> {
    let mut transfer_encoding = false;
    let mut codings: Vec<&[u8]> = Vec::new();
    let mut length: Option<u64> = None;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
            codings.extend(list_members(value));
        } else if name.eq_ignore_ascii_case("content-length") {
            for member in value.split(|&b| b == b',') {
                let n = content_length(member.trim_ascii())?;
                if length.is_some_and(|l| l != n) {
                    return Err(FramingError::ConflictingContentLengths);
                }
                length = Some(n);
            }
        }
    }
    if transfer_encoding {
        if version == Version::Http10 {
            return Err(FramingError::TransferEncodingInHttp10);
        }
        if length.is_some() {
            return Err(FramingError::LengthAndTransferEncoding);
        }
        let chunked = |c: &&[u8]| c.eq_ignore_ascii_case(b"chunked");
        let Some((last, before)) = codings.split_last() else {
            return Err(FramingError::NotChunked);
        };
        if !chunked(last) || before.iter().any(chunked) {
            return Err(FramingError::NotChunked);
        }
        if let Some(other) = before.first() {
            let name = String::from_utf8_lossy(other).into_owned();
            return Err(FramingError::UnsupportedCoding(name));
        }
        return Ok(BodyLength::Chunked);
    }
    match length {
        Some(n) if n > limit => Err(FramingError::TooLarge { limit }),
        Some(n) => Ok(BodyLength::Length(n)),
        None => Ok(BodyLength::Length(0)),
    }
}

/// The non-empty members of a comma-separated field value, trimmed.
fn list_members(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|m| !m.is_empty())
}

/// `1*DIGIT`, saturating (a number too large for `u64` is over any limit anyway).
fn content_length(value: &[u8]) -> Result<u64, FramingError> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(FramingError::InvalidContentLength);
    }
    Ok(value.iter().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// What one [`BodyDecoder::decode`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Input bytes used; the rest belongs to whatever follows the body.
    pub consumed: usize,
    /// Whether the body is complete.
    pub done: bool,
}

/// Reads one request body out of the bytes that follow its head, in pieces of any size.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
    /// Data bytes seen so far.
    total: u64,
    limit: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A `Content-Length` body with this many bytes to go.
    Length(u64),
    /// In a chunk-size line's digits.
    Size {
        value: u64,
        digits: u8,
        line: usize,
    },
    /// Whitespace after the digits, before a `;`.
    SizeSpace {
        value: u64,
        line: usize,
    },
    /// In a chunk extension.
    Extension {
        value: u64,
        line: usize,
    },
    /// After the size line's CR.
    SizeLf {
        value: u64,
    },
    /// In a chunk's data.
    Data(u64),
    /// After a chunk's data: CR, then LF.
    DataCr,
    DataLf,
    /// In the trailer section: at the start of a line, inside one (whether a colon was
    /// seen), after its CR; the count is the section's bytes so far.
    TrailerStart(usize),
    Trailer {
        colon: bool,
        seen: usize,
    },
    TrailerLf {
        last: bool,
        seen: usize,
    },
    Done,
    /// Failed: every later call fails the same way.
    Failed,
}

impl BodyDecoder {
    /// A decoder for a body framed as `length`, refusing more than `limit` data bytes.
    pub fn new(length: BodyLength, limit: u64) -> BodyDecoder {
        let state = match length {
            BodyLength::Length(0) => State::Done,
            BodyLength::Length(n) => State::Length(n),
            BodyLength::Chunked => State::Size {
                value: 0,
                digits: 0,
                line: 0,
            },
        };
        BodyDecoder {
            state,
            total: 0,
            limit,
        }
    }

    /// Whether the body is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes `input`, passing each run of body data to `data` as it is found. Stops at
    /// the end of the body (the rest of `input` is not consumed). After an error, every
    /// call returns an error.
    pub fn decode(
        &mut self,
        input: &[u8],
        mut data: impl FnMut(&[u8]),
    ) -> Result<Decoded, FramingError> {
        let mut at = 0;
        while at < input.len() {
            match self.state {
                State::Done => break,
                State::Failed => return Err(FramingError::BadChunk("after an error")),
                State::Length(left) | State::Data(left) => {
                    let take = usize::try_from(left)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - at);
                    data(&input[at..at + take]);
                    at += take;
                    let left = left - take as u64;
                    self.state = match self.state {
                        State::Length(_) if left == 0 => State::Done,
                        State::Length(_) => State::Length(left),
                        _ if left == 0 => State::DataCr,
                        _ => State::Data(left),
                    };
                }
                _ => {
                    let byte = input[at];
                    at += 1;
                    if let Err(e) = self.step(byte) {
                        self.state = State::Failed;
                        return Err(e);
                    }
                }
            }
        }
        Ok(Decoded {
            consumed: at,
            done: self.state == State::Done,
        })
    }

    /// One byte of chunked framing.
    fn step(&mut self, byte: u8) -> Result<(), FramingError> {
        let bad = |what| Err(FramingError::BadChunk(what));
        self.state = match self.state {
            State::Size {
                value,
                digits,
                line,
            } => {
                if line >= MAX_SIZE_LINE {
                    return bad("chunk-size line too long");
                }
                match (byte as char).to_digit(16) {
                    Some(digit) => {
                        if digits == MAX_SIZE_DIGITS {
                            return bad("chunk size too large");
                        }
                        let value = value * 16 + u64::from(digit);
                        // Refused as soon as the declared size says so, not once the
                        // bytes have come.
                        if self.total.saturating_add(value) > self.limit {
                            return Err(FramingError::TooLarge { limit: self.limit });
                        }
                        State::Size {
                            value,
                            digits: digits + 1,
                            line: line + 1,
                        }
                    }
                    None if digits == 0 => return bad("chunk size expected"),
                    None => match byte {
                        b'\r' => State::SizeLf { value },
                        b';' => State::Extension {
                            value,
                            line: line + 1,
                        },
                        b' ' | b'\t' => State::SizeSpace {
                            value,
                            line: line + 1,
                        },
                        _ => return bad("invalid chunk size"),
                    },
                }
            }
            State::SizeSpace { value, line } => match byte {
                _ if line >= MAX_SIZE_LINE => return bad("chunk-size line too long"),
                b' ' | b'\t' => State::SizeSpace {
                    value,
                    line: line + 1,
                },
                b';' => State::Extension {
                    value,
                    line: line + 1,
                },
                _ => return bad("invalid chunk size"),
            },
            State::Extension { value, line } => match byte {
                _ if line >= MAX_SIZE_LINE => return bad("chunk-size line too long"),
                b'\r' => State::SizeLf { value },
                b'\t' | b' '..=b'~' | 0x80.. => State::Extension {
                    value,
                    line: line + 1,
                },
                _ => return bad("control character in a chunk extension"),
            },
            State::SizeLf { value } => match byte {
                b'\n' if value == 0 => State::TrailerStart(0),
                b'\n' => {
                    self.total += value;
                    State::Data(value)
                }
                _ => return bad("CR without LF after the chunk size"),
            },
            State::DataCr => match byte {
                b'\r' => State::DataLf,
                _ => return bad("no CRLF after chunk data"),
            },
            State::DataLf => match byte {
                b'\n' => State::Size {
                    value: 0,
                    digits: 0,
                    line: 0,
                },
                _ => return bad("no CRLF after chunk data"),
            },
            State::TrailerStart(seen) => match byte {
                _ if seen >= MAX_TRAILERS => return bad("trailer section too large"),
                b'\r' => State::TrailerLf { last: true, seen },
                // A line starting with whitespace would continue the previous one
                // (obsolete line folding).
                b' ' | b'\t' | b':' => return bad("invalid trailer field"),
                _ => trailer_byte(byte, false, seen)?,
            },
            State::Trailer { colon, seen } => match byte {
                _ if seen >= MAX_TRAILERS => return bad("trailer section too large"),
                b'\r' if colon => State::TrailerLf { last: false, seen },
                b'\r' => return bad("invalid trailer field"),
                _ => trailer_byte(byte, colon, seen)?,
            },
            State::TrailerLf { last, seen } => match (byte, last) {
                (b'\n', true) => State::Done,
                (b'\n', false) => State::TrailerStart(seen + 2),
                _ => return bad("CR without LF in the trailers"),
            },
            State::Length(_) | State::Data(_) | State::Done | State::Failed => {
                unreachable!("not a framing byte")
            }
        };
        Ok(())
    }
}

/// One byte inside a trailer field line.
fn trailer_byte(byte: u8, colon: bool, seen: usize) -> Result<State, FramingError> {
    match byte {
        b'\t' | b' '..=b'~' | 0x80.. => Ok(State::Trailer {
            colon: colon || byte == b':',
            seen: seen + 1,
        }),
        _ => Err(FramingError::BadChunk("control character in the trailers")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn length(version: Version, headers: &[(&str, &str)]) -> Result<BodyLength, FramingError> {
        let headers: Vec<(&str, &[u8])> = headers.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
        body_length(version, &headers, 1000)
    }

    #[test]
    fn framing_headers() {
        use BodyLength::*;
        use FramingError::*;
        let v11 = Version::Http11;
        assert_eq!(length(v11, &[]), Ok(Length(0)));
        assert_eq!(length(v11, &[("Content-Length", "83")]), Ok(Length(83)));
        assert_eq!(length(v11, &[("content-length", " 7 ")]), Ok(Length(7)));
        assert_eq!(
            length(v11, &[("content-length", "7"), ("Content-Length", "7")]),
            Ok(Length(7)),
            "equal duplicates are one length"
        );
        assert_eq!(length(v11, &[("content-length", "7, 7")]), Ok(Length(7)));
        for bad in ["+83", "-1", "", "8 3", "0x10", "1e3", "83;", " "] {
            assert_eq!(
                length(v11, &[("content-length", bad)]),
                Err(InvalidContentLength),
                "{bad:?}"
            );
        }
        assert_eq!(
            length(v11, &[("content-length", "5"), ("content-length", "7")]),
            Err(ConflictingContentLengths)
        );
        assert_eq!(
            length(v11, &[("content-length", "5, 7")]),
            Err(ConflictingContentLengths)
        );
        assert_eq!(
            length(v11, &[("content-length", "1001")]),
            Err(TooLarge { limit: 1000 })
        );
        assert_eq!(
            length(v11, &[("content-length", &"9".repeat(40))]),
            Err(TooLarge { limit: 1000 }),
            "beyond u64"
        );
        assert_eq!(
            length(v11, &[("transfer-encoding", "chunked")]),
            Ok(Chunked)
        );
        assert_eq!(
            length(v11, &[("Transfer-Encoding", "Chunked")]),
            Ok(Chunked)
        );
        for te in [
            &[("transfer-encoding", "chunked, identity")][..],
            &[("transfer-encoding", "xchunked")],
            &[("transfer-encoding", "identity")],
            &[("transfer-encoding", "chunked, chunked")],
            &[
                ("transfer-encoding", "chunked"),
                ("transfer-encoding", "chunked"),
            ],
            &[("transfer-encoding", "chunked;q=1")],
            &[("transfer-encoding", "")],
            &[("transfer-encoding", "gzip")],
        ] {
            assert_eq!(length(v11, te), Err(NotChunked), "{te:?}");
        }
        assert_eq!(
            length(v11, &[("transfer-encoding", "gzip, chunked")]),
            Err(UnsupportedCoding("gzip".into()))
        );
        assert_eq!(
            length(
                v11,
                &[
                    ("transfer-encoding", "gzip"),
                    ("transfer-encoding", "chunked")
                ]
            ),
            Err(UnsupportedCoding("gzip".into()))
        );
        assert_eq!(
            length(
                v11,
                &[("transfer-encoding", "chunked"), ("content-length", "5")]
            ),
            Err(LengthAndTransferEncoding)
        );
        assert_eq!(
            length(Version::Http10, &[("transfer-encoding", "chunked")]),
            Err(TransferEncodingInHttp10)
        );
        assert_eq!(
            length(Version::Http10, &[("content-length", "3")]),
            Ok(Length(3))
        );
    }

    /// Decodes `input` split at `splits`: the body, the bytes consumed, or the error.
    fn decode_split(
        length: BodyLength,
        limit: u64,
        input: &[u8],
        splits: &[usize],
    ) -> Result<(Vec<u8>, usize), FramingError> {
        let mut decoder = BodyDecoder::new(length, limit);
        let mut body = Vec::new();
        let mut consumed = 0;
        let mut from = 0;
        for &to in splits.iter().chain(std::iter::once(&input.len())) {
            let piece = &input[from..to];
            from = to;
            if decoder.is_done() {
                continue;
            }
            let decoded = decoder.decode(piece, |d| body.extend_from_slice(d))?;
            consumed += decoded.consumed;
            assert_eq!(decoded.done, decoder.is_done());
            if !decoded.done {
                assert_eq!(decoded.consumed, piece.len(), "all consumed until done");
            }
        }
        if !decoder.is_done() {
            return Err(FramingError::BadChunk("incomplete"));
        }
        Ok((body, consumed))
    }

    /// The result whole, byte at a time and at every split offset, which must agree.
    fn decode_every_way(
        length: BodyLength,
        limit: u64,
        input: &[u8],
    ) -> Result<(Vec<u8>, usize), FramingError> {
        let whole = decode_split(length, limit, input, &[]);
        let bytes: Vec<usize> = (1..input.len()).collect();
        assert_eq!(
            decode_split(length, limit, input, &bytes),
            whole,
            "byte at a time: {:?}",
            String::from_utf8_lossy(input)
        );
        for at in 1..input.len() {
            assert_eq!(
                decode_split(length, limit, input, &[at]),
                whole,
                "split at {at}: {:?}",
                String::from_utf8_lossy(input)
            );
        }
        whole
    }

    #[test]
    fn content_length_bodies_stop_at_their_end() {
        let (body, used) =
            decode_every_way(BodyLength::Length(5), 10, b"helloGET / HTTP/1.1").unwrap();
        assert_eq!((body.as_slice(), used), (&b"hello"[..], 5));
        let (body, used) = decode_every_way(BodyLength::Length(0), 10, b"next").unwrap();
        assert_eq!((body.len(), used), (0, 0));
    }

    #[test]
    fn chunked_bodies() {
        let chunked = |input: &[u8]| decode_every_way(BodyLength::Chunked, 100, input);
        let ok = [
            (&b"5\r\nhello\r\n0\r\n\r\n"[..], &b"hello"[..]),
            (b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world"),
            (b"A\r\n0123456789\r\n0\r\n\r\n", b"0123456789"),
            (b"a;name=value\r\n0123456789\r\n0;x\r\n\r\n", b"0123456789"),
            (b"5 ;ext\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"0000000000000005\r\nhello\r\n0\r\n\r\n", b"hello"),
            (b"5\r\nhello\r\n0\r\nX-Sum: 1\r\nX-Other:\r\n\r\n", b"hello"),
            (b"0\r\n\r\n", b""),
        ];
        for (input, body) in ok {
            let (decoded, used) = chunked(input).unwrap();
            assert_eq!(decoded, body, "{:?}", String::from_utf8_lossy(input));
            assert_eq!(used, input.len());
        }
        // What follows the body is left alone.
        let (_, used) = chunked(b"0\r\n\r\nPOST").unwrap();
        assert_eq!(used, 5);
        let bad = [
            &b"\r\n"[..],                               // no size at all
            b";ext\r\n\r\n",                            // no size before the extension
            b"5\nhello\r\n0\r\n\r\n",                   // bare LF after the size
            b"5\r\nhello\n0\r\n\r\n",                   // bare LF after the data
            b"5\r\nhelloXY0\r\n\r\n",                   // no CRLF after the data
            b"5\r\nhello0\r\n\r\n",                     // no CRLF after the data
            b"5\r\rhello\r\n0\r\n\r\n",                 // CR CR
            b"+5\r\nhello\r\n0\r\n\r\n",                // sign
            b"5x\r\nhello\r\n0\r\n\r\n",                // junk after the size
            b"5 \r\nhello\r\n0\r\n\r\n",                // whitespace without an extension
            b"5;a\nb\r\nhello\r\n0\r\n\r\n",            // LF inside an extension
            b"5;a\x00\r\nhello\r\n0\r\n\r\n",           // NUL inside an extension
            b"00000000000000005\r\nhello\r\n0\r\n\r\n", // 17 digits
            b"0\r\nX-Sum 1\r\n\r\n",                    // trailer without a colon
            b"0\r\n folded\r\n\r\n",                    // obsolete line folding
            b"0\r\nX: 1\n\r\n",                         // bare LF in the trailers
            b"0\r\n\r\r",                               // CR CR at the end
        ];
        for input in bad {
            assert!(
                matches!(chunked(input), Err(FramingError::BadChunk(_))),
                "{:?}: {:?}",
                String::from_utf8_lossy(input),
                chunked(input)
            );
        }
    }

    #[test]
    fn oversize_chunks_are_refused_on_their_declared_size() {
        let error = FramingError::TooLarge { limit: 10 };
        let too_large = Err(error.clone());
        // The size line alone is enough: no data has to come.
        let mut decoder = BodyDecoder::new(BodyLength::Chunked, 10);
        assert_eq!(decoder.decode(b"1", |_| {}).map(|d| d.done), Ok(false));
        assert_eq!(decoder.decode(b"0", |_| {}), Err(error));
        assert!(decoder.decode(b"\r\n", |_| {}).is_err(), "sticky");
        // Added to earlier chunks.
        let input = b"6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n";
        assert_eq!(decode_every_way(BodyLength::Chunked, 10, input), too_large);
        assert_eq!(
            decode_every_way(BodyLength::Chunked, 11, input).map(|(b, _)| b),
            Ok(b"hello world".to_vec())
        );
        // The largest size there is.
        assert_eq!(
            decode_every_way(BodyLength::Chunked, 10, b"ffffffffffffffff\r\n"),
            too_large
        );
    }

    #[test]
    fn long_lines_are_refused() {
        let mut long = b"5;".to_vec();
        long.extend(std::iter::repeat_n(b'x', MAX_SIZE_LINE));
        long.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
        assert!(decode_split(BodyLength::Chunked, 100, &long, &[]).is_err());
        let mut trailers = b"0\r\n".to_vec();
        for _ in 0..MAX_TRAILERS / 8 {
            trailers.extend_from_slice(b"X: 123\r\n");
        }
        trailers.extend_from_slice(b"\r\n");
        assert!(decode_split(BodyLength::Chunked, 100, &trailers, &[]).is_err());
    }
}
