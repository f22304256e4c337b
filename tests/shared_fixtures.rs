//! The finder of the real captures (`tests/support/shared.rs`) in each case it decides:
//! present, present with a file missing, absent (skipped, and said so past libtest's
//! capture), absent where CI requires it (a failure). The cases are built in temporary
//! directories named by `AGENTWIRE_SHARED_DIR`, in-process through [`shared::Env`] and, for
//! the real environment and output, in a child run of this test binary.

#[path = "support/shared.rs"]
mod shared;

use std::ffi::OsString;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::Command;

use shared::{Env, Found};

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("agentwire-shared-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn env(dir: &std::path::Path, ci: Option<&str>, require: Option<&str>) -> Env {
    Env {
        dir: Some(dir.as_os_str().to_owned()),
        ci: ci.map(OsString::from),
        require: require.map(OsString::from),
        quiet: true,
    }
}

/// The panic message of `f`, which must panic.
fn panic_of(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("must fail");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

#[test]
fn present_files_are_read() {
    let temp = TempDir::new("present");
    let agent = temp.0.join("fixtures/cursor-agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(agent.join("b.jsonl"), b"{}\n").unwrap();
    std::fs::write(agent.join("a.jsonl"), b"[]\n").unwrap();
    std::fs::write(agent.join("models.txt"), b"auto - Auto\n").unwrap();
    // Present, so neither CI nor the requirement matter.
    for (ci, require) in [(None, None), (Some("true"), Some("1"))] {
        let Found::Present(fixtures) = shared::find_in(&env(&temp.0, ci, require), "present")
        else {
            panic!("not found")
        };
        assert_eq!(fixtures.dir(), temp.0.join("fixtures"));
        assert_eq!(fixtures.read("cursor-agent/a.jsonl"), b"[]\n");
        assert_eq!(
            fixtures.files("cursor-agent", ".jsonl"),
            [agent.join("a.jsonl"), agent.join("b.jsonl")]
        );
    }
}

#[test]
fn present_but_file_missing_fails() {
    let temp = TempDir::new("missing-file");
    std::fs::create_dir_all(temp.0.join("fixtures/cursor-agent")).unwrap();
    std::fs::create_dir_all(temp.0.join("fixtures/clients")).unwrap();
    std::fs::write(
        temp.0.join("fixtures/clients/bad.jsonl"),
        b"{\"method\":\"POST\",\"body\":{}}\nnot json\n",
    )
    .unwrap();
    let Found::Present(fixtures) = shared::find_in(&env(&temp.0, None, None), "missing") else {
        panic!("not found")
    };
    let skips = shared::skips();
    // A renamed capture is a failure, never a skip.
    assert!(
        panic_of(|| drop(fixtures.read("cursor-agent/renamed.jsonl"))).contains("renamed.jsonl")
    );
    assert!(panic_of(|| drop(fixtures.path("cursor-agent/renamed.jsonl"))).contains("missing"));
    // An emptied or missing directory is no empty corpus.
    assert!(panic_of(|| drop(fixtures.files("cursor-agent", ".jsonl"))).contains("no *.jsonl"));
    assert!(panic_of(|| drop(fixtures.files("opencode", ".jsonl"))).contains("opencode"));
    // A malformed capture is no shorter one.
    assert!(panic_of(|| drop(fixtures.request_bodies("clients/bad.jsonl"))).contains(":2:"));
    assert_eq!(shared::skips(), skips, "nothing was skipped");
}

#[test]
fn absent_is_a_counted_skip() {
    let temp = TempDir::new("absent");
    let missing = temp.0.join("nothing-here");
    for (ci, require) in [(None, None), (Some("false"), Some("0")), (Some(""), None)] {
        let before = shared::skips();
        assert_eq!(
            shared::find_in(&env(&missing, ci, require), "absent"),
            Found::Skipped,
            "{ci:?} {require:?}"
        );
        assert!(shared::skips() > before);
    }
    // A directory without `fixtures/` is absent too.
    assert_eq!(
        shared::find_in(&env(&temp.0, None, None), "no fixtures/"),
        Found::Skipped
    );
}

#[test]
fn absent_under_ci_or_the_requirement_fails() {
    let temp = TempDir::new("required");
    let missing = temp.0.join("nothing-here");
    for (ci, require) in [
        (Some("true"), None),
        (Some("TRUE"), None),
        (None, Some("1")),
        (Some("false"), Some("1")),
    ] {
        let message = panic_of(|| drop(shared::find_in(&env(&missing, ci, require), "required")));
        assert!(message.contains("absent"), "{ci:?} {require:?}: {message}");
        assert!(message.contains(shared::REQUIRE_VAR), "{message}");
    }
}

/// What a real test does: the real captures through the process's environment. Run by
/// itself as usual, and in a child process by the test below with the environment set.
#[test]
fn probe() {
    if let Some(fixtures) = shared::fixtures("shared_fixtures::probe") {
        assert!(!fixtures.files("cursor-agent", ".jsonl").is_empty());
    }
}

/// This binary's `probe` alone, with `AGENTWIRE_SHARED_DIR` at `dir` and `vars` set (`CI`
/// and the requirement removed otherwise): whether it passed, and its stderr.
fn run_probe(dir: &std::path::Path, vars: &[(&str, &str)]) -> (bool, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "probe", "--test-threads=1"])
        .env(shared::DIR_VAR, dir)
        .env_remove("CI")
        .env_remove(shared::REQUIRE_VAR);
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_process_environment_decides_in_a_real_run() {
    let temp = TempDir::new("child");
    let missing = temp.0.join("nothing-here");
    // Absent: passes, and the skip shows on stderr although the output was captured.
    let (passed, stderr) = run_probe(&missing, &[]);
    assert!(passed, "{stderr}");
    assert!(
        stderr.contains("SKIPPED [1] shared_fixtures::probe"),
        "{stderr}"
    );
    // Absent under CI or the requirement: fails, naming why.
    for var in [("CI", "true"), (shared::REQUIRE_VAR, "1")] {
        let (passed, stderr) = run_probe(&missing, &[var]);
        assert!(!passed, "{var:?}: {stderr}");
    }
    // Present, with the transcripts it names missing: fails.
    std::fs::create_dir_all(temp.0.join("fixtures/cursor-agent")).unwrap();
    let (passed, stderr) = run_probe(&temp.0, &[]);
    assert!(!passed, "{stderr}");
    // Present with one: passes, with nothing skipped.
    std::fs::write(temp.0.join("fixtures/cursor-agent/a.jsonl"), b"{}\n").unwrap();
    let (passed, stderr) = run_probe(&temp.0, &[("CI", "true")]);
    assert!(passed && !stderr.contains("SKIPPED"), "{stderr}");
}
