//! The Bridge driven over a transcript for a request of any dialect, and the check every
//! dialect's encoders must pass: the same response, whatever the chunking of the agent's
//! output, on every transcript in `tests/fixtures` and every real capture.
//!
//! A dialect adds itself with one line per response kind, in `tests/dialects.rs`:
//!
//! ```text
//! #[test]
//! fn messages_stream() {
//!     every_transcript_in_every_chunking(Dialect::Messages, &hello(Dialect::Messages, true), check_messages_stream);
//! }
//! ```
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;

/// What an adapter saw for one request: the status, the body, how often it was told to
/// stop the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub retryable: Option<bool>,
    pub body: Vec<u8>,
    pub stops: usize,
}

/// The smallest request of `dialect` that asks "hi" (as a stream or not): the request the
/// chunking checks use. Chat Completions asks for usage in its stream too.
pub fn hello(dialect: Dialect, stream: bool) -> Vec<u8> {
    let request = match dialect {
        Dialect::ChatCompletions if stream => serde_json::json!({"model": "auto", "stream": true,
            "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "hi"}]}),
        Dialect::ChatCompletions => serde_json::json!({"model": "auto",
            "messages": [{"role": "user", "content": "hi"}]}),
        // As Codex asks: reasoning shown as summaries.
        Dialect::Responses => serde_json::json!({"model": "auto", "stream": stream, "input": "hi",
            "reasoning": {"summary": "auto"}}),
        Dialect::Messages => {
            serde_json::json!({"model": "auto", "max_tokens": 1024, "stream": stream,
            "messages": [{"role": "user", "content": "hi"}]})
        }
        other => panic!("no request for {other:?}"),
    };
    serde_json::to_vec(&request).unwrap()
}

/// A Bridge for `request` of `dialect` (default configuration, time 0, seed 1).
pub fn bridge(dialect: Dialect, request: &[u8]) -> Bridge {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 1,
    };
    Bridge::new(dialect, request, &Config::default(), params)
}

/// Drains every output of `bridge` into `response`, checking the order: one head, before
/// any body; nothing after `End`. Returns how many `End`s it saw.
pub fn drain(bridge: &mut Bridge, response: &mut Option<Response>) -> usize {
    let mut ends = 0;
    while let Some(output) = bridge.poll_output() {
        assert_eq!(ends, 0, "nothing after End");
        match output {
            Output::Head(head) => {
                assert!(response.is_none(), "one head");
                *response = Some(Response {
                    status: head.status,
                    content_type: head.content_type,
                    retryable: head.retryable,
                    body: Vec::new(),
                    stops: 0,
                });
            }
            Output::Body(bytes) => {
                assert!(!bytes.is_empty(), "no empty body output");
                response
                    .as_mut()
                    .expect("head before body")
                    .body
                    .extend_from_slice(bytes);
            }
            Output::StopAgent => {
                if let Some(response) = response.as_mut() {
                    response.stops += 1;
                }
            }
            Output::End => ends += 1,
        }
    }
    ends
}

/// The response to `request` of `dialect` when the agent writes `pieces` to stdout, one
/// push each (outputs drained after every push), then exits with code 0. Exactly one `End`.
pub fn drive(dialect: Dialect, request: &[u8], pieces: &[&[u8]]) -> Response {
    let mut bridge = bridge(dialect, request);
    let mut response = None;
    let mut ends = drain(&mut bridge, &mut response);
    if bridge.invocation().is_some() {
        for piece in pieces {
            bridge.push_stdout(piece, 0).unwrap();
            ends += drain(&mut bridge, &mut response);
        }
        bridge.agent_exited(ExitStatus::Code(0), 0).unwrap();
        ends += drain(&mut bridge, &mut response);
    }
    assert_eq!(ends, 1, "exactly one End");
    assert!(bridge.poll_output().is_none() && bridge.poll_timeout().is_none());
    response.expect("a head")
}

/// `bytes` in `chunk`-byte pieces (`usize::MAX`: whole).
pub fn pieces(bytes: &[u8], chunk: usize) -> Vec<&[u8]> {
    if chunk >= bytes.len() {
        vec![bytes]
    } else {
        bytes.chunks(chunk).collect()
    }
}

/// Transcripts up to this size are split into two pushes at every offset.
const EVERY_OFFSET_MAX: usize = 2048;

/// Lines of a longer transcript (the real captures reach 41 KB) split at: their ends and
/// one byte on either side, where framing decides, for this many lines spread over the
/// transcript. (Every offset of every transcript is the decoder's test, `tests/decoder.rs`;
/// here each split is a whole Bridge run, prompt included.)
const SPLIT_LINES: usize = 48;

/// Where `bytes` is split into two pushes.
fn split_points(bytes: &[u8]) -> Vec<usize> {
    if bytes.len() <= EVERY_OFFSET_MAX {
        return (0..=bytes.len()).collect();
    }
    let ends: Vec<usize> = memchr::memchr_iter(b'\n', bytes).collect();
    let step = ends.len().div_ceil(SPLIT_LINES).max(1);
    let mut points: Vec<usize> = ends
        .iter()
        .step_by(step)
        .flat_map(|at| [*at, at + 1, at + 2])
        .filter(|at| *at <= bytes.len())
        .collect();
    points.dedup();
    points
}

/// Every transcript of the project (`tests/fixtures`, `tests/fixtures/e2e`) and, when
/// present beside the repository, every real capture.
pub fn every_transcript() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = super::mix::jsonl_files(&root.join("tests/fixtures"));
    files.extend(super::mix::jsonl_files(&root.join("tests/fixtures/e2e")));
    files.extend(super::mix::jsonl_files(
        &root.join("tests/fixtures/e2e/read_file"),
    ));
    if let Some(captures) = super::shared_captures() {
        files.extend(captures);
    }
    files
}

/// Asserts that the response to `request` of `dialect` is the same — status, head, body,
/// stops — whether the agent's output comes whole, a byte at a time, in 7- and 4096-byte
/// reads, or in two pushes split anywhere (every offset of a short transcript, the line
/// boundaries of a long one: see [`EVERY_OFFSET_MAX`]), for every transcript;
/// then hands each transcript's response to `check` (the dialect's own contract).
pub fn every_transcript_in_every_chunking(
    dialect: Dialect,
    request: &[u8],
    mut check: impl FnMut(&Path, &[u8], &Response),
) {
    let files = every_transcript();
    assert!(files.len() >= 15, "{files:?}");
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let name = path.display();
        let whole = drive(dialect, request, &[&bytes]);
        for chunk in [1, 7, 4096] {
            assert_eq!(
                drive(dialect, request, &pieces(&bytes, chunk)),
                whole,
                "{dialect:?} {name}: {chunk}-byte reads"
            );
        }
        for at in split_points(&bytes) {
            assert_eq!(
                drive(dialect, request, &[&bytes[..at], &bytes[at..]]),
                whole,
                "{dialect:?} {name}: split at {at}"
            );
        }
        check(path, &bytes, &whole);
    }
    println!(
        "{dialect:?}: {} transcripts identical in every chunking",
        files.len()
    );
}
