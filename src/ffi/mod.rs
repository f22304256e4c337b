//! The C ABI: `include/agentwire.h`, generated from this module by cbindgen.
//!
//! The only module with `unsafe`. Every export:
//! - runs inside a panic boundary: a panic never unwinds into C; it returns
//!   `AW_RESULT_PANIC` and poisons the handle, after which every call on it returns
//!   `AW_RESULT_POISONED` (it can still be freed);
//! - checks what C hands it: a NULL pointer, a length over `PTRDIFF_MAX`, a string that is
//!   not UTF-8, an enum value out of range each get an [`aw_result`](result::aw_result),
//!   never a crash;
//! - writes its out-parameters only when it returns `AW_RESULT_OK`;
//! - takes the handle's in-use flag for the length of the call: a call that overlaps
//!   another on the same handle (from another thread) does nothing and returns
//!   `AW_RESULT_BUSY`, and a free that overlaps a call is refused.
//!
//! Handles (`aw_config`, `aw_bridge`, `aw_reply`, `aw_decoder`, `aw_acp_config`,
//! `aw_acp_launch`, `aw_acp_connection`, `aw_registry_config`, `aw_registry`,
//! `aw_mcp_config`, `aw_mcp_server`) are opaque, created by `_new` and
//! freed by `_free` (NULL-safe). Outputs are borrowed views (`aw_bytes`, `aw_str`) whose
//! lifetime each function states, usually "until the next mutating call on the same
//! handle". Polling only, no callbacks. A handle may move between threads but must not be
//! used from two threads at once; doing so is detected (`AW_RESULT_BUSY`), never a data
//! race.
//!
//! Pointer rules, the safety contract of every function here: a handle argument is NULL or
//! a live handle of its type; a data pointer is NULL (only with a zero length) or points to
//! that many readable bytes, unchanged during the call; an out-pointer is NULL or writable
//! as its type.
//!
//! The layout follows the Rust API: [`config`] (`Config`), [`bridge`] (`Bridge` and its
//! `Dialect`), [`reply`] (the replies an adapter sends without an agent:
//! `anthropic::count_tokens`, `Dialect::write_error`), [`acp_config`], [`acp_launch`] and
//! [`acp`] (`acp::AcpConfig`, `acp::launch_without_native_tools`, `acp::Connection` and
//! its turns and conversations), [`registry`]
//! (`registry::Registry`, for bridges of conversations), [`mcp`] (`mcp::Server` and
//! `mcp::Config`), [`decoder`] and [`event`]
//! (`cursor::Decoder`, `event::Event`), [`result`], [`views`], [`version`]; [`boundary`]
//! holds the casts and checks, and `names` the C enums' correspondence with the core's
//! enums and their names.

// The exports' safety contract is the module's pointer rules above, stated once (and in
// the header's preamble) rather than on each of them.
#![allow(clippy::missing_safety_doc)]

// In the header's order: what every function returns, then the handles in the order a
// plugin meets them.
pub mod result;

pub mod version;

pub mod views;

pub mod config;

pub mod bridge;

pub mod reply;

pub mod acp_config;

pub mod acp_launch;

pub mod acp;

pub mod registry;

pub mod mcp;

pub mod event;

pub mod decoder;

pub mod test_hooks;

pub mod boundary;

pub(crate) mod names;
