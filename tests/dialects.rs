//! Every API dialect through the Bridge: each encoder gives the same response whatever the
//! chunking of the agent's output, on every project transcript and real capture, and keeps
//! its own contract on each. A dialect adds itself here with one line per response kind.

mod support;

use std::path::Path;

use agentwire::bridge::Dialect;
use agentwire_testkit::messages;
use serde_json::{Value, json};
use support::drive::{
    Response, chunkings, drive, every_transcript, every_transcript_in_every_chunking, hello,
};
use support::{check_stream, decode, expected_result, responses, text_of};

/// Chat Completions: a stream that keeps the chunk contract, or an error body.
fn check_chat_stream(path: &Path, _: &[u8], response: &Response) {
    if response.status == 200 {
        assert_eq!(
            response.content_type,
            "text/event-stream",
            "{}",
            path.display()
        );
        let summary = check_stream(&response.body);
        assert_eq!(summary.done, 1, "{}", path.display());
    } else {
        check_chat_error(path, response);
    }
}

/// Chat Completions: one JSON body, the completion or an error.
fn check_chat_body(path: &Path, _: &[u8], response: &Response) {
    assert_eq!(response.content_type, "application/json");
    if response.status == 200 {
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        assert_eq!(body["object"], "chat.completion", "{}", path.display());
    } else {
        check_chat_error(path, response);
    }
}

fn check_chat_error(path: &Path, response: &Response) {
    assert!(response.status >= 400, "{}", path.display());
    assert!(response.retryable.is_some(), "{}", path.display());
    let body: Value = serde_json::from_slice(&response.body).unwrap();
    assert!(body["error"]["message"].is_string(), "{}", path.display());
}

#[test]
fn chat_completions_stream() {
    let request = hello(Dialect::ChatCompletions, true);
    every_transcript_in_every_chunking(Dialect::ChatCompletions, &request, check_chat_stream);
}

#[test]
fn chat_completions_body() {
    let request = hello(Dialect::ChatCompletions, false);
    every_transcript_in_every_chunking(Dialect::ChatCompletions, &request, check_chat_body);
}

/// Anthropic Messages: a stream that keeps the event and block state machine, or an
/// Anthropic error body; the same content as the body of the same run.
fn check_messages_stream(path: &Path, bytes: &[u8], response: &Response) {
    if response.status != 200 {
        return check_messages_error(path, response);
    }
    assert_eq!(response.content_type, "text/event-stream");
    let stream = messages::check_stream(&response.body, "auto");
    let body = drive(
        Dialect::Messages,
        &hello(Dialect::Messages, false),
        &[bytes],
    );
    let body: Value = serde_json::from_slice(&body.body).unwrap();
    match stream.error {
        None => assert_eq!(
            (
                json!(stream.content),
                json!(stream.stop_reason),
                stream.usage
            ),
            (
                body["content"].clone(),
                body["stop_reason"].clone(),
                body["usage"].clone()
            ),
            "{}",
            path.display()
        ),
        Some(error) => assert_eq!(error["type"], "error"),
    }
}

/// Anthropic Messages: one `message` body, or an Anthropic error body.
fn check_messages_body(path: &Path, _: &[u8], response: &Response) {
    assert_eq!(response.content_type, "application/json");
    if response.status == 200 {
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        messages::check_body(&body, "auto");
    } else {
        check_messages_error(path, response);
    }
}

fn check_messages_error(path: &Path, response: &Response) {
    assert!(response.status >= 400, "{}", path.display());
    assert!(response.retryable.is_some(), "{}", path.display());
    messages::check_error_object(&serde_json::from_slice(&response.body).unwrap());
}

#[test]
fn messages_stream() {
    let request = hello(Dialect::Messages, true);
    every_transcript_in_every_chunking(Dialect::Messages, &request, check_messages_stream);
}

#[test]
fn messages_body() {
    let request = hello(Dialect::Messages, false);
    every_transcript_in_every_chunking(Dialect::Messages, &request, check_messages_body);
}

/// The text a client must see: the transcript's own `result` when it succeeded (read from
/// its lines, not by the decoder under test); the text decoded before the failure
/// otherwise.
fn answer(transcript: &[u8]) -> String {
    expected_result(transcript).unwrap_or_else(|| text_of(&decode(transcript, usize::MAX)))
}

/// Responses: a stream that keeps the item state machine and carries the agent's text, or
/// an OpenAI error body.
fn check_responses_stream(path: &Path, transcript: &[u8], response: &Response) {
    if response.status == 200 {
        assert_eq!(response.content_type, "text/event-stream");
        let summary = responses::check_responses_stream(&response.body);
        assert_eq!(summary.text, answer(transcript), "{}", path.display());
    } else {
        check_chat_error(path, response);
    }
}

/// Responses: one `response` object carrying the agent's text, or an OpenAI error body.
fn check_responses_body(path: &Path, transcript: &[u8], response: &Response) {
    assert_eq!(response.content_type, "application/json");
    if response.status == 200 {
        let body: Value = serde_json::from_slice(&response.body).unwrap();
        let text = responses::check_responses_body(&body);
        assert_eq!(text, answer(transcript), "{}", path.display());
    } else {
        check_chat_error(path, response);
    }
}

#[test]
fn responses_stream() {
    let request = hello(Dialect::Responses, true);
    every_transcript_in_every_chunking(Dialect::Responses, &request, check_responses_stream);
}

#[test]
fn responses_body() {
    let request = hello(Dialect::Responses, false);
    every_transcript_in_every_chunking(Dialect::Responses, &request, check_responses_body);
}

/// The chunkings every dialect is checked in rebuild each transcript, and between them
/// every offset of stdout ends a push: the Bridge is split everywhere, at a cost linear in
/// the transcript (a few hundred runs, not one per byte).
#[test]
fn every_offset_ends_a_push() {
    for path in every_transcript() {
        let bytes = std::fs::read(&path).unwrap();
        let mut ends = vec![false; bytes.len() + 1];
        let runs = chunkings(&bytes);
        for (how, pieces) in &runs {
            assert_eq!(pieces.concat(), bytes, "{}: {how}", path.display());
            let mut at = 0;
            for piece in pieces {
                at += piece.len();
                ends[at] = true;
            }
        }
        let missed: Vec<usize> = (1..bytes.len()).filter(|at| !ends[*at]).collect();
        assert!(missed.is_empty(), "{}: {missed:?}", path.display());
        let lines = memchr::memchr_iter(b'\n', &bytes).count();
        assert!(
            runs.len() <= 2 * lines + 128 || bytes.len() <= 2048 + 1,
            "{}: {} runs",
            path.display(),
            runs.len()
        );
    }
}
