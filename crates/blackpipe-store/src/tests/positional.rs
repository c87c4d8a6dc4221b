//! Array and positional operators: the positional `$` in updates and find projections, `$[]`
//! and `$[<identifier>]` through every write command, `$elemMatch` and `$slice` projections,
//! `$mod`, the bit tests and `$all` with `$elemMatch`.

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::{batch, error_code, find, ids, insert, new_store, run, run_ok};
use crate::Store;
use crate::query::Filter;

fn matches(filter: Document, document: Document) -> bool {
    Filter::parse(&filter)
        .unwrap_or_else(|error| panic!("{filter} did not parse: {error:?}"))
        .matches(&document)
}

fn parse_error(filter: Document) -> (i32, String) {
    let error = Filter::parse(&filter)
        .map(|_| ())
        .expect_err("expected a parse error");
    (error.code, error.message)
}

fn position(filter: Document, document: Document) -> Option<usize> {
    Filter::parse(&filter)
        .expect("filter parses")
        .matched_position(&document)
}

fn update_one(store: &Store, q: Document, u: Document) -> Document {
    run(
        store,
        "db",
        doc! { "update": "c", "updates": [{ "q": q, "u": u }] },
    )
}

fn write_error_code(reply: &Document) -> i32 {
    let errors = reply
        .get_array("writeErrors")
        .unwrap_or_else(|_| panic!("expected a write error: {reply}"));
    errors[0]
        .as_document()
        .and_then(|error| error.get_i32("code").ok())
        .unwrap_or_default()
}

#[test]
fn the_matched_position_follows_mongods_recording_rules() {
    let document = doc! { "a": [1, 5, 9], "b": [{ "c": 1 }, { "c": 2 }], "d": 3 };
    assert_eq!(position(doc! { "a": 5 }, document.clone()), Some(1));
    assert_eq!(
        position(doc! { "a": { "$gt": 4 } }, document.clone()),
        Some(1)
    );
    assert_eq!(position(doc! { "b.c": 2 }, document.clone()), Some(1));
    assert_eq!(
        position(doc! { "b": { "$elemMatch": { "c": 2 } } }, document.clone()),
        Some(1)
    );
    // Within $and the last predicate that recorded a position wins; a non-array one records
    // nothing.
    assert_eq!(
        position(doc! { "a": 9, "b.c": 1, "d": 3 }, document.clone()),
        Some(0)
    );
    assert_eq!(
        position(doc! { "$or": [{ "a": 42 }, { "a": 9 }] }, document.clone()),
        Some(2)
    );
    // Negations and whole-array equality record nothing.
    assert_eq!(
        position(doc! { "a": { "$ne": 5 }, "d": 3 }, document.clone()),
        None
    );
    assert_eq!(position(doc! { "a": [1, 5, 9] }, document.clone()), None);
    assert_eq!(position(doc! { "a": 4 }, document), None);
}

#[test]
fn positional_dollar_updates_the_element_the_query_matched() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "grades": [80, 85, 90], "items": [{ "sku": "a", "qty": 1 }, { "sku": "b", "qty": 1 }] },
            doc! { "_id": 2, "grades": [85, 100] },
        ],
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "grades": 85 }, "u": { "$set": { "grades.$": 86 } }, "multi": true }] },
    );
    update_one(
        &store,
        doc! { "_id": 1, "items.sku": "b" },
        doc! { "$inc": { "items.$.qty": 5 }, "$set": { "items.$.seen": true } },
    );
    assert_eq!(
        find(&store, "c", doc! {}),
        vec![
            doc! { "_id": 1, "grades": [80, 86, 90], "items": [{ "sku": "a", "qty": 1 }, { "sku": "b", "qty": 6, "seen": true }] },
            doc! { "_id": 2, "grades": [86, 100] },
        ]
    );
    // findAndModify takes the same path.
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "items.sku": "a" }, "update": { "$unset": { "items.$.qty": "" } }, "new": true },
    );
    assert_eq!(
        reply
            .get_document("value")
            .unwrap()
            .get_array("items")
            .unwrap()[0],
        Bson::Document(doc! { "sku": "a" })
    );
}

#[test]
fn positional_misuses_get_mongods_errors() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "a": [1, 2], "b": 5 }]);
    // The array is not in the query.
    let reply = update_one(&store, doc! { "b": 5 }, doc! { "$set": { "a.$": 9 } });
    assert_eq!(write_error_code(&reply), 2);
    assert!(
        reply
            .to_string()
            .contains("The positional operator did not find the match needed from the query.")
    );
    // Two positional operators in one path, or one first, are parse errors of the statement.
    let reply = update_one(&store, doc! { "a": 1 }, doc! { "$set": { "a.$.b.$": 9 } });
    assert_eq!(write_error_code(&reply), 2);
    assert!(
        reply
            .to_string()
            .contains("Too many positional (i.e. '$') elements found in path 'a.$.b.$'")
    );
    let reply = update_one(&store, doc! { "a": 1 }, doc! { "$set": { "$": 9 } });
    assert_eq!(write_error_code(&reply), 2);
    let reply = update_one(&store, doc! { "a": 1 }, doc! { "$rename": { "a.$": "c" } });
    assert_eq!(write_error_code(&reply), 2);
    assert!(
        reply
            .to_string()
            .contains("The source field for $rename may not be dynamic: a.$")
    );
    // An upsert that inserts has no matched position.
    let reply = run(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "a": 7 }, "u": { "$set": { "a.$": 9 } }, "upsert": true }] },
    );
    assert_eq!(write_error_code(&reply), 2);
    assert_eq!(
        find(&store, "c", doc! {}),
        vec![doc! { "_id": 1, "a": [1, 2], "b": 5 }]
    );
}

#[test]
fn all_and_filtered_positional_work_in_update_find_and_modify_and_bulk_write() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": [1, 5, 9], "b": [{ "x": 1 }, { "x": 7 }] }],
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "a.$[]": 1 } } }] },
    );
    run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$set": { "b.$[big].big": true } }, "arrayFilters": [{ "big.x": { "$gt": 5 } }] },
    );
    run_ok(
        &store,
        "admin",
        doc! {
            "bulkWrite": 1,
            "ops": [{ "update": 0, "filter": { "_id": 1 }, "updateMods": { "$set": { "a.$[n]": 0 } }, "arrayFilters": [{ "n": { "$gte": 6 } }] }],
            "nsInfo": [{ "ns": "db.c" }],
        },
    );
    assert_eq!(
        find(&store, "c", doc! {}),
        vec![doc! { "_id": 1, "a": [2, 0, 0], "b": [{ "x": 1 }, { "x": 7, "big": true }] }]
    );
}

fn find_projected(store: &Store, filter: Document, projection: Document) -> Document {
    run(
        store,
        "db",
        doc! { "find": "c", "filter": filter, "projection": projection },
    )
}

#[test]
fn positional_projection_keeps_the_matched_element() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "grades": [70, 87, 90], "meta": { "list": [{ "k": 1 }, { "k": 2 }] }, "other": 3 },
        ],
    );
    let reply = find_projected(
        &store,
        doc! { "grades": { "$gte": 85 } },
        doc! { "grades.$": 1 },
    );
    assert_eq!(batch(&reply), vec![doc! { "_id": 1, "grades": [87] }]);
    let reply = find_projected(
        &store,
        doc! { "meta.list.k": 2 },
        doc! { "meta.list.$": 1, "_id": 0 },
    );
    assert_eq!(
        batch(&reply),
        vec![doc! { "meta": { "list": [{ "k": 2 }] } }]
    );
    // A path that meets an array before its end cuts that first array, as mongod does.
    insert(
        &store,
        "c",
        vec![doc! { "_id": 2, "a": [{ "b": [1, 2], "x": 0 }, { "b": [3, 4], "x": 1 }] }],
    );
    let reply = find_projected(&store, doc! { "a.b": 3 }, doc! { "a.b.$": 1 });
    assert_eq!(
        batch(&reply),
        vec![doc! { "_id": 2, "a": [{ "b": [3, 4] }] }]
    );
    let reply = run_ok(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "grades": 90 }, "update": { "$set": { "other": 4 } }, "fields": { "grades.$": 1 } },
    );
    assert_eq!(
        reply.get_document("value").unwrap(),
        &doc! { "_id": 1, "grades": [90] }
    );
}

#[test]
fn positional_projection_misuses_get_mongods_codes() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": [1, 2], "b": [3], "c": 1 }],
    );
    let cases: Vec<(Document, Document, i32)> = vec![
        (doc! { "a": 1 }, doc! { "a.$": 1, "b.$": 1 }, 31276),
        (doc! { "c": 1 }, doc! { "a.$": 1 }, 31277),
        (doc! { "a": 1 }, doc! { "a.$": { "$slice": 1 } }, 31271),
        (
            doc! { "a": 1 },
            doc! { "a.$": 1, "b": { "$elemMatch": { "$gt": 1 } } },
            31255,
        ),
        (
            doc! { "a": 1 },
            doc! { "b": { "$elemMatch": { "$gt": 1 } }, "a.$": 1 },
            31256,
        ),
        (doc! { "a": 1 }, doc! { "a.$.b.$": 1 }, 31287),
        (doc! { "a": 1 }, doc! { "a.$": 1, "c": 0 }, 31254),
        (doc! { "a": 1 }, doc! { "a.$": "x" }, 31308),
        (doc! { "a": 1 }, doc! { "a.$": false }, 16410),
        (doc! {}, doc! { "b": { "$elemMatch": 1 } }, 31274),
        (doc! {}, doc! { "x.b": { "$elemMatch": { "a": 1 } } }, 31275),
    ];
    for (filter, projection, code) in cases {
        let reply = find_projected(&store, filter.clone(), projection.clone());
        assert_eq!(error_code(&reply), code, "{filter} {projection}: {reply}");
    }
    // A document the query matched without an array position cannot be projected.
    let reply = find_projected(&store, doc! { "a": { "$exists": true } }, doc! { "a.$": 1 });
    assert_eq!(error_code(&reply), 51246);
    let stage = run(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$project": { "a.$": 1 } }], "cursor": {} },
    );
    assert_eq!(error_code(&stage), 31324);
}

#[test]
fn elem_match_and_slice_projections() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "s": [{ "n": 1, "g": "a" }, { "n": 2, "g": "b" }, { "n": 3, "g": "b" }], "v": [1, 6, 8], "w": [1, 2, 3, 4, 5] },
        ],
    );
    let reply = find_projected(
        &store,
        doc! {},
        doc! { "s": { "$elemMatch": { "g": "b" } } },
    );
    assert_eq!(
        batch(&reply),
        vec![doc! { "_id": 1, "s": [{ "n": 2, "g": "b" }] }]
    );
    // Value operators apply to the elements themselves.
    let reply = find_projected(
        &store,
        doc! {},
        doc! { "v": { "$elemMatch": { "$gt": 5 } }, "_id": 0 },
    );
    assert_eq!(batch(&reply), vec![doc! { "v": [6] }]);
    let reply = find_projected(
        &store,
        doc! {},
        doc! { "w": { "$slice": -2 }, "s": 0, "v": 0 },
    );
    assert_eq!(batch(&reply), vec![doc! { "_id": 1, "w": [4, 5] }]);
    let reply = find_projected(
        &store,
        doc! {},
        doc! { "w": { "$slice": [1, 2] }, "s": 0, "v": 0 },
    );
    assert_eq!(batch(&reply), vec![doc! { "_id": 1, "w": [2, 3] }]);
}

#[test]
fn mod_matches_truncated_integers_and_refuses_malformed_arguments() {
    assert!(matches(doc! { "a": { "$mod": [4, 1] } }, doc! { "a": 5 }));
    assert!(matches(doc! { "a": { "$mod": [4, 1] } }, doc! { "a": 5.9 }));
    assert!(matches(
        doc! { "a": { "$mod": [4.5, 1.2] } },
        doc! { "a": 9_i64 }
    ));
    assert!(matches(doc! { "a": { "$mod": [4, -1] } }, doc! { "a": -5 }));
    assert!(matches(
        doc! { "a": { "$mod": [-1, 0] } },
        doc! { "a": i64::MIN }
    ));
    assert!(matches(
        doc! { "a": { "$mod": [3, 0] } },
        doc! { "a": [1, 6] }
    ));
    assert!(!matches(
        doc! { "a": { "$mod": [4, 1] } },
        doc! { "a": f64::NAN }
    ));
    assert!(!matches(
        doc! { "a": { "$mod": [4, 1] } },
        doc! { "a": "5" }
    ));
    assert!(!matches(
        doc! { "a": { "$mod": [4, 0] } },
        doc! { "a": 1e300 }
    ));
    let cases: Vec<(Bson, &str)> = vec![
        (Bson::Int32(4), "malformed mod, needs to be an array"),
        (bson::bson!([]), "malformed mod, not enough elements"),
        (bson::bson!([4]), "malformed mod, not enough elements"),
        (bson::bson!(["4", 1]), "malformed mod, divisor not a number"),
        (
            bson::bson!([4, "1"]),
            "malformed mod, remainder not a number",
        ),
        (bson::bson!([4, 1, 2]), "malformed mod, too many elements"),
        (bson::bson!([0, 1]), "divisor cannot be 0"),
        (
            bson::bson!([f64::NAN, 1]),
            "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
        ),
        (
            bson::bson!([4, f64::INFINITY]),
            "malformed mod, remainder value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
        ),
    ];
    for (argument, message) in cases {
        assert_eq!(
            parse_error(doc! { "a": { "$mod": argument.clone() } }),
            (2, message.to_owned()),
            "{argument}"
        );
    }
}

#[test]
fn bit_tests_read_numbers_and_bin_data() {
    let bits = |bytes: &[u8]| {
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: bytes.to_vec(),
        })
    };
    // 54 is 0b110110.
    assert!(matches(
        doc! { "a": { "$bitsAllSet": [1, 5] } },
        doc! { "a": 54 }
    ));
    assert!(!matches(
        doc! { "a": { "$bitsAllSet": [0, 1] } },
        doc! { "a": 54 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAllSet": 50 } },
        doc! { "a": 54 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAnySet": [0, 1] } },
        doc! { "a": 54 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAllClear": [0, 3] } },
        doc! { "a": 54 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAnyClear": [0, 1] } },
        doc! { "a": 54 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAllSet": bits(&[0b0011_0000]) } },
        doc! { "a": 54 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAllSet": [1, 2] } },
        doc! { "a": bits(&[0b0000_0110]) }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAllClear": [100] } },
        doc! { "a": bits(&[0xFF]) }
    ));
    // Negative numbers are sign-extended; fractions and strings never match.
    assert!(matches(
        doc! { "a": { "$bitsAllSet": [63, 200] } },
        doc! { "a": -1 }
    ));
    assert!(!matches(
        doc! { "a": { "$bitsAnySet": [0] } },
        doc! { "a": 1.5 }
    ));
    assert!(matches(
        doc! { "a": { "$bitsAnySet": [0] } },
        doc! { "a": 1.0 }
    ));
    assert!(!matches(
        doc! { "a": { "$bitsAnySet": [0] } },
        doc! { "a": "1" }
    ));
    assert_eq!(parse_error(doc! { "a": { "$bitsAllSet": -1 } }).0, 9);
    assert_eq!(parse_error(doc! { "a": { "$bitsAllSet": 1.5 } }).0, 9);
    assert_eq!(parse_error(doc! { "a": { "$bitsAllSet": [-1] } }).0, 2);
    assert_eq!(parse_error(doc! { "a": { "$bitsAllSet": [1.5] } }).0, 2);
    assert_eq!(parse_error(doc! { "a": { "$bitsAllSet": "x" } }).0, 2);
}

#[test]
fn all_with_elem_match_needs_every_condition_met_by_some_element() {
    let document = doc! { "qty": [{ "size": "M", "num": 100 }, { "size": "L", "num": 50 }] };
    let filter = doc! { "qty": { "$all": [
        { "$elemMatch": { "size": "M", "num": { "$gt": 50 } } },
        { "$elemMatch": { "num": 50 } },
    ] } };
    assert!(matches(filter, document.clone()));
    let filter = doc! { "qty": { "$all": [
        { "$elemMatch": { "size": "M", "num": { "$gt": 100 } } },
        { "$elemMatch": { "num": 50 } },
    ] } };
    assert!(!matches(filter, document));
    assert_eq!(
        parse_error(doc! { "a": { "$all": [{ "$elemMatch": { "b": 1 } }, 5] } }),
        (2, "$all/$elemMatch has to be consistent".to_owned())
    );
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "a": [{ "b": 1 }, { "b": 2 }] },
            doc! { "_id": 2, "a": [{ "b": 1 }] },
        ],
    );
    assert_eq!(
        ids(
            &store,
            "c",
            doc! { "a": { "$all": [{ "$elemMatch": { "b": 1 } }, { "$elemMatch": { "b": 2 } }] } }
        ),
        vec![1]
    );
}
