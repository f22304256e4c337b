//! agentwire's core compiled to WebAssembly: the engine of the npm package `agentwire`.
//!
//! The exports here are the raw boundary; the package's TypeScript layer (`ts/`) is what
//! users call, and it alone knows these conventions:
//!
//! - **Inputs** are bytes (`&[u8]`, copied in by the glue) and times as `f64` milliseconds
//!   on the caller's clock (a fraction is dropped; a negative or non-finite time is an
//!   `invalidArgument` error).
//! - **Configuration** arrives as the JSON text of the package's `Config` object
//!   (module `config`) or `AcpConfig` object (module `acp_config`): fields left out keep
//!   the Rust defaults.
//! - **Outputs** cross once per drain: a bridge's and an ACP turn's (module `acp`) as one
//!   byte string (module `bridge`), a decoder's events as one JSON array (module
//!   `events`), which the TypeScript layer turns into objects with `JSON.parse` (faster
//!   than building them through the boundary); a reply that needs no agent as one byte
//!   string too (module `reply`), a model listing's entries as one JSON array (module
//!   `models`).
//! - **Errors** are thrown as [`RawError`] (a code and the library's message).
//! - **Panics** abort: on `wasm32-unknown-unknown` a panic traps, and JavaScript sees a
//!   `WebAssembly.RuntimeError` from the call. The panic hook installed at start-up keeps
//!   the message for [`take_panic_message`]. The trapped handle stays borrowed forever
//!   (wasm-bindgen's guard), so the TypeScript layer marks it poisoned and never touches it
//!   again; other handles own disjoint state and keep working.

mod acp;
mod acp_config;
mod bridge;
mod config;
mod decoder;
mod error;
mod events;
mod inputs;
mod launch;
mod mcp;
mod models;
mod names;
mod panic;
mod registry;
mod reply;

pub use acp::RawAcpConnection;
pub use bridge::RawBridge;
pub use decoder::RawDecoder;
pub use error::RawError;
pub use launch::launch_without_native_tools_json;
pub use mcp::RawMcpServer;
pub use models::parse_models;
pub use panic::take_panic_message;
pub use registry::RawRegistry;
pub use reply::{count_tokens, error_reply};

use wasm_bindgen::prelude::wasm_bindgen;

/// The package's version, which is the core's.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The JSON text of `Config::default()`, every field present (`null` where the default is
/// none): what `defaultConfig()` returns.
#[wasm_bindgen(js_name = defaultConfig)]
pub fn default_config() -> String {
    config::default_json()
}
