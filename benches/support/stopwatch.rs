//! Two clocks for one measurement: the wall clock, and the CPU time of the calling thread,
//! which leaves out the time the thread waited for a core (on a shared machine, the
//! scheduler's part of a wall-clock tail).

use std::ops::{Add, AddAssign};
use std::time::{Duration, Instant};

/// A measurement on both clocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lap {
    pub wall: Duration,
    /// The thread's CPU time; zero where the platform gives none here.
    pub cpu: Duration,
}

impl Add for Lap {
    type Output = Lap;

    fn add(self, other: Lap) -> Lap {
        Lap {
            wall: self.wall + other.wall,
            cpu: self.cpu + other.cpu,
        }
    }
}

impl AddAssign for Lap {
    fn add_assign(&mut self, other: Lap) {
        *self = *self + other;
    }
}

impl Lap {
    /// `self` less `other`, clock by clock, never below zero.
    pub fn saturating_sub(self, other: Lap) -> Lap {
        Lap {
            wall: self.wall.saturating_sub(other.wall),
            cpu: self.cpu.saturating_sub(other.cpu),
        }
    }
}

/// Started on both clocks.
pub struct Stopwatch {
    wall: Instant,
    cpu: Duration,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch {
            cpu: thread_cpu(),
            wall: Instant::now(),
        }
    }

    pub fn lap(&self) -> Lap {
        let wall = self.wall.elapsed();
        Lap {
            wall,
            cpu: thread_cpu().saturating_sub(self.cpu),
        }
    }
}

/// Whether [`Lap::cpu`] is measured here.
pub const HAS_CPU_CLOCK: bool = cfg!(all(target_os = "linux", target_pointer_width = "64"));

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanoseconds: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut time = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: `clock_gettime` writes one `struct timespec` (two 64-bit fields on 64-bit
    // Linux) to the pointer it is given, which points to one, and keeps nothing.
    let status = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(status, 0, "the thread's CPU clock");
    Duration::new(time.seconds as u64, time.nanoseconds as u32)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu() -> Duration {
    Duration::ZERO
}
