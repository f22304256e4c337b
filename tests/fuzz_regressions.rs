//! Regression tests for what fuzzing found, one per finding, each reduced to the
//! smallest input that shows it.

use agentwire::cursor::{Decoder, DecoderConfig};

/// Decodes `pieces` and returns every event, as text.
fn decode(config: &DecoderConfig, pieces: &[&[u8]]) -> Vec<String> {
    let mut decoder = Decoder::new(config.clone());
    let mut events = Vec::new();
    for piece in pieces {
        decoder.push_stdout(piece).unwrap();
        while let Some(event) = decoder.poll_event() {
            events.push(format!("{event:?}"));
        }
    }
    decoder.push_eof().unwrap();
    while let Some(event) = decoder.poll_event() {
        events.push(format!("{event:?}"));
    }
    events
}

/// Found by the `decoder` target. A line over the limit is reported by the framer when
/// the limit is crossed, with the bytes seen so far ("at least N bytes"); that count goes
/// into the decoder's notes and from there into the failure message, so the same stdout
/// gives a different error message (and SSE error frame, and JSON error body) depending
/// on how it was split into reads. `push_stdout` promises any chunking.
#[test]
fn overlong_line_failure_does_not_depend_on_chunking() {
    let config = DecoderConfig {
        max_line_len: 16,
        ..DecoderConfig::default()
    };
    let input = b"0123456789abcdefghijklmnop\n";
    let whole = decode(&config, &[input]);
    let split = decode(&config, &[&input[..20], &input[20..]]);
    assert_eq!(split, whole);
}

/// Found while writing the `decoder_mutated` line table. A JSON array with one element per
/// field of the decoder's line envelope is read as that envelope (serde's derived
/// `Deserialize` accepts a struct's sequence form), so `["result","success",…]` ends the
/// turn like a `result` event. `DecoderStats::non_json` documents such lines as "not JSON
/// objects (kept as notes)".
#[test]
fn json_arrays_are_not_events() {
    let line = br#"["result","success",null,{},null,null,null,"done",null,false,null,null,"s",null]
"#;
    let mut decoder = Decoder::default();
    decoder.push_stdout(line).unwrap();
    decoder.push_eof().unwrap();
    let mut events = Vec::new();
    while let Some(event) = decoder.poll_event() {
        events.push(format!("{event:?}"));
    }
    assert_eq!(decoder.stats().non_json, 1, "events: {events:?}");
    assert!(!decoder.saw_result(), "events: {events:?}");
}

/// Found by the `request` target. A Responses request whose `input` items are all of
/// kinds the agent cannot read (hosted-tool artefacts, reasoning, item references) and
/// that has no `instructions` was accepted with an empty conversation: an agent would
/// start with nothing to answer. Every dialect refuses a request without messages with a
/// 400 naming the field.
#[test]
fn responses_input_of_unreadable_items_only_is_refused() {
    use agentwire::api::RequestLimits;
    use agentwire::openai::responses::parse_request;

    let limits = RequestLimits::default();
    for input in [
        r#"[{"type":"web_search"}]"#,
        r#"[{"type":"reasoning","summary":[]},{"type":"item_reference","id":"msg_1"}]"#,
        r#"[{"id":"msg_1"}]"#,
    ] {
        let body = format!(r#"{{"model":"auto","input":{input}}}"#);
        let error = parse_request(body.as_bytes(), &limits).expect_err(input);
        assert_eq!(error.status(), 400, "{input}");
        assert_eq!(error.param.as_deref(), Some("input"), "{input}");
    }
    // The same items beside instructions, or beside a message, are a conversation.
    for body in [
        r#"{"model":"auto","instructions":"Be brief.","input":[{"type":"web_search"}]}"#,
        r#"{"model":"auto","input":[{"type":"web_search"},{"role":"user","content":"hi"}]}"#,
    ] {
        let request = parse_request(body.as_bytes(), &limits).expect(body);
        assert!(!request.conversation.messages.is_empty(), "{body}");
    }
}

/// Found by the `abi` target, a wrong rule of its own: it required that a decoder never
/// finish after a failure. A `result` ends a turn, an error result with a failure, and
/// the next turn's `result` finishes it; the events of both turns come out in order.
#[test]
fn a_turn_after_an_error_result_finishes() {
    let stdout = concat!(
        r#"{"type":"result","subtype":"error","is_error":true,"result":"boom"}"#,
        "\n",
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"hi"}"#,
        "\n",
    );
    let events = decode(&DecoderConfig::default(), &[stdout.as_bytes()]);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e.split(['(', ' ']).next().unwrap())
        .collect();
    assert_eq!(kinds, ["Failed", "TextDelta", "Finish"], "{events:?}");
}
