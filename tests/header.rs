//! The committed C header is what cbindgen generates from `src/ffi` with `cbindgen.toml`,
//! byte for byte, and its version macros are consistent.
//!
//! `AGENTWIRE_BLESS=1 cargo test --test header` rewrites `include/agentwire.h`.

use std::path::Path;

const HEADER: &str = "include/agentwire.h";

fn generate() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(Path::new(root).join("cbindgen.toml"))
        .expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_crate(root)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn committed_header_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(HEADER);
    let generated = generate();
    if std::env::var_os("AGENTWIRE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{HEADER} is stale (first difference at line {}); regenerate it with \
             `AGENTWIRE_BLESS=1 cargo test --test header` and commit it",
            line + 1
        );
    }
}

fn macro_value(header: &str, name: &str) -> u64 {
    let prefix = format!("#define {name} ");
    let line = header
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{name} is defined"));
    line.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name} is a number"))
}

/// The version macros are the C ABI's own version (see `build.rs`, which reads them for
/// `aw_version()` and the SONAME): three numbers and `AW_VERSION_NUMBER` composed of them.
#[test]
fn version_macros_compose_the_version_number() {
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(HEADER))
        .expect("the header is committed");
    let major = macro_value(&header, "AW_VERSION_MAJOR");
    let minor = macro_value(&header, "AW_VERSION_MINOR");
    let patch = macro_value(&header, "AW_VERSION_PATCH");
    assert!(
        minor < 1_000 && patch < 1_000,
        "minor and patch fit AW_VERSION_NUMBER"
    );
    assert_eq!(
        macro_value(&header, "AW_VERSION_NUMBER"),
        major * 1_000_000 + minor * 1_000 + patch
    );
}
