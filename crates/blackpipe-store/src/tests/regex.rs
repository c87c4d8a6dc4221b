//! Regular expressions: in filters (BSON regexes, `$regex`/`$options`, inside `$in`, `$nin`,
//! `$not` and `$all`), in `$pull`, and behind `$regexMatch`/`$regexFind`/`$regexFindAll`.

use bson::{Bson, Document, doc};

use super::{error_code, ids, insert, new_store, run, run_ok};
use crate::query::Filter;

/// A BSON regular expression value.
fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(bson::Regex {
        pattern: pattern.to_owned().try_into().expect("no NUL"),
        options: options.to_owned().try_into().expect("no NUL"),
    })
}

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

#[test]
fn a_regex_matches_strings_symbols_array_elements_and_an_equal_stored_regex() {
    assert!(matches(
        doc! { "name": re("^ann", "i") },
        doc! { "name": "Anna" }
    ));
    assert!(!matches(
        doc! { "name": re("^ann", "") },
        doc! { "name": "Anna" }
    ));
    assert!(matches(
        doc! { "tags": re("^b", "") },
        doc! { "tags": ["a", "bc"] }
    ));
    assert!(matches(
        doc! { "s": re("^x", "") },
        doc! { "s": Bson::Symbol("xy".into()) }
    ));
    assert!(!matches(doc! { "n": re("1", "") }, doc! { "n": 1 }));
    assert!(!matches(doc! { "n": re("a", "") }, doc! {}));
    // mongod's rule: a regex in an equality filter also matches an equal stored regex...
    assert!(matches(
        doc! { "r": re("^a", "i") },
        doc! { "r": re("^a", "i") }
    ));
    assert!(!matches(
        doc! { "r": re("^a", "i") },
        doc! { "r": re("^a", "") }
    ));
    // ... and `$eq` compares the regex as a value only.
    assert!(matches(
        doc! { "r": { "$eq": re("^a", "") } },
        doc! { "r": re("^a", "") }
    ));
    assert!(!matches(
        doc! { "r": { "$eq": re("^a", "") } },
        doc! { "r": "abc" }
    ));
}

#[test]
fn the_four_options_mean_what_pcre_means() {
    let text = doc! { "t": "first line\nSecond line" };
    assert!(matches(
        doc! { "t": { "$regex": "^second", "$options": "im" } },
        text.clone()
    ));
    assert!(!matches(
        doc! { "t": { "$regex": "^second", "$options": "i" } },
        text.clone()
    ));
    assert!(matches(
        doc! { "t": { "$regex": "line.second", "$options": "si" } },
        text.clone()
    ));
    assert!(!matches(
        doc! { "t": { "$regex": "line.second", "$options": "i" } },
        text.clone()
    ));
    assert!(matches(
        doc! { "t": { "$regex": "first \\s line # a comment", "$options": "x" } },
        text
    ));
}

#[test]
fn regex_and_options_combine_in_each_documented_form() {
    let anna = doc! { "name": "Anna" };
    assert!(matches(
        doc! { "name": { "$regex": "^an", "$options": "i" } },
        anna.clone()
    ));
    assert!(matches(
        doc! { "name": { "$options": "i", "$regex": "^an" } },
        anna.clone()
    ));
    assert!(matches(
        doc! { "name": { "$regex": re("^an", "i") } },
        anna.clone()
    ));
    assert!(matches(
        doc! { "name": { "$regex": re("^an", ""), "$options": "i" } },
        anna.clone()
    ));
    assert!(matches(
        doc! { "name": { "$regex": "nn", "$ne": "Anna" } },
        doc! { "name": "Anne" }
    ));
    assert!(!matches(
        doc! { "name": { "$regex": "nn", "$ne": "Anna" } },
        anna
    ));
}

#[test]
fn regexes_inside_in_nin_not_all_and_elem_match() {
    let doc = doc! { "name": "Bob", "tags": ["red", "green"] };
    assert!(matches(
        doc! { "name": { "$in": [re("^b", "i"), "Zed"] } },
        doc.clone()
    ));
    assert!(matches(
        doc! { "name": { "$in": ["Zed", "Bob"] } },
        doc.clone()
    ));
    assert!(!matches(
        doc! { "name": { "$nin": [re("^b", "i")] } },
        doc.clone()
    ));
    assert!(matches(
        doc! { "name": { "$nin": [re("^z", "")] } },
        doc.clone()
    ));
    assert!(matches(
        doc! { "name": { "$not": re("^z", "") } },
        doc.clone()
    ));
    assert!(!matches(
        doc! { "name": { "$not": re("^B", "") } },
        doc.clone()
    ));
    assert!(matches(
        doc! { "name": { "$not": { "$regex": "^z" } } },
        doc.clone()
    ));
    assert!(matches(
        doc! { "tags": { "$all": [re("^r", ""), re("^g", "")] } },
        doc.clone()
    ));
    assert!(!matches(
        doc! { "tags": { "$all": [re("^r", ""), re("^b", "")] } },
        doc.clone()
    ));
    assert!(matches(
        doc! { "tags": { "$elemMatch": { "$regex": "ee" } } },
        doc
    ));
    // A stored regex is matched by an equal regex of `$in`.
    assert!(matches(
        doc! { "r": { "$in": [re("^a", "")] } },
        doc! { "r": re("^a", "") }
    ));
    // `_id: {$in: [/re/]}` is not an index lookup by equality.
    assert!(
        Filter::parse(&doc! { "_id": { "$in": [re("^a", "")] } })
            .unwrap()
            .id_candidates()
            .is_none()
    );
}

#[test]
fn malformed_regex_filters_get_mongods_errors() {
    assert_eq!(parse_error(doc! { "a": { "$regex": "[)" } }).0, 51091);
    let (code, message) = parse_error(doc! { "a": { "$regex": "a(?=b)" } });
    assert_eq!(code, 51091);
    assert!(
        message.starts_with("Regular expression is invalid: "),
        "{message}"
    );
    assert_eq!(parse_error(doc! { "a": { "$regex": "(a)\\1" } }).0, 51091);
    assert_eq!(parse_error(doc! { "a": { "$regex": "ab\0c" } }).0, 2);
    let (code, message) = parse_error(doc! { "a": { "$regex": "ab", "$options": "g" } });
    assert_eq!(
        (code, message.as_str()),
        (51108, " invalid flag in regex options: g")
    );
    assert_eq!(parse_error(doc! { "a": re("a", "g") }).0, 51108);
    assert_eq!(
        parse_error(doc! { "a": { "$regex": re("a", "i"), "$options": "m" } }),
        (2, "options set in both $regex and $options".to_owned())
    );
    assert_eq!(
        parse_error(doc! { "a": { "$options": "i" } }),
        (2, "$options needs a $regex".to_owned())
    );
    assert_eq!(
        parse_error(doc! { "a": { "$regex": 5 } }),
        (2, "$regex has to be a string".to_owned())
    );
    assert_eq!(
        parse_error(doc! { "a": { "$regex": "a", "$options": 1 } }),
        (2, "$options has to be a string".to_owned())
    );
    assert_eq!(
        parse_error(doc! { "a": { "$ne": re("a", "") } }),
        (2, "Can't have regex as arg to $ne.".to_owned())
    );
    assert_eq!(
        parse_error(doc! { "a": { "$gt": re("a", "") } }),
        (
            2,
            "Can't have RegEx as arg to predicate over field 'a'.".to_owned()
        )
    );
    assert_eq!(
        parse_error(doc! { "a": { "$in": [{ "$regex": "a" }] } }).0,
        2
    );
    assert_eq!(
        parse_error(doc! { "a": { "$regex": "c".repeat(40_000) } }).0,
        51091
    );
}

#[test]
fn find_count_and_delete_use_regexes() {
    let store = new_store();
    insert(
        &store,
        "people",
        vec![
            doc! { "_id": 1, "name": "Ann" },
            doc! { "_id": 2, "name": "anna" },
            doc! { "_id": 3, "name": "Bob" },
        ],
    );
    assert_eq!(
        ids(&store, "people", doc! { "name": re("^ann", "i") }),
        vec![1, 2]
    );
    let count = run_ok(
        &store,
        "db",
        doc! { "count": "people", "query": { "name": { "$regex": "^A" } } },
    );
    assert_eq!(count.get_i32("n").ok(), Some(1));
    let reply = run(
        &store,
        "db",
        doc! { "find": "people", "filter": { "name": { "$regex": "(" } } },
    );
    assert_eq!(error_code(&reply), 51091);
    run_ok(
        &store,
        "db",
        doc! { "delete": "people", "deletes": [{ "q": { "name": re("b$", "") }, "limit": 0 }] },
    );
    assert_eq!(ids(&store, "people", doc! {}), vec![1, 2]);
}

#[test]
fn pull_with_a_regex_removes_the_matching_strings() {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "tags": ["apple", "Avocado", "banana", 7] }],
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$pull": { "tags": re("^a", "i") } } }] },
    );
    let found = super::find(&store, "c", doc! {});
    assert_eq!(found, vec![doc! { "_id": 1, "tags": ["banana", 7] }]);
}

fn project_one(store: &crate::Store, expression: Document) -> Document {
    let reply = run_ok(
        store,
        "db",
        doc! {
            "aggregate": "t",
            "pipeline": [{ "$project": { "_id": 0, "r": expression } }],
            "cursor": {},
        },
    );
    super::batch(&reply).remove(0)
}

fn expression_error(store: &crate::Store, expression: Document) -> i32 {
    let reply = run(
        store,
        "db",
        doc! {
            "aggregate": "t",
            "pipeline": [{ "$project": { "_id": 0, "r": expression } }],
            "cursor": {},
        },
    );
    error_code(&reply)
}

#[test]
fn regex_expressions_match_find_and_find_all() {
    let store = new_store();
    insert(
        &store,
        "t",
        vec![doc! { "_id": 1, "text": "Hello héllo hello", "n": 5 }],
    );
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexMatch": { "input": "$text", "regex": "^hello", "options": "i" } }
        ),
        doc! { "r": true }
    );
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexFind": { "input": "$text", "regex": re("h(é|e)(l+)o", "") } }
        ),
        doc! { "r": { "match": "héllo", "idx": 6, "captures": ["é", "ll"] } }
    );
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexFindAll": { "input": "$text", "regex": "h(x)?(é|e)llo" } }
        ),
        doc! { "r": [
            { "match": "héllo", "idx": 6, "captures": [Bson::Null, "é"] },
            { "match": "hello", "idx": 12, "captures": [Bson::Null, "e"] },
        ] }
    );
    // Empty matches advance one code point at a time.
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexFindAll": { "input": "aé", "regex": "" } }
        ),
        doc! { "r": [
            { "match": "", "idx": 0, "captures": [] },
            { "match": "", "idx": 1, "captures": [] },
            { "match": "", "idx": 2, "captures": [] },
        ] }
    );
    // A null input or regex answers no match.
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexFind": { "input": "$missing", "regex": "a" } }
        ),
        doc! { "r": Bson::Null }
    );
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexFindAll": { "input": "$text", "regex": Bson::Null } }
        ),
        doc! { "r": [] }
    );
    assert_eq!(
        project_one(
            &store,
            doc! { "$regexMatch": { "input": Bson::Null, "regex": "a" } }
        ),
        doc! { "r": false }
    );
}

#[test]
fn regex_expressions_refuse_bad_arguments_with_mongods_codes() {
    let store = new_store();
    insert(&store, "t", vec![doc! { "_id": 1, "text": "ABCD", "n": 5 }]);
    let cases: Vec<(Document, i32)> = vec![
        (doc! { "input": "$text", "regex": 123 }, 51105),
        (
            doc! { "input": "$text", "regex": ".*", "options": 123 },
            51106,
        ),
        (
            doc! { "input": "$text", "regex": re(".*", "i"), "options": "s" },
            51107,
        ),
        (doc! { "input": "$text", "regex": "[a-b]+\0[c-d]+" }, 51109),
        (
            doc! { "input": "$text", "regex": ".*", "options": "i\0s" },
            51110,
        ),
        (doc! { "input": "$text", "regex": "[a-" }, 51111),
        (
            doc! { "input": "$text", "regex": ".*", "options": "ish" },
            51108,
        ),
        (doc! { "input": "$n", "regex": "a" }, 51104),
        (doc! { "regex": "a" }, 31022),
        (doc! { "input": "$text" }, 31023),
        (doc! { "input": "$text", "regex": "a", "flags": "i" }, 31024),
    ];
    for operator in ["$regexMatch", "$regexFind", "$regexFindAll"] {
        for (arguments, code) in &cases {
            let mut expression = Document::new();
            expression.insert(operator, arguments.clone());
            assert_eq!(
                expression_error(&store, expression.clone()),
                *code,
                "{expression}"
            );
        }
        let mut not_object = Document::new();
        not_object.insert(operator, "a");
        assert_eq!(expression_error(&store, not_object), 51103);
        // Patterns read from the document are checked per document.
        let mut dynamic = Document::new();
        dynamic.insert(operator, doc! { "input": "$text", "regex": "$n" });
        assert_eq!(expression_error(&store, dynamic), 51105);
    }
}

#[test]
fn regex_match_serves_expr_filters_with_patterns_from_the_document() {
    let store = new_store();
    insert(
        &store,
        "t",
        vec![
            doc! { "_id": 1, "text": "apple", "pattern": "^a" },
            doc! { "_id": 2, "text": "banana", "pattern": "^a" },
            doc! { "_id": 3, "text": "cherry", "pattern": "RR", "flags": "i" },
        ],
    );
    let filter = doc! { "$expr": { "$regexMatch": { "input": "$text", "regex": "$pattern", "options": "$flags" } } };
    assert_eq!(ids(&store, "t", filter), vec![1, 3]);
}
