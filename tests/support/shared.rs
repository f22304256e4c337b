//! The real captures beside the repository (`../shared/fixtures`), found one way by every
//! Rust test: the integration tests (`mod support` or `#[path]`) and the library's unit
//! tests (`src/lib.rs` includes this file under `cfg(test)`). It uses only the standard
//! library and serde_json, so both can compile it.
//!
//! - The directory is present: every file a test names must be there and readable. A
//!   renamed, missing or unreadable capture fails the test; it is never taken for absence.
//! - The directory is absent: the test is skipped. A line says so on the process's stderr,
//!   written past libtest's output capture so that it shows in a normal run, numbered with
//!   the skips of this test binary so far.
//! - The directory is absent under `CI=true` or `AGENTWIRE_REQUIRE_SHARED=1`: the test fails,
//!   so that CI cannot pass without the captures.
//!
//! `AGENTWIRE_SHARED_DIR` names the directory to use in place of `../shared` (the one holding
//! `fixtures/`), which is how the behaviours above are themselves tested.
#![allow(dead_code)]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming the directory used in place of `../shared`.
pub const DIR_VAR: &str = "AGENTWIRE_SHARED_DIR";
/// The environment variable that makes an absent directory a failure (as `CI=true` does).
pub const REQUIRE_VAR: &str = "AGENTWIRE_REQUIRE_SHARED";

/// Skips reported by this process, to number them.
static SKIPS: AtomicUsize = AtomicUsize::new(0);

/// The environment the finder decides on, read once from the process ([`Env::current`]) or
/// given by a test of the finder itself.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `AGENTWIRE_SHARED_DIR`.
    pub dir: Option<OsString>,
    /// `CI`.
    pub ci: Option<OsString>,
    /// `AGENTWIRE_REQUIRE_SHARED`.
    pub require: Option<OsString>,
    /// Count skips without the line on stderr (the finder's own tests, whose skips are
    /// not skipped tests).
    pub quiet: bool,
}

impl Env {
    /// The process's environment.
    pub fn current() -> Env {
        Env {
            dir: std::env::var_os(DIR_VAR),
            ci: std::env::var_os("CI"),
            require: std::env::var_os(REQUIRE_VAR),
            quiet: false,
        }
    }

    /// Whether absence is a failure: `CI=true` (as CI services set it) or
    /// `AGENTWIRE_REQUIRE_SHARED=1`.
    pub fn required(&self) -> bool {
        let is = |value: &Option<OsString>, wanted: &[&str]| {
            value
                .as_ref()
                .and_then(|v| v.to_str())
                .is_some_and(|v| wanted.iter().any(|w| v.eq_ignore_ascii_case(w)))
        };
        is(&self.ci, &["true", "1"]) || is(&self.require, &["1", "true"])
    }

    /// The directory standing for `../shared`.
    pub fn shared_dir(&self) -> PathBuf {
        match &self.dir {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            // Beside the repository: the workspace root is the manifest directory's
            // first ancestor with the lock file (the proxies' tests are in `proxy/`).
            _ => Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .find(|dir| dir.join("Cargo.lock").is_file())
                .unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")))
                .join("../shared"),
        }
    }
}

/// What the finder decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// `fixtures/` is there: this directory.
    Present(Fixtures),
    /// It is not, and that is allowed: the caller skips.
    Skipped,
}

/// Finds `fixtures/` for `what` (the test's name, for the skip line) in `env`: present, or
/// skipped with a line on stderr. Panics when it is absent and `env` requires it.
pub fn find_in(env: &Env, what: &str) -> Found {
    let dir = env.shared_dir().join("fixtures");
    if dir.is_dir() {
        return Found::Present(Fixtures { dir });
    }
    if env.required() {
        panic!(
            "{what}: the real captures {} are absent, and CI=true or {REQUIRE_VAR}=1 requires \
             them (set {DIR_VAR} to where they are)",
            dir.display()
        );
    }
    let number = SKIPS.fetch_add(1, Ordering::Relaxed) + 1;
    if env.quiet {
        return Found::Skipped;
    }
    // Past libtest's capture (it takes only the print macros), so the skip shows.
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED [{number}] {what}: the real captures {} are absent (CI=true or {REQUIRE_VAR}=1 \
         makes this a failure)",
        dir.display()
    );
    Found::Skipped
}

/// [`find_in`] the process's environment: the fixtures, or `None` when the test is skipped.
pub fn fixtures(what: &str) -> Option<Fixtures> {
    match find_in(&Env::current(), what) {
        Found::Present(fixtures) => Some(fixtures),
        Found::Skipped => None,
    }
}

/// How many skips this process has reported.
pub fn skips() -> usize {
    SKIPS.load(Ordering::Relaxed)
}

/// The `fixtures/` directory of the real captures, known to be present. Everything asked of
/// it must be there: a missing or unreadable file panics, naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixtures {
    dir: PathBuf,
}

impl Fixtures {
    /// The directory itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of `relative` (say `cursor-agent/x.jsonl`), which must be a file.
    pub fn path(&self, relative: &str) -> PathBuf {
        let path = self.dir.join(relative);
        assert!(
            path.is_file(),
            "{}: missing from the real captures (renamed or deleted?)",
            path.display()
        );
        path
    }

    /// The bytes of `relative`.
    pub fn read(&self, relative: &str) -> Vec<u8> {
        let path = self.dir.join(relative);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The text of `relative`.
    pub fn read_to_string(&self, relative: &str) -> String {
        let path = self.dir.join(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The files of the directory `relative` whose names end with `suffix`, sorted; at
    /// least one (a directory emptied or renamed is a failure, not an empty corpus).
    pub fn files(&self, relative: &str, suffix: &str) -> Vec<PathBuf> {
        let dir = self.dir.join(relative);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut files: Vec<PathBuf> = entries
            .map(|entry| {
                entry
                    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                    .path()
            })
            .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
            .collect();
        files.sort();
        assert!(
            !files.is_empty(),
            "{}: no *{suffix} files in the real captures",
            dir.display()
        );
        files
    }

    /// The request bodies of a JSON-lines capture of a client's requests (`{"method",
    /// "path", "headers", "body"}` per line), in order: every line must be such a record;
    /// those without a JSON object body (a `HEAD`) are left out; at least one has one.
    pub fn request_bodies(&self, relative: &str) -> Vec<serde_json::Value> {
        let text = self.read_to_string(relative);
        let mut bodies = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let record: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{relative}:{}: not a JSON record: {e}", i + 1));
            assert!(
                record["method"].is_string(),
                "{relative}:{}: not a request record",
                i + 1
            );
            if record["body"].is_object() {
                bodies.push(record["body"].clone());
            }
        }
        assert!(!bodies.is_empty(), "{relative}: no request bodies");
        bodies
    }
}
