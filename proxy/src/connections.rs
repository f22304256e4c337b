//! `--max-connections`: how many connections are served, decided when one is accepted.
//!
//! Each open connection holds a descriptor (and, during an agent run, pipes). Without a
//! cap, slow clients can use up the process's descriptors, and then `accept` fails for
//! everyone — `/health` included. So connections are admitted into lanes: up to
//! `--max-connections` are served; past that, [`OVERFLOW`] more are read only to answer
//! `/health` (anything else gets 503 at once) within [`OVERFLOW_TIMEOUT`]; past those, a
//! new connection is closed as soon as it is accepted, so its descriptor is free again at
//! once. The cap is checked against the descriptor limit at startup ([`fit_descriptors`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Connections read only to answer `/health`, beyond `--max-connections`.
pub const OVERFLOW: u32 = 32;
/// How long an overflow connection has to send its request.
pub const OVERFLOW_TIMEOUT: Duration = Duration::from_secs(1);
/// Descriptors an agent run needs besides its connection (pipes, the child's handle,
/// and a spare).
const PER_RUN: u64 = 8;
/// Descriptors the process needs besides connections and runs (standard streams, the
/// listener, the runtime, logs, probes).
const BASE: u64 = 64;

/// Which lane a connection was admitted into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Served fully.
    Served,
    /// Over `--max-connections`: only `/health` is answered.
    Overflow,
}

/// Open connections per lane.
#[derive(Debug)]
pub struct Connections {
    max: u32,
    served: AtomicU32,
    overflow: AtomicU32,
}

/// An admitted connection; its place is given back when this is dropped.
#[derive(Debug)]
pub struct Admitted {
    connections: Arc<Connections>,
    lane: Lane,
}

impl Admitted {
    /// The lane it was admitted into.
    pub fn lane(&self) -> Lane {
        self.lane
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections
            .count(self.lane)
            .fetch_sub(1, Ordering::AcqRel);
    }
}

impl Connections {
    /// Serves up to `max` connections at once.
    pub fn new(max: u32) -> Arc<Connections> {
        Arc::new(Connections {
            max,
            served: AtomicU32::new(0),
            overflow: AtomicU32::new(0),
        })
    }

    fn count(&self, lane: Lane) -> &AtomicU32 {
        match lane {
            Lane::Served => &self.served,
            Lane::Overflow => &self.overflow,
        }
    }

    /// A place for a connection just accepted; `None` means close it now.
    pub fn admit(self: &Arc<Connections>) -> Option<Admitted> {
        [(Lane::Served, self.max), (Lane::Overflow, OVERFLOW)]
            .into_iter()
            .find(|&(lane, max)| {
                self.count(lane)
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                        (n < max).then_some(n + 1)
                    })
                    .is_ok()
            })
            .map(|(lane, _)| Admitted {
                connections: Arc::clone(self),
                lane,
            })
    }
}

/// Makes room for `max_connections` (with `max_concurrent` agent runs) under the
/// descriptor limit: raises the soft limit toward the hard one if it is short, and returns
/// the number of connections that fit, with a warning to print when that is fewer.
pub fn fit_descriptors(max_connections: u32, max_concurrent: u32) -> (u32, Option<String>) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let need = |connections: u32| {
        BASE + u64::from(connections) + u64::from(OVERFLOW) + PER_RUN * u64::from(max_concurrent)
    };
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return (max_connections, None);
    };
    let wanted = need(max_connections);
    let limit = if soft >= wanted {
        soft
    } else {
        let raised = wanted.min(hard);
        match setrlimit(Resource::RLIMIT_NOFILE, raised, hard) {
            Ok(()) => raised,
            Err(_) => soft,
        }
    };
    if limit >= wanted {
        return (max_connections, None);
    }
    let fits = limit
        .saturating_sub(need(0))
        .clamp(1, u64::from(max_connections)) as u32;
    let warning = format!(
        "the descriptor limit ({limit}) cannot hold --max-connections {max_connections} with \
         --max-concurrent {max_concurrent}: serving at most {fits} connections (raise `ulimit -n`)"
    );
    (fits, Some(warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_fill_in_order_and_free_on_drop() {
        let connections = Connections::new(2);
        let served: Vec<_> = (0..2).map(|_| connections.admit().unwrap()).collect();
        assert!(served.iter().all(|a| a.lane() == Lane::Served));
        let overflow: Vec<_> = (0..OVERFLOW)
            .map(|_| connections.admit().unwrap())
            .collect();
        assert!(overflow.iter().all(|a| a.lane() == Lane::Overflow));
        assert!(connections.admit().is_none(), "beyond both lanes");
        drop(overflow);
        assert_eq!(connections.admit().unwrap().lane(), Lane::Overflow);
        drop(served);
        assert_eq!(connections.admit().unwrap().lane(), Lane::Served);
    }
}
