//! The array expression operators: `$concatArrays`, `$slice`, `$reverseArray`, `$range`,
//! `$zip`, `$indexOfArray`, `$first`/`$last`, `$firstN`/`$lastN`/`$minN`/`$maxN`,
//! `$sortArray`, `$arrayToObject`, `$objectToArray`.

use bson::{Bson, Document, bson, doc};

use super::expr_vars::{code, error_in, eval_in, message, value, value_in};

#[test]
fn concat_arrays() {
    let document = doc! { "a": [1, 2], "b": [[3]] };
    assert_eq!(
        value_in(bson!({ "$concatArrays": ["$a", "$b", [4]] }), &document),
        bson!([1, 2, [3], 4])
    );
    assert_eq!(value(bson!({ "$concatArrays": [] })), bson!([]));
    assert_eq!(value(bson!({ "$concatArrays": [[1], null] })), Bson::Null);
    assert_eq!(
        value(bson!({ "$concatArrays": [[1], "$nope"] })),
        Bson::Null
    );
    // Arguments are checked in order: null first answers null, a non-array first fails.
    assert_eq!(value(bson!({ "$concatArrays": [null, 5] })), Bson::Null);
    assert_eq!(
        error_in(bson!({ "$concatArrays": [5, null] }), &Document::new()),
        (
            28664,
            "$concatArrays only supports arrays, not int".to_owned()
        )
    );
}

#[test]
fn slice_with_a_count_or_a_position_and_a_count() {
    let slice = |args: Bson| value(bson!({ "$slice": args }));
    assert_eq!(slice(bson!([[1, 2, 3, 4], 2])), bson!([1, 2]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], -2])), bson!([3, 4]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], 10])), bson!([1, 2, 3, 4]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], -10])), bson!([1, 2, 3, 4]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], 0])), bson!([]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], 1, 2])), bson!([2, 3]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], -3, 2])), bson!([2, 3]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], -10, 2])), bson!([1, 2]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], 10, 2])), bson!([]));
    assert_eq!(slice(bson!([[1, 2, 3, 4], 2.0, 5])), bson!([3, 4]));
    assert_eq!(slice(bson!([null, 2])), Bson::Null);
    assert_eq!(slice(bson!([[1], null])), Bson::Null);
    assert_eq!(slice(bson!([[1], 0, null])), Bson::Null);
}

#[test]
fn slice_errors() {
    let slice = |args: Bson| error_in(bson!({ "$slice": args }), &Document::new());
    assert_eq!(
        slice(bson!([1, 2])),
        (
            28724,
            "First argument to $slice must be an array, but is of type: int".to_owned()
        )
    );
    assert_eq!(
        slice(bson!([[1], "x"])),
        (
            28725,
            "Second argument to $slice must be a numeric value, but is of type: string".to_owned()
        )
    );
    assert_eq!(
        slice(bson!([[1], 1.5])),
        (
            28726,
            "Second argument to $slice can't be represented as a 32-bit integer: 1.5".to_owned()
        )
    );
    assert_eq!(
        slice(bson!([[1], 1e10])).1,
        "Second argument to $slice can't be represented as a 32-bit integer: 1e+10"
    );
    assert_eq!(slice(bson!([[1], 0, "x"])).0, 28727);
    assert_eq!(slice(bson!([[1], 0, 2.5])).0, 28728);
    assert_eq!(
        slice(bson!([[1], 0, 0])),
        (
            28729,
            "Third argument to $slice must be positive: 0".to_owned()
        )
    );
    assert_eq!(
        slice(bson!([[1]])),
        (
            28667,
            "Expression $slice takes at least 2 arguments, and at most 3, but 1 were passed in."
                .to_owned()
        )
    );
    assert_eq!(slice(bson!([[1], 1, 1, 1])).0, 28667);
}

#[test]
fn reverse_array() {
    assert_eq!(
        value(bson!({ "$reverseArray": [[1, 2, 3]] })),
        bson!([3, 2, 1])
    );
    assert_eq!(
        value_in(bson!({ "$reverseArray": "$a" }), &doc! { "a": [1, [2]] }),
        bson!([[2], 1])
    );
    assert_eq!(value(bson!({ "$reverseArray": null })), Bson::Null);
    assert_eq!(value(bson!({ "$reverseArray": "$nope" })), Bson::Null);
    assert_eq!(
        error_in(bson!({ "$reverseArray": "x" }), &Document::new()),
        (
            34435,
            "The argument to $reverseArray must be an array, but was of type: string".to_owned()
        )
    );
    // A literal array is the argument list, as in mongod.
    assert_eq!(code(bson!({ "$reverseArray": [1, 2, 3] })), 16020);
}

#[test]
fn range_counts_by_its_step() {
    assert_eq!(value(bson!({ "$range": [0, 5] })), bson!([0, 1, 2, 3, 4]));
    assert_eq!(value(bson!({ "$range": [0, 10, 3] })), bson!([0, 3, 6, 9]));
    assert_eq!(value(bson!({ "$range": [5, 0, -2] })), bson!([5, 3, 1]));
    assert_eq!(value(bson!({ "$range": [5, 0] })), bson!([]));
    assert_eq!(value(bson!({ "$range": [0, 3, -1] })), bson!([]));
    assert_eq!(
        value(bson!({ "$range": [Bson::Int64(1), 3.0] })),
        bson!([1, 2])
    );
    let near_limit = bson!({ "$range": [2_147_483_640, 2_147_483_647, 3] });
    assert_eq!(
        value(near_limit),
        bson!([2_147_483_640, 2_147_483_643, 2_147_483_646])
    );
}

#[test]
fn range_errors() {
    let range = |args: Bson| error_in(bson!({ "$range": args }), &Document::new());
    assert_eq!(
        range(bson!([null, 5])),
        (
            34443,
            "$range requires a numeric starting value, found value of type: null".to_owned()
        )
    );
    assert_eq!(
        range(bson!(["$nope", 5])).1,
        "$range requires a numeric starting value, found value of type: missing"
    );
    assert_eq!(
        range(bson!([1.5, 5])),
        (
            34444,
            "$range requires a starting value that can be represented as a 32-bit integer, \
             found value: 1.5"
                .to_owned()
        )
    );
    assert_eq!(range(bson!([0, "x"])).0, 34445);
    assert_eq!(range(bson!([0, Bson::Int64(1 << 40)])).0, 34446);
    assert_eq!(range(bson!([0, 5, "x"])).0, 34447);
    assert_eq!(range(bson!([0, 5, 0.5])).0, 34448);
    assert_eq!(
        range(bson!([0, 5, 0])),
        (34449, "$range requires a non-zero step value".to_owned())
    );
    assert_eq!(range(bson!([0])).0, 28667);
}

#[test]
fn a_huge_range_is_refused_before_it_is_built() {
    // mongod's own memory check: 16 bytes an element against 100 MiB.
    assert_eq!(
        error_in(bson!({ "$range": [0, 2_147_483_647] }), &Document::new()),
        (
            146,
            "$range would use too much memory (34359738392 bytes) and cannot spill to disk. \
             Memory limit: 104857600 bytes"
                .to_owned()
        )
    );
    // Under mongod's limit but past the BSON limit: blackpipe refuses.
    assert_eq!(code(bson!({ "$range": [0, 3_000_000] })), 10334);
    assert_eq!(
        value(bson!({ "$size": { "$range": [0, 1_000_000] } })),
        Bson::Int32(1_000_000)
    );
}

#[test]
fn zip_transposes_arrays() {
    let zip = |spec: Bson| value(bson!({ "$zip": spec }));
    assert_eq!(
        zip(bson!({ "inputs": [[1, 2, 3], ["a", "b"]] })),
        bson!([[1, "a"], [2, "b"]])
    );
    assert_eq!(
        zip(bson!({ "inputs": [[1, 2, 3], ["a", "b"]], "useLongestLength": true })),
        bson!([[1, "a"], [2, "b"], [3, null]])
    );
    assert_eq!(
        zip(bson!({
            "inputs": [[1, 2, 3], ["a"]], "useLongestLength": true, "defaults": [0, "z"],
        })),
        bson!([[1, "a"], [2, "z"], [3, "z"]])
    );
    assert_eq!(zip(bson!({ "inputs": [[1, 2], null] })), Bson::Null);
    assert_eq!(zip(bson!({ "inputs": [[], [1]] })), bson!([]));
    assert_eq!(
        value_in(
            bson!({ "$zip": { "inputs": ["$a", "$b"] } }),
            &doc! { "a": [1], "b": [2] }
        ),
        bson!([[1, 2]])
    );
}

#[test]
fn zip_errors() {
    let zip = |spec: Bson| error_in(bson!({ "$zip": spec }), &Document::new());
    assert_eq!(
        zip(bson!("x")),
        (
            34460,
            "$zip only supports an object as an argument, found string".to_owned()
        )
    );
    assert_eq!(
        zip(bson!({ "inputs": 1 })),
        (
            34461,
            "inputs must be an array of expressions, found int".to_owned()
        )
    );
    assert_eq!(zip(bson!({ "inputs": [[1]], "defaults": 1 })).0, 34462);
    assert_eq!(
        zip(bson!({ "inputs": [[1]], "useLongestLength": 1 })),
        (
            34463,
            "useLongestLength must be a bool, found object".to_owned()
        )
    );
    assert_eq!(zip(bson!({ "inputs": [[1]], "x": 1 })).0, 34464);
    assert_eq!(zip(bson!({})).0, 34465);
    assert_eq!(zip(bson!({ "inputs": [] })).0, 34465);
    assert_eq!(zip(bson!({ "inputs": [[1]], "defaults": [1] })).0, 34466);
    assert_eq!(
        zip(bson!({ "inputs": [[1], [2]], "defaults": [1], "useLongestLength": true })).0,
        34467
    );
    assert_eq!(
        zip(bson!({ "inputs": [[1], 5] })),
        (
            34468,
            "$zip found a non-array expression in input: 5".to_owned()
        )
    );
}

#[test]
fn index_of_array() {
    let index = |args: Bson| value(bson!({ "$indexOfArray": args }));
    assert_eq!(index(bson!([["a", "b", "a"], "a"])), Bson::Int32(0));
    assert_eq!(index(bson!([["a", "b", "a"], "a", 1])), Bson::Int32(2));
    assert_eq!(index(bson!([["a", "b", "a"], "a", 1, 2])), Bson::Int32(-1));
    assert_eq!(index(bson!([["a", "b", "a"], "a", 5])), Bson::Int32(-1));
    assert_eq!(index(bson!([["a", "b", "a"], "a", 2, 100])), Bson::Int32(2));
    assert_eq!(index(bson!([[1, 2], 2.0])), Bson::Int32(1));
    assert_eq!(index(bson!([[1, null], null])), Bson::Int32(1));
    assert_eq!(index(bson!([["a"], "z"])), Bson::Int32(-1));
    assert_eq!(index(bson!([null, "a"])), Bson::Null);
    assert_eq!(index(bson!(["$nope", "a"])), Bson::Null);
}

#[test]
fn index_of_array_errors() {
    let index = |args: Bson| error_in(bson!({ "$indexOfArray": args }), &Document::new());
    assert_eq!(
        index(bson!(["x", "a"])),
        (
            40090,
            "$indexOfArray requires an array as a first argument, found: string".to_owned()
        )
    );
    assert_eq!(
        index(bson!([[1], 1, 1.5])),
        (
            40096,
            "$indexOfArray requires an integral starting index, found a value of type: double, \
             with value: 1.5"
                .to_owned()
        )
    );
    assert_eq!(
        index(bson!([[1], 1, 0, -1])),
        (
            40097,
            "$indexOfArray requires a nonnegative ending index, found: -1".to_owned()
        )
    );
    assert_eq!(index(bson!([[1], 1, null])).0, 40096);
    assert_eq!(
        index(bson!([[1]])).1,
        "Expression $indexOfArray takes at least 2 arguments, and at most 4, but 1 were passed in."
    );
    assert_eq!(index(bson!([[1], 1, 0, 1, 1])).0, 28667);
}

#[test]
fn first_and_last_of_an_array() {
    let document = doc! { "a": [1, 2, 3], "e": [] };
    assert_eq!(
        value_in(bson!({ "$first": "$a" }), &document),
        Bson::Int32(1)
    );
    assert_eq!(
        value_in(bson!({ "$last": "$a" }), &document),
        Bson::Int32(3)
    );
    assert_eq!(value(bson!({ "$first": [[[1], 2]] })), bson!([1]));
    assert_eq!(eval_in(&bson!({ "$first": "$e" }), &document), Ok(None));
    assert_eq!(eval_in(&bson!({ "$last": "$e" }), &document), Ok(None));
    assert_eq!(value(bson!({ "$last": null })), Bson::Null);
    assert_eq!(value(bson!({ "$first": "$nope" })), Bson::Null);
    assert_eq!(
        error_in(bson!({ "$first": "x" }), &Document::new()),
        (
            28689,
            "$first's argument must be an array, but is string".to_owned()
        )
    );
    assert_eq!(
        message(bson!({ "$last": 1 })),
        "$last's argument must be an array, but is int"
    );
}

#[test]
fn first_last_min_max_n() {
    let pick = |name: &str, n: Bson, input: Bson| {
        let mut spec = Document::new();
        spec.insert(name, doc! { "n": n, "input": input });
        value(Bson::Document(spec))
    };
    let items = bson!([3, null, 1, 5, 2]);
    assert_eq!(pick("$firstN", bson!(2), items.clone()), bson!([3, null]));
    assert_eq!(pick("$lastN", bson!(2), items.clone()), bson!([5, 2]));
    assert_eq!(pick("$minN", bson!(2), items.clone()), bson!([1, 2]));
    assert_eq!(pick("$maxN", bson!(2), items.clone()), bson!([5, 3]));
    assert_eq!(pick("$maxN", bson!(10), items.clone()), bson!([5, 3, 2, 1]));
    assert_eq!(pick("$firstN", Bson::Int64(1 << 40), items.clone()), items);
    assert_eq!(pick("$lastN", bson!(3.0), bson!([])), bson!([]));
}

#[test]
fn first_last_min_max_n_errors() {
    assert_eq!(
        error_in(bson!({ "$firstN": 3 }), &Document::new()),
        (
            5_787_801,
            "specification must be an object; found $firstN: 3".to_owned()
        )
    );
    assert_eq!(code(bson!({ "$maxN": [1] })), 5_787_900);
    assert_eq!(
        message(bson!({ "$lastN": { "n": 1, "input": [], "x": 1 } })),
        "Unknown argument for 'n' operator: x"
    );
    assert_eq!(
        code(bson!({ "$lastN": { "n": 1, "input": [], "x": 1 } })),
        5_787_901
    );
    assert_eq!(code(bson!({ "$minN": { "input": [] } })), 5_787_906);
    assert_eq!(code(bson!({ "$minN": { "n": 1 } })), 5_787_907);
    let n = |n: Bson| {
        error_in(
            bson!({ "$firstN": { "n": n, "input": [1] } }),
            &Document::new(),
        )
    };
    assert_eq!(
        n(bson!(0)),
        (5_787_908, "'n' must be greater than 0, found 0".to_owned())
    );
    assert_eq!(n(bson!(-2)).0, 5_787_908);
    assert_eq!(
        n(bson!(1.5)),
        (
            5_787_903,
            "Value for 'n' must be of integral type, but found 1.5".to_owned()
        )
    );
    assert_eq!(n(bson!("x")).0, 5_787_902);
    assert_eq!(n(Bson::Null).0, 5_787_902);
    // `n` is checked before `input`.
    assert_eq!(
        error_in(
            bson!({ "$firstN": { "n": 0, "input": 5 } }),
            &Document::new()
        )
        .0,
        5_787_908
    );
    assert_eq!(
        error_in(
            bson!({ "$firstN": { "n": 1, "input": null } }),
            &Document::new()
        ),
        (5_788_200, "Input must be an array".to_owned())
    );
}

#[test]
fn sort_array_by_value_or_pattern() {
    let sort =
        |input: Bson, by: Bson| value(bson!({ "$sortArray": { "input": input, "sortBy": by } }));
    assert_eq!(
        sort(bson!([3, "a", 1, null]), bson!(1)),
        bson!([null, 1, 3, "a"])
    );
    assert_eq!(sort(bson!([3, 1, 2]), bson!(-1)), bson!([3, 2, 1]));
    let people = bson!([
        { "name": "b", "age": 30 },
        { "name": "a", "age": 30 },
        { "name": "c", "age": 20 },
        7,
    ]);
    assert_eq!(
        sort(people.clone(), bson!({ "age": -1, "name": 1 })),
        bson!([
            { "name": "a", "age": 30 },
            { "name": "b", "age": 30 },
            { "name": "c", "age": 20 },
            7,
        ])
    );
    // A non-document has null keys, so it sorts first ascending.
    assert_eq!(
        sort(people, bson!({ "age": 1 })),
        bson!([7, { "name": "c", "age": 20 }, { "name": "b", "age": 30 }, { "name": "a", "age": 30 }])
    );
    assert_eq!(
        sort(
            bson!([{ "a": { "b": 2 } }, { "a": { "b": 1 } }]),
            bson!({ "a.b": 1 })
        ),
        bson!([{ "a": { "b": 1 } }, { "a": { "b": 2 } }])
    );
    assert_eq!(sort(Bson::Null, bson!(1)), Bson::Null);
    assert_eq!(sort(bson!([]), bson!(1)), bson!([]));
}

#[test]
fn sort_array_errors() {
    let sort = |spec: Bson| error_in(bson!({ "$sortArray": spec }), &Document::new());
    assert_eq!(
        sort(bson!([1])),
        (
            2_942_500,
            "$sortArray requires an object as an argument, found: array".to_owned()
        )
    );
    assert_eq!(
        sort(bson!({ "input": [], "sortBy": 1, "x": 1 })).0,
        2_942_501
    );
    assert_eq!(sort(bson!({ "sortBy": 1 })).0, 2_942_502);
    assert_eq!(sort(bson!({ "input": [] })).0, 2_942_503);
    assert_eq!(
        sort(bson!({ "input": 5, "sortBy": 1 })),
        (
            2_942_504,
            "The input argument to $sortArray must be an array, but was of type: int".to_owned()
        )
    );
    assert_eq!(sort(bson!({ "input": [], "sortBy": 2 })).0, 2_942_506);
    assert_eq!(sort(bson!({ "input": [], "sortBy": "a" })).0, 2_942_506);
    assert_eq!(
        sort(bson!({ "input": [], "sortBy": {} })),
        (
            2,
            "The sort pattern is empty when it should be a set of fields.".to_owned()
        )
    );
    assert_eq!(
        sort(bson!({ "input": [], "sortBy": { "a": 2 } })),
        (
            2,
            "The sort element value must be either 1 or -1".to_owned()
        )
    );
    assert_eq!(sort(bson!({ "input": [], "sortBy": { "a..b": 1 } })).0, 2);
}

#[test]
fn array_to_object_from_pairs_or_documents() {
    let convert = |input: Bson| value(bson!({ "$arrayToObject": [input] }));
    assert_eq!(
        convert(bson!([["a", 1], ["b", 2]])),
        bson!({ "a": 1, "b": 2 })
    );
    assert_eq!(
        convert(bson!([{ "k": "a", "v": 1 }, { "v": 2, "k": "b" }])),
        bson!({ "a": 1, "b": 2 })
    );
    // A repeated key keeps its first position and takes the last value.
    assert_eq!(
        convert(bson!([["a", 1], ["b", 2], ["a", 3]])),
        bson!({ "a": 3, "b": 2 })
    );
    assert_eq!(convert(bson!([])), bson!({}));
    assert_eq!(value(bson!({ "$arrayToObject": null })), Bson::Null);
    assert_eq!(value(bson!({ "$arrayToObject": "$nope" })), Bson::Null);
}

#[test]
fn array_to_object_errors() {
    let convert = |input: Bson| error_in(bson!({ "$arrayToObject": [input] }), &Document::new());
    assert_eq!(
        convert(bson!("x")),
        (
            40386,
            "$arrayToObject requires an array input, found: string".to_owned()
        )
    );
    assert_eq!(convert(bson!([1])).0, 40398);
    assert_eq!(convert(bson!([["a", 1], { "k": "b", "v": 2 }])).0, 40396);
    assert_eq!(
        convert(bson!([["a", 1, 2]])).1,
        "$arrayToObject requires an array of size 2 arrays,found array of size: 3"
    );
    assert_eq!(convert(bson!([["a", 1, 2]])).0, 40397);
    assert_eq!(convert(bson!([[1, 1]])).0, 40395);
    assert_eq!(convert(bson!([["a\u{0}b", 1]])).0, 4_940_400);
    assert_eq!(convert(bson!([{ "k": "a", "v": 1 }, ["b", 2]])).0, 40391);
    assert_eq!(convert(bson!([{ "k": "a" }])).0, 40392);
    assert_eq!(convert(bson!([{ "k": "a", "x": 1 }])).0, 40393);
    assert_eq!(convert(bson!([{ "k": 1, "v": 1 }])).0, 40394);
    assert_eq!(convert(bson!([{ "k": "a\u{0}", "v": 1 }])).0, 4_940_401);
}

#[test]
fn object_to_array() {
    assert_eq!(
        value_in(
            bson!({ "$objectToArray": "$d" }),
            &doc! { "d": { "a": 1, "b": { "c": 2 } } }
        ),
        bson!([{ "k": "a", "v": 1 }, { "k": "b", "v": { "c": 2 } }])
    );
    assert_eq!(value(bson!({ "$objectToArray": {} })), bson!([]));
    assert_eq!(value(bson!({ "$objectToArray": null })), Bson::Null);
    assert_eq!(
        error_in(bson!({ "$objectToArray": [[1]] }), &Document::new()),
        (
            40390,
            "$objectToArray requires a document input, found: array".to_owned()
        )
    );
    // Round trip.
    let document = doc! { "d": { "x": 1, "y": [2] } };
    let round = bson!({ "$arrayToObject": { "$objectToArray": "$d" } });
    assert_eq!(value_in(round, &document), bson!({ "x": 1, "y": [2] }));
}

#[test]
fn results_past_the_bson_limit_are_refused() {
    let big = "x".repeat(1 << 20);
    let document = doc! { "big": big.clone(), "arr": vec![Bson::String(big); 9] };
    let refused = |expr: Bson| error_in(expr, &document).0;
    assert_eq!(
        refused(bson!({ "$map": { "input": { "$range": [0, 20] }, "in": "$big" } })),
        10334
    );
    assert_eq!(refused(bson!({ "$concatArrays": ["$arr", "$arr"] })), 10334);
    assert_eq!(
        refused(bson!({ "$zip": { "inputs": ["$arr", "$arr"] } })),
        10334
    );
    // Two halves of 10 MiB of distinct elements each: the union is 20 MiB.
    let half = |from: i32| bson!({ "$map": { "input": { "$range": [from, from + 10] }, "in": ["$big", "$$this"] } });
    assert_eq!(refused(bson!({ "$setUnion": [half(0), half(10)] })), 10334);
    assert_eq!(
        value_in(
            bson!({ "$size": { "$setUnion": [half(0), half(5)] } }),
            &document
        ),
        Bson::Int32(15)
    );
    // A document with many small fields grows when it becomes `{k, v}` pairs.
    let mut wide = Document::new();
    for index in 0..800_000 {
        wide.insert(format!("{index}"), true);
    }
    assert_eq!(
        error_in(bson!({ "$objectToArray": "$w" }), &doc! { "w": wide }).0,
        10334
    );
}
