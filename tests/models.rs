//! The model catalogue reader on a real `agent models` listing (when
//! `../shared/fixtures/cursor-agent` is present), on the listing redrawn the ways terminals
//! and CLI versions draw it, and on the project's own listings in `tests/fixtures/models`.

#[path = "support/shared.rs"]
mod shared;

use std::path::Path;

use agentwire::cursor::{ModelEntry, parse_models};

fn own(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/models")
            .join(name),
    )
    .unwrap()
}

/// (id, name, default, current) for compact comparisons.
fn table(models: &[ModelEntry]) -> Vec<(&str, &str, bool, bool)> {
    models
        .iter()
        .map(|m| (m.id.as_str(), m.name.as_str(), m.is_default, m.is_current))
        .collect()
}

#[test]
fn real_listings() {
    let Some(fixtures) = shared::fixtures("models::real_listings") else {
        return;
    };
    // At least one listing: `files` fails on none.
    for path in fixtures.files("cursor-agent", "models.txt") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let models = parse_models(&bytes);
        // Independently: the entry lines are those with " - " whose first word has no
        // colon (the footer tip has "Tip:").
        let text = String::from_utf8(bytes.clone()).unwrap();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once(" - "))
            .map(|(id, _)| id)
            .filter(|id| !id.contains(' ') && !id.contains(':'))
            .collect();
        assert!(expected.len() > 100, "{name}: a real catalogue");
        assert_eq!(
            models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            expected,
            "{name}"
        );
        for model in &models {
            assert!(!model.name.is_empty(), "{name}: {model:?}");
            assert!(
                !model.name.ends_with("(current)") && !model.name.ends_with("(default)"),
                "{name}: markers left in {model:?}"
            );
        }
        assert_eq!(
            models.iter().filter(|m| m.is_default).count(),
            1,
            "{name}: one default"
        );
        assert!(
            models.iter().filter(|m| m.is_current).count() <= 1,
            "{name}"
        );
        assert!(
            models.iter().any(|m| m.name.ends_with("(NO ZDR)")) || !text.contains("(NO ZDR)"),
            "{name}: other parentheses stay in the name"
        );

        // The same listing in colour, with CRLF, and with the older combined markers.
        let coloured: String = text
            .lines()
            .map(|l| match l.split_once(" - ") {
                Some((id, rest)) => format!("\x1b[36m{id}\x1b[39m - {rest}\x1b[0m\r\n"),
                None => format!("\x1b[1m{l}\x1b[22m\r\n"),
            })
            .collect();
        assert_eq!(
            parse_models(coloured.as_bytes()),
            models,
            "{name}: coloured"
        );
        let combined = text
            .replace("(current)", "(current, default)")
            .replace("(default)", "(current, default)");
        let drifted = parse_models(combined.as_bytes());
        assert_eq!(table(&drifted).len(), models.len(), "{name}");
        for (old, new) in models.iter().zip(&drifted) {
            assert_eq!((&old.id, &old.name), (&new.id, &new.name), "{name}");
            let marked = old.is_current || old.is_default;
            assert_eq!((new.is_current, new.is_default), (marked, marked), "{name}");
        }
    }
}

#[test]
fn coloured_listing_with_combined_markers() {
    let models = parse_models(&own("coloured.txt"));
    assert_eq!(
        table(&models),
        [
            ("auto", "Auto", false, false),
            ("gpt-5", "GPT-5", true, true),
            (
                "sonnet-4.5-thinking",
                "Claude 4.5 Sonnet (Thinking)",
                false,
                false
            ),
            ("grok", "Grok", false, false),
        ]
    );
}

#[test]
fn crlf_listing_with_separate_markers() {
    let models = parse_models(&own("drift.txt"));
    assert_eq!(
        table(&models),
        [
            ("auto", "Auto", true, false),
            ("composer-2.5", "Composer 2.5", false, true),
            (
                "claude-fable-5-thinking-high",
                "Claude Fable 5 1M Thinking (NO ZDR)",
                false,
                false
            ),
            (
                "gpt-5.3-codex-xhigh-fast",
                "Codex 5.3 Extra High Fast",
                false,
                false
            ),
        ]
    );
}
