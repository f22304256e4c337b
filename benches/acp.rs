//! The ACP transport's core (`acp::Connection`) next to the per-request path's core and to
//! baselines measured in the same run, all with an in-memory scripted agent that answers
//! what the connection transmits (no process, no pipe):
//!
//! - `acp/session`: one whole request on a warm connection: `start_turn`, the pool's
//!   `session/new` refill, `session/prompt`, four `agent_message_chunk` updates, the
//!   `end_turn` answer, every output drained. Throughput in sessions.
//! - `acp/per_request_bridge`: the same answer (four text lines and a result) through the
//!   per-request path's whole `Bridge`, as a cursor-agent run gives it.
//! - `acp/serde_json_validate` and `acp/memchr_scan`: the bytes one session exchanges
//!   (what the connection writes and what the agent answers), validated by `serde_json`
//!   and scanned for newlines: the floor of any JSON-RPC peer.
//!
//! Before criterion runs, it prints the heap each open request holds, counted by a global
//! allocator: N turns opened at once on one connection and left mid-answer (head and four
//! chunks written, the prompt not answered), and N per-request bridges at the same point.
//! `benches/run.sh acp` runs it and prints the ratios; `cargo bench --bench acp` alone works
//! too.

#[path = "support/live_bytes.rs"]
mod live_bytes;
#[path = "support/pipeline.rs"]
mod pipeline;

use std::hint::black_box;
use std::io::Write;

use agentwire::acp::{AcpConfig, Connection, TurnId};
use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use criterion::{Criterion, Throughput};
use live_bytes::live_bytes;
use pipeline::{READ, STREAM, memchr_scan, run_bridge, serde_json_validate};

/// The answer every session gives, a chunk at a time (as `benches/proxy.sh` answers too).
const CHUNKS: [&str; 4] = ["The", " answer", " is", " 42."];

/// The same answer's text as cursor-agent's stream-json: four text lines.
fn stream_json_text() -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in CHUNKS {
        writeln!(
            out,
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{chunk}"}}]}},"session_id":"bench"}}"#
        )
        .unwrap();
    }
    out
}

/// The whole answer as stream-json: the text lines and the result.
fn stream_json_answer() -> Vec<u8> {
    let mut out = stream_json_text();
    writeln!(
        out,
        r#"{{"type":"result","subtype":"success","is_error":false,"duration_ms":1000,"result":"{}","session_id":"bench","usage":{{"inputTokens":100,"outputTokens":20}}}}"#,
        CHUNKS.concat()
    )
    .unwrap();
    out
}

/// What the scripted agent reads of a request: its id, method and session.
#[derive(serde::Deserialize)]
struct Request<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(serde::Deserialize)]
struct Params<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<&'a str>,
}

/// An ACP agent in memory: answers `initialize`, gives each `session/new` a fresh id, and
/// answers a prompt with [`CHUNKS`] and `end_turn` (or, holding, with the chunks alone).
/// It allocates nothing once its buffers are reserved, so the heap it leaves alone is the
/// connection's.
struct ScriptedAgent {
    /// What it wrote since the connection last read it.
    out: Vec<u8>,
    sessions: u64,
    /// Leave prompts unanswered after their chunks.
    hold: bool,
    /// Every byte exchanged, both ways, when recording.
    exchanged: Option<Vec<u8>>,
}

impl ScriptedAgent {
    fn new(hold: bool) -> ScriptedAgent {
        ScriptedAgent {
            out: Vec::with_capacity(1 << 20),
            sessions: 0,
            hold,
            exchanged: None,
        }
    }

    /// Reads what the connection transmitted and writes the answers.
    fn read(&mut self, transmit: &[u8]) {
        if let Some(exchanged) = &mut self.exchanged {
            exchanged.extend_from_slice(transmit);
        }
        let start = self.out.len();
        for line in transmit.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let request: Request<'_> = serde_json::from_slice(line).expect("JSON-RPC");
            let id = request.id.unwrap_or_default();
            let out = &mut self.out;
            match request.method {
                Some("initialize") => writeln!(
                    out,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":1,"agentCapabilities":{{}},"authMethods":[]}}}}"#
                ),
                Some("session/new") => {
                    self.sessions += 1;
                    writeln!(
                        out,
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"s-{}"}}}}"#,
                        self.sessions
                    )
                }
                Some("session/prompt") => {
                    let session = request.params.and_then(|p| p.session_id).unwrap_or("");
                    for chunk in CHUNKS {
                        writeln!(
                            out,
                            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{chunk}"}}}}}}}}"#
                        )
                        .unwrap();
                    }
                    if self.hold {
                        Ok(())
                    } else {
                        writeln!(
                            out,
                            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#
                        )
                    }
                }
                other => panic!("the scripted agent got {other:?}"),
            }
            .unwrap();
        }
        if let Some(exchanged) = &mut self.exchanged {
            exchanged.extend_from_slice(&self.out[start..]);
        }
    }
}

/// Lets the connection and the agent talk until neither has anything to say, draining
/// every turn's output. Returns the body bytes and the number of responses ended.
fn converse(connection: &mut Connection, agent: &mut ScriptedAgent) -> (usize, usize) {
    let (mut body, mut ended) = (0, 0);
    loop {
        while let Some(bytes) = connection.poll_transmit() {
            agent.read(bytes);
        }
        while let Some(turn) = connection.poll_ready() {
            while let Some(output) = connection.poll_output(turn) {
                match output {
                    Output::Body(bytes) => body += bytes.len(),
                    Output::End => ended += 1,
                    _ => {}
                }
            }
        }
        if agent.out.is_empty() {
            return (body, ended);
        }
        connection.push_stdout(&agent.out, 0).unwrap();
        agent.out.clear();
    }
}

fn params() -> BridgeParams {
    BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 1,
    }
}

/// A connection past its handshake, its pool's first session ready.
fn warm(config: AcpConfig, agent: &mut ScriptedAgent) -> Connection {
    let mut connection = Connection::new(config, 0);
    converse(&mut connection, agent);
    assert!(connection.is_ready(), "the handshake completes");
    connection
}

/// One request served on a warm connection, to its end.
fn session(connection: &mut Connection, agent: &mut ScriptedAgent, config: &Config) -> usize {
    let turn: TurnId = connection.start_turn(Dialect::ChatCompletions, STREAM, config, params());
    let (body, ended) = converse(connection, agent);
    assert_eq!(ended, 1, "turn {} ends", turn.get());
    body
}

/// Heap bytes per open request, `turns` of them at once mid-answer: on one ACP
/// connection, and as per-request bridges.
fn bytes_per_open_request(turns: usize) -> (f64, f64) {
    let config = Config::default();
    let mut agent = ScriptedAgent::new(true);
    let mut connection = warm(
        AcpConfig {
            max_concurrent_prompts: turns,
            ..AcpConfig::default()
        },
        &mut agent,
    );
    let before = live_bytes();
    for _ in 0..turns {
        let _ = connection.start_turn(Dialect::ChatCompletions, STREAM, &config, params());
    }
    let (body, ended) = converse(&mut connection, &mut agent);
    assert_eq!(ended, 0, "every turn is still open");
    assert_eq!(connection.active_turns(), turns);
    assert!(body > 0);
    let acp = (live_bytes() - before) as f64 / turns as f64;
    drop(connection);

    // The same point of the per-request path: the answer's text lines pushed, no result.
    let text_lines = stream_json_text();
    let before = live_bytes();
    let mut bridges = Vec::new();
    for _ in 0..turns {
        let mut bridge = Bridge::new(Dialect::ChatCompletions, STREAM, &config, params());
        bridge.push_stdout(&text_lines, 0).unwrap();
        while bridge.poll_output().is_some() {}
        bridges.push(bridge);
    }
    let per_request = (live_bytes() - before) as f64 / turns as f64;
    drop(bridges);
    (acp, per_request)
}

fn memory_report() {
    for turns in [100, 1000] {
        let (acp, per_request) = bytes_per_open_request(turns);
        println!(
            "acp/memory: {turns} requests open mid-answer: {acp:.0} heap bytes each on one ACP connection, {per_request:.0} as per-request bridges ({:.2}x)",
            acp / per_request
        );
    }
}

fn sessions(c: &mut Criterion) {
    let config = Config::default();
    let mut agent = ScriptedAgent::new(false);
    let mut connection = warm(AcpConfig::default(), &mut agent);
    // One session recorded for the baselines: the bytes exchanged both ways.
    agent.exchanged = Some(Vec::new());
    session(&mut connection, &mut agent, &config);
    let exchanged = agent.exchanged.take().unwrap_or_default();
    let answer = stream_json_answer();

    let mut group = c.benchmark_group("acp");
    group.throughput(Throughput::Elements(1));
    group.bench_function("memchr_scan", |b| {
        b.iter(|| memchr_scan(black_box(&exchanged)))
    });
    group.bench_function("serde_json_validate", |b| {
        b.iter(|| serde_json_validate(black_box(&exchanged)))
    });
    group.bench_function("session", |b| {
        b.iter(|| session(&mut connection, &mut agent, black_box(&config)))
    });
    group.bench_function("per_request_bridge", |b| {
        b.iter(|| run_bridge(STREAM, black_box(&answer), READ))
    });
    group.finish();
}

fn main() {
    memory_report();
    let mut criterion = Criterion::default().configure_from_args();
    sessions(&mut criterion);
    criterion.final_summary();
}
