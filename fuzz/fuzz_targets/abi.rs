//! Fuzz target: see `agentwire_testkit::fuzzing::abi` for the promises of the C ABI it
//! checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: agentwire_testkit::fuzzing::AbiInput| {
    agentwire_testkit::fuzzing::abi(input)
});
