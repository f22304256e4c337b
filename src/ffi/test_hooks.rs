//! Functions that panic inside the boundary, so that tests (in C and Python too) can see a
//! caught panic poison a handle. Only with the `ffi-test-hooks` feature; never in a
//! release.

#[cfg(feature = "ffi-test-hooks")]
use super::{
    boundary::call_mut, bridge::aw_bridge, config::aw_config, decoder::aw_decoder,
    result::aw_result,
};

/// Test only: panics inside a call on `config`, which returns `AW_RESULT_PANIC` and
/// leaves `config` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_test_panic(config: *mut aw_config) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(config, |_| panic!("aw_config_test_panic")) }
}

/// Test only: panics inside a call on `bridge`, which returns `AW_RESULT_PANIC` and
/// leaves `bridge` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_test_panic(bridge: *mut aw_bridge) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(bridge, |_| panic!("aw_bridge_test_panic")) }
}

/// Test only: panics inside a call on `decoder`, which returns `AW_RESULT_PANIC` and
/// leaves `decoder` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_test_panic(decoder: *mut aw_decoder) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(decoder, |_| panic!("aw_decoder_test_panic")) }
}
