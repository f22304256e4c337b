//! Fuzz target: see `agentwire::fuzzing::abi` for the promises of the C ABI it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: agentwire::fuzzing::AbiInput| {
    agentwire::fuzzing::abi(input)
});
