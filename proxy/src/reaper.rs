//! Reaping orphans: what PID 1 (or a child subreaper) owes the processes re-parented to
//! it.
//!
//! An agent's descendants that leave its process group (a `setsid` background job) outlive
//! it. When the agent exits they are re-parented to the nearest subreaper, or to PID 1;
//! if that is the proxy — as in a container started without `--init` — nobody else will
//! ever `wait` for them, and each one that exits stays a zombie. With `--reap-orphans`
//! (on by itself as PID 1) the proxy becomes a subreaper and reaps them.
//!
//! It must not reap its *own* children — agents and probes — whose statuses the code that
//! spawned them (tokio's child handling, `std::process::Child::wait`) is waiting for. So
//! every spawn goes through [`spawn`], which records the child's pid while holding the lock
//! the reaper takes, and the reaper looks before it reaps: `waitid(WNOWAIT)` names a child
//! that has exited without reaping it, and only a pid the proxy did not spawn is then
//! reaped. When the child it finds is one of the proxy's own, the reaper waits until that
//! child's owner has reaped it ([`release`] wakes it) before looking again.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// What the reaper and the spawners share.
struct State {
    /// The children the proxy spawned and has not reaped yet.
    own: HashSet<u32>,
    /// Counts SIGCHLDs and releases, so the reaper never sleeps through one.
    wakeups: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
static WAKE: Condvar = Condvar::new();
static ENABLED: AtomicBool = AtomicBool::new(false);

/// How long the reaper sleeps at most between rounds.
const RECHECK: Duration = Duration::from_secs(5);

fn state() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn wake(state: &mut Option<State>) {
    if let Some(state) = state {
        state.wakeups += 1;
    }
    WAKE.notify_all();
}

/// Spawns a child with `spawn`, recorded (when reaping) as the proxy's own so the reaper
/// leaves it to its owner, who calls [`release`] with its pid once it has reaped it.
pub fn spawn<C, E>(
    pid: impl FnOnce(&C) -> Option<u32>,
    spawn: impl FnOnce() -> Result<C, E>,
) -> Result<C, E> {
    if !ENABLED.load(Ordering::Acquire) {
        return spawn();
    }
    let mut state = state();
    let child = spawn()?;
    if let (Some(state), Some(pid)) = (state.as_mut(), pid(&child)) {
        state.own.insert(pid);
    }
    Ok(child)
}

/// The owner of child `pid` has reaped it.
pub fn release(pid: u32) {
    if !ENABLED.load(Ordering::Acquire) {
        return;
    }
    let mut state = state();
    if let Some(own) = state.as_mut() {
        own.own.remove(&pid);
    }
    wake(&mut state);
}

/// Stops every orphan this process adopted as a subreaper, and what they started: its
/// descendants that are not its own children (those it [`spawn`]ed and has not reaped)
/// nor theirs, each sent SIGKILL; the reaper then reaps them. Called once the agent that
/// left them is gone, so that nothing it started outlives it. Nothing without
/// [`start`]: then orphans are init's.
pub fn stop_adopted() {
    if !ENABLED.load(Ordering::Acquire) {
        return;
    }
    let own: HashSet<u32> = state().as_ref().map(|s| s.own.clone()).unwrap_or_default();
    // Twice: a process forked by an orphan between the walk and its kill is found again.
    for _ in 0..2 {
        for pid in crate::agent::descendants(std::process::id(), &own) {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

/// Makes this process a child subreaper and starts reaping orphans on a thread of its own.
/// Only on Linux, where subreapers exist.
pub fn start() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|e| format!("cannot become a child subreaper: {e}"))?;
        *state() = Some(State {
            own: HashSet::new(),
            wakeups: 0,
        });
        ENABLED.store(true, Ordering::Release);
        let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGCHLD])
            .map_err(|e| format!("cannot watch SIGCHLD: {e}"))?;
        let thread = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .stack_size(64 * 1024)
                .spawn(f)
                .map(drop)
                .map_err(|e| format!("cannot start the reaper: {e}"))
        };
        thread(
            "sigchld",
            Box::new(move || {
                for _ in signals.forever() {
                    wake(&mut state());
                }
            }),
        )?;
        thread(
            "reaper",
            Box::new(|| {
                loop {
                    let seen = state().as_ref().map_or(0, |s| s.wakeups);
                    reap_ready();
                    let state = state();
                    let _ = WAKE.wait_timeout_while(state, RECHECK, |s| {
                        s.as_ref().is_some_and(|s| s.wakeups == seen)
                    });
                }
            }),
        )
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("--reap-orphans needs Linux (child subreapers)".to_owned())
    }
}

/// Reaps every exited child the proxy did not spawn, until the next exited child is one
/// of its own (left to its owner, whose release wakes the reaper again) or none is left.
#[cfg(target_os = "linux")]
fn reap_ready() {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
    loop {
        let state = state();
        let peek = waitid(
            Id::All,
            WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
        );
        let Some(pid) = peek.ok().and_then(|status| match status {
            WaitStatus::StillAlive => None,
            status => status.pid(),
        }) else {
            return;
        };
        let own = u32::try_from(pid.as_raw()).ok();
        if state
            .as_ref()
            .is_some_and(|s| own.is_some_and(|p| s.own.contains(&p)))
        {
            return;
        }
        // Not the proxy's own, and holding the lock keeps it so.
        let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
    }
}
