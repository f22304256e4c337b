//! `registry::Registry` for JavaScript: which agent session a request continues.
//!
//! Its settings arrive as the JSON of the package's `RegistryConfig` object (the
//! conventions of module `config`); its counters and released sessions leave as JSON
//! texts. Requests reach it through a bridge (`RawBridge::in_conversation`,
//! `end_conversation_turn`), which borrows it for the call.

use agentwire::registry::{FreshReason, Registry, RegistryConfig};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::wasm_bindgen;

use crate::config::{from_json, present, set};
use crate::error::{RawError, millis};
use crate::names::Camel;

/// Parses `json` (or nothing: `base`) into a [`RegistryConfig`], naming `what` in errors.
pub(crate) fn parse_config(
    json: Option<&str>,
    base: RegistryConfig,
) -> Result<RegistryConfig, RawError> {
    let mut config = base;
    if let Some(json) = json {
        let patch: RegistryConfigPatch = from_json(json, "registry config")?;
        patch.apply(&mut config);
    }
    Ok(config)
}

/// The package's `RegistryConfig`: also `AcpConfig.conversations`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RegistryConfigPatch {
    #[serde(default, deserialize_with = "present")]
    enabled: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    ttl_ms: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    max_parked: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    max_parked_per_owner: Option<usize>,
}

impl RegistryConfigPatch {
    pub(crate) fn apply(self, config: &mut RegistryConfig) {
        // Destructured whole, so a field added to the patch cannot be forgotten here.
        let RegistryConfigPatch {
            enabled,
            ttl_ms,
            max_parked,
            max_parked_per_owner,
        } = self;
        set(&mut config.enabled, enabled);
        set(&mut config.ttl_ms, ttl_ms);
        set(&mut config.max_parked, max_parked);
        set(&mut config.max_parked_per_owner, max_parked_per_owner);
    }
}

/// `RegistryConfig` as the package reads it back (`Registry.config`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigView {
    enabled: bool,
    ttl_ms: u64,
    max_parked: usize,
    max_parked_per_owner: usize,
}

/// A registry; the TypeScript `Registry` wraps it.
#[wasm_bindgen]
pub struct RawRegistry {
    pub(crate) registry: Registry,
}

#[wasm_bindgen]
impl RawRegistry {
    /// An empty registry. `config` is the JSON of the package's `RegistryConfig`
    /// (nothing: the defaults).
    #[wasm_bindgen(constructor)]
    pub fn new(config: Option<String>) -> Result<RawRegistry, RawError> {
        let config = parse_config(config.as_deref(), RegistryConfig::default())?;
        Ok(RawRegistry {
            registry: Registry::new(config),
        })
    }

    // Getters.

    /// Sessions parked, waiting for their next request.
    pub fn parked(&self) -> u32 {
        // Bounded by `maxParked`, itself far below 2^32 in a wasm32 memory.
        self.registry.parked() as u32
    }

    /// Sessions held by a request.
    pub fn busy(&self) -> u32 {
        self.registry.busy() as u32
    }

    /// The counters, as JSON: `{"resumed", "fresh": {reason: n, …}, "refused",
    /// "expired", "evicted", "dropped"}`, every reason present.
    pub fn stats(&self) -> String {
        stats_json(self.registry.stats())
    }

    /// The settings, as JSON (the package's `RegistryConfig`, every field present).
    pub fn config(&self) -> String {
        let config = self.registry.config();
        let view = ConfigView {
            enabled: config.enabled,
            ttl_ms: config.ttl_ms,
            max_parked: config.max_parked,
            max_parked_per_owner: config.max_parked_per_owner,
        };
        serde_json::to_string(&view).expect("a config serializes")
    }

    // Inputs.

    /// A deadline from `pollTimeout` passed.
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.registry.handle_timeout(now_ms);
        Ok(())
    }

    /// Releases every parked session and forgets the busy ones.
    pub fn clear(&mut self, now_ms: f64) -> Result<(), RawError> {
        let now_ms = millis(now_ms, "nowMs")?;
        self.registry.clear(now_ms);
        Ok(())
    }

    // Outputs.

    /// The next session let go, as JSON `{"agentSession", "reason"}`, or nothing.
    #[wasm_bindgen(js_name = pollReleased)]
    pub fn poll_released(&mut self) -> Option<String> {
        let released = self.registry.poll_released()?;
        let json = ReleasedJson {
            agent_session: &released.agent_session,
            reason: Camel(released.reason),
        };
        Some(serde_json::to_string(&json).expect("a release serializes"))
    }

    /// When `handleTimeout` is next due, on the caller's clock; nothing when no session
    /// is parked.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> Option<f64> {
        // As the bridge's: exact as f64 below 2^53 ms.
        self.registry.poll_timeout().map(|ms| ms as f64)
    }

    /// Test only: panics while the registry is borrowed, as a bug inside it would.
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = testPanic)]
    pub fn test_panic(&mut self) {
        panic!("RawRegistry::test_panic");
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReleasedJson<'a> {
    agent_session: &'a str,
    reason: Camel<agentwire::registry::ReleaseReason>,
}

/// The JSON of `stats` (see [`RawRegistry::stats`]), the fresh reasons in the core's
/// order.
pub(crate) fn stats_json(stats: &agentwire::registry::RegistryStats) -> String {
    use std::fmt::Write;
    let mut json = format!("{{\"resumed\":{},\"fresh\":{{", stats.resumed);
    for (i, (reason, n)) in FreshReason::ALL.iter().zip(stats.fresh).enumerate() {
        let comma = if i == 0 { "" } else { "," };
        let name = crate::names::CamelCase(reason.name());
        write!(json, "{comma}\"{name}\":{n}").expect("writing to a string");
    }
    write!(
        json,
        "}},\"refused\":{},\"expired\":{},\"evicted\":{},\"dropped\":{}}}",
        stats.refused, stats.expired, stats.evicted, stats.dropped
    )
    .expect("writing to a string");
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn every_field_reaches_its_rust_field() {
        let json = r#"{"enabled":false,"ttlMs":1,"maxParked":2,"maxParkedPerOwner":3}"#;
        let config = parse_config(Some(json), RegistryConfig::default()).unwrap();
        let expected = RegistryConfig {
            enabled: false,
            ttl_ms: 1,
            max_parked: 2,
            max_parked_per_owner: 3,
        };
        assert_eq!(config, expected);
        let registry = RawRegistry::new(Some(json.into())).unwrap();
        assert_eq!(registry.config(), json, "read back as given");
        let base = RegistryConfig {
            max_parked: 16,
            ..RegistryConfig::default()
        };
        assert_eq!(parse_config(Some("{}"), base.clone()).unwrap(), base);
        assert_eq!(parse_config(None, base.clone()).unwrap(), base);
    }

    #[test]
    fn what_does_not_fit_is_refused_with_the_field_named() {
        for (json, named) in [
            (r#"{"ttl":1}"#, "ttl"),
            (r#"{"ttlMs":-1}"#, "-1"),
            (r#"{"enabled":"no"}"#, "no"),
            (r#"{"maxParked":null}"#, "null"),
        ] {
            let error = RawRegistry::new(Some(json.into())).err().unwrap();
            assert_eq!(error.code_value(), Code::InvalidArgument, "{json}");
            assert!(
                error.message().contains(named),
                "{json}: {}",
                error.message()
            );
            assert!(error.message().starts_with("invalid registry config"));
        }
    }

    #[test]
    fn stats_name_every_fresh_reason() {
        let mut registry = RawRegistry::new(None).unwrap();
        let stats: serde_json::Value = serde_json::from_str(&registry.stats()).unwrap();
        assert_eq!(stats["resumed"], 0);
        let fresh = stats["fresh"].as_object().unwrap();
        assert_eq!(fresh.len(), FreshReason::ALL.len());
        assert!(fresh.contains_key("noSession"), "{fresh:?}");
        assert!(
            registry
                .stats()
                .starts_with(r#"{"resumed":0,"fresh":{"disabled":0,"noSession":0,"#),
            "the core's order: {}",
            registry.stats()
        );
        assert_eq!(registry.poll_released(), None);
        assert_eq!(registry.poll_timeout(), None);
    }
}
