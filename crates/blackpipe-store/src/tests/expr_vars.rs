//! Expression variables: `$let`, `$$name.path`, `$$CURRENT`/`$$ROOT`, `$map`, `$filter`,
//! `$reduce`, the name rules, and how a command's `let` meets them.

use bson::{Bson, Document, bson, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::expr::Expr;

/// Parses `expr` and evaluates it against `document`: the value (`None` when missing), or the
/// error's code and message.
pub(super) fn eval_in(expr: &Bson, document: &Document) -> Result<Option<Bson>, (i32, String)> {
    let parsed = Expr::parse(expr).map_err(|error| (error.code, error.message))?;
    parsed
        .evaluate(document)
        .map_err(|error| (error.code, error.message))
}

/// The value of `expr` against `document`, which must not fail or be missing.
pub(super) fn value_in(expr: Bson, document: &Document) -> Bson {
    match eval_in(&expr, document) {
        Ok(Some(value)) => value,
        other => panic!("{expr}: expected a value, got {other:?}"),
    }
}

/// The value of `expr` against an empty document.
pub(super) fn value(expr: Bson) -> Bson {
    value_in(expr, &Document::new())
}

/// The error of `expr` (parsing or evaluating against `document`): its code and message.
pub(super) fn error_in(expr: Bson, document: &Document) -> (i32, String) {
    match eval_in(&expr, document) {
        Err(error) => error,
        Ok(other) => panic!("{expr}: expected an error, got {other:?}"),
    }
}

/// The error code of `expr` against an empty document.
pub(super) fn code(expr: Bson) -> i32 {
    error_in(expr, &Document::new()).0
}

/// The error message of `expr` against an empty document.
pub(super) fn message(expr: Bson) -> String {
    error_in(expr, &Document::new()).1
}

/// mongod 8.0's FailedToParse, which its variable name checks answer.
const FAILED_TO_PARSE: i32 = 9;

#[test]
fn let_binds_its_variables_in_in_only() {
    let expr = bson!({ "$let": {
        "vars": { "a": 1, "b": { "$add": [1, 1] } },
        "in": { "$add": ["$$a", "$$b"] },
    } });
    assert_eq!(value(expr), Bson::Int32(3));
    // The values are evaluated outside the `$let`: they cannot see each other.
    let expr = bson!({ "$let": { "vars": { "a": 1, "b": "$$a" }, "in": "$$b" } });
    assert_eq!(code(expr), 17276);
    assert_eq!(code(bson!({ "$add": ["$$a", 1] })), 17276);
}

#[test]
fn an_inner_binding_shadows_an_outer_one() {
    let expr = bson!({ "$let": {
        "vars": { "a": 1 },
        "in": [
            { "$let": { "vars": { "a": 2 }, "in": "$$a" } },
            "$$a",
            { "$let": { "vars": { "b": "$$a" }, "in": "$$b" } },
        ],
    } });
    assert_eq!(value(expr), bson!([2, 1, 1]));
}

#[test]
fn a_variable_path_reads_into_documents_and_arrays() {
    let read = |vars: Bson, path: &str| {
        eval_in(
            &bson!({ "$let": { "vars": { "d": vars }, "in": path } }),
            &Document::new(),
        )
        .unwrap()
    };
    assert_eq!(
        read(bson!({ "x": { "y": 5 } }), "$$d.x.y"),
        Some(Bson::Int32(5))
    );
    assert_eq!(
        read(bson!([{ "x": 1 }, { "y": 2 }, { "x": 3 }, 4]), "$$d.x"),
        Some(bson!([1, 3]))
    );
    assert_eq!(read(bson!(7), "$$d.x"), None);
    assert_eq!(read(bson!({ "x": 1 }), "$$d.nope"), None);
    // A variable bound to a missing value is missing, not null.
    let expr = bson!({ "$let": { "vars": { "m": "$nope" }, "in": { "$type": "$$m" } } });
    assert_eq!(value(expr), Bson::String("missing".into()));
}

#[test]
fn current_is_the_document_until_a_let_rebinds_it() {
    let document = doc! { "a": 1, "sub": { "a": 2 } };
    assert_eq!(
        value_in(bson!("$$CURRENT"), &document),
        Bson::Document(document.clone())
    );
    assert_eq!(value_in(bson!("$$CURRENT.a"), &document), Bson::Int32(1));
    let expr = bson!({ "$let": {
        "vars": { "CURRENT": "$sub" },
        "in": ["$a", "$$CURRENT.a", "$$ROOT.a", { "$getField": "a" }],
    } });
    assert_eq!(value_in(expr, &document), bson!([2, 2, 1, 2]));
    // Rebound to a scalar, field paths are missing (null inside an array literal).
    let expr = bson!({ "$let": { "vars": { "CURRENT": 5 }, "in": ["$a", "$$CURRENT"] } });
    assert_eq!(value_in(expr, &document), bson!([null, 5]));
}

#[test]
fn remove_drops_a_field_and_root_reads_the_document() {
    let document = doc! { "a": 1 };
    let expr = bson!({ "kept": "$a", "dropped": "$$REMOVE", "root": "$$ROOT.a" });
    assert_eq!(value_in(expr, &document), bson!({ "kept": 1, "root": 1 }));
}

#[test]
fn let_argument_errors() {
    assert_eq!(code(bson!({ "$let": 1 })), 16874);
    assert_eq!(
        message(bson!({ "$let": { "vars": {}, "in": 1, "x": 1 } })),
        "Unrecognized parameter to $let: x"
    );
    assert_eq!(
        code(bson!({ "$let": { "vars": {}, "in": 1, "x": 1 } })),
        16875
    );
    assert_eq!(code(bson!({ "$let": { "in": 1 } })), 16876);
    assert_eq!(code(bson!({ "$let": { "vars": {} } })), 16877);
    assert_eq!(
        error_in(bson!({ "$let": { "vars": 1, "in": 1 } }), &Document::new()),
        (
            10065,
            "invalid parameter: expected an object (vars)".to_owned()
        )
    );
    assert_eq!(
        value(bson!({ "$let": { "vars": {}, "in": 4 } })),
        Bson::Int32(4)
    );
}

#[test]
fn a_bound_name_follows_mongods_rules() {
    let bind = |name: &str| {
        let mut vars = Document::new();
        vars.insert(name, 1);
        eval_in(
            &bson!({ "$let": { "vars": vars, "in": 1 } }),
            &Document::new(),
        )
    };
    assert_eq!(
        bind("Upper"),
        Err((
            FAILED_TO_PARSE,
            "'Upper' starts with an invalid character for a user variable name".to_owned()
        ))
    );
    assert_eq!(
        bind("a-b"),
        Err((
            FAILED_TO_PARSE,
            "'a-b' contains an invalid character for a variable name: '-'".to_owned()
        ))
    );
    assert_eq!(
        bind(""),
        Err((
            FAILED_TO_PARSE,
            "empty variable names are not allowed".to_owned()
        ))
    );
    assert_eq!(bind("_x").unwrap_err().0, FAILED_TO_PARSE);
    assert_eq!(bind("ROOT").unwrap_err().0, FAILED_TO_PARSE);
    assert_eq!(bind("a1_B"), Ok(Some(Bson::Int32(1))));
    assert_eq!(bind("été"), Ok(Some(Bson::Int32(1))));
}

#[test]
fn a_reference_follows_mongods_rules_and_must_be_defined() {
    assert_eq!(
        message(bson!("$$1a")),
        "'1a' starts with an invalid character for a user variable name"
    );
    assert_eq!(message(bson!("$$")), "empty variable names are not allowed");
    assert_eq!(code(bson!("$$a!")), FAILED_TO_PARSE);
    // Uppercase reads are valid names, but undefined.
    assert_eq!(
        message(bson!("$$Upper")),
        "Use of undefined variable: Upper"
    );
    assert_eq!(message(bson!("$$this")), "Use of undefined variable: this");
    assert_eq!(code(bson!("$$value")), 17276);
    // Undefined even where no document is ever evaluated: a parse error.
    assert!(Expr::parse(&bson!({ "$map": { "input": [], "in": "$$nope" } })).is_err());
}

#[test]
fn map_binds_this_or_as() {
    let document = doc! { "xs": [1, 2, 3], "k": 10 };
    let expr = bson!({ "$map": { "input": "$xs", "in": { "$add": ["$$this", "$k"] } } });
    assert_eq!(value_in(expr, &document), bson!([11, 12, 13]));
    let expr = bson!({ "$map": { "input": "$xs", "as": "x", "in": { "$multiply": ["$$x", 2] } } });
    assert_eq!(value_in(expr, &document), bson!([2, 4, 6]));
    // Nested: the inner `$$this` shadows the outer one, a named outer variable stays visible.
    let expr = bson!({ "$map": { "input": [[1, 2], [3]], "as": "row", "in": {
        "$map": { "input": "$$row", "in": { "$add": ["$$this", { "$size": "$$row" }] } },
    } } });
    assert_eq!(value(expr), bson!([[3, 4], [4]]));
    // A missing result becomes null.
    let expr = bson!({ "$map": { "input": [1, 2], "in": "$nope" } });
    assert_eq!(value(expr), bson!([null, null]));
    // `$$this` is not visible in `input`.
    assert_eq!(
        code(bson!({ "$map": { "input": "$$this", "in": 1 } })),
        17276
    );
}

#[test]
fn map_null_input_and_errors() {
    assert_eq!(
        value(bson!({ "$map": { "input": null, "in": 1 } })),
        Bson::Null
    );
    assert_eq!(
        value(bson!({ "$map": { "input": "$nope", "in": 1 } })),
        Bson::Null
    );
    assert_eq!(
        value(bson!({ "$map": { "input": [], "in": 1 } })),
        bson!([])
    );
    assert_eq!(
        error_in(
            bson!({ "$map": { "input": "s", "in": 1 } }),
            &Document::new()
        ),
        (
            16883,
            "input to $map must be an array not string".to_owned()
        )
    );
    assert_eq!(code(bson!({ "$map": [1] })), 16878);
    assert_eq!(
        code(bson!({ "$map": { "input": [], "in": 1, "x": 1 } })),
        16879
    );
    assert_eq!(code(bson!({ "$map": { "in": 1 } })), 16880);
    assert_eq!(code(bson!({ "$map": { "input": [] } })), 16882);
    assert_eq!(
        code(bson!({ "$map": { "input": [], "as": "X", "in": 1 } })),
        FAILED_TO_PARSE
    );
    assert_eq!(
        message(bson!({ "$map": { "input": [], "as": 1, "in": 1 } })),
        "empty variable names are not allowed"
    );
}

#[test]
fn filter_keeps_matching_elements_up_to_the_limit() {
    let document = doc! { "xs": [1, 5, 2, 8, 3] };
    let expr = bson!({ "$filter": { "input": "$xs", "cond": { "$gt": ["$$this", 2] } } });
    assert_eq!(value_in(expr, &document), bson!([5, 8, 3]));
    let expr = bson!({ "$filter": {
        "input": "$xs", "as": "n", "cond": { "$gt": ["$$n", 2] }, "limit": 2,
    } });
    assert_eq!(value_in(expr, &document), bson!([5, 8]));
    let expr = bson!({ "$filter": {
        "input": "$xs", "cond": { "$gt": ["$$this", 2] }, "limit": null,
    } });
    assert_eq!(value_in(expr, &document), bson!([5, 8, 3]));
    let expr = bson!({ "$filter": { "input": "$xs", "cond": true, "limit": 2.0 } });
    assert_eq!(value_in(expr, &document), bson!([1, 5]));
    // Truthiness: 0, null and missing are false.
    let expr = bson!({ "$filter": { "input": [0, null, 1, "", [], false], "cond": "$$this" } });
    assert_eq!(value(expr), bson!([1, "", []]));
}

#[test]
fn filter_null_input_and_errors() {
    assert_eq!(
        value(bson!({ "$filter": { "input": null, "cond": true } })),
        Bson::Null
    );
    // An empty input answers before the limit is looked at.
    let expr = bson!({ "$filter": { "input": [], "cond": true, "limit": 0 } });
    assert_eq!(value(expr), bson!([]));
    let limited = |limit: Bson| {
        error_in(
            bson!({ "$filter": { "input": [1], "cond": true, "limit": limit } }),
            &Document::new(),
        )
    };
    assert_eq!(
        limited(bson!(0)),
        (
            327_392,
            "$filter: limit must be greater than 0: 0".to_owned()
        )
    );
    assert_eq!(limited(bson!(-3)).0, 327_392);
    assert_eq!(
        limited(bson!(1.5)),
        (
            327_391,
            "$filter: limit must be represented as a 32-bit integral value: 1.5".to_owned()
        )
    );
    assert_eq!(limited(bson!("x")).0, 327_391);
    assert_eq!(limited(Bson::Int64(1 << 31)).0, 327_391);
    assert_eq!(
        code(bson!({ "$filter": { "input": 1, "cond": true } })),
        28651
    );
    assert_eq!(code(bson!({ "$filter": 1 })), 28646);
    assert_eq!(
        code(bson!({ "$filter": { "input": [], "cond": 1, "in": 1 } })),
        28647
    );
    assert_eq!(code(bson!({ "$filter": { "cond": 1 } })), 28648);
    assert_eq!(code(bson!({ "$filter": { "input": [] } })), 28650);
}

#[test]
fn reduce_folds_with_this_and_value() {
    let sum = bson!({ "$reduce": {
        "input": [1, 2, 3, 4], "initialValue": 0, "in": { "$add": ["$$value", "$$this"] },
    } });
    assert_eq!(value(sum), Bson::Int32(10));
    let words = bson!({ "$reduce": {
        "input": ["a", "b", "c"], "initialValue": "", "in": { "$concat": ["$$value", "$$this"] },
    } });
    assert_eq!(value(words), Bson::String("abc".into()));
    let both = bson!({ "$reduce": {
        "input": [1, 2, 3],
        "initialValue": { "sum": 0, "product": 1 },
        "in": {
            "sum": { "$add": ["$$value.sum", "$$this"] },
            "product": { "$multiply": ["$$value.product", "$$this"] },
        },
    } });
    assert_eq!(value(both), bson!({ "sum": 6, "product": 6 }));
    let empty = bson!({ "$reduce": { "input": [], "initialValue": 7, "in": 1 } });
    assert_eq!(value(empty), Bson::Int32(7));
    // `$$this` and `$$value` exist in `in` only.
    let outside = bson!({ "$reduce": { "input": [], "initialValue": "$$value", "in": 1 } });
    assert_eq!(code(outside), 17276);
}

#[test]
fn reduce_null_input_and_errors() {
    let reduce = |input: Bson| bson!({ "$reduce": { "input": input, "initialValue": 0, "in": 1 } });
    assert_eq!(value(reduce(Bson::Null)), Bson::Null);
    assert_eq!(
        error_in(reduce(bson!(5)), &Document::new()),
        (
            40080,
            "$reduce requires that 'input' be an array, found: 5".to_owned()
        )
    );
    assert_eq!(
        message(bson!({ "$reduce": 1 })),
        "$reduce requires an object as an argument, found: int"
    );
    assert_eq!(code(bson!({ "$reduce": { "input": [], "x": 1 } })), 40076);
    assert_eq!(
        code(bson!({ "$reduce": { "initialValue": 0, "in": 1 } })),
        40077
    );
    assert_eq!(code(bson!({ "$reduce": { "input": [], "in": 1 } })), 40078);
    assert_eq!(
        code(bson!({ "$reduce": { "input": [], "initialValue": 0 } })),
        40079
    );
}

#[test]
fn a_reduce_that_nests_its_accumulator_too_deep_is_refused() {
    let deep = bson!({ "$reduce": {
        "input": { "$range": [0, 1000] }, "initialValue": [], "in": ["$$value"],
    } });
    assert_eq!(
        error_in(deep, &Document::new()),
        (
            15,
            "$reduce accumulated value exceeded max allowable BSON depth".to_owned()
        )
    );
    let shallow = bson!({ "$size": { "$reduce": {
        "input": { "$range": [0, 300] }, "initialValue": [], "in": ["$$value"],
    } } });
    assert_eq!(value(shallow), Bson::Int32(1));
}

#[test]
fn work_past_the_limit_ends_in_an_error() {
    // Every step copies an 8 MiB string: a few hundred steps pass the limit (a quadratic
    // `$reduce` or a `$map` inside a `$map` over large arrays gets there the same way).
    let document = doc! { "big": "x".repeat(8 << 20) };
    let copies = bson!({ "$map": { "input": { "$range": [0, 2000] }, "in": { "$type": "$big" } } });
    let (code, message) = error_in(copies, &document);
    assert_eq!(code, 262, "{message}");
    // The same loop over a few elements is fine, and so is a short quadratic `$reduce`.
    let few = bson!({ "$size": { "$map": { "input": [1, 2, 3], "in": { "$type": "$big" } } } });
    assert_eq!(value_in(few, &document), Bson::Int32(3));
    let small = bson!({ "$size": { "$reduce": {
        "input": { "$range": [0, 3000] },
        "initialValue": [],
        "in": { "$concatArrays": ["$$value", ["$$this"]] },
    } } });
    assert_eq!(value(small), Bson::Int32(3000));
}

fn people() -> crate::Store {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "scores": [3, 9, 4], "sub": { "x": 1 } },
            doc! { "_id": 2, "scores": [], "sub": { "x": 2 } },
        ],
    );
    store
}

#[test]
fn variables_work_through_the_aggregate_command() {
    let store = people();
    let output = batch(&run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "cursor": {}, "pipeline": [
            { "$match": { "$expr": { "$gt": [
                { "$size": { "$filter": { "input": "$scores", "cond": { "$gte": ["$$this", 4] } } } },
                0,
            ] } } },
            { "$project": {
                "doubled": { "$map": { "input": "$scores", "as": "s", "in": { "$multiply": ["$$s", 2] } } },
                "total": { "$reduce": { "input": "$scores", "initialValue": 0, "in": { "$add": ["$$value", "$$this"] } } },
                "x": { "$let": { "vars": { "CURRENT": "$sub" }, "in": "$x" } },
            } },
        ] },
    ));
    assert_eq!(
        output,
        vec![doc! { "_id": 1, "doubled": [6, 18, 8], "total": 16, "x": 1 }]
    );
}

#[test]
fn a_command_let_is_shadowed_by_an_inner_binding() {
    let store = people();
    let output = batch(&run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "cursor": {}, "let": { "x": 1, "this": 100, "value": 7 }, "pipeline": [
            { "$match": { "_id": 1 } },
            { "$project": {
                "_id": 0,
                "outer": "$$x",
                "mapped": { "$map": { "input": [5, 6], "as": "x", "in": "$$x" } },
                "let": { "$let": { "vars": { "x": 2 }, "in": "$$x" } },
                "letVars": { "$let": { "vars": { "x": "$$x" }, "in": "$$x" } },
                "this": { "$map": { "input": [5], "in": { "$add": ["$$this", "$$value"] } } },
                "reduced": { "$reduce": { "input": [1], "initialValue": "$$this", "in": "$$value" } },
            } },
        ] },
    ));
    assert_eq!(
        output,
        vec![doc! {
            "outer": 1, "mapped": [5, 6], "let": 2, "letVars": 1, "this": [12], "reduced": 100,
        }]
    );
}

#[test]
fn a_command_let_name_is_checked_as_mongod_checks_it() {
    let store = people();
    let refused = |name: &str| {
        let mut vars = Document::new();
        vars.insert(name, 1);
        run(
            &store,
            "db",
            doc! { "find": "c", "filter": {}, "let": vars },
        )
    };
    let reply = refused("Upper");
    assert_eq!(error_code(&reply), FAILED_TO_PARSE);
    assert_eq!(
        reply.get_str("errmsg").unwrap(),
        "Invalid 'let' parameter :: caused by :: 'Upper' starts with an invalid character for \
         a user variable name"
    );
    assert_eq!(error_code(&refused("a.b")), FAILED_TO_PARSE);
    let reply = refused("NOW");
    assert_eq!(error_code(&reply), 4_738_901);
    assert_eq!(
        reply.get_str("errmsg").unwrap(),
        "Attempt to set internal constant: NOW"
    );
    // mongod would rebind every field path; blackpipe refuses instead.
    assert_eq!(error_code(&refused("CURRENT")), FAILED_TO_PARSE);
}
