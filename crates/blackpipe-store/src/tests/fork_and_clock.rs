//! Replication between stores: `fork`, the shared `OpClock`, `oplog_contains` and
//! `oplog_entries_after`.

use bson::doc;

use super::replication::{assert_same, in_transaction, replicate, retryable, secondary};
use super::{at, insert, new_store, run, run_ok};
use crate::{CommandContext, OpClock, OpTime, Store, StoreOptions};

#[test]
fn a_fork_equals_its_source_and_goes_its_own_way() {
    let a = new_store();
    insert(
        &a,
        "c",
        vec![doc! { "_id": 1, "x": 1 }, doc! { "_id": 2, "x": 2 }],
    );
    run_ok(
        &a,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1", "unique": true }] },
    );
    let retry = retryable(
        doc! { "insert": "c", "documents": [{ "_id": 3, "x": 3 }] },
        1,
        1,
    );
    run_ok(&a, "db", retry.clone());
    run_ok(
        &a,
        "db",
        in_transaction(
            doc! { "insert": "c", "documents": [{ "_id": 4, "x": 4 }] },
            true,
        ),
    );
    run_ok(
        &a,
        "admin",
        in_transaction(doc! { "commitTransaction": 1 }, false),
    );
    let fork = a.fork(StoreOptions::default().with_seed(5));
    assert_same(&a, &fork);
    assert_eq!(fork.session_count(), a.session_count());
    assert!(fork.replays_entirely(&retry));
    assert_eq!(fork.writes_applied("db.c"), a.writes_applied("db.c"));
    assert!(fork.transaction_committed(&in_transaction(doc! { "find": "c" }, false)));
    // Writes to the fork stay there, and follow the copied op log.
    insert(&fork, "c", vec![doc! { "_id": 5, "x": 5 }]);
    assert!(fork.op_time().ts > a.op_time().ts);
    assert_eq!(a.documents("db", "c").len(), 4);
    let duplicate = run(
        &fork,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 6, "x": 5 }] },
    );
    assert!(
        duplicate.contains_key("writeErrors"),
        "the unique index came along"
    );
    // And the fork can feed a secondary of its own.
    let b = secondary();
    b.apply_oplog(&fork.oplog_since(OpTime::ZERO))
        .expect("the fork's log");
}

#[test]
fn a_fork_of_a_replicated_store_continues_replicating() {
    let (a, b) = (new_store(), secondary());
    insert(&a, "c", vec![doc! { "_id": 1 }]);
    replicate(&a, &b);
    let c = b.fork(StoreOptions::default());
    insert(&a, "c", vec![doc! { "_id": 2 }]);
    replicate(&a, &c);
    assert_same(&a, &c);
}

#[test]
fn stores_sharing_a_clock_never_share_a_timestamp() {
    let clock = OpClock::default();
    let a = Store::new(StoreOptions::default().with_clock(clock.clone()));
    let b = Store::new(
        StoreOptions::default()
            .with_seed(3)
            .with_clock(clock.clone()),
    );
    let mut stamps = Vec::new();
    for id in 0..10 {
        for store in [&a, &b] {
            insert(store, "c", vec![doc! { "_id": id }]);
            stamps.push(store.op_time().ts);
        }
    }
    let mut sorted = stamps.clone();
    sorted.sort_by_key(|ts| (ts.time, ts.increment));
    sorted.dedup();
    assert_eq!(sorted, stamps, "strictly increasing across both stores");
    assert_eq!(clock.latest(), b.op_time().ts);
    // Without the shared clock the two would have taken the same timestamps.
    let (c, d) = (new_store(), secondary());
    insert(&c, "c", vec![doc! { "_id": 1 }]);
    insert(&d, "c", vec![doc! { "_id": 1 }]);
    assert_eq!(c.op_time().ts, d.op_time().ts);
}

#[test]
fn applied_entries_move_the_shared_clock() {
    let (a, clock) = (new_store(), OpClock::default());
    let b = Store::new(StoreOptions::default().with_clock(clock.clone()));
    let later = CommandContext::new(at(100));
    for _ in 0..3 {
        a.execute("db", &doc! { "insert": "c", "documents": [{}] }, &later);
    }
    replicate(&a, &b);
    assert_eq!(clock.latest(), a.op_time().ts);
    let other = Store::new(StoreOptions::default().with_clock(clock));
    other.execute("db", &doc! { "insert": "c", "documents": [{}] }, &later);
    assert!(other.op_time().ts > a.op_time().ts);
}

#[test]
fn the_op_log_tells_which_timestamps_it_holds() {
    let store = Store::new(StoreOptions::default().with_oplog_capacity(2));
    for id in 0..4 {
        insert(&store, "c", vec![doc! { "_id": id }]);
    }
    let retained = store.oplog_since(OpTime::ZERO);
    assert_eq!(retained.len(), 2);
    assert_eq!(store.oplog_contains(retained[0].op_time.ts), Some(true));
    let mut missing = retained[1].op_time.ts;
    missing.increment += 1;
    assert_eq!(store.oplog_contains(missing), Some(false));
    assert_eq!(
        store.oplog_contains(bson::Timestamp {
            time: 1,
            increment: 0
        }),
        None
    );
    let after = store.oplog_entries_after(retained[0].op_time.ts, 10);
    assert_eq!(after, retained[1..]);
}

#[test]
fn entries_after_never_split_a_transaction() {
    let a = new_store();
    run_ok(
        &a,
        "db",
        in_transaction(
            doc! { "insert": "c", "documents": [{ "_id": 1 }, { "_id": 2 }] },
            true,
        ),
    );
    run_ok(
        &a,
        "admin",
        in_transaction(doc! { "commitTransaction": 1 }, false),
    );
    let entries = a.oplog_entries_after(
        bson::Timestamp {
            time: 0,
            increment: 0,
        },
        1,
    );
    assert_eq!(
        entries.len(),
        3,
        "the create and both inserts of the commit"
    );
    let b = secondary();
    b.apply_oplog(&entries).expect("whole transaction");
    assert_same(&a, &b);
}
