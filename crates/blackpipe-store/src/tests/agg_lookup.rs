//! `$lookup` through the aggregate command: the MongoDB 8.0 manual's examples answered as
//! mongod answers them, the forms' edge cases, errors with mongod's codes, transactions,
//! snapshot reads, views, nesting bounds.

use bson::{Bson, DateTime, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn aggregate(store: &Store, collection: &str, pipeline: Vec<Document>) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    ))
}

fn failure(store: &Store, collection: &str, pipeline: Vec<Document>) -> (i32, String) {
    let reply = run(
        store,
        "db",
        doc! { "aggregate": collection, "pipeline": pipeline, "cursor": {} },
    );
    let code = error_code(&reply);
    (code, reply.get_str("errmsg").unwrap_or_default().to_owned())
}

fn date(text: &str) -> DateTime {
    DateTime::parse_rfc3339_str(text).unwrap_or_else(|_| panic!("bad date {text}"))
}

/// The manual's "Perform a Single Equality Join with $lookup".
#[test]
fn manual_single_equality_join() {
    let store = new_store();
    insert(
        &store,
        "orders",
        vec![
            doc! { "_id": 1, "item": "almonds", "price": 12, "quantity": 2 },
            doc! { "_id": 2, "item": "pecans", "price": 20, "quantity": 1 },
            doc! { "_id": 3 },
        ],
    );
    insert(
        &store,
        "inventory",
        vec![
            doc! { "_id": 1, "sku": "almonds", "description": "product 1", "instock": 120 },
            doc! { "_id": 2, "sku": "bread", "description": "product 2", "instock": 80 },
            doc! { "_id": 3, "sku": "cashews", "description": "product 3", "instock": 60 },
            doc! { "_id": 4, "sku": "pecans", "description": "product 4", "instock": 70 },
            doc! { "_id": 5, "sku": null, "description": "Incomplete" },
            doc! { "_id": 6 },
        ],
    );
    let output = aggregate(
        &store,
        "orders",
        vec![doc! { "$lookup": {
            "from": "inventory", "localField": "item", "foreignField": "sku", "as": "inventory_docs",
        } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "item": "almonds", "price": 12, "quantity": 2, "inventory_docs": [
                { "_id": 1, "sku": "almonds", "description": "product 1", "instock": 120 },
            ] },
            doc! { "_id": 2, "item": "pecans", "price": 20, "quantity": 1, "inventory_docs": [
                { "_id": 4, "sku": "pecans", "description": "product 4", "instock": 70 },
            ] },
            // A missing local field joins with null and missing foreign fields.
            doc! { "_id": 3, "inventory_docs": [
                { "_id": 5, "sku": null, "description": "Incomplete" },
                { "_id": 6 },
            ] },
        ]
    );
}

/// The manual's "Use $lookup with an Array".
#[test]
fn manual_join_with_an_array() {
    let store = new_store();
    insert(
        &store,
        "classes",
        vec![
            doc! { "_id": 1, "title": "Reading is ...", "enrollmentlist": ["giraffe2", "pandabear", "artie"], "days": ["M", "W", "F"] },
            doc! { "_id": 2, "title": "But Writing ...", "enrollmentlist": ["giraffe1", "artie"], "days": ["T", "F"] },
        ],
    );
    let names = [
        "artie",
        "giraffe",
        "giraffe1",
        "panda",
        "pandabear",
        "giraffe2",
    ];
    let members: Vec<Document> = names
        .iter()
        .zip(1..)
        .map(|(name, id)| doc! { "_id": id, "name": *name, "status": if id % 2 == 0 { "D" } else { "A" } })
        .collect();
    insert(&store, "members", members.clone());
    let output = aggregate(
        &store,
        "classes",
        vec![
            doc! { "$lookup": {
                "from": "members", "localField": "enrollmentlist", "foreignField": "name", "as": "enrollee_info",
            } },
            doc! { "$project": { "enrollee_info._id": 1 } },
        ],
    );
    // Each class gets the members named in its list, in the members' natural order.
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "enrollee_info": [{ "_id": 1 }, { "_id": 5 }, { "_id": 6 }] },
            doc! { "_id": 2, "enrollee_info": [{ "_id": 1 }, { "_id": 3 }] },
        ]
    );
}

/// The manual's "Use $lookup with $mergeObjects".
#[test]
fn manual_merge_objects_into_the_root() {
    let store = new_store();
    insert(
        &store,
        "orders",
        vec![
            doc! { "_id": 1, "item": "almonds", "price": 12, "quantity": 2 },
            doc! { "_id": 2, "item": "pecans", "price": 20, "quantity": 1 },
        ],
    );
    insert(
        &store,
        "items",
        vec![
            doc! { "_id": 1, "item": "almonds", "description": "almond clusters", "instock": 120 },
            doc! { "_id": 2, "item": "bread", "description": "raisin and nut bread", "instock": 80 },
            doc! { "_id": 3, "item": "pecans", "description": "candied pecans", "instock": 60 },
        ],
    );
    let output = aggregate(
        &store,
        "orders",
        vec![
            doc! { "$lookup": { "from": "items", "localField": "item", "foreignField": "item", "as": "fromItems" } },
            doc! { "$replaceRoot": { "newRoot": { "$mergeObjects": [{ "$arrayElemAt": ["$fromItems", 0] }, "$$ROOT"] } } },
            doc! { "$project": { "fromItems": 0 } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "item": "almonds", "description": "almond clusters", "instock": 120, "price": 12, "quantity": 2 },
            doc! { "_id": 2, "item": "pecans", "description": "candied pecans", "instock": 60, "price": 20, "quantity": 1 },
        ]
    );
}

fn warehouses(store: &Store) {
    insert(
        store,
        "orders",
        vec![
            doc! { "_id": 1, "item": "almonds", "price": 12, "ordered": 2 },
            doc! { "_id": 2, "item": "pecans", "price": 20, "ordered": 1 },
            doc! { "_id": 3, "item": "cookies", "price": 10, "ordered": 60 },
        ],
    );
    insert(
        store,
        "warehouses",
        vec![
            doc! { "_id": 1, "stock_item": "almonds", "warehouse": "A", "instock": 120 },
            doc! { "_id": 2, "stock_item": "pecans", "warehouse": "A", "instock": 80 },
            doc! { "_id": 3, "stock_item": "almonds", "warehouse": "B", "instock": 60 },
            doc! { "_id": 4, "stock_item": "cookies", "warehouse": "B", "instock": 40 },
            doc! { "_id": 5, "stock_item": "cookies", "warehouse": "A", "instock": 80 },
        ],
    );
}

/// The manual's "Perform Multiple Joins and a Correlated Subquery with $lookup".
#[test]
fn manual_let_variables_in_a_correlated_subquery() {
    let store = new_store();
    warehouses(&store);
    let output = aggregate(
        &store,
        "orders",
        vec![doc! { "$lookup": {
            "from": "warehouses",
            "let": { "order_item": "$item", "order_qty": "$ordered" },
            "pipeline": [
                { "$match": { "$expr": { "$and": [
                    { "$eq": ["$stock_item", "$$order_item"] },
                    { "$gte": ["$instock", "$$order_qty"] },
                ] } } },
                { "$project": { "stock_item": 0, "_id": 0 } },
            ],
            "as": "stockdata",
        } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "item": "almonds", "price": 12, "ordered": 2, "stockdata": [
                { "warehouse": "A", "instock": 120 }, { "warehouse": "B", "instock": 60 },
            ] },
            doc! { "_id": 2, "item": "pecans", "price": 20, "ordered": 1, "stockdata": [
                { "warehouse": "A", "instock": 80 },
            ] },
            doc! { "_id": 3, "item": "cookies", "price": 10, "ordered": 60, "stockdata": [
                { "warehouse": "A", "instock": 80 },
            ] },
        ]
    );
}

/// The manual's "Perform an Uncorrelated Subquery with $lookup".
#[test]
fn manual_uncorrelated_subquery() {
    let store = new_store();
    insert(
        &store,
        "absences",
        vec![
            doc! { "_id": 1, "student": "Ann Aardvark", "sickdays": [date("2018-05-01T00:00:00Z"), date("2018-08-23T00:00:00Z")] },
            doc! { "_id": 2, "student": "Zoe Zebra", "sickdays": [date("2018-02-01T00:00:00Z"), date("2018-05-23T00:00:00Z")] },
        ],
    );
    insert(
        &store,
        "holidays",
        vec![
            doc! { "_id": 1, "year": 2018, "name": "New Years", "date": date("2018-01-01T00:00:00Z") },
            doc! { "_id": 2, "year": 2018, "name": "Pi Day", "date": date("2018-03-14T00:00:00Z") },
            doc! { "_id": 3, "year": 2018, "name": "Ice Cream Day", "date": date("2018-07-15T00:00:00Z") },
            doc! { "_id": 4, "year": 2017, "name": "New Years", "date": date("2017-01-01T00:00:00Z") },
            doc! { "_id": 5, "year": 2017, "name": "Ice Cream Day", "date": date("2017-07-16T00:00:00Z") },
        ],
    );
    let output = aggregate(
        &store,
        "absences",
        vec![
            doc! { "$lookup": {
                "from": "holidays",
                "pipeline": [
                    { "$match": { "year": 2018 } },
                    { "$project": { "_id": 0, "date": { "name": "$name", "date": "$date" } } },
                    { "$replaceRoot": { "newRoot": "$date" } },
                ],
                "as": "holidays",
            } },
            doc! { "$project": { "sickdays": 0 } },
        ],
    );
    let holidays = vec![
        doc! { "name": "New Years", "date": date("2018-01-01T00:00:00Z") },
        doc! { "name": "Pi Day", "date": date("2018-03-14T00:00:00Z") },
        doc! { "name": "Ice Cream Day", "date": date("2018-07-15T00:00:00Z") },
    ];
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "student": "Ann Aardvark", "holidays": holidays.clone() },
            doc! { "_id": 2, "student": "Zoe Zebra", "holidays": holidays },
        ]
    );
}

/// The manual's "Perform a Concise Correlated Subquery with $lookup" (5.0): equality and
/// pipeline together.
#[test]
fn manual_concise_correlated_subquery() {
    let store = new_store();
    insert(
        &store,
        "restaurants",
        vec![
            doc! { "_id": 1, "name": "American Steak House", "food": ["filet", "sirloin"], "beverages": ["beer", "wine"] },
            doc! { "_id": 2, "name": "Honest John Pizza", "food": ["cheese pizza", "pepperoni pizza"], "beverages": ["soda"] },
        ],
    );
    insert(
        &store,
        "orders",
        vec![
            doc! { "_id": 1, "item": "filet", "restaurant_name": "American Steak House" },
            doc! { "_id": 2, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "lemonade" },
            doc! { "_id": 3, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "soda" },
        ],
    );
    let output = aggregate(
        &store,
        "orders",
        vec![doc! { "$lookup": {
            "from": "restaurants",
            "localField": "restaurant_name",
            "foreignField": "name",
            "let": { "orders_drink": "$drink" },
            "pipeline": [{ "$match": { "$expr": { "$in": ["$$orders_drink", "$beverages"] } } }],
            "as": "matches",
        } }],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "item": "filet", "restaurant_name": "American Steak House", "matches": [] },
            doc! { "_id": 2, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "lemonade", "matches": [] },
            doc! { "_id": 3, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "soda", "matches": [
                { "_id": 2, "name": "Honest John Pizza", "food": ["cheese pizza", "pepperoni pizza"], "beverages": ["soda"] },
            ] },
        ]
    );
}

/// The manual's `$documents` example: a `$lookup` joining with documents of its pipeline.
#[test]
fn manual_lookup_on_documents() {
    let store = new_store();
    insert(
        &store,
        "locations",
        vec![
            doc! { "_id": 1, "zip": 94301, "name": "Palo Alto" },
            doc! { "_id": 2, "zip": 10019, "name": "New York" },
        ],
    );
    let output = aggregate(
        &store,
        "locations",
        vec![
            doc! { "$match": {} },
            doc! { "$lookup": {
                "localField": "zip", "foreignField": "zip_id", "as": "city_state",
                "pipeline": [{ "$documents": [
                    { "zip_id": 94301, "name": "Palo Alto, CA" },
                    { "zip_id": 10019, "name": "New York, NY" },
                ] }],
            } },
        ],
    );
    assert_eq!(
        output,
        vec![
            doc! { "_id": 1, "zip": 94301, "name": "Palo Alto", "city_state": [{ "zip_id": 94301, "name": "Palo Alto, CA" }] },
            doc! { "_id": 2, "zip": 10019, "name": "New York", "city_state": [{ "zip_id": 10019, "name": "New York, NY" }] },
        ]
    );
}

#[test]
fn equality_matches_like_a_query() {
    let store = new_store();
    insert(
        &store,
        "local",
        vec![
            doc! { "_id": 1, "k": 1 },
            doc! { "_id": 2, "k": [2, 3] },
            doc! { "_id": 3, "k": [] },
            doc! { "_id": 4, "k": { "$regularExpression": { "pattern": "^a", "options": "" } } },
            doc! { "_id": 5, "a": [{ "b": 1 }, { "b": 3 }] },
        ],
    );
    insert(
        &store,
        "foreign",
        vec![
            doc! { "_id": 10, "f": 1.0 },
            doc! { "_id": 11, "f": [3, 9] },
            doc! { "_id": 12, "f": null },
            doc! { "_id": 13, "f": "abc" },
            doc! { "_id": 14, "f": { "$regularExpression": { "pattern": "^a", "options": "" } } },
            doc! { "_id": 15, "g": 1 },
        ],
    );
    let ids = |local: &str| -> Vec<Vec<i32>> {
        aggregate(
            &store,
            "local",
            vec![
                doc! { "$lookup": { "from": "foreign", "localField": local, "foreignField": "f", "as": "m" } },
                doc! { "$project": { "m": "$m._id" } },
            ],
        )
        .iter()
        .map(|document| {
            document
                .get_array("m")
                .map(|ids| ids.iter().filter_map(Bson::as_i32).collect())
                .unwrap_or_default()
        })
        .collect()
    };
    assert_eq!(
        ids("k"),
        vec![
            // 1 equals 1.0 across numeric types.
            vec![10],
            // An array joins element by element, on either side.
            vec![11],
            // An empty array joins like a missing field: with null and missing.
            vec![12, 15],
            // A regular expression matches only an equal regular expression.
            vec![14],
            vec![12, 15],
        ]
    );
    // Array elements along the local path are each joined.
    assert_eq!(ids("a.b")[4], vec![10, 11]);
}

#[test]
fn the_join_uses_the_command_collation_and_a_missing_collection_is_empty() {
    let store = new_store();
    insert(&store, "l", vec![doc! { "_id": 1, "k": "ABC" }]);
    insert(&store, "f", vec![doc! { "_id": 1, "k": "abc" }]);
    let lookup =
        doc! { "$lookup": { "from": "f", "localField": "k", "foreignField": "k", "as": "m" } };
    assert_eq!(
        aggregate(&store, "l", vec![lookup.clone()])[0]
            .get_array("m")
            .map(Vec::len)
            .ok(),
        Some(0)
    );
    let insensitive = batch(&run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "l", "pipeline": [lookup], "cursor": {},
            "collation": { "locale": "en", "strength": 2 },
        },
    ));
    assert_eq!(insensitive[0].get_array("m").map(Vec::len).ok(), Some(1));
    let missing = aggregate(
        &store,
        "l",
        vec![
            doc! { "$lookup": { "from": "nothing", "localField": "k", "foreignField": "k", "as": "m" } },
        ],
    );
    assert_eq!(missing, vec![doc! { "_id": 1, "k": "ABC", "m": [] }]);
}

#[test]
fn as_is_a_dotted_path_and_let_variables_reach_nested_lookups() {
    let store = new_store();
    warehouses(&store);
    let output = aggregate(
        &store,
        "orders",
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$lookup": {
                "from": "warehouses",
                "let": { "wanted": "$item", "unknown": "$nothing" },
                "pipeline": [
                    { "$match": { "$expr": { "$eq": ["$stock_item", "$$wanted"] } } },
                    // A `$literal` holds no reference; a variable bound to a missing value is
                    // missing.
                    { "$set": { "literal": { "$literal": "$$wanted" }, "missing": "$$unknown" } },
                    { "$lookup": {
                        "from": "orders",
                        "let": { "house": "$warehouse" },
                        "pipeline": [
                            { "$match": { "$expr": { "$eq": ["$item", "$$wanted"] } } },
                            { "$project": { "_id": 0, "seen": { "$concat": ["$$wanted", "@", "$$house"] } } },
                        ],
                        "as": "inner",
                    } },
                    { "$project": { "_id": 1, "inner": 1, "literal": 1, "missing": 1 } },
                ],
                "as": "deep.result",
            } },
            doc! { "$project": { "deep": 1 } },
        ],
    );
    assert_eq!(
        output,
        vec![doc! { "_id": 1, "deep": { "result": [
            { "_id": 1, "literal": "$$wanted", "inner": [{ "seen": "almonds@A" }] },
            { "_id": 3, "literal": "$$wanted", "inner": [{ "seen": "almonds@B" }] },
        ] } }]
    );
}

#[test]
fn command_let_reaches_sub_pipelines_and_lookup_let_shadows_it() {
    let store = new_store();
    warehouses(&store);
    let reply = run_ok(
        &store,
        "db",
        doc! {
            "aggregate": "orders",
            "pipeline": [
                { "$match": { "_id": 2 } },
                { "$lookup": {
                    "from": "warehouses",
                    "let": { "house": "B" },
                    "pipeline": [
                        { "$match": { "$expr": { "$and": [
                            { "$eq": ["$warehouse", "$$house"] },
                            { "$gte": ["$instock", "$$least"] },
                        ] } } },
                        { "$project": { "_id": 1 } },
                    ],
                    "as": "m",
                } },
                { "$project": { "m": 1 } },
            ],
            "let": { "house": "A", "least": 50 },
            "cursor": {},
        },
    );
    assert_eq!(batch(&reply), vec![doc! { "_id": 2, "m": [{ "_id": 3 }] }]);
}

#[test]
fn malformed_lookups_get_mongod_errors() {
    let store = new_store();
    insert(&store, "l", vec![doc! { "_id": 1 }]);
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::String("string".into()), 9),
        (doc! { "foreignField": "b", "from": "f", "as": "x" }.into(), 9),
        (doc! { "localField": "a", "from": "f", "as": "x" }.into(), 9),
        (doc! { "localField": "a", "foreignField": "b", "from": "f" }.into(), 9),
        (doc! { "localField": 1, "foreignField": "b", "from": "f", "as": "x" }.into(), 9),
        (doc! { "localField": "a", "foreignField": "b", "from": 1, "as": "x" }.into(), 9),
        (doc! { "localField": "a", "foreignField": "b", "from": "f", "as": 1 }.into(), 9),
        (doc! { "localField": "a", "foreignField": "b", "from": "", "as": "x" }.into(), 73),
        (doc! { "let": { "a": "$b" }, "localField": "a", "foreignField": "b", "from": "f", "as": "x" }.into(), 9),
        (doc! { "pipeline": [], "localField": "a", "from": "f", "as": "x" }.into(), 9),
        (doc! { "pipeline": 1, "from": "f", "as": "x" }.into(), 14),
        (doc! { "pipeline": [1], "from": "f", "as": "x" }.into(), 14),
        (doc! { "let": 1, "pipeline": [], "from": "f", "as": "x" }.into(), 9),
        (doc! { "pipeline": [], "from": "f", "as": "x", "bogus": 1 }.into(), 9),
        (doc! { "pipeline": [], "as": "x" }.into(), 9),
        (doc! { "as": "x" }.into(), 9),
        (doc! { "let": { "Bad": 1 }, "pipeline": [], "from": "f", "as": "x" }.into(), 9),
        (doc! { "pipeline": [], "from": "f", "as": "$x" }.into(), 16410),
        (doc! { "pipeline": [], "from": "f", "as": "a..b" }.into(), 15998),
        (doc! { "pipeline": [{ "$out": "o" }], "from": "f", "as": "x" }.into(), 51047),
        (doc! { "pipeline": [{ "$merge": "o" }], "from": "f", "as": "x" }.into(), 51047),
        (doc! { "pipeline": [{ "$match": { "$expr": "$$nope" } }], "from": "f", "as": "x" }.into(), 17276),
        (doc! { "pipeline": [{ "$limit": 1 }, { "$documents": [] }], "from": "f", "as": "x" }.into(), 40602),
        (doc! { "pipeline": [{ "$bogus": 1 }], "from": "f", "as": "x" }.into(), 40324),
    ];
    for (spec, code) in cases {
        let pipeline = vec![doc! { "$lookup": spec.clone() }];
        // Parse errors come whatever the input: the collection of the aggregate is empty.
        assert_eq!(failure(&store, "empty", pipeline).0, code, "{spec}");
    }
    let (_, message) = failure(
        &store,
        "l",
        vec![doc! { "$lookup": { "pipeline": [{ "$out": "o" }], "from": "f", "as": "x" } }],
    );
    assert_eq!(
        message,
        "$out is not allowed within a $lookup's sub-pipeline"
    );
    // In an update pipeline, a `$lookup` is refused as mongod refuses it.
    let update = run(
        &store,
        "db",
        doc! { "update": "l", "updates": [{ "q": {}, "u": [{ "$lookup": { "from": "f", "pipeline": [], "as": "x" } }] }] },
    );
    let code = update
        .get_array("writeErrors")
        .ok()
        .and_then(|errors| errors.first())
        .and_then(Bson::as_document)
        .map_or_else(
            || error_code(&update),
            |error| error.get_i32("code").unwrap_or(0),
        );
    assert_eq!(code, 72, "{update}");
}
