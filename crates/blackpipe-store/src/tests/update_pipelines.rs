//! Update pipelines in the `update` and `findAndModify` commands: which malformed stages fail
//! a statement and which fail the whole command, as mongod 8.0 answers.

use bson::{Bson, Document, doc};

use super::{error_code, find, insert, new_store, run, run_ok};
use crate::Store;

fn store_with_one_document() -> Store {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    store
}

fn update(store: &Store, updates: Vec<Document>, ordered: bool) -> Document {
    run(
        store,
        "db",
        doc! { "update": "c", "updates": updates, "ordered": ordered },
    )
}

/// The code and message of the only write error of a successful reply.
fn only_write_error(reply: &Document) -> (i32, String) {
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)), "{reply}");
    let errors = reply.get_array("writeErrors").expect("writeErrors");
    assert_eq!(errors.len(), 1, "{reply}");
    let error = errors[0].as_document().expect("a write error document");
    (
        error.get_i32("code").unwrap_or_default(),
        error.get_str("errmsg").unwrap_or_default().to_owned(),
    )
}

#[test]
fn an_unknown_stage_fails_the_command_after_the_earlier_statements_applied() {
    let store = store_with_one_document();
    let reply = update(
        &store,
        vec![
            doc! { "q": {}, "u": [{ "$set": { "a": 1 } }] },
            doc! { "q": {}, "u": [{ "$bogus": 1 }] },
        ],
        true,
    );
    assert_eq!(error_code(&reply), 40324);
    assert_eq!(reply.get_str("codeName").ok(), Some("Location40324"));
    assert_eq!(
        reply.get_str("errmsg").ok(),
        Some("Unrecognized pipeline stage name: '$bogus'")
    );
    assert!(!reply.contains_key("writeErrors"), "{reply}");
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1, "a": 1 }]);
}

#[test]
fn statements_an_ordered_batch_never_ran_are_checked_too() {
    let store = store_with_one_document();
    let reply = update(
        &store,
        vec![
            doc! { "q": {}, "u": { "$set": { "a": 1 } } },
            doc! { "q": {}, "u": { "$inc": { "_id": 1 } } },
            doc! { "q": {}, "u": [{ "$set": { "b": 1 }, "$unset": "a" }] },
        ],
        true,
    );
    assert_eq!(error_code(&reply), 40323);
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1, "a": 1 }]);
}

#[test]
fn a_known_stage_an_update_may_not_use_is_a_write_error() {
    let store = store_with_one_document();
    for (stage, name) in [
        (doc! { "$match": {} }, "$match"),
        (doc! { "$count": "n" }, "$group"),
        (
            doc! { "$lookup": { "from": "x", "pipeline": [], "as": "y" } },
            "$lookup",
        ),
        (doc! { "$changeStream": {} }, "$changeStream"),
        (doc! { "$vectorSearch": {} }, "$vectorSearch"),
    ] {
        let reply = update(&store, vec![doc! { "q": {}, "u": [stage.clone()] }], true);
        let (code, message) = only_write_error(&reply);
        if name == "$vectorSearch" {
            // A stage blackpipe does not model: its statement fails, the command stands.
            assert_eq!(
                message,
                "blackpipe does not support the $vectorSearch stage"
            );
            continue;
        }
        assert_eq!(code, 72, "{stage}: {message}");
        assert_eq!(
            message,
            format!("{name} is not allowed to be used within an update")
        );
    }
}

#[test]
fn a_malformed_stage_is_reported_before_a_misplaced_one() {
    let store = store_with_one_document();
    let reply = update(
        &store,
        vec![doc! { "q": {}, "u": [{ "$match": {} }, { "$set": 1 }] }],
        true,
    );
    let (code, _) = only_write_error(&reply);
    assert_eq!(code, 40272);
}

#[test]
fn a_stage_that_is_not_an_object_fails_the_command_before_any_statement_runs() {
    let store = store_with_one_document();
    let reply = update(
        &store,
        vec![
            doc! { "q": {}, "u": [{ "$set": { "a": 1 } }] },
            doc! { "q": {}, "u": [1] },
        ],
        true,
    );
    assert_eq!(error_code(&reply), 14);
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1 }]);
}

#[test]
fn find_and_modify_refuses_a_bad_update_pipeline_as_a_command_error() {
    let store = store_with_one_document();
    for (stage, code) in [
        (doc! { "$bogus": 1 }, 40324),
        (doc! { "$match": {} }, 72),
        (doc! { "$set": { "a": 1 }, "$unset": "b" }, 40323),
    ] {
        let reply = run(
            &store,
            "db",
            doc! { "findAndModify": "c", "query": {}, "update": [stage.clone()] },
        );
        assert_eq!(error_code(&reply), code, "{stage}: {reply}");
    }
    run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": {}, "update": [{ "$set": { "a": 1 } }] },
    );
    assert_eq!(find(&store, "c", doc! {}), vec![doc! { "_id": 1, "a": 1 }]);
}
