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

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Head, Output};
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

/// One output of a Bridge, owned, as an adapter saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Head(Head),
    Body(Vec<u8>),
    Stop,
    End,
}

/// Drains every output of `bridge` onto `seen`, checking the order every adapter relies
/// on: one head, before any body; no empty body; one stop at most; nothing after `End`.
/// The one drain loop of the Rust tests (`tests/memory.rs` and `tests/allocations.rs`
/// count bytes instead: they measure allocations, which keeping outputs would add to).
pub fn drain_into(bridge: &mut Bridge, seen: &mut Vec<Seen>) {
    while let Some(output) = bridge.poll_output() {
        assert!(!seen.contains(&Seen::End), "nothing after End: {output:?}");
        let heads = seen.iter().filter(|s| matches!(s, Seen::Head(_))).count();
        seen.push(match output {
            Output::Head(head) => {
                assert_eq!(heads, 0, "one head");
                Seen::Head(head)
            }
            Output::Body(bytes) => {
                assert_eq!(heads, 1, "head before body");
                assert!(!bytes.is_empty(), "no empty body output");
                Seen::Body(bytes.to_vec())
            }
            Output::StopAgent => {
                assert!(!seen.contains(&Seen::Stop), "one stop");
                Seen::Stop
            }
            Output::Respawn => panic!("a bridge made by Bridge::new never respawns"),
            Output::End => Seen::End,
        });
    }
}

/// Most deadlines [`advance`] fires: a Bridge whose deadlines stop moving fails the test
/// instead of looping.
pub const MAX_DEADLINES: usize = 10_000;

/// Fires every deadline of `bridge` up to `until` in order (`u64::MAX`: until none is
/// left), each at the later of it and `now` (time never goes back), draining onto `seen`
/// after each; returns the time reached.
pub fn advance(bridge: &mut Bridge, seen: &mut Vec<Seen>, mut now: u64, until: u64) -> u64 {
    for _ in 0..MAX_DEADLINES {
        match bridge.poll_timeout() {
            Some(deadline) if deadline <= until => {
                now = now.max(deadline);
                bridge.handle_timeout(now);
                drain_into(bridge, seen);
            }
            _ => return now,
        }
    }
    panic!("more than {MAX_DEADLINES} deadlines: the Bridge's deadlines do not advance");
}

impl Response {
    /// The response in `seen` (which must hold a head): the body's bytes, and the stops
    /// after the head.
    pub fn of(seen: &[Seen]) -> Response {
        let at = seen
            .iter()
            .position(|s| matches!(s, Seen::Head(_)))
            .expect("a head");
        let Seen::Head(head) = &seen[at] else {
            unreachable!()
        };
        let mut response = Response {
            status: head.status,
            content_type: head.content_type,
            retryable: head.retryable,
            body: Vec::new(),
            stops: 0,
        };
        for seen in &seen[at..] {
            match seen {
                Seen::Body(bytes) => response.body.extend_from_slice(bytes),
                Seen::Stop => response.stops += 1,
                _ => {}
            }
        }
        response
    }
}

/// The response of `bridge` when the agent writes `pieces` to stdout, one push each
/// (outputs drained after every push), then exits with `exit`. Exactly one `End`, and
/// nothing left to do after it.
pub fn respond_to(mut bridge: Bridge, pieces: &[&[u8]], exit: ExitStatus) -> Response {
    let mut seen = Vec::new();
    drain_into(&mut bridge, &mut seen);
    if bridge.invocation().is_some() {
        for piece in pieces {
            bridge.push_stdout(piece, 0).unwrap();
            drain_into(&mut bridge, &mut seen);
        }
        bridge.agent_exited(exit, 0).unwrap();
        drain_into(&mut bridge, &mut seen);
    }
    assert_eq!(seen.last(), Some(&Seen::End), "ends with End");
    assert!(bridge.poll_output().is_none() && bridge.poll_timeout().is_none());
    Response::of(&seen)
}

/// The response to `request` of `dialect` when the agent writes `pieces` to stdout, then
/// exits with code 0 ([`respond_to`]).
pub fn drive(dialect: Dialect, request: &[u8], pieces: &[&[u8]]) -> Response {
    respond_to(bridge(dialect, request), pieces, ExitStatus::Code(0))
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

/// Every transcript of the project (`tests/fixtures`, `tests/fixtures/e2e` and its
/// scenarios) and, when present beside the repository, every real capture.
pub fn every_transcript() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = super::mix::jsonl_files(&root.join("tests/fixtures"));
    files.extend(super::mix::jsonl_files(&root.join("tests/fixtures/e2e")));
    for scenario in ["read_file", "run_command"] {
        files.extend(super::mix::jsonl_files(
            &root.join("tests/fixtures/e2e").join(scenario),
        ));
    }
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
