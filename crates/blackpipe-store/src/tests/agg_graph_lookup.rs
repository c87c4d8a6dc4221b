//! `$graphLookup` through the aggregate command: the MongoDB 8.0 manual's examples, depth and
//! null handling, errors with mongod's codes, the memory bound.

use bson::{Bson, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn aggregate(store: &Store, collection: &str, pipeline: Vec<Document>) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    ))
}

fn failure(store: &Store, collection: &str, pipeline: Vec<Document>) -> i32 {
    error_code(&run(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    ))
}

/// The values of `field` in the documents of array `name`, sorted (mongod leaves the order of
/// `$graphLookup`'s output unspecified).
fn sorted(document: &Document, name: &str, field: &str) -> Vec<Bson> {
    let mut values: Vec<Bson> = document
        .get_array(name)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_document()?.get(field).cloned())
                .collect()
        })
        .unwrap_or_default();
    values.sort_by(crate::value_order::compare_values);
    values
}

fn employees(store: &Store) {
    insert(
        store,
        "employees",
        vec![
            doc! { "_id": 1, "name": "Dev" },
            doc! { "_id": 2, "name": "Eliot", "reportsTo": "Dev" },
            doc! { "_id": 3, "name": "Ron", "reportsTo": "Eliot" },
            doc! { "_id": 4, "name": "Andrew", "reportsTo": "Eliot" },
            doc! { "_id": 5, "name": "Asya", "reportsTo": "Ron" },
            doc! { "_id": 6, "name": "Dan", "reportsTo": "Andrew" },
        ],
    );
}

/// The manual's "Within a Single Collection".
#[test]
fn manual_reporting_hierarchy() {
    let store = new_store();
    employees(&store);
    let output = aggregate(
        &store,
        "employees",
        vec![doc! { "$graphLookup": {
            "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
            "connectToField": "name", "as": "reportingHierarchy",
        } }],
    );
    let names: Vec<Vec<Bson>> = output
        .iter()
        .map(|document| sorted(document, "reportingHierarchy", "_id"))
        .collect();
    let ids = |ids: &[i32]| ids.iter().map(|id| Bson::Int32(*id)).collect::<Vec<_>>();
    assert_eq!(
        names,
        vec![
            ids(&[]),
            ids(&[1]),
            ids(&[1, 2]),
            ids(&[1, 2]),
            ids(&[1, 2, 3]),
            ids(&[1, 2, 4]),
        ]
    );
    // The documents found are whole.
    assert_eq!(
        output[1].get_array("reportingHierarchy").ok(),
        Some(&vec![Bson::Document(doc! { "_id": 1, "name": "Dev" })])
    );
}

/// The manual's "Across Multiple Collections" with `maxDepth` and `depthField`.
#[test]
fn manual_airports_with_max_depth_and_depth_field() {
    let store = new_store();
    insert(
        &store,
        "airports",
        vec![
            doc! { "_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"] },
            doc! { "_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"] },
            doc! { "_id": 2, "airport": "ORD", "connects": ["JFK"] },
            doc! { "_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"] },
            doc! { "_id": 4, "airport": "LHR", "connects": ["PWM"] },
        ],
    );
    insert(
        &store,
        "travelers",
        vec![
            doc! { "_id": 1, "name": "Dev", "nearestAirport": "JFK" },
            doc! { "_id": 2, "name": "Eliot", "nearestAirport": "JFK" },
            doc! { "_id": 3, "name": "Jeff", "nearestAirport": "BOS" },
        ],
    );
    let output = aggregate(
        &store,
        "travelers",
        vec![
            doc! { "$graphLookup": {
                "from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
                "connectToField": "airport", "maxDepth": 2, "depthField": "numConnections",
                "as": "destinations",
            } },
            doc! { "$project": { "destinations.connects": 0 } },
        ],
    );
    let depths = |document: &Document| -> Vec<(String, i64)> {
        let mut pairs: Vec<(String, i64)> = document
            .get_array("destinations")
            .map(|items| {
                items
                    .iter()
                    .filter_map(Bson::as_document)
                    .map(|item| {
                        (
                            item.get_str("airport").unwrap_or_default().to_owned(),
                            item.get_i64("numConnections").unwrap_or(-1),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        pairs.sort();
        pairs
    };
    let pairs = |items: &[(&str, i64)]| -> Vec<(String, i64)> {
        items
            .iter()
            .map(|(name, depth)| ((*name).to_owned(), *depth))
            .collect()
    };
    assert_eq!(
        depths(&output[0]),
        pairs(&[("BOS", 1), ("JFK", 0), ("ORD", 1), ("PWM", 2)])
    );
    assert_eq!(depths(&output[0]), depths(&output[1]));
    assert_eq!(
        depths(&output[2]),
        pairs(&[("BOS", 0), ("JFK", 1), ("LHR", 2), ("ORD", 2), ("PWM", 1)])
    );
    // `maxDepth: 0` keeps only what `startWith` matched.
    let shallow = aggregate(
        &store,
        "travelers",
        vec![doc! { "$graphLookup": {
            "from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
            "connectToField": "airport", "maxDepth": 0, "as": "destinations",
        } }],
    );
    assert_eq!(
        sorted(&shallow[2], "destinations", "airport"),
        vec![Bson::from("BOS")]
    );
}

/// The manual's "With a Query Filter" (`restrictSearchWithMatch`).
#[test]
fn manual_restrict_search_with_match() {
    let store = new_store();
    insert(
        &store,
        "people",
        vec![
            doc! { "_id": 1, "name": "Tanya Jordan", "friends": ["Shirley Soto", "Terry Hawkins", "Carole Hale"], "hobbies": ["tennis", "unicycling", "golf"] },
            doc! { "_id": 2, "name": "Carole Hale", "friends": ["Joseph Dennis", "Tanya Jordan", "Terry Hawkins"], "hobbies": ["archery", "golf", "woodworking"] },
            doc! { "_id": 3, "name": "Terry Hawkins", "friends": ["Tanya Jordan", "Carole Hale", "Angelo Ward"], "hobbies": ["knitting", "frisbee"] },
            doc! { "_id": 4, "name": "Joseph Dennis", "friends": ["Angelo Ward", "Carole Hale"], "hobbies": ["tennis", "golf", "topiary"] },
            doc! { "_id": 5, "name": "Angelo Ward", "friends": ["Terry Hawkins", "Shirley Soto", "Joseph Dennis"], "hobbies": ["travel", "ceramics", "golf"] },
            doc! { "_id": 6, "name": "Shirley Soto", "friends": ["Angelo Ward", "Tanya Jordan", "Carole Hale"], "hobbies": ["frisbee", "set theory"] },
        ],
    );
    let output = aggregate(
        &store,
        "people",
        vec![
            doc! { "$match": { "name": "Tanya Jordan" } },
            doc! { "$graphLookup": {
                "from": "people", "startWith": "$friends", "connectFromField": "friends",
                "connectToField": "name", "as": "golfers",
                "restrictSearchWithMatch": { "hobbies": "golf" },
            } },
            doc! { "$project": { "name": 1, "golfers": { "name": 1 } } },
        ],
    );
    assert_eq!(output.len(), 1);
    assert_eq!(
        sorted(&output[0], "golfers", "name"),
        [
            "Angelo Ward",
            "Carole Hale",
            "Joseph Dennis",
            "Tanya Jordan"
        ]
        .map(Bson::from)
        .to_vec()
    );
}

#[test]
fn null_and_missing_start_values() {
    let store = new_store();
    insert(
        &store,
        "nodes",
        vec![
            doc! { "_id": 1, "to": null },
            doc! { "_id": 2 },
            doc! { "_id": 3, "to": "x" },
        ],
    );
    insert(
        &store,
        "start",
        vec![doc! { "_id": "null", "s": null }, doc! { "_id": "missing" }],
    );
    let output = aggregate(
        &store,
        "start",
        vec![doc! { "$graphLookup": {
            "from": "nodes", "startWith": "$s", "connectFromField": "from",
            "connectToField": "to", "as": "found",
        } }],
    );
    // null finds an explicit null, never a missing field; a missing start finds nothing.
    assert_eq!(sorted(&output[0], "found", "_id"), vec![Bson::Int32(1)]);
    assert_eq!(sorted(&output[1], "found", "_id"), Vec::<Bson>::new());
}

#[test]
fn a_cycle_ends_and_reads_the_collection_the_command_sees() {
    let store = new_store();
    insert(
        &store,
        "ring",
        vec![
            doc! { "_id": 1, "next": 2 },
            doc! { "_id": 2, "next": 3 },
            doc! { "_id": 3, "next": 1 },
        ],
    );
    let output = aggregate(
        &store,
        "ring",
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$graphLookup": {
                "from": "ring", "startWith": "$next", "connectFromField": "next",
                "connectToField": "_id", "as": "loop", "depthField": "d.depth",
            } },
        ],
    );
    let found = output[0].get_array("loop").cloned().unwrap_or_default();
    assert_eq!(found.len(), 3);
    assert_eq!(
        found[0]
            .as_document()
            .and_then(|first| first.get_document("d").ok()),
        Some(&doc! { "depth": 0_i64 })
    );
}

#[test]
fn malformed_graph_lookups_get_mongod_errors() {
    let store = new_store();
    let base = doc! {
        "from": "c", "startWith": "$x", "connectFromField": "a", "connectToField": "b", "as": "o",
    };
    let with = |key: &str, value: Bson| {
        let mut spec = base.clone();
        spec.insert(key, value);
        spec
    };
    let without = |key: &str| {
        let mut spec = base.clone();
        spec.remove(key);
        spec
    };
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 9),
        (without("from").into(), 9),
        (with("from", Bson::Int32(1)).into(), 9),
        (with("from", Bson::from("")).into(), 73),
        (without("as").into(), 40105),
        (without("startWith").into(), 40105),
        (without("connectToField").into(), 40105),
        (with("as", Bson::Int32(1)).into(), 40103),
        (with("depthField", Bson::Boolean(true)).into(), 40103),
        (with("maxDepth", Bson::from("1")).into(), 40100),
        (with("maxDepth", Bson::Int32(-1)).into(), 40101),
        (with("maxDepth", Bson::Double(1.5)).into(), 40102),
        (
            with("restrictSearchWithMatch", Bson::Int32(1)).into(),
            40185,
        ),
        (
            with(
                "restrictSearchWithMatch",
                doc! { "a": { "$bogus": 1 } }.into(),
            )
            .into(),
            2,
        ),
        (with("bogus", Bson::Int32(1)).into(), 40104),
        (with("as", Bson::from("$o")).into(), 16410),
        (with("startWith", doc! { "$nope": 1 }.into()).into(), 168),
    ];
    for (spec, code) in cases {
        assert_eq!(
            failure(&store, "empty", vec![doc! { "$graphLookup": spec.clone() }]),
            code,
            "{spec}"
        );
    }
    let message = run(
        &store,
        "db",
        doc! {
            "aggregate": "empty", "cursor": {},
            "pipeline": [{ "$graphLookup": with("restrictSearchWithMatch", doc! { "a": { "$bogus": 1 } }.into()) }],
        },
    );
    assert!(
        message.get_str("errmsg").unwrap_or_default().starts_with(
            "Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: caused by :: "
        ),
        "{message}"
    );
}

#[test]
fn a_search_holding_too_much_is_stopped() {
    let store = new_store();
    // 30 documents of 4 MiB all linked together: 120 MiB found from one start.
    let big = "x".repeat(4 * 1024 * 1024);
    for id in 0..30 {
        insert(
            &store,
            "heavy",
            vec![doc! { "_id": id, "group": 1, "big": big.clone() }],
        );
    }
    insert(&store, "start", vec![doc! { "_id": 1, "group": 1 }]);
    let code = failure(
        &store,
        "start",
        vec![doc! { "$graphLookup": {
            "from": "heavy", "startWith": "$group", "connectFromField": "group",
            "connectToField": "group", "as": "all",
        } }],
    );
    assert_eq!(code, 40099);
}
