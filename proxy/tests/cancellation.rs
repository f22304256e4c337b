//! A client that goes away, at any point, stops its agent's whole process group and
//! frees its slot; a shutdown ends the streams in flight in-band.

mod support;

use std::collections::HashSet;
use std::net::Shutdown;
use std::time::Duration;

use support::both;
use support::client::raw;
use support::processes::{alive_in, assert_groups_gone, zombies_of};
use support::seed::{RerunHint, test_seed};
use support::{
    Kind, Proxy, Scratch, assert_shutdown_in_band, plain_body, stream_body, transcript, wait_until,
};

both!(
    client_gone_mid_stream_stops_the_group,
    client_gone_before_the_answer_stops_the_group,
    random_cancellations_leak_nothing,
    shutdown_ends_streams_in_band,
);

fn client_gone_mid_stream_stops_the_group(kind: Kind) {
    let scratch = Scratch::new("gone-mid-stream");
    let agent = scratch.agent(&[
        "--transcript",
        &transcript("partial_recaps.jsonl"),
        "--delay-ms",
        "40",
        "--spawn-child",
        "--hang",
    ]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut conn = proxy.open_stream();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("\"content\"") {
        seen.extend(conn.chunk().expect("frames before the end"));
    }
    let runs = scratch.runs();
    assert_eq!(runs.len(), 1);
    let child = runs[0].child.expect("the agent's child");
    let groups = HashSet::from([runs[0].pid]);
    assert!(
        alive_in(&groups).contains(&child),
        "the child runs in the agent's group"
    );
    drop(conn);
    assert_groups_gone(&groups, Duration::from_secs(1), "client gone mid-stream");
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

/// A non-streaming request (and a stream before its head) whose agent says nothing: the
/// hang-up alone must stop the group.
fn client_gone_before_the_answer_stops_the_group(kind: Kind) {
    let scratch = Scratch::new("gone-early");
    let agent = scratch.agent(&["--hang", "--spawn-child"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    for (i, body) in [plain_body("hi"), stream_body("hi")].iter().enumerate() {
        let mut conn = proxy.connect();
        conn.post_chat(body);
        assert!(
            wait_until(Duration::from_secs(10), || scratch.runs().len() > i),
            "the agent started"
        );
        let run = &scratch.runs()[i];
        let groups = HashSet::from([run.pid]);
        assert!(wait_until(Duration::from_secs(5), || alive_in(&groups)
            .len()
            == 2));
        drop(conn);
        assert_groups_gone(
            &groups,
            Duration::from_secs(1),
            "client gone before any answer",
        );
    }
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

fn random_cancellations_leak_nothing(kind: Kind) {
    let scratch = Scratch::new("cancel");
    let agent = scratch.agent(&[
        "--transcript",
        &transcript("partial_recaps.jsonl"),
        "--delay-ms",
        "1",
        "--spawn-child",
    ]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-concurrent", "64"]);
    let seed = test_seed();
    let _rerun = RerunHint {
        test: format!("{}::random_cancellations_leak_nothing", kind.module()),
        seed,
    };
    eprintln!("{kind:?}: cancellation seed {seed}");
    const REQUESTS: u64 = 200;
    const WORKERS: u64 = 8;
    std::thread::scope(|scope| {
        for worker in 0..WORKERS {
            let proxy = &proxy;
            scope.spawn(move || {
                let mut x = seed ^ (worker + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut random = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for i in (worker..REQUESTS).step_by(WORKERS as usize) {
                    let body = if i % 3 == 0 {
                        plain_body("hi")
                    } else {
                        stream_body("hi")
                    };
                    let mut conn = proxy.connect();
                    let request = raw(
                        "POST",
                        "/v1/chat/completions",
                        &[("content-type", "application/json")],
                        body.as_bytes(),
                    );
                    match random() % 4 {
                        // Mid-request: part of the body, then gone.
                        0 => conn.send(&request[..request.len() - 1 - (random() % 8) as usize]),
                        // Request sent, gone before the answer.
                        1 => conn.send(&request),
                        // Gone after a few chunks (or at the end).
                        2 => {
                            conn.send(&request);
                            let (status, headers) = conn.head();
                            assert_eq!(status, 200);
                            let chunked = headers
                                .iter()
                                .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
                            for _ in 0..if chunked { random() % 12 } else { 0 } {
                                if conn.chunk().is_none() {
                                    break;
                                }
                            }
                        }
                        // Read to the end.
                        _ => {
                            conn.send(&request);
                            assert_eq!(conn.reply().status, 200);
                        }
                    }
                    if random() % 2 == 0 {
                        // Reset rather than close.
                        let linger = nix::libc::linger {
                            l_onoff: 1,
                            l_linger: 0,
                        };
                        let _ = nix::sys::socket::setsockopt(
                            &conn.stream,
                            nix::sys::socket::sockopt::Linger,
                            &linger,
                        );
                    }
                    let _ = conn.stream.shutdown(Shutdown::Both);
                }
            });
        }
    });
    proxy.wait_idle();
    let groups: HashSet<u32> = scratch.runs().iter().map(|r| r.pid).collect();
    assert!(
        groups.len() > REQUESTS as usize / 4,
        "many requests started an agent"
    );
    assert_groups_gone(&groups, Duration::from_secs(5), "after 200 cancellations");
    assert!(zombies_of(proxy.child.id()).is_empty(), "no zombie");
    let health = proxy.health();
    assert_eq!(health["in_flight"], 0);
    // And it still answers.
    assert_eq!(proxy.chat(&stream_body("hi")).status, 200);
    proxy.wait_idle();
}

fn shutdown_ends_streams_in_band(kind: Kind) {
    let scratch = Scratch::new("shutdown");
    let agent = scratch.agent(&[
        "--transcript",
        &transcript("partial_recaps.jsonl"),
        "--delay-ms",
        "30",
        "--spawn-child",
        "--hang",
    ]);
    let mut proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let mut conn = proxy.open_stream();
    let body = conn.chunk().expect("a first frame");
    let status = proxy.stop();
    assert!(status.success(), "{status:?}");
    assert_shutdown_in_band(&mut conn, body);
    let groups: HashSet<u32> = scratch.runs().iter().map(|r| r.pid).collect();
    assert_groups_gone(&groups, Duration::from_secs(1), "after shutdown");
}
