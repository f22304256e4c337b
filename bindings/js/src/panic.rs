//! The message of the last panic, for the error the TypeScript layer throws.
//!
//! With `panic = "abort"` (the only strategy of `wasm32-unknown-unknown` on stable Rust) a
//! panic runs the hook, then traps. The hook is the one place that sees the message.

use std::cell::RefCell;

use wasm_bindgen::prelude::wasm_bindgen;

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs once when the module is instantiated.
#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        LAST_PANIC.with(|last| {
            if let Ok(mut last) = last.try_borrow_mut() {
                *last = info.to_string();
            }
        });
    }));
}

/// The message of the last panic (empty if none), which it clears.
#[wasm_bindgen(js_name = takePanicMessage)]
pub fn take_panic_message() -> String {
    LAST_PANIC.with(|last| {
        last.try_borrow_mut()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    })
}
