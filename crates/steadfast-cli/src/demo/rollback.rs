//! The demo's last act, on the embedded deployment: a `w: 1` write lost to a rollback beside
//! a `w: "majority"` write that survived, and why.
//!
//! A majority write is acknowledged once a majority of members hold it; any member that can
//! win an election holds it too, so it survives every failover. The primary is then cut off
//! from its secondaries while the demo still reaches it: it acknowledges a `w: 1` write on its
//! own, the majority side elects a new primary without it, and when the old primary rejoins
//! it rolls the write back (`Deployment::rollbacks` lists it).

use std::time::Duration;

use blackpipe::deployment::Deployment;
use bson::{Document, doc};
use steadfast::options::{CollectionOptions, WriteConcern};

use crate::workload::report::{Check, Verdict};
use crate::workload::setup::DATABASE;

/// The collection the act writes to (apart from the counters).
const COLLECTION: &str = "rollback_demo";
/// The two writes' `_id`s.
const KEPT: &str = "majority-write";
const LOST: &str = "w1-write";
/// How long the majority side may take to elect, and the old primary to catch up.
const LIMIT: Duration = Duration::from_secs(5);
/// The check the act adds to the report.
pub(crate) const CHECK: &str = "a w:1 write rolled back, a majority write survived";

/// What the act showed: lines to print and the check for the report.
pub(crate) struct RollbackAct {
    pub(crate) lines: Vec<String>,
    pub(crate) check: Check,
}

/// Plays the act on `deployment` (every fault over, a primary in place).
pub(crate) async fn play(deployment: &Deployment) -> RollbackAct {
    match narrate(deployment).await {
        Ok((lines, held)) => RollbackAct {
            check: Check {
                name: CHECK,
                verdict: Verdict::of(held),
                detail: lines.last().cloned().unwrap_or_default(),
            },
            lines,
        },
        Err(error) => RollbackAct {
            lines: vec![format!("rollback: could not be shown: {error}")],
            check: Check {
                name: CHECK,
                verdict: Verdict::NotChecked,
                detail: format!("not checked: {error}"),
            },
        },
    }
}

async fn narrate(deployment: &Deployment) -> Result<(Vec<String>, bool), String> {
    let old = deployment.primary().ok_or("no primary")?;
    let old_host = host(deployment, old);
    let uri = format!(
        "mongodb://{old_host}/?directConnection=true&appName=steadfast-rollback&serverSelectionTimeoutMS=2000"
    );
    let client = steadfast::Client::with_uri_str(&uri)
        .await
        .map_err(|e| e.to_string())?;
    let written = write_both(deployment, &client, old).await;
    client.shutdown().await;
    written?;
    let new = elected_instead_of(deployment, old).await?;
    deployment.heal(old).map_err(|e| e.to_string())?;
    tokio::time::timeout(LIMIT, deployment.wait_for_replication(old))
        .await
        .map_err(|_| format!("{old_host} did not catch up after rejoining"))?;
    let ns = format!("{DATABASE}.{COLLECTION}");
    let listed = deployment
        .rollbacks()
        .iter()
        .any(|write| write.ns == ns && write.id.as_ref().and_then(|id| id.as_str()) == Some(LOST));
    let (kept_everywhere, lost_nowhere) = held_by_members(deployment);
    let mut lines = vec![
        format!(
            "rollback: insert {{_id: \"{KEPT}\"}} with w: \"majority\" was acknowledged by {old_host} once a majority of members held it"
        ),
        format!(
            "rollback: {old_host} was then cut off from its secondaries (the demo still reached it) and acknowledged insert {{_id: \"{LOST}\"}} with w: 1 on its own"
        ),
        format!(
            "rollback: the majority side elected {} without it; when {old_host} rejoined it rolled back to their branch, and rollbacks() {} {ns} {LOST}",
            host(deployment, new),
            if listed { "lists" } else { "does NOT list" }
        ),
    ];
    let held = listed && kept_everywhere && lost_nowhere;
    lines.push(if held {
        format!(
            "rollback: every member now holds \"{KEPT}\" and none holds \"{LOST}\": a majority write is on every member that can win an election, a w: 1 write only on the primary that took it"
        )
    } else {
        format!(
            "rollback: UNEXPECTED: \"{KEPT}\" on every member: {kept_everywhere}; \"{LOST}\" on none: {lost_nowhere}; listed: {listed}"
        )
    });
    Ok((lines, held))
}

/// The majority write, then the cut, then the `w: 1` write on the isolated primary.
async fn write_both(
    deployment: &Deployment,
    client: &steadfast::Client,
    old: usize,
) -> Result<(), String> {
    let db = client.database(DATABASE);
    let with = |w: WriteConcern| {
        db.collection_with_options::<Document>(
            COLLECTION,
            CollectionOptions::default().write_concern(w),
        )
    };
    with(WriteConcern::majority())
        .insert_one(doc! { "_id": KEPT })
        .await
        .map_err(|e| format!("the majority write: {e}"))?;
    let others: Vec<usize> = (0..deployment.topology().nodes().len())
        .filter(|index| *index != old)
        .collect();
    deployment
        .partition_from(old, &others)
        .map_err(|e| e.to_string())?;
    let written = with(WriteConcern::nodes(1))
        .insert_one(doc! { "_id": LOST })
        .await;
    if let Err(error) = written {
        // Heal even so: the deployment must be whole again for the checks.
        let _ = deployment.heal(old);
        return Err(format!("the w: 1 write on the isolated primary: {error}"));
    }
    Ok(())
}

/// Waits (for at most [`LIMIT`]) until a member other than `old` is primary.
async fn elected_instead_of(deployment: &Deployment, old: usize) -> Result<usize, String> {
    let replaced = |topology: &blackpipe::deployment::Topology| {
        topology.primary().is_some_and(|new| new != old)
    };
    let elected = tokio::time::timeout(LIMIT, deployment.wait_until(replaced)).await;
    match (elected, deployment.primary()) {
        (Ok(()), Some(new)) if new != old => Ok(new),
        _ => {
            let _ = deployment.heal(old);
            Err("the majority side elected no primary".to_owned())
        }
    }
}

/// Whether every data-bearing member holds the majority write, and whether none holds the
/// rolled-back one, read from each member's own store.
fn held_by_members(deployment: &Deployment) -> (bool, bool) {
    let stores: Vec<_> = (0..deployment.topology().nodes().len())
        .filter_map(|index| deployment.member_store(index))
        .collect();
    let holds = |id: &str| {
        stores
            .iter()
            .map(|store| {
                store
                    .find_by_id(DATABASE, COLLECTION, &bson::Bson::from(id))
                    .is_some()
            })
            .collect::<Vec<bool>>()
    };
    let kept = holds(KEPT);
    let lost = holds(LOST);
    (
        !kept.is_empty() && kept.iter().all(|held| *held),
        lost.iter().all(|held| !*held),
    )
}

fn host(deployment: &Deployment, index: usize) -> String {
    deployment
        .host(index)
        .unwrap_or_else(|| format!("member {index}"))
}
