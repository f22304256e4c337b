//! `/v1/models` from cursor-agent's listing: cached, served stale when the CLI fails, and
//! listed at most once at a time.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::both;
use support::client::{Conn, Reply, raw};
use support::{Kind, Proxy, ROOT, Scratch, wait_until};

both!(
    models_are_listed_cached_and_served_stale,
    models_are_listed_one_at_a_time,
);

/// A stand-in whose `models` counts its calls, fails while `fail` exists, and (made with
/// `hold`) answers only once `release` exists.
struct ModelsAgent {
    path: PathBuf,
    count: PathBuf,
    fail: PathBuf,
    release: PathBuf,
}

impl ModelsAgent {
    fn new(scratch: &Scratch, hold: bool) -> ModelsAgent {
        let listing = format!("{ROOT}/tests/fixtures/models/coloured.txt");
        let (count, fail, release) = (
            scratch.path("count"),
            scratch.path("fail"),
            scratch.path("release"),
        );
        let wait = if hold {
            format!(
                "while [ ! -e '{}' ]; do sleep 0.01; done; ",
                release.display()
            )
        } else {
            String::new()
        };
        let path = scratch.script(
            "agent.sh",
            &format!(
                "#!/bin/sh\ncase \"$1\" in\n--version) echo 2026.01.01-test ;;\nmodels) echo x >> '{}'; {wait}[ -e '{}' ] && exit 3; cat '{listing}' ;;\n*) exit 1 ;;\nesac\n",
                count.display(),
                fail.display()
            ),
        );
        ModelsAgent {
            path,
            count,
            fail,
            release,
        }
    }

    fn calls(&self) -> usize {
        std::fs::read_to_string(&self.count)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

fn models_are_listed_cached_and_served_stale(kind: Kind) {
    let scratch = Scratch::new("models");
    let models = ModelsAgent::new(&scratch, false);
    let (agent, fail) = (&models.path, &models.fail);
    let calls = || models.calls();
    let ids = |reply: &Reply| -> Vec<String> {
        reply.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let expected = ["auto", "gpt-5", "sonnet-4.5-thinking", "grok"];
    // Cached for the TTL: two requests, one listing.
    let proxy = Proxy::start(kind, agent, &scratch, &[]);
    assert_eq!(proxy.health()["agent"]["version"], "2026.01.01-test");
    for _ in 0..2 {
        let reply = proxy.request("GET", "/v1/models", &[], b"");
        assert_eq!(reply.status, 200);
        assert_eq!(ids(&reply), expected);
        assert_eq!(reply.json()["object"], "list");
    }
    assert_eq!(calls(), 1);
    drop(proxy);
    // TTL 0: every request lists again; when the CLI fails, the last list is served.
    let proxy = Proxy::start(kind, agent, &scratch, &["--models-ttl-secs", "0"]);
    assert_eq!(ids(&proxy.request("GET", "/v1/models", &[], b"")), expected);
    std::fs::write(fail, "").unwrap();
    let reply = proxy.request("GET", "/v1/models", &[], b"");
    assert_eq!(reply.status, 200);
    assert_eq!(ids(&reply), expected, "stale list");
    assert_eq!(calls(), 3);
    drop(proxy);
    // Failing with nothing cached: an OpenAI-shaped 503.
    let proxy = Proxy::start(kind, agent, &scratch, &[]);
    let reply = proxy.request("GET", "/v1/models", &[], b"");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.error_code(), "models_unavailable");
}

/// `/v1/models` starts at most one listing at a time; a failed one is remembered briefly.
fn models_are_listed_one_at_a_time(kind: Kind) {
    let scratch = Scratch::new("models-single-flight");
    let models = ModelsAgent::new(&scratch, true);
    let (agent, fail, release) = (&models.path, &models.fail, &models.release);
    let calls = || models.calls();
    let proxy = Proxy::start(kind, agent, &scratch, &["--max-concurrent", "1"]);
    let mut conns: Vec<Conn> = (0..20)
        .map(|_| {
            let mut conn = proxy.connect();
            conn.send(&raw("GET", "/v1/models", &[], b""));
            conn
        })
        .collect();
    assert!(wait_until(Duration::from_secs(10), || calls() >= 1));
    std::fs::write(release, "").unwrap();
    for conn in &mut conns {
        let reply = conn.reply();
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["data"][0]["id"], "auto");
    }
    assert_eq!(calls(), 1, "twenty requests, one listing");
    drop(proxy);
    // A failing CLI with nothing cached: 503, and the failure is remembered.
    std::fs::write(fail, "").unwrap();
    let proxy = Proxy::start(kind, agent, &scratch, &[]);
    for _ in 0..3 {
        let reply = proxy.request("GET", "/v1/models", &[], b"");
        assert_eq!(reply.status, 503);
        assert_eq!(reply.error_code(), "models_unavailable");
    }
    assert_eq!(calls(), 2, "one more listing for three requests");
}
