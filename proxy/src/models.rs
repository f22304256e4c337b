//! `GET /v1/models`: the CLI's model listing, read by the core's
//! [`parse_models`](agentwire::cursor::parse_models), served from memory for a TTL, and
//! served stale when the CLI fails to list them again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use agentwire::cursor::{ModelEntry, parse_models};
use bytes::Bytes;

/// The last good `/v1/models` body and when it was made.
#[derive(Debug)]
pub struct ModelCache {
    ttl: Duration,
    last: Mutex<Option<(Instant, Bytes)>>,
}

impl ModelCache {
    /// An empty cache whose entries live `ttl`.
    pub fn new(ttl: Duration) -> ModelCache {
        ModelCache {
            ttl,
            last: Mutex::new(None),
        }
    }

    /// The cached body, if it is younger than the TTL.
    pub fn fresh(&self, now: Instant) -> Option<Bytes> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.as_ref()
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl)
            .map(|(_, body)| body.clone())
    }

    /// Takes a new listing (`cursor-agent models` stdout, or why it failed). A listing
    /// with models becomes the cached body; otherwise the last good body is served stale,
    /// and only without one is the failure returned.
    pub fn update(&self, now: Instant, listing: Result<Vec<u8>, String>) -> Result<Bytes, String> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let why = match listing.map(|bytes| parse_models(&bytes)) {
            Ok(models) if !models.is_empty() => {
                let body = Bytes::from(models_json(&models));
                *last = Some((now, body.clone()));
                return Ok(body);
            }
            Ok(_) => "the CLI listed no models".to_owned(),
            Err(why) => why,
        };
        match last.as_ref() {
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
}
