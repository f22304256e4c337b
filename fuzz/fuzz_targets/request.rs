//! Fuzz target: see `agentwire_testkit::fuzzing::request` for the invariants it asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentwire_testkit::fuzzing::request(data));
