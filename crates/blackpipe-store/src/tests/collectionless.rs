//! `{aggregate: 1}`: pipelines whose first stage produces the documents.

use bson::{Bson, doc};

use super::{batch, cursor_id, error_code, new_store, run, run_ok};

#[test]
fn documents_feeds_the_rest_of_the_pipeline() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "any",
        doc! {
            "aggregate": 1,
            "pipeline": [
                { "$documents": [{ "x": 1 }, { "x": 2 }, { "x": 3 }] },
                { "$match": { "x": { "$gte": 2 } } },
                { "$project": { "_id": 0, "y": "$x" } },
            ],
            "cursor": {},
        },
    );
    assert_eq!(batch(&reply), [doc! { "y": 2 }, doc! { "y": 3 }]);
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_str("ns").unwrap(), "any.$cmd.aggregate");
}

#[test]
fn a_collectionless_cursor_is_continued_with_get_more() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": 1.0,
            "pipeline": [{ "$documents": [{ "x": 1 }, { "x": 2 }] }],
            "cursor": { "batchSize": 1 },
        },
    );
    let id = cursor_id(&reply);
    assert_ne!(id, 0);
    let more = run_ok(
        &store,
        "db",
        doc! { "getMore": id, "collection": "$cmd.aggregate" },
    );
    assert_eq!(batch(&more), [doc! { "x": 2 }]);
}

#[test]
fn list_local_sessions_answers_an_empty_cursor() {
    let store = new_store();
    let reply = run_ok(
        &store,
        "test",
        doc! {
            "aggregate": 1,
            "pipeline": [{ "$listLocalSessions": {} }, { "$limit": 1 }],
            "cursor": {},
        },
    );
    assert_eq!(batch(&reply), []);
    assert_eq!(cursor_id(&reply), 0);
}

#[test]
fn other_first_stages_need_a_collection() {
    let store = new_store();
    let cases = [
        (Bson::Array(vec![]), 73),
        (Bson::Array(vec![doc! { "$match": {} }.into()]), 73),
        (Bson::Array(vec![doc! { "$limit": 1 }.into()]), 73),
        (
            Bson::Array(vec![doc! { "$documents": 5 }.into()]),
            5_858_203,
        ),
        (
            Bson::Array(vec![doc! { "$documents": [1] }.into()]),
            5_858_203,
        ),
        (
            Bson::Array(vec![doc! { "$listLocalSessions": 1 }.into()]),
            14,
        ),
        (Bson::Array(vec![doc! { "$nope": 1 }.into()]), 40324),
    ];
    for (pipeline, code) in cases {
        let command = doc! { "aggregate": 1, "pipeline": pipeline, "cursor": {} };
        assert_eq!(
            error_code(&run(&store, "db", command.clone())),
            code,
            "{command}"
        );
    }
    let no_cursor = doc! { "aggregate": 1, "pipeline": [{ "$documents": [] }] };
    assert_eq!(error_code(&run(&store, "db", no_cursor)), 9);
}
