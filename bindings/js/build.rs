//! Exports the module's stack pointer (a global the linker otherwise keeps private), so that
//! the TypeScript layer can reset it after a panic: a trap abandons the frames it was in
//! without popping them, and without the reset every panic would leak their stack space
//! (about 100 bytes) until the 1 MiB stack ran out.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=--export=__stack_pointer");
    }
}
