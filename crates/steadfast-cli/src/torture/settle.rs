//! Once the faults are over: every member caught up with the primary, then what each holds,
//! and the reads a rollback explains.

use std::collections::BTreeMap;
use std::time::Duration;

use blackpipe::deployment::{Deployment, Role};

use crate::workload::durability::{Durability, MemberData};
use crate::workload::ledger::StaleRead;
use crate::workload::setup::DATABASE;

/// How long each member may take to catch up with the primary once every link is healed.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(10);

/// Lets every member replicate again and waits until each data-bearing member has applied
/// everything the primary has (a member that diverged rolls back first, when it is healed).
/// Returns what went wrong.
pub(crate) async fn catch_up(deployment: &Deployment) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(error) = deployment.resume_replication(None) {
        problems.push(format!("resuming replication: {error}"));
    }
    for index in data_bearing(deployment) {
        let caught_up =
            tokio::time::timeout(CATCH_UP_LIMIT, deployment.wait_for_replication(index)).await;
        if caught_up.is_err() {
            problems.push(format!(
                "member {index} had not caught up with the primary {} s after the faults",
                CATCH_UP_LIMIT.as_secs()
            ));
        }
    }
    problems
}

fn data_bearing(deployment: &Deployment) -> Vec<usize> {
    deployment
        .topology()
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, node)| matches!(node.role(), Role::Primary | Role::Secondary))
        .map(|(index, _)| index)
        .collect()
}

/// Each data-bearing member's documents in `collections` of the workload's database, read
/// from its own store.
pub(crate) fn member_data(deployment: &Deployment, collections: &[&str]) -> Vec<MemberData> {
    data_bearing(deployment)
        .into_iter()
        .filter_map(|index| {
            let store = deployment.member_store(index)?;
            Some(MemberData {
                host: deployment
                    .host(index)
                    .unwrap_or_else(|| format!("member {index}")),
                collections: collections
                    .iter()
                    .map(|name| ((*name).to_owned(), store.documents(DATABASE, name)))
                    .collect(),
            })
        })
        .collect()
}

/// Takes out of `stale` the reads that missed no more increments of their counter than
/// rollbacks discarded (`discarded`: counter -> discarded increments), when the write concern
/// let acknowledged increments roll back; returns how many it took.
pub(crate) fn explained_by_rollbacks(
    stale: &mut Vec<StaleRead>,
    discarded: &BTreeMap<String, u64>,
    durability: Durability,
) -> usize {
    if !durability.acknowledged_may_roll_back() {
        return 0;
    }
    let before = stale.len();
    stale.retain(|read| {
        let missed = i128::from(read.acknowledged_before) - i128::from(read.seen);
        let discarded = i128::from(discarded.get(&read.key).copied().unwrap_or(0));
        missed > discarded
    });
    before - stale.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stale(key: &str, acknowledged_before: u64, seen: i64) -> StaleRead {
        StaleRead {
            key: key.to_owned(),
            acknowledged_before,
            seen,
        }
    }

    #[test]
    fn w1_stale_reads_within_the_rolled_back_increments_are_explained() {
        let discarded = BTreeMap::from([("a".to_owned(), 2)]);
        let mut reads = vec![stale("a", 5, 3), stale("a", 5, 2), stale("b", 1, 0)];
        assert_eq!(
            explained_by_rollbacks(&mut reads, &discarded, Durability::W1),
            1
        );
        assert_eq!(reads, [stale("a", 5, 2), stale("b", 1, 0)]);
        assert_eq!(
            explained_by_rollbacks(&mut reads, &discarded, Durability::Majority),
            0
        );
    }
}
