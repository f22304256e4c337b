//! The native side of `bench/bench.mjs`: the Rust core on the bytes the JavaScript package is
//! measured on, in the same run.
//!
//! ```text
//! native MIX_FILE           writes the event mix (tests/support/mix.rs: every event line of
//!                           the real captures, or of the project's transcripts without them,
//!                           repeated to 64 MiB) to MIX_FILE, then measures on it
//! ```
//!
//! Prints one JSON object: the mix's size and the best of five runs, in MB/s, of the Bridge
//! (`push_stdout` in 4 KiB chunks, every output polled) and of the Decoder (events polled).

#[path = "../../../tests/support/mix.rs"]
mod mix;

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use agentwire::bridge::{Bridge, BridgeParams, Config, Output};
use agentwire::cursor::Decoder;

const CHUNK: usize = 4096;
const RUNS: usize = 5;
const STREAM: &[u8] =
    br#"{"model":"auto","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

fn bridge(input: &[u8]) -> usize {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 0,
    };
    let mut bridge = Bridge::new(STREAM, &Config::default(), params);
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

/// The best of `RUNS` runs of `run` over `input`, in MB/s, and what the run counted.
fn best(input: &[u8], run: fn(&[u8]) -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut counted = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        counted = black_box(run(black_box(input)));
        best = best.min(started.elapsed().as_secs_f64());
    }
    (input.len() as f64 / best / 1e6, counted)
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: native MIX_FILE");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shared = root.join("../shared/fixtures/cursor-agent");
    let (files, source) = if shared.is_dir() {
        (mix::jsonl_files(&shared), "real captures")
    } else {
        (mix::jsonl_files(&root.join("tests/fixtures")), "project transcripts")
    };
    let input = mix::event_mix(&files, 64 << 20);
    std::fs::write(&path, &input).expect("the mix is written");
    let (bridge_mbs, body_bytes) = best(&input, bridge);
    let (decoder_mbs, events) = best(&input, decoder);
    println!(
        "{{\"source\":\"{source}\",\"bytes\":{},\"bridge_mbs\":{bridge_mbs:.1},\"body_bytes\":{body_bytes},\"decoder_mbs\":{decoder_mbs:.1},\"events\":{events}}}",
        input.len()
    );
}
