//! Lone UTF-16 surrogate escapes in request bodies.
//!
//! JSON text may escape a UTF-16 surrogate (`\ud83d`) without its other half: JavaScript
//! clients write one whenever they slice a string inside a character (a tool output cut to
//! a length) and serialise it. `serde_json` rejects such a string, and a 400 there wedges
//! the conversation, since every later request carries the same history. So before
//! parsing, every unpaired surrogate escape is rewritten to `\uFFFD` (the replacement
//! character, which is what a lenient decoder reads there) — same length, so positions in
//! any later syntax error stay those of the body as sent. A pair (`\ud83d\ude00`) stays a
//! pair.
//!
//! The pass looks only at `\u` escapes, found with `memchr`'s substring search, so it is
//! linear and costs next to nothing on bodies with few of them (most bodies: JavaScript
//! clients escape only control characters that way). It needs no notion of where strings
//! start: outside a string a backslash is a syntax error either way, and inside one every
//! backslash starts an escape unless it ends one — so a `\u` counts when an even number
//! of backslashes precedes it: `\\ud800` is an escaped backslash followed by the text
//! `ud800`, and is left alone.

/// The body with every unpaired surrogate escape replaced by `\uFFFD`, or `None` when it
/// has none (the body is then parsed as sent, without a copy).
pub(super) fn replace_lone_surrogates(body: &[u8]) -> Option<Vec<u8>> {
    let mut fixed: Option<Vec<u8>> = None;
    let mut replace = |at: usize| {
        let fixed = fixed.get_or_insert_with(|| body.to_vec());
        fixed[at + 2..at + 6].copy_from_slice(b"FFFD");
    };
    // Where a high surrogate escape waits for its low half, which must follow at once.
    let mut high: Option<usize> = None;
    for at in memchr::memmem::find_iter(body, b"\\u") {
        let Some(unit) = body.get(at + 2..at + 6).and_then(hex4) else {
            continue;
        };
        if !starts_escape(body, at) {
            continue;
        }
        if let Some(waiting) = high.take() {
            if at == waiting + 6 && is_low(unit) {
                continue;
            }
            replace(waiting);
        }
        if is_high(unit) {
            high = Some(at);
        } else if is_low(unit) {
            replace(at);
        }
    }
    if let Some(waiting) = high {
        replace(waiting);
    }
    fixed
}

/// Whether the backslash at `at` starts an escape rather than ending one (`\\`): an even
/// number of backslashes precedes it. Linear over a whole body: the backslashes counted
/// back from one `\u` are never counted again from another, since a `u` lies between.
fn starts_escape(body: &[u8], at: usize) -> bool {
    let before = body[..at].iter().rev().take_while(|b| **b == b'\\').count();
    before % 2 == 0
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |value, digit| {
        let digit = char::from(*digit).to_digit(16)?;
        Some(value << 4 | digit as u16)
    })
}

fn is_high(unit: u16) -> bool {
    (0xd800..=0xdbff).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xdc00..=0xdfff).contains(&unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &str) -> Option<String> {
        replace_lone_surrogates(text.as_bytes()).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn only_unpaired_escapes_change() {
        assert_eq!(fixed(r#""\ud800""#).as_deref(), Some(r#""\uFFFD""#));
        assert_eq!(fixed(r#""\ud83d\ude00""#), None);
        assert_eq!(fixed(r#""\\ud800""#), None);
        assert_eq!(
            fixed(r#""\ud83d\\ude00""#).as_deref(),
            Some(r#""\uFFFD\\ude00""#)
        );
        assert_eq!(
            fixed(r"\udbff\udbff\udfff\udc00").as_deref(),
            Some(r"\uFFFD\udbff\udfff\uFFFD")
        );
        assert_eq!(
            fixed(r"\ud800").as_deref(),
            Some(r"\uFFFD"),
            "at the very end"
        );
        // Short or broken escapes are left to the parser.
        for text in [r"\", r"\u", r"\ud80", r"\ud80g", r"\uzzzz", "plain", ""] {
            assert_eq!(fixed(text), None, "{text}");
        }
    }
}
