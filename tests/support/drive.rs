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

/// Longer transcripts (the real captures reach 41 KB) are also read in pushes of this many
/// bytes, once at each phase, so that every offset ends a push in one run at a cost of
/// this many runs (a prime, so that the pushes line up with nothing in the transcript).
const STRIDE: usize = 61;

/// Every way `bytes` is fed in [`every_transcript_in_every_chunking`] besides whole, each
/// named: 1-, 7- and 4096-byte reads; two pushes split at every offset of a short
/// transcript, or at every line end of a long one (before and after its newline, where
/// framing decides); and for a long one, [`STRIDE`]-byte pushes at every phase. Every offset
/// of stdout ends a push in some run, at a cost linear in the transcript's size times its
/// lines (`every_offset_ends_a_push` in tests/dialects.rs).
pub fn chunkings(bytes: &[u8]) -> Vec<(String, Vec<&[u8]>)> {
    let mut runs: Vec<(String, Vec<&[u8]>)> = [1, 7, 4096]
        .into_iter()
        .map(|chunk| (format!("{chunk}-byte reads"), pieces(bytes, chunk)))
        .collect();
    let splits: Vec<usize> = if bytes.len() <= EVERY_OFFSET_MAX {
        (0..=bytes.len()).collect()
    } else {
        let mut at: Vec<usize> = memchr::memchr_iter(b'\n', bytes)
            .flat_map(|end| [end, end + 1])
            .collect();
        at.insert(0, 0);
        at
    };
    for at in splits {
        runs.push((format!("split at {at}"), vec![&bytes[..at], &bytes[at..]]));
    }
    if bytes.len() > EVERY_OFFSET_MAX {
        for phase in 1..=STRIDE {
            let mut run = vec![&bytes[..phase]];
            run.extend(bytes[phase..].chunks(STRIDE));
            runs.push((format!("{STRIDE}-byte reads from {phase}"), run));
        }
    }
    runs
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
    if let Some(captures) = super::shared_captures("every transcript: the real captures") {
        files.extend(captures);
    }
    files
}

/// Asserts that the response to `request` of `dialect` is the same — status, head, body,
/// stops — whether the agent's output comes whole or in any of the [`chunkings`] (every
/// offset of stdout ends a push in one of them), for every transcript;
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
        for (how, pieces) in chunkings(&bytes) {
            assert_eq!(
                drive(dialect, request, &pieces),
                whole,
                "{dialect:?} {name}: {how}"
            );
        }
        check(path, &bytes, &whole);
    }
    println!(
        "{dialect:?}: {} transcripts identical in every chunking",
        files.len()
    );
}
