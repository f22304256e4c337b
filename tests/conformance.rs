//! Real-capture conformance: every cursor-agent transcript in `../shared/fixtures/cursor-agent`
//! (present beside the repository in CI) replayed through the core, and the responses
//! checked against the OpenAI chunk contract and against the capture's own `result`.
//! The project's own transcripts in `tests/fixtures` go through the same checks. That every
//! chunking gives the same bytes is checked for every dialect in `tests/dialects.rs`.

mod support;

use std::path::PathBuf;

use support::{check_stream, expected_result, has_thinking, has_usage, respond};

fn check_transcript(path: &PathBuf) -> &'static str {
    let bytes = std::fs::read(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    // The same bytes in every chunking: `tests/dialects.rs`.
    let reference = respond(&bytes, usize::MAX, true, true);
    let Some(expected) = expected_result(&bytes) else {
        // No result: the run failed. Before any answer the failure has its true status and
        // an OpenAI error body; after it, an in-band error frame then [DONE].
        if reference.status == 200 {
            let summary = check_stream(&reference.body);
            assert_eq!(summary.errors.len(), 1, "{name}: in-band error");
            assert_eq!(summary.done, 1, "{name}");
            assert!(summary.finish_reasons.is_empty(), "{name}");
        } else {
            let body: serde_json::Value = serde_json::from_slice(&reference.body).unwrap();
            assert!(body["error"]["message"].is_string(), "{name}: error body");
            assert!(reference.status >= 400, "{name}");
        }
        // Non-streaming: the failure's status and an error body, always.
        let plain = respond(&bytes, 4096, false, false);
        assert!(plain.status >= 400, "{name}");
        if reference.status != 200 {
            assert_eq!(plain.status, reference.status, "{name}");
        }
        let body: serde_json::Value = serde_json::from_slice(&plain.body).unwrap();
        assert!(body["error"]["message"].is_string(), "{name}");
        return "failure";
    };
    assert_eq!(reference.status, 200, "{name}");
    let summary = check_stream(&reference.body);
    assert_eq!(
        summary.content, expected,
        "{name}: streamed text equals result.result"
    );
    assert_eq!(summary.done, 1, "{name}: one [DONE]");
    assert_eq!(summary.finish_reasons, ["stop"], "{name}: one finish chunk");
    assert_eq!(
        summary.tool_call_deltas, 0,
        "{name}: no tool_calls in agent mode"
    );
    assert!(summary.errors.is_empty(), "{name}");
    if has_thinking(&bytes) {
        assert!(!summary.reasoning.is_empty(), "{name}: reasoning present");
    }
    assert_eq!(
        summary.usage_chunks.len(),
        usize::from(has_usage(&bytes)),
        "{name}: usage chunk iff reported"
    );
    for usage in &summary.usage_chunks {
        let prompt = usage["prompt_tokens"].as_u64().unwrap();
        let completion = usage["completion_tokens"].as_u64().unwrap();
        assert_eq!(
            usage["total_tokens"].as_u64().unwrap(),
            prompt + completion,
            "{name}"
        );
        assert!(
            usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap()
                <= prompt,
            "{name}"
        );
    }
    // Without include_usage there is no usage chunk at all.
    let no_usage = check_stream(&respond(&bytes, 4096, true, false).body);
    assert!(no_usage.usage_chunks.is_empty(), "{name}");
    // The non-streaming body carries the same text.
    let plain = respond(&bytes, 4096, false, false);
    assert_eq!(plain.status, 200, "{name}");
    let body: serde_json::Value = serde_json::from_slice(&plain.body).unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        expected.as_str(),
        "{name}"
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop", "{name}");
    assert_eq!(body.get("usage").is_some(), has_usage(&bytes), "{name}");
    "answer"
}

fn check_all(files: &[PathBuf], what: &str) {
    let mut answers = 0;
    let mut failures = 0;
    for path in files {
        match check_transcript(path) {
            "answer" => answers += 1,
            _ => failures += 1,
        }
    }
    println!(
        "{what}: checked {} transcripts ({answers} answers, {failures} failures)",
        files.len()
    );
}

#[test]
fn real_captures() {
    let Some(files) = support::shared_captures() else {
        println!("real-capture conformance skipped: ../shared/fixtures/cursor-agent is absent");
        return;
    };
    assert!(!files.is_empty());
    check_all(&files, "real captures");
}

#[test]
fn project_transcripts() {
    check_all(&support::project_fixtures(), "project transcripts");
}
