//! The demo's fixed fault schedule: one of each failure the article's application must
//! survive, spread over the run.

use std::time::Duration;

use crate::workload::fault::{Fault, ScheduledFault, Target};

/// The primary's capacity during the overload burst, as a share of the load it receives.
pub(crate) const CAPACITY_SHARE: f64 = 0.5;
/// The shortest run that plays the adaptive policy's burst after the default one.
pub(crate) const ADAPTIVE_BURST_FROM: Duration = Duration::from_secs(10);

/// How the demo overloads the primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OverloadPlan {
    /// A real deployment: `failCommand` rejects 30% of the workload's commands at random.
    Random,
    /// An embedded deployment: the primary's capacity drops to half of the load it receives,
    /// so that rejections follow the load as on a real server.
    Capacity,
    /// As [`OverloadPlan::Capacity`], then the same burst again with the client's adaptive
    /// policy (on runs of at least [`ADAPTIVE_BURST_FROM`]).
    CapacityThenAdaptive,
}

fn capacity_burst(duration: Duration, adaptive: bool) -> Fault {
    // Its offered load is measured first (burst::MEASURE), so the burst itself is shorter on
    // short runs.
    Fault::CapacityBurst {
        fraction: CAPACITY_SHARE,
        duration: duration
            .mul_f64(0.1)
            .clamp(Duration::from_millis(250), Duration::from_secs(2)),
        adaptive,
    }
}

/// The overload faults of a run of `duration`.
fn overload_faults(duration: Duration, plan: OverloadPlan) -> Vec<ScheduledFault> {
    let at = |fraction: f64| duration.mul_f64(fraction);
    match plan {
        OverloadPlan::Random => vec![ScheduledFault {
            at: at(0.75),
            fault: Fault::Overload {
                probability: 0.3,
                duration: duration
                    .mul_f64(0.1)
                    .clamp(Duration::from_millis(500), Duration::from_secs(2)),
            },
        }],
        OverloadPlan::CapacityThenAdaptive if duration >= ADAPTIVE_BURST_FROM => vec![
            ScheduledFault {
                at: at(0.70),
                fault: capacity_burst(duration, false),
            },
            ScheduledFault {
                at: at(0.85),
                fault: capacity_burst(duration, true),
            },
        ],
        OverloadPlan::Capacity | OverloadPlan::CapacityThenAdaptive => vec![ScheduledFault {
            at: at(0.75),
            fault: capacity_burst(duration, false),
        }],
    }
}

/// The schedule for a run of `duration`: a stepdown whose election takes a second, writes
/// whose connection closes after they were applied, connections closed before commands ran,
/// the primary partitioned for a few seconds, and overload as `overload` says.
///
/// With `transactions`, also a commit whose reply is a write concern error after it applied.
pub(crate) fn demo_schedule(
    duration: Duration,
    transactions: bool,
    overload: OverloadPlan,
) -> Vec<ScheduledFault> {
    let at = |fraction: f64| duration.mul_f64(fraction);
    let partition = duration
        .mul_f64(0.15)
        .clamp(Duration::from_secs(1), Duration::from_secs(4));
    let mut schedule = vec![
        ScheduledFault {
            at: at(0.10),
            fault: Fault::StepDown {
                election: Duration::from_secs(1),
            },
        },
        ScheduledFault {
            at: at(0.25),
            // One write: blackpipe also closes the connection of the retry when the fail point
            // has times left (mongod does not fire it for a retry it answers from its
            // transaction table), and a second close would exhaust the single retry.
            fault: Fault::CloseAfterWrite { times: 1 },
        },
        ScheduledFault {
            at: at(0.30),
            fault: Fault::CloseBeforeCommand {
                commands: &["update", "find"],
                // One command: with more, the retry of a command whose connection closed may
                // be closed too, and the specifications allow a single retry.
                times: 1,
            },
        },
        ScheduledFault {
            at: at(0.45),
            fault: Fault::Partition {
                target: Target::Primary,
                duration: partition,
            },
        },
    ];
    schedule.extend(overload_faults(duration, overload));
    if transactions {
        schedule.insert(
            4,
            ScheduledFault {
                at: at(0.65),
                fault: Fault::CommitOutcomeLost { times: 1 },
            },
        );
    }
    schedule
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(schedule: &[ScheduledFault]) -> Vec<&'static str> {
        schedule.iter().map(|s| s.fault.kind()).collect()
    }

    #[test]
    fn every_failure_of_the_article_is_played_in_order() {
        let schedule = demo_schedule(Duration::from_secs(20), false, OverloadPlan::Capacity);
        assert_eq!(
            kinds(&schedule),
            [
                "stepdown",
                "close-after-write",
                "close-before-command",
                "partition",
                "overload-burst"
            ]
        );
        assert!(schedule.windows(2).all(|pair| pair[0].at <= pair[1].at));
        assert_eq!(schedule[0].fault.duration(), Duration::from_secs(1));
        assert_eq!(schedule[3].fault.duration(), Duration::from_secs(3));
    }

    #[test]
    fn a_real_deployment_gets_random_rejections_instead_of_a_capacity() {
        let schedule = demo_schedule(Duration::from_secs(20), false, OverloadPlan::Random);
        assert_eq!(
            schedule.last().map(|s| &s.fault),
            Some(&Fault::Overload {
                probability: 0.3,
                duration: Duration::from_secs(2)
            })
        );
        let simulated = demo_schedule(Duration::from_secs(20), false, OverloadPlan::Capacity);
        assert_eq!(
            simulated.last().map(|s| &s.fault),
            Some(&Fault::CapacityBurst {
                fraction: CAPACITY_SHARE,
                duration: Duration::from_secs(2),
                adaptive: false,
            })
        );
    }

    #[test]
    fn long_enough_runs_replay_the_burst_with_the_adaptive_policy() {
        let policies = |seconds: u64| -> Vec<bool> {
            demo_schedule(
                Duration::from_secs(seconds),
                true,
                OverloadPlan::CapacityThenAdaptive,
            )
            .iter()
            .filter_map(|s| match s.fault {
                Fault::CapacityBurst { adaptive, .. } => Some(adaptive),
                _ => None,
            })
            .collect()
        };
        assert_eq!(policies(20), [false, true]);
        assert_eq!(policies(5), [false], "too short for two bursts");
        let schedule = demo_schedule(
            Duration::from_secs(20),
            true,
            OverloadPlan::CapacityThenAdaptive,
        );
        assert!(schedule.windows(2).all(|pair| pair[0].at <= pair[1].at));
    }

    #[test]
    fn played_back_to_back_the_faults_end_within_short_runs() {
        let plans = [
            OverloadPlan::Random,
            OverloadPlan::Capacity,
            OverloadPlan::CapacityThenAdaptive,
        ];
        let runs = [3, 5, 10, 20, 60].into_iter().flat_map(|s| {
            plans
                .into_iter()
                .flat_map(move |plan| [(s, false, plan), (s, true, plan)])
        });
        for (seconds, transactions, capacity) in runs {
            let duration = Duration::from_secs(seconds);
            // Faults are played one after the other: each starts at its time or when the
            // previous one is over, whichever is later.
            let end = demo_schedule(duration, transactions, capacity)
                .iter()
                .fold(Duration::ZERO, |free, s| {
                    free.max(s.at) + s.fault.duration()
                });
            assert!(
                end <= duration,
                "{seconds} s run ({capacity:?}): faults end at {end:?}"
            );
        }
    }

    #[test]
    fn a_transfer_demo_also_loses_a_commit_reply_after_the_partition() {
        let schedule = demo_schedule(Duration::from_secs(20), true, OverloadPlan::Capacity);
        assert_eq!(
            kinds(&schedule),
            [
                "stepdown",
                "close-after-write",
                "close-before-command",
                "partition",
                "commit-outcome-lost",
                "overload-burst"
            ]
        );
        assert!(schedule.windows(2).all(|pair| pair[0].at <= pair[1].at));
    }
}
