//! Fuzz target: see `agentwire_testkit::fuzzing::bridge` for the invariants it asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: agentwire_testkit::fuzzing::BridgeInput| {
    agentwire_testkit::fuzzing::bridge(input)
});
