//! Bytes ↔ frames, knowing nothing of JSON meaning: NDJSON lines in ([`LineFramer`]),
//! SSE frames out ([`SseWriter`]).

mod lines;
mod sse;

pub use lines::{DEFAULT_MAX_LINE_LEN, Framed, LineError, LineFramer, RETAINED_CAPACITY, reclaim};
pub use sse::{DONE, SseWriter};
