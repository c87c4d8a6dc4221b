//! The faults a run can inject, and a schedule of them.

use std::fmt;
use std::time::Duration;

use super::burst::MEASURE;

/// Which member a fault hits, resolved when the fault is injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Whichever member is primary at that moment.
    Primary,
    /// One of the members that are not primary at that moment: the `pick`-th, modulo their
    /// number (drawn when the schedule is built, so a seed replays the same choice).
    Secondary {
        /// Which secondary.
        pick: usize,
    },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Primary => f.write_str("the primary"),
            Target::Secondary { .. } => f.write_str("a secondary"),
        }
    }
}

/// One fault.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fault {
    /// The primary steps down; another member wins the election after `election`.
    StepDown {
        /// How long the set has no primary.
        election: Duration,
    },
    /// The primary is cut off from every other member for `duration` while clients still
    /// reach it (`Deployment::partition_from`), then healed: it keeps acknowledging `w: 1`
    /// writes until the majority side elects a new primary, and rolls them back when it
    /// rejoins.
    IsolatePrimary {
        /// How long the links stay cut.
        duration: Duration,
    },
    /// A member's process dies and is restarted after `down_for`.
    KillAndRestart {
        /// Which member.
        target: Target,
        /// How long it stays down.
        down_for: Duration,
    },
    /// A member accepts connections and never answers, for `duration`.
    Partition {
        /// Which member.
        target: Target,
        /// How long the partition lasts.
        duration: Duration,
    },
    /// The primary applies the next `times` writes, then closes their connections before
    /// replying (`onPrimaryTransactionalWrite`): the driver cannot know the write happened.
    CloseAfterWrite {
        /// How many writes.
        times: u32,
    },
    /// The primary closes the connection instead of running the next `times` matching
    /// commands (`failCommand` with `closeConnection`).
    CloseBeforeCommand {
        /// Which commands (`update`, `insert`, `find`...).
        commands: &'static [&'static str],
        /// How many.
        times: u32,
    },
    /// The primary commits the next `times` transactions but replies with a write concern
    /// error (`failCommand` on `commitTransaction` with `writeConcernError`): the driver must
    /// treat the commit's outcome as unknown and retry it.
    CommitOutcomeLost {
        /// How many commits.
        times: u32,
    },
    /// A member answers everything `delay` late, for `duration`.
    Slow {
        /// Which member.
        target: Target,
        /// The added delay per reply.
        delay: Duration,
        /// How long it stays slow.
        duration: Duration,
    },
    /// The primary sheds load: each command is rejected with `SystemOverloadedError` with
    /// probability `probability`, for `duration`.
    Overload {
        /// The chance that one command is rejected.
        probability: f64,
        /// How long the overload lasts.
        duration: Duration,
    },
    /// The primary's capacity drops to `fraction` of the load it receives (measured for
    /// [`MEASURE`] first) for `duration`: past it, blackpipe's capacity model rejects commands
    /// with `SystemOverloadedError`, and each rejection costs the member some of its capacity.
    CapacityBurst {
        /// The capacity, as a share of the offered load.
        fraction: f64,
        /// How long the burst lasts.
        duration: Duration,
        /// Whether the workload's client runs the adaptive policy during the burst (else the
        /// default policy).
        adaptive: bool,
    },
}

impl Fault {
    /// A short name, for tallies and JSON.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Fault::StepDown { .. } => "stepdown",
            Fault::IsolatePrimary { .. } => "isolate-primary",
            Fault::KillAndRestart { .. } => "kill",
            Fault::Partition { .. } => "partition",
            Fault::CloseAfterWrite { .. } => "close-after-write",
            Fault::CloseBeforeCommand { .. } => "close-before-command",
            Fault::CommitOutcomeLost { .. } => "commit-outcome-lost",
            Fault::Slow { .. } => "slow",
            Fault::Overload { .. } => "overload",
            Fault::CapacityBurst { .. } => "overload-burst",
        }
    }

    /// How long the fault keeps the deployment impaired once injected (zero for fail points
    /// that disarm themselves after a number of commands).
    pub(crate) fn duration(&self) -> Duration {
        match self {
            Fault::StepDown { election } => *election,
            Fault::KillAndRestart { down_for, .. } => *down_for,
            Fault::Partition { duration, .. }
            | Fault::IsolatePrimary { duration }
            | Fault::Slow { duration, .. }
            | Fault::Overload { duration, .. } => *duration,
            Fault::CapacityBurst { duration, .. } => MEASURE + *duration,
            Fault::CloseAfterWrite { .. }
            | Fault::CloseBeforeCommand { .. }
            | Fault::CommitOutcomeLost { .. } => Duration::ZERO,
        }
    }

    /// Whether the fault needs the control API of an embedded blackpipe deployment (a real
    /// deployment only offers fail points).
    pub(crate) fn needs_simulator(&self) -> bool {
        matches!(
            self,
            Fault::StepDown { .. }
                | Fault::KillAndRestart { .. }
                | Fault::Partition { .. }
                | Fault::IsolatePrimary { .. }
                | Fault::CapacityBurst { .. }
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: &Duration| d.as_millis();
        match self {
            Fault::StepDown { election } => write!(
                f,
                "the primary steps down, the election takes {} ms",
                ms(election)
            ),
            Fault::KillAndRestart { target, down_for } => {
                write!(f, "kill {target}, restart it after {} ms", ms(down_for))
            }
            Fault::IsolatePrimary { duration } => write!(
                f,
                "cut the primary off from its secondaries for {} ms (it takes w:1 writes until they elect)",
                ms(duration)
            ),
            Fault::Partition { target, duration } => {
                write!(f, "partition {target} for {} ms", ms(duration))
            }
            Fault::CloseAfterWrite { times: 1 } => {
                f.write_str("the primary closes the connection after applying the next write")
            }
            Fault::CloseAfterWrite { times } => write!(
                f,
                "the primary closes the connection after applying the next {times} writes"
            ),
            Fault::CloseBeforeCommand { commands, times: 1 } => write!(
                f,
                "the primary closes the connection instead of running the next {} command",
                commands.join("/")
            ),
            Fault::CloseBeforeCommand { commands, times } => write!(
                f,
                "the primary closes the connection instead of running the next {times} {} commands",
                commands.join("/")
            ),
            Fault::CommitOutcomeLost { times } => write!(
                f,
                "the primary commits the next {times} transactions but replies with a write concern error"
            ),
            Fault::Slow {
                target,
                delay,
                duration,
            } => write!(
                f,
                "{target} answers {} ms late for {} ms",
                ms(delay),
                ms(duration)
            ),
            Fault::Overload {
                probability,
                duration,
            } => write!(
                f,
                "the primary rejects {:.0}% of commands as overloaded for {} ms",
                probability * 100.0,
                ms(duration)
            ),
            Fault::CapacityBurst {
                fraction,
                duration,
                adaptive,
            } => write!(
                f,
                "the primary's capacity drops to {:.0}% of the load it receives for {} ms ({} policy)",
                fraction * 100.0,
                ms(duration),
                if *adaptive { "adaptive" } else { "default" }
            ),
        }
    }
}

/// A fault and when to inject it, counted from the start of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScheduledFault {
    /// Offset from the start of the run.
    pub(crate) at: Duration,
    /// The fault.
    pub(crate) fault: Fault,
}
