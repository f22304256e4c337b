//! `GET /v1/models`: the CLI's model listing, read by the core's [`parse_models`], served
//! from memory for a TTL, and served stale when the CLI fails to list them again.
//!
//! Listing starts a process (`cursor-agent models`) outside `--max-concurrent`, so at most
//! one listing runs at a time: while it does, other requests get the last list (stale), or
//! when there is none they wait for it. A failure is remembered for a short while too, so a
//! CLI that keeps failing is not started again for every request.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agentwire::cursor::{ModelEntry, parse_models};
use bytes::Bytes;

/// How long a failed listing is remembered (at most the TTL).
const FAILURE_TTL: Duration = Duration::from_secs(5);

/// The model list, its age, and the listing in progress.
#[derive(Debug)]
pub struct ModelCache {
    ttl: Duration,
    state: Mutex<State>,
    /// Signalled when a listing ends.
    listed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The last good body and when it was made.
    last: Option<(Instant, Bytes)>,
    /// The last failure (while no listing succeeded since) and when.
    failure: Option<(Instant, String)>,
    /// Whether a listing runs.
    listing: bool,
}

/// Clears the listing flag however the listing ends (a panic included), waking the
/// requests that wait for it.
struct Listing<'a>(&'a ModelCache);

impl Drop for Listing<'_> {
    fn drop(&mut self) {
        self.0.lock().listing = false;
        self.0.listed.notify_all();
    }
}

impl ModelCache {
    /// An empty cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> ModelCache {
        ModelCache {
            ttl,
            state: Mutex::new(State::default()),
            listed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `/v1/models` body: from memory while fresh, else from `list` (which runs
    /// `cursor-agent models`), one listing at a time. Blocks while another listing runs
    /// and there is no list to serve meanwhile, for at most `wait`.
    pub fn get(
        &self,
        wait: Duration,
        list: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> Result<Bytes, String> {
        let give_up = Instant::now() + wait;
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            if let Some(answer) = self.answer(&state, now) {
                return answer;
            }
            if !state.listing {
                break;
            }
            let left = give_up.saturating_duration_since(now);
            if left.is_zero() {
                return Err("listing the models takes too long".to_owned());
            }
            state = self
                .listed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.listing = true;
        drop(state);
        let listing = Listing(self);
        let listed = list();
        let body = self.update(Instant::now(), listed);
        drop(listing);
        body
    }

    /// What to answer without listing, if anything: a fresh list; the last list while a
    /// listing runs or after a recent failure; a recent failure when there is no list.
    fn answer(&self, state: &State, now: Instant) -> Option<Result<Bytes, String>> {
        let young = |at: Instant, ttl: Duration| now.saturating_duration_since(at) < ttl;
        if let Some((at, body)) = &state.last {
            if young(*at, self.ttl) || state.listing {
                return Some(Ok(body.clone()));
            }
        }
        match &state.failure {
            Some((at, why)) if young(*at, FAILURE_TTL.min(self.ttl)) => Some(match &state.last {
                Some((_, stale)) => Ok(stale.clone()),
                None => Err(why.clone()),
            }),
            _ => None,
        }
    }

    /// The cached body, if it is younger than the TTL.
    pub fn fresh(&self, now: Instant) -> Option<Bytes> {
        let state = self.lock();
        state
            .last
            .as_ref()
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl)
            .map(|(_, body)| body.clone())
    }

    /// Takes a new listing (`cursor-agent models` stdout, or why it failed). A listing
    /// with models becomes the cached body; otherwise the failure is remembered, the last
    /// good body is served stale, and only without one is the failure returned.
    pub fn update(&self, now: Instant, listing: Result<Vec<u8>, String>) -> Result<Bytes, String> {
        let mut state = self.lock();
        let why = match listing.map(|bytes| parse_models(&bytes)) {
            Ok(models) if !models.is_empty() => {
                let body = Bytes::from(models_json(&models));
                state.last = Some((now, body.clone()));
                state.failure = None;
                return Ok(body);
            }
            Ok(_) => "the CLI listed no models".to_owned(),
            Err(why) => why,
        };
        state.failure = Some((now, why.clone()));
        match state.last.as_ref() {
            Some((_, stale)) => {
                tracing::warn!(%why, "listing models failed; serving the last list");
                Ok(stale.clone())
            }
            None => Err(why),
        }
    }
}

/// The OpenAI model list: `{"object":"list","data":[{"id","object":"model",…}]}`.
pub fn models_json(models: &[ModelEntry]) -> Vec<u8> {
    let data: Vec<serde_json::Value> = models
        .iter()
        .map(|m| {
            serde_json::json!({
                "id": m.id,
                "object": "model",
                "created": 0,
                "owned_by": "cursor",
                "name": m.name,
            })
        })
        .collect();
    serde_json::json!({"object": "list", "data": data})
        .to_string()
        .into_bytes()
}

/// The warm ACP agent's model list, in one body both SDKs read: OpenAI's
/// (`object: "list"`, entries with `id`, `object`, `created`, `owned_by`) and
/// Anthropic's (`data` entries with `type`, `id`, `display_name`, `created_at`;
/// `has_more`, `first_id`, `last_id`). `/v1/models` is one path for every dialect's
/// clients, and each reads only its own fields.
pub fn acp_models_json(ids: &[String]) -> Vec<u8> {
    let data: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| {
            serde_json::json!({
                "id": id,
                "object": "model",
                "created": 0,
                "owned_by": "acp-agent",
                "type": "model",
                "display_name": id,
                "created_at": "1970-01-01T00:00:00Z",
            })
        })
        .collect();
    serde_json::json!({
        "object": "list",
        "data": data,
        "has_more": false,
        "first_id": ids.first(),
        "last_id": ids.last(),
    })
    .to_string()
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(body: &Bytes) -> Vec<String> {
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        value["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn ttl_then_stale_on_failure() {
        let t0 = Instant::now();
        let ttl = Duration::from_secs(60);
        let cache = ModelCache::new(ttl);
        assert!(cache.fresh(t0).is_none());
        assert!(
            cache.update(t0, Err("down".into())).is_err(),
            "nothing to serve"
        );
        let body = cache
            .update(t0, Ok(b"a - A (default)\nb - B\n".to_vec()))
            .unwrap();
        assert_eq!(ids(&body), ["a", "b"]);
        assert_eq!(cache.fresh(t0 + ttl / 2), Some(body.clone()));
        assert!(cache.fresh(t0 + ttl).is_none(), "expired");
        let later = t0 + ttl * 2;
        assert_eq!(
            cache.update(later, Err("down".into())).unwrap(),
            body,
            "stale"
        );
        assert_eq!(
            cache
                .update(later, Ok(b"Available models\n\n".to_vec()))
                .unwrap(),
            body
        );
        let newer = cache.update(later, Ok(b"c - C\n".to_vec())).unwrap();
        assert_eq!(ids(&newer), ["c"]);
    }

    /// Twenty requests at once with nothing cached: one listing, everyone served by it.
    #[test]
    fn one_listing_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::mpsc;
        let cache = ModelCache::new(Duration::from_secs(60));
        let listings = AtomicUsize::new(0);
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let waiting = |cache: &ModelCache| cache.lock().listing;
        let (cache, listings, released) = (&cache, &listings, &released);
        std::thread::scope(|scope| {
            let list = move || {
                listings.fetch_add(1, Ordering::SeqCst);
                // Held until every other request has asked.
                released.lock().unwrap().recv().unwrap();
                Ok(b"a - A\n".to_vec())
            };
            let first = scope.spawn(move || cache.get(Duration::from_secs(30), list));
            while !waiting(cache) {
                std::thread::yield_now();
            }
            let others: Vec<_> = (0..19)
                .map(|_| {
                    scope.spawn(move || {
                        cache.get(Duration::from_secs(30), || {
                            listings.fetch_add(1, Ordering::SeqCst);
                            Ok(b"b - B\n".to_vec())
                        })
                    })
                })
                .collect();
            release.send(()).unwrap();
            assert_eq!(ids(&first.join().unwrap().unwrap()), ["a"]);
            for other in others {
                assert_eq!(ids(&other.join().unwrap().unwrap()), ["a"]);
            }
        });
        assert_eq!(listings.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn failures_are_remembered_briefly() {
        let cache = ModelCache::new(Duration::from_secs(60));
        let mut listings = 0;
        for _ in 0..2 {
            let got = cache.get(Duration::from_secs(1), || {
                listings += 1;
                Err("down".to_owned())
            });
            assert_eq!(got, Err("down".to_owned()));
        }
        assert_eq!(listings, 1, "the second request did not list again");
        // Once it is old, the next request lists again.
        let t0 = Instant::now();
        cache.lock().failure = Some((t0 - FAILURE_TTL, "down".to_owned()));
        let body = cache.get(Duration::from_secs(1), || Ok(b"c - C\n".to_vec()));
        assert_eq!(ids(&body.unwrap()), ["c"]);
        // A zero TTL remembers nothing.
        let uncached = ModelCache::new(Duration::ZERO);
        let mut count = 0;
        for _ in 0..2 {
            let _ = uncached.get(Duration::from_secs(1), || {
                count += 1;
                Err("down".to_owned())
            });
        }
        assert_eq!(count, 2);
    }
}
