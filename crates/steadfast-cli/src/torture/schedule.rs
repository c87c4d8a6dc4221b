//! The torture run's fault schedule, drawn from a seeded generator so that a seed replays it.

use std::time::Duration;

use rand::Rng;

use crate::workload::fault::{Fault, ScheduledFault, Target};

/// Faults are played in the first part of the run only: the rest lets the deployment and the
/// driver settle, so that the checks at the end see a healthy set.
const ACTIVE_SHARE: f64 = 0.8;
/// Consecutive draws that do not fit before the schedule is complete.
const MAX_MISSES: usize = 8;
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

/// One fault drawn at random.
fn random_fault(rng: &mut impl Rng) -> Fault {
    match rng.random_range(0..8) {
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

/// A random schedule for a run of `duration`: faults one after the other, separated by
/// random gaps, all over before the last fifth of the run.
pub(crate) fn random_schedule(rng: &mut impl Rng, duration: Duration) -> Vec<ScheduledFault> {
    let active_until = duration.mul_f64(ACTIVE_SHARE);
    let mut schedule = Vec::new();
    let mut now = duration.mul_f64(0.05);
    // A fault that does not fit is redrawn (a shorter one may), until several in a row miss.
    let mut misses = 0;
    while misses < MAX_MISSES {
        let fault = random_fault(rng);
        let at = now + millis(rng, 50, 600);
        let ends = at + fault.duration();
        if ends > active_until {
            misses += 1;
            continue;
        }
        misses = 0;
        schedule.push(ScheduledFault { at, fault });
        now = ends;
    }
    schedule
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
        )
    }

    #[test]
    fn a_seed_replays_the_same_schedule() {
        assert_eq!(schedule(7, 30), schedule(7, 30));
        assert_ne!(schedule(7, 30), schedule(8, 30));
    }

    #[test]
    fn faults_do_not_overlap_and_end_before_the_quiet_tail() {
        for seed in 0..200 {
            let duration = Duration::from_secs(20);
            let faults = schedule(seed, 20);
            let mut free = Duration::ZERO;
            for scheduled in &faults {
                assert!(scheduled.at >= free, "seed {seed}: {scheduled:?} overlaps");
                free = scheduled.at + scheduled.fault.duration();
            }
            assert!(free <= duration.mul_f64(ACTIVE_SHARE), "seed {seed}");
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
        let with_faults = (0..100)
            .filter(|&seed| !schedule(seed, 4).is_empty())
            .count();
        assert!(
            with_faults >= 95,
            "{with_faults} of 100 four-second runs had faults"
        );
    }
}
