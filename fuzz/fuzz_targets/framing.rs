//! Fuzz target: see `agentwire::fuzzing::framing` for the invariants it asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentwire::fuzzing::framing(data));
