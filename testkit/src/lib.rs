//! What agentwire's tests and fuzz targets share, kept out of the published library: the
//! checkers of every dialect's responses and the bodies of the fuzz targets. The
//! integration tests (`tests/`, `proxy/tests/`), the fuzz targets (`fuzz/`) and
//! `tests/fuzz_seeds.rs` use it; nothing here is API.
//!
//! - [`chat`], [`responses`], [`messages`]: a response body of each dialect (an SSE
//!   stream or one JSON body, and the error body) checked against its wire contract; every
//!   check panics with a message naming the rule it saw broken.
//! - [`fuzzing`]: the fuzz targets' bodies, each asserting the library's documented
//!   promises over any input, with the model of a C caller that drives the C ABI
//!   ([`fuzzing::abi`](fn@fuzzing::abi)) against the Rust API in lockstep.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod chat;
pub mod fuzzing;
pub mod messages;
pub mod responses;
