//! OpenAI-safe tool-call ids.
//!
//! cursor-agent's call ids contain newlines (`call_…\nfc_…`) and other characters no
//! client expects in `tool_calls[].id`. The bridge sends `call_` and 24 hex digits of a
//! stable hash instead. The hash is written here (two FNV-1a rounds with different bases)
//! so ids stay the same across builds and versions: a conversation's later requests carry
//! the ids back, and they must still match.

/// The OpenAI id for one of the agent's call ids.
pub fn call_id(agent_call_id: &str) -> String {
    hashed_id(agent_call_id.as_bytes(), 0)
}

/// The id of a call written as a text envelope: from the request's seed, the call's
/// index in its batch, and its arguments.
pub fn envelope_call_id(turn_seed: u64, index: u32, text: &str) -> String {
    let mut bytes = Vec::with_capacity(12 + text.len());
    bytes.extend_from_slice(&turn_seed.to_le_bytes());
    bytes.extend_from_slice(&index.to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    hashed_id(&bytes, 1)
}

fn hashed_id(bytes: &[u8], salt: u64) -> String {
    let a = fnv1a(bytes, 0xcbf2_9ce4_8422_2325 ^ salt);
    let b = fnv1a(bytes, 0x8422_2325_cbf2_9ce4 ^ salt.rotate_left(17));
    format!("call_{a:016x}{:08x}", b >> 32)
}

fn fnv1a(bytes: &[u8], basis: u64) -> u64 {
    bytes.iter().fold(basis, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_stable_and_distinct() {
        let a = call_id("call_abc\nfc_123");
        assert_eq!(a, call_id("call_abc\nfc_123"));
        assert_ne!(a, call_id("call_abc\nfc_124"));
        assert_eq!(a.len(), 5 + 24);
        assert!(a.starts_with("call_") && a[5..].chars().all(|c| c.is_ascii_hexdigit()));
        // Pinned: ids must not change between versions.
        assert_eq!(call_id("call_1"), "call_970624995ebfe0a9174dd04a");
        assert_ne!(envelope_call_id(1, 0, "{}"), envelope_call_id(1, 1, "{}"));
        assert_ne!(envelope_call_id(1, 0, "{}"), envelope_call_id(2, 0, "{}"));
    }
}
