//! Throughput of every stage of the pipeline, each next to baselines measured in the same
//! run on the same bytes:
//!
//! - `memchr_scan`: finding the newlines and nothing else, the floor of any line reader;
//! - `serde_json_validate`: `serde_json` checking each line with `IgnoredAny`, fed in
//!   4 KiB reads like the pipeline, the cost of merely parsing the input.
//!
//! Groups: `framing` (LineFramer), `stdout_to_sse` (the whole Bridge on the event mix of
//! the real captures), `stdout_to_sse_huge_line` (4 MB tool results), `chunking` (the
//! Bridge fed 1, 64 and 4096 bytes at a time: linear time means a constant factor),
//! `sse` (ChunkEncoder frames/s and bytes/s), `encoder` (each API dialect's stream encoder
//! alone on the events of the event mix, decoded once: every dialect next to Chat
//! Completions in the same run), `request` (request parsing + prompt rendering on real
//! OpenCode bodies) and `client_batch` (one batch of 40,000 and of 80,000 parallel tool
//! starts in client mode: linear time means twice the time for twice the starts).
//! `benches/run.sh` runs them and prints the ratios.

#[path = "../tests/support/mix.rs"]
mod mix;
#[path = "support/pipeline.rs"]
mod pipeline;

use std::hint::black_box;
use std::path::Path;

use agentwire::api::RequestLimits;
use agentwire::bridge::{BridgeParams, Config, Dialect, Prepared, ResponseWriter};
use agentwire::cursor::prompt::render_prompt;
use agentwire::event::Event;
use agentwire::framing::{DEFAULT_MAX_LINE_LEN, LineFramer};
use agentwire::openai::chat::{ChunkEncoder, OutputOptions, ResponseMeta, parse_request};
use agentwire::tools::{ToolPlan, ToolStrategy};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use pipeline::{READ, STREAM, memchr_scan, run_bridge, serde_json_validate};

fn line_framer(input: &[u8]) -> usize {
    let mut framer = LineFramer::new(DEFAULT_MAX_LINE_LEN);
    let mut lines = 0;
    for chunk in input.chunks(READ) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let framed = framer.next_line(rest);
            rest = &rest[framed.consumed..];
            lines += usize::from(framed.line.is_some());
        }
    }
    lines + usize::from(framer.finish().is_some())
}

/// The whole Bridge in streaming agent mode: `input` fed `chunk` bytes at a time, outputs
/// drained after each push. Returns the SSE bytes produced.
fn bridge(input: &[u8], chunk: usize) -> usize {
    run_bridge(STREAM, input, chunk)
}

fn with_baselines(group: &mut BenchmarkGroup<'_, WallTime>, input: &[u8]) {
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("memchr_scan", |b| b.iter(|| memchr_scan(black_box(input))));
    group.bench_function("serde_json_validate", |b| {
        b.iter(|| serde_json_validate(black_box(input)))
    });
}

fn framing(c: &mut Criterion) {
    let (files, _) = mix::workload_transcripts();
    let input = mix::event_mix(&files, 16 << 20);
    let mut group = c.benchmark_group("framing");
    with_baselines(&mut group, &input);
    group.bench_function("line_framer", |b| b.iter(|| line_framer(black_box(&input))));
    group.finish();
}

fn stdout_to_sse(c: &mut Criterion) {
    let (files, _) = mix::workload_transcripts();
    let input = mix::event_mix(&files, 16 << 20);
    let mut group = c.benchmark_group("stdout_to_sse");
    with_baselines(&mut group, &input);
    group.bench_function("bridge", |b| b.iter(|| bridge(black_box(&input), READ)));
    group.finish();

    let input = mix::huge_line_transcript(4, 4 << 20);
    let mut group = c.benchmark_group("stdout_to_sse_huge_line");
    group.sample_size(20);
    with_baselines(&mut group, &input);
    group.bench_function("bridge", |b| b.iter(|| bridge(black_box(&input), READ)));
    group.finish();
}

fn chunking(c: &mut Criterion) {
    let (files, _) = mix::workload_transcripts();
    let input = mix::event_mix(&files, 1 << 20);
    let mut group = c.benchmark_group("chunking");
    group.throughput(Throughput::Bytes(input.len() as u64));
    for chunk in [1, 64, READ] {
        group.bench_function(format!("bridge_{chunk}"), |b| {
            b.iter(|| bridge(black_box(&input), chunk))
        });
    }
    group.finish();
}

fn sse(c: &mut Criterion) {
    const DELTAS: [&str; 4] = ["Hello", ", world.", "\n\n- a \"list\" item", " é—😀 "];
    let meta = ResponseMeta::new(1, 1_700_000_000, "auto");
    let options = OutputOptions::default();
    let frames = 10_000;
    let encode = || {
        let mut encoder = ChunkEncoder::new(&meta, &options);
        let mut out = Vec::with_capacity(4 << 20);
        for i in 0..frames {
            encoder.encode(&Event::TextDelta(DELTAS[i % DELTAS.len()]), &mut out);
        }
        out
    };
    let bytes = encode().len();
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Elements(frames as u64));
    group.bench_function("text_delta_frames", |b| b.iter(|| encode().len()));
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("text_delta_bytes", |b| b.iter(|| encode().len()));
    group.finish();
}

/// The dialects whose encoders `encoder` measures, each with the streaming request it
/// answers (Messages asks for thinking, so that it writes the reasoning the others write).
/// A dialect not implemented yet is reported as skipped.
const DIALECTS: &[(&str, Dialect, &str)] = &[
    (
        "chat_completions",
        Dialect::ChatCompletions,
        r#"{"model":"auto","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#,
    ),
    (
        "responses",
        Dialect::Responses,
        r#"{"model":"auto","stream":true,"input":"hi","reasoning":{"summary":"auto"}}"#,
    ),
    (
        "messages",
        Dialect::Messages,
        r#"{"model":"auto","max_tokens":1024,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}"#,
    ),
];

/// A dialect's stream encoder for `request`, or `None` when the dialect refuses it.
fn stream_encoder(
    dialect: Dialect,
    request: &str,
) -> Option<Box<dyn agentwire::api::StreamEncoder>> {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 1,
    };
    match dialect.prepare(request.as_bytes(), &Config::default(), &params) {
        Ok(Prepared {
            writer: ResponseWriter::Stream(encoder),
            ..
        }) => Some(encoder),
        _ => None,
    }
}

/// Every dialect's stream encoder alone on the events of the event mix (decoded once),
/// the output buffer cleared after each event as the Bridge's is: throughput in bytes of
/// the agent output those events came from.
fn encoder(c: &mut Criterion) {
    let (files, _) = mix::workload_transcripts();
    let input = mix::event_mix(&files, 16 << 20);
    let events = mix::decoded_events(&input);
    let mut group = c.benchmark_group("encoder");
    group.throughput(Throughput::Bytes(input.len() as u64));
    for (name, dialect, request) in DIALECTS {
        if stream_encoder(*dialect, request).is_none() {
            println!("encoder/{name}: skipped, the dialect refuses its request");
            continue;
        }
        group.bench_function(*name, |b| {
            b.iter(|| {
                let mut encoder = stream_encoder(*dialect, request).unwrap();
                let mut out = Vec::with_capacity(64 * 1024);
                let mut written = 0;
                for event in &events {
                    encoder.encode(&event.as_event(), &mut out);
                    written += out.len();
                    out.clear();
                }
                written
            })
        });
    }
    group.finish();
}

/// Request bodies: the real OpenCode ones when present, else the project's own.
fn request_bodies() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let opencode =
        root.join("../shared/fixtures/opencode/opencode-1.18.33-requests-toolround.jsonl");
    if let Ok(text) = std::fs::read_to_string(opencode) {
        return text
            .lines()
            .map(|line| {
                let record: serde_json::Value = serde_json::from_str(line).unwrap();
                serde_json::to_vec(&record["body"]).unwrap()
            })
            .collect();
    }
    [
        "client_tools.json",
        "client_tools_nostream.json",
        "agent_stream.json",
    ]
    .iter()
    .map(|name| std::fs::read(root.join("tests/fixtures/requests").join(name)).unwrap())
    .collect()
}

fn request(c: &mut Criterion) {
    let bodies = request_bodies();
    let total: usize = bodies.iter().map(Vec::len).sum();
    let limits = RequestLimits::default();
    let mut group = c.benchmark_group("request");
    group.throughput(Throughput::Bytes(total as u64));
    group.bench_function("serde_json_validate", |b| {
        b.iter(|| {
            bodies
                .iter()
                .filter(|body| serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok())
                .count()
        })
    });
    group.bench_function("serde_json_value", |b| {
        b.iter(|| {
            bodies
                .iter()
                .filter(|body| serde_json::from_slice::<serde_json::Value>(body).is_ok())
                .count()
        })
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            bodies
                .iter()
                .filter(|body| parse_request(body, &limits).is_ok())
                .count()
        })
    });
    group.bench_function("parse_and_render_prompt", |b| {
        b.iter(|| {
            bodies
                .iter()
                .map(|body| {
                    let request = parse_request(body, &limits).unwrap();
                    let conversation = &request.conversation;
                    let plan = ToolPlan::new(&conversation.tools, ToolStrategy::default());
                    render_prompt(conversation, &plan).len()
                })
                .sum::<usize>()
        })
    });
    group.finish();
}

/// A client-mode transcript: `starts` parallel `read` starts of one model call, each with
/// its own call id and path, then the result.
fn parallel_starts(starts: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..starts {
        out.extend_from_slice(
            format!(
                "{{\"type\":\"tool_call\",\"subtype\":\"started\",\"call_id\":\"call_{i}\\nfc_{i}\",\
                 \"tool_call\":{{\"readToolCall\":{{\"args\":{{\"path\":\"/project/src/file_{i}.rs\"}}}}}},\
                 \"model_call_id\":\"m-0\"}}\n"
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(br#"{"type":"result","subtype":"success","is_error":false,"result":""}"#);
    out.push(b'\n');
    out
}

fn client_batch(c: &mut Criterion) {
    let request = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/requests/client_tools.json"),
    )
    .unwrap();
    let mut group = c.benchmark_group("client_batch");
    group.sample_size(10);
    for starts in [40_000, 80_000] {
        let input = parallel_starts(starts);
        group.throughput(Throughput::Elements(starts as u64));
        group.bench_function(format!("starts_{starts}"), |b| {
            b.iter(|| run_bridge(&request, black_box(&input), READ))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    framing,
    stdout_to_sse,
    chunking,
    sse,
    encoder,
    request,
    client_batch
);
criterion_main!(benches);
