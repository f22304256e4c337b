//! The processes of the machine, from `/proc`: who is alive in an agent's process group,
//! who is left a zombie.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use super::wait_until;

/// (state, parent, process group) of every process.
pub fn processes() -> Vec<(u32, char, u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp …": comm may hold anything, so split after its ')'.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let state = fields[0].chars().next().unwrap_or('?');
        out.push((
            pid,
            state,
            fields[1].parse().unwrap_or(0),
            fields[2].parse().unwrap_or(0),
        ));
    }
    out
}

/// Live (not zombie) processes in any of `groups`.
pub fn alive_in(groups: &HashSet<u32>) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(_, state, _, group)| groups.contains(group) && *state != 'Z')
        .map(|(pid, ..)| pid)
        .collect()
}

/// Zombie children of `parent`.
pub fn zombies_of(parent: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(_, state, ppid, _)| *ppid == parent && *state == 'Z')
        .map(|(pid, ..)| pid)
        .collect()
}

pub fn assert_groups_gone(groups: &HashSet<u32>, limit: Duration, what: &str) {
    assert!(
        wait_until(limit, || alive_in(groups).is_empty()),
        "{what}: processes of the agents' groups still alive: {:?}",
        alive_in(groups)
    );
}

/// The pids listed in `file`, one a line.
pub fn pids_in(file: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines().map(|l| l.parse().unwrap()).collect()
}

/// Runs `program` with `args` (stdin closed, no API key in its environment) to its exit,
/// within `limit` (killed past it): its status and output.
pub fn run_bounded(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[String],
    limit: Duration,
) -> std::process::Output {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .env_remove("AGENTWIRE_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    let exited = crate::support::wait_until(limit, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !exited {
        let _ = child.kill();
        status = Some(child.wait().unwrap());
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    assert!(exited, "{:?} did not exit within {limit:?}", args);
    std::process::Output {
        status: status.unwrap(),
        stdout,
        stderr,
    }
}
