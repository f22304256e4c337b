//! Fuzz target: see `agentwire_testkit::fuzzing::decoder_mutated` for the invariants it
//! asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentwire_testkit::fuzzing::decoder_mutated(data));
