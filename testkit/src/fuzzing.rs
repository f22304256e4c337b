//! The bodies of the fuzz targets in `fuzz/`, as plain functions so that tests run them
//! too (`tests/fuzz_seeds.rs`).
//!
//! Every body asserts invariants and panics with a message naming the broken rule; a
//! panic is what libFuzzer reports as a crash. The invariants are the library's
//! documented promises:
//!
//! | body | input | invariants |
//! | --- | --- | --- |
//! | [`framing`] | bytes | any chunking frames the same lines and errors as whole input, which match a reference splitter; buffered bytes never exceed the limit |
//! | [`decoder`] | bytes | events and SSE identical for whole and chunked stdout; SSE well-formed with exactly one terminal and one `[DONE]` |
//! | [`decoder_mutated`] | bytes | real-shaped lines, some mutated: the same invariants, and when no line is mutated, exactly the events the documented rules predict |
//! | [`request`] | bytes | the request parsers of Chat Completions, Responses and Messages, Anthropic's `count_tokens` and `Bridge::new` in every dialect never panic; errors are 400 or 413 (`count_tokens`: 404 for a valid body) in the dialect's error body and invite no retry |
//! | [`bridge`] | [`BridgeInput`] | any dialect, any interleaving of agent output, stderr, exit, time and hang-up: one head before any body, exactly one `End`, nothing after it, at most one `StopAgent`, bodies well formed in the dialect (its whole stream state machine, or its JSON body) |
//! | [`abi`](fn@abi) | [`AbiInput`] | any sequence of C ABI calls over a few handles of each type (config, bridge of any `aw_dialect`, decoder, reply), NULLs, bad arguments and invalid enums included: documented results only, the same answers as the Rust API, out-parameters written only on success, views valid for their documented life, poisoning and `BUSY` as documented |

// The C ABI's body is a C caller: every call it makes is `unsafe`, each with the pointer
// rules it keeps stated (the ABI's own unsafe code stays in agentwire's `ffi`).
#[allow(unsafe_code)]
mod abi;
mod dialects;
mod script;

use agentwire::anthropic;
use agentwire::api::{ErrorReply, Request, RequestError, RequestLimits};
use agentwire::bridge::{Bridge, BridgeError, BridgeParams, Config, Dialect, Output};
use agentwire::conversation::ToolChoice;
use agentwire::cursor::{Decoder, DecoderConfig, DecoderError, DecoderStats, ExitStatus};
use agentwire::event::{ActivityPhase, Event, FailureKind, FinishReason, Progress, Usage};
use agentwire::framing::{LineError, LineFramer};
use agentwire::openai::ApiError;
use agentwire::openai::chat::{ChunkEncoder, OutputOptions, ReasoningField, ResponseMeta};
use agentwire::tools::ToolStrategy;
use arbitrary::{Arbitrary, Unstructured};
use serde_json::Value;

pub use abi::{
    AbiInput, AbiOp, AcpOp, AcpSettings, AcpStdout, AnswerShape, BridgeOp, ClearField, Clock,
    ConfigOp, DecoderOp, DialectArg, EnumField, Field, FlagField, Keys, KindArg, Number,
    NumberField, Pass, RegistryOp, RegistrySettings, ReplyOp, ResultNumber, Start, Stdout,
    TextField, TurnArg, abi, abi_bytes,
};
pub use dialects::RequestBody;
use dialects::{DIALECTS, check_error_body, error_body};
use script::{Expected, Script};

use crate::chat::{self, Ending};

/// Line limits of the [`framing`] body: small, so that inputs within libFuzzer's
/// `-max_len` cross them often.
pub const FRAMING_LIMITS: [usize; 2] = [16, 1024];

/// The decoder's line limit in [`decoder`] and [`decoder_mutated`]: real lines up to a
/// few KiB pass, longer ones take the over-limit path.
pub const DECODER_MAX_LINE: usize = 4096;

/// Fails on a value of one of the library's `#[non_exhaustive]` enums that the bodies
/// were not written for (a variant added since), naming it: a body learns each variant
/// at its first use rather than at compile time.
#[track_caller]
pub(crate) fn unknown(value: impl std::fmt::Debug) -> ! {
    panic!("{value:?}: a variant the fuzz bodies do not know")
}

/// Inputs longer than this are not also fed one byte at a time (that run alone is
/// linear, but it dominates the time of each execution).
const BYTEWISE_MAX: usize = 16 * 1024;

// ---------------------------------------------------------------------------------------
// Chunkings

/// FNV-1a: a cheap, stable hash for deriving split points from the input itself.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `data` cut into pieces whose lengths (1 to 64 bytes) are read from `lengths`, cycling.
fn chunk_by<'a>(data: &'a [u8], lengths: &[u8]) -> Vec<&'a [u8]> {
    if lengths.is_empty() {
        return vec![data];
    }
    let mut pieces = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let len = (usize::from(lengths[i % lengths.len()]) % 64 + 1).min(rest.len());
        pieces.push(&rest[..len]);
        rest = &rest[len..];
        i += 1;
    }
    pieces
}

/// The chunkings every stream body compares with whole input: lengths read from
/// `lengths`, two pieces split at a point derived from the data, and (for inputs up to
/// [`BYTEWISE_MAX`]) one byte at a time.
fn chunkings<'a>(data: &'a [u8], lengths: &[u8]) -> Vec<(&'static str, Vec<&'a [u8]>)> {
    let split = if data.is_empty() {
        0
    } else {
        (fnv(data) % data.len() as u64) as usize
    };
    let mut plans = vec![
        ("input-derived chunks", chunk_by(data, lengths)),
        ("two pieces", vec![&data[..split], &data[split..]]),
    ];
    if data.len() <= BYTEWISE_MAX {
        plans.push(("one byte at a time", data.chunks(1).collect()));
    }
    plans
}

// ---------------------------------------------------------------------------------------
// framing

/// One framer outcome, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Framed {
    Line(String),
    TooLong { line: u64 },
    InvalidUtf8 { line: u64, valid_up_to: usize },
}

impl Framed {
    fn of(result: Result<&str, LineError>, limit: usize) -> Framed {
        match result {
            Ok(line) => Framed::Line(line.to_owned()),
            Err(LineError::TooLong {
                line,
                limit: reported,
            }) => {
                assert_eq!(reported, limit, "TooLong reports another limit");
                Framed::TooLong { line }
            }
            Err(LineError::InvalidUtf8 { line, valid_up_to }) => {
                Framed::InvalidUtf8 { line, valid_up_to }
            }
            Err(other) => unknown(other),
        }
    }
}

/// Frames `pieces` and checks the per-call promises; returns the outcomes and the
/// number of lines seen before `finish`.
fn frame(pieces: &[&[u8]], limit: usize) -> (Vec<Framed>, u64) {
    let mut framer = LineFramer::new(limit);
    assert_eq!(framer.limit(), limit);
    let mut out = Vec::new();
    for piece in pieces {
        let mut input = *piece;
        while !input.is_empty() {
            let len = input.len();
            let framed = framer.next_line(input);
            assert!(
                (1..=len).contains(&framed.consumed),
                "consumed {} of {len} bytes",
                framed.consumed
            );
            input = &input[framed.consumed..];
            if let Some(line) = framed.line {
                let line = Framed::of(line, limit);
                if let Framed::Line(text) = &line {
                    assert!(!text.contains('\n'), "a line holds a newline: {text:?}");
                    assert!(
                        !text.bytes().all(|b| b.is_ascii_whitespace()),
                        "a blank line was delivered: {text:?}"
                    );
                }
                out.push(line);
            }
            assert!(
                framer.buffered() <= limit,
                "{} bytes buffered over the {limit}-byte limit",
                framer.buffered()
            );
        }
    }
    let seen = framer.lines_seen();
    if let Some(line) = framer.finish() {
        out.push(Framed::of(line, limit));
    }
    assert_eq!(framer.buffered(), 0, "bytes buffered after finish");
    (out, seen)
}

/// What whole-input framing must produce, by the rules in `LineFramer`'s documentation.
fn frame_reference(data: &[u8], limit: usize) -> Vec<Framed> {
    fn deliver(bytes: &[u8], line: u64, out: &mut Vec<Framed>) {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        out.push(match std::str::from_utf8(bytes) {
            Ok(text) => Framed::Line(text.to_owned()),
            Err(e) => Framed::InvalidUtf8 {
                line,
                valid_up_to: e.valid_up_to(),
            },
        });
    }
    let mut out = Vec::new();
    let mut line = 1u64;
    let mut rest = data;
    while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
        let head = &rest[..newline];
        if head.len() > limit {
            out.push(Framed::TooLong { line });
        } else {
            deliver(head, line, &mut out);
        }
        line += 1;
        rest = &rest[newline + 1..];
    }
    if rest.len() > limit {
        out.push(Framed::TooLong { line });
    } else if !rest.is_empty() {
        deliver(rest, line, &mut out);
    }
    out
}

/// `LineFramer` over `data`: whole input matches the reference splitter exactly, and
/// every chunking frames exactly the same lines and errors; buffered bytes never exceed
/// the limit; `lines_seen` counts newlines.
pub fn framing(data: &[u8]) {
    let newlines = data.iter().filter(|b| **b == b'\n').count() as u64;
    for limit in FRAMING_LIMITS {
        let (whole, seen) = frame(&[data], limit);
        assert_eq!(seen, newlines, "lines_seen before finish");
        let reference = frame_reference(data, limit);
        assert_eq!(whole, reference, "whole input differs from the reference");
        for (name, pieces) in chunkings(data, data) {
            let (chunked, seen) = frame(&pieces, limit);
            assert_eq!(seen, newlines, "lines_seen before finish ({name})");
            assert_eq!(chunked, whole, "{name}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// decoder

/// One decoder event, owned.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    Text(String),
    Reasoning(String),
    Activity {
        call_id: String,
        tool: String,
        phase: ActivityPhase,
        summary: String,
        arguments: Option<String>,
        model_call_id: Option<String>,
    },
    Progress(Progress),
    Usage(Usage),
    Finish(FinishReason),
    Failed(FailureKind, String),
}

impl Owned {
    fn of(event: &Event<'_>) -> Owned {
        match event {
            Event::TextDelta(text) => {
                assert!(!text.is_empty(), "empty text delta");
                Owned::Text((*text).to_owned())
            }
            Event::ReasoningDelta(text) => {
                assert!(!text.is_empty(), "empty reasoning delta");
                Owned::Reasoning((*text).to_owned())
            }
            Event::ToolCall(call) => panic!("the decoder produced a client tool call: {call:?}"),
            Event::AgentActivity(activity) => Owned::Activity {
                call_id: activity.call_id.to_owned(),
                tool: activity.tool.to_owned(),
                phase: activity.phase,
                summary: activity.summary.to_owned(),
                arguments: activity.arguments.map(str::to_owned),
                model_call_id: activity.model_call_id.map(str::to_owned),
            },
            Event::Progress(progress) => Owned::Progress(*progress),
            Event::Usage(usage) => Owned::Usage(*usage),
            Event::Finish(reason) => Owned::Finish(*reason),
            Event::Failed(failure) => Owned::Failed(failure.kind, failure.message.clone()),
            other => unknown(other),
        }
    }

    /// The same event as the script model describes it.
    fn expected(&self) -> Expected {
        match self {
            Owned::Text(text) => Expected::Text(text.clone()),
            Owned::Reasoning(text) => Expected::Reasoning(text.clone()),
            Owned::Activity {
                call_id,
                tool,
                phase,
                arguments,
                model_call_id,
                ..
            } => Expected::Activity {
                call_id: call_id.clone(),
                tool: tool.clone(),
                phase: *phase,
                arguments: arguments.clone(),
                model_call_id: model_call_id.clone(),
            },
            Owned::Progress(progress) => Expected::Progress(*progress),
            Owned::Usage(usage) => Expected::Usage(*usage),
            Owned::Finish(_) => Expected::Finish,
            Owned::Failed(..) => Expected::Failed,
        }
    }
}

/// One decoder run: its events, the SSE a `ChunkEncoder` made of them, and the stats.
struct Run {
    events: Vec<Owned>,
    sse: Vec<u8>,
    stats: DecoderStats,
}

/// The decoder's configuration in the decoder bodies (notes kept short so that their
/// trimming at character boundaries is exercised).
fn decoder_config() -> DecoderConfig {
    DecoderConfig {
        max_line_len: DECODER_MAX_LINE,
        max_notes: 256,
    }
}

/// Decodes `pieces` and encodes the events as a stream.
fn run_decoder(pieces: &[&[u8]]) -> Run {
    let mut decoder = Decoder::new(decoder_config());
    let meta = ResponseMeta::new(1, 1_700_000_000, "auto");
    let mut encoder = ChunkEncoder::new(
        &meta,
        &OutputOptions {
            include_usage: true,
            ..OutputOptions::default()
        },
    );
    let mut events = Vec::new();
    let mut sse = Vec::new();
    let mut drain = |decoder: &mut Decoder| {
        while let Some(event) = decoder.poll_event() {
            encoder.encode(&event, &mut sse);
            events.push(Owned::of(&event));
        }
    };
    for piece in pieces {
        decoder
            .push_stdout(piece)
            .expect("stdout accepted before its end");
        drain(&mut decoder);
    }
    decoder.push_eof().expect("first end of stdout");
    drain(&mut decoder);
    assert!(decoder.is_finished(), "decoder not finished after eof");
    assert_eq!(
        decoder.push_stdout(b"{}\n"),
        Err(DecoderError::AfterEof),
        "stdout accepted after its end"
    );
    assert_eq!(decoder.push_eof(), Ok(()), "a second end of stdout");
    assert!(decoder.poll_event().is_none(), "events after the end");
    assert!(
        encoder.is_finished(),
        "the decoder ended without Finish or Failed: {events:?}"
    );
    if !decoder.saw_result() {
        assert!(
            matches!(events.last(), Some(Owned::Failed(..))),
            "output without a result does not end in a failure: {events:?}"
        );
    }
    Run {
        events,
        sse,
        stats: *decoder.stats(),
    }
}

/// Compares a chunked run with the whole run.
fn assert_same_run(name: &str, got: &Run, whole: &Run) {
    assert_eq!(
        got.events, whole.events,
        "{name}: events differ from whole input"
    );
    assert_eq!(
        got.stats, whole.stats,
        "{name}: stats differ from whole input"
    );
    assert!(
        got.sse == whole.sse,
        "{name}: SSE differs from whole input:\n{}\nvs\n{}",
        String::from_utf8_lossy(&got.sse),
        String::from_utf8_lossy(&whole.sse)
    );
}

/// Checks the whole run's SSE against its events.
fn assert_stream_of_events(run: &Run) {
    let stream = chat::stream(&run.sse, Ending::Complete);
    let terminal = run
        .events
        .iter()
        .position(|e| matches!(e, Owned::Finish(_) | Owned::Failed(..)))
        .expect("a terminal event");
    let before = &run.events[..terminal];
    let text: String = before
        .iter()
        .filter_map(|e| match e {
            Owned::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        stream.content, text,
        "streamed content is not the text before the first terminal"
    );
    assert!(stream.tool_calls.is_empty(), "tool calls in agent output");
    match &run.events[terminal] {
        Owned::Finish(reason) => {
            assert_eq!(*reason, FinishReason::Stop, "cursor-agent only stops");
            assert_eq!(stream.finish_reasons, ["stop"]);
            let usage = before.iter().any(|e| matches!(e, Owned::Usage(_)));
            assert_eq!(
                stream.usage_chunks,
                usize::from(usage),
                "a usage chunk iff usage was reported"
            );
        }
        Owned::Failed(kind, message) => {
            assert_eq!(stream.errors.len(), 1);
            let failure = agentwire::event::Failure::new(*kind, message.clone());
            let want: Value =
                serde_json::from_slice(&ApiError::from_failure(&failure).to_json()).unwrap();
            assert_eq!(
                stream.errors[0], want["error"],
                "error frame of the failure"
            );
        }
        _ => unreachable!(),
    }
}

/// Decodes `data` whole and in every chunking, checks the invariants and returns the
/// whole run.
fn check_transcript(data: &[u8], lengths: &[u8]) -> Run {
    let whole = run_decoder(&[data]);
    assert_stream_of_events(&whole);
    for (name, pieces) in chunkings(data, lengths) {
        let run = run_decoder(&pieces);
        assert_same_run(name, &run, &whole);
    }
    whole
}

/// The cursor decoder and a `ChunkEncoder` over arbitrary stdout: the same events, stats
/// and SSE bytes for whole and chunked input; every frame well-formed, exactly one
/// terminal and one `[DONE]`; the streamed content is the text before the terminal; a
/// failure ends output that had no `result`.
pub fn decoder(data: &[u8]) {
    check_transcript(data, data);
}

/// Real-shaped transcripts built from `data` (see the `script` module): lines from a
/// table of templates, some mutated. The [`decoder`] invariants, and while no line is
/// mutated, exactly the events that the decoder's documented rules predict (recaps
/// dropped only when the next event is not of their channel, missing suffixes of
/// `result` emitted, turns).
pub fn decoder_mutated(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let script = Script::generate(&mut u, DECODER_MAX_LINE);
    let lengths = u.take_rest();
    let whole = check_transcript(&script.bytes, lengths);
    if let Some(expected) = &script.expected {
        let got: Vec<Expected> = whole.events.iter().map(Owned::expected).collect();
        if &got != expected {
            let at = got
                .iter()
                .zip(expected)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(expected.len()));
            panic!(
                "events differ from the documented rules at event {at}:\n got: {}\nwant: {}\n\
                 ({} events, {} predicted) for the transcript:\n{}",
                shorten(&format!("{:?}", got.get(at))),
                shorten(&format!("{:?}", expected.get(at))),
                got.len(),
                expected.len(),
                String::from_utf8_lossy(&script.bytes)
                    .lines()
                    .map(shorten)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

/// A long text cut to its first 200 characters, so that failure reports stay readable.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…({} bytes)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// request

/// Tight limits, so that the limit errors are reached by small inputs; attachments
/// refused, so that both ways of taking them are reached.
fn tight_limits() -> RequestLimits {
    RequestLimits {
        max_body_bytes: 2048,
        max_messages: 3,
        max_tools: 2,
        reject_attachments: true,
    }
}

/// Asserts a request error of `dialect` is a 400 or 413 that invites no retry, with a
/// code, rendered as exactly the dialect's error body (for the OpenAI dialects, an
/// `invalid_request_error`).
fn assert_request_error(dialect: Dialect, error: &RequestError) {
    let reply = ErrorReply::from(error);
    let status = reply.status();
    assert!(
        status == 400 || status == 413,
        "{dialect:?} request error with status {status}"
    );
    assert_eq!(status, error.status(), "the reply's status is the error's");
    assert!(!reply.retryable(), "request error marked retryable");
    assert!(!reply.code.is_empty(), "request error without a code");
    assert!(
        !agentwire::api::invites_retry(&reply.message),
        "request error invites a retry: {}",
        reply.message
    );
    let body = error_body(dialect, &reply);
    check_error_body(dialect, status, &body);
    if dialect != Dialect::Messages {
        let api = ApiError::from(&reply);
        assert_eq!(api.kind, "invalid_request_error");
        assert!(api.code.is_some(), "request error without a code");
    }
}

/// Asserts what every dialect's parser promises of a valid request: messages within the
/// limits, a body within them, a model that cannot be read as a flag, an echoed model of
/// at most 256 bytes with no control character, a named tool choice that exists.
fn assert_valid_request(dialect: Dialect, request: &Request, data: &[u8], limits: &RequestLimits) {
    assert!(
        !request.conversation.messages.is_empty(),
        "{dialect:?}: a request without messages"
    );
    assert!(request.conversation.messages.len() <= limits.max_messages);
    assert!(request.conversation.tools.len() <= limits.max_tools);
    assert!(data.len() <= limits.max_body_bytes);
    assert!(
        !request.model.is_empty() && !request.model.starts_with('-'),
        "{dialect:?}: model {:?}",
        request.model
    );
    assert!(
        request.response_model.len() <= 256
            && !request.response_model.chars().any(char::is_control),
        "{dialect:?}: echoed model {:?}",
        request.response_model
    );
    if dialect == Dialect::ChatCompletions {
        assert!(!request.include_usage || request.stream);
    }
    if let ToolChoice::Named(name) = &request.conversation.tool_choice {
        assert!(
            request.conversation.tools.iter().any(|t| &t.name == name),
            "{dialect:?}: tool_choice names an unknown tool {name:?}"
        );
    }
}

/// `POST /v1/messages/count_tokens`: never an agent, never a 5xx, never retryable; a
/// 404 `count_tokens_unavailable` for a valid body, else the 400 or 413 of the field;
/// always an Anthropic error body.
fn assert_count_tokens(data: &[u8], limits: &RequestLimits) {
    let reply = anthropic::count_tokens(data, limits);
    let status = reply.status();
    assert!(!reply.retryable(), "count_tokens retryable");
    match status {
        404 => assert_eq!(reply.code, "count_tokens_unavailable"),
        400 | 413 => assert!(!reply.code.is_empty()),
        other => panic!("count_tokens answered {other}"),
    }
    assert!(
        !agentwire::api::invites_retry(&reply.message),
        "count_tokens invites a retry: {}",
        reply.message
    );
    check_error_body(
        Dialect::Messages,
        status,
        &error_body(Dialect::Messages, &reply),
    );
}

/// Outputs polled until `None`, owned.
fn drain_owned(bridge: &mut Bridge) -> Vec<OwnedOutput> {
    let mut out = Vec::new();
    while let Some(output) = bridge.poll_output() {
        out.push(match output {
            Output::Head(head) => OwnedOutput::Head(head.status, head.content_type, head.retryable),
            Output::Body(bytes) => OwnedOutput::Body(bytes.to_vec()),
            Output::StopAgent => OwnedOutput::Stop,
            Output::Respawn => unreachable!("only a conversation's bridge respawns"),
            Output::End => OwnedOutput::End,
        });
        assert!(out.len() < 1000, "poll_output does not run dry");
    }
    out
}

#[derive(Debug, PartialEq, Eq)]
enum OwnedOutput {
    Head(u16, &'static str, Option<bool>),
    Body(Vec<u8>),
    Stop,
    End,
}

/// Every dialect's request parser (Chat Completions, Responses, Messages), Anthropic's
/// `count_tokens` and `Bridge::new` of every dialect over the same arbitrary bytes: never
/// a panic; a valid request keeps the promises every parser makes (messages and tools
/// within the limits, a model that is no flag, a named tool choice that exists); an error is a
/// 400 or 413 that invites no retry, in the dialect's error body; the bridge of an invalid
/// body outputs exactly that head, that body and `End`, and spawns nothing; of a valid
/// one, an invocation with `--model` and no `--force`, nothing before agent output, and
/// `StopAgent`, `End` on a hang-up.
pub fn request(data: &[u8]) {
    for limits in [RequestLimits::default(), tight_limits()] {
        for dialect in DIALECTS {
            match dialects::parse(dialect, data, &limits) {
                Ok(request) => assert_valid_request(dialect, &request, data, &limits),
                Err(error) => assert_request_error(dialect, &error),
            }
        }
        assert_count_tokens(data, &limits);
    }
    for dialect in DIALECTS {
        request_bridge(dialect, data);
    }
}

/// `Bridge::new` of `data` in `dialect`: see [`request`].
fn request_bridge(dialect: Dialect, data: &[u8]) {
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 42,
    };
    let config = Config::default();
    let mut bridge = Bridge::new(dialect, data, &config, params);
    let outputs = drain_owned(&mut bridge);
    match dialects::parse(dialect, data, &config.request_limits) {
        Err(error) => {
            let reply = ErrorReply::from(&error);
            assert!(bridge.invocation().is_none(), "an invalid request spawns");
            assert_eq!(
                outputs,
                [
                    OwnedOutput::Head(reply.status(), "application/json", Some(false)),
                    OwnedOutput::Body(error_body(dialect, &reply)),
                    OwnedOutput::End
                ],
                "outputs of an invalid {dialect:?} request"
            );
            assert!(bridge.is_ended());
        }
        Ok(request) => {
            let invocation = bridge.invocation().expect("a valid request spawns");
            assert_eq!(invocation.program, config.cursor_binary);
            assert!(
                !invocation.args.iter().any(|a| a == "--force"),
                "--force without allow_force: {:?}",
                invocation.args
            );
            let model_at = invocation
                .args
                .iter()
                .position(|a| a == "--model")
                .expect("--model");
            assert_eq!(invocation.args.get(model_at + 1), Some(&request.model));
            assert_eq!(bridge.is_stream(), request.stream);
            assert!(
                outputs.is_empty(),
                "outputs before any agent output: {outputs:?}"
            );
            bridge.client_gone(1);
            assert_eq!(
                drain_owned(&mut bridge),
                [OwnedOutput::Stop, OwnedOutput::End],
                "a hang-up before anything was sent"
            );
        }
    }
    assert!(bridge.poll_output().is_none() && bridge.poll_timeout().is_none());
}

// ---------------------------------------------------------------------------------------
// bridge

/// Transcripts the bridge body draws stdout from: the project's own fixtures.
const TRANSCRIPTS: &[&str] = &[
    include_str!("../../tests/fixtures/partial_recaps.jsonl"),
    include_str!("../../tests/fixtures/parallel_tools.jsonl"),
    include_str!("../../tests/fixtures/client_envelope.jsonl"),
    include_str!("../../tests/fixtures/client_native_batch.jsonl"),
    include_str!("../../tests/fixtures/thinking_only.jsonl"),
    include_str!("../../tests/fixtures/failure_no_result.jsonl"),
    include_str!("../../tests/fixtures/multibyte.jsonl"),
    include_str!("../../tests/fixtures/no_usage.jsonl"),
    include_str!("../../tests/fixtures/repeated_tokens.jsonl"),
];

/// Configuration knobs, mapped onto a [`Config`] with short timeouts so that deadlines
/// fall within a run.
#[derive(Debug, Clone, Arbitrary)]
pub struct Knobs {
    /// Tool strategy: read-only, native or envelope-only (modulo 3).
    pub strategy: u8,
    /// Reasoning field: `reasoning_content`, `reasoning` or omitted (modulo 3).
    pub reasoning: u8,
    /// [`Config::activity_notes`].
    pub activity_notes: bool,
    /// [`Config::allow_force`].
    pub allow_force: bool,
    /// [`Config::head_deadline_ms`].
    pub head_deadline_ms: u16,
    /// [`Config::keep_alive_ms`].
    pub keep_alive_ms: u16,
    /// [`Config::idle_timeout_ms`] (modulo an hour).
    pub idle_timeout_ms: u32,
    /// [`Config::max_duration_ms`].
    pub max_duration_ms: Option<u32>,
    /// [`Config::batch_window_ms`] (modulo 2 s).
    pub batch_window_ms: u16,
    /// [`Config::stderr_tail_bytes`] (modulo 4 KiB).
    pub stderr_tail_bytes: u16,
    /// Decoder line limit: 64 MiB, 4 KiB or 256 bytes (modulo 3).
    pub line_limit: u8,
    /// [`Config::max_envelope_bytes`]: 4 MiB, 1 KiB or 64 bytes (modulo 3).
    pub envelope_limit: u8,
}

impl Knobs {
    fn config(&self) -> Config {
        Config {
            tool_strategy: match self.strategy % 3 {
                0 => ToolStrategy::ReadOnly,
                1 => ToolStrategy::Native,
                _ => ToolStrategy::EnvelopeOnly,
            },
            reasoning: match self.reasoning % 3 {
                0 => ReasoningField::ReasoningContent,
                1 => ReasoningField::Reasoning,
                _ => ReasoningField::Omitted,
            },
            activity_notes: self.activity_notes,
            allow_force: self.allow_force,
            head_deadline_ms: u64::from(self.head_deadline_ms),
            keep_alive_ms: u64::from(self.keep_alive_ms),
            idle_timeout_ms: u64::from(self.idle_timeout_ms % 3_600_000),
            max_duration_ms: self.max_duration_ms.map(u64::from),
            batch_window_ms: u64::from(self.batch_window_ms % 2_000),
            stderr_tail_bytes: usize::from(self.stderr_tail_bytes % 4096),
            max_envelope_bytes: match self.envelope_limit % 3 {
                0 => 4 * 1024 * 1024,
                1 => 1024,
                _ => 64,
            },
            decoder: DecoderConfig {
                max_line_len: match self.line_limit % 3 {
                    0 => agentwire::framing::DEFAULT_MAX_LINE_LEN,
                    1 => 4096,
                    _ => 256,
                },
                ..DecoderConfig::default()
            },
            ..Config::default()
        }
    }
}

/// One thing that happens to a request.
#[derive(Debug, Clone, Arbitrary)]
pub enum Op {
    /// The next bytes (1 to 4096) of the chosen transcript on stdout.
    Transcript(u16),
    /// Real-shaped lines, generated (and maybe mutated) from these bytes as
    /// [`decoder_mutated`] does.
    Line(Vec<u8>),
    /// Any bytes on stdout.
    Stdout(Vec<u8>),
    /// Bytes on stderr.
    Stderr(Vec<u8>),
    /// The agent exited with this code.
    Exit(i32),
    /// A signal ended the agent.
    Signal(i32),
    /// Time passes (ms): every deadline on the way is handled when it falls due.
    Wait(u32),
    /// `handle_timeout` at `now + ms`, due or not.
    Tick(u16),
    /// The client hangs up.
    ClientGone,
}

/// The [`bridge`] body's input: a request, a configuration, a transcript to draw stdout
/// from, and what happens.
#[derive(Debug, Clone, Arbitrary)]
pub struct BridgeInput {
    /// The dialect (`n % 3`: Chat Completions, Responses, Messages).
    pub dialect: u8,
    /// The request body, in that dialect.
    pub request: RequestBody,
    /// Configuration knobs.
    pub knobs: Knobs,
    /// Index into the built-in transcripts.
    pub transcript: u8,
    /// What happens, in order (the first 256 are used).
    pub ops: Vec<Op>,
}

/// Everything polled from one bridge, checked as it comes.
#[derive(Debug, Default)]
struct Contract {
    head: Option<(u16, &'static str, Option<bool>)>,
    body: Vec<u8>,
    stops: usize,
    ends: usize,
    gone: bool,
    exited: bool,
    exited_at_end: bool,
}

impl Contract {
    fn drain(&mut self, bridge: &mut Bridge, stream: bool) {
        let mut polls = 0;
        while let Some(output) = bridge.poll_output() {
            polls += 1;
            assert!(polls < 1000, "poll_output does not run dry");
            assert_eq!(self.ends, 0, "output after End: {output:?}");
            match output {
                Output::Head(head) => {
                    assert!(self.head.is_none(), "a second head: {head:?}");
                    assert!(!self.gone, "a head after the client left");
                    let error = head.status >= 400;
                    assert!(
                        [200, 400, 401, 404, 413, 429, 500, 502, 503, 504].contains(&head.status),
                        "status {}",
                        head.status
                    );
                    let want_type = if stream && !error {
                        "text/event-stream"
                    } else {
                        "application/json"
                    };
                    assert_eq!(head.content_type, want_type, "content type of {head:?}");
                    assert_eq!(head.retryable.is_some(), error, "retryable of {head:?}");
                    self.head = Some((head.status, head.content_type, head.retryable));
                }
                Output::Body(bytes) => {
                    let (status, content_type, _) = self.head.expect("a body before the head");
                    assert!(!self.gone, "a body after the client left");
                    assert!(!bytes.is_empty(), "an empty body output");
                    if content_type == "text/event-stream" {
                        assert!(
                            bytes.ends_with(b"\n\n"),
                            "a stream body output ends inside a frame: {:?}",
                            String::from_utf8_lossy(bytes)
                        );
                    } else {
                        assert!(self.body.is_empty(), "a JSON body in pieces ({status})");
                    }
                    self.body.extend_from_slice(bytes);
                }
                Output::StopAgent => {
                    assert_eq!(self.stops, 0, "a second StopAgent");
                    assert!(!self.exited, "StopAgent after the agent exited");
                    self.stops += 1;
                }
                Output::Respawn => panic!("a bridge made by Bridge::new never respawns"),
                Output::End => {
                    assert!(
                        self.head.is_some() || self.gone,
                        "End without a head while the client is there"
                    );
                    self.ends += 1;
                    self.exited_at_end = self.exited;
                }
            }
        }
        if self.ends > 0 {
            assert!(bridge.is_ended(), "End polled but is_ended() is false");
            assert!(bridge.poll_output().is_none(), "output after End");
            assert!(bridge.poll_timeout().is_none(), "a deadline after End");
        }
    }

    /// Checks the whole body once the run is over: a stream or a JSON body well formed
    /// in `dialect`, echoing `model`, calling only the client's tools.
    fn finish(&self, dialect: Dialect, stream: bool, model: &str, tool_names: &[String]) {
        assert_eq!(self.ends, 1, "exactly one End");
        let Some((status, content_type, _)) = self.head else {
            assert!(self.gone, "no head, and the client did not leave");
            return;
        };
        if content_type == "text/event-stream" {
            let ending = if self.gone {
                Ending::Cut
            } else {
                Ending::Complete
            };
            let called = dialects::check_stream(dialect, &self.body, ending, model);
            assert_client_tools(&called, tool_names);
            if !called.is_empty() && !self.gone && !self.exited_at_end {
                assert_eq!(self.stops, 1, "client tool calls end the turn: StopAgent");
            }
            return;
        }
        assert!(
            !stream || status >= 400,
            "a stream with a JSON {status} head"
        );
        if self.body.is_empty() {
            assert!(self.gone, "a JSON response without a body");
            return;
        }
        if status >= 400 {
            check_error_body(dialect, status, &self.body);
            return;
        }
        let value: Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "JSON body does not parse ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        });
        let called = dialects::check_body(dialect, &value, model);
        assert_client_tools(&called, tool_names);
    }
}

/// Every tool called is one of the client's.
fn assert_client_tools(called: &[String], tool_names: &[String]) {
    for name in called {
        assert!(
            tool_names.contains(name),
            "a tool call of {name:?}, not a client tool"
        );
    }
}

/// The bridge under an arbitrary run: any interleaving of stdout (transcript bytes,
/// real-shaped lines, raw bytes), stderr, exit, time (monotonic) and hang-up, draining
/// `poll_output` after each. At most one head, before any body; at most one
/// `StopAgent`, never after the exit; exactly one `End` by the end of the run, and
/// nothing after it; every deadline handled moves the next one forward; misuse after
/// the exit is refused; the body is a well-formed stream (whole unless the client left)
/// or one OpenAI JSON body.
pub fn bridge(input: BridgeInput) {
    let dialect = dialects::dialect(input.dialect);
    let body = input.request.bytes(dialect);
    let tool_names = dialects::tool_names(&body);
    let config = input.knobs.config();
    let model = dialects::parse(dialect, &body, &config.request_limits)
        .map(|request| request.response_model)
        .unwrap_or_default();
    let start = 1_000u64;
    let params = BridgeParams {
        now_ms: start,
        created_unix: 1_700_000_000,
        id_seed: 7,
    };
    let mut bridge = Bridge::new(dialect, &body, &config, params);
    let stream = bridge.is_stream();
    let transcript = TRANSCRIPTS[usize::from(input.transcript) % TRANSCRIPTS.len()].as_bytes();
    let mut contract = Contract::default();
    contract.drain(&mut bridge, stream);
    if bridge.invocation().is_none() {
        assert_eq!(contract.ends, 1, "an invalid request ends at once");
    }
    let mut now = start;
    let mut offset = 0usize;
    for op in input.ops.iter().take(256) {
        match op {
            Op::Transcript(n) => {
                let end = (offset + usize::from(*n % 4096) + 1).min(transcript.len());
                push_stdout(&mut bridge, &contract, &transcript[offset..end], now);
                offset = end;
            }
            Op::Line(seed) => {
                let script = Script::generate(&mut Unstructured::new(seed), usize::MAX);
                push_stdout(&mut bridge, &contract, &script.bytes, now);
            }
            Op::Stdout(bytes) => push_stdout(&mut bridge, &contract, bytes, now),
            Op::Stderr(bytes) => {
                let result = bridge.push_stderr(bytes, now);
                if contract.exited {
                    assert_eq!(result, Err(BridgeError::AfterExit));
                } else {
                    assert_eq!(result, Ok(()));
                }
            }
            Op::Exit(code) => exit(&mut bridge, &mut contract, ExitStatus::Code(*code), now),
            Op::Signal(signal) => {
                exit(&mut bridge, &mut contract, ExitStatus::Signal(*signal), now)
            }
            Op::Wait(ms) => {
                let until = now.saturating_add(u64::from(*ms));
                run_deadlines(&mut bridge, &mut contract, stream, &mut now, until, 1000);
                now = until;
                bridge.handle_timeout(now);
            }
            Op::Tick(ms) => {
                now += u64::from(*ms);
                bridge.handle_timeout(now);
            }
            Op::ClientGone => {
                if contract.ends == 0 {
                    contract.gone = true;
                }
                bridge.client_gone(now);
            }
        }
        contract.drain(&mut bridge, stream);
    }
    // The rest of the run: the agent exits, then time passes until nothing is due.
    if !contract.exited {
        exit(&mut bridge, &mut contract, ExitStatus::Code(0), now);
        contract.drain(&mut bridge, stream);
    }
    // Once the agent has exited, the response ends at once: nothing is left to wait for.
    let left_over = run_deadlines(&mut bridge, &mut contract, stream, &mut now, u64::MAX, 10);
    assert!(!left_over, "deadlines keep coming after the agent exited");
    contract.finish(dialect, stream, &model, &tool_names);
}

/// Pushes stdout, which is refused after the exit and accepted (maybe ignored) before.
fn push_stdout(bridge: &mut Bridge, contract: &Contract, bytes: &[u8], now: u64) {
    let result = bridge.push_stdout(bytes, now);
    if contract.exited {
        assert_eq!(result, Err(BridgeError::AfterExit));
    } else {
        assert_eq!(result, Ok(()));
    }
}

/// Reports the exit; a second report is refused.
fn exit(bridge: &mut Bridge, contract: &mut Contract, status: ExitStatus, now: u64) {
    let result = bridge.agent_exited(status, now);
    if contract.exited {
        assert_eq!(result, Err(BridgeError::ExitedTwice));
    } else {
        assert_eq!(result, Ok(()));
        contract.exited = true;
    }
}

/// Handles the deadlines up to `until`, each at its own time, checking that each one
/// handled moves the next one past it. After `max` of them (keep-alives every
/// millisecond over a long wait) the rest are left to a late call at `until`, as a
/// driver that fell behind would do; returns whether deadlines were left over.
fn run_deadlines(
    bridge: &mut Bridge,
    contract: &mut Contract,
    stream: bool,
    now: &mut u64,
    until: u64,
    max: usize,
) -> bool {
    let mut handled = 0;
    while let Some(deadline) = bridge.poll_timeout() {
        if deadline > until {
            return false;
        }
        if handled == max {
            return true;
        }
        *now = (*now).max(deadline);
        bridge.handle_timeout(*now);
        contract.drain(bridge, stream);
        if let Some(next) = bridge.poll_timeout() {
            assert!(
                next > *now,
                "handling the deadline at {now} left the next one at {next}"
            );
        }
        handled += 1;
    }
    false
}

/// Builds a [`BridgeInput`] from bytes, as libFuzzer's `arbitrary` glue does, and runs
/// [`bridge`]; for tests and seed replays. Bytes that build no input are skipped.
pub fn bridge_bytes(data: &[u8]) {
    if let Ok(input) = BridgeInput::arbitrary_take_rest(Unstructured::new(data)) {
        bridge(input);
    }
}
