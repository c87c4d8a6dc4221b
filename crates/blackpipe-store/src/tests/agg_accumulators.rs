//! `$group` accumulators through the aggregate command: mongod 8.0's full set, their null and
//! missing rules, parse errors with mongod's codes, and the memory limits.

use bson::{Bson, Document, doc};

use super::{batch, error_code, insert, new_store, run, run_ok};
use crate::Store;

fn scores() -> Store {
    let store = new_store();
    insert(
        &store,
        "s",
        vec![
            doc! { "_id": 1, "g": "a", "score": 10, "name": "p1", "o": { "x": 1 } },
            doc! { "_id": 2, "g": "a", "score": 30, "name": "p2", "o": { "y": 2 } },
            doc! { "_id": 3, "g": "a", "score": 20, "name": "p3", "o": null },
            doc! { "_id": 4, "g": "b", "score": 5, "name": "p4", "o": { "x": 9 } },
            doc! { "_id": 5, "g": "b", "name": "p5" },
        ],
    );
    store
}

fn group(store: &Store, spec: Document) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "aggregate": "s", "pipeline": [{ "$group": spec }, { "$sort": { "_id": 1 } }], "cursor": {} },
    ))
}

fn group_error(store: &Store, spec: Document) -> (i32, String) {
    let reply = run(
        store,
        "db",
        doc! { "aggregate": "s", "pipeline": [{ "$group": spec }], "cursor": {} },
    );
    let code = error_code(&reply);
    (code, reply.get_str("errmsg").unwrap_or_default().to_owned())
}

#[test]
fn top_bottom_and_their_n_forms() {
    let store = scores();
    let out = group(
        &store,
        doc! {
            "_id": "$g",
            "top": { "$top": { "sortBy": { "score": -1 }, "output": "$name" } },
            "bottom": { "$bottom": { "sortBy": { "score": -1 }, "output": ["$name", "$score"] } },
            "top2": { "$topN": { "n": 2, "sortBy": { "score": -1 }, "output": "$name" } },
            "bottom2": { "$bottomN": { "n": 2, "sortBy": { "score": -1 }, "output": "$score" } },
        },
    );
    assert_eq!(out[0].get_str("top").unwrap(), "p2");
    assert_eq!(
        out[0].get("bottom"),
        Some(&Bson::Array(vec!["p1".into(), 10.into()]))
    );
    assert_eq!(
        out[0].get("top2"),
        Some(&Bson::Array(vec!["p2".into(), "p3".into()]))
    );
    // bottomN lists in sort order: the two lowest, highest first.
    assert_eq!(
        out[0].get("bottom2"),
        Some(&Bson::Array(vec![20.into(), 10.into()]))
    );
    // A missing sort field sorts as null (lowest); a missing output becomes null.
    assert_eq!(out[1].get_str("top").unwrap(), "p4");
    assert_eq!(
        out[1].get("bottom"),
        Some(&Bson::Array(vec!["p5".into(), Bson::Null]))
    );
    assert_eq!(
        out[1].get("bottom2"),
        Some(&Bson::Array(vec![5.into(), Bson::Null]))
    );
}

#[test]
fn top_bottom_errors() {
    let store = scores();
    let cases = [
        (doc! { "$top": 1 }, 5_788_001),
        (
            doc! { "$top": { "sortBy": { "a": 1 }, "output": 1, "n": 1 } },
            5_788_002,
        ),
        (
            doc! { "$topN": { "sortBy": { "a": 1 }, "output": 1 } },
            5_788_003,
        ),
        (doc! { "$bottom": { "sortBy": { "a": 1 } } }, 5_788_004),
        (doc! { "$bottomN": { "output": 1, "n": 2 } }, 5_788_005),
        (doc! { "$top": { "sortBy": 1, "output": 1 } }, 10065),
        (
            doc! { "$top": { "sortBy": { "a": 2 }, "output": 1 } },
            15975,
        ),
        (
            doc! { "$topN": { "sortBy": { "a": 1 }, "output": 1, "n": 0 } },
            5_787_908,
        ),
    ];
    for (accumulator, code) in cases {
        let (got, message) = group_error(&store, doc! { "_id": null, "x": accumulator.clone() });
        assert_eq!(got, code, "{accumulator}: {message}");
    }
    let (_, message) = group_error(
        &store,
        doc! { "_id": null, "x": { "$top": { "sortBy": { "a": 1 }, "output": 1, "n": 1 } } },
    );
    assert_eq!(message, "Unknown argument to $top 'n'");
}

#[test]
fn first_last_min_max_n_with_n_from_the_group_key() {
    let store = scores();
    let out = group(
        &store,
        doc! {
            "_id": { "g": "$g" },
            "first": { "$firstN": { "input": "$score", "n": { "$cond": [{ "$eq": ["$g", "a"] }, 2, 3] } } },
            "last": { "$lastN": { "input": "$score", "n": 2 } },
            "min": { "$minN": { "input": "$score", "n": 2 } },
            "max": { "$maxN": { "input": "$score", "n": 5 } },
        },
    );
    assert_eq!(
        out[0].get("first"),
        Some(&Bson::Array(vec![10.into(), 30.into()]))
    );
    assert_eq!(
        out[0].get("last"),
        Some(&Bson::Array(vec![30.into(), 20.into()]))
    );
    assert_eq!(
        out[0].get("min"),
        Some(&Bson::Array(vec![10.into(), 20.into()]))
    );
    assert_eq!(
        out[0].get("max"),
        Some(&Bson::Array(vec![30.into(), 20.into(), 10.into()]))
    );
    // Group b: n is 3 (key g is "b"); a missing score is null for $firstN, ignored by $minN.
    assert_eq!(
        out[1].get("first"),
        Some(&Bson::Array(vec![5.into(), Bson::Null]))
    );
    assert_eq!(out[1].get("min"), Some(&Bson::Array(vec![5.into()])));
}

#[test]
fn n_accumulator_errors() {
    let store = scores();
    let cases = [
        (doc! { "$firstN": 3 }, 5_787_801),
        (doc! { "$maxN": "x" }, 5_787_900),
        (
            doc! { "$minN": { "input": "$a", "n": 2, "k": 1 } },
            5_787_901,
        ),
        (doc! { "$lastN": { "input": "$a" } }, 5_787_906),
        (doc! { "$lastN": { "n": 1 } }, 5_787_907),
        (doc! { "$firstN": { "input": "$a", "n": "two" } }, 5_787_902),
        (doc! { "$firstN": { "input": "$a", "n": 1.5 } }, 5_787_903),
        (doc! { "$firstN": { "input": "$a", "n": -1 } }, 5_787_908),
        // n reads the group key: with a scalar key, "$g" is missing.
        (doc! { "$firstN": { "input": "$a", "n": "$g" } }, 5_787_902),
    ];
    for (accumulator, code) in cases {
        let (got, message) = group_error(&store, doc! { "_id": "$g", "x": accumulator.clone() });
        assert_eq!(got, code, "{accumulator}: {message}");
    }
}

#[test]
fn merge_objects_and_standard_deviations() {
    let store = scores();
    let out = group(
        &store,
        doc! {
            "_id": "$g",
            "merged": { "$mergeObjects": "$o" },
            "pop": { "$stdDevPop": "$score" },
            "samp": { "$stdDevSamp": "$score" },
        },
    );
    assert_eq!(
        out[0].get("merged"),
        Some(&Bson::Document(doc! { "x": 1, "y": 2 }))
    );
    assert_eq!(out[1].get("merged"), Some(&Bson::Document(doc! { "x": 9 })));
    let pop = out[0].get_f64("pop").unwrap();
    assert!((pop - 8.164_965_809_277_26).abs() < 1e-12, "{pop}");
    assert_eq!(out[0].get_f64("samp").unwrap(), 10.0);
    // One number: the population deviation is 0, the sample one null.
    assert_eq!(out[1].get_f64("pop").unwrap(), 0.0);
    assert_eq!(out[1].get("samp"), Some(&Bson::Null));
    let (code, message) = group_error(
        &store,
        doc! { "_id": null, "m": { "$mergeObjects": "$score" } },
    );
    assert_eq!(code, 40400);
    assert_eq!(
        message,
        "$mergeObjects requires object inputs, but input 10 is of type int"
    );
}

#[test]
fn median_and_percentile_are_mongods_discrete_answers_on_small_inputs() {
    let store = new_store();
    let docs: Vec<Document> = (1..=10)
        .map(|i| doc! { "_id": i, "v": f64::from(i) * 10.0 })
        .collect();
    insert(&store, "s", docs);
    insert(&store, "s", vec![doc! { "_id": 11, "v": "not a number" }]);
    let out = group(
        &store,
        doc! {
            "_id": null,
            "median": { "$median": { "input": "$v", "method": "approximate" } },
            "p": { "$percentile": { "input": "$v", "p": [0.0, 0.1, 0.25, 0.95, 1], "method": "approximate" } },
            "none": { "$percentile": { "input": "$nothing", "p": [0.5, 0.9], "method": "approximate" } },
            "noMedian": { "$median": { "input": "$nothing", "method": "approximate" } },
        },
    );
    // rank = ceil(p * n) - 1 over the sorted numbers.
    assert_eq!(out[0].get_f64("median").unwrap(), 50.0);
    assert_eq!(
        out[0].get("p"),
        Some(&Bson::Array(vec![
            10.0.into(),
            10.0.into(),
            30.0.into(),
            100.0.into(),
            100.0.into()
        ]))
    );
    assert_eq!(
        out[0].get("none"),
        Some(&Bson::Array(vec![Bson::Null, Bson::Null]))
    );
    assert_eq!(out[0].get("noMedian"), Some(&Bson::Null));
}

#[test]
fn percentile_over_many_values_stays_close_and_bounded() {
    let store = new_store();
    let docs: Vec<Document> = (0..20_000).map(|i| doc! { "_id": i, "v": i }).collect();
    insert(&store, "s", docs);
    let out = group(
        &store,
        doc! { "_id": null, "p": { "$percentile": { "input": "$v", "p": [0.5, 0.99], "method": "approximate" } } },
    );
    let Some(Bson::Array(answers)) = out[0].get("p") else {
        panic!("{out:?}");
    };
    let median = answers[0].as_f64().unwrap();
    let high = answers[1].as_f64().unwrap();
    assert!((median - 10_000.0).abs() < 50.0, "{median}");
    assert!((high - 19_800.0).abs() < 20.0, "{high}");
}

#[test]
fn percentile_errors() {
    let store = scores();
    let cases = [
        (doc! { "$percentile": 1 }, 7_429_703),
        (doc! { "$median": [] }, 40237),
        (doc! { "$median": "x" }, 7_436_100),
        (
            doc! { "$percentile": { "input": "$a", "method": "approximate" } },
            40414,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": [0.5], "method": "approximate", "x": 1 } },
            40415,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": [0.5], "method": "discrete" } },
            2,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": [0.5], "method": 1 } },
            14,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": "$p", "method": "approximate" } },
            7_750_300,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": [], "method": "approximate" } },
            7_750_301,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": ["x"], "method": "approximate" } },
            7_750_302,
        ),
        (
            doc! { "$percentile": { "input": "$a", "p": [1.5], "method": "approximate" } },
            7_750_303,
        ),
        (doc! { "$median": { "input": "$a" } }, 40414),
    ];
    for (accumulator, code) in cases {
        let (got, message) = group_error(&store, doc! { "_id": null, "x": accumulator.clone() });
        assert_eq!(got, code, "{accumulator}: {message}");
    }
}

#[test]
fn sum_and_avg_follow_mongods_types() {
    let store = new_store();
    insert(
        &store,
        "s",
        vec![
            doc! { "_id": 1, "i": 2_147_483_647, "l": i64::MAX, "a": [1, 2] },
            doc! { "_id": 2, "i": 1, "l": 1_i64, "a": 5 },
            doc! { "_id": 3, "i": "text", "l": -1_i64 },
        ],
    );
    let out = group(
        &store,
        doc! {
            "_id": null,
            "i": { "$sum": "$i" },
            "l": { "$sum": "$l" },
            "a": { "$sum": "$a" },
            "none": { "$sum": "$nothing" },
            "avg": { "$avg": "$i" },
            "avgNone": { "$avg": "$nothing" },
        },
    );
    // An int sum that overflows becomes a long; a long total that passes i64 in the middle
    // but ends inside it stays a long; arrays are not numbers for $group's $sum.
    assert_eq!(out[0].get("i"), Some(&Bson::Int64(2_147_483_648)));
    assert_eq!(out[0].get("l"), Some(&Bson::Int64(i64::MAX)));
    assert_eq!(out[0].get("a"), Some(&Bson::Int32(5)));
    assert_eq!(out[0].get("none"), Some(&Bson::Int32(0)));
    assert_eq!(out[0].get("avg"), Some(&Bson::Double(1_073_741_824.0)));
    assert_eq!(out[0].get("avgNone"), Some(&Bson::Null));
}

#[test]
fn group_field_errors_in_mongods_order() {
    let store = scores();
    let cases = [
        (doc! { "_id": null, "x": 1 }, 40234),
        (doc! { "_id": null, "x": { "a": 1 } }, 40234),
        (doc! { "_id": null, "x.y": { "$sum": 1 } }, 40235),
        (doc! { "_id": null, "$x": { "$sum": 1 } }, 40236),
        (doc! { "_id": null, "x": { "$sum": 1, "$avg": 1 } }, 40238),
        (doc! { "_id": null, "x": { "$sum": [1, 2] } }, 40237),
        (doc! { "_id": null, "x": { "$concatArrays": "$a" } }, 15952),
    ];
    for (spec, code) in cases {
        let (got, message) = group_error(&store, spec.clone());
        assert_eq!(got, code, "{spec}: {message}");
    }
}

#[test]
fn javascript_accumulator_and_function_are_refused_as_without_a_javascript_engine() {
    let store = scores();
    let accumulator = doc! { "$accumulator": {
        "init": "function() { return 0 }",
        "accumulate": "function(s, v) { return s + v }",
        "accumulateArgs": ["$score"],
        "merge": "function(a, b) { return a + b }",
        "lang": "js",
    } };
    let (code, message) = group_error(&store, doc! { "_id": null, "x": accumulator.clone() });
    assert_eq!(code, 31264);
    assert_eq!(
        message,
        "Cannot run server-side javascript without the javascript engine enabled"
    );
    // Over no documents no group starts, so mongod succeeds too.
    let empty = run_ok(
        &store,
        "db",
        doc! { "aggregate": "empty", "pipeline": [{ "$group": { "_id": null, "x": accumulator } }], "cursor": {} },
    );
    assert!(batch(&empty).is_empty());
    let bad = [
        (doc! { "$accumulator": 1 }, 4_544_703),
        (doc! { "$accumulator": { "init": 1 } }, 4_544_702),
        (doc! { "$accumulator": { "init": "$f" } }, 4_544_701),
        (doc! { "$accumulator": { "lang": "python" } }, 4_544_705),
        (doc! { "$accumulator": { "foo": 1 } }, 4_544_706),
        (
            doc! { "$accumulator": { "accumulate": "f", "merge": "f", "accumulateArgs": [] } },
            4_544_707,
        ),
        (
            doc! { "$accumulator": { "init": "f", "accumulate": "f", "merge": "f", "lang": "js" } },
            4_544_710,
        ),
    ];
    for (spec, code) in bad {
        let (got, message) = group_error(&store, doc! { "_id": null, "x": spec.clone() });
        assert_eq!(got, code, "{spec}: {message}");
    }
    let function = doc! { "$function": { "body": "function(x) { return x }", "args": ["$score"], "lang": "js" } };
    let reply = run(
        &store,
        "db",
        doc! { "aggregate": "s", "pipeline": [{ "$project": { "f": function } }], "cursor": {} },
    );
    assert_eq!(error_code(&reply), 31264);
    for (spec, code) in [
        (doc! { "$function": 1 }, 31260),
        (doc! { "$function": { "args": [], "lang": "js" } }, 31261),
        (
            doc! { "$function": { "body": 1, "args": [], "lang": "js" } },
            31262,
        ),
        (
            doc! { "$function": { "body": "$f", "args": [], "lang": "js" } },
            31432,
        ),
        (doc! { "$function": { "body": "f", "lang": "js" } }, 31263),
        (doc! { "$function": { "body": "f", "args": [] } }, 31418),
        (
            doc! { "$function": { "body": "f", "args": [], "lang": "py" } },
            31419,
        ),
    ] {
        let reply = run(
            &store,
            "db",
            doc! { "aggregate": "s", "pipeline": [{ "$project": { "f": spec.clone() } }], "cursor": {} },
        );
        assert_eq!(error_code(&reply), code, "{spec}: {reply}");
    }
}

#[test]
fn group_memory_limit_without_allow_disk_use_is_mongods_292() {
    let store = new_store();
    let big = "x".repeat(1024 * 1024);
    let docs: Vec<Document> = (0..110)
        .map(|i| doc! { "_id": i, "big": big.clone() })
        .collect();
    for chunk in docs.chunks(10) {
        insert(&store, "s", chunk.to_vec());
    }
    let pipeline = vec![doc! { "$group": { "_id": "$_id", "all": { "$push": "$big" } } }];
    let reply = run(
        &store,
        "db",
        doc! { "aggregate": "s", "pipeline": pipeline.clone(), "cursor": {}, "allowDiskUse": false },
    );
    assert_eq!(error_code(&reply), 292);
    assert_eq!(
        reply.get_str("codeName").unwrap_or_default(),
        "QueryExceededMemoryLimitNoDiskUseAllowed"
    );
    assert_eq!(
        reply.get_str("errmsg").unwrap_or_default(),
        "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in."
    );
    // mongod 8.0 spills by default; blackpipe holds the groups (well within its own bound).
    let reply = run(
        &store,
        "db",
        doc! { "aggregate": "s", "pipeline": [{ "$group": { "_id": "$_id", "n": { "$count": {} }, "b": { "$first": "$big" } } }, { "$count": "groups" }], "cursor": {} },
    );
    assert_eq!(batch(&reply), vec![doc! { "groups": 110 }]);
}

#[test]
fn one_push_is_bounded_at_mongods_100_mib() {
    let store = new_store();
    let big = "y".repeat(4 * 1024 * 1024);
    for chunk in 0..7 {
        let docs: Vec<Document> = (0..4)
            .map(|i| doc! { "_id": chunk * 4 + i, "big": big.clone() })
            .collect();
        insert(&store, "s", docs);
    }
    let reply = run(
        &store,
        "db",
        doc! { "aggregate": "s", "pipeline": [{ "$group": { "_id": null, "all": { "$push": "$big" } } }], "cursor": {} },
    );
    assert_eq!(error_code(&reply), 146);
    assert!(
        reply
            .get_str("errmsg")
            .unwrap_or_default()
            .starts_with("$push used too much memory and cannot spill to disk."),
        "{reply}"
    );
}
