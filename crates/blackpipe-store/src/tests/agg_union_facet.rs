//! `$unionWith`, `$facet` and `$documents` through the aggregate command: the MongoDB 8.0
//! manual's examples, errors with mongod's codes, size bounds.

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

fn failure(store: &Store, collection: Bson, pipeline: Vec<Document>) -> (i32, String) {
    let reply = run(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    );
    let code = error_code(&reply);
    (code, reply.get_str("errmsg").unwrap_or_default().to_owned())
}

fn suppliers_and_warehouses(store: &Store) {
    insert(
        store,
        "suppliers",
        vec![
            doc! { "_id": 1, "supplier": "Aardvark and Sons", "state": "Texas" },
            doc! { "_id": 2, "supplier": "Bears Run Amok.", "state": "Colorado" },
            doc! { "_id": 3, "supplier": "Squid Mark Inc. ", "state": "Rhode Island" },
        ],
    );
    insert(
        store,
        "warehouses",
        vec![
            doc! { "_id": 1, "warehouse": "A", "region": "West", "state": "California" },
            doc! { "_id": 2, "warehouse": "B", "region": "Central", "state": "Colorado" },
            doc! { "_id": 3, "warehouse": "C", "region": "East", "state": "Florida" },
        ],
    );
}

/// The manual's "Report 1: All States with Suppliers and Warehouses" (`$unionWith`).
#[test]
fn manual_union_of_suppliers_and_warehouses() {
    let store = new_store();
    suppliers_and_warehouses(&store);
    let output = aggregate(
        &store,
        "suppliers",
        vec![
            doc! { "$project": { "state": 1, "_id": 0 } },
            doc! { "$unionWith": { "coll": "warehouses", "pipeline": [{ "$project": { "state": 1, "_id": 0 } }] } },
        ],
    );
    let states: Vec<&str> = output
        .iter()
        .filter_map(|document| document.get_str("state").ok())
        .collect();
    assert_eq!(
        states,
        [
            "Texas",
            "Colorado",
            "Rhode Island",
            "California",
            "Colorado",
            "Florida"
        ]
    );
    // "Report 2: Unique States": the union grouped.
    let unique = aggregate(
        &store,
        "suppliers",
        vec![
            doc! { "$project": { "state": 1, "_id": 0 } },
            doc! { "$unionWith": { "coll": "warehouses", "pipeline": [{ "$project": { "state": 1, "_id": 0 } }] } },
            doc! { "$group": { "_id": "$state" } },
            doc! { "$sort": { "_id": 1 } },
        ],
    );
    assert_eq!(unique.len(), 5);
    assert_eq!(unique[0], doc! { "_id": "California" });
}

#[test]
fn union_with_a_name_a_missing_collection_and_documents() {
    let store = new_store();
    suppliers_and_warehouses(&store);
    let by_name = aggregate(
        &store,
        "suppliers",
        vec![doc! { "$unionWith": "warehouses" }],
    );
    assert_eq!(by_name.len(), 6);
    assert_eq!(by_name[3].get_str("warehouse").ok(), Some("A"));
    let missing = aggregate(&store, "suppliers", vec![doc! { "$unionWith": "nothing" }]);
    assert_eq!(missing.len(), 3);
    // A view runs its pipeline first.
    run_ok(
        &store,
        "db",
        doc! { "create": "west", "viewOn": "warehouses", "pipeline": [{ "$match": { "region": "West" } }] },
    );
    let through_view = aggregate(
        &store,
        "suppliers",
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$unionWith": { "coll": "west", "pipeline": [{ "$project": { "warehouse": 1 } }] } },
        ],
    );
    assert_eq!(through_view.len(), 2);
    assert_eq!(through_view[1], doc! { "_id": 1, "warehouse": "A" });
    let documents = aggregate(
        &store,
        "suppliers",
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$project": { "_id": 1 } },
            doc! { "$unionWith": { "pipeline": [{ "$documents": [{ "_id": 9 }] }] } },
        ],
    );
    assert_eq!(documents, vec![doc! { "_id": 1 }, doc! { "_id": 9 }]);
}

#[test]
fn malformed_union_with_gets_mongod_errors() {
    let store = new_store();
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 9),
        (doc! { "coll": 1 }.into(), 14),
        (doc! { "coll": "c", "pipeline": 1 }.into(), 14),
        (doc! { "coll": "c", "pipeline": [1] }.into(), 14),
        (doc! { "coll": "c", "bogus": 1 }.into(), 40415),
        (doc! { "pipeline": [] }.into(), 9),
        (doc! { "pipeline": [{ "$match": {} }] }.into(), 9),
        (
            doc! { "coll": "c", "pipeline": [{ "$out": "o" }] }.into(),
            31441,
        ),
    ];
    for (spec, code) in cases {
        let (got, _) = failure(
            &store,
            "c".into(),
            vec![doc! { "$unionWith": spec.clone() }],
        );
        assert_eq!(got, code, "{spec}");
    }
}

fn artwork(store: &Store) {
    insert(
        store,
        "artwork",
        vec![
            doc! { "_id": 1, "title": "The Pillars of Society", "artist": "Grosz", "year": 1926, "price": 199.99, "tags": ["painting", "satire", "Expressionism", "caricature"] },
            doc! { "_id": 2, "title": "Melancholy III", "artist": "Munch", "year": 1902, "price": 280.00, "tags": ["woodcut", "Expressionism"] },
            doc! { "_id": 3, "title": "Dancer", "artist": "Miro", "year": 1925, "price": 76.04, "tags": ["oil", "Surrealism", "painting"] },
            doc! { "_id": 4, "title": "The Great Wave off Kanagawa", "artist": "Hokusai", "price": 167.30, "tags": ["woodblock", "ukiyo-e"] },
            doc! { "_id": 5, "title": "The Persistence of Memory", "artist": "Dali", "year": 1931, "price": 483.00, "tags": ["Surrealism", "painting", "oil"] },
            doc! { "_id": 6, "title": "Composition VII", "artist": "Kandinsky", "year": 1913, "price": 385.00, "tags": ["oil", "painting", "abstract"] },
            doc! { "_id": 7, "title": "The Scream", "artist": "Munch", "year": 1893, "tags": ["Expressionism", "painting", "oil"] },
            doc! { "_id": 8, "title": "Blue Flower", "artist": "O'Keefe", "year": 1918, "price": 118.42, "tags": ["abstract", "painting"] },
        ],
    );
}

/// The manual's `$facet` example, its `categorizedByTags` facet (the others use `$bucket`).
#[test]
fn manual_facet_over_artwork() {
    let store = new_store();
    artwork(&store);
    let output = aggregate(
        &store,
        "artwork",
        vec![doc! { "$facet": {
            "categorizedByTags": [{ "$unwind": "$tags" }, { "$sortByCount": "$tags" }, { "$limit": 3 }],
            "count": [{ "$count": "n" }],
            "munch": [{ "$match": { "artist": "Munch" } }, { "$project": { "_id": 1 } }],
        } }],
    );
    assert_eq!(output.len(), 1);
    let tags = output[0]
        .get_array("categorizedByTags")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        tags[0],
        Bson::Document(doc! { "_id": "painting", "count": 6 })
    );
    assert_eq!(tags[1], Bson::Document(doc! { "_id": "oil", "count": 4 }));
    assert_eq!(
        output[0].get_array("count").ok(),
        Some(&vec![Bson::Document(doc! { "n": 8 })])
    );
    assert_eq!(
        output[0].get_array("munch").ok(),
        Some(&vec![
            Bson::Document(doc! { "_id": 2 }),
            Bson::Document(doc! { "_id": 7 })
        ])
    );
    // No input: one document, every facet empty.
    let empty = aggregate(
        &store,
        "nothing",
        vec![doc! { "$facet": { "a": [{ "$count": "n" }], "b": [{ "$match": {} }] } }],
    );
    assert_eq!(empty, vec![doc! { "a": [], "b": [] }]);
}

#[test]
fn facets_hold_lookups_and_unions() {
    let store = new_store();
    suppliers_and_warehouses(&store);
    let output = aggregate(
        &store,
        "suppliers",
        vec![
            doc! { "$match": { "_id": 2 } },
            doc! { "$facet": {
                "joined": [
                    { "$lookup": { "from": "warehouses", "localField": "state", "foreignField": "state", "as": "w" } },
                    { "$project": { "w": "$w.warehouse" } },
                ],
                "all": [{ "$unionWith": "warehouses" }, { "$count": "n" }],
            } },
        ],
    );
    assert_eq!(
        output,
        vec![doc! { "joined": [{ "_id": 2, "w": ["B"] }], "all": [{ "n": 4 }] }]
    );
}

#[test]
fn malformed_facets_get_mongod_errors() {
    let store = new_store();
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(1), 40169),
        (doc! {}.into(), 40169),
        (doc! { "a": 1 }.into(), 40170),
        (doc! { "a": [1] }.into(), 40171),
        (doc! { "a": [] }.into(), 2),
        (doc! { "$a": [{ "$match": {} }] }.into(), 16410),
        (doc! { "a.b": [{ "$match": {} }] }.into(), 16412),
        (doc! { "a": [{ "$out": "o" }] }.into(), 40600),
        (
            doc! { "a": [{ "$facet": { "b": [{ "$match": {} }] } }] }.into(),
            40600,
        ),
        (doc! { "a": [{ "$documents": [] }] }.into(), 40600),
        (doc! { "a": [{ "$bogus": 1 }] }.into(), 40324),
    ];
    for (spec, code) in cases {
        let (got, _) = failure(&store, "c".into(), vec![doc! { "$facet": spec.clone() }]);
        assert_eq!(got, code, "{spec}");
    }
    let (_, message) = failure(
        &store,
        "c".into(),
        vec![doc! { "$facet": { "a": [{ "$out": "o" }] } }],
    );
    assert_eq!(
        message,
        "$out is not allowed to be used within a $facet stage"
    );
}

#[test]
fn a_facet_output_must_fit_in_a_document() {
    let store = new_store();
    let big = "x".repeat(3 * 1024 * 1024);
    for id in 0..6 {
        insert(&store, "big", vec![doc! { "_id": id, "big": big.clone() }]);
    }
    let (code, _) = failure(
        &store,
        "big".into(),
        vec![doc! { "$facet": { "all": [{ "$match": {} }] } }],
    );
    assert_eq!(code, 10334);
    // Six facets over the same 18 MiB go past mongod's 100 MiB while the output is built.
    let wide: Document = (0..6)
        .map(|facet| {
            (
                format!("f{facet}"),
                Bson::Array(vec![doc! { "$match": {} }.into()]),
            )
        })
        .collect();
    let (code, message) = failure(&store, "big".into(), vec![doc! { "$facet": wide }]);
    assert_eq!(code, 4_031_700, "{message}");
}

/// The manual's `$documents` examples: a collectionless aggregate.
#[test]
fn manual_documents_as_the_source() {
    let store = new_store();
    let output = batch(&run_ok(
        &store,
        "db",
        doc! {
            "aggregate": 1,
            "pipeline": [
                { "$documents": [{ "x": 10 }, { "x": 2 }, { "x": 5 }] },
                { "$sort": { "x": 1 } },
            ],
            "cursor": {},
        },
    ));
    assert_eq!(
        output,
        vec![doc! { "x": 2 }, doc! { "x": 5 }, doc! { "x": 10 }]
    );
    // Any expression giving an array of documents, with the command's variables.
    let computed = batch(&run_ok(
        &store,
        "db",
        doc! {
            "aggregate": 1,
            "pipeline": [{ "$documents": { "$map": { "input": "$$ids", "in": { "_id": "$$this" } } } }],
            "let": { "ids": [1, 2] },
            "cursor": {},
        },
    ));
    assert_eq!(computed, vec![doc! { "_id": 1 }, doc! { "_id": 2 }]);
}

#[test]
fn documents_only_starts_a_collectionless_pipeline() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let (code, message) = failure(&store, "c".into(), vec![doc! { "$documents": [] }]);
    assert_eq!(
        (code, message.as_str()),
        (73, "'$documents' can only be run with {aggregate: 1}")
    );
    let (code, message) = failure(
        &store,
        Bson::Int32(1),
        vec![doc! { "$documents": [] }, doc! { "$documents": [] }],
    );
    assert_eq!(
        (code, message.as_str()),
        (
            40602,
            "$documents is only valid as the first stage in a pipeline"
        )
    );
    let (code, _) = failure(
        &store,
        Bson::Int32(1),
        vec![doc! { "$lookup": { "from": "c", "pipeline": [], "as": "x" } }],
    );
    assert_eq!(code, 73);
    // A collectionless pipeline can read collections through its stages.
    let joined = batch(&run_ok(
        &store,
        "db",
        doc! {
            "aggregate": 1,
            "pipeline": [
                { "$documents": [{ "k": 1 }] },
                { "$lookup": { "from": "c", "localField": "k", "foreignField": "_id", "as": "m" } },
            ],
            "cursor": {},
        },
    ));
    assert_eq!(joined, vec![doc! { "k": 1, "m": [{ "_id": 1 }] }]);
}
