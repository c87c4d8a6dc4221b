//! A change event's `updateDescription`, as mongod 8.0 writes it: `disambiguatedPaths` and
//! what each kind of update reports.

use bson::{Bson, Document, doc};

use super::change_stream::next;
use super::{batch, cursor_id, insert, new_store, run, run_ok};
use crate::Store;

/// The `updateDescription` of the event that `update` (an update statement's `u`) on
/// `document` (with `_id: 1`) makes, seen by a stream with `showExpandedEvents: expanded`.
fn described(document: Document, update: impl Into<Bson>, expanded: bool) -> Document {
    let store = new_store();
    insert(&store, "c", vec![document]);
    let id = watch(&store, expanded);
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": update.into() }] },
    );
    let events = batch(&next(&store, "db", "c", id));
    let [event] = &events[..] else {
        panic!("expected one event: {events:?}");
    };
    event
        .get_document("updateDescription")
        .cloned()
        .unwrap_or_else(|_| panic!("no updateDescription: {event}"))
}

fn watch(store: &Store, expanded: bool) -> i64 {
    let reply = run(
        store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$changeStream": { "showExpandedEvents": expanded } }],
            "cursor": {},
        },
    );
    let id = cursor_id(&reply);
    assert!(id > 0, "no open cursor: {reply}");
    id
}

fn disambiguated(document: Document, update: impl Into<Bson>) -> Document {
    described(document, update, true)
        .get_document("disambiguatedPaths")
        .cloned()
        .expect("disambiguatedPaths with showExpandedEvents")
}

#[test]
fn disambiguated_paths_appear_only_with_expanded_events() {
    let update = doc! { "$set": { "a.1": 2 } };
    let plain = described(doc! { "_id": 1, "a": { "1": 1 } }, update.clone(), false);
    assert!(!plain.contains_key("disambiguatedPaths"), "{plain}");
    assert_eq!(
        disambiguated(doc! { "_id": 1, "a": { "1": 1 } }, update),
        doc! { "a.1": ["a", "1"] }
    );
    assert_eq!(
        disambiguated(doc! { "_id": 1, "a": 1 }, doc! { "$set": { "a": 2 } }),
        doc! {}
    );
}

#[test]
fn array_indexes_are_int32_and_do_not_make_a_path_ambiguous_alone() {
    let paths = disambiguated(
        doc! { "_id": 1, "a": [{ "1": 1 }] },
        doc! { "$set": { "a.0.1": 2 } },
    );
    assert_eq!(paths, doc! { "a.0.1": ["a", Bson::Int32(0), "1"] });
    assert_eq!(
        disambiguated(
            doc! { "_id": 1, "a": [{ "b": 1 }] },
            doc! { "$set": { "a.0.b": 2 } }
        ),
        doc! {}
    );
}

#[test]
fn numeric_names_are_ambiguous_only_below_the_top_and_without_a_leading_zero() {
    assert_eq!(
        disambiguated(
            doc! { "_id": 1, "1": { "a": 1 } },
            doc! { "$set": { "1.a": 2 } }
        ),
        doc! {}
    );
    assert_eq!(
        disambiguated(
            doc! { "_id": 1, "a": { "01": 1 } },
            doc! { "$set": { "a.01": 2 } }
        ),
        doc! {}
    );
    assert_eq!(
        disambiguated(
            doc! { "_id": 1, "a": { "0": 1 } },
            doc! { "$set": { "a.0": 2 } }
        ),
        doc! { "a.0": ["a", "0"] }
    );
}

#[test]
fn dotted_names_are_ambiguous_at_any_depth_in_every_list() {
    let document = doc! { "_id": 1, "a": { "b.c": 1, "d.e": [1, 2] }, "x.y": 1 };
    // A pipeline can name dotted fields; it removes one, truncates one and sets one.
    let pipeline = vec![doc! { "$replaceWith": { "$literal": {
        "_id": 1, "a": { "d.e": [1] }, "x.y": 2,
    } } }];
    let description = described(document, pipeline, true);
    assert_eq!(
        description.get_document("updatedFields").ok(),
        Some(&doc! { "x.y": 2 })
    );
    assert_eq!(
        description.get_document("disambiguatedPaths").ok(),
        Some(&doc! {
            "x.y": ["x.y"],
            "a.b.c": ["a", "b.c"],
            "a.d.e": ["a", "d.e"],
        })
    );
}

/// `updatedFields`, `removedFields` and `truncatedArrays` of an operator update on `document`.
fn lists(document: Document, update: Document) -> (Document, Vec<Bson>, Vec<Bson>) {
    let description = described(document, update, false);
    let list = |name: &str| description.get_array(name).cloned().unwrap_or_default();
    (
        description
            .get_document("updatedFields")
            .cloned()
            .unwrap_or_default(),
        list("removedFields"),
        list("truncatedArrays"),
    )
}

fn updated(document: Document, update: Document) -> Document {
    let (updated, removed, truncated) = lists(document, update.clone());
    assert!(removed.is_empty() && truncated.is_empty(), "{update}");
    updated
}

#[test]
fn set_reports_the_path_it_names_with_the_whole_value_written_there() {
    let document = doc! { "_id": 1, "a": { "c": 1, "d": 1 }, "arr": [0, 1, 2, 3] };
    assert_eq!(
        updated(
            document.clone(),
            doc! { "$set": { "a": { "c": 2, "d": 1 } } }
        ),
        doc! { "a": { "c": 2, "d": 1 } }
    );
    assert_eq!(
        updated(document.clone(), doc! { "$set": { "a.c": 2 } }),
        doc! { "a.c": 2 }
    );
    // A shorter array written by $set is a new value, not a truncation.
    assert_eq!(
        updated(document, doc! { "$set": { "arr": [0], "b": 2 } }),
        doc! { "arr": [0], "b": 2 }
    );
}

#[test]
fn a_field_created_under_missing_parents_reports_its_first_new_component() {
    assert_eq!(
        updated(
            doc! { "_id": 1, "x": {} },
            doc! { "$set": { "x.y.z": 1, "x.y.w": 2 }, "$inc": { "n.m": 1 } }
        ),
        doc! { "n": { "m": 1 }, "x.y": { "w": 2, "z": 1 } }
    );
}

#[test]
fn operators_that_change_nothing_at_their_path_report_nothing() {
    assert_eq!(
        updated(
            doc! { "_id": 1, "a": 5, "b": 1 },
            doc! { "$max": { "a": 3 }, "$min": { "b": 0 }, "$unset": { "gone": "" } }
        ),
        doc! { "b": 0 }
    );
}

#[test]
fn unset_removes_a_field_and_nulls_an_array_element() {
    let (updated, removed, _) = lists(
        doc! { "_id": 1, "a": { "b": 1 }, "arr": [1, 2] },
        doc! { "$unset": { "a.b": "", "arr.0": "" } },
    );
    assert_eq!(updated, doc! { "arr.0": null });
    assert_eq!(removed, vec![Bson::from("a.b")]);
}

#[test]
fn rename_removes_the_old_path_and_sets_the_new_one() {
    let (updated, removed, _) = lists(
        doc! { "_id": 1, "a": { "b": 1 } },
        doc! { "$rename": { "a.b": "c" } },
    );
    assert_eq!(updated, doc! { "c": 1 });
    assert_eq!(removed, vec![Bson::from("a.b")]);
}

#[test]
fn appends_report_each_new_element_and_other_array_changes_the_whole_array() {
    let document = doc! { "_id": 1, "arr": [3, 1], "empty": [] };
    for (update, expected) in [
        (
            doc! { "$push": { "arr": { "$each": [5, 6] } } },
            doc! { "arr.2": 5, "arr.3": 6 },
        ),
        (
            doc! { "$push": { "arr": { "$each": [5], "$position": 9 } } },
            doc! { "arr.2": 5 },
        ),
        (
            doc! { "$addToSet": { "arr": { "$each": [1, 7] } } },
            doc! { "arr.2": 7 },
        ),
        (doc! { "$push": { "empty": 1 } }, doc! { "empty": [1] }),
        (doc! { "$push": { "new": 1 } }, doc! { "new": [1] }),
        (
            doc! { "$push": { "arr": { "$each": [5], "$position": 0 } } },
            doc! { "arr": [5, 3, 1] },
        ),
        (
            doc! { "$push": { "arr": { "$each": [2], "$sort": 1 } } },
            doc! { "arr": [1, 2, 3] },
        ),
        (
            doc! { "$push": { "arr": { "$each": [2], "$slice": -2 } } },
            doc! { "arr": [1, 2] },
        ),
        (doc! { "$pull": { "arr": 1 } }, doc! { "arr": [3] }),
        (doc! { "$pullAll": { "arr": [3] } }, doc! { "arr": [1] }),
        (doc! { "$pop": { "arr": 1 } }, doc! { "arr": [3] }),
    ] {
        assert_eq!(
            updated(document.clone(), update.clone()),
            expected,
            "{update}"
        );
    }
}
