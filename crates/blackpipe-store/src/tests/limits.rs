//! Hostile input: limits mongod enforces so that one request cannot exhaust memory or CPU.

use bson::{Bson, doc};

use super::{error_code, find, insert, new_store, run, run_ok};

/// mongod's CannotBackfillArray.
const CANNOT_BACKFILL_ARRAY: i32 = 34;

#[test]
fn an_update_may_not_pad_an_array_past_one_and_a_half_million_elements() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": [1], "n": { "x": [] } }],
    );
    let far = [
        doc! { "$set": { "a.4000000000": 1 } },
        doc! { "$inc": { "a.1500002": 1 } },
        doc! { "$mul": { "a.1500002": 2 } },
        doc! { "$max": { "a.1500002": 2 } },
        doc! { "$min": { "a.1500002": 2 } },
        doc! { "$currentDate": { "a.1500002": true } },
        doc! { "$push": { "a.1500002": 1 } },
        doc! { "$addToSet": { "a.1500002": 1 } },
        doc! { "$set": { "n.x.1500001.deep": 1 } },
        doc! { "$rename": { "n": "a.1500002" } },
    ];
    for update in far {
        let reply = run_ok(
            &store,
            "db",
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": update.clone() }] },
        );
        let errors = reply
            .get_array("writeErrors")
            .unwrap_or_else(|_| panic!("{update}: {reply}"));
        let error = errors[0].as_document().unwrap();
        assert_eq!(
            error.get_i32("code").ok(),
            Some(CANNOT_BACKFILL_ARRAY),
            "{update}"
        );
        assert_eq!(
            error.get_str("errmsg").ok(),
            Some("can't backfill more than 1500000 elements")
        );
    }
    assert_eq!(
        find(&store, "c", doc! {}),
        vec![doc! { "_id": 1, "a": [1], "n": { "x": [] } }],
        "a refused update changes nothing"
    );
}

#[test]
fn padding_up_to_the_limit_is_allowed() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "a": [] }]);
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "a.1500000": 1 } } }] },
    );
    let stored = find(&store, "c", doc! {});
    let array = stored[0].get_array("a").unwrap();
    assert_eq!(array.len(), 1_500_001);
    assert_eq!(array[1_500_000], Bson::Int32(1));
}

#[test]
fn an_upsert_that_would_pad_too_far_is_refused() {
    let store = new_store();
    let reply = run(
        &store,
        "db",
        doc! { "update": "c", "updates": [{
            "q": { "_id": 1, "a": [] },
            "u": { "$setOnInsert": { "a.2000000": 1 } },
            "upsert": true,
        }] },
    );
    let errors = reply
        .get_array("writeErrors")
        .unwrap_or_else(|_| panic!("{reply}"));
    assert_eq!(
        errors[0].as_document().unwrap().get_i32("code").ok(),
        Some(CANNOT_BACKFILL_ARRAY)
    );
}

/// mongod's BSONObjectTooLarge.
const BSON_OBJECT_TOO_LARGE: i32 = 10334;

fn aggregate(store: &crate::Store, pipeline: Vec<bson::Document>) -> bson::Document {
    run(
        store,
        "db",
        doc! { "aggregate": "c", "pipeline": pipeline, "cursor": {} },
    )
}

#[test]
fn doubling_a_string_stops_at_the_document_size_limit() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "s": "x" }]);
    let doubling = doc! { "$addFields": { "s": { "$concat": ["$s", "$s"] } } };
    // 2^24 bytes (16 MiB) still fits; the 25th doubling would pass the limit.
    let reply = aggregate(&store, vec![doubling.clone(); 24]);
    assert_eq!(
        reply.get("ok"),
        Some(&Bson::Double(1.0)),
        "16 MiB is allowed"
    );
    drop(reply);
    let reply = aggregate(&store, vec![doubling; 28]);
    assert_eq!(error_code(&reply), BSON_OBJECT_TOO_LARGE);
}

fn store_with_string(bytes: usize) -> crate::Store {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "s": "y".repeat(bytes), "n": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }],
    );
    store
}

#[test]
fn array_and_object_literals_repeating_a_large_field_are_refused() {
    let store = store_with_string(6 * 1024 * 1024);
    let array = aggregate(
        &store,
        vec![doc! { "$project": { "a": ["$s", "$s", "$s"] } }],
    );
    assert_eq!(error_code(&array), BSON_OBJECT_TOO_LARGE);
    let object = aggregate(
        &store,
        vec![doc! { "$replaceWith": { "a": "$s", "b": "$s", "c": "$s" } }],
    );
    assert_eq!(error_code(&object), BSON_OBJECT_TOO_LARGE);
}

#[test]
fn a_stage_may_not_produce_a_document_past_the_size_limit() {
    let store = store_with_string(10 * 1024 * 1024);
    let reply = aggregate(
        &store,
        vec![doc! { "$addFields": { "a": "$s", "b": "$s" } }],
    );
    assert_eq!(error_code(&reply), BSON_OBJECT_TOO_LARGE);
    // Replacing a large field by one of the same size is fine: the bound is re-measured.
    let reply = aggregate(
        &store,
        vec![
            doc! { "$addFields": { "s": "$s", "t": "x" } },
            doc! { "$project": { "_id": 1 } },
        ],
    );
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)), "{reply}");
}

#[test]
fn a_group_push_is_bounded_like_mongod() {
    // Eleven 10 MiB values pass the 100 MiB that one $push may hold.
    let store = store_with_string(10 * 1024 * 1024);
    let reply = aggregate(
        &store,
        vec![
            doc! { "$unwind": "$n" },
            doc! { "$group": { "_id": null, "all": { "$push": "$s" } } },
        ],
    );
    assert_eq!(
        error_code(&reply),
        146,
        "ExceededMemoryLimit: {}",
        reply.get_str("errmsg").unwrap_or("")
    );
}

#[test]
fn extreme_slice_and_position_arguments_saturate_instead_of_overflowing() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "a": [1, 2, 3] }]);
    for extreme in [
        Bson::Int64(i64::MIN),
        Bson::Double(-1e300),
        Bson::Int64(i64::MAX),
        Bson::Double(1e300),
    ] {
        let update = doc! { "$push": { "a": { "$each": [4], "$slice": extreme.clone(), "$position": extreme.clone() } } };
        run_ok(
            &store,
            "db",
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": update }] },
        );
        let projected = run_ok(
            &store,
            "db",
            doc! { "find": "c", "projection": { "a": { "$slice": extreme.clone() } } },
        );
        let elements = run_ok(
            &store,
            "db",
            doc! { "find": "c", "projection": { "a": { "$slice": [extreme, 1] } } },
        );
        assert!(projected.contains_key("cursor") && elements.contains_key("cursor"));
    }
    // $slice i64::MIN keeps every element (all of the last |n|), $slice i64::MAX too.
    let stored = find(&store, "c", doc! {});
    assert!(!stored[0].get_array("a").unwrap().is_empty());
}

#[test]
fn write_batches_are_counted_on_the_raw_request() {
    use crate::{RawRequestError, check_raw_request};
    let raw = |document: bson::Document| bson::RawDocumentBuf::try_from(&document).unwrap();
    let empty = vec![bson::Document::new(); 100_001];
    let in_body = raw(doc! { "insert": "c", "documents": empty });
    let too_large = Err(RawRequestError::WriteBatchTooLarge { count: 100_001 });
    assert_eq!(check_raw_request(&in_body, []), too_large);
    let at_limit = raw(doc! { "delete": "c", "deletes": vec![bson::Document::new(); 100_000] });
    assert_eq!(check_raw_request(&at_limit, []), Ok(()));
    let header = raw(doc! { "update": "c" });
    let statements = vec![raw(doc! {}); 100_001];
    assert_eq!(
        check_raw_request(&header, [("updates", statements.as_slice())]),
        too_large
    );
    // Other commands and other sequences are not write batches.
    let find = raw(doc! { "find": "c" });
    assert_eq!(
        check_raw_request(&find, [("documents", statements.as_slice())]),
        Ok(())
    );
    assert_eq!(
        check_raw_request(&header, [("documents", statements.as_slice())]),
        Ok(())
    );
}

/// `{a: {a: ... {}}}` with `levels` nested documents below the top one, encoded directly (a
/// `Document` this deep could not even be dropped without overflowing the stack).
fn nested_raw(levels: usize) -> bson::RawDocumentBuf {
    let mut bytes = Vec::with_capacity(levels * 8 + 5);
    for level in (1..=levels).rev() {
        let length = i32::try_from(5 + 8 * level).unwrap();
        bytes.extend_from_slice(&length.to_le_bytes());
        bytes.extend_from_slice(&[0x03, b'a', 0]);
    }
    bytes.extend_from_slice(&[5, 0, 0, 0, 0]);
    bytes.extend(std::iter::repeat_n(0, levels));
    bson::RawDocumentBuf::from_bytes(bytes).unwrap()
}

#[test]
fn documents_nested_deeper_than_mongods_limit_are_refused_without_recursion() {
    use crate::{MAX_BSON_DEPTH, RawRequestError, check_raw_request};
    assert_eq!(check_raw_request(&nested_raw(MAX_BSON_DEPTH), []), Ok(()));
    assert_eq!(
        check_raw_request(&nested_raw(MAX_BSON_DEPTH + 1), []),
        Err(RawRequestError::NestedTooDeep)
    );
    // Far past any stack: refused by the iterative walk, in the body or in a sequence.
    let bomb = nested_raw(1_000_000);
    assert_eq!(
        check_raw_request(&bomb, []),
        Err(RawRequestError::NestedTooDeep)
    );
    let header = bson::RawDocumentBuf::try_from(&doc! { "insert": "c" }).unwrap();
    let documents = [bomb];
    assert_eq!(
        check_raw_request(&header, [("documents", documents.as_slice())]),
        Err(RawRequestError::NestedTooDeep)
    );
    // Arrays count as levels too.
    let array_levels =
        (0..=MAX_BSON_DEPTH).fold(Bson::Int32(1), |inner, _| Bson::Array(vec![inner]));
    let arrays = bson::RawDocumentBuf::try_from(&doc! { "x": array_levels }).unwrap();
    assert_eq!(
        check_raw_request(&arrays, []),
        Err(RawRequestError::NestedTooDeep)
    );
}

#[test]
fn a_stage_multiplying_its_input_is_bounded() {
    // 100,000 copies of a 4 KiB document would be 400 MiB: more than one stage may build.
    let store = new_store();
    let positions: Vec<i32> = (0..100_000).collect();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "s": "z".repeat(4096), "n": positions }],
    );
    let reply = aggregate(
        &store,
        vec![doc! { "$unwind": "$n" }, doc! { "$project": { "n": 1 } }],
    );
    assert_eq!(
        error_code(&reply),
        146,
        "{}",
        reply.get_str("errmsg").unwrap_or("")
    );
    // A small result is unaffected.
    let reply = aggregate(
        &store,
        vec![
            doc! { "$project": { "n": 1 } },
            doc! { "$unwind": "$n" },
            doc! { "$limit": 3 },
        ],
    );
    assert_eq!(reply.get("ok"), Some(&Bson::Double(1.0)), "{reply}");
}

#[test]
fn a_large_in_list_matches_by_query_equality() {
    // The $in list is searched, not scanned: mixed numeric types, null and arrays still match
    // exactly as equality does.
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "v": 7 },
            doc! { "_id": 2, "v": 7.5 },
            doc! { "_id": 3, "v": "seven" },
            doc! { "_id": 4 },
            doc! { "_id": 5, "v": [1, 2_000_000_i64] },
            doc! { "_id": 6, "v": Bson::Undefined },
            doc! { "_id": 7, "v": 8 },
        ],
    );
    let mut values: Vec<Bson> = (0..200_000)
        .map(|n| Bson::Double(f64::from(n) * 10.0 + 0.25))
        .collect();
    values.extend([
        Bson::Int64(7),
        Bson::Double(2_000_000.0),
        Bson::String("seven".into()),
    ]);
    let ids = |values: Vec<Bson>| -> Vec<i32> {
        find(&store, "c", doc! { "v": { "$in": values } })
            .iter()
            .map(|document| document.get_i32("_id").unwrap())
            .collect()
    };
    assert_eq!(ids(values.clone()), vec![1, 3, 5]);
    values.push(Bson::Null);
    assert_eq!(ids(values.clone()), vec![1, 3, 4, 5, 6]);
    let not_in = find(&store, "c", doc! { "v": { "$nin": values } });
    assert_eq!(not_in.len(), 2, "7.5 and 8 are not in the list");
}

/// `{not: {not: ... {}}}` with `levels` schemas below the top one.
fn nested_not_schema(levels: usize) -> bson::Document {
    let mut schema = bson::doc! {};
    for _ in 0..levels {
        schema = bson::doc! { "not": schema };
    }
    schema
}

/// `{anyOf: [{anyOf: [...]}, {required: ["missing"]}]}` `levels` deep: every level fails, so
/// a check that evaluated a level's branches twice would take 2^levels steps.
fn nested_any_of_schema(levels: usize) -> bson::Document {
    let mut schema = bson::doc! { "required": ["missing"] };
    for _ in 0..levels {
        schema = bson::doc! { "anyOf": [schema, { "required": ["missing"] }] };
    }
    schema
}

#[test]
fn a_deeply_nested_json_schema_is_answered_with_an_error_or_a_result_in_bounded_time() {
    let store = super::new_store();
    super::insert(&store, "c", vec![bson::doc! { "_id": 1 }]);
    let too_deep = nested_not_schema(crate::json_schema::MAX_SCHEMA_DEPTH + 20);
    let reply = super::run(
        &store,
        "db",
        bson::doc! { "find": "c", "filter": { "$jsonSchema": too_deep } },
    );
    assert_eq!(super::error_code(&reply), crate::code::BAD_VALUE, "{reply}");
    // Within the bound, an even number of `not`s is satisfied.
    let deep = nested_not_schema(crate::json_schema::MAX_SCHEMA_DEPTH - 2);
    assert_eq!(
        super::ids(&store, "c", bson::doc! { "$jsonSchema": deep }),
        vec![1]
    );
    // Failing branches at every level, as a query and as a validator with its details.
    let wide = nested_any_of_schema(crate::json_schema::MAX_SCHEMA_DEPTH / 2 - 1);
    assert!(super::ids(&store, "c", bson::doc! { "$jsonSchema": wide.clone() }).is_empty());
    super::run_ok(
        &store,
        "db",
        bson::doc! { "collMod": "c", "validator": { "$jsonSchema": wide } },
    );
    let refused = super::run_ok(
        &store,
        "db",
        bson::doc! { "insert": "c", "documents": [{ "_id": 2 }] },
    );
    assert!(refused.contains_key("writeErrors"), "{refused}");
}

#[test]
fn decimal_arithmetic_on_huge_and_extreme_values_stays_bounded() {
    let store = new_store();
    // A million digits round to 34 at once; the largest decimal times ten overflows to
    // Infinity, as IEEE 754 decimal arithmetic (and mongod) answers.
    let digits = format!("0.{}", "9".repeat(1_000_000));
    insert(&store, "c", vec![doc! { "_id": 1, "digits": digits }]);
    let reply = aggregate(
        &store,
        vec![doc! { "$project": {
            "_id": 0,
            "rounded": { "$toDecimal": "$digits" },
            "overflow": { "$multiply": [
                Bson::Decimal128("9.999999999999999999999999999999999E+6144".parse().unwrap()),
                10,
            ] },
        } }],
    );
    let batch = super::batch(&reply);
    assert_eq!(
        batch[0].get("rounded"),
        Some(&Bson::Decimal128(
            "1.000000000000000000000000000000000".parse().unwrap()
        ))
    );
    assert_eq!(
        batch[0].get("overflow"),
        Some(&Bson::Decimal128("Infinity".parse().unwrap()))
    );
}

/// A regular expression a backtracking engine takes exponential time over (`(a|aa)*b` against
/// a long run of `a`s) is answered by the linear engine, and one whose compiled form would take
/// gigabytes (`((a{100}){100}){100}` nested further) is refused with mongod's 51091 before any
/// memory goes to it.
#[test]
fn pathological_regular_expressions_are_answered_or_refused_in_bounded_time_and_memory() {
    let store = new_store();
    let run_of_a = "a".repeat(100_000);
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "s": &run_of_a },
            doc! { "_id": 2, "s": format!("{run_of_a}b") },
        ],
    );
    for pattern in [
        "^(a|aa)*b$",
        "^(a+)+b$",
        "(x+x+)+y",
        "^(([a-z])+.)+[A-Z]([a-z])+$",
    ] {
        let found = find(&store, "c", doc! { "s": { "$regex": pattern } });
        let ids: Vec<i32> = found
            .iter()
            .filter_map(|doc| doc.get_i32("_id").ok())
            .collect();
        let expected: Vec<i32> = if pattern.ends_with("b$") {
            vec![2]
        } else {
            vec![]
        };
        assert_eq!(ids, expected, "{pattern}");
    }
    // Every empty match is listed (100,001 of them); the result is bounded by the 16 MiB rule.
    let reply = run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$match": { "_id": 1 } }, { "$project": { "all": { "$regexFindAll": { "input": "$s", "regex": "" } } } }], "cursor": {} },
    );
    let first = super::batch(&reply).remove(0);
    assert_eq!(first.get_array("all").map(Vec::len).ok(), Some(100_001));
    let bomb = "((((a{100}){100}){100}){100})";
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "s": { "$regex": bomb } } },
    );
    assert_eq!(error_code(&reply), 51091);
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "s": { "$regex": "a".repeat(40_000) } } },
    );
    assert_eq!(error_code(&reply), 51091);
    // Many patterns in one filter share one memory budget: past it, 51091 again.
    let many: Vec<Bson> = (0..5_000)
        .map(|n| {
            Bson::RegularExpression(bson::Regex {
                pattern: format!("^x{n}y").try_into().expect("no NUL"),
                options: String::new().try_into().expect("no NUL"),
            })
        })
        .collect();
    let reply = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "s": { "$in": many } } },
    );
    assert_eq!(error_code(&reply), 51091);
}

#[test]
fn a_huge_collation_request_is_answered_with_an_error_or_a_result_in_bounded_time() {
    let store = new_store();
    let long = "Ab".repeat(512 * 1024);
    insert(&store, "c", vec![doc! { "_id": 1, "s": long.clone() }]);
    let huge_locale = run(
        &store,
        "db",
        doc! { "find": "c", "filter": {}, "collation": { "locale": "x".repeat(8 * 1024 * 1024) } },
    );
    assert_eq!(error_code(&huge_locale), 2);
    let many_fields = run(
        &store,
        "db",
        doc! { "find": "c", "filter": {}, "collation": (0..100_000).map(|i| (format!("f{i}"), Bson::Int32(i))).collect::<bson::Document>() },
    );
    assert_eq!(error_code(&many_fields), 40415);
    // A 1 MiB string folded on both sides of the comparison and for the sort.
    let found = run_ok(
        &store,
        "db",
        doc! { "find": "c", "filter": { "s": long.to_lowercase() }, "sort": { "s": 1 },
        "collation": { "locale": "en", "strength": 1 } },
    );
    let batch = found
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .unwrap();
    assert_eq!(batch.len(), 1);
}
