//! Who may drive the agent: the API key before anything else, web pages (cross-origin
//! requests, DNS rebinding, bodies sent without a preflight) refused, the origins and
//! hosts let in on purpose, and none of the proxy's secrets in the agent's environment.

mod support;

use support::acp::two_prompts;
use support::both;
use support::client::raw_to;
use support::{Kind, Proxy, Scratch, example, plain_body, transcript};

both!(
    api_key_is_required,
    web_pages_cannot_drive_the_agent,
    allowed_origins_get_cors,
    the_agent_gets_none_of_the_proxys_secrets,
);

fn api_key_is_required(kind: Kind) {
    let scratch = Scratch::new("auth");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &["--api-key", "sk-test"]);
    for headers in [
        vec![],
        vec![("authorization", "Bearer sk-wrong")],
        vec![("authorization", "Bearer sk-tes")],
        vec![("authorization", "sk-test")],
    ] {
        for path in [
            "/v1/chat/completions",
            "/v1/models",
            "/health",
            "/v1/unknown",
        ] {
            let reply = proxy.request("POST", path, &headers, plain_body("hi").as_bytes());
            assert_eq!(reply.status, 401, "{path} {headers:?}");
            assert_eq!(reply.error_code(), "invalid_api_key");
        }
    }
    assert!(scratch.runs().is_empty());
    // Preflights carry no credentials.
    assert_eq!(
        proxy
            .request("OPTIONS", "/v1/chat/completions", &[], b"")
            .status,
        204
    );
    // `/health` tells a caller without the key that the server is up, and nothing more.
    for headers in [vec![], vec![("authorization", "Bearer sk-wrong")]] {
        let reply = proxy.request("GET", "/health", &headers, b"");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json(), serde_json::json!({"status": "ok"}));
    }
    let reply = proxy.request(
        "GET",
        "/health",
        &[("authorization", "Bearer sk-test")],
        b"",
    );
    assert_eq!(reply.json()["in_flight"], 0);
    let auth = [
        ("authorization", "Bearer sk-test"),
        ("content-type", "application/json"),
    ];
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &auth,
        plain_body("hi").as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
}

/// The repro and its relatives: a page's cross-origin request, a DNS-rebinding
/// page's request (its own name in `Host`), and bodies a page can send without a
/// preflight. None may run the agent.
fn web_pages_cannot_drive_the_agent(kind: Kind) {
    let scratch = Scratch::new("web-pages");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(kind, &agent, &scratch, &[]);
    let body = plain_body("hi");
    let chat = |host: Option<&str>, headers: &[(&str, &str)]| {
        let mut conn = proxy.connect();
        conn.send(&raw_to(
            host,
            "POST",
            "/v1/chat/completions",
            headers,
            body.as_bytes(),
        ));
        conn.reply()
    };
    let evil = ("origin", "http://evil.example");
    for content_type in ["text/plain", "application/json"] {
        let reply = chat(Some("localhost"), &[evil, ("content-type", content_type)]);
        assert_eq!(reply.status, 403, "{content_type}: {}", reply.text());
        assert_eq!(reply.error_code(), "origin_not_allowed");
        assert_eq!(reply.header("access-control-allow-origin"), None);
    }
    let preflight = proxy.request(
        "OPTIONS",
        "/v1/chat/completions",
        &[evil, ("access-control-request-method", "POST")],
        b"",
    );
    assert_eq!(preflight.status, 403);
    assert_eq!(preflight.header("access-control-allow-origin"), None);
    // Without an Origin, bodies a form or `sendBeacon` can send are refused too.
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let headers: Vec<_> = content_type
            .map(|t| ("content-type", t))
            .into_iter()
            .collect();
        let reply = chat(Some("localhost"), &headers);
        assert_eq!(reply.status, 415, "{content_type:?}");
        assert_eq!(reply.error_code(), "unsupported_media_type");
    }
    // DNS rebinding: the page's own name arrives as the Host.
    let json = [("content-type", "application/json")];
    for host in [
        "evil.example",
        "evil.example:32124",
        "127.0.0.1.evil.example",
    ] {
        let reply = chat(Some(host), &json);
        assert_eq!(reply.status, 400, "{host}");
        assert_eq!(reply.error_code(), "invalid_host");
    }
    let mut conn = proxy.connect();
    conn.send(&raw_to(
        None,
        "POST",
        "http://evil.example/v1/chat/completions",
        &json,
        body.as_bytes(),
    ));
    assert_eq!(
        conn.reply().status,
        400,
        "an absolute-form target names the host"
    );
    // HTTP/1.1 needs exactly one Host.
    assert_eq!(chat(None, &json).status, 400);
    assert_eq!(
        chat(Some("localhost"), &[json[0], ("host", "localhost")]).status,
        400
    );
    assert!(scratch.runs().is_empty(), "no agent ran");
    // What a local client names the server by is fine.
    let port = proxy.addr.port().to_string();
    for host in [
        "localhost",
        "127.0.0.1",
        "[::1]",
        "app.localhost",
        "192.168.1.20",
    ] {
        let mut conn = proxy.connect();
        let host = format!("{host}:{port}");
        conn.send(&raw_to(Some(&host), "GET", "/health", &[], b""));
        assert_eq!(conn.reply().status, 200, "{host}");
    }
    assert_eq!(chat(Some("localhost"), &json).status, 200);
    proxy.wait_idle();
}

/// `--cors-origin` lets one page in on purpose; `--allowed-host` names a host.
fn allowed_origins_get_cors(kind: Kind) {
    let scratch = Scratch::new("cors");
    let agent = scratch.agent(&["--transcript", &transcript("no_usage.jsonl")]);
    let proxy = Proxy::start(
        kind,
        &agent,
        &scratch,
        &[
            "--api-key",
            "sk-test",
            "--cors-origin",
            "http://localhost:3000",
            "--allowed-host",
            "proxy.test",
        ],
    );
    let origin = ("origin", "http://localhost:3000");
    let key = ("authorization", "Bearer sk-test");
    let json = ("content-type", "application/json");
    let reply = proxy.request(
        "OPTIONS",
        "/v1/chat/completions",
        &[
            origin,
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization, content-type, x-stainless-os",
            ),
        ],
        b"",
    );
    assert_eq!(reply.status, 204);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    assert_eq!(reply.header("vary"), Some("origin"));
    assert!(
        reply
            .header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert!(
        reply
            .header("access-control-allow-headers")
            .unwrap()
            .contains("x-stainless-os")
    );
    let body = plain_body("hi");
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &[origin, key, json],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    // The page can read why it was refused.
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &[origin, json],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    let other = ("origin", "http://localhost:3001");
    let reply = proxy.request(
        "POST",
        "/v1/chat/completions",
        &[other, key, json],
        body.as_bytes(),
    );
    assert_eq!(reply.status, 403);
    let mut conn = proxy.connect();
    conn.send(&raw_to(
        Some("PROXY.test:8080"),
        "GET",
        "/health",
        &[key],
        b"",
    ));
    assert_eq!(conn.reply().json()["status"], "ok");
    assert_eq!(scratch.runs().len(), 1);
}

/// The proxy's API key, from its environment, does not reach the agent's (nor does any
/// variable holding it).
fn the_agent_gets_none_of_the_proxys_secrets(kind: Kind) {
    // The per-request agent, and the warm ACP agent.
    let stand_ins = [
        (
            example("replay_agent"),
            format!("--transcript '{}'", transcript("no_usage.jsonl")),
            None,
        ),
        (
            example("acp_agent"),
            format!("--recording '{}'", two_prompts()),
            Some("acp"),
        ),
    ];
    for (stand_in, flags, protocol) in stand_ins {
        let scratch = Scratch::new("env");
        let env = scratch.path("env.txt");
        let agent = scratch.script(
            "agent.sh",
            &format!(
                "#!/bin/sh\nenv > '{}'\nexec '{}' {flags} \"$@\"\n",
                env.display(),
                stand_in.display(),
            ),
        );
        let secret = "sk-env-secret-7f3a";
        let mut args = vec!["--agent-bin".to_owned(), agent.display().to_string()];
        if let Some(protocol) = protocol {
            args.extend(["--agent-protocol".to_owned(), protocol.to_owned()]);
        }
        let proxy = Proxy::launch(
            kind,
            &args,
            &scratch,
            &[
                ("AGENTWIRE_API_KEY", secret),
                ("COPY_OF_THE_KEY", secret),
                ("PROXY_TEST_MARKER", "passed-on"),
            ],
            None,
        );
        let bearer = format!("Bearer {secret}");
        let reply = proxy.request(
            "POST",
            "/v1/chat/completions",
            &[
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            plain_body("Ask alpha: print your environment").as_bytes(),
        );
        assert_eq!(reply.status, 200, "{protocol:?}: {}", reply.text());
        let seen = std::fs::read_to_string(&env).unwrap();
        assert!(seen.contains("PROXY_TEST_MARKER=passed-on"), "{seen}");
        assert!(!seen.contains(secret), "{protocol:?}: {seen}");
        assert!(!seen.contains("AGENTWIRE_API_KEY"), "{protocol:?}: {seen}");
    }
}
