//! `aw_registry` calls (and `aw_registry_config`'s, on the way to a new one), each made on
//! the handle and on a Rust [`Registry`] in lockstep: the same counters, deadlines and
//! released sessions. Bridges of a conversation take their place in these registries (see
//! `BridgeOp::NewInConversation`).

use arbitrary::Arbitrary;

use super::views::{OutParam, Owner, ValidUntil, text};
use super::{Books, Hook, OK, POLL, World, allowed, check_result, handle, null_out};
use agentwire::ffi::registry::*;
use agentwire::ffi::result::aw_result;
use agentwire::ffi::test_hooks::{aw_registry_test_overlap, aw_registry_test_panic};
use agentwire::ffi::views::aw_str;
use agentwire::registry::{FreshReason, Registry, RegistryConfig};

/// A registry handle and the Rust registry it must behave as.
pub(super) struct Slot {
    pub(super) ptr: *mut aw_registry,
    pub(super) shadow: Registry,
    pub(super) books: Books,
}

impl super::Slot for Slot {
    type Handle = aw_registry;
    fn ptr(&self) -> *mut aw_registry {
        self.ptr
    }
    fn books(&self) -> &Books {
        &self.books
    }
}

/// The settings `RegistryOp::New` gives its config, each through its setter.
#[derive(Debug, Clone, Arbitrary)]
pub struct RegistrySettings {
    /// `enabled`.
    pub enabled: bool,
    /// `ttl_ms`.
    pub ttl_ms: u16,
    /// `max_parked` (`n % 4`).
    pub max_parked: u8,
    /// `max_parked_per_owner` (`n % 4`).
    pub max_parked_per_owner: u8,
}

/// A call on a registry.
#[derive(Debug, Clone, Arbitrary)]
pub enum RegistryOp {
    /// `aw_registry_config_new`, its setters and getters, `aw_registry_new` with it (or
    /// with NULL), `aw_registry_config_free` (freeing the slot's registry first).
    New {
        /// The settings, or NULL for the defaults.
        settings: Option<RegistrySettings>,
        /// Pass NULL as `out_registry`.
        null_out: bool,
    },
    /// `aw_registry_free`.
    Free,
    /// `aw_registry_parked` or `aw_registry_busy`.
    Count {
        /// `busy` rather than `parked`.
        busy: bool,
        /// Pass NULL as `out_count`.
        null_out: bool,
    },
    /// `aw_registry_get_stats`.
    Stats {
        /// Pass NULL as `out_stats`.
        null_out: bool,
    },
    /// `aw_registry_fresh`.
    Fresh {
        /// The reason: a valid one (`n % 7`) or any number.
        reason: Result<u8, u32>,
        /// Pass NULL as `out_count`.
        null_out: bool,
    },
    /// `aw_registry_handle_timeout`, at the deadline (the clock moves there) and drained
    /// after, or at the current time.
    Timeout {
        /// Move the clock to the deadline.
        due: bool,
    },
    /// `aw_registry_clear`, then a drain.
    Clear,
    /// `aw_registry_poll_released` once.
    PollReleased {
        /// Pass NULL as `out_agent_session`.
        null_out: bool,
    },
    /// `aw_registry_poll_released` until `AW_RESULT_DRAINED`.
    Drain,
    /// `aw_registry_poll_timeout`.
    PollTimeout {
        /// Pass NULL as `out_has_deadline`.
        null_has: bool,
        /// Pass NULL as `out_deadline_ms`.
        null_deadline: bool,
    },
    /// `aw_registry_last_error`.
    LastError,
    /// `aw_registry_test_panic`: poisons the handle.
    Panic,
    /// `aw_registry_test_overlap`: a call and a free from inside a call, refused as `BUSY`.
    Overlap,
}

/// Documented results.
const NEW: &[aw_result] = &[aw_result::Ok, aw_result::NullParameter, aw_result::Poisoned];
const FRESH: &[aw_result] = &[aw_result::Ok, aw_result::InvalidEnum];

/// Polls in a row before `Drain` gives up.
const MAX_POLLS: usize = 10_000;

/// A config with `settings`, through every setter, each read back; and the Rust config it
/// must hold.
fn registry_config(settings: &RegistrySettings) -> (*mut aw_registry_config, RegistryConfig) {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: `ptr` is a local.
    assert_eq!(
        unsafe { aw_registry_config_new(&mut ptr) },
        aw_result::Ok,
        "aw_registry_config_new"
    );
    let want = RegistryConfig {
        enabled: settings.enabled,
        ttl_ms: u64::from(settings.ttl_ms),
        max_parked: usize::from(settings.max_parked % 4),
        max_parked_per_owner: usize::from(settings.max_parked_per_owner % 4),
    };
    let (mut enabled, mut ttl, mut max, mut per_owner) = (false, 0u64, 0usize, 0usize);
    // SAFETY: `ptr` is live; the outs are locals.
    unsafe {
        assert_eq!(
            aw_registry_config_set_enabled(ptr, want.enabled),
            aw_result::Ok
        );
        assert_eq!(
            aw_registry_config_set_ttl_ms(ptr, want.ttl_ms),
            aw_result::Ok
        );
        assert_eq!(
            aw_registry_config_set_max_parked(ptr, want.max_parked),
            aw_result::Ok
        );
        let per = want.max_parked_per_owner;
        assert_eq!(
            aw_registry_config_set_max_parked_per_owner(ptr, per),
            aw_result::Ok
        );
        assert_eq!(
            aw_registry_config_get_enabled(ptr, &mut enabled),
            aw_result::Ok
        );
        assert_eq!(aw_registry_config_get_ttl_ms(ptr, &mut ttl), aw_result::Ok);
        assert_eq!(
            aw_registry_config_get_max_parked(ptr, &mut max),
            aw_result::Ok
        );
        assert_eq!(
            aw_registry_config_get_max_parked_per_owner(ptr, &mut per_owner),
            aw_result::Ok
        );
    }
    let read = RegistryConfig {
        enabled,
        ttl_ms: ttl,
        max_parked: max,
        max_parked_per_owner: per_owner,
    };
    assert_eq!(read, want, "aw_registry_config's getters");
    (ptr, want)
}

impl World {
    /// One call on registry `slot`.
    pub(super) fn registry(&mut self, slot: usize, op: &RegistryOp) {
        let owner = Owner::Registry(slot);
        let ptr = handle(&self.registries[slot]);
        let now = self.now;
        match op {
            RegistryOp::New {
                settings,
                null_out: null,
            } => {
                self.registry(slot, &RegistryOp::Free);
                let (config, model) = match settings {
                    Some(settings) => registry_config(settings),
                    None => (std::ptr::null_mut(), RegistryConfig::default()),
                };
                let mut out = OutParam::<*mut aw_registry>::new();
                // SAFETY: `config` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_registry_new(config, out.ptr(*null)) };
                // SAFETY: `config` is NULL or live, and not used again.
                unsafe { aw_registry_config_free(config) };
                let want = if *null {
                    aw_result::NullParameter
                } else {
                    aw_result::Ok
                };
                check_result("aw_registry_new", result, NEW, &[want]);
                if let Some(ptr) = out.outcome(result, "aw_registry_new") {
                    assert!(!ptr.is_null(), "aw_registry_new gave NULL");
                    self.registries[slot] = Some(Slot {
                        ptr,
                        shadow: Registry::new(model),
                        books: Books::new(),
                    });
                }
            }
            RegistryOp::Free => {
                self.views.before_free(owner);
                // SAFETY: `ptr` is NULL or the slot's live handle, forgotten just below.
                unsafe { aw_registry_free(ptr) };
                self.registries[slot] = None;
            }
            RegistryOp::Count {
                busy,
                null_out: null,
            } => {
                self.before_call(owner, false);
                let mut out = OutParam::<usize>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe {
                    if *busy {
                        aw_registry_busy(ptr, out.ptr(*null))
                    } else {
                        aw_registry_parked(ptr, out.ptr(*null))
                    }
                };
                let mut want = None;
                let allowed = allowed(self.registries[slot].as_mut(), null_out(*null), |s| {
                    want = Some(if *busy {
                        s.shadow.busy()
                    } else {
                        s.shadow.parked()
                    });
                    aw_result::Ok
                });
                let what = "aw_registry_parked/busy";
                check_result(what, result, OK, &allowed);
                self.note(owner, result);
                if let Some(count) = out.outcome(result, what) {
                    assert_eq!(Some(count), want, "{what} ({busy})");
                }
            }
            RegistryOp::Stats { null_out: null } => {
                self.before_call(owner, false);
                let mut out = OutParam::<aw_registry_stats>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_registry_get_stats(ptr, out.ptr(*null)) };
                let mut want = None;
                let allowed = allowed(self.registries[slot].as_mut(), null_out(*null), |s| {
                    let stats = s.shadow.stats();
                    want = Some((
                        stats.resumed,
                        stats.refused,
                        stats.expired,
                        stats.evicted,
                        stats.dropped,
                    ));
                    aw_result::Ok
                });
                let what = "aw_registry_get_stats";
                check_result(what, result, OK, &allowed);
                self.note(owner, result);
                if let Some(stats) = out.outcome(result, what) {
                    let got = (
                        stats.resumed,
                        stats.refused,
                        stats.expired,
                        stats.evicted,
                        stats.dropped,
                    );
                    assert_eq!(Some(got), want, "{what}");
                }
            }
            RegistryOp::Fresh {
                reason,
                null_out: null,
            } => {
                self.before_call(owner, false);
                let number = match reason {
                    Ok(n) => u32::from(*n) % FreshReason::ALL.len() as u32,
                    Err(n) => *n,
                };
                let mut out = OutParam::<u64>::new();
                // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
                let result = unsafe { aw_registry_fresh(ptr, number, out.ptr(*null)) };
                let known = usize::try_from(number)
                    .ok()
                    .filter(|n| *n < FreshReason::ALL.len());
                let mut errors = null_out(*null).to_vec();
                if known.is_none() {
                    errors.push(aw_result::InvalidEnum);
                }
                let mut want = None;
                let allowed = allowed(self.registries[slot].as_mut(), &errors, |s| {
                    want = known.map(|at| s.shadow.stats().fresh[at]);
                    aw_result::Ok
                });
                let what = "aw_registry_fresh";
                check_result(what, result, FRESH, &allowed);
                self.note(owner, result);
                if let Some(count) = out.outcome(result, what) {
                    assert_eq!(Some(count), want, "{what} ({number})");
                }
            }
            RegistryOp::Timeout { due } => {
                if *due {
                    let deadline = self.registries[slot]
                        .as_ref()
                        .filter(|s| !s.books.poisoned)
                        .and_then(|s| s.shadow.poll_timeout());
                    if let Some(deadline) = deadline {
                        self.now = self.now.max(deadline);
                    }
                }
                let now = self.now;
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_registry_handle_timeout(ptr, now) };
                let allowed = allowed(self.registries[slot].as_mut(), &[], |s| {
                    s.shadow.handle_timeout(now);
                    aw_result::Ok
                });
                check_result("aw_registry_handle_timeout", result, OK, &allowed);
                self.note(owner, result);
                if *due {
                    self.registry(slot, &RegistryOp::Drain);
                }
            }
            RegistryOp::Clear => {
                self.before_call(owner, true);
                // SAFETY: `ptr` is NULL or live.
                let result = unsafe { aw_registry_clear(ptr, now) };
                let allowed = allowed(self.registries[slot].as_mut(), &[], |s| {
                    s.shadow.clear(now);
                    aw_result::Ok
                });
                check_result("aw_registry_clear", result, OK, &allowed);
                self.note(owner, result);
                self.registry(slot, &RegistryOp::Drain);
            }
            RegistryOp::PollReleased { null_out } => {
                self.registry_poll(slot, *null_out);
            }
            RegistryOp::Drain => {
                for _ in 0..MAX_POLLS {
                    if self.registry_poll(slot, false) != aw_result::Ok {
                        return;
                    }
                }
                panic!("aw_registry_poll_released does not run dry");
            }
            RegistryOp::PollTimeout {
                null_has,
                null_deadline,
            } => self.registry_poll_timeout(slot, *null_has, *null_deadline),
            RegistryOp::LastError => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_registry_last_error(ptr) };
                self.last_error_of(owner, "aw_registry_last_error", call);
            }
            RegistryOp::Panic => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_registry_test_panic(ptr) };
                self.test_hook(owner, Hook::Panic, call);
            }
            RegistryOp::Overlap => {
                // SAFETY: `ptr` is NULL or live.
                let call = || unsafe { aw_registry_test_overlap(ptr) };
                self.test_hook(owner, Hook::Overlap, call);
            }
        }
    }

    /// The getters of a live registry after each call on it or on a bridge of it.
    pub(super) fn observe_registry(&mut self, slot: usize) {
        if self.registries[slot]
            .as_ref()
            .is_some_and(|s| !s.books.poisoned)
        {
            self.registry_poll_timeout(slot, false, false);
            for busy in [false, true] {
                let op = RegistryOp::Count {
                    busy,
                    null_out: false,
                };
                self.registry(slot, &op);
            }
        }
    }

    /// `aw_registry_poll_released` once: the Rust registry's next released session.
    fn registry_poll(&mut self, slot: usize, null: bool) -> aw_result {
        let owner = Owner::Registry(slot);
        self.before_call(owner, true);
        let ptr = handle(&self.registries[slot]);
        let mut out = OutParam::<aw_str>::new();
        // SAFETY: `ptr` is NULL or live; `out` is a local or NULL.
        let result = unsafe { aw_registry_poll_released(ptr, out.ptr(null)) };
        let mut want = None;
        let allowed = allowed(self.registries[slot].as_mut(), null_out(null), |s| {
            want = s.shadow.poll_released().map(|r| r.agent_session);
            if want.is_some() {
                aw_result::Ok
            } else {
                aw_result::Drained
            }
        });
        let what = "aw_registry_poll_released";
        check_result(what, result, POLL, &allowed);
        self.note(owner, result);
        if let Some(view) = out.outcome(result, what) {
            let got = text(view, what);
            assert_eq!(Some(&got), want.as_ref(), "{what}");
            self.views.keep(
                owner,
                ValidUntil::NextCall,
                view.data.cast(),
                got.into_bytes(),
                what.into(),
            );
        }
        result
    }

    /// `aw_registry_poll_timeout`: the Rust registry's deadline.
    fn registry_poll_timeout(&mut self, slot: usize, null_has: bool, null_deadline: bool) {
        let owner = Owner::Registry(slot);
        self.before_call(owner, false);
        let ptr = handle(&self.registries[slot]);
        let mut has = OutParam::<bool>::new();
        let mut deadline = OutParam::<u64>::new();
        // SAFETY: `ptr` is NULL or live; the outs are locals or NULL.
        let result = unsafe {
            aw_registry_poll_timeout(ptr, has.ptr(null_has), deadline.ptr(null_deadline))
        };
        let mut want = None;
        let allowed = allowed(
            self.registries[slot].as_mut(),
            null_out(null_has || null_deadline),
            |s| {
                want = s.shadow.poll_timeout();
                aw_result::Ok
            },
        );
        let what = "aw_registry_poll_timeout";
        check_result(what, result, OK, &allowed);
        self.note(owner, result);
        let has = has.outcome(result, what);
        let deadline = deadline.outcome(result, what);
        if let (Some(has), Some(deadline)) = (has, deadline) {
            assert_eq!(has, want.is_some(), "{what}: has_deadline");
            assert_eq!(deadline, want.unwrap_or(0), "{what}: deadline");
        }
    }
}
