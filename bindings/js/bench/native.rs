//! The native side of `bench/bench.mjs`: the Rust core on the bytes the JavaScript package is
//! measured on, in the same run.
//!
//! ```text
//! native MIX_FILE [RUNS]    measures on MIX_FILE, first writing the event mix there when it
//!                           does not exist (tests/support/mix.rs: every event line of the
//!                           real captures, or of the project's transcripts without them,
//!                           repeated to 64 MiB)
//! ```
//!
//! Prints one JSON object: the mix's size and the best of RUNS runs (default 1), in MB/s, of
//! the Bridge (`push_stdout` in 4 KiB chunks, every output polled) and of the Decoder (events
//! polled). bench.mjs runs it between its own runs, so that both sides see the same load.

#[path = "../../../tests/support/mix.rs"]
mod mix;

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::Decoder;

const CHUNK: usize = 4096;
const STREAM: &[u8] =
    br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

fn bridge(input: &[u8]) -> usize {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 0,
    };
    let mut bridge = Bridge::new(Dialect::ChatCompletions, STREAM, &Config::default(), params);
    let mut out = 0;
    for chunk in input.chunks(CHUNK) {
        bridge.push_stdout(chunk, 0).expect("the agent is running");
        while let Some(output) = bridge.poll_output() {
            if let Output::Body(bytes) = output {
                out += bytes.len();
            }
        }
    }
    out
}

fn decoder(input: &[u8]) -> usize {
    let mut decoder = Decoder::default();
    let mut events = 0;
    for chunk in input.chunks(CHUNK) {
        decoder.push_stdout(chunk).expect("stdout is open");
        while let Some(event) = decoder.poll_event() {
            black_box(&event);
            events += 1;
        }
    }
    events
}

/// The best of `runs` runs of `run` over `input`, in MB/s, and what the run counted.
fn best(input: &[u8], runs: usize, run: fn(&[u8]) -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut counted = 0;
    for _ in 0..runs {
        let started = Instant::now();
        counted = black_box(run(black_box(input)));
        best = best.min(started.elapsed().as_secs_f64());
    }
    (input.len() as f64 / best / 1e6, counted)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: native MIX_FILE [RUNS]");
    let runs = args
        .next()
        .map_or(1, |n| n.parse().expect("RUNS is a number"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shared = root.join("../shared/fixtures/cursor-agent");
    let (files, source) = if shared.is_dir() {
        (mix::jsonl_files(&shared), "real captures")
    } else {
        (
            mix::jsonl_files(&root.join("tests/fixtures")),
            "project transcripts",
        )
    };
    if !Path::new(&path).exists() {
        std::fs::write(&path, mix::event_mix(&files, 64 << 20)).expect("the mix is written");
    }
    let input = std::fs::read(&path).expect("the mix is read");
    let (bridge_mbs, body_bytes) = best(&input, runs, bridge);
    let (decoder_mbs, events) = best(&input, runs, decoder);
    println!(
        "{{\"source\":\"{source}\",\"bytes\":{},\"bridge_mbs\":{bridge_mbs:.1},\"body_bytes\":{body_bytes},\"decoder_mbs\":{decoder_mbs:.1},\"events\":{events}}}",
        input.len()
    );
}
