//! Fuzz target: see `agentwire::fuzzing::request` for the invariants it asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentwire::fuzzing::request(data));
