//! `bulkWrite`: validation before any op runs, per-op results in a cursor, ordered and
//! unordered, `errorsOnly`, and retryable-write replays by statement.

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{batch, error_code, ids, new_store, run, run_ok};

fn bulk(ops: Vec<Document>, ns: Vec<&str>) -> Document {
    let ns_info: Vec<Document> = ns.into_iter().map(|ns| doc! { "ns": ns }).collect();
    doc! { "bulkWrite": 1, "ops": ops, "nsInfo": ns_info }
}

fn retryable(mut command: Document, txn_number: i64) -> Document {
    let lsid = doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![9; 16] } };
    command.insert("lsid", lsid);
    command.insert("txnNumber", Bson::Int64(txn_number));
    command
}

#[test]
fn mixed_ops_over_two_namespaces_report_each_result_and_the_totals() {
    let store = new_store();
    let command = bulk(
        vec![
            doc! { "insert": 0, "document": { "_id": 1 } },
            doc! { "insert": 1, "document": { "_id": 2 } },
            doc! { "update": 0, "filter": { "_id": 1 }, "updateMods": { "$set": { "x": 1 } }, "multi": false },
            doc! { "update": 0, "filter": { "_id": 3 }, "updateMods": { "$set": { "x": 1 } }, "upsert": true },
            doc! { "delete": 1, "filter": {}, "multi": true },
        ],
        vec!["db.c", "db.d"],
    );
    let reply = run_ok(&store, "admin", command);
    assert_eq!(reply.get_i32("nErrors").ok(), Some(0));
    assert_eq!(reply.get_i32("nInserted").ok(), Some(2));
    assert_eq!(reply.get_i32("nMatched").ok(), Some(1));
    assert_eq!(reply.get_i32("nModified").ok(), Some(1));
    assert_eq!(reply.get_i32("nUpserted").ok(), Some(1));
    assert_eq!(reply.get_i32("nDeleted").ok(), Some(1));
    let results = batch(&reply);
    assert_eq!(results.len(), 5);
    assert_eq!(
        results[3].get_document("upserted").ok(),
        Some(&doc! { "_id": 3 })
    );
    assert_eq!(ids(&store, "c", doc! {}), vec![1, 3]);
    assert!(ids(&store, "d", doc! {}).is_empty());
}

#[test]
fn ordered_stops_at_the_first_error_unordered_goes_on_and_errors_only_keeps_errors() {
    let store = new_store();
    let ops = vec![
        doc! { "insert": 0, "document": { "_id": 1 } },
        doc! { "insert": 0, "document": { "_id": 1 } },
        doc! { "insert": 0, "document": { "_id": 2 } },
    ];
    let ordered = run_ok(&store, "admin", bulk(ops.clone(), vec!["db.c"]));
    assert_eq!(ordered.get_i32("nErrors").ok(), Some(1));
    assert_eq!(batch(&ordered).len(), 2, "the op after the error never ran");
    assert_eq!(ids(&store, "c", doc! {}), vec![1]);

    let mut unordered = bulk(ops, vec!["db.c"]);
    unordered.insert("ordered", false);
    unordered.insert("errorsOnly", true);
    let reply = run_ok(&store, "admin", unordered);
    let results = batch(&reply);
    assert_eq!(reply.get_i32("nErrors").ok(), Some(2));
    assert_eq!(reply.get_i32("nInserted").ok(), Some(1));
    let failed: Vec<i32> = results.iter().map(|r| r.get_i32("idx").unwrap()).collect();
    assert_eq!(failed, vec![0, 1], "only the errors, at their op index");
    assert_eq!(results[0].get_i32("code").ok(), Some(11000));
    assert_eq!(ids(&store, "c", doc! {}), vec![1, 2]);
}

#[test]
fn hostile_commands_fail_whole_before_any_op_runs() {
    let store = new_store();
    let good = doc! { "insert": 0, "document": { "_id": 1 } };
    let cases = [
        (bulk(vec![good.clone()], vec!["db.c"]), "db", 13),
        (bulk(vec![], vec!["db.c"]), "admin", 16),
        (
            bulk(
                vec![good.clone(), doc! { "insert": 1, "document": {} }],
                vec!["db.c"],
            ),
            "admin",
            2,
        ),
        (
            bulk(
                vec![good.clone(), doc! { "insert": -1, "document": {} }],
                vec!["db.c"],
            ),
            "admin",
            2,
        ),
        (
            bulk(
                vec![good.clone(), doc! { "insert": "0", "document": {} }],
                vec!["db.c"],
            ),
            "admin",
            14,
        ),
        (
            bulk(vec![good.clone(), doc! { "replace": 0 }], vec!["db.c"]),
            "admin",
            9,
        ),
        (bulk(vec![good.clone()], vec!["nodot"]), "admin", 73),
        (
            doc! { "bulkWrite": 1, "ops": 3, "nsInfo": [{ "ns": "db.c" }] },
            "admin",
            14,
        ),
        (
            doc! { "bulkWrite": 1, "ops": [good.clone()], "nsInfo": [7] },
            "admin",
            14,
        ),
        (
            doc! { "bulkWrite": 1, "ops": [good.clone()] },
            "admin",
            40414,
        ),
    ];
    for (command, db, code) in cases {
        let reply = run(&store, db, command.clone());
        assert_eq!(error_code(&reply), code, "{command}: {reply}");
    }
    assert!(ids(&store, "c", doc! {}).is_empty(), "nothing was applied");
}

#[test]
fn a_retried_bulk_write_replays_each_op_instead_of_applying_it_again() {
    let store = new_store();
    let command = retryable(
        bulk(
            vec![
                doc! { "insert": 0, "document": { "_id": 1 } },
                doc! { "update": 0, "filter": { "_id": 1 }, "updateMods": { "$inc": { "n": 1 } } },
            ],
            vec!["db.c"],
        ),
        1,
    );
    let first = run_ok(&store, "admin", command.clone());
    let retry = run_ok(&store, "admin", command);
    assert_eq!(batch(&first), batch(&retry), "the same per-op results");
    assert_eq!(retry.get_i32("nErrors").ok(), Some(0));
    let docs = super::find(&store, "c", doc! {});
    assert_eq!(docs, vec![doc! { "_id": 1, "n": 1 }], "the $inc ran once");
}
