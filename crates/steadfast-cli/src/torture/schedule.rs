//! The torture run's fault schedule, drawn from a seeded generator so that a seed replays it.

use std::time::Duration;

use rand::Rng;

use crate::workload::fault::{Fault, ScheduledFault, Target};

/// The quiet start, at most: the workers get going before the first fault.
const LEAD_IN: Duration = Duration::from_millis(500);
/// The pause before each fault is drawn from this range, so faults follow each other closely
/// and keep coming until the end of the run.
const GAP_MS: (u64, u64) = (50, 600);
/// Draws of a fault too long for the time left before an instantaneous one is taken instead.
const MAX_MISSES: usize = 8;
/// Which optional faults the schedule draws besides the common ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FaultMix {
    /// Commit replies lost and connections closed instead of a commit.
    pub(crate) transactions: bool,
    /// Connections closed instead of a change stream's `getMore`.
    pub(crate) change_stream: bool,
    /// The primary cut off from its secondaries (it takes `w: 1` writes that roll back).
    pub(crate) isolation: bool,
}

impl FaultMix {
    /// The extra faults, each drawn as often as one of the common kinds.
    fn extras(self) -> Vec<Extra> {
        let mut extras = Vec::new();
        if self.transactions {
            extras.extend([Extra::CommitOutcomeLost, Extra::CloseBeforeCommit]);
        }
        if self.change_stream {
            extras.push(Extra::CloseBeforeGetMore);
        }
        if self.isolation {
            extras.push(Extra::IsolatePrimary);
        }
        extras
    }
}

#[derive(Clone, Copy, Debug)]
enum Extra {
    CommitOutcomeLost,
    CloseBeforeCommit,
    CloseBeforeGetMore,
    IsolatePrimary,
}

/// The commands a `failCommand` fault may hit.
const COMMAND_SETS: [&[&str]; 4] = [
    &["update"],
    &["insert"],
    &["find"],
    &["update", "insert", "find"],
];

fn millis(rng: &mut impl Rng, low: u64, high: u64) -> Duration {
    Duration::from_millis(rng.random_range(low..=high))
}

fn target(rng: &mut impl Rng) -> Target {
    if rng.random_bool(0.6) {
        Target::Primary
    } else {
        Target::Secondary {
            pick: rng.random_range(0..16),
        }
    }
}

/// One fault drawn at random. Without extras the draws are those of a plain counter run, so
/// its seeds replay the same schedules as before extras existed.
fn random_fault(rng: &mut impl Rng, mix: FaultMix) -> Fault {
    let extras = mix.extras();
    let roll = rng.random_range(0..8 + extras.len());
    if let Some(extra) = roll.checked_sub(8).and_then(|index| extras.get(index)) {
        let times = rng.random_range(1..=3);
        return match extra {
            Extra::CommitOutcomeLost => Fault::CommitOutcomeLost { times },
            Extra::CloseBeforeCommit => Fault::CloseBeforeCommand {
                commands: &["commitTransaction"],
                times,
            },
            Extra::CloseBeforeGetMore => Fault::CloseBeforeCommand {
                commands: &["getMore"],
                times,
            },
            // Longer than the embedded set's election delay (300 ms), so that the majority
            // side elects while the isolated primary still takes writes.
            Extra::IsolatePrimary => Fault::IsolatePrimary {
                duration: millis(rng, 600, 2_500),
            },
        };
    }
    match roll {
        0 => Fault::StepDown {
            election: millis(rng, 100, 1_500),
        },
        1 => Fault::KillAndRestart {
            target: target(rng),
            down_for: millis(rng, 200, 2_000),
        },
        2 => Fault::Partition {
            target: target(rng),
            duration: millis(rng, 300, 2_500),
        },
        3 | 4 => Fault::CloseAfterWrite {
            times: rng.random_range(1..=5),
        },
        5 => Fault::CloseBeforeCommand {
            commands: COMMAND_SETS[rng.random_range(0..COMMAND_SETS.len())],
            times: rng.random_range(1..=5),
        },
        6 => Fault::Slow {
            target: target(rng),
            delay: millis(rng, 20, 300),
            duration: millis(rng, 300, 2_000),
        },
        _ => Fault::Overload {
            probability: rng.random_range(0.1..0.5),
            duration: millis(rng, 200, 1_500),
        },
    }
}

/// A random schedule for a run of `duration`: faults one after the other, separated by gaps
/// of at most [`GAP_MS`]'s upper bound, from the lead-in until the end of the run. Every fault
/// is over by the end, so the run's closing checks see it healed, and no stretch longer than
/// that gap is left without a fault, the end included.
pub(crate) fn random_schedule(
    rng: &mut impl Rng,
    duration: Duration,
    mix: FaultMix,
) -> Vec<ScheduledFault> {
    let mut schedule = Vec::new();
    let mut now = LEAD_IN.min(duration.mul_f64(0.05));
    loop {
        let at = now + millis(rng, GAP_MS.0, GAP_MS.1);
        let Some(room) = duration.checked_sub(at).filter(|room| !room.is_zero()) else {
            return schedule;
        };
        let fault = fitting_fault(rng, room, mix);
        now = at + fault.duration();
        schedule.push(ScheduledFault { at, fault });
    }
}

/// A random fault that is over within `room`: a few draws, then, near the end of the run, an
/// instantaneous one (closing connections) so that the last stretch still sees a fault.
fn fitting_fault(rng: &mut impl Rng, room: Duration, mix: FaultMix) -> Fault {
    for _ in 0..MAX_MISSES {
        let fault = random_fault(rng, mix);
        if fault.duration() <= room {
            return fault;
        }
    }
    Fault::CloseAfterWrite {
        times: rng.random_range(1..=5),
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn schedule(seed: u64, seconds: u64) -> Vec<ScheduledFault> {
        random_schedule(
            &mut StdRng::seed_from_u64(seed),
            Duration::from_secs(seconds),
            FaultMix::default(),
        )
    }

    #[test]
    fn a_seed_replays_the_same_schedule() {
        assert_eq!(schedule(7, 30), schedule(7, 30));
        assert_ne!(schedule(7, 30), schedule(8, 30));
    }

    /// The longest stretch without a fault: a gap can be at most this long.
    fn max_gap() -> Duration {
        Duration::from_millis(GAP_MS.1)
    }

    #[test]
    fn faults_do_not_overlap_and_are_over_by_the_end() {
        for seed in 0..200 {
            for seconds in [4, 20, 300] {
                let duration = Duration::from_secs(seconds);
                let mut free = Duration::ZERO;
                for scheduled in &schedule(seed, seconds) {
                    assert!(scheduled.at >= free, "seed {seed}: {scheduled:?} overlaps");
                    free = scheduled.at + scheduled.fault.duration();
                    assert!(
                        free <= duration,
                        "seed {seed}: {scheduled:?} outlasts the run"
                    );
                }
            }
        }
    }

    /// A 300 s run once had no fault in its last 60 s (faults stopped at 80% of the run).
    #[test]
    fn faults_keep_coming_until_the_end_of_the_run() {
        for seed in 0..200 {
            for seconds in [4, 30, 300] {
                let duration = Duration::from_secs(seconds);
                let faults = schedule(seed, seconds);
                let mut quiet_since = LEAD_IN.min(duration.mul_f64(0.05));
                for scheduled in &faults {
                    let quiet = scheduled.at - quiet_since;
                    assert!(
                        quiet <= max_gap(),
                        "seed {seed}, {seconds} s: {quiet:?} before {scheduled:?}"
                    );
                    quiet_since = scheduled.at + scheduled.fault.duration();
                }
                let tail = duration - quiet_since;
                assert!(
                    tail <= max_gap(),
                    "seed {seed}, {seconds} s: no fault in the last {tail:?}"
                );
            }
        }
    }

    #[test]
    fn long_runs_see_every_kind_of_fault() {
        let kinds: std::collections::BTreeSet<&str> = (0..20)
            .flat_map(|seed| schedule(seed, 60))
            .map(|scheduled| scheduled.fault.kind())
            .collect();
        assert_eq!(kinds.len(), 7, "{kinds:?}");
    }

    #[test]
    fn short_runs_still_get_faults() {
        assert!((0..100).all(|seed| schedule(seed, 4).len() >= 2));
    }

    #[test]
    fn transfer_and_consumer_runs_also_lose_commits_and_getmores() {
        let mix = FaultMix {
            transactions: true,
            change_stream: true,
            isolation: false,
        };
        let faults: Vec<String> = (0..20)
            .flat_map(|seed| {
                random_schedule(
                    &mut StdRng::seed_from_u64(seed),
                    Duration::from_secs(60),
                    mix,
                )
            })
            .map(|scheduled| scheduled.fault.to_string())
            .collect();
        for wanted in ["commits the next", "commitTransaction", "getMore"] {
            assert!(
                faults.iter().any(|f| f.contains(wanted)),
                "no {wanted} fault"
            );
        }
    }

    #[test]
    fn isolation_runs_cut_the_primary_off_long_enough_for_an_election() {
        let mix = FaultMix {
            isolation: true,
            ..FaultMix::default()
        };
        let isolations: Vec<Duration> = (0..20)
            .flat_map(|seed| {
                random_schedule(
                    &mut StdRng::seed_from_u64(seed),
                    Duration::from_secs(30),
                    mix,
                )
            })
            .filter_map(|scheduled| match scheduled.fault {
                Fault::IsolatePrimary { duration } => Some(duration),
                _ => None,
            })
            .collect();
        assert!(isolations.len() >= 10, "{isolations:?}");
        let election = crate::workload::setup::ELECTION_DELAY;
        assert!(
            isolations.iter().all(|d| *d >= election * 2),
            "{isolations:?}"
        );
        assert!(
            (0..20)
                .flat_map(|seed| schedule(seed, 30))
                .all(|s| s.fault.kind() != "isolate-primary"),
            "only runs that ask for it isolate the primary"
        );
    }
}
