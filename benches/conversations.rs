//! Conversations: what resuming an agent session saves and what it costs the core, on a
//! Claude-Code-like tool loop (`support/tool_loop.rs`: Claude Code's own first request
//! when the captures are there, each round a `Read` or `Bash` call and its result, every
//! tenth round a text answer and a follow-up), over both transports, in memory.
//!
//! Before criterion runs, it prints four reports:
//!
//! 1. **Bytes given to the agent** per round of a 20-round loop: stream-json with
//!    conversations off (every round the whole conversation rendered: the invocation's
//!    stdin) and on (a resumed chat's delta prompt); ACP with conversations on (everything
//!    written to the agent's stdin, and the MCP answers it reads) and off (a session per
//!    round). Each resumed round's bytes are divided by its new content: the tool result
//!    or the new user text it brings.
//! 2. **The core's time per request**, p50 and p99 over repeated 100-round loops, at
//!    rounds 1 (fresh), 2, 10, 20 and 100 (each with its neighbours): the resumed request
//!    whole (`Bridge::in_conversation`, `Connection::start_conversation_turn` with the
//!    MCP answer it writes), the work a resumed request adds, part by part (the
//!    registry's decision with the transcript's digests, the continuation's render), and baselines on the same body in the same
//!    loop: `serde_json` validating it, the dialect parsing it, and a fresh request for it
//!    (the whole render). On the wall clock and on the thread's CPU time, which leaves
//!    out the time the thread waited for a core (`support/stopwatch.rs`).
//! 3. **Heap per parked session**, counted by a global allocator: 1, 100 and 1,000
//!    sessions parked in the registry (stream-json: the registry is all the core keeps),
//!    and on one ACP connection (its session, MCP server and pending call included).
//! 4. **1,000 parked sessions**: the decision for a resume of the latest and for a fresh
//!    request, next to the same decisions with 1 and 0 parked; the expiry sweep; parking
//!    into a full registry (eviction, overall and per owner); an ACP round, and the
//!    connection's polls, with 1,000 other sessions parked.
//!
//! Then criterion measures the means (group `conversations`). `benches/run.sh
//! conversations` prints them as ratios; `cargo bench --bench conversations` alone works
//! too. `AGENTWIRE_CONVERSATION_REPS` sets the loops of report 2 (default 50).

#[path = "support/live_bytes.rs"]
mod live_bytes;
#[path = "support/stopwatch.rs"]
mod stopwatch;
#[path = "support/tool_loop.rs"]
mod tool_loop;

use std::hint::black_box;
use std::time::Duration;

use agentwire::api::Request;
use agentwire::bridge::{Bridge, BridgeParams, Caller, Config};
use agentwire::conversation::{Message, Part, Role};
use agentwire::cursor::prompt::{render_continuation, render_prompt};
use agentwire::mcp;
use agentwire::registry::{
    AnswerDigest, ConversationKeys, Decision, Owner, Park, Registry, RegistryConfig, Tail,
    Transcript,
};
use agentwire::tools::{ToolPlan, ToolStrategy};
use criterion::Criterion;
use live_bytes::live_bytes;
use serde_json::json;
use stopwatch::{Lap, Stopwatch};
use tool_loop::{Acp, Given, Live, Step, StreamJson, Transport, Workload, chat_id, run_loop, step};

/// The rounds of the bytes report.
const ROUNDS: usize = 20;
/// The rounds of a long conversation, for the time report.
const LONG: usize = 100;
/// Where a resumed round's bytes meet the goal: at most this times its new content.
const GOAL: f64 = 1.1;

fn on() -> RegistryConfig {
    RegistryConfig {
        max_parked: 4096,
        max_parked_per_owner: 4096,
        ..RegistryConfig::default()
    }
}

fn off() -> RegistryConfig {
    RegistryConfig {
        enabled: false,
        ..RegistryConfig::default()
    }
}

fn params() -> BridgeParams {
    BridgeParams {
        now_ms: 0,
        created_unix: 1_800_000_000,
        id_seed: 1,
    }
}

/// The neutral request of `body`.
fn parse(body: &[u8]) -> Request {
    tool_loop::DIALECT
        .prepare(body, &Config::default(), &params())
        .expect("a valid request")
        .request
}

/// Conversation `n`'s caller: its own session header.
fn caller_of<'a>(session: &'a str) -> Caller<'a> {
    Caller {
        keys: ConversationKeys {
            client_session: Some(session),
            ..ConversationKeys::default()
        },
        ..Caller::default()
    }
}

// Report 1: bytes.

fn ratio(given: usize, new: usize) -> f64 {
    given as f64 / new.max(1) as f64
}

fn bytes_report(workload: &Workload) {
    println!(
        "\nconversations/bytes: bytes given to the agent per round, {ROUNDS} rounds ({}; {} tools, {} bytes of system text)",
        workload.source,
        workload.first["tools"].as_array().map_or(0, Vec::len),
        system_bytes(workload),
    );
    let caller = workload.caller();
    let mut off_json = StreamJson::new(off());
    let a = run_loop(workload, ROUNDS, |round, body| {
        off_json.round(0, round, body, caller)
    });
    let mut on_json = StreamJson::new(on());
    let b = run_loop(workload, ROUNDS, |round, body| {
        on_json.round(0, round, body, caller)
    });
    let mut on_acp = Acp::new(on(), &workload.model);
    let c = run_loop(workload, ROUNDS, |round, body| {
        on_acp.round(0, round, body, caller)
    });
    let mut off_acp = Acp::new(off(), &workload.model);
    let d = run_loop(workload, ROUNDS, |round, body| {
        off_acp.round(0, round, body, caller)
    });
    let mut live = Live::new(on());
    let e = run_loop(workload, ROUNDS, |round, body| {
        live.round(0, round, body, caller)
    });
    for round in 0..ROUNDS {
        assert_eq!(
            b[round].1.resumed,
            round > 0,
            "stream-json round {}",
            round + 1
        );
        assert_eq!(c[round].1.resumed, round > 0, "ACP round {}", round + 1);
        assert_eq!(e[round].1.resumed, round > 0, "live round {}", round + 1);
        assert!(!a[round].1.resumed && !d[round].1.resumed);
    }
    assert_eq!(
        on_acp.agent_sessions(),
        1,
        "one ACP session for the whole loop"
    );
    assert_eq!(
        off_acp.agent_sessions(),
        ROUNDS,
        "a session per round without conversations"
    );

    println!(
        "{:>5} {:>7} {:>8} | {:>10} | {:>9} {:>6} | {:>9} {:>6} | {:>9} {:>7} {:>6} | {:>9}",
        "round",
        "body",
        "new",
        "sj off",
        "sj on",
        "x new",
        "sj mcp",
        "x new",
        "acp on",
        "(mcp)",
        "x new",
        "acp off"
    );
    let mut totals = [0usize; 6];
    for round in 0..ROUNDS {
        let (body, _, new) = &a[round];
        let (sj_off, sj_on, acp_on, acp_off) = (a[round].1, b[round].1, c[round].1, d[round].1);
        let sj_mcp = e[round].1;
        let show = |given: &Given| {
            if round == 0 {
                "     -".to_string()
            } else {
                format!("{:6.2}", ratio(given.total(), *new))
            }
        };
        println!(
            "{:>5} {:>7} {:>8} | {:>10} | {:>9} {} | {:>9} {} | {:>9} {:>7} {} | {:>9}",
            round + 1,
            body.len(),
            if round == 0 {
                "-".into()
            } else {
                new.to_string()
            },
            sj_off.total(),
            sj_on.total(),
            show(&sj_on),
            sj_mcp.total(),
            show(&sj_mcp),
            acp_on.total(),
            acp_on.mcp,
            show(&acp_on),
            acp_off.total(),
        );
        for (total, value) in totals.iter_mut().zip([
            *new,
            sj_off.total(),
            sj_on.total(),
            acp_on.total(),
            acp_off.total(),
            body.len(),
        ]) {
            *total += value;
        }
    }
    let [new, sj_off, sj_on, acp_on, acp_off, bodies] = totals;
    let first = |rows: &[(Vec<u8>, Given, usize)]| rows[0].1.total();
    println!(
        "total: bodies {bodies}; new content {new} (rounds 2–{ROUNDS}); stream-json off {sj_off}, on {sj_on} ({:.1}x less); ACP on {acp_on} ({:.1}x less than ACP off, {acp_off})",
        sj_off as f64 / sj_on as f64,
        acp_off as f64 / acp_on as f64,
    );
    println!(
        "rounds 2–{ROUNDS} alone: stream-json on {} bytes = {:.3}x their new content; ACP on {} = {:.3}x",
        sj_on - first(&b),
        ratio(sj_on - first(&b), new),
        acp_on - first(&c),
        ratio(acp_on - first(&c), new),
    );
    // What each resumed round gives beyond its new content: constant, or growing.
    let extra = |rows: &[(Vec<u8>, Given, usize)], answer: bool| -> (usize, usize) {
        let extras: Vec<usize> = (1..ROUNDS)
            .filter(|&r| matches!(step(r - 1), Step::Answer { .. }) == answer)
            .map(|r| rows[r].1.total().saturating_sub(rows[r].2))
            .collect();
        (*extras.iter().min().unwrap(), *extras.iter().max().unwrap())
    };
    let ((sj_min, sj_max), (sj_follow, _)) = (extra(&b, false), extra(&b, true));
    let ((acp_min, acp_max), (acp_follow, _)) = (extra(&c, false), extra(&c, true));
    println!(
        "beyond the new content, each resumed round: stream-json +{sj_min}..{sj_max} bytes after a tool call, +{sj_follow} with a follow-up message; ACP +{acp_min}..{acp_max} and +{acp_follow}: constant, whatever the conversation's length (linear in all). Without conversations each round re-sends the whole conversation: +{:.0} bytes a round on average (stream-json), so the total grows with the square of the rounds",
        (a[ROUNDS - 1].1.total() - a[1].1.total()) as f64 / (ROUNDS - 2) as f64,
    );
    let live_total: usize = e.iter().map(|row| row.1.total()).sum();
    println!(
        "stream-json with the client's tools as MCP tools (--cursor-mcp, live chats): {live_total} bytes in all ({:.1}x less than stream-json off); rounds 2–{ROUNDS} {} bytes = {:.3}x their new content; one process per run of tool rounds (a new run, resumed with --resume, after each text answer)",
        sj_off as f64 / live_total as f64,
        live_total - first(&e),
        ratio(live_total - first(&e), new),
    );
    let over = |rows: &[(Vec<u8>, Given, usize)]| -> Vec<usize> {
        (1..ROUNDS)
            .filter(|&r| ratio(rows[r].1.total(), rows[r].2) > GOAL)
            .map(|r| r + 1)
            .collect()
    };
    println!(
        "over {GOAL}x its new content: stream-json rounds {:?}; ACP rounds {:?}",
        over(&b),
        over(&c)
    );
    // Where the extra bytes are: one resumed tool round and the follow-up, with the new
    // content cut out.
    let follow = (1..ROUNDS)
        .find(|&r| matches!(step(r - 1), Step::Answer { .. }))
        .expect("a follow-up in the loop");
    for round in [1, follow] {
        let new = match step(round - 1) {
            Step::Call { result, .. } => result,
            Step::Answer { follow_up, .. } => follow_up,
        };
        let mut json = StreamJson::new(on());
        json.last_prompt = Some(Vec::new());
        let mut acp = Acp::new(on(), &workload.model);
        acp.last_given = Some(Vec::new());
        run_loop(workload, round + 1, |r, body| {
            json.round(0, r, body, caller)
        });
        run_loop(workload, round + 1, |r, body| acp.round(0, r, body, caller));
        let cut = |given: &[u8]| {
            let text = String::from_utf8_lossy(given).into_owned();
            let escaped = serde_json::to_string(&new).unwrap();
            let escaped = &escaped[1..escaped.len() - 1];
            let marker = format!("[the new content: {} bytes]", new.len());
            text.replace(&new, &marker).replace(escaped, &marker)
        };
        println!(
            "round {} as the agent gets it, the new content cut out:\n  stream-json (--resume, stdin):\n{}\n  ACP (stdin and MCP answers):\n{}",
            round + 1,
            indent(&cut(json.last_prompt.as_deref().unwrap())),
            indent(&cut(acp.last_given.as_deref().unwrap())),
        );
    }
}

fn indent(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(|line| format!("    | {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn system_bytes(workload: &Workload) -> usize {
    let system: usize = workload.first["system"].as_array().map_or(0, |blocks| {
        blocks
            .iter()
            .map(|b| b["text"].as_str().map_or(0, str::len))
            .sum()
    });
    let turns: usize = workload
        .messages()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| serde_json::to_string(&m["content"]).unwrap().len())
        .sum();
    system + turns
}

// Report 2: time.

/// Samples by round index.
struct Samples {
    by_round: Vec<Vec<Lap>>,
}

impl Samples {
    fn new() -> Samples {
        Samples {
            by_round: vec![Vec::new(); LONG],
        }
    }

    fn add(&mut self, round: usize, sample: Lap) {
        self.by_round[round].push(sample);
    }

    /// The samples of rounds `from..=to` (0-based).
    fn window(&self, from: usize, to: usize) -> Vec<Lap> {
        self.by_round[from..=to].iter().flatten().copied().collect()
    }
}

/// p50 and p99 (nearest rank), wall clock and CPU time, of `samples`.
fn percentiles(samples: &[Lap]) -> Percentiles {
    let rank = |mut values: Vec<Duration>| -> (Duration, Duration) {
        if values.is_empty() {
            return (Duration::ZERO, Duration::ZERO);
        }
        values.sort_unstable();
        let at =
            |p: f64| values[((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        (at(0.50), at(0.99))
    };
    let (wall50, wall99) = rank(samples.iter().map(|s| s.wall).collect());
    let (cpu50, cpu99) = rank(samples.iter().map(|s| s.cpu).collect());
    let mean = samples.iter().map(|s| s.wall).sum::<Duration>() / samples.len().max(1) as u32;
    Percentiles {
        wall50,
        wall99,
        cpu50,
        cpu99,
        mean,
    }
}

struct Percentiles {
    wall50: Duration,
    wall99: Duration,
    cpu50: Duration,
    cpu99: Duration,
    mean: Duration,
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// The rounds reported, 0-based, each with its neighbours.
const WINDOWS: [(&str, usize, usize); 6] = [
    ("1 fresh", 0, 0),
    ("2", 1, 1),
    ("10 (9-11)", 8, 10),
    ("20 (19-21)", 18, 20),
    ("100 (98-100)", 97, 99),
    ("2-100 all", 1, 99),
];

/// Where a resumed request's delta starts being rendered (as the bridge does): with
/// results, from the agent's answer they follow.
fn continuation_from(request: &Request, delta: usize, results: usize) -> usize {
    let messages = &request.conversation.messages;
    let mut from = delta;
    if results > 0 {
        while from > 0 && messages[from - 1].role == Role::Assistant {
            from -= 1;
        }
    }
    from
}

/// The digest of an answer as the client echoed it (what a bridge feeds as it writes).
fn answer_digest(message: &Message) -> AnswerDigest {
    let mut digest = AnswerDigest::default();
    for part in &message.content {
        if let Part::Text(text) = part {
            digest.push_text(text);
        }
    }
    for call in &message.tool_calls {
        digest.push_call(&call.id, &call.name, &call.arguments);
    }
    digest
}

/// The long conversation, parsed: each round's request, and the answer to it with the
/// calls it leaves pending (taken from the next request).
struct Parsed {
    requests: Vec<Request>,
    answers: Vec<(AnswerDigest, Vec<String>)>,
}

fn parsed(bodies: &[Vec<u8>]) -> Parsed {
    let requests: Vec<Request> = bodies.iter().map(|b| parse(b)).collect();
    let answers = (0..requests.len() - 1)
        .map(|round| {
            let messages = &requests[round + 1].conversation.messages;
            let at = requests[round].conversation.messages.len();
            let answer = &messages[at];
            assert_eq!(answer.role, Role::Assistant);
            let pending = answer.tool_calls.iter().map(|c| c.id.clone()).collect();
            (answer_digest(answer), pending)
        })
        .collect();
    Parsed { requests, answers }
}

/// The work a resumed stream-json request does that a fresh one does not, part by part:
/// the registry's decision (the transcript's digests included) and the continuation's
/// render. The fallback a failed resume would run costs nothing until it runs: the
/// bridge keeps the parsed conversation itself and builds its tool plan only then.
fn added_work(
    registry: &mut Registry,
    keys: &ConversationKeys<'_>,
    request: &Request,
    now: u64,
) -> ([Lap; 2], Decision) {
    let mut parts = [Lap::default(); 2];
    let started = Stopwatch::start();
    let decision = registry.decide(Owner::LOCAL, keys, request, now);
    parts[0] = started.lap();
    if let Decision::Resume { resume, .. } = &decision {
        let started = Stopwatch::start();
        let from = continuation_from(request, resume.delta, resume.shape.results);
        black_box(render_continuation(&request.conversation, from));
        parts[1] = started.lap();
    }
    (parts, decision)
}

/// Parks `decision`'s lease with round `round`'s answer.
fn park(registry: &mut Registry, decision: Decision, parsed: &Parsed, round: usize, now: u64) {
    let lease = match decision {
        Decision::Fresh { lease, .. } => lease.expect("a lease"),
        Decision::Resume { lease, .. } => lease,
        Decision::Refuse(reply) => panic!("refused: {reply:?}"),
    };
    let (answer, pending) = &parsed.answers[round];
    registry
        .park(
            lease,
            Park {
                answer,
                agent_session: &chat_id(0),
                pending,
                response_id: None,
            },
            now,
        )
        .expect("parked");
}

/// The long conversation's bodies as a transport's client sends them (call ids differ
/// between transports).
fn long_bodies(workload: &Workload, acp: bool, rounds: usize) -> Vec<Vec<u8>> {
    let caller = workload.caller();
    let mut transport = Transport::new(acp, on(), &workload.model);
    let rows = run_loop(workload, rounds, |round, body| {
        transport.round(0, round, body, caller)
    });
    rows.into_iter().map(|(body, _, _)| body).collect()
}

fn time_report(workload: &Workload, reps: usize) {
    println!(
        "\nconversations/time: the core's time per request, µs, {reps} loops of {LONG} rounds; columns: the round (1-based; 10, 20 and 100 with their neighbours)"
    );
    let caller = workload.caller();
    let json_bodies = long_bodies(workload, false, LONG);
    let acp_bodies = long_bodies(workload, true, LONG);
    let parsed_json = parsed(&json_bodies);
    let keys = ConversationKeys {
        client_session: Some(&workload.session),
        ..ConversationKeys::default()
    };

    let names = [
        "stream-json resumed: Bridge::in_conversation",
        "  what it adds: decide + continuation",
        "    decide (digests, lookup, delta check)",
        "    render_continuation",
        "stream-json fresh, same body: Bridge::new",
        "ACP resumed: start_conversation_turn + MCP answer",
        "  less its parse (the rest of the request)",
        "ACP fresh, same body (conversations off)",
        "baseline: serde_json validating the body",
        "baseline: parsing it (Dialect::prepare)",
    ];
    let mut samples: Vec<Samples> = names.iter().map(|_| Samples::new()).collect();
    let config = Config::default();
    let parse_lap = |body: &[u8]| {
        let started = Stopwatch::start();
        black_box(tool_loop::DIALECT.prepare(body, &config, &params()).is_ok());
        started.lap()
    };
    for _ in 0..reps {
        // stream-json, resumed, and beside it the baselines on the same body.
        let mut json = StreamJson::new(on());
        for (round, body) in json_bodies.iter().enumerate() {
            let (given, _) = json.round(0, round, body, caller);
            assert_eq!(given.resumed, round > 0);
            samples[0].add(round, given.core);
            let started = Stopwatch::start();
            black_box(Bridge::new(tool_loop::DIALECT, body, &config, params()));
            samples[4].add(round, started.lap());
            let started = Stopwatch::start();
            black_box(serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok());
            samples[8].add(round, started.lap());
            samples[9].add(round, parse_lap(body));
        }
        // What a resumed request adds, alone, on the parsed requests.
        let mut registry = Registry::new(on());
        for (round, request) in parsed_json.requests.iter().enumerate() {
            let (parts, decision) = added_work(&mut registry, &keys, request, round as u64);
            assert_eq!(matches!(decision, Decision::Resume { .. }), round > 0);
            samples[1].add(round, parts.iter().fold(Lap::default(), |a, b| a + *b));
            for (part, lap) in parts.iter().enumerate() {
                samples[2 + part].add(round, *lap);
            }
            if round + 1 < LONG {
                park(&mut registry, decision, &parsed_json, round, round as u64);
            }
        }
        // ACP, resumed, with the dialect's parse of the same body.
        let mut acp = Acp::new(on(), &workload.model);
        for (round, body) in acp_bodies.iter().enumerate() {
            let (given, _) = acp.round(0, round, body, caller);
            assert_eq!(given.resumed, round > 0);
            samples[5].add(round, given.core);
            samples[6].add(round, given.core.saturating_sub(parse_lap(body)));
        }
        // ACP without conversations: a session, MCP server and whole prompt each round.
        let mut acp = Acp::new(off(), &workload.model);
        for (round, body) in acp_bodies.iter().enumerate() {
            let (given, _) = acp.round(0, round, body, caller);
            samples[7].add(round, given.core);
        }
    }
    let body_kb = |from: usize, to: usize| {
        json_bodies[from..=to].iter().map(Vec::len).sum::<usize>() as f64
            / (to - from + 1) as f64
            / 1024.0
    };
    for (clock, title) in [
        (false, "wall clock, p50 / p99"),
        (true, "the thread's CPU time, p50 / p99"),
    ] {
        if clock && !stopwatch::HAS_CPU_CLOCK {
            continue;
        }
        print!("{title:<52}");
        for (name, _, _) in WINDOWS {
            print!(" {name:>15}");
        }
        print!("\n{:<52}", "  (the body, KB)");
        for (_, from, to) in WINDOWS {
            print!(" {:>15.0}", body_kb(from, to));
        }
        println!();
        for (name, samples) in names.iter().zip(&samples) {
            print!("{name:<52}");
            for (_, from, to) in WINDOWS {
                let p = percentiles(&samples.window(from, to));
                let (p50, p99) = if clock {
                    (p.cpu50, p.cpu99)
                } else {
                    (p.wall50, p.wall99)
                };
                print!(" {:>15}", format!("{}/{}", us(p50), us(p99)));
            }
            println!();
        }
    }
    println!(
        "  samples: {reps} per round ({} per column of three rounds, {} for 2-100); round 1 is the fresh request of each loop",
        3 * reps,
        99 * reps,
    );
}

// Report 3: memory.

fn parked_json(workload: &Workload, count: usize) -> (StreamJson, isize) {
    let mut json = StreamJson::new(RegistryConfig {
        max_parked: count,
        max_parked_per_owner: count,
        ..RegistryConfig::default()
    });
    let bodies: Vec<Vec<u8>> = (0..count)
        .map(|n| workload.body(&workload.other_first(n)))
        .collect();
    let sessions: Vec<String> = (0..count).map(|n| format!("session-{n:06}")).collect();
    let before = live_bytes();
    for n in 0..count {
        let (given, response) = json.round(n, 0, &bodies[n], caller_of(&sessions[n]));
        assert!(!given.resumed);
        drop(response);
    }
    let held = live_bytes() - before;
    assert_eq!(json.registry.parked(), count);
    (json, held)
}

fn parked_acp(workload: &Workload, count: usize) -> (Acp, isize) {
    let mut acp = Acp::new(
        RegistryConfig {
            max_parked: count,
            max_parked_per_owner: count,
            ..RegistryConfig::default()
        },
        &workload.model,
    );
    let bodies: Vec<Vec<u8>> = (0..count)
        .map(|n| workload.body(&workload.other_first(n)))
        .collect();
    let sessions: Vec<String> = (0..count).map(|n| format!("session-{n:06}")).collect();
    let before = live_bytes();
    for n in 0..count {
        let (given, response) = acp.round(n, 0, &bodies[n], caller_of(&sessions[n]));
        assert!(!given.resumed);
        drop(response);
    }
    let with_agent = live_bytes() - before;
    // The scripted agent's own record of its sessions is not the connection's.
    let agent = acp.forget_agent_sessions();
    let agent_bytes = {
        let before = live_bytes();
        drop(agent);
        before - live_bytes()
    };
    assert_eq!(acp.connection.parked_sessions(), count);
    (acp, with_agent - agent_bytes)
}

fn memory_report(workload: &Workload, counts: &[usize]) {
    println!("\nconversations/memory: heap held per parked session (bytes)");
    for &count in counts {
        let (json, held) = parked_json(workload, count);
        drop(json);
        let (acp, acp_held) = parked_acp(workload, count);
        drop(acp);
        println!(
            "  {count:>5} parked: registry (all the stream-json path keeps) {:>8.0}; ACP connection (session, its MCP server and pending call, registry entry) {:>9.0}",
            held as f64 / count as f64,
            acp_held as f64 / count as f64,
        );
    }
    // What an ACP session's share is made of: its MCP server, built from the tools.
    let request = parse(&workload.body(&workload.messages()));
    let tools = &request.conversation.tools;
    let before = live_bytes();
    let mut server = mcp::Server::new(tools, &mcp::Config::default(), "0".repeat(16));
    let built = live_bytes() - before;
    let list_bytes = serde_json::to_string(&json!({"tools": server.tools().iter().map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema})).collect::<Vec<_>>()})).unwrap().len();
    // Served as the agent uses it: initialized, tools listed, one call pending.
    let session = server.session_id().to_owned();
    for (body, session) in [
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Some(session.as_str()),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            Some(session.as_str()),
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"ls"}}}"#,
            Some(session.as_str()),
        ),
    ] {
        let request = mcp::HttpRequest {
            method: "POST",
            accept: Some("application/json, text/event-stream"),
            content_type: Some("application/json"),
            session_id: session,
            protocol_version: session.map(|_| "2025-11-25"),
            body: body.as_bytes(),
        };
        let exchange = server.handle_http(&request, 0);
        while server.poll_exchange(exchange).is_some() {}
        while server.poll_event().is_some() {}
    }
    assert_eq!(server.pending_calls(), 1);
    let served = live_bytes() - before;
    drop(server);
    let schemas = serde_json::to_string(&workload.first["tools"]).unwrap();
    let before = live_bytes();
    let values: serde_json::Value = serde_json::from_str(&schemas).unwrap();
    let as_values = live_bytes() - before;
    drop(values);
    let schemas = schemas.len();
    println!(
        "  an mcp::Server for the request's {} tools ({schemas} bytes of JSON in the request): {built} bytes once built (the tools with their schemas as serde_json values, and the tools/list answer, {list_bytes} bytes, written once), {served} after serving initialize, tools/list and one call; the sessions of a connection that offer the same tools share what is built (mcp::ToolSet), so a parked session holds its own state only",
        tools.len(),
    );
    println!(
        "  the request's tools read as one serde_json value: {as_values} bytes for {schemas} bytes of JSON ({:.1}x: every JSON object is a map of its own)",
        as_values as f64 / schemas as f64,
    );
    println!(
        "  a registry entry keeps digests, no text: its Tail is {} bytes inline; the rest is the agent's session id, the pending call ids and the indexes' entries",
        std::mem::size_of::<Tail>(),
    );
}

// Report 4: 1,000 parked.

/// Times `op` `samples` times, with `restore` (untimed) after each.
fn sample<T>(
    samples: usize,
    mut op: impl FnMut(usize) -> T,
    mut restore: impl FnMut(usize, T),
) -> Percentiles {
    let mut laps = Vec::with_capacity(samples);
    for i in 0..samples {
        let started = Stopwatch::start();
        let out = op(i);
        laps.push(started.lap());
        restore(i, out);
    }
    percentiles(&laps)
}

fn line(what: &str, p: &Percentiles) {
    println!(
        "  {what:<84} {:>8} {:>8} {:>8} {:>8}",
        us(p.wall50),
        us(p.wall99),
        us(p.cpu99),
        us(p.mean)
    );
}

/// A registry holding `count` parked conversations of the workload (each its own
/// session header), filled through the registry's API as a bridge would; conversation
/// `n`'s first request and the answer parked.
struct Filled {
    registry: Registry,
    /// Conversation 0's first request and its answer.
    first: Request,
    answer: (AnswerDigest, Vec<String>),
    /// Its second request (the result of the call).
    second: Request,
    sessions: Vec<String>,
}

fn fill(config: RegistryConfig, count: usize, shared: &Parsed) -> Filled {
    let sessions: Vec<String> = (0..count.max(1))
        .map(|n| format!("session-{n:06}"))
        .collect();
    let mut registry = Registry::new(config);
    for (n, session) in sessions.iter().enumerate().take(count) {
        let keys = ConversationKeys {
            client_session: Some(session),
            ..ConversationKeys::default()
        };
        let decision = registry.decide(Owner::LOCAL, &keys, &shared.requests[0], n as u64);
        let Decision::Fresh {
            lease: Some(lease), ..
        } = decision
        else {
            panic!("a fresh lease");
        };
        let (answer, pending) = &shared.answers[0];
        registry
            .park(
                lease,
                Park {
                    answer,
                    agent_session: &chat_id(n),
                    pending,
                    response_id: None,
                },
                n as u64,
            )
            .expect("parked");
        while registry.poll_released().is_some() {}
    }
    Filled {
        registry,
        first: shared.requests[0].clone(),
        answer: shared.answers[0].clone(),
        second: shared.requests[1].clone(),
        sessions,
    }
}

fn thousand_report(workload: &Workload, samples: usize) {
    const PARKED: usize = 1_000;
    println!(
        "\nconversations/1000: {PARKED} parked sessions, µs\n  {:<84} {:>8} {:>8} {:>8} {:>8}",
        format!("({samples} samples each, unless said)"),
        "p50",
        "p99",
        "cpu p99",
        "mean"
    );
    let shared = parsed(&long_bodies(workload, false, 2));
    let config = RegistryConfig {
        max_parked: PARKED,
        max_parked_per_owner: PARKED,
        ..RegistryConfig::default()
    };
    line(
        "Transcript::of the resumed request: its digests (baseline)",
        &sample(
            samples,
            |_| Transcript::of(black_box(&shared.requests[1])),
            |_, t| drop(t),
        ),
    );
    for count in [1, PARKED] {
        // Resume the latest parked conversation; then park it again as it was.
        let mut filled = fill(config.clone(), count, &shared);
        let latest = count - 1;
        let session = filled.sessions[latest].clone();
        let keys = ConversationKeys {
            client_session: Some(&session),
            ..ConversationKeys::default()
        };
        let registry = std::cell::RefCell::new(&mut filled.registry);
        let stats = sample(
            samples,
            |i| {
                registry
                    .borrow_mut()
                    .decide(Owner::LOCAL, &keys, &filled.second, 10_000 + i as u64)
            },
            |i, decision| {
                let mut registry = registry.borrow_mut();
                let Decision::Resume { lease, .. } = decision else {
                    panic!("the latest conversation resumes");
                };
                registry.release(lease, 0);
                let Decision::Fresh {
                    lease: Some(lease), ..
                } = registry.decide(Owner::LOCAL, &keys, &filled.first, 10_000 + i as u64)
                else {
                    panic!("a fresh lease");
                };
                let park = Park {
                    answer: &filled.answer.0,
                    agent_session: &chat_id(latest),
                    pending: &filled.answer.1,
                    response_id: None,
                };
                registry
                    .park(lease, park, 10_000 + i as u64)
                    .expect("parked");
                while registry.poll_released().is_some() {}
            },
        );
        line(
            &format!("decide: resume the latest conversation, {count} parked"),
            &stats,
        );
    }
    for count in [0, PARKED] {
        let mut filled = fill(config.clone(), count, &shared);
        let keys = ConversationKeys {
            client_session: Some("a new conversation"),
            ..ConversationKeys::default()
        };
        let registry = std::cell::RefCell::new(&mut filled.registry);
        let stats = sample(
            samples,
            |i| {
                registry
                    .borrow_mut()
                    .decide(Owner::LOCAL, &keys, &filled.first, 20_000 + i as u64)
            },
            |_, decision| {
                let Decision::Fresh {
                    lease: Some(lease), ..
                } = decision
                else {
                    panic!("fresh");
                };
                registry.borrow_mut().release(lease, 0);
            },
        );
        line(
            &format!("decide: fresh (a new conversation), {count} parked"),
            &stats,
        );
    }
    // Expiry: every parked session's time to live passes at once.
    let sweeps = (samples / 100).clamp(5, 20);
    let mut laps = Vec::new();
    for _ in 0..sweeps {
        let mut registry = fill(config.clone(), PARKED, &shared).registry;
        let due = registry.poll_timeout().expect("a deadline");
        let started = Stopwatch::start();
        registry.handle_timeout(due + PARKED as u64);
        let mut released = 0;
        while registry.poll_released().is_some() {
            released += 1;
        }
        laps.push(started.lap());
        assert_eq!(released, PARKED);
    }
    let sweep = percentiles(&laps);
    line(
        &format!(
            "expiry sweep: all {PARKED} expire (handle_timeout, poll_released), {sweeps} sweeps"
        ),
        &sweep,
    );
    let mut filled = fill(config.clone(), PARKED, &shared);
    line(
        &format!("expiry: handle_timeout with {PARKED} parked, none due"),
        &sample(samples, |_| filled.registry.handle_timeout(1), |_, ()| {}),
    );
    // Eviction: parking into a full registry lets the least recently used go.
    for (count, what) in [
        (PARKED, "full: its least recently used evicted"),
        (0, "with room (baseline)"),
    ] {
        let mut filled = fill(
            RegistryConfig {
                max_parked: if count == 0 { 1 << 20 } else { PARKED },
                max_parked_per_owner: 1 << 20,
                ..RegistryConfig::default()
            },
            count,
            &shared,
        );
        let mut laps = Vec::new();
        for i in 0..samples {
            let session = format!("new-{i}");
            let keys = ConversationKeys {
                client_session: Some(&session),
                ..ConversationKeys::default()
            };
            let now = 40_000 + i as u64;
            let Decision::Fresh {
                lease: Some(lease), ..
            } = filled
                .registry
                .decide(Owner::LOCAL, &keys, &shared.requests[0], now)
            else {
                panic!("fresh");
            };
            let park = Park {
                answer: &shared.answers[0].0,
                agent_session: &session,
                pending: &shared.answers[0].1,
                response_id: None,
            };
            let started = Stopwatch::start();
            filled.registry.park(lease, park, now).expect("parked");
            while filled.registry.poll_released().is_some() {}
            laps.push(started.lap());
        }
        if count > 0 {
            assert_eq!(filled.registry.parked(), PARKED);
            assert_eq!(filled.registry.stats().evicted as usize, samples);
        }
        line(
            &format!("park, {count} parked, {what}"),
            &percentiles(&laps),
        );
    }
    // One owner at its bound, its sessions the newest: finding its least recently used
    // walks past every other owner's.
    for others in [0, PARKED - 32] {
        let mut registry = Registry::new(RegistryConfig {
            max_parked: 1 << 20,
            max_parked_per_owner: 32,
            ..RegistryConfig::default()
        });
        let park_one = |registry: &mut Registry, owner: Owner, session: &str, now: u64| {
            let keys = ConversationKeys {
                client_session: Some(session),
                ..ConversationKeys::default()
            };
            let Decision::Fresh {
                lease: Some(lease), ..
            } = registry.decide(owner, &keys, &shared.requests[0], now)
            else {
                panic!("fresh");
            };
            let park = Park {
                answer: &shared.answers[0].0,
                agent_session: session,
                pending: &shared.answers[0].1,
                response_id: None,
            };
            let started = Stopwatch::start();
            registry.park(lease, park, now).expect("parked");
            while registry.poll_released().is_some() {}
            started.lap()
        };
        let mut now = 0;
        for n in 0..others {
            now += 1;
            park_one(
                &mut registry,
                Owner::from_key(format!("key {n}").as_bytes()),
                &format!("o-{n}"),
                now,
            );
        }
        let owner = Owner::from_key(b"the busy owner");
        for n in 0..32 {
            now += 1;
            park_one(&mut registry, owner, &format!("b-{n}"), now);
        }
        let laps: Vec<Lap> = (0..samples)
            .map(|i| {
                now += 1;
                park_one(&mut registry, owner, &format!("c-{i}"), now)
            })
            .collect();
        assert_eq!(registry.parked(), others + 32);
        line(
            &format!(
                "park, an owner at its bound (32) evicts its own; {others} other owners' parked before"
            ),
            &percentiles(&laps),
        );
    }
    acp_thousand(workload, PARKED);
}

/// An ACP conversation's rounds 2–20 while `parked` other conversations are parked on
/// the same connection, next to the same with none; and the connection's polls.
fn acp_thousand(workload: &Workload, parked: usize) {
    let caller = workload.caller();
    let bodies = long_bodies(workload, true, ROUNDS);
    for others in [0, parked] {
        let mut acp = Acp::new(on(), &workload.model);
        let sessions: Vec<String> = (0..others).map(|n| format!("session-{n:06}")).collect();
        for (n, session) in sessions.iter().enumerate() {
            let body = workload.body(&workload.other_first(n + 1));
            acp.round(n + 1, 0, &body, caller_of(session));
        }
        assert_eq!(acp.connection.parked_sessions(), others);
        let mut request = Vec::new();
        let mut whole = Vec::new();
        for _ in 0..3 {
            // Each pass starts the conversation again: fresh, beside the earlier one.
            for (round, body) in bodies.iter().enumerate() {
                let (given, _) = acp.round(0, round, body, caller);
                if round > 0 {
                    assert!(given.resumed);
                    request.push(given.core);
                    whole.push(given.core_all);
                }
            }
        }
        line(
            &format!(
                "ACP resumed round, {others} other sessions parked: the request ({} rounds)",
                request.len()
            ),
            &percentiles(&request),
        );
        line(
            &format!(
                "ACP resumed round, {others} other sessions parked: every core call of the round"
            ),
            &percentiles(&whole),
        );
        let connection = &mut acp.connection;
        line(
            &format!("ACP poll_timeout, {} parked", connection.parked_sessions()),
            &sample(2_000, |_| black_box(connection.poll_timeout()), |_, _| {}),
        );
        line(
            &format!(
                "ACP poll_mcp_ready with nothing ready, {} parked",
                connection.parked_sessions()
            ),
            &sample(
                2_000,
                |_| black_box(connection.poll_mcp_ready()).is_some(),
                |_, _| {},
            ),
        );
    }
}

// Criterion: the means.

fn means(c: &mut Criterion, workload: &Workload) {
    let caller = workload.caller();
    let json_bodies = long_bodies(workload, false, ROUNDS);
    let acp_bodies = long_bodies(workload, true, ROUNDS);
    let parsed_json = parsed(&json_bodies);
    let last = ROUNDS - 1;
    let body = &json_bodies[last];
    let config = Config::default();

    let mut group = c.benchmark_group("conversations");
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("serde_json_validate_r20", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(body)).is_ok())
    });
    group.bench_function("parse_r20", |b| {
        b.iter(|| {
            tool_loop::DIALECT
                .prepare(black_box(body), &config, &params())
                .is_ok()
        })
    });
    group.bench_function("render_prompt_r20", |b| {
        let request = &parsed_json.requests[last];
        let plan = ToolPlan::new(&request.conversation.tools, ToolStrategy::default());
        b.iter(|| render_prompt(black_box(&request.conversation), &plan).len())
    });
    // Each resumed (or, conversations off, fresh) request of rounds 2-20 in turn: the
    // loop is replayed as often as the iterations need, only the requests timed.
    for (name, acp, config) in [
        ("sj_resumed_r2_20", false, on()),
        ("sj_fresh_r2_20", false, off()),
        ("acp_resumed_r2_20", true, on()),
        ("acp_fresh_r2_20", true, off()),
    ] {
        let bodies = if acp { &acp_bodies } else { &json_bodies };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let mut transport = Transport::new(acp, config.clone(), &workload.model);
                    for (round, body) in bodies.iter().enumerate() {
                        let (given, _) = transport.round(0, round, body, caller);
                        if round > 0 && done < iters {
                            total += given.core.wall;
                            done += 1;
                        }
                    }
                }
                total
            })
        });
    }
    group.bench_function("sj_added_r20", |b| {
        let keys = ConversationKeys {
            client_session: Some(&workload.session),
            ..ConversationKeys::default()
        };
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut registry = Registry::new(on());
                let decision =
                    registry.decide(Owner::LOCAL, &keys, &parsed_json.requests[last - 1], 0);
                park(&mut registry, decision, &parsed_json, last - 1, 0);
                let (parts, decision) =
                    added_work(&mut registry, &keys, &parsed_json.requests[last], 1);
                assert!(matches!(decision, Decision::Resume { .. }));
                total += parts.iter().map(|p| p.wall).sum::<Duration>();
            }
            total
        })
    });
    group.finish();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --benches` runs each bench once without `--bench`: a short pass.
    let full = args.iter().any(|a| a == "--bench");
    let filter = args.iter().find(|a| !a.starts_with('-'));
    let reports =
        filter.is_none_or(|f| "conversations".contains(f.as_str()) || f.contains("conversations"));
    let workload = Workload::load();
    if reports {
        bytes_report(&workload);
        if full {
            let reps = std::env::var("AGENTWIRE_CONVERSATION_REPS")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(50);
            time_report(&workload, reps);
            memory_report(&workload, &[1, 100, 1_000]);
            thousand_report(&workload, 2_000);
        } else {
            time_report(&workload, 1);
            memory_report(&workload, &[1, 10]);
        }
    }
    let mut criterion = Criterion::default().configure_from_args();
    means(&mut criterion, &workload);
    criterion.final_summary();
}
