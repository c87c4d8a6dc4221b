//! The set operators, `$mergeObjects`, `$switch` and `$cond`.

use bson::{Bson, Document, bson, doc};

use super::expr_vars::{code, error_in, message, value, value_in};

#[test]
fn set_union_dedups_and_orders_by_value() {
    assert_eq!(
        value(bson!({ "$setUnion": [[3, 1, "a"], [2, 1, 3], []] })),
        bson!([1, 2, 3, "a"])
    );
    // Equal values of different types are one element: the first one seen stays.
    assert_eq!(
        value(bson!({ "$setUnion": [[1.0], [1, Bson::Int64(1)]] })),
        bson!([1.0])
    );
    assert_eq!(value(bson!({ "$setUnion": [] })), bson!([]));
    assert_eq!(value(bson!({ "$setUnion": [[1], null] })), Bson::Null);
    assert_eq!(value(bson!({ "$setUnion": [[1], "$nope"] })), Bson::Null);
    assert_eq!(
        error_in(bson!({ "$setUnion": [[1], 2] }), &Document::new()),
        (
            17043,
            "All operands of $setUnion must be arrays. One argument is of type: int".to_owned()
        )
    );
}

#[test]
fn set_intersection() {
    assert_eq!(
        value(bson!({ "$setIntersection": [[3, 1, 2, 2], [2, 3, 4], [3, 2, 9]] })),
        bson!([2, 3])
    );
    assert_eq!(value(bson!({ "$setIntersection": [[1], [2]] })), bson!([]));
    assert_eq!(value(bson!({ "$setIntersection": [] })), bson!([]));
    assert_eq!(
        value(bson!({ "$setIntersection": [[1], null] })),
        Bson::Null
    );
    // Later arguments are still checked once the intersection is empty.
    assert_eq!(code(bson!({ "$setIntersection": [[1], [2], 3] })), 17047);
}

#[test]
fn set_difference_keeps_the_first_arrays_order() {
    assert_eq!(
        value(bson!({ "$setDifference": [[5, 1, 5, 3, 2], [2]] })),
        bson!([5, 1, 3])
    );
    assert_eq!(value(bson!({ "$setDifference": [[1], null] })), Bson::Null);
    assert_eq!(
        value(bson!({ "$setDifference": ["$nope", [1]] })),
        Bson::Null
    );
    assert_eq!(
        error_in(bson!({ "$setDifference": [1, [1]] }), &Document::new()),
        (
            17048,
            "both operands of $setDifference must be arrays. First argument is of type: int"
                .to_owned()
        )
    );
    assert_eq!(code(bson!({ "$setDifference": [[1], "x"] })), 17049);
    assert_eq!(code(bson!({ "$setDifference": [[1]] })), 16020);
}

#[test]
fn set_equals() {
    assert_eq!(
        value(bson!({ "$setEquals": [[1, 2, 2], [2, 1], [1.0, 2]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        value(bson!({ "$setEquals": [[1, 2], [1]] })),
        Bson::Boolean(false)
    );
    assert_eq!(
        error_in(bson!({ "$setEquals": [[1], null] }), &Document::new()),
        (
            17044,
            "All operands of $setEquals must be arrays. 2-th argument is of type: null".to_owned()
        )
    );
    assert_eq!(
        error_in(bson!({ "$setEquals": [[1]] }), &Document::new()),
        (
            17045,
            "$setEquals needs at least two arguments had: 1".to_owned()
        )
    );
    assert_eq!(code(bson!({ "$setEquals": "$a" })), 17045);
}

#[test]
fn set_is_subset() {
    assert_eq!(
        value(bson!({ "$setIsSubset": [[1, 1, 2], [2, 1, 3]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        value(bson!({ "$setIsSubset": [[], []] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        value(bson!({ "$setIsSubset": [[4], [1]] })),
        Bson::Boolean(false)
    );
    // Null is not an array here.
    assert_eq!(
        message(bson!({ "$setIsSubset": [null, [1]] })),
        "both operands of $setIsSubset must be arrays. First argument is of type: null"
    );
    assert_eq!(code(bson!({ "$setIsSubset": [null, [1]] })), 17046);
    assert_eq!(code(bson!({ "$setIsSubset": [[1], "$nope"] })), 17042);
}

#[test]
fn any_and_all_elements_true() {
    assert_eq!(
        value(bson!({ "$anyElementTrue": [[0, null, 2]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        value(bson!({ "$anyElementTrue": [[0, false]] })),
        Bson::Boolean(false)
    );
    assert_eq!(
        value(bson!({ "$anyElementTrue": [[]] })),
        Bson::Boolean(false)
    );
    assert_eq!(
        value(bson!({ "$allElementsTrue": [[1, "", []]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        value(bson!({ "$allElementsTrue": [[1, 0]] })),
        Bson::Boolean(false)
    );
    assert_eq!(
        value(bson!({ "$allElementsTrue": [[]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        error_in(bson!({ "$anyElementTrue": null }), &Document::new()),
        (
            17041,
            "$anyElementTrue's argument must be an array, but is null".to_owned()
        )
    );
    assert_eq!(
        message(bson!({ "$allElementsTrue": "$nope" })),
        "$allElementsTrue's argument must be an array, but is missing"
    );
    assert_eq!(code(bson!({ "$allElementsTrue": 1 })), 17040);
    assert_eq!(code(bson!({ "$allElementsTrue": [[1], [2]] })), 16020);
}

#[test]
fn merge_objects() {
    let document = doc! { "a": { "x": 1, "y": 2 }, "b": { "y": 3, "z": null } };
    assert_eq!(
        value_in(
            bson!({ "$mergeObjects": ["$a", "$b", null, "$nope"] }),
            &document
        ),
        bson!({ "x": 1, "y": 3, "z": null })
    );
    assert_eq!(
        value_in(bson!({ "$mergeObjects": "$a" }), &document),
        bson!({ "x": 1, "y": 2 })
    );
    assert_eq!(value(bson!({ "$mergeObjects": [] })), bson!({}));
    assert_eq!(value(bson!({ "$mergeObjects": [null] })), bson!({}));
    assert_eq!(
        error_in(bson!({ "$mergeObjects": [{}, "x"] }), &Document::new()),
        (
            40400,
            "$mergeObjects requires object inputs, but input \"x\" is of type string".to_owned()
        )
    );
    let big = "x".repeat(9 << 20);
    let document = doc! { "p": { "a": big.clone() }, "q": { "b": big } };
    assert_eq!(
        error_in(bson!({ "$mergeObjects": ["$p", "$q"] }), &document).0,
        10334
    );
    // The same field twice is replaced, not counted twice.
    assert_eq!(
        value_in(
            bson!({ "$size": { "$objectToArray": { "$mergeObjects": ["$p", "$p"] } } }),
            &document
        ),
        Bson::Int32(1)
    );
}

#[test]
fn switch_takes_the_first_true_branch() {
    let switch = |n: i32| {
        value_in(
            bson!({ "$switch": {
                "branches": [
                    { "case": { "$lt": ["$n", 0] }, "then": "negative" },
                    { "case": { "$eq": ["$n", 0] }, "then": "zero" },
                    { "case": { "$lt": ["$n", 10] }, "then": "small" },
                ],
                "default": "large",
            } }),
            &doc! { "n": n },
        )
    };
    assert_eq!(switch(-5), Bson::String("negative".into()));
    assert_eq!(switch(0), Bson::String("zero".into()));
    assert_eq!(switch(3), Bson::String("small".into()));
    assert_eq!(switch(30), Bson::String("large".into()));
    // Later branches are not evaluated once one matches.
    let lazy = bson!({ "$switch": { "branches": [
        { "case": true, "then": 1 },
        { "case": { "$add": ["x"] }, "then": { "$add": ["y"] } },
    ] } });
    assert_eq!(value(lazy), Bson::Int32(1));
}

#[test]
fn switch_without_a_match_or_default_fails() {
    let expr = bson!({ "$switch": { "branches": [{ "case": false, "then": 1 }] } });
    assert_eq!(
        error_in(expr, &Document::new()),
        (
            40066,
            "$switch could not find a matching branch for an input, and no default was \
             specified."
                .to_owned()
        )
    );
    let null_default =
        bson!({ "$switch": { "branches": [{ "case": null, "then": 1 }], "default": null } });
    assert_eq!(value(null_default), Bson::Null);
}

#[test]
fn switch_argument_errors() {
    let switch = |spec: Bson| error_in(bson!({ "$switch": spec }), &Document::new());
    assert_eq!(
        switch(bson!([1])),
        (
            40060,
            "$switch requires an object as an argument, found: array".to_owned()
        )
    );
    assert_eq!(
        switch(bson!({ "branches": {} })),
        (
            40061,
            "$switch expected an array for 'branches', found: object".to_owned()
        )
    );
    assert_eq!(
        switch(bson!({ "branches": [1] })),
        (
            40062,
            "$switch expected each branch to be an object, found: int".to_owned()
        )
    );
    assert_eq!(
        switch(bson!({ "branches": [{ "case": 1, "then": 1, "else": 1 }] })),
        (
            40063,
            "$switch found an unknown argument to a branch: else".to_owned()
        )
    );
    assert_eq!(switch(bson!({ "branches": [{ "then": 1 }] })).0, 40064);
    assert_eq!(switch(bson!({ "branches": [{ "case": 1 }] })).0, 40065);
    assert_eq!(
        switch(bson!({ "branches": [{ "case": 1, "then": 1 }], "x": 1 })),
        (40067, "$switch found an unknown argument: x".to_owned())
    );
    assert_eq!(
        switch(bson!({})),
        (40068, "$switch requires at least one branch.".to_owned())
    );
    assert_eq!(switch(bson!({ "branches": [], "default": 1 })).0, 40068);
}

#[test]
fn cond_takes_an_array_or_a_document() {
    let document = doc! { "n": 5 };
    assert_eq!(
        value_in(
            bson!({ "$cond": [{ "$gt": ["$n", 1] }, "big", "small"] }),
            &document
        ),
        Bson::String("big".into())
    );
    assert_eq!(
        value_in(
            bson!({ "$cond": { "if": { "$gt": ["$n", 9] }, "then": "big", "else": "small" } }),
            &document
        ),
        Bson::String("small".into())
    );
    assert_eq!(
        value(bson!({ "$cond": { "else": 3, "then": 2, "if": null } })),
        Bson::Int32(3)
    );
    // Only the branch taken is evaluated.
    assert_eq!(
        value(bson!({ "$cond": [true, 1, { "$add": ["x"] }] })),
        Bson::Int32(1)
    );
}

#[test]
fn cond_argument_errors() {
    let cond = |argument: Bson| error_in(bson!({ "$cond": argument }), &Document::new());
    assert_eq!(
        cond(bson!({ "then": 1, "else": 2 })),
        (17080, "Missing 'if' parameter to $cond".to_owned())
    );
    assert_eq!(
        cond(bson!({ "if": true, "else": 2 })),
        (17081, "Missing 'then' parameter to $cond".to_owned())
    );
    assert_eq!(
        cond(bson!({ "if": true, "then": 1 })),
        (17082, "Missing 'else' parameter to $cond".to_owned())
    );
    assert_eq!(
        cond(bson!({ "if": true, "then": 1, "else": 2, "x": 1 })),
        (17083, "Unrecognized parameter to $cond: x".to_owned())
    );
    assert_eq!(
        cond(bson!([true, 1])),
        (
            16020,
            "Expression $cond takes exactly 3 arguments. 2 were passed in.".to_owned()
        )
    );
    assert_eq!(cond(bson!(true)).0, 16020);
}
