//! Views: created with `viewOn`/`pipeline`, kept in `system.views`, read through (the view's
//! pipeline first, then the request), refused for writes, modified, dropped, as mongod 8.0.

use bson::{Bson, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;
use crate::code;

fn store_with_people() -> Store {
    let store = new_store();
    insert(
        &store,
        "people",
        vec![
            doc! { "_id": 1, "name": "ann", "age": 31, "city": "Oslo" },
            doc! { "_id": 2, "name": "bob", "age": 17, "city": "Rome" },
            doc! { "_id": 3, "name": "cy", "age": 45, "city": "Oslo" },
            doc! { "_id": 4, "name": "dee", "age": 52, "city": "Lima", "tags": ["a", "b"] },
        ],
    );
    run_ok(
        &store,
        "db",
        doc! {
            "create": "adults",
            "viewOn": "people",
            "pipeline": [{ "$match": { "age": { "$gte": 18 } } }, { "$project": { "age": 0 } }],
        },
    );
    store
}

fn ids_of(documents: &[Document]) -> Vec<i32> {
    documents
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect()
}

#[test]
fn find_runs_the_view_pipeline_then_the_filter_sort_skip_limit_and_projection() {
    let store = store_with_people();
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "find": "adults",
            "filter": { "city": "Oslo" },
            "sort": { "_id": -1 },
            "projection": { "name": 1 },
        },
    );
    assert_eq!(
        batch(&reply),
        vec![
            doc! { "_id": 3, "name": "cy" },
            doc! { "_id": 1, "name": "ann" }
        ]
    );
    assert_eq!(
        reply.get_document("cursor").unwrap().get_str("ns").unwrap(),
        "db.adults"
    );
    let page = run_ok(
        &store,
        "db",
        doc! { "find": "adults", "sort": { "_id": 1 }, "skip": 1, "limit": 1 },
    );
    // The view's $project removed `age`.
    assert_eq!(
        batch(&page),
        vec![doc! { "_id": 3, "name": "cy", "city": "Oslo" }]
    );
}

#[test]
fn aggregate_count_and_distinct_read_through_the_view() {
    let store = store_with_people();
    let grouped = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "adults",
            "pipeline": [{ "$group": { "_id": "$city", "n": { "$sum": 1 } } }, { "$sort": { "_id": 1 } }],
            "cursor": {},
        },
    );
    assert_eq!(
        batch(&grouped),
        vec![
            doc! { "_id": "Lima", "n": 1 },
            doc! { "_id": "Oslo", "n": 2 }
        ]
    );
    let count = run_ok(
        &store,
        "db",
        doc! { "count": "adults", "query": { "city": "Oslo" } },
    );
    assert_eq!(count.get_i32("n").unwrap(), 2);
    let limited = run_ok(
        &store,
        "db",
        doc! { "count": "adults", "skip": 1, "limit": 5 },
    );
    assert_eq!(limited.get_i32("n").unwrap(), 2);
    let distinct = run_ok(&store, "db", doc! { "distinct": "adults", "key": "city" });
    assert_eq!(
        distinct.get_array("values").unwrap(),
        &vec![Bson::from("Lima"), Bson::from("Oslo")]
    );
}

#[test]
fn a_view_on_a_view_runs_the_inner_pipeline_first() {
    let store = store_with_people();
    run_ok(
        &store,
        "db",
        doc! { "create": "oslo_adults", "viewOn": "adults", "pipeline": [{ "$match": { "city": "Oslo" } }] },
    );
    let reply = run_ok(&store, "db", doc! { "find": "oslo_adults" });
    assert_eq!(ids_of(&batch(&reply)), vec![1, 3]);
}

#[test]
fn writes_and_index_commands_on_a_view_fail_with_166() {
    let store = store_with_people();
    let commands = [
        doc! { "insert": "adults", "documents": [{ "_id": 9 }] },
        doc! { "update": "adults", "updates": [{ "q": {}, "u": { "$set": { "x": 1 } } }] },
        doc! { "delete": "adults", "deletes": [{ "q": {}, "limit": 0 }] },
        doc! { "findAndModify": "adults", "query": {}, "remove": true },
        doc! { "createIndexes": "adults", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
        doc! { "listIndexes": "adults" },
        doc! { "dropIndexes": "adults", "index": "*" },
    ];
    for command in commands {
        let reply = run(&store, "db", command.clone());
        assert_eq!(
            error_code(&reply),
            code::COMMAND_NOT_SUPPORTED_ON_VIEW,
            "{command}: {reply}"
        );
        assert_eq!(
            reply.get_str("errmsg").unwrap(),
            "Namespace db.adults is a view, not a collection"
        );
    }
    // $out and $merge into a view are writes to a view too.
    let out = run(
        &store,
        "db",
        doc! { "aggregate": "people", "pipeline": [{ "$merge": { "into": "adults" } }], "cursor": {} },
    );
    assert_eq!(
        error_code(&out),
        code::COMMAND_NOT_SUPPORTED_ON_VIEW,
        "{out}"
    );
    let out = run(
        &store,
        "db",
        doc! { "aggregate": "people", "pipeline": [{ "$out": "adults" }], "cursor": {} },
    );
    assert_eq!(
        error_code(&out),
        code::COMMAND_NOT_SUPPORTED_ON_VIEW,
        "{out}"
    );
    let renamed = run(
        &store,
        "admin",
        doc! { "renameCollection": "db.adults", "to": "db.grown" },
    );
    assert_eq!(
        error_code(&renamed),
        code::COMMAND_NOT_SUPPORTED_ON_VIEW,
        "{renamed}"
    );
    let onto_view = run(
        &store,
        "admin",
        doc! { "renameCollection": "db.people", "to": "db.adults", "dropTarget": true },
    );
    assert_eq!(
        error_code(&onto_view),
        code::NAMESPACE_EXISTS,
        "{onto_view}"
    );
}

#[test]
fn list_collections_reports_views_and_system_views() {
    let store = store_with_people();
    let reply = run_ok(&store, "db", doc! { "listCollections": 1 });
    let entries = batch(&reply);
    let view = entries
        .iter()
        .find(|entry| entry.get_str("name").ok() == Some("adults"))
        .expect("the view is listed");
    assert_eq!(view.get_str("type").unwrap(), "view");
    assert_eq!(
        view.get_document("options").unwrap(),
        &doc! {
            "viewOn": "people",
            "pipeline": [{ "$match": { "age": { "$gte": 18 } } }, { "$project": { "age": 0 } }],
        }
    );
    assert_eq!(
        view.get_document("info").unwrap(),
        &doc! { "readOnly": true }
    );
    assert!(entries.iter().any(|entry| {
        entry.get_str("name").ok() == Some("system.views")
            && entry.get_str("type").ok() == Some("collection")
    }));
    let only_views = run_ok(
        &store,
        "db",
        doc! { "listCollections": 1, "filter": { "type": "view" }, "nameOnly": true },
    );
    assert_eq!(
        batch(&only_views),
        vec![doc! { "name": "adults", "type": "view" }]
    );
    let stored = run_ok(&store, "db", doc! { "find": "system.views" });
    assert_eq!(
        batch(&stored)[0].get_str("_id").unwrap(),
        "db.adults",
        "mongod keeps views in system.views"
    );
}

#[test]
fn create_over_an_existing_name_fails_with_48_unless_identical() {
    let store = store_with_people();
    let again = doc! {
        "create": "adults",
        "viewOn": "people",
        "pipeline": [{ "$match": { "age": { "$gte": 18 } } }, { "$project": { "age": 0 } }],
    };
    run_ok(&store, "db", again);
    let different = run(
        &store,
        "db",
        doc! { "create": "adults", "viewOn": "people", "pipeline": [] },
    );
    assert_eq!(error_code(&different), code::NAMESPACE_EXISTS);
    let over_collection = run(
        &store,
        "db",
        doc! { "create": "people", "viewOn": "adults", "pipeline": [] },
    );
    assert_eq!(error_code(&over_collection), code::NAMESPACE_EXISTS);
    let collection_over_view = run(&store, "db", doc! { "create": "adults" });
    assert_eq!(error_code(&collection_over_view), code::NAMESPACE_EXISTS);
}

#[test]
fn coll_mod_changes_the_pipeline_and_refuses_a_cycle() {
    let store = store_with_people();
    run_ok(
        &store,
        "db",
        doc! { "collMod": "adults", "pipeline": [{ "$match": { "city": "Rome" } }] },
    );
    let reply = run_ok(&store, "db", doc! { "find": "adults" });
    assert_eq!(ids_of(&batch(&reply)), vec![2]);
    run_ok(
        &store,
        "db",
        doc! { "create": "second", "viewOn": "adults", "pipeline": [] },
    );
    let cycle = run(
        &store,
        "db",
        doc! { "collMod": "adults", "viewOn": "second", "pipeline": [] },
    );
    assert_eq!(error_code(&cycle), code::GRAPH_CONTAINS_CYCLE);
    assert_eq!(
        cycle.get_str("errmsg").unwrap(),
        "View cycle detected: db.adults => db.second => db.adults"
    );
    let validator = run(
        &store,
        "db",
        doc! { "collMod": "adults", "validator": { "a": 1 } },
    );
    assert_eq!(error_code(&validator), code::INVALID_OPTIONS);
    let on_collection = run(&store, "db", doc! { "collMod": "people", "pipeline": [] });
    assert_eq!(error_code(&on_collection), code::INVALID_OPTIONS);
}

#[test]
fn views_deeper_than_twenty_are_refused_with_165() {
    let store = new_store();
    let mut under = "base".to_owned();
    for depth in 1..=20 {
        let name = format!("v{depth}");
        run_ok(
            &store,
            "db",
            doc! { "create": &name, "viewOn": &under, "pipeline": [] },
        );
        under = name;
    }
    let too_deep = run(
        &store,
        "db",
        doc! { "create": "v21", "viewOn": &under, "pipeline": [] },
    );
    assert_eq!(error_code(&too_deep), code::VIEW_DEPTH_LIMIT_EXCEEDED);
}

#[test]
fn a_view_definition_is_checked_when_created() {
    let store = new_store();
    let writing = run(
        &store,
        "db",
        doc! { "create": "v", "viewOn": "c", "pipeline": [{ "$out": "elsewhere" }] },
    );
    assert_eq!(error_code(&writing), code::OPTION_NOT_SUPPORTED_ON_VIEW);
    let no_view_on = run(&store, "db", doc! { "create": "v", "pipeline": [] });
    assert_eq!(error_code(&no_view_on), code::INVALID_OPTIONS);
    let capped = run(
        &store,
        "db",
        doc! { "create": "v", "viewOn": "c", "pipeline": [], "capped": true },
    );
    assert_eq!(error_code(&capped), code::INVALID_OPTIONS);
    let self_view = run(
        &store,
        "db",
        doc! { "create": "v", "viewOn": "v", "pipeline": [] },
    );
    assert_eq!(error_code(&self_view), code::GRAPH_CONTAINS_CYCLE);
}

#[test]
fn dropping_a_view_removes_it_and_leaves_its_collection() {
    let store = store_with_people();
    let reply = run_ok(&store, "db", doc! { "drop": "adults" });
    assert_eq!(reply.get_str("ns").unwrap(), "db.adults");
    let listed = run_ok(
        &store,
        "db",
        doc! { "listCollections": 1, "filter": { "type": "view" } },
    );
    assert!(batch(&listed).is_empty());
    let people = run_ok(&store, "db", doc! { "count": "people" });
    assert_eq!(people.get_i32("n").unwrap(), 4);
    // The name is free again for a collection.
    run_ok(
        &store,
        "db",
        doc! { "insert": "adults", "documents": [{ "_id": 1 }] },
    );
}

#[test]
fn a_view_collation_applies_and_cannot_be_overridden() {
    let store = new_store();
    insert(
        &store,
        "words",
        vec![
            doc! { "_id": 1, "w": "Apple" },
            doc! { "_id": 2, "w": "apple" },
        ],
    );
    let collation = doc! { "locale": "en", "strength": 2 };
    run_ok(
        &store,
        "db",
        doc! { "create": "folded", "viewOn": "words", "pipeline": [], "collation": collation.clone() },
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "find": "folded", "filter": { "w": "APPLE" } },
    );
    assert_eq!(ids_of(&batch(&reply)), vec![1, 2]);
    let same = run_ok(
        &store,
        "db",
        doc! { "count": "folded", "query": { "w": "apple" }, "collation": collation },
    );
    assert_eq!(same.get_i32("n").unwrap(), 2);
    let distinct = run_ok(&store, "db", doc! { "distinct": "folded", "key": "w" });
    assert_eq!(
        distinct.get_array("values").unwrap().len(),
        1,
        "the view's collation folds Apple and apple together: {distinct}"
    );
    let other = run(
        &store,
        "db",
        doc! { "find": "folded", "collation": { "locale": "fr" } },
    );
    assert_eq!(error_code(&other), code::OPTION_NOT_SUPPORTED_ON_VIEW);
}

#[test]
fn a_database_stream_shows_a_view_creation_only_with_expanded_events() {
    let store = new_store();
    let open = |expanded: bool| {
        let reply = run_ok(
            &store,
            "db",
            doc! {
                "aggregate": 1,
                "pipeline": [{ "$changeStream": { "showExpandedEvents": expanded } }],
                "cursor": {},
            },
        );
        super::cursor_id(&reply)
    };
    let (plain, expanded) = (open(false), open(true));
    run_ok(
        &store,
        "db",
        doc! { "create": "v", "viewOn": "c", "pipeline": [{ "$match": { "a": 1 } }] },
    );
    let plain_events = batch(&super::change_stream::next(
        &store,
        "db",
        "$cmd.aggregate",
        plain,
    ));
    assert!(plain_events.is_empty(), "{plain_events:?}");
    let events = batch(&super::change_stream::next(
        &store,
        "db",
        "$cmd.aggregate",
        expanded,
    ));
    assert_eq!(events.len(), 1, "{events:?}");
    let mut event = events[0].clone();
    for volatile in ["_id", "clusterTime", "wallTime"] {
        event.remove(volatile);
    }
    assert_eq!(
        event,
        doc! {
            "operationType": "create",
            "ns": { "db": "db", "coll": "v" },
            "operationDescription": { "viewOn": "c", "pipeline": [{ "$match": { "a": 1 } }] },
            "nsType": "view",
        }
    );
}
