//! The fuzz target bodies (`agentwire::fuzzing`) run as ordinary tests: over the seed
//! files the fuzz corpora start from (the project's fixtures, and the shared real captures
//! when present beside the repository), and over pseudo-random inputs from a fixed-seed
//! generator, so that `cargo test --all-features` keeps every body and its invariants
//! working without libFuzzer.
#![cfg(feature = "fuzzing")]

#[path = "support/shared.rs"]
mod shared;

use std::path::{Path, PathBuf};

use agentwire::fuzzing::{self, BridgeInput, Knobs, Op, RequestBody};

/// Pseudo-random inputs per body: enough to reach the bodies' deeper paths in a few
/// seconds of an unoptimised build.
const RANDOM_INPUTS: usize = 1000;

/// splitmix64: deterministic, so a failure here reproduces on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// Fewer than `max` random bytes.
    fn some_bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max);
        self.bytes(len)
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Files in the project's `dir` whose names end with one of `suffixes`, sorted.
fn files(dir: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            suffixes.iter().any(|s| name.ends_with(s))
        })
        .collect();
    files.sort();
    files
}

/// Transcripts: the project's and, when present, the shared real captures.
fn transcripts() -> Vec<Vec<u8>> {
    let mut paths = files(&root().join("tests/fixtures"), &[".jsonl"]);
    if let Some(fixtures) = shared::fixtures("fuzz_seeds: the real transcripts") {
        paths.extend(fixtures.files("cursor-agent", ".jsonl"));
    }
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Request bodies: the project's and, when present, the OpenCode bodies.
fn requests() -> Vec<Vec<u8>> {
    let mut bodies: Vec<Vec<u8>> = files(&root().join("tests/fixtures/requests"), &[".json"])
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    if let Some(fixtures) = shared::fixtures("fuzz_seeds: the OpenCode bodies") {
        for path in fixtures.files("opencode", ".jsonl") {
            let relative = format!("opencode/{}", path.file_name().unwrap().to_string_lossy());
            for body in fixtures.request_bodies(&relative) {
                bodies.push(serde_json::to_vec(&body).unwrap());
            }
        }
    }
    bodies
}

/// Every line of every transcript, alone.
fn lines(transcripts: &[Vec<u8>]) -> Vec<Vec<u8>> {
    transcripts
        .iter()
        .flat_map(|t| t.split(|b| *b == b'\n').map(<[u8]>::to_vec))
        .filter(|l| !l.is_empty())
        .collect()
}

/// A pseudo-random input near real data: pieces of `pool` entries spliced with random
/// bytes, truncated, or random bytes alone.
fn random_input(rng: &mut Rng, pool: &[Vec<u8>], max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let parts = 1 + rng.below(4);
    for _ in 0..parts {
        match rng.below(4) {
            0 => {
                let len = rng.below(64);
                out.extend(rng.bytes(len));
            }
            _ => {
                let source = &pool[rng.below(pool.len())];
                let start = rng.below(source.len());
                let len = rng.below(source.len() - start + 1);
                out.extend_from_slice(&source[start..start + len]);
                if rng.below(3) == 0 {
                    out.push(b'\n');
                }
            }
        }
    }
    if rng.below(8) == 0 && !out.is_empty() {
        let at = rng.below(out.len());
        out[at] = rng.next() as u8;
    }
    out.truncate(max);
    out
}

#[test]
fn seeds_framing() {
    let transcripts = transcripts();
    for seed in transcripts.iter().chain(&lines(&transcripts)) {
        fuzzing::framing(seed);
    }
    let mut rng = Rng(1);
    for _ in 0..RANDOM_INPUTS {
        fuzzing::framing(&random_input(&mut rng, &transcripts, 4096));
    }
}

#[test]
fn seeds_decoder() {
    let transcripts = transcripts();
    for seed in transcripts.iter().chain(&lines(&transcripts)) {
        fuzzing::decoder(seed);
    }
    let mut rng = Rng(2);
    for _ in 0..RANDOM_INPUTS {
        fuzzing::decoder(&random_input(&mut rng, &transcripts, 4096));
    }
}

#[test]
fn seeds_decoder_mutated() {
    let transcripts = transcripts();
    for seed in &transcripts {
        fuzzing::decoder_mutated(seed);
    }
    let mut rng = Rng(3);
    for i in 0..RANDOM_INPUTS * 3 {
        let len = rng.below(64 + i % 1024);
        fuzzing::decoder_mutated(&rng.bytes(len));
    }
}

#[test]
fn seeds_request() {
    let requests = requests();
    for seed in &requests {
        fuzzing::request(seed);
    }
    let mut rng = Rng(4);
    for _ in 0..RANDOM_INPUTS {
        fuzzing::request(&random_input(&mut rng, &requests, 8192));
    }
}

/// A bridge run with many operations, mostly transcript bytes and time, which raw
/// pseudo-random bytes rarely decode to.
fn random_bridge_input(rng: &mut Rng) -> BridgeInput {
    let request = match rng.below(10) {
        0 => RequestBody::AgentStream,
        1 => RequestBody::AgentStreamUsage,
        2 => RequestBody::AgentPlain,
        3 | 4 => RequestBody::ClientStream,
        5 => RequestBody::ClientPlain,
        6 => RequestBody::ToolsNone,
        7 => RequestBody::ToolsNamed,
        8 => RequestBody::Invalid,
        _ => RequestBody::Raw(rng.some_bytes(64)),
    };
    let knobs = Knobs {
        strategy: rng.next() as u8,
        reasoning: rng.next() as u8,
        activity_notes: rng.below(2) == 0,
        allow_force: rng.below(2) == 0,
        head_deadline_ms: rng.below(40_000) as u16,
        keep_alive_ms: rng.below(20_000) as u16,
        idle_timeout_ms: rng.below(120_000) as u32,
        max_duration_ms: (rng.below(2) == 0).then(|| rng.below(200_000) as u32),
        batch_window_ms: rng.below(500) as u16,
        stderr_tail_bytes: rng.below(2048) as u16,
        line_limit: rng.next() as u8,
        envelope_limit: rng.next() as u8,
    };
    let ops = (0..rng.below(60))
        .map(|_| match rng.below(16) {
            0..=6 => Op::Transcript(rng.below(1500) as u16),
            7 => Op::Line(rng.some_bytes(64)),
            8 => Op::Stdout(rng.some_bytes(32)),
            9 => Op::Stderr(b"Error: not logged in\n".to_vec()),
            10 => Op::Exit(rng.below(3) as i32),
            11 => Op::Signal(9),
            12 | 13 => Op::Wait(rng.below(60_000) as u32),
            14 => Op::Tick(rng.below(1000) as u16),
            _ => Op::ClientGone,
        })
        .collect();
    BridgeInput {
        request,
        knobs,
        transcript: rng.next() as u8,
        ops,
    }
}

#[test]
fn seeds_bridge() {
    let transcripts = transcripts();
    for seed in &transcripts {
        fuzzing::bridge_bytes(seed);
    }
    let mut rng = Rng(5);
    for _ in 0..RANDOM_INPUTS {
        let len = rng.below(2048);
        fuzzing::bridge_bytes(&rng.bytes(len));
        fuzzing::bridge(random_bridge_input(&mut rng));
    }
}
