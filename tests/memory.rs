//! Memory for one long line: while the Bridge turns a line of N bytes into SSE, at most two
//! buffers of about N bytes are alive at once (the line and its decoded text, then the
//! decoded text and its encoded frame), so peak memory is about twice the line plus a
//! constant. A tool result, which is skipped rather than decoded, needs only the line. A
//! non-streaming response also holds the answer it is building: one more buffer, but only
//! while a line repeats the whole answer (a recap); a result repeating it is compared
//! piece by piece, never copied.
//!
//! Counted by a global allocator that tracks how many large blocks are alive on this
//! thread: a structural measure, independent of allocator growth policy and of timing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentwire::bridge::{Bridge, BridgeParams, Config, Dialect, Output};
use agentwire::cursor::ExitStatus;

/// Blocks at least this large count as "about the size of the line" (lines below are 4 MiB).
const LARGE: usize = 2 << 20;
const LINE: usize = 4 << 20;

struct LargeBlockCounter;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.with(Cell::get)
}

fn grew() {
    let live = LIVE.fetch_add(1, Ordering::Relaxed) + 1;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank() {
    // Blocks allocated before counting started may be freed while counting: never below 0.
    let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
}

// SAFETY: every method forwards to the system allocator with the caller's arguments; the
// bookkeeping touches only atomics and a const thread-local, none of which allocates.
unsafe impl GlobalAlloc for LargeBlockCounter {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() && layout.size() >= LARGE {
            grew();
        }
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            match (layout.size() >= LARGE, new_size >= LARGE) {
                (false, true) => grew(),
                (true, false) => shrank(),
                _ => {}
            }
        }
        // SAFETY: as above; `ptr` came from this allocator, which is the system's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() && layout.size() >= LARGE {
            shrank();
        }
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: LargeBlockCounter = LargeBlockCounter;

/// The most line-sized blocks alive at once while the Bridge answers `transcript` in 4 KiB
/// reads, the caller writing each body chunk away as it comes; and the body bytes written.
fn peak_large_blocks(transcript: &[u8], stream: bool) -> (usize, usize) {
    let body = format!(
        r#"{{"model":"auto","stream":{stream},"messages":[{{"role":"user","content":"hi"}}]}}"#
    );
    let body = body.as_bytes();
    let params = BridgeParams {
        now_ms: 0,
        created_unix: 1_700_000_000,
        id_seed: 1,
    };
    let mut bridge = Bridge::new(Dialect::ChatCompletions, body, &Config::default(), params);
    let mut written = 0usize;
    let mut drain = |bridge: &mut Bridge| {
        while let Some(output) = bridge.poll_output() {
            if let Output::Body(bytes) = output {
                written += bytes.len();
            }
        }
    };
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    for (i, chunk) in transcript.chunks(4096).enumerate() {
        bridge.push_stdout(chunk, i as u64).unwrap();
        drain(&mut bridge);
    }
    bridge
        .agent_exited(ExitStatus::Code(0), u64::MAX / 2)
        .unwrap();
    drain(&mut bridge);
    COUNTING.with(|c| c.set(false));
    assert!(bridge.is_ended());
    (PEAK.load(Ordering::Relaxed), written)
}

/// Text of `len` bytes with a newline every 14 (escaped in JSON, so it must be decoded).
fn long_text(len: usize) -> String {
    "line of code;\n".repeat(len / 14)
}

fn assistant(text: &str, recap: bool) -> String {
    let stamp = if recap { "" } else { r#","timestamp_ms":1"# };
    format!(
        "{{\"type\":\"assistant\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}{stamp}}}\n",
        serde_json::to_string(text).unwrap()
    )
}

fn result(text: &str) -> String {
    format!(
        "{{\"type\":\"result\",\"subtype\":\"success\",\"result\":{}}}\n",
        serde_json::to_string(text).unwrap()
    )
}

#[test]
fn one_long_line_of_every_kind_needs_at_most_two_buffers_of_its_size() {
    let text = long_text(LINE);

    // A long answer text in one line; then the same answer streamed in fragments, followed
    // by its recap and a result repeating it.
    let single = [assistant(&text, false), result(&text)].concat();
    let mut streamed = String::new();
    for piece in text.as_bytes().chunks(4000) {
        streamed.push_str(&assistant(std::str::from_utf8(piece).unwrap(), false));
    }
    let recapped = [streamed, assistant(&text, true), result(&text)].concat();
    // The result in the same read as the end of the long line.
    let same_read = [
        assistant(&text, false),
        "{\"type\":\"result\",\"subtype\":\"success\"}\n".to_owned(),
    ]
    .concat();
    for stream in [true, false] {
        for (name, transcript) in [
            ("text line", &single),
            ("recap and result", &recapped),
            ("result in the same read", &same_read),
        ] {
            let (peak, written) = peak_large_blocks(transcript.as_bytes(), stream);
            assert!(
                written > text.len() && written < 3 * text.len(),
                "{name}: the answer is sent once ({written} bytes)"
            );
            let answer = usize::from(!stream && name == "recap and result");
            assert_eq!(peak, 2 + answer, "{name}, stream: {stream}");
        }
    }

    // A long tool result: skipped, so only the line itself is held.
    let tool = format!(
        "{{\"type\":\"tool_call\",\"subtype\":\"completed\",\"call_id\":\"c\",\"tool_call\":{{\"readToolCall\":{{\"args\":{{\"path\":\"/w/f\"}},\"result\":{{\"success\":{{\"content\":{}}}}}}}}}}}\n{}",
        serde_json::to_string(&text).unwrap(),
        result("done"),
    );
    let (peak, written) = peak_large_blocks(tool.as_bytes(), true);
    assert!(written < 4096, "a tool result is not streamed");
    assert_eq!(peak, 1, "tool result line");
}
