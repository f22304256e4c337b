//! Process hygiene beyond the agent's group: descendants that leave it (`setsid`) do not
//! hold a response open, and with `--reap-orphans` what the agents leave behind is
//! reaped.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use support::both;
use support::client::Reply;
use support::processes::{pids_in, processes, zombies_of};
use support::{Kind, Proxy, Scratch, example, plain_body, stream_body, wait_until};

both!(
    escaped_descendants_do_not_hold_the_response,
    orphans_are_reaped,
);

/// An agent that first starts `sleep 60` in a session of its own, holding its stdout and
/// stderr, and appends its pid to the file returned; then fails without a word (exit
/// code 3), so its run's end depends on its exit.
fn escaping_agent(scratch: &Scratch) -> (PathBuf, PathBuf) {
    let pids = scratch.path("escaped.pids");
    let empty = scratch.path("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.display().to_string();
    let flags = ["--transcript", &empty, "--exit", "3"];
    let quoted: Vec<String> = flags.iter().map(|f| format!("'{f}'")).collect();
    let script = format!(
        "#!/bin/sh\n\
         if [ \"$1\" != --version ]; then\n\
         \tsetsid sleep 60 &\n\
         \t# Out of the group before the agent can exit (and its group be killed).\n\
         \tuntil [ \"$(cut -d' ' -f6 /proc/$!/stat)\" = \"$!\" ]; do :; done\n\
         \techo $! >> '{}'\n\
         fi\n\
         exec '{}' {} \"$@\"\n",
        pids.display(),
        example("replay_agent").display(),
        quoted.join(" ")
    );
    (scratch.script("agent.sh", &script), pids)
}

/// The agent's own failure, with the exit code its waiter got.
fn assert_failed_with_exit_3(reply: &Reply) {
    let message = reply.json()["error"]["message"].to_string();
    assert!(
        message.contains("exit code 3"),
        "{}: {message}",
        reply.status
    );
}

/// An agent whose descendant left its process group (`setsid`) keeping stdout open: the
/// response still ends when the agent does, not at the idle timeout. (An answer that
/// ends with a `result` line ends the response by itself; a run that fails without one
/// needs the agent's exit.)
fn escaped_descendants_do_not_hold_the_response(kind: Kind) {
    let scratch = Scratch::new("escaped");
    let (agent, pids) = escaping_agent(&scratch);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    for body in [plain_body("hi"), stream_body("hi")] {
        let reply = proxy.chat(&body);
        assert_failed_with_exit_3(&reply);
    }
    proxy.wait_idle();
    let escaped = pids_in(&pids);
    assert_eq!(escaped.len(), 2);
    for pid in escaped {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(zombies_of(proxy.child.id()).is_empty());
}

/// With `--reap-orphans` (on by itself as PID 1) the proxy adopts what its agents leave
/// behind and reaps it when it exits; its own agents' statuses stay their waiters'.
fn orphans_are_reaped(kind: Kind) {
    let scratch = Scratch::new("orphans");
    let (agent, pids) = escaping_agent(&scratch);
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &["--reap-orphans", "--max-concurrent", "8"],
    );
    let ppid = |pid: u32| {
        processes()
            .into_iter()
            .find(|(p, ..)| *p == pid)
            .map(|(_, _, ppid, _)| ppid)
    };
    // The agents' own exit statuses still reach their runs (the error names the code),
    // while orphans come and go around them.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..3 {
                    let reply = proxy.chat(&plain_body("hi"));
                    assert_failed_with_exit_3(&reply);
                }
            });
        }
    });
    proxy.wait_idle();
    let orphans = pids_in(&pids);
    assert_eq!(orphans.len(), 12);
    for &pid in &orphans {
        assert_eq!(ppid(pid), Some(proxy.child.id()), "adopted by the proxy");
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        wait_until(Duration::from_secs(10), || orphans
            .iter()
            .all(|&pid| ppid(pid).is_none())),
        "orphans left as zombies: {:?}",
        zombies_of(proxy.child.id())
    );
}
