//! The requests on one connection, followed through the bytes the server library reads.
//!
//! `tokio_proxy`'s HTTP/1 is hyper, whose request body is a stream of data frames: it does
//! not say when a request's first byte came (where `--request-timeout-ms` counts from), nor
//! what a chunk declared before its bytes arrive, and it accepts some framings
//! `blocking_proxy` refuses (`gzip, chunked`; `Transfer-Encoding` with `Content-Length`).
//! So the connection's reads also go through a [`RequestScanner`], which parses each head
//! (httparse, as hyper does) and walks each body with the strict [`BodyDecoder`] without
//! keeping it. The request handler then asks it when its request started and whether its
//! framing was refused — an oversize chunk size is seen the moment its line arrives.

use std::collections::VecDeque;
use std::time::Instant;

use crate::framing::{BodyDecoder, FramingError, Version, body_length};

/// Largest request head accepted (both proxies).
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header fields in a request head (both proxies).
pub const MAX_HEADERS: usize = 64;
/// Requests remembered: how far the scanner may run ahead of the handlers (pipelining).
const REMEMBERED: usize = 32;

/// Whether the bytes of a head from `new` on (those before were already looked at) hold
/// the blank line a head ends with: parsing is tried only then, so a head sent a byte at
/// a time costs linear time, not quadratic.
pub fn may_end_head(head: &[u8], new: usize) -> bool {
    let from = new.saturating_sub(2);
    head[from..].iter().enumerate().any(|(i, &b)| {
        b == b'\n' && matches!(head[from + i + 1..], [b'\n', ..] | [b'\r', b'\n', ..])
    })
}

/// What the scanner knows of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scanned {
    index: u64,
    started: Instant,
    /// `None` while its body is being read; `Some(Ok)` once it is complete.
    outcome: Option<Result<(), FramingError>>,
}

/// Follows request framing through a connection's bytes (see the module docs).
#[derive(Debug)]
pub struct RequestScanner {
    state: State,
    /// The head being gathered.
    head: Vec<u8>,
    limit: u64,
    /// Index of the next request to start (0 for the connection's first).
    next: u64,
    recent: VecDeque<Scanned>,
    /// The first request whose framing was refused: it and every later one fail so.
    broken: Option<(u64, FramingError)>,
}

#[derive(Debug)]
enum State {
    /// Between requests (blank lines before a request line are skipped, as hyper does).
    Between,
    Head,
    Body(BodyDecoder),
    /// Framing was refused; nothing after it can be followed.
    Broken,
}

impl RequestScanner {
    /// A new connection whose bodies may hold `limit` bytes.
    pub fn new(limit: u64) -> RequestScanner {
        RequestScanner {
            state: State::Between,
            head: Vec::new(),
            limit,
            next: 0,
            recent: VecDeque::new(),
            broken: None,
        }
    }

    /// Takes bytes read from the connection at `now`. True when a request's framing was
    /// refused by these bytes (what a waiting handler must hear about).
    pub fn push(&mut self, bytes: &[u8], now: Instant) -> bool {
        let mut at = 0;
        while at < bytes.len() {
            match &mut self.state {
                State::Broken => return false,
                State::Between => {
                    if matches!(bytes[at], b'\r' | b'\n') {
                        at += 1;
                        continue;
                    }
                    if self.recent.len() == REMEMBERED {
                        self.recent.pop_front();
                    }
                    self.recent.push_back(Scanned {
                        index: self.next,
                        started: now,
                        outcome: None,
                    });
                    self.state = State::Head;
                }
                State::Head => {
                    let before = self.head.len();
                    self.head.extend_from_slice(&bytes[at..]);
                    if !may_end_head(&self.head, before) {
                        if self.head.len() > MAX_HEAD {
                            return self.refuse(FramingError::MalformedHead);
                        }
                        at = bytes.len();
                        continue;
                    }
                    match self.parse_head() {
                        Ok(Some((len, decoder))) => {
                            at += len - before;
                            self.head.clear();
                            self.state = State::Body(decoder);
                            self.after_body_bytes();
                        }
                        Ok(None) => at = bytes.len(),
                        Err(e) => return self.refuse(e),
                    }
                }
                State::Body(decoder) => match decoder.decode(&bytes[at..], |_| {}) {
                    Ok(decoded) => {
                        at += decoded.consumed;
                        self.after_body_bytes();
                    }
                    Err(e) => return self.refuse(e),
                },
            }
        }
        false
    }

    /// The head gathered so far: its length and its body's decoder once complete.
    fn parse_head(&self) -> Result<Option<(usize, BodyDecoder)>, FramingError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&self.head) {
            Ok(httparse::Status::Complete(len)) => {
                let version = match request.version {
                    Some(0) => Version::Http10,
                    _ => Version::Http11,
                };
                let fields: Vec<(&str, &[u8])> =
                    request.headers.iter().map(|h| (h.name, h.value)).collect();
                let length = body_length(version, &fields, self.limit)?;
                Ok(Some((len, BodyDecoder::new(length, self.limit))))
            }
            Ok(httparse::Status::Partial) if self.head.len() <= MAX_HEAD => Ok(None),
            Ok(httparse::Status::Partial) | Err(_) => Err(FramingError::MalformedHead),
        }
    }

    /// A complete body ends its request.
    fn after_body_bytes(&mut self) {
        if matches!(&self.state, State::Body(decoder) if decoder.is_done()) {
            self.set_outcome(Ok(()));
            self.next += 1;
            self.state = State::Between;
        }
    }

    fn refuse(&mut self, error: FramingError) -> bool {
        self.set_outcome(Err(error.clone()));
        self.broken = Some((self.next, error));
        self.state = State::Broken;
        true
    }

    fn set_outcome(&mut self, outcome: Result<(), FramingError>) {
        if let Some(request) = self.recent.back_mut() {
            request.outcome = Some(outcome);
        }
    }

    fn find(&self, index: u64) -> Option<&Scanned> {
        self.recent.iter().rev().find(|r| r.index == index)
    }

    /// When the first byte of request `index` (0 for the connection's first) was read.
    pub fn started(&self, index: u64) -> Option<Instant> {
        self.find(index).map(|r| r.started)
    }

    /// Why request `index`'s framing was refused, if it was.
    pub fn refused(&self, index: u64) -> Option<FramingError> {
        match &self.broken {
            Some((at, error)) if index >= *at => Some(error.clone()),
            _ => None,
        }
    }

    /// Whether request `index`'s body has been read whole.
    pub fn complete(&self, index: u64) -> bool {
        index < self.next
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const POST: &[u8] = b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n";

    fn request(headers: &str, body: &str) -> Vec<u8> {
        [POST, headers.as_bytes(), b"\r\n", body.as_bytes()].concat()
    }

    /// What a scan found: when each request started (after the first push), the refusal,
    /// and how many requests were complete.
    type Found = (Vec<Duration>, Option<(u64, FramingError)>, u64);

    /// Feeds `input` split at `at`, the second part 7 ms later.
    fn scan(input: &[u8], at: usize) -> Found {
        let t0 = Instant::now();
        let later = t0 + Duration::from_millis(7);
        let mut scanner = RequestScanner::new(100);
        let refused_first = scanner.push(&input[..at], t0);
        let refused_later = scanner.push(&input[at..], later);
        assert_eq!(
            refused_first || refused_later,
            scanner.broken.is_some(),
            "a refusal is reported"
        );
        let started = (0..scanner.next + 1)
            .filter_map(|i| scanner.started(i))
            .map(|s| s - t0)
            .collect();
        (started, scanner.broken.clone(), scanner.next)
    }

    fn every_split(input: &[u8]) -> Vec<Found> {
        (0..=input.len()).map(|at| scan(input, at)).collect()
    }

    #[test]
    fn follows_pipelined_requests() {
        let mut input = request("Content-Length: 5\r\n", "hello");
        input.extend_from_slice(b"\r\n");
        input.extend(request(
            "Transfer-Encoding: chunked\r\n",
            "2\r\nhi\r\n0\r\n\r\n",
        ));
        input.extend(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        let first_end = request("Content-Length: 5\r\n", "hello").len();
        for (at, (started, broken, complete)) in every_split(&input).into_iter().enumerate() {
            assert_eq!((broken, complete), (None, 3), "split at {at}");
            // A request's start is when its first byte was read.
            let late = Duration::from_millis(7);
            let expected = [
                if at == 0 { late } else { Duration::ZERO },
                if at <= first_end + 2 {
                    late
                } else {
                    Duration::ZERO
                },
            ];
            assert_eq!(started[..2], expected, "split at {at}");
        }
    }

    #[test]
    fn refuses_what_blocking_proxy_refuses() {
        let cases = [
            (
                request("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"),
                FramingError::UnsupportedCoding("gzip".into()),
            ),
            (
                request(
                    "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
                    "0\r\n\r\n",
                ),
                FramingError::LengthAndTransferEncoding,
            ),
            (
                request("Transfer-Encoding: chunked\r\n", "65\r\n"),
                FramingError::TooLarge { limit: 100 },
            ),
            (
                request("Transfer-Encoding: chunked\r\n", "2\r\nhiXX0\r\n\r\n"),
                FramingError::BadChunk("no CRLF after chunk data"),
            ),
            (
                b"\x00\x01 nonsense\r\n\r\n".to_vec(),
                FramingError::MalformedHead,
            ),
        ];
        for (input, error) in cases {
            for (at, (_, broken, complete)) in every_split(&input).into_iter().enumerate() {
                assert_eq!(
                    (broken, complete),
                    (Some((0, error.clone())), 0),
                    "{:?} split at {at}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
        // A refusal is the refused request's and every later one's.
        let mut scanner = RequestScanner::new(100);
        let mut input = request("Content-Length: 2\r\n", "hi");
        input.extend(request("Transfer-Encoding: xchunked\r\n", ""));
        assert!(scanner.push(&input, Instant::now()));
        assert_eq!(scanner.refused(0), None);
        assert!(scanner.complete(0));
        assert_eq!(scanner.refused(1), Some(FramingError::NotChunked));
        assert_eq!(scanner.refused(2), Some(FramingError::NotChunked));
    }

    #[test]
    fn blank_lines_end_heads() {
        let head = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert!(may_end_head(head, 0));
        // Every way the last bytes can arrive.
        for new in 0..head.len() {
            assert!(may_end_head(head, new), "{new}");
        }
        assert!(!may_end_head(&head[..head.len() - 1], 0));
        assert!(may_end_head(b"GET / HTTP/1.1\nHost: x\n\n", 20));
        assert!(!may_end_head(b"GET / HTTP/1.1\r\nHost: x\r\n", 0));
    }

    #[test]
    fn heads_are_bounded() {
        let mut scanner = RequestScanner::new(100);
        let now = Instant::now();
        assert!(!scanner.push(POST, now));
        let filler = [b'a'; 1024];
        let mut refused = false;
        for _ in 0..=MAX_HEAD / filler.len() {
            refused |= scanner.push(&filler, now);
        }
        assert!(refused);
        assert!(scanner.head.len() <= MAX_HEAD + filler.len());
    }
}
