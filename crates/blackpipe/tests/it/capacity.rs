//! A member's capacity seen through raw wire clients: admission up to the limit and 462 past
//! it, the concurrency limit held by slow commands, the exempt commands, counters, `off`, and
//! the Rust handle. Rates are chosen so that the clock cannot refill a token during a test
//! (one per 1,000 s): every assertion is a count, never a wall-clock threshold.

use std::time::Duration;

use blackpipe::deployment::{Capacity, DeploymentConfig, MemberOptions};
use bson::{Document, doc};

use crate::deployment::{client, start};
use crate::support::within;

fn insert(n: i32) -> Document {
    doc! { "insert": "c", "documents": [{ "_id": n }], "$db": "test" }
}

fn ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0)
}

fn assert_overloaded(reply: &Document) {
    assert_eq!(reply.get_i32("code").ok(), Some(462), "{reply}");
    assert_eq!(
        reply.get_str("codeName").unwrap(),
        "IngressRequestRateLimitExceeded"
    );
    let labels: Vec<&str> = reply
        .get_array("errorLabels")
        .unwrap()
        .iter()
        .filter_map(|label| label.as_str())
        .collect();
    assert_eq!(labels, ["SystemOverloadedError", "RetryableError"]);
}

fn stats_command(member: Option<i32>) -> Document {
    let mut command = doc! { "blackpipe": "capacityStats", "$db": "admin" };
    if let Some(member) = member {
        command.insert("member", member);
    }
    command
}

#[tokio::test]
async fn a_member_admits_up_to_its_rate_then_rejects_like_mongod() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut node = client(&deployment, 0).await;
    // Three tokens, refilled at one per 1,000 s.
    let configured = node
        .round_trip(doc! {
            "blackpipe": "capacity", "opsPerSec": 0.001, "burstSecs": 3000,
            "baseBackoffMS": 40, "rejectCost": 0.25, "$db": "admin",
        })
        .await;
    assert!(ok(&configured), "{configured}");
    for n in 0..3 {
        let reply = node.round_trip(insert(n)).await;
        assert!(ok(&reply), "admitted: {reply}");
    }
    let rejected = node.round_trip(insert(3)).await;
    assert_overloaded(&rejected);
    assert_eq!(rejected.get_i64("baseBackoffMS").unwrap(), 40);
    // The rejected insert never ran.
    let count = node.round_trip(doc! { "count": "c", "$db": "test" }).await;
    assert_overloaded(&count);
    assert_eq!(deployment.store().documents("test", "c").len(), 3);
    // Handshake, monitoring, authentication and admin commands are exempt.
    for exempt in [
        doc! { "hello": 1, "$db": "admin" },
        doc! { "isMaster": 1, "$db": "admin" },
        doc! { "ping": 1, "$db": "admin" },
        doc! { "blackpipe": "status", "$db": "admin" },
    ] {
        assert!(ok(&node.round_trip(exempt.clone()).await), "{exempt}");
    }
    let stats = node.round_trip(stats_command(None)).await;
    assert_eq!(stats.get_i64("admitted").unwrap(), 3, "{stats}");
    assert_eq!(stats.get_i64("rejected").unwrap(), 2);
    assert_eq!(stats.get_f64("rejectionCost").unwrap(), 0.5);
    let member = stats.get_array("members").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(member.get_i64("member").unwrap(), 0);
    assert_eq!(member.get_i64("inProgress").unwrap(), 0);
    let capacity = member.get_document("capacity").unwrap();
    assert_eq!(capacity.get_f64("opsPerSec").unwrap(), 0.001);

    // Off: everything is admitted again, and the counters keep their values.
    let off = node
        .round_trip(doc! { "blackpipe": "capacity", "off": true, "$db": "admin" })
        .await;
    assert!(ok(&off), "{off}");
    assert!(ok(&node.round_trip(insert(3)).await));
    let stats = node.round_trip(stats_command(Some(0))).await;
    assert_eq!(stats.get_i64("admitted").unwrap(), 3, "{stats}");
    assert_eq!(stats.get_i64("rejected").unwrap(), 2);
    let member = stats.get_array("members").unwrap()[0]
        .as_document()
        .unwrap();
    assert!(
        member.get_document("capacity").is_err(),
        "no capacity: {member}"
    );
}

#[tokio::test]
async fn commands_held_by_slow_execution_fill_the_concurrency_limit() {
    let deployment = start(DeploymentConfig::replica_set(2)).await;
    let mut admin = client(&deployment, 0).await;
    for command in [
        doc! { "blackpipe": "capacity", "member": 0, "concurrent": 2, "$db": "admin" },
        // Writes on the primary run until a stepdown interrupts them.
        doc! { "blackpipe": "slowCommands", "member": 0, "delayMS": 600_000, "$db": "admin" },
    ] {
        assert!(ok(&admin.round_trip(command).await));
    }
    let counters = deployment.counters(0).unwrap();
    let arrived = counters.commands();
    let mut held = Vec::new();
    for n in 0..2 {
        let mut connection = client(&deployment, 0).await;
        connection.send_command(insert(n)).await;
        held.push(connection);
    }
    // Each command is admitted on arrival, before its execution starts to wait.
    within(counters.wait_until(|c| c.commands() >= arrived + 2)).await;
    let stats = deployment.capacity_stats(0).unwrap();
    assert_eq!((stats.admitted, stats.in_progress), (2, 2));
    assert_overloaded(&admin.round_trip(insert(2)).await);
    // A stepdown interrupts the held writes, which gives their places back.
    deployment.step_down(Duration::from_secs(60)).unwrap();
    for connection in &mut held {
        let reply = crate::support::reply_document(&within(connection.expect_message()).await);
        assert_eq!(reply.get_i32("code").ok(), Some(11602), "{reply}");
    }
    let stats = deployment.capacity_stats(0).unwrap();
    assert_eq!(
        (stats.admitted, stats.rejected, stats.in_progress),
        (2, 1, 0)
    );
}

#[tokio::test]
async fn without_a_member_the_capacity_goes_to_every_data_bearing_member() {
    let deployment = start(DeploymentConfig::replica_set_with(vec![
        MemberOptions::electable(),
        MemberOptions::electable(),
        MemberOptions::arbiter(),
    ]))
    .await;
    let mut admin = client(&deployment, 1).await;
    let reply = admin
        .round_trip(doc! { "blackpipe": "capacity", "concurrent": 5, "$db": "admin" })
        .await;
    assert!(ok(&reply), "{reply}");
    let targets: Vec<i64> = reply
        .get_array("members")
        .unwrap()
        .iter()
        .filter_map(bson::Bson::as_i64)
        .collect();
    assert_eq!(targets, [0, 1], "{reply}");
    let stats = admin.round_trip(stats_command(None)).await;
    let members: Vec<i64> = stats
        .get_array("members")
        .unwrap()
        .iter()
        .map(|member| member.as_document().unwrap().get_i64("member").unwrap())
        .collect();
    assert_eq!(members, [0, 1], "the arbiter holds no data: {stats}");
    let hostile = admin
        .round_trip(doc! { "blackpipe": "capacity", "opsPerSec": -3, "$db": "admin" })
        .await;
    assert_eq!(hostile.get_i32("code").ok(), Some(2), "{hostile}");
    let unknown = admin
        .round_trip(doc! { "blackpipe": "capacity", "member": 7, "off": true, "$db": "admin" })
        .await;
    assert_eq!(unknown.get_i32("code").ok(), Some(2), "{unknown}");
}

#[tokio::test]
async fn a_deployment_can_start_with_a_capacity_and_the_overload_fault_comes_first() {
    let capacity = Capacity::unlimited()
        .with_ops_per_sec(0.001)
        .unwrap()
        .with_burst(Duration::from_secs(1000))
        .unwrap();
    let deployment = start(DeploymentConfig::standalone().with_capacity(capacity)).await;
    let mut node = client(&deployment, 0).await;
    // The random overload fault rejects before the capacity sees the command.
    let overload = doc! { "blackpipe": "overload", "mode": {"times": 1}, "$db": "admin" };
    assert!(ok(&node.round_trip(overload).await));
    assert_overloaded(&node.round_trip(insert(0)).await);
    let stats = deployment.capacity_stats(0).unwrap();
    assert_eq!((stats.admitted, stats.rejected), (0, 0));
    assert!(ok(&node.round_trip(insert(0)).await), "the one token");
    assert_overloaded(&node.round_trip(insert(1)).await);
    deployment.set_capacity(0, None).unwrap();
    assert!(ok(&node.round_trip(insert(1)).await));
    let stats = deployment.capacity_stats(0).unwrap();
    assert_eq!((stats.admitted, stats.rejected), (1, 1));
}
