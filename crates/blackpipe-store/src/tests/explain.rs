//! `explain`: the planner's choice (index or collection scan, partial indexes), the stages,
//! the execution counts, and the errors mongod gives.

use bson::{Bson, Document, doc};

use super::{error_code, find, insert, new_store, run, run_ok};
use crate::Store;

fn explain(store: &Store, inner: Document) -> Document {
    run_ok(
        store,
        "db",
        doc! { "explain": inner, "verbosity": "executionStats" },
    )
}

/// The first stage named `name` in the plan tree under `plan`.
fn stage<'a>(plan: &'a Document, name: &str) -> Option<&'a Document> {
    if plan.get_str("stage").ok() == Some(name) {
        return Some(plan);
    }
    plan.get_document("inputStage")
        .ok()
        .and_then(|input| stage(input, name))
}

fn winning(reply: &Document) -> &Document {
    reply
        .get_document("queryPlanner")
        .and_then(|planner| planner.get_document("winningPlan"))
        .unwrap_or_else(|_| panic!("no winning plan: {reply}"))
}

fn int(document: &Document, key: &str) -> i64 {
    match document.get(key) {
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Int32(n)) => i64::from(*n),
        other => panic!("{key}: {other:?} in {document}"),
    }
}

#[test]
fn a_find_without_a_usable_index_scans_the_collection() {
    let store = new_store();
    insert(
        &store,
        "c",
        (0..10).map(|i| doc! { "_id": i, "x": i % 3 }).collect(),
    );
    let reply = explain(&store, doc! { "find": "c", "filter": { "x": 1 } });
    let scan = stage(winning(&reply), "COLLSCAN").expect("a collection scan");
    assert_eq!(
        scan.get_document("filter").unwrap(),
        &doc! { "x": { "$eq": 1 } }
    );
    let planner = reply.get_document("queryPlanner").unwrap();
    assert_eq!(planner.get_str("namespace").unwrap(), "db.c");
    let stats = reply.get_document("executionStats").unwrap();
    assert_eq!(int(stats, "nReturned"), 3);
    assert_eq!(int(stats, "totalDocsExamined"), 10);
    assert_eq!(int(stats, "totalKeysExamined"), 0);
    assert_eq!(
        reply
            .get_document("command")
            .unwrap()
            .get_str("$db")
            .unwrap(),
        "db"
    );
    assert!(reply.get_document("serverInfo").is_ok());
}

#[test]
fn an_index_on_the_filtered_field_is_chosen_and_its_bounds_shown() {
    let store = new_store();
    insert(
        &store,
        "c",
        (0..10).map(|i| doc! { "_id": i, "x": i, "y": 1 }).collect(),
    );
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
    );
    let reply = explain(
        &store,
        doc! { "find": "c", "filter": { "x": { "$gte": 2, "$lt": 5 }, "y": 1 }, "sort": { "x": 1 }, "limit": 2 },
    );
    let plan = winning(&reply);
    let scan = stage(plan, "IXSCAN").expect("an index scan");
    assert_eq!(scan.get_str("indexName").unwrap(), "x_1");
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! { "x": ["[2, 5)"] }
    );
    let fetch = stage(plan, "FETCH").unwrap();
    assert_eq!(
        fetch.get_document("filter").unwrap(),
        &doc! { "y": { "$eq": 1 } }
    );
    assert!(stage(plan, "SORT").is_none(), "the index gives the order");
    assert_eq!(int(stage(plan, "LIMIT").unwrap(), "limitAmount"), 2);
    assert_eq!(
        int(reply.get_document("executionStats").unwrap(), "nReturned"),
        2
    );
    // Equality on _id: the _id index.
    let by_id = explain(&store, doc! { "find": "c", "filter": { "_id": 4 } });
    assert_eq!(
        stage(winning(&by_id), "IXSCAN")
            .unwrap()
            .get_str("indexName")
            .unwrap(),
        "_id_"
    );
}

/// PyMongo's `test_index_filter`: a partial index serves only the queries that imply its filter.
#[test]
fn a_partial_index_serves_only_queries_that_imply_its_filter() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{
            "key": { "x": 1 }, "name": "x_1", "partialFilterExpression": { "a": { "$lte": 1.5 } },
        }] },
    );
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "x": 5, "a": 2 },
            doc! { "_id": 2, "x": 6, "a": 1 },
        ],
    );
    for filter in [
        doc! { "x": 6, "a": 1 },
        doc! { "x": { "$gt": 1 }, "a": 1 },
        doc! { "x": 6, "a": { "$lte": 1 } },
    ] {
        let reply = explain(&store, doc! { "find": "c", "filter": filter.clone() });
        let scan = stage(winning(&reply), "IXSCAN").unwrap_or_else(|| panic!("{filter}: {reply}"));
        assert_eq!(scan.get_str("indexName").unwrap(), "x_1");
        assert_eq!(scan.get_bool("isPartial").ok(), Some(true));
    }
    for filter in [doc! { "x": 6, "a": { "$lte": 1.6 } }, doc! { "x": 6 }] {
        let reply = explain(&store, doc! { "find": "c", "filter": filter.clone() });
        assert!(
            stage(winning(&reply), "COLLSCAN").is_some(),
            "{filter}: {reply}"
        );
    }
}

#[test]
fn hints_hidden_indexes_and_natural_order() {
    let store = new_store();
    insert(
        &store,
        "c",
        (0..5).map(|i| doc! { "_id": i, "x": i }).collect(),
    );
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1", "hidden": true }] },
    );
    let hidden = explain(&store, doc! { "find": "c", "filter": { "x": 1 } });
    assert!(
        stage(winning(&hidden), "COLLSCAN").is_some(),
        "a hidden index is never chosen"
    );
    let natural = explain(
        &store,
        doc! { "find": "c", "filter": { "_id": 1 }, "hint": { "$natural": -1 } },
    );
    assert_eq!(
        stage(winning(&natural), "COLLSCAN")
            .unwrap()
            .get_str("direction")
            .unwrap(),
        "backward"
    );
    let reply = run(
        &store,
        "db",
        doc! { "explain": { "find": "c", "hint": "nope_1" } },
    );
    assert_eq!(error_code(&reply), 2, "{reply}");
}

#[test]
fn count_distinct_and_aggregate_wrap_the_query_plan() {
    let store = new_store();
    insert(
        &store,
        "c",
        (0..6).map(|i| doc! { "_id": i, "k": i % 2 }).collect(),
    );
    let count = explain(&store, doc! { "count": "c", "query": { "k": 1 } });
    assert!(
        stage(winning(&count), "COUNT")
            .and_then(|s| stage(s, "COLLSCAN"))
            .is_some(),
        "{count}"
    );
    let distinct = explain(&store, doc! { "distinct": "c", "key": "k" });
    assert!(
        stage(winning(&distinct), "PROJECTION_DEFAULT").is_some()
            || stage(winning(&distinct), "PROJECTION_SIMPLE").is_some(),
        "{distinct}"
    );
    // A pipeline that is only a query answers like a find; one with more stages lists them.
    let pushed = explain(
        &store,
        doc! { "aggregate": "c", "pipeline": [{ "$match": { "k": 0 } }, { "$limit": 2 }], "cursor": {} },
    );
    assert!(stage(winning(&pushed), "LIMIT").is_some(), "{pushed}");
    let staged = explain(
        &store,
        doc! { "aggregate": "c", "pipeline": [{ "$match": { "k": 0 } }, { "$group": { "_id": "$k" } }], "cursor": {} },
    );
    let stages = staged.get_array("stages").unwrap();
    assert_eq!(stages.len(), 2, "{staged}");
    let cursor = stages[0]
        .as_document()
        .unwrap()
        .get_document("$cursor")
        .unwrap();
    assert_eq!(
        int(cursor.get_document("executionStats").unwrap(), "nReturned"),
        3
    );
    assert!(stages[1].as_document().unwrap().contains_key("$group"));
    // The legacy form: `explain: true` on the aggregate itself.
    let legacy = run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$match": { "k": 1 } }], "explain": true },
    );
    assert!(legacy.get_document("queryPlanner").is_ok(), "{legacy}");
}

#[test]
fn explained_writes_apply_nothing() {
    let store = new_store();
    insert(
        &store,
        "c",
        (0..4).map(|i| doc! { "_id": i, "v": 0 }).collect(),
    );
    let update = explain(
        &store,
        doc! { "update": "c", "updates": [{ "q": {}, "u": { "$set": { "v": 1 } }, "multi": true }] },
    );
    let top = stage(
        update
            .get_document("executionStats")
            .unwrap()
            .get_document("executionStages")
            .unwrap(),
        "UPDATE",
    )
    .unwrap();
    assert_eq!(int(top, "nMatched"), 4);
    let delete = explain(
        &store,
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 1 }, "limit": 1 }] },
    );
    let top = delete
        .get_document("executionStats")
        .unwrap()
        .get_document("executionStages")
        .unwrap();
    assert_eq!(int(top, "nWouldDelete"), 1);
    assert_eq!(
        find(&store, "c", doc! { "v": 0 }).len(),
        4,
        "nothing was written"
    );
    let two = run(
        &store,
        "db",
        doc! { "explain": { "delete": "c", "deletes": [{ "q": {}, "limit": 0 }, { "q": {}, "limit": 0 }] } },
    );
    assert_eq!(error_code(&two), 16, "{two}");
}

#[test]
fn what_cannot_be_explained_is_refused_as_mongod_refuses_it() {
    let store = new_store();
    let insert = run(
        &store,
        "db",
        doc! { "explain": { "insert": "c", "documents": [{}] } },
    );
    assert_eq!(error_code(&insert), 59, "{insert}");
    let verbosity = run(
        &store,
        "db",
        doc! { "explain": { "find": "c" }, "verbosity": "everything" },
    );
    assert_eq!(error_code(&verbosity), 2, "{verbosity}");
    let not_a_command = run(&store, "db", doc! { "explain": 1 });
    assert_eq!(error_code(&not_a_command), 14, "{not_a_command}");
    // A collection that does not exist: an EOF plan.
    let missing = explain(&store, doc! { "find": "nothing" });
    assert!(stage(winning(&missing), "EOF").is_some(), "{missing}");
    // The default verbosity is allPlansExecution.
    let default = run_ok(&store, "db", doc! { "explain": { "find": "c" } });
    assert!(
        default
            .get_document("executionStats")
            .unwrap()
            .contains_key("allPlansExecution")
    );
    let planner_only = run_ok(
        &store,
        "db",
        doc! { "explain": { "find": "c" }, "verbosity": "queryPlanner" },
    );
    assert!(!planner_only.contains_key("executionStats"));
}
