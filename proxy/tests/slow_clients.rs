//! Clients too slow to be waited for: a head that does not arrive, a body that trickles,
//! a stream that is no longer read. Each is let go in time, and its agent stopped.

mod support;

use std::collections::HashSet;
use std::io::Write;
use std::net::Shutdown;
use std::time::{Duration, Instant};

use support::both;
use support::client::{Conn, upload_head};
use support::processes::assert_groups_gone;
use support::{Kind, Proxy, Scratch, large_transcript, stream_body, transcript, wait_until};

both!(
    slow_head_is_dropped,
    request_bodies_have_a_deadline,
    a_client_that_stops_reading_is_let_go,
);

fn slow_head_is_dropped(kind: Kind) {
    let scratch = Scratch::new("slow-head");
    let agent = scratch.agent(&["--hang"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--header-timeout-ms", "300"]);
    let mut conn = proxy.connect();
    conn.send(b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-le");
    assert!(
        conn.closed_within(Duration::from_secs(10)),
        "the slow client was dropped"
    );
    // Others are served meanwhile and after.
    assert_eq!(proxy.health()["status"], "ok");
    assert!(scratch.runs().is_empty());
}

/// The whole request, head and body, within `--request-timeout-ms` of its first byte —
/// however the bytes trickle in.
fn request_bodies_have_a_deadline(kind: Kind) {
    let scratch = Scratch::new("request-timeout");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let timeout = Duration::from_millis(1000);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--request-timeout-ms", "1000"]);
    let head = upload_head(100_000);
    for trickle in [false, true] {
        let mut conn = proxy.connect();
        let started = Instant::now();
        conn.send(&head);
        conn.send(b"{\"model\":");
        // One byte every 50 ms: never a long silence, yet the request never completes.
        let mut writer = conn.stream.try_clone().unwrap();
        let trickler = trickle.then(|| {
            std::thread::spawn(move || {
                while writer.write_all(b" ").is_ok() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        });
        let reply = conn.reply();
        assert_eq!(reply.status, 408, "trickle {trickle}: {}", reply.text());
        assert_eq!(reply.error_code(), "request_timeout");
        assert!(started.elapsed() >= timeout - Duration::from_millis(50));
        let _ = conn.stream.shutdown(Shutdown::Both);
        if let Some(trickler) = trickler {
            trickler.join().unwrap();
        }
    }
    assert!(scratch.runs().is_empty());
}

/// A streaming client that reads the head and then nothing: the agent is paused, and
/// still stopped (its slot freed) by `--max-duration-ms`, or by `--write-timeout-ms` when
/// there is no total limit.
fn a_client_that_stops_reading_is_let_go(kind: Kind) {
    let scratch = Scratch::new("stops-reading");
    let large = large_transcript(&scratch, 16);
    let agent = scratch.agent(&["--transcript", &large, "--delay-ms", "0"]);
    let grace = Duration::from_millis(300);
    let limits = [
        ("--max-duration-ms", Duration::from_millis(1500)),
        ("--write-timeout-ms", Duration::from_millis(1000)),
    ];
    for (i, (flag, limit)) in limits.into_iter().enumerate() {
        let proxy = Proxy::start(
            kind,
            &agent,
            &scratch,
            &[
                "--max-concurrent",
                "1",
                "--kill-grace-ms",
                &grace.as_millis().to_string(),
                flag,
                &limit.as_millis().to_string(),
            ],
        );
        let mut conn = Conn::open_small_window(proxy.addr);
        let started = Instant::now();
        conn.post_chat(&stream_body("hi"));
        assert_eq!(conn.head().0, 200);
        assert!(wait_until(Duration::from_secs(10), || scratch.runs().len() > i));
        let groups = HashSet::from([scratch.runs()[i].pid]);
        // The agent and its slot are let go in time (a loaded machine's scheduling aside),
        // the client still connected.
        let bound = limit + grace + Duration::from_secs(10);
        assert_groups_gone(&groups, bound.saturating_sub(started.elapsed()), flag);
        assert!(
            wait_until(bound.saturating_sub(started.elapsed()), || proxy
                .in_flight()
                == 0),
            "{flag}: the slot is still taken"
        );
        // The next request is served, not told 429.
        let mut next = proxy.connect();
        next.post_chat(&stream_body("hi"));
        assert_eq!(next.head().0, 200, "{flag}");
        drop((conn, next));
        proxy.wait_idle();
    }
}
