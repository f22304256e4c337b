//! Small, allocation-free readers over `serde_json` raw values, and the visitor pieces the
//! line readers share.
//!
//! The decoder captures fields as [`RawValue`]s (borrowed, already validated by
//! `serde_json`) and interprets them here. This keeps a line with an unexpected field type
//! decodable (the field is ignored instead of the whole line failing) and lets text be
//! unescaped straight into a reused buffer instead of a fresh `String` per event.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Visitor methods that accept any non-map, non-sequence value as "nothing here": the
/// readers are tolerant, so a field of an unexpected type loses that field, not the line.
macro_rules! ignore_other_shapes {
    ($empty:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok($empty)
        }
    };
}
pub(crate) use ignore_other_shapes;

/// A map key, borrowed when it has no escapes.
pub(crate) struct Key<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                key: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Reads the JSON object in `json` and hands each key with its raw value to `each`.
/// Values are not decoded. Returns `false` when `json` is not an object.
pub(crate) fn for_each_entry<'a>(json: &'a str, mut each: impl FnMut(&str, &'a RawValue)) -> bool {
    struct EntryVisitor<'f, F>(&'f mut F);
    impl<'de, F: FnMut(&str, &'de RawValue)> Visitor<'de> for EntryVisitor<'_, F> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Key<'de>>()? {
                let value = map.next_value::<&'de RawValue>()?;
                (self.0)(&key.0, value);
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(json);
    de.deserialize_map(EntryVisitor(&mut each)).is_ok()
}

/// The string in `raw`, borrowed when it has no escapes; `None` when `raw` is not a string.
pub(crate) fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    let mut owned = String::with_capacity(inner.len());
    unescape_body(inner, &mut owned);
    Some(Cow::Owned(owned))
}

/// Appends the string in `raw` to `out`, unescaped. Returns `false` (appending nothing)
/// when `raw` is not a string.
pub(crate) fn append_str(raw: &RawValue, out: &mut String) -> bool {
    let text = raw.get();
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return false;
    };
    unescape_body(inner, out);
    true
}

/// Appends the string in `raw` to `out`, unescaped, for text that arrives in pieces: a
/// surrogate pair may be split across two pieces (a JavaScript producer cuts its UTF-16
/// strings at token boundaries, which can fall inside an emoji).
///
/// `pending` carries a high surrogate from the end of the previous piece: if this piece
/// starts with a low surrogate escape the two are joined into one character; otherwise the
/// caller has already settled it (see [`starts_with_low_surrogate`]) and it is dropped. A
/// high surrogate escape at the very end of this piece is not written: it is left in
/// `pending` for the next piece. Returns `false` (appending nothing) when `raw` is not a
/// string.
pub(crate) fn append_str_joined(
    raw: &RawValue,
    out: &mut String,
    pending: &mut Option<u16>,
) -> bool {
    let Some(mut inner) = string_body(raw) else {
        return false;
    };
    if let Some(high) = pending.take() {
        if let Some(low) = leading_low_surrogate(inner) {
            out.push(surrogate_pair(high, low));
            inner = &inner[6..];
        }
    }
    if let Some(high) = trailing_high_surrogate(inner) {
        unescape_body(&inner[..inner.len() - 6], out);
        *pending = Some(high);
    } else {
        unescape_body(inner, out);
    }
    true
}

/// Whether the string in `raw` starts with a low surrogate escape (`\uDC00`–`\uDFFF`),
/// the second half of a pair whose first half ended the previous piece.
pub(crate) fn starts_with_low_surrogate(raw: &RawValue) -> bool {
    string_body(raw).and_then(leading_low_surrogate).is_some()
}

/// Whether `raw` is a non-empty JSON string.
pub(crate) fn is_nonempty_str(raw: &RawValue) -> bool {
    string_body(raw).is_some_and(|body| !body.is_empty())
}

fn string_body(raw: &RawValue) -> Option<&str> {
    raw.get().strip_prefix('"')?.strip_suffix('"')
}

fn leading_low_surrogate(body: &str) -> Option<u16> {
    let unit = hex4(body.strip_prefix("\\u").and_then(|rest| rest.get(..4)))?;
    (0xDC00..0xE000).contains(&unit).then_some(unit as u16)
}

/// A high surrogate escape that ends `body` and is not itself escaped text (`\\ud83d` is a
/// backslash followed by the letters `ud83d`).
fn trailing_high_surrogate(body: &str) -> Option<u16> {
    let at = body.len().checked_sub(6)?;
    let unit = hex4(body.get(at..)?.strip_prefix("\\u"))?;
    if !(0xD800..0xDC00).contains(&unit) {
        return None;
    }
    let backslashes_before = body.as_bytes()[..at]
        .iter()
        .rev()
        .take_while(|b| **b == b'\\')
        .count();
    (backslashes_before % 2 == 0).then_some(unit as u16)
}

fn surrogate_pair(high: u16, low: u16) -> char {
    let code = 0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
    char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The unsigned integer in `raw` (also accepted as a decimal string, as cursor-agent writes
/// some numbers), or `None`.
pub(crate) fn raw_u64(raw: &RawValue) -> Option<u64> {
    let text = raw.get();
    let digits = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    digits.parse().ok()
}

/// The finite number in `raw` (also accepted as a decimal string), or `None`.
pub(crate) fn raw_f64(raw: &RawValue) -> Option<f64> {
    let text = raw.get();
    let digits = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    digits.parse().ok().filter(|n: &f64| n.is_finite())
}

/// `true`/`false` in `raw`, or `None`.
pub(crate) fn raw_bool(raw: &RawValue) -> Option<bool> {
    match raw.get() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Calls `each` with the unescaped text of the string in `raw`, in order and in pieces
/// (runs of plain text borrowed from the line, and decoded escapes), so that a long string
/// can be hashed or compared without a copy. Returns `false` when `raw` is not a string.
pub(crate) fn for_each_unescaped(raw: &RawValue, each: impl FnMut(&str)) -> bool {
    let Some(body) = string_body(raw) else {
        return false;
    };
    unescape_body(body, &mut Pieces(each));
    true
}

/// Where unescaped text goes: a `String`, or a function called with each piece.
trait Sink {
    fn push_str(&mut self, text: &str);

    fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }
}

impl Sink for String {
    fn push_str(&mut self, text: &str) {
        String::push_str(self, text);
    }

    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

struct Pieces<F>(F);

impl<F: FnMut(&str)> Sink for Pieces<F> {
    fn push_str(&mut self, text: &str) {
        if !text.is_empty() {
            (self.0)(text);
        }
    }
}

/// Unescapes the body of a JSON string that `serde_json` has already validated. Lone
/// surrogates (which `serde_json` lets through raw values) become U+FFFD.
fn unescape_body(body: &str, out: &mut impl Sink) {
    let mut rest = body;
    while let Some(at) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(&rest[..at]);
        let escape = &rest[at + 1..];
        let mut chars = escape.chars();
        let consumed = match chars.next() {
            Some('n') => push(out, '\n', 1),
            Some('t') => push(out, '\t', 1),
            Some('r') => push(out, '\r', 1),
            Some('b') => push(out, '\u{8}', 1),
            Some('f') => push(out, '\u{c}', 1),
            Some('u') => unescape_unicode(escape, out),
            Some(other) => push(out, other, other.len_utf8()),
            None => 0,
        };
        rest = &escape[consumed..];
    }
    out.push_str(rest);
}

fn push(out: &mut impl Sink, c: char, consumed: usize) -> usize {
    out.push(c);
    consumed
}

/// `escape` starts at the `u` of `\uXXXX`; returns how many bytes it used.
fn unescape_unicode(escape: &str, out: &mut impl Sink) -> usize {
    let Some(high) = hex4(escape.get(1..5)) else {
        out.push(char::REPLACEMENT_CHARACTER);
        return escape.len().min(1);
    };
    if (0xD800..0xDC00).contains(&high) {
        if let Some(low) = escape
            .get(5..7)
            .filter(|s| *s == "\\u")
            .and_then(|_| hex4(escape.get(7..11)))
        {
            if (0xDC00..0xE000).contains(&low) {
                out.push(surrogate_pair(high as u16, low as u16));
                return 11;
            }
        }
    }
    out.push(char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER));
    5
}

fn hex4(digits: Option<&str>) -> Option<u32> {
    let digits = digits?;
    if digits.len() != 4 {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn matches_serde_json_on_escapes() {
        let cases = [
            r#""plain""#,
            r#""a\nb\t\"q\" \\ \/ \b\f\r""#,
            r#""\u00e9\u2014 \ud83d\ude00 end""#,
            r#""raw é — 😀""#,
            r#""""#,
        ];
        for case in cases {
            let expected: String = serde_json::from_str(case).unwrap();
            assert_eq!(raw_str(&raw(case)).unwrap(), expected, "{case}");
            let mut out = String::from(">");
            assert!(append_str(&raw(case), &mut out));
            assert_eq!(out, format!(">{expected}"));
        }
    }

    #[test]
    fn pieces_are_the_unescaped_string() {
        let case = r#""plain \n\u00e9\ud83d\ude00 and \\ end""#;
        let mut pieces = Vec::new();
        assert!(for_each_unescaped(&raw(case), |p| pieces.push(p.to_owned())));
        assert_eq!(
            pieces.concat(),
            serde_json::from_str::<String>(case).unwrap()
        );
        assert!(pieces.len() > 3, "escapes split the text: {pieces:?}");
        assert!(!for_each_unescaped(&raw("1"), |_| {}));
    }

    #[test]
    fn borrows_without_escapes() {
        let value = raw(r#""call_1""#);
        assert!(matches!(raw_str(&value), Some(Cow::Borrowed("call_1"))));
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(raw_str(&raw(r#""a\ud800b""#)).unwrap(), "a\u{fffd}b");
        assert_eq!(raw_str(&raw(r#""\udc00""#)).unwrap(), "\u{fffd}");
        assert_eq!(raw_str(&raw(r#""\ud800\u0041""#)).unwrap(), "\u{fffd}A");
    }

    #[test]
    fn non_strings() {
        assert!(raw_str(&raw("12")).is_none());
        assert!(!append_str(&raw("null"), &mut String::new()));
        assert_eq!(raw_u64(&raw("12")), Some(12));
        assert_eq!(raw_u64(&raw(r#""1789644658152""#)), Some(1789644658152));
        assert_eq!(raw_u64(&raw("-1")), None);
        assert_eq!(raw_bool(&raw("true")), Some(true));
        assert_eq!(raw_bool(&raw("1")), None);
    }
}
