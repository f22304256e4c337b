//! The seed of a randomised test, printed so that a failure can be replayed.

/// The environment variable that replays a randomised test with the seed it printed.
pub const SEED_VAR: &str = "AGENTWIRE_TEST_SEED";

/// The seed of a randomised test: `AGENTWIRE_TEST_SEED` when set (to replay a failure),
/// else a new one from the clock. Never zero, which xorshift would stay at.
pub fn test_seed() -> u64 {
    let seed = match std::env::var(SEED_VAR) {
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("{SEED_VAR}={text:?}: {e}")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    seed | 1
}

/// Says, when the test it lives in fails, how to rerun it with the same seed.
pub struct RerunHint {
    pub test: String,
    pub seed: u64,
}

impl Drop for RerunHint {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "rerun with the same seed: {SEED_VAR}={} cargo test -p agentwire-proxy --test {} -- --exact {}",
                self.seed,
                env!("CARGO_CRATE_NAME"),
                self.test
            );
        }
    }
}
