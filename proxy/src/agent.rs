//! The agent as a process: finding the binary, spawning it in its own process group, and
//! signalling that whole group. When to signal it (SIGTERM, a grace period, SIGKILL) and
//! when its run is over is [`crate::lifecycle`]'s to say.
//!
//! Every run is the leader of a new process group (`process_group(0)`), so one `killpg`
//! reaches the agent and everything it started. A descendant that left the group
//! (`setsid`) is out of reach of `killpg`: [`escaped_groups`] finds those of a warm
//! agent, which lives long enough to leave some.
//!
//! The agent's environment is the proxy's, minus the proxy's own variables (those its
//! flags read, such as `AGENTWIRE_API_KEY`) and any variable holding an API key: the
//! agent runs shell commands a prompt can ask for, and must not be able to print them.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use agentwire::cursor::{ExitStatus, Invocation};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal as NixSignal, killpg};
use nix::unistd::Pid;

use crate::{demo, reaper};

/// How long `--version` and `models` may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The agent binary the proxy runs.
#[derive(Debug, Clone)]
pub struct AgentProgram {
    /// Where it is.
    pub path: PathBuf,
    /// What `--version` printed (first line), when it answered.
    pub version: Option<String>,
    /// The proxy itself, answering from the embedded demo transcript.
    pub demo: bool,
    /// Variables of the proxy's environment the agent does not get.
    hidden: Vec<OsString>,
}

/// What the agent must not see of the proxy's environment.
#[derive(Debug, Clone, Copy)]
pub struct Hide<'a> {
    /// The proxy's own variables (those its flags read).
    pub names: &'a [OsString],
    /// Values no variable may pass on (the API keys).
    pub secrets: &'a [&'a [u8]],
}

impl AgentProgram {
    /// Finds `name` (a path, or a name looked up in `PATH`) and asks its version; `hide`
    /// is kept from its environment.
    pub fn resolve(name: &str, hide: Hide<'_>) -> Result<AgentProgram, String> {
        let path = find_executable(name).ok_or_else(|| {
            format!(
                "the agent binary `{name}` was not found{}. Install the Cursor CLI \
                 (`curl https://cursor.com/install -fsS | bash`, then `cursor-agent login`), \
                 pass --agent-bin PATH, or try the proxy without an account: --demo",
                if name.contains('/') { "" } else { " in PATH" }
            )
        })?;
        let mut program = AgentProgram {
            path,
            version: None,
            demo: false,
            hidden: hidden_variables(hide),
        };
        program.version = program.probe(&["--version"], &[]).ok().and_then(|out| {
            String::from_utf8_lossy(&out)
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned)
        });
        Ok(program)
    }

    /// The proxy's own binary in its demo-agent role; `hide` is kept from its
    /// environment.
    pub fn demo(hide: Hide<'_>) -> Result<AgentProgram, String> {
        let path = std::env::current_exe().map_err(|e| format!("--demo: {e}"))?;
        Ok(AgentProgram {
            path,
            version: Some(format!("agentwire demo {}", env!("CARGO_PKG_VERSION"))),
            demo: true,
            hidden: hidden_variables(hide),
        })
    }

    /// A command for the agent binary: the environment without the hidden variables, and
    /// a process group of its own.
    fn base_command(&self) -> Command {
        let mut command = Command::new(&self.path);
        for name in &self.hidden {
            command.env_remove(name);
        }
        command.process_group(0);
        command
    }

    /// How the agent is named in logs and `/health`.
    pub fn label(&self) -> String {
        if self.demo {
            "embedded demo transcript".to_owned()
        } else {
            self.path.display().to_string()
        }
    }

    /// The command for one run: the invocation's arguments and environment, piped stdio,
    /// a process group of its own.
    pub fn command(&self, invocation: &Invocation) -> Command {
        let mut command = self.base_command();
        command
            .args(&invocation.args)
            .envs(invocation.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.demo {
            command.env(demo::AGENT_ENV, "1");
        }
        command
    }

    /// The command of the warm ACP agent: `args`, piped stdio, a process group of its
    /// own, the environment without the hidden variables.
    pub fn acp_command(&self, args: &[String]) -> Command {
        let mut command = self.base_command();
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `cursor-agent models` and returns its stdout, or why it failed.
    pub fn list_models(&self) -> Result<Vec<u8>, String> {
        if self.demo {
            return Ok(demo::MODELS.as_bytes().to_vec());
        }
        self.probe(&["models"], &[("NO_COLOR", "1")])
    }

    /// Runs the agent binary with `args` in its own process group with a time limit; its
    /// stdout if it exited 0.
    fn probe(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Vec<u8>, String> {
        let program = self.path.display();
        let mut command = self.base_command();
        command
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = reaper::spawn(|c: &std::process::Child| Some(c.id()), || command.spawn())
            .map_err(|e| format!("{program}: {e}"))?;
        let group = child.id();
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let read = stdout
                .read_to_end(&mut out)
                .and(stderr.read_to_end(&mut err));
            let _ = tx.send(read.map(|_| (out, err)));
        });
        let output = rx.recv_timeout(PROBE_TIMEOUT);
        if output.is_err() {
            signal_group(group, Signal::Kill);
        }
        let status = child.wait().map_err(|e| e.to_string());
        reaper::release(group);
        let status = status?;
        let what = format!("{program} {}", args.join(" "));
        match output {
            Ok(Ok((out, _))) if status.success() => Ok(out),
            Ok(Ok((_, err))) => Err(format!(
                "{what}: {}: {}",
                exit_status(status),
                String::from_utf8_lossy(&err).trim()
            )),
            Ok(Err(e)) => Err(format!("{what}: {e}")),
            Err(_) => Err(format!("{what}: no answer within {PROBE_TIMEOUT:?}")),
        }
    }
}

/// The variables of this process's environment `hide` names or whose value it hides.
fn hidden_variables(hide: Hide<'_>) -> Vec<OsString> {
    std::env::vars_os()
        .filter(|(name, value)| {
            hide.names.contains(name) || hide.secrets.contains(&value.as_bytes())
        })
        .map(|(name, _)| name)
        .collect()
}

/// `name` if it is a path to an executable file, else the first executable `name` in
/// `PATH`.
fn find_executable(name: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// A signal for a whole process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Asks it to stop.
    Term,
    /// Stops it.
    Kill,
}

/// Sends `signal` to process group `group`. A group that is already gone is not an error.
pub fn signal_group(group: u32, signal: Signal) {
    let signal = match signal {
        Signal::Term => NixSignal::SIGTERM,
        Signal::Kill => NixSignal::SIGKILL,
    };
    let Ok(group) = i32::try_from(group) else {
        return;
    };
    match killpg(Pid::from_raw(group), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(group, %e, "could not signal the agent's process group"),
    }
}

/// The process groups of `leader`'s live descendants that left its group (a `setsid` or
/// detached child, which leads a group of its own, and what it started): out of reach of
/// `killpg(leader)`. A warm agent lives long and runs commands a prompt asked for, some
/// of them detached (Claude Code's shell tool), so stopping it signals these groups too.
/// Read from `/proc`, while the leader is still unreaped (after that its orphans are
/// re-parented and no longer found); empty where `/proc` is not available.
pub fn escaped_groups(leader: u32) -> Vec<u32> {
    let table = process_table();
    let descendants: HashSet<u32> = descendants_in(&table, leader, &HashSet::new())
        .into_iter()
        .collect();
    let mut groups: Vec<u32> = table
        .iter()
        .filter(|p| p.2 != leader && descendants.contains(&p.0) && descendants.contains(&p.2))
        .map(|p| p.2)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// The live descendants of `root` (not `root` itself), leaving out the subtrees of the
/// children in `skip`. Read from `/proc`; empty where it is not available.
pub fn descendants(root: u32, skip: &HashSet<u32>) -> Vec<u32> {
    let mut found = descendants_in(&process_table(), root, skip);
    found.retain(|&pid| pid != root);
    found
}

fn descendants_in(table: &[(u32, u32, u32)], root: u32, skip: &HashSet<u32>) -> Vec<u32> {
    let mut descendants = vec![root];
    let mut next = 0;
    while next < descendants.len() {
        let parent = descendants[next];
        next += 1;
        descendants.extend(
            table
                .iter()
                .filter(|p| p.1 == parent && p.0 != parent && !skip.contains(&p.0))
                .map(|p| p.0),
        );
    }
    descendants
}

/// (pid, parent, group) of every process, from `/proc`.
fn process_table() -> Vec<(u32, u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent, group) of every process.
    let mut table: Vec<(u32, u32, u32)> = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`: the command name may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace().skip(1);
        if let (Some(Ok(parent)), Some(Ok(group))) = (
            fields.next().map(str::parse::<u32>),
            fields.next().map(str::parse::<u32>),
        ) {
            table.push((pid, parent, group));
        }
    }
    table
}

/// Most bytes [`read_held`] takes from one pipe: as much as a Linux pipe holds at its
/// largest (the default of `/proc/sys/fs/pipe-max-size`).
pub const HELD_MAX: usize = 1024 * 1024;

/// Reads what `pipe` holds now without waiting for more, handing each chunk (read into
/// `buf`) to `each`: until end of file, until the pipe is empty though something (a
/// descendant that left the agent's group) still holds it open, or after [`HELD_MAX`]
/// bytes, so that a writer that keeps writing does not hold the caller.
///
/// This is how reading ends at the end of the exit drain
/// ([`Action::StopReading`](crate::lifecycle::Action::StopReading)): whatever the leader
/// wrote before it exited is in its pipes until read, so it is all taken however late the
/// reader comes to it.
pub fn read_held(pipe: impl AsFd, buf: &mut [u8], mut each: impl FnMut(&[u8])) {
    let mut taken = 0;
    while taken < HELD_MAX {
        let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) if fds[0].revents().is_some_and(|r| !r.is_empty()) => {}
            Err(Errno::EINTR) => continue,
            // Empty (or unpollable): nothing more is held.
            _ => return,
        }
        let want = buf.len().min(HELD_MAX - taken);
        match nix::unistd::read(pipe.as_fd(), &mut buf[..want]) {
            Ok(0) => return,
            Ok(n) => {
                taken += n;
                each(&buf[..n]);
            }
            Err(Errno::EINTR) => {}
            // Emptied meanwhile (a non-blocking pipe), or failed: nothing more to take.
            Err(_) => return,
        }
    }
}

/// The exit status as the bridge takes it.
pub fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(signal)) => ExitStatus::Signal(signal),
        (None, None) => ExitStatus::Code(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::OwnedFd;
    use std::sync::Arc;

    /// What `read_held` takes from `reader`, on a thread of its own: a call that waited
    /// for the writer would fail the deadline instead of hanging the test.
    fn held(reader: &Arc<OwnedFd>) -> Vec<u8> {
        let (tx, rx) = mpsc::channel();
        let reader = Arc::clone(reader);
        std::thread::spawn(move || {
            let mut buf = [0u8; 7];
            let mut taken = Vec::new();
            read_held(&*reader, &mut buf, |bytes| taken.extend_from_slice(bytes));
            let _ = tx.send(taken);
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("read_held waited for more")
    }

    /// What a pipe holds is taken whole though its writer still holds it open (the call
    /// returns instead of waiting for more), nothing is taken twice, and end of file ends
    /// it too.
    #[test]
    fn read_held_takes_what_is_buffered_without_waiting_for_the_writer() {
        let (reader, writer) = nix::unistd::pipe().unwrap();
        let (reader, mut writer) = (Arc::new(reader), File::from(writer));
        assert_eq!(held(&reader), b"", "an empty pipe, still open");
        writer.write_all(b"the leader's last line\n").unwrap();
        writer.write_all(b"and its result\n").unwrap();
        assert_eq!(held(&reader), b"the leader's last line\nand its result\n");
        assert_eq!(held(&reader), b"");
        writer.write_all(b"late").unwrap();
        drop(writer);
        assert_eq!(held(&reader), b"late", "then end of file");
        assert_eq!(held(&reader), b"");
    }
}
