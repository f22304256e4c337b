//! Tool-call ids safe in every dialect.
//!
//! cursor-agent's call ids contain newlines (`call_…\nfc_…`) and other characters no
//! client expects in a call id (Anthropic requires `^[a-zA-Z0-9_-]+$`). The bridge sends
//! `call_` and 24 lowercase hex digits of a stable hash instead; a dialect that needs a
//! second id for the same call (the Responses API's item id) derives it from this one. The hash is written here — two FNV-1a passes with
//! different offset bases, each finished by the splitmix64 finaliser so that every input
//! bit reaches every output bit — and not taken from the standard library, whose hashers
//! may change between Rust releases: ids must stay the same across builds and versions,
//! because a conversation's later requests carry them back.

/// The client's id for one of the agent's call ids: the same agent id always gives the
/// same `call_` id.
#[must_use]
pub fn call_id(agent_call_id: &str) -> String {
    hashed_id(agent_call_id.as_bytes(), 0)
}

/// The id of a call written as a text envelope: from the request's seed, the call's
/// index in its batch, and its text (the arguments, or anything else that tells it apart).
#[must_use]
pub fn envelope_call_id(turn_seed: u64, index: u32, text: &str) -> String {
    let mut bytes = Vec::with_capacity(12 + text.len());
    bytes.extend_from_slice(&turn_seed.to_le_bytes());
    bytes.extend_from_slice(&index.to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    hashed_id(&bytes, 1)
}

fn hashed_id(bytes: &[u8], salt: u64) -> String {
    let a = splitmix64(fnv1a(bytes, 0xcbf2_9ce4_8422_2325 ^ salt));
    let b = splitmix64(fnv1a(bytes, 0x8422_2325_cbf2_9ce4 ^ salt.rotate_left(17)));
    format!("call_{a:016x}{:08x}", b >> 32)
}

/// The splitmix64 output function: a bijective 64-bit mix.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fnv1a(bytes: &[u8], basis: u64) -> u64 {
    bytes.iter().fold(basis, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `^[a-zA-Z0-9_-]+$`, what Anthropic requires of a `tool_use` id.
    fn safe_everywhere(id: &str) -> bool {
        !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }

    #[test]
    fn ids_are_safe_stable_and_distinct() {
        for agent in ["call_abc\nfc_123", "tool_1", "", "\u{1}é\n<>"] {
            assert!(safe_everywhere(&call_id(agent)), "{agent:?}");
            assert!(safe_everywhere(&envelope_call_id(9, 3, agent)), "{agent:?}");
        }
        let a = call_id("call_abc\nfc_123");
        assert_eq!(a, call_id("call_abc\nfc_123"));
        assert_ne!(a, call_id("call_abc\nfc_124"));
        assert_eq!(a.len(), 5 + 24);
        assert!(a.starts_with("call_") && a[5..].chars().all(|c| c.is_ascii_hexdigit()));
        // Pinned: ids must not change between versions.
        assert_eq!(call_id("call_1"), "call_bc2c1bc6bf32eef5db20a51d");
        assert_ne!(envelope_call_id(1, 0, "{}"), envelope_call_id(1, 1, "{}"));
        assert_ne!(envelope_call_id(1, 0, "{}"), envelope_call_id(2, 0, "{}"));
        assert_ne!(envelope_call_id(1, 0, "{}"), envelope_call_id(1, 0, "{ }"));
        assert_ne!(
            envelope_call_id(0, 0, ""),
            call_id(""),
            "separate id spaces"
        );
    }

    #[test]
    fn no_collisions_among_similar_ids() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..50_000 {
            let agent = format!("call-80b7ca88-cf79-4a86-bbdc-0705e1f22c57-{i}\nfc_{i}");
            let id = call_id(&agent);
            assert!(
                id[5..]
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            );
            assert!(seen.insert(id), "{agent}");
            assert!(seen.insert(envelope_call_id(7, i, "{}")));
        }
    }
}
