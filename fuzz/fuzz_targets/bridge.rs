//! Fuzz target: see `agentwire::fuzzing::bridge` for the invariants it asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: agentwire::fuzzing::BridgeInput| {
    agentwire::fuzzing::bridge(input)
});
