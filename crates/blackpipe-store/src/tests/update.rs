//! Update operators, replacements, pipeline updates and their errors.

use bson::{Bson, Document, doc};

use super::at;
use crate::query::Filter;
use crate::update::{ApplyContext, Update};

fn context() -> ApplyContext {
    ApplyContext {
        is_insert: false,
        now: at(0),
        matched_position: None,
    }
}

fn apply(update: Document, document: Document) -> Document {
    let parsed = Update::parse(&Bson::Document(update.clone()))
        .unwrap_or_else(|error| panic!("{update}: {error:?}"));
    parsed
        .apply(&document, context())
        .unwrap_or_else(|error| panic!("{update} on {document}: {error:?}"))
}

fn apply_error(update: Document, document: Document) -> (i32, String) {
    let error = Update::parse(&Bson::Document(update))
        .and_then(|parsed| parsed.apply(&document, context()))
        .expect_err("expected an update error");
    (error.code, error.message)
}

#[test]
fn set_and_unset_create_and_remove_paths() {
    assert_eq!(
        apply(doc! { "$set": { "a": 2 } }, doc! { "_id": 1, "a": 1 }),
        doc! { "_id": 1, "a": 2 }
    );
    assert_eq!(
        apply(doc! { "$set": { "x.y.z": 1 } }, doc! { "_id": 1 }),
        doc! { "_id": 1, "x": { "y": { "z": 1 } } }
    );
    assert_eq!(
        apply(
            doc! { "$set": { "arr.3": 9 } },
            doc! { "_id": 1, "arr": [1] }
        ),
        doc! { "_id": 1, "arr": [1, null, null, 9] }
    );
    assert_eq!(
        apply(
            doc! { "$unset": { "a": "" } },
            doc! { "_id": 1, "a": 1, "b": 2 }
        ),
        doc! { "_id": 1, "b": 2 }
    );
    assert_eq!(
        apply(
            doc! { "$unset": { "arr.0": 1 } },
            doc! { "_id": 1, "arr": [1, 2] }
        ),
        doc! { "_id": 1, "arr": [null, 2] }
    );
    assert_eq!(
        apply(doc! { "$unset": { "nope.deeper": 1 } }, doc! { "_id": 1 }),
        doc! { "_id": 1 }
    );
}

#[test]
fn new_fields_are_added_in_field_name_order() {
    let updated = apply(doc! { "$set": { "b": 1, "a": 1 } }, doc! { "_id": 1 });
    assert_eq!(updated.keys().collect::<Vec<_>>(), vec!["_id", "a", "b"]);
}

#[test]
fn arithmetic_operators_promote_types() {
    assert_eq!(
        apply(doc! { "$inc": { "n": 1 } }, doc! { "_id": 1, "n": 1 }),
        doc! { "_id": 1, "n": 2 }
    );
    assert_eq!(
        apply(doc! { "$inc": { "n": 1 } }, doc! { "_id": 1 }),
        doc! { "_id": 1, "n": 1 }
    );
    assert_eq!(
        apply(doc! { "$inc": { "n": 0.5 } }, doc! { "_id": 1, "n": 1 }),
        doc! { "_id": 1, "n": 1.5 }
    );
    assert_eq!(
        apply(
            doc! { "$inc": { "n": 1 } },
            doc! { "_id": 1, "n": i32::MAX }
        ),
        doc! { "_id": 1, "n": i64::from(i32::MAX) + 1 }
    );
    assert_eq!(
        apply(doc! { "$mul": { "n": 3_i64 } }, doc! { "_id": 1, "n": 2 }),
        doc! { "_id": 1, "n": 6_i64 }
    );
    assert_eq!(
        apply(doc! { "$mul": { "n": 3 } }, doc! { "_id": 1 }),
        doc! { "_id": 1, "n": 0 }
    );
    let (code, message) = apply_error(doc! { "$inc": { "n": 1 } }, doc! { "_id": 1, "n": "x" });
    assert_eq!(code, 14);
    assert!(
        message.contains("Cannot apply $inc to a value of non-numeric type"),
        "{message}"
    );
    assert_eq!(
        apply_error(doc! { "$inc": { "n": "x" } }, doc! { "_id": 1 }).0,
        14
    );
    assert_eq!(
        apply_error(
            doc! { "$inc": { "n": 1_i64 } },
            doc! { "_id": 1, "n": i64::MAX }
        )
        .0,
        2
    );
}

#[test]
fn min_max_compare_in_canonical_order() {
    assert_eq!(
        apply(doc! { "$min": { "a": 3 } }, doc! { "_id": 1, "a": 5 }),
        doc! { "_id": 1, "a": 3 }
    );
    assert_eq!(
        apply(doc! { "$min": { "a": 7 } }, doc! { "_id": 1, "a": 5 }),
        doc! { "_id": 1, "a": 5 }
    );
    assert_eq!(
        apply(doc! { "$max": { "a": "s" } }, doc! { "_id": 1, "a": 5 }),
        doc! { "_id": 1, "a": "s" }
    );
    assert_eq!(
        apply(doc! { "$max": { "a": 1 } }, doc! { "_id": 1 }),
        doc! { "_id": 1, "a": 1 }
    );
}

#[test]
fn array_operators() {
    let base = doc! { "_id": 1, "a": [1, 2, 3] };
    assert_eq!(
        apply(doc! { "$push": { "a": 4 } }, base.clone()),
        doc! { "_id": 1, "a": [1, 2, 3, 4] }
    );
    assert_eq!(
        apply(doc! { "$push": { "n": 4 } }, base.clone()),
        doc! { "_id": 1, "a": [1, 2, 3], "n": [4] }
    );
    assert_eq!(
        apply(
            doc! { "$push": { "a": { "$each": [0, 9], "$position": 0, "$slice": 4 } } },
            base.clone()
        ),
        doc! { "_id": 1, "a": [0, 9, 1, 2] }
    );
    assert_eq!(
        apply(
            doc! { "$push": { "a": { "$each": [0], "$sort": -1, "$slice": -2 } } },
            base.clone()
        ),
        doc! { "_id": 1, "a": [1, 0] }
    );
    assert_eq!(
        apply(doc! { "$addToSet": { "a": 2 } }, base.clone()),
        base.clone()
    );
    assert_eq!(
        apply(
            doc! { "$addToSet": { "a": { "$each": [3, 4, 4] } } },
            base.clone()
        ),
        doc! { "_id": 1, "a": [1, 2, 3, 4] }
    );
    assert_eq!(
        apply(doc! { "$pull": { "a": 2 } }, base.clone()),
        doc! { "_id": 1, "a": [1, 3] }
    );
    assert_eq!(
        apply(doc! { "$pull": { "a": { "$gte": 2 } } }, base.clone()),
        doc! { "_id": 1, "a": [1] }
    );
    assert_eq!(
        apply(
            doc! { "$pull": { "r": { "k": "x" } } },
            doc! { "_id": 1, "r": [{ "k": "x", "v": 1 }, { "k": "y" }] }
        ),
        doc! { "_id": 1, "r": [{ "k": "y" }] }
    );
    assert_eq!(
        apply(doc! { "$pullAll": { "a": [1, 3] } }, base.clone()),
        doc! { "_id": 1, "a": [2] }
    );
    assert_eq!(
        apply(doc! { "$pop": { "a": 1 } }, base.clone()),
        doc! { "_id": 1, "a": [1, 2] }
    );
    assert_eq!(
        apply(doc! { "$pop": { "a": -1 } }, base.clone()),
        doc! { "_id": 1, "a": [2, 3] }
    );
    let (code, _) = apply_error(doc! { "$push": { "s": 1 } }, doc! { "_id": 1, "s": "text" });
    assert_eq!(code, 2);
    assert_eq!(
        apply_error(doc! { "$addToSet": { "s": 1 } }, doc! { "_id": 1, "s": 5 }).0,
        2
    );
}

#[test]
fn rename_and_current_date() {
    assert_eq!(
        apply(
            doc! { "$rename": { "a": "b.c" } },
            doc! { "_id": 1, "a": 5 }
        ),
        doc! { "_id": 1, "b": { "c": 5 } }
    );
    assert_eq!(
        apply(doc! { "$rename": { "zz": "y" } }, doc! { "_id": 1 }),
        doc! { "_id": 1 }
    );
    assert_eq!(
        apply(doc! { "$currentDate": { "t": true } }, doc! { "_id": 1 }),
        doc! { "_id": 1, "t": at(0) }
    );
}

#[test]
fn path_and_parse_errors_use_mongod_codes() {
    let (code, message) = apply_error(doc! { "$set": { "a.b": 1 } }, doc! { "_id": 1, "a": 5 });
    assert_eq!(code, 28);
    assert_eq!(message, "Cannot create field 'b' in element { a: 5 }");
    assert_eq!(
        apply_error(
            doc! { "$set": { "a": 1 }, "$inc": { "a": 1 } },
            doc! { "_id": 1 }
        )
        .0,
        40
    );
    assert_eq!(
        apply_error(
            doc! { "$set": { "a": 1 }, "$unset": { "a.b": 1 } },
            doc! { "_id": 1 }
        )
        .0,
        40
    );
    assert_eq!(
        apply_error(doc! { "$foo": { "a": 1 } }, doc! { "_id": 1 }).0,
        9
    );
    assert_eq!(apply_error(doc! { "$set": 5 }, doc! { "_id": 1 }).0, 9);
    assert_eq!(
        apply_error(doc! { "$set": { "": 1 } }, doc! { "_id": 1 }).0,
        56
    );
    assert_eq!(
        apply_error(doc! { "$pop": { "a": 2 } }, doc! { "_id": 1 }).0,
        9
    );
    assert_eq!(
        apply_error(doc! { "a": 1, "$set": { "b": 1 } }, doc! { "_id": 1 }).0,
        52
    );
}

#[test]
fn id_is_immutable() {
    let (code, message) = apply_error(doc! { "$set": { "_id": 2 } }, doc! { "_id": 1 });
    assert_eq!(code, 66);
    assert_eq!(
        message,
        "Performing an update on the path '_id' would modify the immutable field '_id'"
    );
    assert_eq!(
        apply_error(doc! { "$unset": { "_id": 1 } }, doc! { "_id": 1 }).0,
        66
    );
    assert_eq!(
        apply_error(doc! { "_id": 2, "a": 1 }, doc! { "_id": 1 }).0,
        66
    );
    assert_eq!(
        apply(doc! { "$set": { "_id": 1 } }, doc! { "_id": 1, "a": 1 }),
        doc! { "_id": 1, "a": 1 }
    );
}

#[test]
fn replacement_keeps_id_first() {
    assert_eq!(
        apply(doc! { "b": 2 }, doc! { "_id": 1, "a": 1 }),
        doc! { "_id": 1, "b": 2 }
    );
    assert_eq!(
        apply(doc! { "b": 2, "_id": 1 }, doc! { "_id": 1, "a": 1 }),
        doc! { "_id": 1, "b": 2 }
    );
    assert_eq!(apply(doc! {}, doc! { "_id": 1, "a": 1 }), doc! { "_id": 1 });
}

#[test]
fn pipeline_updates_reshape_the_document() {
    let update = Update::parse(
        &bson::bson!([{ "$set": { "total": { "$add": ["$a", "$b"] } } }, { "$unset": "b" }]),
    )
    .expect("pipeline parses");
    let updated = update
        .apply(&doc! { "_id": 1, "a": 2, "b": 3 }, context())
        .expect("applies");
    assert_eq!(updated, doc! { "_id": 1, "a": 2, "total": 5 });
    assert!(Update::parse(&bson::bson!([{ "$group": { "_id": null } }])).is_err());
}

#[test]
fn upsert_documents_take_equality_fields_from_the_query() {
    let filter = Filter::parse(
        &doc! { "_id": 7, "a": 1, "b.c": 2, "$and": [{ "d": { "$eq": 3 } }], "e": { "$gt": 1 } },
    )
    .expect("filter parses");
    let update = Update::parse(&Bson::Document(
        doc! { "$set": { "x": 1 }, "$setOnInsert": { "created": true } },
    ))
    .expect("update parses");
    let document = update
        .upsert_document(
            &filter,
            ApplyContext {
                is_insert: true,
                now: at(0),
                matched_position: None,
            },
        )
        .expect("upsert");
    assert_eq!(
        document,
        doc! { "_id": 7, "a": 1, "b": { "c": 2 }, "d": 3, "created": true, "x": 1 }
    );
    let replacement = Update::parse(&Bson::Document(doc! { "y": 2 })).expect("replacement parses");
    let document = replacement
        .upsert_document(
            &filter,
            ApplyContext {
                is_insert: true,
                now: at(0),
                matched_position: None,
            },
        )
        .expect("upsert");
    assert_eq!(document, doc! { "_id": 7, "y": 2 });
    // $setOnInsert is ignored for existing documents.
    assert_eq!(
        apply(
            doc! { "$setOnInsert": { "created": true } },
            doc! { "_id": 1 }
        ),
        doc! { "_id": 1 }
    );
}
