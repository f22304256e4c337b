//! HTTP/1 read strictly: malformed requests of every kind refused promptly with the
//! server left healthy, request framings a front proxy could read otherwise refused
//! (request smuggling), and `Expect: 100-continue`, HTTP/1.0 and absolute-form targets.

mod support;

use std::io::Write;
use std::net::Shutdown;
use std::time::Duration;

use support::both;
use support::checks::check_stream;
use support::client::raw;
use support::processes::zombies_of;
use support::{Kind, Proxy, Scratch, plain_body, stream_body, transcript};

both!(
    malformed_requests_leave_it_healthy,
    request_framing_is_strict,
    http_1_details,
);

fn malformed_requests_leave_it_healthy(kind: Kind) {
    let scratch = Scratch::new("malformed");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--header-timeout-ms", "2000"]);
    let json = |body: &[u8]| {
        raw(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body,
        )
    };
    let cases: Vec<Vec<u8>> = vec![
        b"\x00\x01\x02\x03\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 7\r\n\r\nhello".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\nbad header\r\n\r\n".to_vec(),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        [b"GET /".as_slice(), &vec![b'a'; 70_000], b" HTTP/1.1\r\n\r\n"].concat(),
        json(b"{"),
        json(b"[]"),
        json(b"null"),
        json(b"{\"model\":\"auto\",\"messages\":\"hi\"}"),
        json(b"{\"model\":\"\xff\xfe\",\"messages\":[]}"),
        json(b"{\"model\":\"--force\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}"),
        json("{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}".as_bytes()),
        json(&[b'{'; 5000]),
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..1000 {
        let request = if i < cases.len() * 10 {
            cases[i % cases.len()].clone()
        } else {
            // Random bytes, sometimes after a valid request line.
            let len = 1 + (x % 300) as usize;
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if i % 2 == 0 {
                bytes.splice(
                    0..0,
                    b"POST /v1/chat/completions HTTP/1.1\r\n".iter().copied(),
                );
            }
            bytes.extend_from_slice(b"\r\n\r\n");
            bytes
        };
        let mut conn = proxy.connect();
        let _ = conn.stream.write_all(&request);
        let _ = conn.stream.shutdown(Shutdown::Write);
        // Whatever the answer (a 4xx, or a closed connection), it comes promptly.
        assert!(
            conn.closed_within(Duration::from_secs(10)),
            "request {i} left hanging"
        );
        if conn.buf.starts_with(b"HTTP/1.1 2") {
            panic!(
                "request {i} was accepted: {:?}",
                String::from_utf8_lossy(&request)
            );
        }
    }
    proxy.wait_idle();
    let reply = proxy.chat(&stream_body("hi"));
    assert_eq!(reply.status, 200);
    // The answer can reach the client before its agent is reaped; the slot is freed after.
    proxy.wait_idle();
    assert!(zombies_of(proxy.child.id()).is_empty());
}

/// Request framing read strictly (RFC 9112 §6): what a front proxy could read otherwise
/// is refused, and the connection closed.
fn request_framing_is_strict(kind: Kind) {
    let scratch = Scratch::new("framing");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let body = plain_body("hi");
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let length = format!("content-length: {}\r\n", body.len());
    let cases: Vec<(String, String, u16)> = vec![
        (format!("content-length: 5\r\n{length}"), body.clone(), 400),
        (
            format!("content-length: +{}\r\n", body.len()),
            body.clone(),
            400,
        ),
        (
            "transfer-encoding: chunked, identity\r\n".into(),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n".into(),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: xchunked\r\n".into(),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: gzip, chunked\r\n".into(),
            chunked.clone(),
            501,
        ),
        (
            format!("transfer-encoding: chunked\r\n{length}"),
            chunked.clone(),
            400,
        ),
        (
            "transfer-encoding: chunked\r\n".into(),
            format!("{:x}\r\n{body}XX0\r\n\r\n", body.len()),
            400,
        ),
        (
            "transfer-encoding: chunked\r\n".into(),
            format!("{:x};a\nb\r\n{body}\r\n0\r\n\r\n", body.len()),
            400,
        ),
        (
            "transfer-encoding: chunked\r\n".into(),
            chunked.clone(),
            200,
        ),
        (length.clone(), body.clone(), 200),
    ];
    let mut served = 0;
    for (headers, body, status) in cases {
        let mut conn = proxy.connect();
        conn.send(
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n{headers}\r\n{body}"
            )
            .as_bytes(),
        );
        let reply = conn.reply();
        assert_eq!(
            reply.status,
            status,
            "{headers:?} {body:?}: {}",
            reply.text()
        );
        if status == 200 {
            served += 1;
        } else {
            assert!(
                conn.closed_within(Duration::from_secs(10)),
                "{headers:?}: still open"
            );
        }
    }
    // Transfer-Encoding in HTTP/1.0.
    let mut conn = proxy.connect();
    conn.send(
        format!(
            "POST /v1/chat/completions HTTP/1.0\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{chunked}"
        )
        .as_bytes(),
    );
    assert_eq!(conn.reply().status, 400);
    assert_eq!(scratch.runs().len(), served);
}

/// `Expect: 100-continue`, HTTP/1.0 clients and absolute-form targets.
fn http_1_details(kind: Kind) {
    let scratch = Scratch::new("http-1");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let body = stream_body("hi");
    // The client waits for the go-ahead before it sends the body.
    let mut conn = proxy.connect();
    conn.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = raw(
        "POST",
        "/v1/chat/completions",
        &[
            ("content-type", "application/json"),
            ("expect", "100-continue"),
        ],
        body.as_bytes(),
    );
    head.truncate(head.len() - body.len());
    conn.send(&head);
    assert_eq!(conn.head().0, 100);
    conn.send(body.as_bytes());
    let reply = conn.reply();
    assert_eq!(reply.status, 200);
    assert_eq!(check_stream(&reply.body).done, 1);
    // HTTP/1.0: no chunked coding; the stream ends with the connection.
    let mut conn = proxy.connect();
    conn.send(
        format!(
            "POST /v1/chat/completions HTTP/1.0\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let reply = conn.reply();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), None);
    let summary = check_stream(&reply.body);
    assert_eq!((summary.done, summary.content.as_str()), (1, "Hi there!"));
    // An absolute-form target is routed by its path.
    let reply = proxy.request(
        "POST",
        "http://localhost/v1/chat/completions",
        &[("content-type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(scratch.runs().len(), 3);
    proxy.wait_idle();
}
