//! Every resource bounded: the request body's size, concurrent agent runs, connections
//! (under a descriptor limit too), an agent's silence and a run's whole duration.

mod support;

use std::collections::HashSet;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::both;
use support::checks::check_stream;
use support::client::{Conn, raw, upload_head};
use support::processes::assert_groups_gone;
use support::{
    Kind, Proxy, Scratch, large_transcript, plain_body, stream_body, transcript, wait_until,
};

both!(
    body_over_the_limit_gets_413,
    excess_requests_get_429,
    connections_beyond_the_cap,
    silent_agent_times_out_with_504,
    max_duration_ends_a_busy_stream,
);

/// The head of a chunked chat request.
const CHUNKED_HEAD: &[u8] = b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";

fn body_over_the_limit_gets_413(kind: Kind) {
    let scratch = Scratch::new("too-large");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-body-bytes", "1024"]);
    let big = plain_body(&"x".repeat(4096));
    // Declared too large: refused without reading it.
    let mut conn = proxy.connect();
    let request = raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        big.as_bytes(),
    );
    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    conn.send(&request[..head_end]);
    let reply = conn.reply();
    assert_eq!(reply.status, 413);
    assert_eq!(reply.error_code(), "request_too_large");
    // Chunked, with no length to go by.
    let mut conn = proxy.connect();
    let mut chunked = CHUNKED_HEAD.to_vec();
    for piece in big.as_bytes().chunks(500) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    conn.send(&chunked);
    let reply = conn.reply();
    assert_eq!(reply.status, 413);
    // A chunk declared over the limit: refused on its size line, without waiting for
    // the bytes (the connection stays open meanwhile).
    let mut conn = proxy.connect();
    conn.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.send(&[CHUNKED_HEAD, b"100000\r\n{\"model\""].concat());
    let reply = conn.reply();
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert_eq!(reply.error_code(), "request_too_large");
    // Under the limit, chunked: served.
    let small = plain_body("hi");
    let mut conn = proxy.connect();
    conn.send(
        format!(
            "{}{:x}\r\n{small}\r\n0\r\n\r\n",
            String::from_utf8_lossy(CHUNKED_HEAD),
            small.len()
        )
        .as_bytes(),
    );
    assert_eq!(conn.reply().status, 200);
    assert_eq!(
        scratch.runs().len(),
        1,
        "only the request within the limit ran"
    );
}

fn excess_requests_get_429(kind: Kind) {
    let scratch = Scratch::new("busy");
    let agent = scratch.agent(&["--hang"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-concurrent", "1"]);
    let mut first = proxy.connect();
    first.post_chat(&stream_body("hi"));
    assert!(wait_until(Duration::from_secs(10), || scratch.runs().len() == 1));
    assert_eq!(proxy.in_flight(), 1);
    let reply = proxy.chat(&stream_body("hi"));
    assert_eq!(reply.status, 429);
    assert_eq!(reply.error_code(), "rate_limit_exceeded");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(reply.header("x-should-retry"), Some("true"));
    drop(first);
    proxy.wait_idle();
    assert_eq!(scratch.runs().len(), 1);
}

/// Past `--max-connections`, new connections are refused at once (503), `/health` is
/// still answered; and under a descriptor limit the cap is lowered to fit, so uploads
/// that never finish do not lock everyone out.
fn connections_beyond_the_cap(kind: Kind) {
    let scratch = Scratch::new("max-connections");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let held = |proxy: &Proxy, n: usize| -> Vec<Conn> {
        let head = upload_head(1000);
        (0..n)
            .map(|_| {
                let mut conn = proxy.connect();
                conn.send(&head);
                conn
            })
            .collect()
    };
    let health_answers = |proxy: &Proxy| {
        let Ok(stream) = TcpStream::connect(proxy.addr) else {
            return false;
        };
        let mut conn = Conn::from(stream);
        if conn
            .stream
            .write_all(&raw("GET", "/health", &[], b""))
            .is_err()
        {
            return false;
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.reply().status))
            .is_ok_and(|status| status == 200)
    };
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &["--max-connections", "2", "--request-timeout-ms", "30000"],
    );
    let uploads = held(&proxy, 2);
    // Wait until both are being read (a request that gets through is answered 200).
    assert!(wait_until(Duration::from_secs(10), || {
        let reply = proxy.chat(&plain_body("hi"));
        reply.status == 503
    }));
    let reply = proxy.chat(&plain_body("hi"));
    assert_eq!(reply.status, 503);
    assert_eq!(reply.error_code(), "too_many_connections");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert!(health_answers(&proxy));
    drop(uploads);
    assert!(wait_until(Duration::from_secs(10), || proxy
        .chat(&plain_body("hi"))
        .status
        == 200));
    assert!(scratch.runs().len() == 1);
    proxy.wait_idle();
    drop(proxy);

    // 150 uploads that never end, under a limit of 128 descriptors.
    let proxy = Proxy::launch(
        kind,
        &[
            "--agent-bin".to_owned(),
            agent.display().to_string(),
            "--max-concurrent".to_owned(),
            "2".to_owned(),
            "--request-timeout-ms".to_owned(),
            "30000".to_owned(),
        ],
        &scratch,
        &[],
        Some(128),
    );
    let uploads = held(&proxy, 150);
    assert!(
        wait_until(Duration::from_secs(10), || health_answers(&proxy)),
        "/health unanswerable"
    );
    drop(uploads);
    assert!(wait_until(Duration::from_secs(10), || proxy
        .chat(&plain_body("hi"))
        .status
        == 200));
    proxy.wait_idle();
}

fn silent_agent_times_out_with_504(kind: Kind) {
    let scratch = Scratch::new("hang");
    let agent = scratch.agent(&["--hang", "--spawn-child"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--idle-timeout-ms", "300"]);
    for body in [plain_body("hi"), stream_body("hi")] {
        let started = Instant::now();
        let reply = proxy.chat(&body);
        assert_eq!(reply.status, 504, "{}", reply.text());
        assert_eq!(reply.error_code(), "agent_timeout");
        assert_eq!(reply.header("x-should-retry"), Some("true"));
        // Not at once: at the idle timeout (the clock has millisecond resolution).
        assert!(started.elapsed() >= Duration::from_millis(250));
    }
    let groups: HashSet<u32> = scratch.runs().iter().map(|r| r.pid).collect();
    assert_eq!(groups.len(), 2);
    assert_groups_gone(&groups, Duration::from_secs(5), "after the idle timeout");
    proxy.wait_idle();
}

/// An agent that always has output ready (it writes as fast as the pipe takes it) is
/// still stopped at `--max-duration-ms`, mid-stream, with the timeout in-band.
fn max_duration_ends_a_busy_stream(kind: Kind) {
    let scratch = Scratch::new("busy-stream");
    let large = large_transcript(&scratch, 64);
    let agent = scratch.agent(&["--transcript", &large, "--delay-ms", "0"]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--max-duration-ms", "300"]);
    let reply = proxy.chat(&stream_body("hi"));
    assert_eq!(reply.status, 200);
    let summary = check_stream(&reply.body);
    assert_eq!(summary.errors.len(), 1, "the stream ran to its end");
    assert_eq!(summary.errors[0]["code"], "agent_timeout");
    assert_eq!(summary.done, 1);
    proxy.wait_idle();
}
