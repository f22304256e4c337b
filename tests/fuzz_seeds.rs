//! The fuzz target bodies (`agentwire_testkit::fuzzing`) run as ordinary tests: over the
//! seed files the fuzz corpora start from (the project's fixtures, and the shared real
//! captures when present beside the repository), and over pseudo-random inputs from a
//! fixed-seed generator, so that `cargo test` keeps every body and its invariants working
//! without libFuzzer.

#[path = "support/shared.rs"]
mod shared;

use std::path::{Path, PathBuf};

use agentwire_testkit::fuzzing::{
    self, AbiInput, AbiOp, AcpOp, AcpSettings, AcpStdout, AnswerShape, BridgeInput, BridgeOp,
    ClearField, Clock, ConfigOp, DecoderOp, DialectArg, EnumField, Field, FlagField, Keys, KindArg,
    Knobs, Number, NumberField, Op, Pass, RegistryOp, RegistrySettings, ReplyOp, RequestBody,
    ResultNumber, Start, Stdout, TextField, TurnArg,
};

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

/// Request bodies: the project's in every dialect and, when present, the OpenCode bodies.
fn requests() -> Vec<Vec<u8>> {
    let dir = root().join("tests/fixtures/requests");
    let mut bodies: Vec<Vec<u8>> = ["", "responses", "messages"]
        .iter()
        .flat_map(|sub| files(&dir.join(sub), &[".json"]))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(bodies.len() >= 9, "the request fixtures of every dialect");
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
    let request = random_request(rng);
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
        dialect: rng.next() as u8,
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

fn random_request(rng: &mut Rng) -> RequestBody {
    match rng.below(10) {
        0 => RequestBody::AgentStream,
        1 => RequestBody::AgentStreamMore,
        2 => RequestBody::AgentPlain,
        3 | 4 => RequestBody::ClientStream,
        5 => RequestBody::ClientPlain,
        6 => RequestBody::ToolsNone,
        7 => RequestBody::ToolsNamed,
        8 => RequestBody::Invalid,
        _ => RequestBody::Raw(rng.some_bytes(64)),
    }
}

/// Mostly whole arguments; each documented misuse now and then.
fn random_pass(rng: &mut Rng) -> Pass {
    match rng.below(16) {
        0 => Pass::Prefix(rng.next() as u16),
        1 => Pass::Empty,
        2 => Pass::Null,
        3 => Pass::NullWithLength(rng.next() as u16),
        4 => Pass::TooLarge(rng.next()),
        5 => Pass::NullTooLarge(rng.next()),
        _ => Pass::Whole,
    }
}

fn random_stdout(rng: &mut Rng) -> Stdout {
    match rng.below(8) {
        0 => Stdout::Lines(rng.some_bytes(64)),
        1 => Stdout::Raw(rng.some_bytes(32)),
        _ => Stdout::Transcript(rng.below(1500) as u16),
    }
}

fn random_text(rng: &mut Rng) -> Vec<u8> {
    match rng.below(4) {
        0 => b"/usr/bin/cursor-agent".to_vec(),
        1 => b"dir\0name".to_vec(),
        2 => vec![b'a', 0xff, b'b'],
        _ => "r\u{e9}pertoire".as_bytes().to_vec(),
    }
}

fn random_number(rng: &mut Rng) -> Number {
    match rng.below(4) {
        0 => Number::Any(rng.next()),
        1 => Number::Max,
        _ => Number::Small(rng.next() as u16),
    }
}

fn random_config_op(rng: &mut Rng) -> ConfigOp {
    let text_field = [
        TextField::CursorBinary,
        TextField::Workspace,
        TextField::CliConfigDir,
    ][rng.below(3)];
    let enum_field = [EnumField::ToolStrategy, EnumField::Reasoning][rng.below(2)];
    let flag_field = [
        FlagField::AllowForce,
        FlagField::PartialOutput,
        FlagField::ActivityNotes,
    ][rng.below(3)];
    let number_field = NumberField::all()[rng.below(NumberField::all().len())];
    let rare = rng.below(8) == 0;
    match rng.below(12) {
        0 => ConfigOp::New { null_out: rare },
        1 => ConfigOp::Free,
        2 => ConfigOp::SetText {
            field: text_field,
            text: random_text(rng),
            pass: random_pass(rng),
        },
        3 => ConfigOp::Clear(
            [
                ClearField::Workspace,
                ClearField::CliConfigDir,
                ClearField::MaxDuration,
            ][rng.below(3)],
        ),
        4 => ConfigOp::SetEnum {
            field: enum_field,
            value: if rare {
                Err(rng.next() as u32)
            } else {
                Ok(rng.next() as u8)
            },
        },
        5 | 6 => ConfigOp::SetNumber {
            field: number_field,
            value: random_number(rng),
        },
        7 => ConfigOp::SetFlag {
            field: flag_field,
            value: rng.below(2) == 0,
        },
        8 => ConfigOp::Get {
            field: match rng.below(4) {
                0 => Field::Text(text_field),
                1 => Field::Enum(enum_field),
                2 => Field::Flag(flag_field),
                _ => Field::Number(number_field),
            },
            null_out: rare,
        },
        9 => ConfigOp::LastError,
        10 if rare => [ConfigOp::Panic, ConfigOp::Overlap][rng.below(2)].clone(),
        _ => ConfigOp::New { null_out: false },
    }
}

fn random_bridge_op(rng: &mut Rng) -> BridgeOp {
    let rare = rng.below(8) == 0;
    let index = if rare {
        Err(rng.next())
    } else {
        Ok(rng.next() as u8)
    };
    match rng.below(27) {
        0 | 1 => BridgeOp::New {
            dialect: random_dialect(rng, rare),
            body: random_request(rng),
            pass: random_pass(rng),
            config: (rng.below(3) != 0).then(|| rng.next() as u8),
            transcript: rng.next() as u8,
            created_unix: 1_700_000_000,
            id_seed: rng.next(),
            null_out: rare,
        },
        2 if rare => BridgeOp::Free,
        3 => BridgeOp::Program { null_out: rare },
        4 => BridgeOp::ArgCount { null_out: rare },
        5 => BridgeOp::Arg {
            index,
            null_out: rare,
        },
        6 => BridgeOp::Stdin { null_out: rare },
        7 => BridgeOp::EnvCount { null_out: rare },
        8 => BridgeOp::Env {
            index,
            null_name: rare && rng.below(2) == 0,
            null_value: rare && rng.below(2) == 0,
        },
        9..=12 => BridgeOp::Stdout(random_stdout(rng), random_pass(rng)),
        13 => BridgeOp::Stderr(b"Error: not logged in\n".to_vec(), random_pass(rng)),
        14 => BridgeOp::ExitCode(rng.below(3) as i32),
        15 if rare => BridgeOp::ExitSignal(9),
        16 => BridgeOp::HandleTimeout {
            due: rng.below(4) != 0,
        },
        17 if rare => BridgeOp::ClientGone,
        18 if rare => BridgeOp::Shutdown,
        19 => BridgeOp::Poll { null_out: rare },
        20 => BridgeOp::PollTimeout {
            null_has: rare,
            null_deadline: rare && rng.below(2) == 0,
        },
        21 => [BridgeOp::IsEnded, BridgeOp::IsStream, BridgeOp::LastError][rng.below(3)].clone(),
        22 => BridgeOp::SessionId { null_out: rare },
        23 if rare => [BridgeOp::Panic, BridgeOp::Overlap][rng.below(2)].clone(),
        24 | 25 => BridgeOp::NewInConversation {
            dialect: random_dialect(rng, rare),
            body: random_request(rng),
            pass: random_pass(rng),
            config: (rng.below(3) != 0).then(|| rng.next() as u8),
            registry: if rare { rng.next() as u8 } else { 0 },
            keys: random_keys(rng),
            transcript: rng.next() as u8,
            id_seed: rng.next(),
            null_out: rare,
        },
        26 => BridgeOp::EndTurn(if rare { rng.next() as u8 } else { 0 }),
        _ => BridgeOp::Drain,
    }
}

/// A conversation's ids: mostly absent, now and then present, not UTF-8 or misused.
fn random_keys(rng: &mut Rng) -> Keys {
    let key = |rng: &mut Rng, text: &str| -> Option<(Vec<u8>, Pass)> {
        match rng.below(6) {
            0 => Some((text.as_bytes().to_vec(), Pass::Whole)),
            1 => Some((b"\xff".to_vec(), random_pass(rng))),
            _ => None,
        }
    };
    Keys {
        owner: key(rng, "sk-owner"),
        client_session: key(rng, "session-1"),
        client_agent: key(rng, "agent-1"),
        caller: key(rng, "conversation-1"),
    }
}

fn random_registry_op(rng: &mut Rng) -> RegistryOp {
    let rare = rng.below(8) == 0;
    match rng.below(12) {
        0 => RegistryOp::New {
            settings: (rng.below(2) == 0).then(|| RegistrySettings {
                enabled: rng.below(4) != 0,
                ttl_ms: rng.next() as u16,
                max_parked: rng.next() as u8,
                max_parked_per_owner: rng.next() as u8,
            }),
            null_out: rare,
        },
        1 if rare => RegistryOp::Free,
        2 => RegistryOp::Count {
            busy: rng.below(2) == 0,
            null_out: rare,
        },
        3 => RegistryOp::Stats { null_out: rare },
        4 => RegistryOp::Fresh {
            reason: if rare {
                Err(rng.next() as u32)
            } else {
                Ok(rng.next() as u8)
            },
            null_out: rare && rng.below(2) == 0,
        },
        5 | 6 => RegistryOp::Timeout {
            due: rng.below(4) != 0,
        },
        7 if rare => RegistryOp::Clear,
        8 => RegistryOp::PollReleased { null_out: rare },
        9 => RegistryOp::PollTimeout {
            null_has: rare,
            null_deadline: rare && rng.below(2) == 0,
        },
        10 => RegistryOp::LastError,
        11 if rare => [RegistryOp::Panic, RegistryOp::Overlap][rng.below(2)].clone(),
        _ => RegistryOp::Drain,
    }
}

fn random_decoder_op(rng: &mut Rng) -> DecoderOp {
    let rare = rng.below(8) == 0;
    match rng.below(14) {
        0 => DecoderOp::New {
            config: (rng.below(3) != 0).then(|| rng.next() as u8),
            transcript: rng.next() as u8,
            null_out: rare,
        },
        1 if rare => DecoderOp::Free,
        2..=5 => DecoderOp::Stdout(random_stdout(rng), random_pass(rng)),
        6 => DecoderOp::Eof,
        7 => DecoderOp::Poll { null_out: rare },
        8 => DecoderOp::Stats { null_out: rare },
        9 => DecoderOp::SessionId { null_out: rare },
        10 => DecoderOp::Model { null_out: rare },
        11 => [DecoderOp::IsFinished, DecoderOp::LastError][rng.below(2)].clone(),
        12 if rare => [DecoderOp::Panic, DecoderOp::Overlap][rng.below(2)].clone(),
        _ => DecoderOp::Drain,
    }
}

/// A valid `aw_dialect` mostly; any number when `rare`.
fn random_dialect(rng: &mut Rng, rare: bool) -> DialectArg {
    if rare {
        DialectArg::Any(rng.next() as u32 % 8)
    } else {
        DialectArg::Valid(rng.next() as u8)
    }
}

/// An ACP caller: a connection created early, the agent's answers to the ids it used,
/// updates, recorded lines, turns started and drained; misuse now and then.
fn random_acp_op(rng: &mut Rng) -> AcpOp {
    let rare = rng.below(8) == 0;
    let turn = if rare {
        TurnArg::Any(rng.next())
    } else {
        TurnArg::Started(rng.next() as u8)
    };
    let null_out = rare && rng.below(2) == 0;
    match rng.below(22) {
        0 => AcpOp::New {
            settings: (rng.below(2) == 0).then(|| AcpSettings {
                pool_size: rng.next() as u8,
                max_concurrent_prompts: rng.next() as u8,
                queue_timeout_ms: rng.next() as u16,
                turn_output_budget: (rng.below(3) == 0).then(|| rng.next() as u16),
                permission: rng.next() as u32 % if rare { 9 } else { 2 },
                cwd: (rng.some_bytes(12), random_pass(rng)),
            }),
            recording: rng.next() as u8,
            null_out,
        },
        1 | 2 => AcpOp::StartTurn {
            dialect: random_dialect(rng, rare),
            body: random_request(rng),
            pass: if rare { random_pass(rng) } else { Pass::Whole },
            config: (rng.below(3) == 0).then(|| rng.next() as u8),
            null_out,
        },
        3..=6 => AcpOp::Stdout(AcpStdout::Recording, Pass::Whole),
        7 | 8 => {
            let shape = match rng.below(6) {
                0 => AnswerShape::Initialize,
                1 => AnswerShape::Session(rng.next() as u8),
                2 => AnswerShape::PromptEnd,
                3 => AnswerShape::Cancelled,
                4 => AnswerShape::Error,
                _ => AnswerShape::Empty,
            };
            AcpOp::Stdout(
                AcpStdout::Answer(rng.below(6) as u8, shape),
                random_pass(rng),
            )
        }
        9 => AcpOp::Stdout(
            match rng.below(4) {
                0 => AcpStdout::Update(rng.next() as u8, "hi".into()),
                1 => AcpStdout::Permission(rng.next() as u8, rng.next() as u8),
                2 => AcpStdout::Line(rng.some_bytes(32)),
                _ => AcpStdout::Raw(rng.some_bytes(32)),
            },
            random_pass(rng),
        ),
        10 => AcpOp::Stderr(rng.some_bytes(32), random_pass(rng)),
        11 => AcpOp::Exited {
            signal: rng.below(2) == 0,
            code: rng.next() as i32,
        },
        12 => AcpOp::Timeout {
            due: rng.below(2) == 0,
        },
        13 => AcpOp::ClientGone(turn),
        14 => AcpOp::Shutdown,
        15..=17 => AcpOp::Drain,
        18 => AcpOp::PollOutput { turn, null_out },
        19 => match rng.below(6) {
            0 => AcpOp::PollTransmit { null_out },
            1 => AcpOp::PollReady { null_out },
            2 => AcpOp::PollDecision { null_out },
            3 => AcpOp::PollTimeout {
                null_has: null_out,
                null_deadline: rare,
            },
            _ => AcpOp::Model {
                index: rng.next() as u8,
                null_out,
            },
        },
        20 => AcpOp::LastError,
        _ => match rng.below(8) {
            0 => AcpOp::Panic,
            1 => AcpOp::Free,
            _ => AcpOp::Overlap,
        },
    }
}

fn random_reply_op(rng: &mut Rng) -> ReplyOp {
    let rare = rng.below(8) == 0;
    match rng.below(10) {
        0 | 1 => ReplyOp::CountTokens {
            body: (rng.below(2) == 0).then(|| random_request(rng)),
            pass: random_pass(rng),
            config: (rng.below(3) != 0).then(|| rng.next() as u8),
            null_out: rare,
        },
        2 | 3 => ReplyOp::Error {
            dialect: random_dialect(rng, rare),
            kind: if rng.below(8) == 0 {
                KindArg::Any(rng.next() as u32 % 16)
            } else {
                KindArg::Valid(rng.next() as u8)
            },
            message: random_text(rng),
            pass: random_pass(rng),
            null_out: rare,
        },
        4 if rare => ReplyOp::Free,
        5 => ReplyOp::Status { null_out: rare },
        6 => ReplyOp::Retryable { null_out: rare },
        7 => ReplyOp::Body { null_out: rare },
        8 => ReplyOp::LastError,
        9 if rare => [ReplyOp::Panic, ReplyOp::Overlap][rng.below(2)].clone(),
        _ => ReplyOp::Body { null_out: false },
    }
}

/// A C caller's run: handles created early and used a lot, one slot of each type most of
/// the time, the misuse the ABI documents now and then.
fn random_abi_input(rng: &mut Rng) -> AbiInput {
    let slot = |rng: &mut Rng| {
        if rng.below(4) == 0 {
            rng.next() as u8
        } else {
            0
        }
    };
    let start = Start {
        bridge: (rng.below(4) != 0)
            .then(|| (rng.next() as u8, random_request(rng), rng.next() as u8)),
        decoder_transcript: rng.next() as u8,
    };
    let mut ops = Vec::new();
    if rng.below(2) == 0 {
        // A registry from the start, so that bridges of conversations meet a live one.
        ops.push(AbiOp::Registry(
            0,
            RegistryOp::New {
                settings: None,
                null_out: false,
            },
        ));
    }
    if rng.below(2) == 0 {
        // A connection from the start, so that the ACP calls meet a live one.
        let new = AcpOp::New {
            settings: None,
            recording: rng.next() as u8,
            null_out: false,
        };
        ops.push(AbiOp::Acp(0, new));
    }
    for _ in 0..rng.below(120) {
        ops.push(match rng.below(28) {
            26 | 27 => AbiOp::Registry(slot(rng), random_registry_op(rng)),
            20..=25 => AbiOp::Acp(slot(rng), random_acp_op(rng)),
            0..=2 => AbiOp::Config(slot(rng), random_config_op(rng)),
            3..=11 => AbiOp::Bridge(slot(rng), random_bridge_op(rng)),
            12..=14 => AbiOp::Decoder(slot(rng), random_decoder_op(rng)),
            15 | 16 => AbiOp::Reply(slot(rng), random_reply_op(rng)),
            17 => AbiOp::Clock(match rng.below(8) {
                0 => Clock::Jump(rng.next()),
                1 => Clock::Far(rng.next() as u32),
                _ => Clock::Forward(rng.next() as u16),
            }),
            18 => AbiOp::ResultName(if rng.below(2) == 0 {
                ResultNumber::Near(rng.next() as u8)
            } else {
                ResultNumber::Any(rng.next() as u32)
            }),
            _ => AbiOp::Version,
        });
    }
    AbiInput { start, ops }
}

#[test]
fn seeds_abi() {
    for seed in files(&root().join("fuzz/seeds/abi"), &[""]) {
        fuzzing::abi_bytes(&std::fs::read(seed).unwrap());
    }
    let mut rng = Rng(6);
    // Fewer: every run creates bridges twice over (the handle and the Rust bridge it is
    // compared with), which an unoptimised build makes slow.
    for _ in 0..RANDOM_INPUTS / 4 {
        let len = rng.below(4096);
        fuzzing::abi_bytes(&rng.bytes(len));
        fuzzing::abi(random_abi_input(&mut rng));
    }
}
