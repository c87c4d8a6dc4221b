//! findAndModify: returned values, lastErrorObject, upserts, sort, removal and errors.

use bson::{Bson, doc};

use super::{error_code, find, ids, insert, new_store, run, run_ok};

#[test]
fn returns_the_old_or_new_document() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "n": 1 }]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "n": 1 } } },
    );
    assert_eq!(
        reply,
        doc! { "lastErrorObject": { "n": 1, "updatedExisting": true }, "value": { "_id": 1, "n": 1 }, "ok": 1.0 }
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "n": 1 } }, "new": true, "fields": { "_id": 0 } },
    );
    assert_eq!(reply.get_document("value").unwrap(), &doc! { "n": 3 });
}

#[test]
fn sort_picks_the_document() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "p": 5 },
            doc! { "_id": 2, "p": 9 },
            doc! { "_id": 3, "p": 7 },
        ],
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "findandmodify": "c", "query": {}, "sort": { "p": -1 }, "update": { "$set": { "taken": true } }, "new": true },
    );
    assert_eq!(
        reply.get_document("value").unwrap(),
        &doc! { "_id": 2, "p": 9, "taken": true }
    );
}

#[test]
fn upsert_and_no_match() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 4 }, "update": { "$set": { "a": 1 } }, "upsert": true, "new": true },
    );
    assert_eq!(
        reply,
        doc! {
            "lastErrorObject": { "n": 1, "updatedExisting": false, "upserted": 4 },
            "value": { "_id": 4, "a": 1 },
            "ok": 1.0,
        }
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 5 }, "update": { "$set": { "a": 1 } } },
    );
    assert_eq!(
        reply,
        doc! { "lastErrorObject": { "n": 0, "updatedExisting": false }, "value": Bson::Null, "ok": 1.0 }
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 6 }, "update": { "b": 2 }, "upsert": true },
    );
    assert_eq!(reply.get("value"), Some(&Bson::Null));
    assert_eq!(
        find(&store, "c", doc! { "_id": 6 }),
        vec![doc! { "_id": 6, "b": 2 }]
    );
}

#[test]
fn remove_returns_the_removed_document() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }, doc! { "_id": 2 }]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 2 }, "remove": true },
    );
    assert_eq!(
        reply,
        doc! { "lastErrorObject": { "n": 1 }, "value": { "_id": 2 }, "ok": 1.0 }
    );
    assert_eq!(ids(&store, "c", doc! {}), vec![1]);
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 2 }, "remove": true },
    );
    assert_eq!(
        reply,
        doc! { "lastErrorObject": { "n": 0 }, "value": Bson::Null, "ok": 1.0 }
    );
}

#[test]
fn invalid_combinations_and_update_errors_fail_the_command() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "s": "x" }, doc! { "_id": 2 }],
    );
    let both = doc! { "findAndModify": "c", "query": {}, "remove": true, "update": { "$set": { "a": 1 } } };
    assert_eq!(error_code(&run(&store, "db", both)), 9);
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "findAndModify": "c", "query": {} }
        )),
        9
    );
    let remove_new = doc! { "findAndModify": "c", "remove": true, "new": true };
    assert_eq!(error_code(&run(&store, "db", remove_new)), 9);
    let inc =
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$inc": { "s": 1 } } };
    assert_eq!(error_code(&run(&store, "db", inc)), 14);
    let duplicate =
        doc! { "findAndModify": "c", "query": { "x": 3 }, "update": { "_id": 1 }, "upsert": true };
    let reply = run(&store, "db", duplicate);
    assert_eq!(error_code(&reply), 11000);
    assert_eq!(reply.get_document("keyValue").unwrap(), &doc! { "_id": 1 });
}
