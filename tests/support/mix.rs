//! Workloads built from transcripts, shared by the tests and the benchmarks.
//!
//! The *event mix* is every event line of a set of transcripts (everything but
//! `system`, `user` and `result` lines), repeated to a target size, behind one
//! `system/init` line and before one `result` line: one long turn with the real
//! proportions of deltas, tool calls, queries and progress events.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The transcripts a workload is built from: the real captures in
/// `../shared/fixtures/cursor-agent` when present, otherwise (or with
/// `AGENTWIRE_WORKLOAD=project`) the project's own.
pub fn workload_transcripts() -> (Vec<PathBuf>, &'static str) {
    // The repository: this package's directory, or the one above (the proxies' package
    // builds this file too).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("tests/fixtures").is_dir())
        .expect("the repository's tests/fixtures");
    let shared = root.join("../shared/fixtures/cursor-agent");
    let project_only = std::env::var("AGENTWIRE_WORKLOAD").is_ok_and(|w| w == "project");
    if shared.is_dir() && !project_only {
        (jsonl_files(&shared), "real captures")
    } else {
        (
            jsonl_files(&root.join("tests/fixtures")),
            "project transcripts",
        )
    }
}

/// The `*.jsonl` files of `dir`, sorted.
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The event mix of `files`, at least `target_len` bytes long.
pub fn event_mix(files: &[PathBuf], target_len: usize) -> Vec<u8> {
    let mut events = Vec::new();
    for file in files {
        let bytes = std::fs::read(file).unwrap();
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            let kind = value["type"].as_str().unwrap_or_default();
            if value.is_object() && !matches!(kind, "system" | "user" | "result") {
                events.extend_from_slice(line);
                events.push(b'\n');
            }
        }
    }
    assert!(!events.is_empty(), "no event lines in {files:?}");
    let mut mix = Vec::with_capacity(target_len + events.len() + 512);
    mix.extend_from_slice(INIT.as_bytes());
    while mix.len() < target_len {
        mix.extend_from_slice(&events);
    }
    mix.extend_from_slice(RESULT.as_bytes());
    mix
}

const INIT: &str = concat!(
    r#"{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","#,
    r#""session_id":"mix","model":"Composer 2","permissionMode":"default"}"#,
    "\n"
);

const RESULT: &str = concat!(
    r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":1,"#,
    r#""result":"","session_id":"mix","usage":{"inputTokens":10,"outputTokens":20}}"#,
    "\n"
);

/// A transcript of `count` lines of one tool result each `line_len` bytes long (file
/// content with escapes and multibyte text), between thinking and answer deltas.
pub fn huge_line_transcript(count: usize, line_len: usize) -> Vec<u8> {
    let mut out = String::from(INIT);
    let mut content = String::with_capacity(line_len);
    let words = [
        "fn",
        "main",
        "let",
        "mut",
        "self",
        "return",
        "\"quoted\"",
        "é—😀",
        "\t",
    ];
    let mut i = 0usize;
    while content.len() < line_len {
        content.push_str(words[i % words.len()]);
        content.push(if i % 11 == 10 { '\n' } else { ' ' });
        i += 1;
    }
    let content = serde_json::to_string(&content).unwrap();
    for n in 0..count {
        out.push_str(
            r#"{"type":"thinking","subtype":"delta","text":"Reading the file","session_id":"mix"}"#,
        );
        out.push('\n');
        out.push_str(&format!(
            r#"{{"type":"tool_call","subtype":"started","call_id":"t{n}","tool_call":{{"readToolCall":{{"args":{{"path":"/w/big.rs"}}}}}},"session_id":"mix"}}"#
        ));
        out.push('\n');
        out.push_str(&format!(
            r#"{{"type":"tool_call","subtype":"completed","call_id":"t{n}","tool_call":{{"readToolCall":{{"args":{{"path":"/w/big.rs"}},"result":{{"success":{{"content":{content},"totalLines":1}}}}}}}},"session_id":"mix"}}"#
        ));
        out.push('\n');
        out.push_str(r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"The file is long. "}]},"session_id":"mix"}"#);
        out.push('\n');
    }
    out.push_str(RESULT);
    out.into_bytes()
}
