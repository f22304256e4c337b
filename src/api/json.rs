//! Writing JSON fragments straight into an output buffer: what every dialect's frames and
//! bodies are made of.

/// Appends `text` as a JSON string literal.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    // Writing into a Vec cannot fail, and a str always serializes.
    serde_json::to_writer(&mut *out, text).expect("a string serializes into a Vec");
}

/// Appends a decimal number.
pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    // serde_json formats integers without the `fmt` machinery, several times faster: the
    // dialects write numbers into frames on hot paths.
    serde_json::to_writer(&mut *out, &n).expect("a number serializes into a Vec");
}

/// 24 lowercase hex digits derived from `seed`, for response ids (`chatcmpl-…`, `msg_…`,
/// `resp_…`): well spread from any seed, including small counters. The core draws no
/// random numbers; the caller's seed makes ids unique.
pub(crate) fn seeded_hex(seed: u64) -> String {
    // splitmix64, twice.
    let a = splitmix64(seed);
    let b = splitmix64(a);
    format!("{:016x}{:08x}", a, b >> 32)
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape() {
        let mut out = Vec::new();
        write_str(&mut out, "a\"\n\u{1}é");
        assert_eq!(out, b"\"a\\\"\\n\\u0001\xc3\xa9\"");
        out.clear();
        write_u64(&mut out, 18_446_744_073_709_551_615);
        assert_eq!(out, b"18446744073709551615");
    }

    #[test]
    fn seeded_ids_are_stable_and_spread() {
        // Pinned: the response id of a seed must not change between versions.
        assert_eq!(seeded_hex(0), "e220a8397b1dcdafa706dd2f");
        assert_ne!(seeded_hex(1), seeded_hex(2));
        assert_eq!(seeded_hex(0).len(), 24);
        assert!(
            seeded_hex(7)
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}
