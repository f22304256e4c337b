//! The cursor-agent decoder on the project's own transcripts: identical events whole,
//! byte at a time and split at every offset, and the behaviour each transcript exists for.

mod support;

use agentwire::event::FinishReason;
use support::{
    Owned, decode, decode_pieces, expected_result, project_fixtures, reasoning_of, text_of,
    texts_of,
};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

#[test]
fn every_fixture_decodes_identically_in_any_chunking() {
    let fixtures = project_fixtures();
    assert!(fixtures.len() >= 7);
    for path in fixtures {
        let bytes = std::fs::read(&path).unwrap();
        let whole = decode(&bytes, usize::MAX);
        assert_eq!(
            decode(&bytes, 1),
            whole,
            "{}: byte at a time",
            path.display()
        );
        for at in 0..=bytes.len() {
            assert_eq!(
                decode_pieces(&[&bytes[..at], &bytes[at..]]),
                whole,
                "{}: split at {at}",
                path.display()
            );
        }
        if let Some(expected) = expected_result(&bytes) {
            assert_eq!(text_of(&whole), expected, "{}", path.display());
        }
    }
}

#[test]
fn recaps_before_tool_query_and_end_are_removed() {
    let events = decode(&fixture("partial_recaps.jsonl"), usize::MAX);
    let text = text_of(&events);
    assert_eq!(
        text,
        "Let me check the file.I'll search the web for that.The file says **hello** — and the web search was rejected."
    );
    // Every fragment is its own delta: nothing was held back but the recaps.
    let deltas = events
        .iter()
        .filter(|e| matches!(e, Owned::Text(_)))
        .count();
    assert_eq!(deltas, 5 + 7 + 4);
    assert_eq!(events.last(), Some(&Owned::Finish(FinishReason::Stop)));
}

#[test]
fn repeated_tokens_are_kept() {
    let events = decode(&fixture("repeated_tokens.jsonl"), usize::MAX);
    let texts = texts_of(&events);
    assert_eq!(
        texts,
        [
            "ha", "ha", "\n", "\n", "Hi", "**", "bold", "**", " and ", "**", "more", "**", "a",
            "ab"
        ]
    );
}

#[test]
fn multibyte_text_survives_every_split() {
    let events = decode(&fixture("multibyte.jsonl"), 1);
    assert_eq!(text_of(&events), "Café — “quoted” 😀 日本語 ®");
    assert_eq!(reasoning_of(&events), "Ünïcödé thinking — ok 🤔");
}

#[test]
fn parallel_calls_out_of_order_rejections_and_orphans() {
    let events = decode(&fixture("parallel_tools.jsonl"), usize::MAX);
    let activity: Vec<(String, String, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            Owned::Activity {
                call_id,
                phase,
                summary,
                arguments,
                ..
            } => Some((
                call_id.clone(),
                format!("{phase} {summary}"),
                arguments.clone(),
            )),
            _ => None,
        })
        .collect();
    let phases: Vec<&str> = activity.iter().map(|(_, p, _)| p.as_str()).collect();
    assert_eq!(
        phases,
        [
            "started sleep 2",
            "started sleep 1",
            "completed:success:true sleep 1",
            "completed:success:true sleep 2",
            "started curl -sI https://example.com",
            // Rejected completions carry no args: they come from the cached start.
            "completed:rejected:true curl -sI https://example.com",
            // A completion with no start and no args.
            "completed:rejected:false ",
        ]
    );
    assert!(
        activity[0].0.contains('\n'),
        "the agent's ids are passed on verbatim"
    );
    assert!(
        activity[5]
            .2
            .as_deref()
            .unwrap()
            .contains("\"command\":\"curl -sI https://example.com\"")
    );
    assert_eq!(activity[6].2, None);
    assert_eq!(
        text_of(&events),
        "Running both in parallel.Both sleeps finished; curl and the fetch were rejected."
    );
}

#[test]
fn no_usage_means_no_usage_event() {
    let events = decode(&fixture("no_usage.jsonl"), usize::MAX);
    assert!(!events.iter().any(|e| matches!(e, Owned::Usage(_))));
    assert_eq!(events.last(), Some(&Owned::Finish(FinishReason::Stop)));
    let with = decode(&fixture("partial_recaps.jsonl"), usize::MAX);
    let usage: Vec<&Owned> = with
        .iter()
        .filter(|e| matches!(e, Owned::Usage(_)))
        .collect();
    assert_eq!(usage.len(), 1);
}

#[test]
fn failure_without_result_is_classified_from_the_trailing_line() {
    let events = decode(&fixture("failure_no_result.jsonl"), 7);
    let progress = events
        .iter()
        .filter(|e| matches!(e, Owned::Progress(_)))
        .count();
    assert_eq!(progress, 9);
    match events.last().unwrap() {
        Owned::Failed(message) => {
            assert!(message.starts_with("Unavailable:"), "{message}");
            assert!(message.contains("upstream connection failed"), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn thinking_only_turn_has_reasoning_and_no_text() {
    let events = decode(&fixture("thinking_only.jsonl"), usize::MAX);
    assert_eq!(text_of(&events), "");
    assert_eq!(
        reasoning_of(&events),
        "The word is \"pomegranate\".Stay silent."
    );
}

#[test]
fn a_missing_suffix_is_recovered_from_the_result() {
    // A partial segment whose last fragment repeats everything before it, with no recap:
    // the lookahead rule holds it as a recap; the result shows it was text.
    let lines = [
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ha"}]},"session_id":"s","timestamp_ms":1}"#,
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ha"}]},"session_id":"s","timestamp_ms":2}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"haha","session_id":"s"}"#,
    ];
    let events = decode(lines.join("\n").as_bytes(), usize::MAX);
    assert_eq!(text_of(&events), "haha");
}

#[test]
fn divergent_result_is_never_emitted_twice() {
    let lines = [
        r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hello"}]},"session_id":"s"}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Goodbye","session_id":"s"}"#,
    ];
    let events = decode(lines.join("\n").as_bytes(), usize::MAX);
    assert_eq!(text_of(&events), "Hello");
}

#[test]
fn error_result_is_a_failure() {
    let line = r#"{"type":"result","subtype":"error","is_error":true,"error":{"message":"You've hit your usage limit"},"session_id":"s"}"#;
    let events = decode(line.as_bytes(), usize::MAX);
    match events.last().unwrap() {
        Owned::Failed(message) => assert!(message.starts_with("UsageLimit:"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_lines_are_tolerated() {
    let input = concat!(
        "\u{0}\u{0}garbage\n",
        "{\"type\":12}\n",
        "[1,2,3]\n",
        "{\"type\":\"assistant\",\"message\":{\"content\":\"plain string content\"}}\n",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"image\",\"text\":\"no\"},{\"type\":\"text\",\"text\":\" and parts\"}]}}\n",
        "{\"type\":\"assistant\",\"message\":7}\n",
        "{\"type\":\"tool_call\",\"subtype\":\"started\",\"call_id\":5,\"tool_call\":{\"x\":1}}\n",
        "{\"type\":\"thinking\",\"subtype\":\"delta\",\"text\":{\"nested\":true}}\n",
        "{\"type\":\"future_event\",\"subtype\":\"whatever\"}\n",
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"plain string content and parts\",\"usage\":{\"inputTokens\":\"12\",\"outputTokens\":-1}}\n",
    );
    let mut bytes = input.as_bytes().to_vec();
    bytes.extend_from_slice(b"\xff\xfe\n");
    let events = decode(&bytes, 3);
    assert_eq!(text_of(&events), "plain string content and parts");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Owned::Usage(u) if u.contains("input_tokens: 12")))
    );
    assert_eq!(events.last(), Some(&Owned::Finish(FinishReason::Stop)));
}

#[test]
fn empty_output_is_a_failure() {
    let events = decode(b"", usize::MAX);
    assert!(
        matches!(events.as_slice(), [Owned::Failed(m)] if m.contains("no output")),
        "{events:?}"
    );
}

#[test]
fn push_after_eof_is_misuse() {
    let mut decoder = agentwire::cursor::Decoder::default();
    decoder.push_eof().unwrap();
    assert_eq!(
        decoder.push_stdout(b"{}\n"),
        Err(agentwire::cursor::DecoderError::AfterEof)
    );
    assert!(decoder.push_eof().is_ok(), "a second end is a no-op");
}

#[test]
fn over_limit_line_is_dropped_and_decoding_resumes() {
    let config = agentwire::cursor::DecoderConfig {
        max_line_len: 64,
        ..Default::default()
    };
    let mut decoder = agentwire::cursor::Decoder::new(config);
    let long = format!(
        "{{\"type\":\"assistant\",\"message\":{{\"content\":\"{}\"}}}}\n",
        "x".repeat(200)
    );
    decoder.push_stdout(long.as_bytes()).unwrap();
    decoder
        .push_stdout(b"{\"type\":\"result\",\"result\":\"\"}\n")
        .unwrap();
    decoder.push_eof().unwrap();
    let mut kinds = Vec::new();
    while let Some(event) = decoder.poll_event() {
        kinds.push(support::own(&event));
    }
    assert_eq!(kinds, [Owned::Finish(FinishReason::Stop)]);
    assert_eq!(decoder.stats().bad_lines, 1);
}

#[test]
fn events_without_text_decide_nothing() {
    let events = decode(&fixture("recap_edges.jsonl"), usize::MAX);
    let texts = texts_of(&events);
    // "Hi there" is not released by the empty event or the tool_use-only event that
    // follow it: it stays a recap, dropped at the tool call.
    assert_eq!(
        texts[..2],
        ["Hi", " there"],
        "an empty assistant event released the recap: {texts:?}"
    );
    assert_eq!(text_of(&events), "Hi thereLet me look.Hello world!");
}

#[test]
fn a_recap_that_extends_the_segment_adds_only_its_tail() {
    let events = decode(&fixture("recap_edges.jsonl"), usize::MAX);
    let texts = texts_of(&events);
    assert_eq!(
        texts,
        [
            "Hi", " there", "Let me", " look", ".", "Hello", " world", "!"
        ]
    );
    // Before a tool call and before the result alike.
    let recaps = {
        let mut decoder = agentwire::cursor::Decoder::default();
        decoder.push_stdout(&fixture("recap_edges.jsonl")).unwrap();
        decoder.push_eof().unwrap();
        while decoder.poll_event().is_some() {}
        *decoder.stats()
    };
    assert_eq!(
        (recaps.recaps, recaps.reconciled, recaps.divergences),
        (3, 0, 0)
    );
}

#[test]
fn a_fragment_that_extends_the_segment_is_still_a_fragment() {
    // "a" then "ab": "ab" starts with the segment, but another fragment follows, so it
    // was text. Then the final recap "aabc".
    let line = |text: &str| {
        format!(
            "{{\"type\":\"assistant\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}},\"timestamp_ms\":1}}\n"
        )
    };
    let bytes = [
        line("a"),
        line("ab"),
        line("c"),
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"aabc\"}]}}\n".to_owned(),
        "{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"aabc\"}\n".to_owned(),
    ]
    .concat();
    for chunk in [1, 5, usize::MAX] {
        let events = decode(bytes.as_bytes(), chunk);
        assert_eq!(texts_of(&events), ["a", "ab", "c"], "chunk {chunk}");
    }
}

#[test]
fn thinking_is_never_deduplicated() {
    let events = decode(&fixture("thinking_repeats.jsonl"), usize::MAX);
    let reasoning: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Owned::Reasoning(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, ["ok", "ok", "okok", "\n", "okok\n"]);
    assert_eq!(reasoning_of(&events), "okokokok\nokok\n");
    assert_eq!(text_of(&events), "Done");
}

#[test]
fn surrogate_pairs_split_across_fragments_are_joined() {
    let bytes = fixture("split_surrogates.jsonl");
    for chunk in [1, 3, usize::MAX] {
        let events = decode(&bytes, chunk);
        assert_eq!(
            text_of(&events),
            "Smile 😀!Half \u{fffd} gone and \u{fffd} 😃 end bye \u{fffd}",
            "chunk {chunk}"
        );
        assert_eq!(reasoning_of(&events), "Thinking 🤔 hard", "chunk {chunk}");
        // The joined recaps matched: nothing was emitted twice or repaired.
        assert!(!text_of(&events).contains("Smile 😀!Smile"));
    }
    let mut decoder = agentwire::cursor::Decoder::default();
    decoder.push_stdout(&bytes).unwrap();
    decoder.push_eof().unwrap();
    while decoder.poll_event().is_some() {}
    let stats = decoder.stats();
    assert_eq!(
        (stats.recaps, stats.divergences, stats.reconciled),
        (2, 0, 0)
    );
}

#[test]
fn a_byte_order_mark_at_the_start_is_skipped() {
    let bytes = fixture("bom.jsonl");
    assert!(bytes.starts_with(b"\xEF\xBB\xBF"));
    for chunk in [1, 2, usize::MAX] {
        let events = decode(&bytes, chunk);
        assert_eq!(texts_of(&events), ["Hi", "!"], "chunk {chunk}");
    }
    // Only at the very start: anywhere else it is part of a line (and breaks it).
    let mut decoder = agentwire::cursor::Decoder::default();
    decoder.push_stdout(&bytes).unwrap();
    decoder.push_eof().unwrap();
    while decoder.poll_event().is_some() {}
    assert_eq!(decoder.stats().non_json, 0);
    // Bytes that begin like a mark but are not one are decoded, not dropped.
    let not_a_mark = b"\xEF\xBBx\n{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"\"}\n";
    for chunk in [1, usize::MAX] {
        let events = decode(not_a_mark, chunk);
        assert_eq!(events.last(), Some(&Owned::Finish(FinishReason::Stop)));
        let mut decoder = agentwire::cursor::Decoder::default();
        for piece in not_a_mark.chunks(chunk.min(not_a_mark.len())) {
            decoder.push_stdout(piece).unwrap();
        }
        decoder.push_eof().unwrap();
        while decoder.poll_event().is_some() {}
        assert_eq!(
            decoder.stats().bad_lines,
            1,
            "the broken first line is counted"
        );
    }
    // A stream that is only the start of a mark.
    assert!(matches!(decode(b"\xEF", 1).last(), Some(Owned::Failed(_))));
}

#[test]
fn an_error_result_is_a_failure_not_an_answer() {
    let events = decode(&fixture("error_result.jsonl"), usize::MAX);
    assert!(texts_of(&events).is_empty(), "{events:?}");
    match events.last() {
        Some(Owned::Failed(failure)) => assert!(failure.starts_with("UsageLimit"), "{failure}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    // `is_error` alone, and a subtype other than success alone, each make a failure.
    for result in [
        r#"{"type":"result","subtype":"success","is_error":true,"result":"Authentication required. Run cursor-agent login."}"#,
        r#"{"type":"result","subtype":"error_during_execution","result":"Authentication required. Run cursor-agent login."}"#,
    ] {
        let events = decode(format!("{result}\n").as_bytes(), usize::MAX);
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(
            matches!(&events[0], Owned::Failed(f) if f.starts_with("NotAuthenticated")),
            "{events:?}"
        );
    }
}

#[test]
fn cost_is_passed_through_as_reported() {
    for (result, cost) in [
        (
            r#""cost":0.0123,"usage":{"inputTokens":1,"outputTokens":2}"#,
            Some(0.0123),
        ),
        (
            r#""usage":{"inputTokens":1,"outputTokens":2,"totalCost":1.5}"#,
            Some(1.5),
        ),
        (
            r#""usage":{"inputTokens":1,"outputTokens":2,"total_cost":"0.25"}"#,
            Some(0.25),
        ),
        (
            r#""total_cost":2,"totalCost":3,"usage":{"inputTokens":1}"#,
            Some(3.0),
        ),
        (r#""usage":{"inputTokens":1,"outputTokens":2}"#, None),
        (r#""usage":{"inputTokens":1,"cost":"n/a"}"#, None),
    ] {
        let line =
            format!("{{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"\",{result}}}\n");
        let mut decoder = agentwire::cursor::Decoder::default();
        decoder.push_stdout(line.as_bytes()).unwrap();
        let mut seen = None;
        while let Some(event) = decoder.poll_event() {
            if let agentwire::event::Event::Usage(usage) = event {
                seen = Some(usage.cost);
            }
        }
        assert_eq!(seen, Some(cost), "{result}");
    }
}

#[test]
fn a_line_at_a_time_gives_the_same_events() {
    for path in project_fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let whole = decode(&bytes, usize::MAX);
        for chunk in [1, 7, 4096, usize::MAX] {
            let mut decoder = agentwire::cursor::Decoder::default();
            let mut events = Vec::new();
            for piece in bytes.chunks(chunk.min(bytes.len()).max(1)) {
                let mut input = piece;
                loop {
                    let used = decoder.push_stdout_line(input).unwrap();
                    assert!(used > 0 || input.is_empty());
                    input = &input[used..];
                    let before = events.len();
                    while let Some(event) = decoder.poll_event() {
                        events.push(support::own(&event));
                    }
                    // At most one line was decoded: a line yields at most a handful of events.
                    assert!(events.len() - before <= 4, "{}", path.display());
                    if input.is_empty() {
                        break;
                    }
                }
            }
            decoder.push_eof().unwrap();
            while let Some(event) = decoder.poll_event() {
                events.push(support::own(&event));
            }
            assert_eq!(events, whole, "{} in {chunk}-byte pieces", path.display());
        }
    }
}

/// The decoder after `pieces`, each pushed and drained, then the end of stdout.
fn decoder_after(
    config: agentwire::cursor::DecoderConfig,
    pieces: &[&[u8]],
) -> agentwire::cursor::Decoder {
    let mut decoder = agentwire::cursor::Decoder::new(config);
    for piece in pieces {
        decoder.push_stdout(piece).unwrap();
        while decoder.poll_event().is_some() {}
    }
    decoder.push_eof().unwrap();
    while decoder.poll_event().is_some() {}
    decoder
}

#[test]
fn retries_count_reconnects_and_retries() {
    let lines = [
        (
            r#"{"type":"system","subtype":"init","model":"Composer"}"#,
            0,
        ),
        (
            r#"{"type":"connection","subtype":"reconnecting","attempt":1}"#,
            1,
        ),
        // Coming back is no new attempt.
        (r#"{"type":"connection","subtype":"reconnected"}"#, 1),
        (r#"{"type":"retry","subtype":"starting","attempt":2}"#, 2),
        (r#"{"type":"connection","subtype":"reconnecting"}"#, 3),
        (r#"{"type":"connection","subtype":"status"}"#, 3),
        (
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"retry"}]}}"#,
            3,
        ),
        (
            r#"{"type":"result","subtype":"success","result":"retry"}"#,
            3,
        ),
    ];
    // Counted as each line arrives.
    let mut decoder = agentwire::cursor::Decoder::default();
    assert_eq!(decoder.retries(), 0);
    for (line, retries) in lines {
        decoder.push_stdout(format!("{line}\n").as_bytes()).unwrap();
        while decoder.poll_event().is_some() {}
        assert_eq!(decoder.retries(), retries, "after {line}");
    }
    // The same total whatever the chunking.
    let stdout: String = lines.iter().map(|(line, _)| format!("{line}\n")).collect();
    let bytes = stdout.as_bytes();
    for at in 0..=bytes.len() {
        let decoder = decoder_after(Default::default(), &[&bytes[..at], &bytes[at..]]);
        assert_eq!(decoder.retries(), 3, "split at {at}");
    }
}

#[test]
fn notes_keep_what_is_not_an_event_most_recent_last() {
    let stdout = concat!(
        "Warning: workspace not trusted\n",
        r#"{"type":"system","subtype":"init","model":"Composer"}"#,
        "\n",
        "[1,2]\n",
        r#"{"type":"error","error":{"message":"rate limited","code":429}}"#,
        "\n",
        r#"{"type":"error","error":"flat message"}"#,
        "\n",
        // An unknown event is counted, not noted; an assistant line is an event.
        r#"{"type":"telemetry","subtype":"x"}"#,
        "\n",
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}"#,
        "\n",
        "été\n",
    );
    let expected = "Warning: workspace not trusted\n[1,2]\nrate limited\nflat message\nété";
    let bytes = stdout.as_bytes();
    for at in 0..=bytes.len() {
        let decoder = decoder_after(Default::default(), &[&bytes[..at], &bytes[at..]]);
        assert_eq!(decoder.notes(), expected, "split at {at}");
        assert_eq!(decoder.retries(), 0);
    }
    // Only the most recent bytes are kept, cut on a character boundary ("été" is 5
    // bytes): 4 bytes would start inside the first "é", so 3 are kept.
    let limited = |max_notes| {
        let config = agentwire::cursor::DecoderConfig {
            max_notes,
            ..Default::default()
        };
        decoder_after(config, &[bytes]).notes().to_owned()
    };
    assert_eq!(limited(7), "e\nété");
    assert_eq!(limited(6), "\nété");
    assert_eq!(limited(5), "été");
    assert_eq!(limited(4), "té");
    assert_eq!(limited(usize::MAX), expected);
}
