//! The scalar families (dates, strings, math, conversions) inside the variable binders: their
//! arguments may name `$$this`, `$$value`, `as` and `$let` variables, see rebound
//! `$$CURRENT`, and spend the evaluation's work budget.

use bson::{Bson, bson, doc};

use super::expr_vars::{code, value, value_in};
use super::{batch, insert, new_store, run_ok};
use crate::expr::Expr;
use crate::expr::vars::{Scope, WORK_LIMIT, Work};

fn date(millis: i64) -> Bson {
    Bson::DateTime(bson::DateTime::from_millis(millis))
}

/// 2020-02-29T12:34:56Z and 2024-07-04T00:00:00Z.
const LEAP_DAY: i64 = 1_582_979_696_000;
const JULY_FOURTH: i64 = 1_720_051_200_000;

#[test]
fn map_formats_each_date_with_its_as_variable() {
    let document = doc! { "dates": [date(LEAP_DAY), date(JULY_FOURTH)] };
    let expr = bson!({ "$map": {
        "input": "$dates",
        "as": "d",
        "in": { "$dateToString": { "date": "$$d", "format": "%Y" } },
    } });
    assert_eq!(value_in(expr, &document), bson!(["2020", "2024"]));
    // The extractors, positional and named, with a zone from an enclosing `$let`.
    let expr = bson!({ "$let": { "vars": { "zone": "+05:30" }, "in": { "$map": {
        "input": "$dates",
        "in": [{ "$month": "$$this" }, { "$hour": { "date": "$$this", "timezone": "$$zone" } }],
    } } } });
    assert_eq!(value_in(expr, &document), bson!([[2, 18], [7, 5]]));
}

#[test]
fn filter_keeps_strings_by_their_code_point_length() {
    let expr = bson!({ "$filter": {
        "input": ["é", "héllo", "abc", "naïve"],
        "cond": { "$gt": [{ "$strLenCP": "$$this" }, 3] },
    } });
    assert_eq!(value(expr), bson!(["héllo", "naïve"]));
    // The family's own errors still apply to a bound value.
    let expr = bson!({ "$filter": { "input": [1], "cond": { "$strLenCP": "$$this" } } });
    assert_eq!(code(expr), 34471);
}

#[test]
fn reduce_concatenates_converted_values() {
    let expr = bson!({ "$reduce": {
        "input": [1, 2.5, true, "x"],
        "initialValue": "",
        "in": { "$concat": ["$$value", { "$toString": "$$this" }, ";"] },
    } });
    assert_eq!(value(expr), Bson::String("1;2.5;true;x;".to_owned()));
    let expr = bson!({ "$reduce": {
        "input": [1.25, 2.5],
        "initialValue": 1,
        "in": { "$round": [{ "$multiply": ["$$value", { "$pow": ["$$this", 2] }] }, 2] },
    } });
    // 1 * 1.5625 rounds to 1.56, and 1.56 * 6.25 is 9.75.
    assert_eq!(value(expr), Bson::Double(9.75));
}

#[test]
fn let_variables_feed_date_arithmetic() {
    let expr = bson!({ "$let": {
        "vars": { "start": date(LEAP_DAY), "n": 1, "unit": "year" },
        "in": { "$dateAdd": { "startDate": "$$start", "unit": "$$unit", "amount": "$$n" } },
    } });
    // 2020-02-29 plus a year is clamped to 2021-02-28, 365 days later.
    assert_eq!(value(expr), date(LEAP_DAY + 365 * 86_400_000));
    let expr = bson!({ "$let": {
        "vars": { "a": date(LEAP_DAY), "b": date(JULY_FOURTH) },
        "in": { "$dateDiff": { "startDate": "$$a", "endDate": "$$b", "unit": "year" } },
    } });
    assert_eq!(value(expr), Bson::Int64(4));
}

#[test]
fn convert_fallbacks_see_the_variables_and_stay_lazy() {
    // `onError` keeps the accumulator: the failed "x" leaves 3 in place.
    let expr = bson!({ "$reduce": {
        "input": ["1", "3", "x"],
        "initialValue": 0,
        "in": { "$convert": { "input": "$$this", "to": "int", "onError": "$$value" } },
    } });
    assert_eq!(value(expr), Bson::Int32(3));
    let expr = bson!({ "$let": { "vars": { "fallback": -1 }, "in": { "$map": {
        "input": ["7", "x", null],
        "as": "s",
        "in": { "$convert": {
            "input": "$$s",
            "to": "int",
            "onError": { "$concat": ["bad: ", "$$s"] },
            "onNull": "$$fallback",
        } },
    } } } });
    assert_eq!(value(expr), bson!([7, "bad: x", -1]));
    // A fallback that would fail is not evaluated when the conversion succeeds.
    let expr = bson!({ "$map": { "input": ["1"], "in": { "$convert": {
        "input": "$$this", "to": "int", "onError": { "$toInt": "$$this.nope.x" },
        "onNull": { "$dateToString": { "date": "$$this" } },
    } } } });
    assert_eq!(value(expr), bson!([1]));
}

#[test]
fn family_arguments_resolve_variables_when_parsed() {
    // Outside a binder `$$this` is undefined in every family, named argument or positional.
    for expr in [
        bson!({ "$strLenCP": "$$this" }),
        bson!({ "$trim": { "input": "$$this" } }),
        bson!({ "$dateToString": { "date": "$$NOW2" } }),
        bson!({ "$year": { "date": "$$d" } }),
        bson!({ "$sqrt": "$$value" }),
        bson!({ "$convert": { "input": 1, "to": "$$t" } }),
        bson!({ "$map": { "input": [], "as": "d", "in": { "$toInt": "$$this" } } }),
    ] {
        assert_eq!(code(expr.clone()), 17276, "{expr}");
    }
}

#[test]
fn a_rebound_current_is_what_field_paths_read_in_a_family() {
    let document = doc! { "name": "top", "sub": { "name": "inner", "at": date(JULY_FOURTH) } };
    let expr = bson!({ "$let": { "vars": { "CURRENT": "$sub" }, "in": [
        { "$toUpper": "$name" },
        { "$substrCP": ["$name", 0, 3] },
        { "$substrCP": ["$$ROOT.name", 0, 2] },
        { "$year": "$at" },
    ] } });
    assert_eq!(
        value_in(expr, &document),
        bson!(["INNER", "inn", "to", 2024])
    );
}

#[test]
fn scalar_operators_work_through_the_aggregate_command() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "dates": [date(LEAP_DAY), date(JULY_FOURTH)], "words": "a bb ccc" }],
    );
    let output = batch(&run_ok(
        &store,
        "db",
        doc! { "aggregate": "c", "cursor": {}, "pipeline": [{ "$project": {
            "_id": 0,
            "years": { "$map": {
                "input": "$dates", "as": "d",
                "in": { "$dateToString": { "date": "$$d", "format": "%Y" } },
            } },
            "long": { "$filter": {
                "input": { "$split": ["$words", " "] },
                "cond": { "$gte": [{ "$strLenCP": "$$this" }, 2] },
            } },
        } }] },
    ));
    assert_eq!(
        output,
        vec![doc! { "years": ["2020", "2024"], "long": ["bb", "ccc"] }]
    );
}

/// Evaluates `expr` with only `left` units of the work budget remaining.
fn eval_with_budget(expr: &Bson, left: u64) -> Result<Option<Bson>, i32> {
    let parsed = Expr::parse(expr).map_err(|error| error.code)?;
    let root = doc! {};
    let work = Work::default();
    let scope = Scope::new(&root, &work);
    let spent = usize::try_from(WORK_LIMIT - left).expect("the limit fits a usize");
    scope.charge(spent).map_err(|error| error.code)?;
    parsed.eval(&scope).map_err(|error| error.code)
}

#[test]
fn building_strings_is_charged_to_the_work_budget() {
    // 20,001 pieces, from a 40,000-byte literal (about 2,500 units to copy).
    let split = bson!({ "$split": ["a,".repeat(20_000), ","] });
    assert!(eval_with_budget(&split, 100_000).is_ok());
    assert_eq!(eval_with_budget(&split, 10_000), Err(262));
    // 1,000 matches building a 17,000-byte string from literals of about 70 units.
    let replace = bson!({ "$replaceAll": {
        "input": "a".repeat(1_000), "find": "a", "replacement": "b".repeat(16),
    } });
    assert!(eval_with_budget(&replace, 10_000).is_ok());
    assert_eq!(eval_with_budget(&replace, 1_500), Err(262));
    // A 2,000-byte format (125 units) writing "September" 1,000 times (about 560 units).
    let format = bson!({ "$dateToString": {
        "date": date(1_694_000_000_000), "format": "%B".repeat(1_000),
    } });
    assert!(eval_with_budget(&format, 10_000).is_ok());
    assert_eq!(eval_with_budget(&format, 400), Err(262));
}

#[test]
fn index_of_is_linear_on_a_hostile_input() {
    // Comparing the token at every position would take about 10^12 steps here.
    let input = "a".repeat(4 << 20);
    let token = format!("{}b", "a".repeat(1 << 20));
    for name in ["$indexOfBytes", "$indexOfCP"] {
        let expr = bson!({ name: [input.clone(), token.clone()] });
        assert_eq!(value(expr), Bson::Int32(-1), "{name}");
    }
    // A match starting before the end is found by code point, not by byte (whose match must
    // end by the end), and a byte start inside a character finds the next match.
    assert_eq!(
        value(bson!({ "$indexOfCP": ["abcd", "cd", 0, 3] })),
        Bson::Int32(2)
    );
    assert_eq!(
        value(bson!({ "$indexOfBytes": ["abcd", "cd", 0, 3] })),
        Bson::Int32(-1)
    );
    assert_eq!(
        value(bson!({ "$indexOfBytes": ["éaé", "a", 1] })),
        Bson::Int32(2)
    );
    assert_eq!(
        value(bson!({ "$indexOfCP": ["éaéa", "a", 2] })),
        Bson::Int32(3)
    );
}

#[test]
fn trim_is_linear_on_a_hostile_chars_list() {
    // Every input character is checked against `chars`: a list would make this 10^13 steps.
    let input = "a".repeat(4 << 20);
    let chars = format!("{}a", "b".repeat(4 << 20));
    let expr = bson!({ "$strLenCP": { "$trim": { "input": input, "chars": chars } } });
    assert_eq!(value(expr), Bson::Int32(0));
    let expr = bson!({ "$rtrim": { "input": "xxabcxyx", "chars": "yx" } });
    assert_eq!(value(expr), Bson::String("xxabc".to_owned()));
}
