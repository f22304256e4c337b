//! Functions that reach states no correct call sequence reaches, so that tests (in C and
//! Python too) can see them: a caught panic poisoning a handle, a call refused because
//! another is inside the handle. Only with the `ffi-test-hooks` feature; never in a
//! release.

#[cfg(feature = "ffi-test-hooks")]
use super::{
    acp::aw_acp_connection,
    acp_config::aw_acp_config,
    boundary::{Handle, call_mut},
    bridge::aw_bridge,
    config::aw_config,
    decoder::aw_decoder,
    mcp::{aw_mcp_config, aw_mcp_server},
    registry::{aw_registry, aw_registry_config},
    reply::aw_reply,
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

/// Test only: panics inside a call on `reply`, which returns `AW_RESULT_PANIC` and leaves
/// `reply` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_test_panic(reply: *mut aw_reply) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(reply, |_| panic!("aw_reply_test_panic")) }
}

/// Test only: panics inside a call on `decoder`, which returns `AW_RESULT_PANIC` and
/// leaves `decoder` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_test_panic(decoder: *mut aw_decoder) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(decoder, |_| panic!("aw_decoder_test_panic")) }
}

/// The body of the `_test_overlap` hooks: from inside a call on `handle`, makes a second
/// call on it (what another thread would do at that moment), then frees it (which must
/// be refused), and returns what the second call returned.
///
/// # Safety
/// `handle` is NULL or a live handle of its type.
#[cfg(feature = "ffi-test-hooks")]
unsafe fn overlap<H: Handle>(handle: *mut H) -> aw_result {
    let mut inner = aw_result::Ok;
    // SAFETY: forwarded contract; the handle outlives both calls, since a free inside a
    // call is refused.
    let outer = unsafe {
        call_mut(handle, |_| {
            inner = call_mut(handle, |_| Ok(aw_result::Ok));
            super::boundary::free_handle(handle);
            Ok(aw_result::Ok)
        })
    };
    if outer == aw_result::Ok { inner } else { outer }
}

/// Test only: from inside a call on `config`, calls it again and tries to free it, as
/// another thread could; returns what the second call returned (`AW_RESULT_BUSY`). The
/// config is still valid afterwards.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_config_test_overlap(config: *mut aw_config) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(config) }
}

/// Test only: as `aw_config_test_overlap`, on a bridge.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_bridge_test_overlap(bridge: *mut aw_bridge) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(bridge) }
}

/// Test only: as `aw_config_test_overlap`, on a reply.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_reply_test_overlap(reply: *mut aw_reply) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(reply) }
}

/// Test only: as `aw_config_test_overlap`, on a decoder.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_decoder_test_overlap(decoder: *mut aw_decoder) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(decoder) }
}

/// Test only: panics inside a call on `connection`, which returns `AW_RESULT_PANIC` and
/// leaves `connection` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_test_panic(
    connection: *mut aw_acp_connection,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(connection, |_| panic!("aw_acp_connection_test_panic")) }
}

/// Test only: as `aw_config_test_overlap`, on an ACP config.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_config_test_overlap(config: *mut aw_acp_config) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(config) }
}

/// Test only: as `aw_config_test_overlap`, on an ACP connection.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_acp_connection_test_overlap(
    connection: *mut aw_acp_connection,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(connection) }
}

/// Test only: panics inside a call on `registry`, which returns `AW_RESULT_PANIC` and
/// leaves `registry` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_test_panic(registry: *mut aw_registry) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(registry, |_| panic!("aw_registry_test_panic")) }
}

/// Test only: as `aw_config_test_overlap`, on a registry.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_test_overlap(registry: *mut aw_registry) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(registry) }
}

/// Test only: as `aw_config_test_overlap`, on a registry config.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_registry_config_test_overlap(
    config: *mut aw_registry_config,
) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(config) }
}

/// Test only: panics inside a call on `server`, which returns `AW_RESULT_PANIC` and
/// leaves `server` poisoned.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_test_panic(server: *mut aw_mcp_server) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { call_mut(server, |_| panic!("aw_mcp_server_test_panic")) }
}

/// Test only: as `aw_config_test_overlap`, on an MCP server.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_server_test_overlap(server: *mut aw_mcp_server) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(server) }
}

/// Test only: as `aw_config_test_overlap`, on an MCP config.
#[cfg(feature = "ffi-test-hooks")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aw_mcp_config_test_overlap(config: *mut aw_mcp_config) -> aw_result {
    // SAFETY: the pointer rules.
    unsafe { overlap(config) }
}
