//! One agent process's life, from its spawn to its reaping, as a state machine without
//! I/O: the one home of the rules every driver of an agent process follows.
//!
//! ```text
//!  spawned(group) / spawn failed(error) ─┐
//!  stdout EOF, stderr EOF, exit(status) ─┤                    ┌─► Action::Signal { group, signal }
//!  stop, release, stop reading,          ├─► Lifecycle ───────┼─► Action::StopReading
//!  pause / resume reading                │   poll_action()    ├─► Action::Stderr(text)
//!  timeout(now) at poll_timeout() ───────┘                    └─► Action::Exited(status)   (at most once)
//! ```
//!
//! The rules:
//! - **Stopping.** A stop is SIGTERM to the process group, then SIGKILL one grace period
//!   later if the leader has not exited. A process that is let go ([`Lifecycle::release`])
//!   gets one grace period to exit by itself before that sequence starts.
//! - **After the leader's exit**, its group gets one SIGKILL for whatever it left behind (a
//!   child still holding the pipes would otherwise keep the run open).
//! - **The exit drain.** The exit is reported once both pipes reached end of file: what
//!   the leader wrote before it exited is read first. A descendant that left the group
//!   (`setsid`) is out of reach of the group's signals and may hold the pipes open; then
//!   reading stops [`EXIT_DRAIN`] after the exit, counted only while the driver reads (a
//!   driver waiting for a slow client does not read, and the leader's last output is
//!   still to come when it reads again).
//! - **Report once.** The exit goes to the agent's peer (the request's
//!   [`Bridge`](agentwire::bridge::Bridge) or the warm agent's ACP
//!   [`Connection`](agentwire::acp::Connection)) exactly once, after every byte of output
//!   the peer will get; output read after it is dropped ([`Lifecycle::wants_output`]).
//! - **A spawn failure** is answered as the exit of an agent that printed why on stderr
//!   and exited with code 127 (a shell's "command not found"), so the peer reports it
//!   with the failures of agents that did start.
//! - **The record.** How the process ended, for the request's log line, is
//!   [`Lifecycle::agent_end`].
//!
//! Each driver keeps only its I/O: `tokio_proxy` selects over tasks, `blocking_proxy`
//! waits on a channel its threads fill, the warm ACP agent ([`crate::acp`]) runs a
//! supervisor thread; all three feed what they see to a `Lifecycle` and carry out what
//! it asks.
//!
//! A lifecycle is a process's, not a request's: a response ending is not the process
//! ending. A driver that keeps a process past its request (an agent waiting, between two
//! requests of one conversation, for the next one to bring its tool results) does not
//! [`release`](Lifecycle::release) it when the response ends; it
//! [`pauses reading`](Lifecycle::pause_reading) while no request takes the output, hands
//! the [`Action::Exited`] of a process that ends meanwhile to no one, and stops it with
//! [`stop`](Lifecycle::stop) when it expires or the server shuts down.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use agentwire::cursor::ExitStatus;

use crate::agent::Signal;
use crate::record::AgentEnd;

/// After the leader's exit, how long its pipes are still read when something else (a
/// descendant that left the group) holds them open.
pub const EXIT_DRAIN: Duration = Duration::from_millis(200);

/// The exit status a spawn failure is reported as (a shell's "command not found").
pub const SPAWN_FAILED_STATUS: ExitStatus = ExitStatus::Code(127);

/// What a [`Lifecycle`] asks its driver to do, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `signal` to the process group `group` (a group already gone is not an error).
    Signal {
        /// The process group (the leader's pid).
        group: u32,
        /// The signal.
        signal: Signal,
    },
    /// Stop reading the agent's pipes and close them: the leader exited [`EXIT_DRAIN`]
    /// ago and something else holds them open. Output already read (queued between the
    /// driver's reader and its loop) still goes to the peer, before the
    /// [`Exited`](Action::Exited) that follows.
    StopReading,
    /// Give the peer this text as the agent's stderr (`push_stderr`): why the agent could
    /// not start. Comes only before the [`Exited`](Action::Exited) of a spawn failure.
    Stderr(String),
    /// Tell the peer the agent exited (`agent_exited`): after every byte of its output,
    /// once per process.
    Exited(ExitStatus),
}

/// Where the process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Process {
    /// Not spawned yet.
    NotStarted,
    /// It could not be spawned.
    SpawnFailed,
    /// Spawned, leading process group `group`.
    Spawned { group: u32 },
}

/// Whether the peer is still owed the exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    /// Owed, once the exit is known and the output read.
    Owed,
    /// Given ([`Action::Exited`] was polled).
    Given,
    /// Nobody takes it: the process was released.
    Withheld,
}

/// One agent process's life: what its driver has seen of it, and what the driver must do.
///
/// Methods, by kind (as the core's state machines):
/// - Getters: [`group`](Self::group), [`has_exited`](Self::has_exited),
///   [`wants_output`](Self::wants_output), [`is_reported`](Self::is_reported),
///   [`signalled`](Self::signalled),
///   [`agent_end`](Self::agent_end).
/// - Inputs, what the driver saw: [`handle_spawned`](Self::handle_spawned),
///   [`handle_spawn_failed`](Self::handle_spawn_failed),
///   [`handle_stdout_eof`](Self::handle_stdout_eof),
///   [`handle_stderr_eof`](Self::handle_stderr_eof), [`handle_exit`](Self::handle_exit),
///   [`handle_timeout`](Self::handle_timeout).
/// - Commands, what the driver decided: [`stop`](Self::stop), [`release`](Self::release),
///   [`stop_reading`](Self::stop_reading), [`pause_reading`](Self::pause_reading),
///   [`resume_reading`](Self::resume_reading).
/// - Outputs: [`poll_action`](Self::poll_action), [`poll_timeout`](Self::poll_timeout).
///
/// **After every input or command, take [`poll_action`](Self::poll_action) until `None`,
/// then wait no later than [`poll_timeout`](Self::poll_timeout) and call
/// [`handle_timeout`](Self::handle_timeout) when it is due.** Spurious timeouts and
/// repeated inputs (a second end of file, a second exit) do nothing, and so does every
/// input and command but the reading ones before the spawn (or its failure) is known.
/// Time is an argument: the lifecycle never reads a clock.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    process: Process,
    stopper: Stopper,
    stdout_open: bool,
    stderr_open: bool,
    /// Whether the driver reads the pipes now (see [`pause_reading`](Self::pause_reading)).
    reading: bool,
    exit: Option<ExitStatus>,
    /// After the leader's exit, with a pipe still open: when reading stops.
    drain_until: Option<Instant>,
    report: Report,
    /// Actions not taken yet; the exit report is not queued but found when its time
    /// comes, so that output handled while earlier actions are carried out still goes
    /// before it.
    actions: VecDeque<Action>,
}

impl Lifecycle {
    /// A process not spawned yet, whose stop sequence waits `grace` between its steps.
    pub fn new(grace: Duration) -> Lifecycle {
        Lifecycle {
            process: Process::NotStarted,
            stopper: Stopper::new(grace),
            stdout_open: false,
            stderr_open: false,
            reading: true,
            exit: None,
            drain_until: None,
            report: Report::Owed,
            actions: VecDeque::new(),
        }
    }

    /// The process group (the leader's pid), once spawned.
    pub fn group(&self) -> Option<u32> {
        match self.process {
            Process::Spawned { group } => Some(group),
            Process::NotStarted | Process::SpawnFailed => None,
        }
    }

    /// Whether the leader's exit was seen (it was reaped). False for a process that never
    /// started.
    pub fn has_exited(&self) -> bool {
        self.exit.is_some() && self.group().is_some()
    }

    /// Whether output read from the agent's pipes goes to the peer: until the exit is
    /// reported or the process released.
    pub fn wants_output(&self) -> bool {
        self.report == Report::Owed
    }

    /// Whether the exit was reported ([`Action::Exited`] was taken).
    pub fn is_reported(&self) -> bool {
        self.report == Report::Given
    }

    /// The strongest signal the stop sequence sent, if any (the SIGKILL for what an exited
    /// leader left behind is not counted: the leader had ended by itself).
    pub fn signalled(&self) -> Option<Signal> {
        self.stopper.signalled()
    }

    /// How the process ended, for the request's record; `None` while its leader runs.
    pub fn agent_end(&self) -> Option<AgentEnd> {
        match (self.process, self.exit) {
            (Process::NotStarted, _) => Some(AgentEnd::NotStarted),
            (Process::SpawnFailed, _) => Some(AgentEnd::SpawnFailed),
            (Process::Spawned { .. }, None) => None,
            (Process::Spawned { .. }, Some(status)) => Some(match self.signalled() {
                Some(signal) => AgentEnd::Stopped(signal, status),
                None => AgentEnd::Exited(status),
            }),
        }
    }

    /// The process was spawned as the leader of process group `group`, its stdout and
    /// stderr piped to the driver. Ignored unless the lifecycle is new.
    pub fn handle_spawned(&mut self, group: u32) {
        if self.process != Process::NotStarted {
            return;
        }
        self.process = Process::Spawned { group };
        self.stdout_open = true;
        self.stderr_open = true;
    }

    /// `program` could not be spawned (`error`): the peer gets the agent's stderr saying
    /// so, then an exit with code 127. Ignored unless the lifecycle is new.
    pub fn handle_spawn_failed(&mut self, program: &Path, error: &std::io::Error) {
        if self.process != Process::NotStarted {
            return;
        }
        self.process = Process::SpawnFailed;
        self.exit = Some(SPAWN_FAILED_STATUS);
        self.stopper.exited();
        let text = format!("could not start {}: {error}\n", program.display());
        self.actions.push_back(Action::Stderr(text));
    }

    /// The agent's stdout reached end of file.
    pub fn handle_stdout_eof(&mut self) {
        if self.group().is_none() {
            return;
        }
        self.stdout_open = false;
        self.pipe_closed();
    }

    /// The agent's stderr reached end of file.
    pub fn handle_stderr_eof(&mut self) {
        if self.group().is_none() {
            return;
        }
        self.stderr_open = false;
        self.pipe_closed();
    }

    /// The leader exited with `status` and was reaped, at `now`. Its group gets one
    /// SIGKILL for what it left behind; the exit is reported once the pipes are read to
    /// their end, or [`EXIT_DRAIN`] of reading later.
    pub fn handle_exit(&mut self, status: ExitStatus, now: Instant) {
        let Some(group) = self.group() else {
            return;
        };
        if self.exit.is_some() {
            return;
        }
        self.exit = Some(status);
        self.stopper.exited();
        self.actions.push_back(Action::Signal {
            group,
            signal: Signal::Kill,
        });
        if self.pipes_open() {
            self.drain_until = Some(now + EXIT_DRAIN);
        }
    }

    /// Serves whatever deadline has passed at `now`: the next step of the stop sequence,
    /// the end of the exit drain. A call before either is due does nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(signal) = self.stopper.on_deadline(now) {
            self.signal(signal);
        }
        if self.drain_due().is_some_and(|at| now >= at) {
            self.stdout_open = false;
            self.stderr_open = false;
            self.drain_until = None;
            self.actions.push_back(Action::StopReading);
        }
    }

    /// The process must stop now (its response ended early, its client went, the server
    /// shuts down, an idle process expired): SIGTERM to its group, SIGKILL one grace period
    /// later. Nothing once a stop is under way or the leader has exited.
    pub fn stop(&mut self, now: Instant) {
        if self.group().is_none() {
            return;
        }
        if let Some(signal) = self.stopper.stop(now) {
            self.signal(signal);
        }
    }

    /// The driver is done with the process (its request is over and nothing keeps it): it
    /// has stopped reading the pipes, and no peer takes the exit any more. A leader still
    /// running gets one grace period to exit by itself, then the stop sequence.
    pub fn release(&mut self, now: Instant) {
        if self.process == Process::NotStarted {
            return;
        }
        self.stdout_open = false;
        self.stderr_open = false;
        self.drain_until = None;
        if self.report == Report::Owed {
            self.report = Report::Withheld;
        }
        if self.group().is_some() {
            self.stopper.response_over(now);
        }
    }

    /// The driver stopped reading the pipes of its own accord (it replaces the process):
    /// the exit is reported as soon as it is known.
    pub fn stop_reading(&mut self) {
        if self.process == Process::NotStarted {
            return;
        }
        self.stdout_open = false;
        self.stderr_open = false;
        self.drain_until = None;
    }

    /// The driver does not read the pipes for now (its client has not taken the last
    /// output, or no request is attached): the exit drain waits.
    pub fn pause_reading(&mut self) {
        self.reading = false;
    }

    /// The driver reads the pipes again at `now`: an exit drain under way starts over, as
    /// the leader's last output may still be unread.
    pub fn resume_reading(&mut self, now: Instant) {
        if self.reading {
            return;
        }
        self.reading = true;
        if self.drain_until.is_some() {
            self.drain_until = Some(now + EXIT_DRAIN);
        }
    }

    /// The next thing to do, in order; `None` when there is nothing now.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        if let Some(action) = self.actions.pop_front() {
            return Some(action);
        }
        let status = self.exit?;
        if self.report != Report::Owed || self.pipes_open() {
            return None;
        }
        self.report = Report::Given;
        Some(Action::Exited(status))
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due, if anything waits for
    /// time.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.stopper.deadline(), self.drain_due()]
            .into_iter()
            .flatten()
            .min()
    }

    fn pipes_open(&self) -> bool {
        self.stdout_open || self.stderr_open
    }

    fn pipe_closed(&mut self) {
        if !self.pipes_open() {
            self.drain_until = None;
        }
    }

    /// The end of the exit drain, while the driver reads.
    fn drain_due(&self) -> Option<Instant> {
        self.drain_until.filter(|_| self.reading)
    }

    fn signal(&mut self, signal: Signal) {
        if let Some(group) = self.group() {
            self.actions.push_back(Action::Signal { group, signal });
        }
    }
}

/// When to signal a process group, as a state machine over time: SIGTERM when the process
/// must stop, SIGKILL one grace period later; and when the driver is done with a process
/// that is still finishing by itself, SIGTERM one grace period after that.
#[derive(Debug, Clone)]
struct Stopper {
    grace: Duration,
    phase: Phase,
    deadline: Option<Instant>,
    /// Whether the stop sequence signalled the group (for the log: "stopped" vs "exited").
    signalled: Option<Signal>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// The driver is done with it; it may still exit by itself.
    Finishing,
    Terminated,
    Killed,
    Exited,
}

impl Stopper {
    /// A running process, with `grace` between the steps.
    fn new(grace: Duration) -> Stopper {
        Stopper {
            grace,
            phase: Phase::Running,
            deadline: None,
            signalled: None,
        }
    }

    /// The process must stop now: the signal to send, unless one was already sent.
    #[must_use]
    fn stop(&mut self, now: Instant) -> Option<Signal> {
        match self.phase {
            Phase::Running | Phase::Finishing => {
                self.phase = Phase::Terminated;
                self.deadline = Some(now + self.grace);
                self.signalled = Some(Signal::Term);
                Some(Signal::Term)
            }
            Phase::Terminated | Phase::Killed | Phase::Exited => None,
        }
    }

    /// The driver is done with the process and did not ask it to stop: it gets one grace
    /// period to exit by itself.
    fn response_over(&mut self, now: Instant) {
        if self.phase == Phase::Running {
            self.phase = Phase::Finishing;
            self.deadline = Some(now + self.grace);
        }
    }

    /// When [`on_deadline`](Self::on_deadline) is next due.
    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// A deadline passed: the signal to send now, if any.
    #[must_use]
    fn on_deadline(&mut self, now: Instant) -> Option<Signal> {
        if self.deadline.is_none_or(|d| now < d) {
            return None;
        }
        match self.phase {
            Phase::Finishing => self.stop(now),
            Phase::Terminated => {
                self.phase = Phase::Killed;
                self.deadline = None;
                self.signalled = Some(Signal::Kill);
                Some(Signal::Kill)
            }
            Phase::Running | Phase::Killed | Phase::Exited => {
                self.deadline = None;
                None
            }
        }
    }

    /// The leader exited (and was reaped), or never started.
    fn exited(&mut self) {
        self.phase = Phase::Exited;
        self.deadline = None;
    }

    /// The strongest signal sent, if any.
    fn signalled(&self) -> Option<Signal> {
        self.signalled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUP: u32 = 4242;
    const GRACE: Duration = Duration::from_millis(1000);
    const STATUS: ExitStatus = ExitStatus::Code(3);

    fn spawned() -> Lifecycle {
        let mut life = Lifecycle::new(GRACE);
        life.handle_spawned(GROUP);
        life
    }

    /// Everything `life` asks now; a lifecycle that never stops asking fails.
    fn actions(life: &mut Lifecycle) -> Vec<Action> {
        let actions: Vec<Action> = std::iter::from_fn(|| life.poll_action()).take(9).collect();
        assert!(actions.len() < 9, "no end of actions: {actions:?}");
        actions
    }

    fn signal(signal: Signal) -> Action {
        Action::Signal {
            group: GROUP,
            signal,
        }
    }

    #[test]
    fn stop_then_kill_after_grace() {
        let t0 = Instant::now();
        let grace = Duration::from_millis(100);
        let mut s = Stopper::new(grace);
        assert_eq!(s.deadline(), None);
        assert_eq!(s.stop(t0), Some(Signal::Term));
        assert_eq!(s.stop(t0), None, "one SIGTERM");
        assert_eq!(s.on_deadline(t0), None, "not yet due");
        assert_eq!(s.on_deadline(t0 + grace), Some(Signal::Kill));
        assert_eq!(s.deadline(), None);
        s.exited();
        assert_eq!(s.signalled(), Some(Signal::Kill));
    }

    #[test]
    fn a_finishing_agent_gets_a_grace_period() {
        let t0 = Instant::now();
        let grace = Duration::from_millis(100);
        let mut s = Stopper::new(grace);
        s.response_over(t0);
        assert_eq!(s.deadline(), Some(t0 + grace));
        assert_eq!(s.on_deadline(t0 + grace), Some(Signal::Term));
        assert_eq!(s.on_deadline(t0 + 2 * grace), Some(Signal::Kill));
        let mut quiet = Stopper::new(grace);
        quiet.response_over(t0);
        quiet.exited();
        assert_eq!((quiet.deadline(), quiet.signalled()), (None, None));
    }

    #[test]
    fn an_exit_after_both_ends_of_file_is_reported_at_once() {
        let t0 = Instant::now();
        let mut life = spawned();
        assert_eq!(life.group(), Some(GROUP));
        assert_eq!(life.agent_end(), None, "running");
        life.handle_stdout_eof();
        life.handle_stderr_eof();
        assert!(actions(&mut life).is_empty());
        assert!(life.wants_output());
        life.handle_exit(STATUS, t0);
        assert_eq!(
            actions(&mut life),
            [signal(Signal::Kill), Action::Exited(STATUS)]
        );
        assert!(!life.wants_output());
        assert_eq!(life.poll_timeout(), None);
        assert_eq!(life.agent_end(), Some(AgentEnd::Exited(STATUS)));
    }

    #[test]
    fn an_exit_before_the_ends_of_file_waits_for_them() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.handle_exit(STATUS, t0);
        assert_eq!(actions(&mut life), [signal(Signal::Kill)]);
        assert_eq!(life.poll_timeout(), Some(t0 + EXIT_DRAIN));
        assert!(
            life.wants_output(),
            "the leader's last output is still read"
        );
        life.handle_stderr_eof();
        assert!(actions(&mut life).is_empty());
        life.handle_stdout_eof();
        assert_eq!(actions(&mut life), [Action::Exited(STATUS)]);
        assert_eq!(life.poll_timeout(), None, "no drain left to time");
    }

    #[test]
    fn pipes_held_open_stop_being_read_after_the_drain() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.handle_stdout_eof();
        life.handle_exit(STATUS, t0);
        assert_eq!(actions(&mut life), [signal(Signal::Kill)]);
        life.handle_timeout(t0 + EXIT_DRAIN - Duration::from_millis(1));
        assert!(actions(&mut life).is_empty(), "not yet");
        life.handle_timeout(t0 + EXIT_DRAIN);
        assert_eq!(
            actions(&mut life),
            [Action::StopReading, Action::Exited(STATUS)]
        );
        life.handle_stderr_eof();
        life.handle_timeout(t0 + EXIT_DRAIN * 2);
        assert!(actions(&mut life).is_empty(), "reported once");
    }

    #[test]
    fn output_handled_while_reading_stops_goes_before_the_exit() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.handle_exit(STATUS, t0);
        let _ = actions(&mut life);
        life.handle_timeout(t0 + EXIT_DRAIN);
        assert_eq!(life.poll_action(), Some(Action::StopReading));
        // The driver hands on what it had already read: still wanted.
        assert!(life.wants_output());
        assert_eq!(life.poll_action(), Some(Action::Exited(STATUS)));
        assert!(!life.wants_output());
    }

    #[test]
    fn the_drain_waits_while_the_driver_does_not_read() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.pause_reading();
        life.handle_exit(STATUS, t0);
        let _ = actions(&mut life);
        assert_eq!(life.poll_timeout(), None, "paused: nothing to time");
        life.handle_timeout(t0 + EXIT_DRAIN * 10);
        assert!(actions(&mut life).is_empty());
        let resumed = t0 + EXIT_DRAIN * 10;
        life.resume_reading(resumed);
        assert_eq!(
            life.poll_timeout(),
            Some(resumed + EXIT_DRAIN),
            "starts over"
        );
        life.resume_reading(resumed + EXIT_DRAIN);
        assert_eq!(
            life.poll_timeout(),
            Some(resumed + EXIT_DRAIN),
            "resuming while reading changes nothing"
        );
        life.handle_timeout(resumed + EXIT_DRAIN);
        assert_eq!(
            actions(&mut life),
            [Action::StopReading, Action::Exited(STATUS)]
        );
    }

    #[test]
    fn a_stop_is_sigterm_then_sigkill_after_the_grace() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.stop(t0);
        assert_eq!(actions(&mut life), [signal(Signal::Term)]);
        life.stop(t0);
        assert!(actions(&mut life).is_empty(), "one SIGTERM");
        assert_eq!(life.poll_timeout(), Some(t0 + GRACE));
        life.handle_timeout(t0 + GRACE - Duration::from_millis(1));
        assert!(actions(&mut life).is_empty());
        life.handle_timeout(t0 + GRACE);
        assert_eq!(actions(&mut life), [signal(Signal::Kill)]);
        assert_eq!(life.poll_timeout(), None);
        life.handle_stdout_eof();
        life.handle_stderr_eof();
        let killed = ExitStatus::Signal(9);
        life.handle_exit(killed, t0 + GRACE);
        assert_eq!(
            actions(&mut life),
            [signal(Signal::Kill), Action::Exited(killed)]
        );
        assert_eq!(
            life.agent_end(),
            Some(AgentEnd::Stopped(Signal::Kill, killed))
        );
    }

    #[test]
    fn a_leader_that_goes_at_sigterm_is_stopped_by_it() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.stop(t0);
        let _ = actions(&mut life);
        life.handle_stdout_eof();
        life.handle_stderr_eof();
        let termed = ExitStatus::Signal(15);
        life.handle_exit(termed, t0);
        assert_eq!(
            actions(&mut life),
            [signal(Signal::Kill), Action::Exited(termed)]
        );
        life.stop(t0);
        life.handle_timeout(t0 + GRACE);
        assert!(actions(&mut life).is_empty(), "no stop after the exit");
        assert_eq!(
            life.agent_end(),
            Some(AgentEnd::Stopped(Signal::Term, termed))
        );
    }

    #[test]
    fn a_released_process_gets_a_grace_period_then_the_stop_sequence() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.release(t0);
        assert!(!life.wants_output());
        assert!(actions(&mut life).is_empty());
        assert_eq!(life.poll_timeout(), Some(t0 + GRACE));
        life.handle_timeout(t0 + GRACE);
        assert_eq!(actions(&mut life), [signal(Signal::Term)]);
        life.handle_timeout(t0 + GRACE * 2);
        assert_eq!(actions(&mut life), [signal(Signal::Kill)]);
        life.handle_exit(ExitStatus::Signal(9), t0 + GRACE * 2);
        assert_eq!(
            actions(&mut life),
            [signal(Signal::Kill)],
            "no exit report: nobody takes it"
        );

        let mut quiet = spawned();
        quiet.release(t0);
        quiet.handle_exit(ExitStatus::Code(0), t0);
        assert_eq!(actions(&mut quiet), [signal(Signal::Kill)]);
        assert_eq!(quiet.poll_timeout(), None);
        assert_eq!(
            quiet.agent_end(),
            Some(AgentEnd::Exited(ExitStatus::Code(0)))
        );
    }

    #[test]
    fn stopping_reading_reports_the_exit_as_soon_as_it_is_known() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.stop(t0);
        let _ = actions(&mut life);
        life.handle_exit(STATUS, t0);
        assert_eq!(actions(&mut life), [signal(Signal::Kill)]);
        life.stop_reading();
        assert_eq!(actions(&mut life), [Action::Exited(STATUS)]);

        let mut early = spawned();
        early.stop_reading();
        early.handle_exit(STATUS, t0);
        assert_eq!(
            actions(&mut early),
            [signal(Signal::Kill), Action::Exited(STATUS)]
        );
    }

    #[test]
    fn a_spawn_failure_is_an_exit_with_code_127_after_the_reason_on_stderr() {
        let t0 = Instant::now();
        let mut life = Lifecycle::new(GRACE);
        let error = std::io::Error::from(std::io::ErrorKind::NotFound);
        life.handle_spawn_failed(Path::new("/no/agent"), &error);
        assert_eq!(
            actions(&mut life),
            [
                Action::Stderr(format!("could not start /no/agent: {error}\n")),
                Action::Exited(ExitStatus::Code(127)),
            ]
        );
        assert_eq!(life.group(), None);
        assert!(!life.has_exited(), "no leader to reap");
        assert_eq!(life.agent_end(), Some(AgentEnd::SpawnFailed));
        // Nothing else can happen to a process that never ran.
        life.handle_spawned(GROUP);
        life.handle_spawn_failed(Path::new("/no/agent"), &error);
        life.handle_exit(STATUS, t0);
        life.stop(t0);
        life.release(t0);
        life.handle_timeout(t0 + GRACE * 10);
        assert!(actions(&mut life).is_empty());
        assert_eq!(life.poll_timeout(), None);
        assert_eq!(life.group(), None);
        assert_eq!(life.agent_end(), Some(AgentEnd::SpawnFailed));
    }

    #[test]
    fn before_the_spawn_nothing_is_signalled_or_reported() {
        let t0 = Instant::now();
        let mut life = Lifecycle::new(GRACE);
        assert_eq!(life.agent_end(), Some(AgentEnd::NotStarted));
        life.stop(t0);
        life.handle_exit(STATUS, t0);
        life.handle_stdout_eof();
        life.handle_stderr_eof();
        life.handle_timeout(t0 + GRACE * 10);
        assert!(actions(&mut life).is_empty());
        assert_eq!(life.poll_timeout(), None);
        assert_eq!(life.agent_end(), Some(AgentEnd::NotStarted));
        // A spawn after all that starts from the beginning.
        life.handle_spawned(GROUP);
        assert_eq!(life.agent_end(), None);
        life.handle_exit(STATUS, t0);
        assert_eq!(actions(&mut life), [signal(Signal::Kill)]);
        assert!(life.wants_output());
    }

    #[test]
    fn repeated_inputs_change_nothing() {
        let t0 = Instant::now();
        let mut life = spawned();
        life.handle_spawned(GROUP + 1);
        assert_eq!(life.group(), Some(GROUP));
        life.handle_stdout_eof();
        life.handle_stdout_eof();
        life.handle_stderr_eof();
        life.handle_exit(STATUS, t0);
        life.handle_exit(ExitStatus::Code(0), t0 + GRACE);
        life.handle_stderr_eof();
        assert_eq!(
            actions(&mut life),
            [signal(Signal::Kill), Action::Exited(STATUS)]
        );
        life.release(t0 + GRACE);
        life.stop_reading();
        assert!(actions(&mut life).is_empty());
        assert_eq!(life.agent_end(), Some(AgentEnd::Exited(STATUS)));
    }

    /// What the driver does in the exhaustive search below.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Step {
        StdoutEof,
        StderrEof,
        Exit,
        Stop,
        Release,
        StopReading,
        Pause,
        Resume,
        /// Time passes to the next deadline, which is served (just before it, nothing).
        Tick,
    }

    /// What the actions so far were, to check each new one against.
    #[derive(Debug, Clone, Default)]
    struct History {
        now_ms: u64,
        stdout_eof: bool,
        stderr_eof: bool,
        exit_at: Option<u64>,
        stop_at: Option<u64>,
        release_at: Option<u64>,
        stopped_reading: bool,
        paused: bool,
        /// When reading last resumed after a pause.
        resumed_at: Option<u64>,
        term_at: Option<u64>,
        kill_before_exit: bool,
        kill_after_exit: bool,
        stop_reading_action: bool,
        exited: u32,
    }

    impl History {
        fn pipes_read_to_end(&self) -> bool {
            (self.stdout_eof && self.stderr_eof)
                || self.stopped_reading
                || self.stop_reading_action
                || self.release_at.is_some()
        }
    }

    struct Search {
        t0: Instant,
        sequences: u64,
    }

    impl Search {
        fn at(&self, ms: u64) -> Instant {
            self.t0 + Duration::from_millis(ms)
        }

        fn ms(&self, at: Instant) -> u64 {
            at.duration_since(self.t0).as_millis() as u64
        }

        /// Every order of the steps in `left` (ticks: `ticks` more), from `life`.
        fn explore(&mut self, life: &Lifecycle, seen: &History, left: &[Step], ticks: u32) {
            self.sequences += 1;
            self.check_liveness(life, seen);
            for (i, &step) in left.iter().enumerate() {
                // Resuming while reading does nothing (tested apart): after a pause only.
                if step == Step::Resume && left.contains(&Step::Pause) {
                    continue;
                }
                let mut rest = left.to_vec();
                rest.remove(i);
                let (mut life, mut seen) = (life.clone(), seen.clone());
                self.apply(&mut life, &mut seen, step);
                self.explore(&life, &seen, &rest, ticks);
            }
            if ticks > 0 {
                let (mut life, mut seen) = (life.clone(), seen.clone());
                self.apply(&mut life, &mut seen, Step::Tick);
                self.explore(&life, &seen, left, ticks - 1);
            }
        }

        fn apply(&self, life: &mut Lifecycle, seen: &mut History, step: Step) {
            let now = self.at(seen.now_ms);
            // No deadline is ever left overdue once the actions were taken.
            life.handle_timeout(now);
            assert_eq!(life.poll_action(), None, "spurious timeout at {step:?}");
            match step {
                Step::StdoutEof => {
                    life.handle_stdout_eof();
                    seen.stdout_eof = true;
                }
                Step::StderrEof => {
                    life.handle_stderr_eof();
                    seen.stderr_eof = true;
                }
                Step::Exit => {
                    life.handle_exit(STATUS, now);
                    seen.exit_at = Some(seen.now_ms);
                }
                Step::Stop => {
                    life.stop(now);
                    seen.stop_at.get_or_insert(seen.now_ms);
                }
                Step::Release => {
                    life.release(now);
                    seen.release_at = Some(seen.now_ms);
                }
                Step::StopReading => {
                    life.stop_reading();
                    seen.stopped_reading = true;
                }
                Step::Pause => {
                    life.pause_reading();
                    seen.paused = true;
                }
                Step::Resume => {
                    life.resume_reading(now);
                    if seen.paused {
                        seen.resumed_at = Some(seen.now_ms);
                    }
                    seen.paused = false;
                }
                Step::Tick => {
                    if let Some(due) = life.poll_timeout() {
                        assert!(due > now, "a deadline left overdue");
                        let early = due - Duration::from_millis(1);
                        life.handle_timeout(early);
                        assert_eq!(life.poll_action(), None, "early at {early:?}");
                        seen.now_ms = self.ms(due);
                        life.handle_timeout(due);
                    }
                }
            }
            for action in actions(life) {
                self.check_action(life, seen, &action, step);
            }
            self.check_state(life, seen);
        }

        /// Each action is one the rules allow at this point.
        fn check_action(&self, life: &Lifecycle, seen: &mut History, action: &Action, step: Step) {
            let now = seen.now_ms;
            let grace = GRACE.as_millis() as u64;
            let drain = EXIT_DRAIN.as_millis() as u64;
            match *action {
                Action::Signal { group, signal } => {
                    assert_eq!(group, GROUP);
                    match (signal, seen.exit_at) {
                        (Signal::Kill, Some(at)) => {
                            assert_eq!((step, at), (Step::Exit, now), "{seen:?}");
                            assert!(!seen.kill_after_exit, "one SIGKILL at the exit");
                            seen.kill_after_exit = true;
                        }
                        (Signal::Term, None) => {
                            assert!(seen.term_at.is_none(), "one SIGTERM");
                            let asked = seen.stop_at.is_some_and(|at| at == now)
                                || seen.release_at.is_some_and(|at| now >= at + grace);
                            assert!(asked, "SIGTERM unasked: {seen:?}");
                            seen.term_at = Some(now);
                        }
                        (Signal::Kill, None) => {
                            assert!(!seen.kill_before_exit, "one SIGKILL");
                            assert!(
                                seen.term_at.is_some_and(|at| now >= at + grace),
                                "SIGKILL before the grace: {seen:?}"
                            );
                            seen.kill_before_exit = true;
                        }
                        (Signal::Term, Some(_)) => panic!("SIGTERM after the exit: {seen:?}"),
                    }
                }
                Action::StopReading => {
                    assert!(!seen.stop_reading_action, "once");
                    let exit = seen.exit_at.expect("only after the exit");
                    assert!(!(seen.stdout_eof && seen.stderr_eof), "{seen:?}");
                    assert!(!seen.stopped_reading && seen.release_at.is_none());
                    assert!(!seen.paused, "not while paused");
                    assert!(now >= exit + drain, "before the drain: {seen:?}");
                    assert!(seen.resumed_at.is_none_or(|at| now >= at + drain));
                    assert_eq!(seen.exited, 0);
                    seen.stop_reading_action = true;
                }
                Action::Stderr(_) => panic!("only for a spawn failure"),
                Action::Exited(status) => {
                    assert_eq!(status, STATUS);
                    assert_eq!(seen.exited, 0, "reported twice: {seen:?}");
                    assert!(seen.exit_at.is_some());
                    assert!(seen.release_at.is_none(), "reported after the release");
                    assert!(seen.pipes_read_to_end(), "output still to read: {seen:?}");
                    seen.exited += 1;
                }
            }
            assert_eq!(life.group(), Some(GROUP));
        }

        /// What the getters say after every step.
        fn check_state(&self, life: &Lifecycle, seen: &History) {
            assert_eq!(life.has_exited(), seen.exit_at.is_some());
            assert_eq!(life.is_reported(), seen.exited == 1);
            assert_eq!(
                life.wants_output(),
                seen.exited == 0 && seen.release_at.is_none()
            );
            let signalled = if seen.kill_before_exit {
                Some(Signal::Kill)
            } else {
                seen.term_at.map(|_| Signal::Term)
            };
            assert_eq!(life.signalled(), signalled);
            let end = seen.exit_at.map(|_| match signalled {
                Some(signal) => AgentEnd::Stopped(signal, STATUS),
                None => AgentEnd::Exited(STATUS),
            });
            assert_eq!(life.agent_end(), end);
            if let Some(due) = life.poll_timeout() {
                assert!(self.ms(due) > seen.now_ms, "overdue: {seen:?}");
            }
        }

        /// Whatever the sequence so far, serving every deadline to the end leaves a
        /// process stopped if it was to be and its exit reported if anyone takes it.
        fn check_liveness(&self, life: &Lifecycle, seen: &History) {
            let (mut life, mut seen) = (life.clone(), seen.clone());
            for _ in 0..4 {
                self.apply(&mut life, &mut seen, Step::Tick);
            }
            assert_eq!(life.poll_timeout(), None, "time never ends: {seen:?}");
            if seen.exit_at.is_none() {
                let stopping = seen.stop_at.is_some() || seen.release_at.is_some();
                assert_eq!(seen.kill_before_exit, stopping, "{seen:?}");
            } else {
                assert!(seen.kill_after_exit);
                // Released, it may have been reported before or not at all (checked as
                // the actions came); else it is, unless the output waits to be read.
                if seen.release_at.is_none() {
                    let reading = !seen.paused || seen.pipes_read_to_end();
                    assert_eq!(seen.exited, u32::from(reading), "{seen:?}");
                }
            }
        }
    }

    /// Every order of `steps`, each applied to `life` as [`Search`] does, with their
    /// prefixes: `each` sees the lifecycle after every sequence.
    fn every_order(life: &Lifecycle, steps: &[Step], each: &mut impl FnMut(&Lifecycle)) {
        each(life);
        for (i, &step) in steps.iter().enumerate() {
            let mut rest = steps.to_vec();
            rest.remove(i);
            let mut life = life.clone();
            let now = Instant::now() + GRACE * 100;
            match step {
                Step::StdoutEof => life.handle_stdout_eof(),
                Step::StderrEof => life.handle_stderr_eof(),
                Step::Exit => life.handle_exit(STATUS, now),
                Step::Stop => life.stop(now),
                Step::Release => life.release(now),
                Step::StopReading => life.stop_reading(),
                Step::Pause => life.pause_reading(),
                Step::Resume => life.resume_reading(now),
                Step::Tick => life.handle_timeout(now + GRACE * 100),
            }
            every_order(&life, &rest, each);
        }
    }

    /// Every step but resuming (which follows a pause, and changes nothing here).
    const ALL_STEPS: [Step; 8] = [
        Step::StdoutEof,
        Step::StderrEof,
        Step::Exit,
        Step::Stop,
        Step::Release,
        Step::StopReading,
        Step::Pause,
        Step::Tick,
    ];

    /// After a spawn failure (its reason and its exit 127 taken), nothing in any order
    /// asks for anything: no group to signal, no second report, no time to wait.
    #[test]
    fn after_a_spawn_failure_every_order_of_events_asks_nothing() {
        let mut failed = Lifecycle::new(GRACE);
        let error = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        failed.handle_spawn_failed(Path::new("agent"), &error);
        assert_eq!(actions(&mut failed).len(), 2);
        let mut sequences = 0;
        every_order(&failed, &ALL_STEPS, &mut |life| {
            sequences += 1;
            let mut life = life.clone();
            assert_eq!(actions(&mut life), []);
            assert_eq!(life.poll_timeout(), None);
            assert_eq!(life.group(), None);
            assert!(!life.wants_output());
            assert_eq!(life.agent_end(), Some(AgentEnd::SpawnFailed));
        });
        assert!(sequences > 100_000, "{sequences}");
    }

    /// Before the spawn is known, nothing in any order asks for anything or changes what
    /// follows it.
    #[test]
    fn before_the_spawn_every_order_of_events_asks_nothing() {
        let mut sequences = 0;
        every_order(&Lifecycle::new(GRACE), &ALL_STEPS, &mut |life| {
            sequences += 1;
            let mut life = life.clone();
            assert_eq!(actions(&mut life), []);
            assert_eq!(life.poll_timeout(), None);
            assert_eq!(life.agent_end(), Some(AgentEnd::NotStarted));
            life.handle_spawned(GROUP);
            assert!(life.wants_output());
            life.handle_stdout_eof();
            life.handle_stderr_eof();
            life.handle_exit(STATUS, Instant::now());
            assert_eq!(
                actions(&mut life),
                [signal(Signal::Kill), Action::Exited(STATUS)]
            );
            assert_eq!(life.agent_end(), Some(AgentEnd::Exited(STATUS)));
        });
        assert!(sequences > 100_000, "{sequences}");
    }

    /// Every order of the process's events (both ends of file, the exit), the driver's
    /// decisions (a stop, a release, stopping reading, a pause and a resume) and the
    /// passing of time, each action checked against the rules as it comes, and each
    /// sequence driven to its end: the exit is reported at most once and only after the
    /// output, signals come in their order and at their time, the record says what
    /// happened.
    #[test]
    fn every_order_of_events_follows_the_rules() {
        let t0 = Instant::now();
        let base = [
            Step::StdoutEof,
            Step::StderrEof,
            Step::Exit,
            Step::Stop,
            Step::Pause,
            Step::Resume,
        ];
        let mut sequences = 0;
        for last in [None, Some(Step::Release), Some(Step::StopReading)] {
            let mut steps = base.to_vec();
            steps.extend(last);
            let mut search = Search { t0, sequences: 0 };
            search.explore(&spawned(), &History::default(), &steps, 2);
            sequences += search.sequences;
        }
        // All orders of 6 or 7 distinct steps and 2 ticks, with their prefixes.
        assert!(sequences > 500_000, "{sequences}");
    }
}
