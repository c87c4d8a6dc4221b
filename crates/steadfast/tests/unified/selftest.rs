//! Checks of the runner's pure parts (Extended JSON reading, matching, requirements, event
//! expectations), run before the suites: this binary has no libtest harness, so these are
//! its unit tests. Each case states its expectation; a failing case fails the run.

mod checks;
mod option_checks;
mod sdam_checks;

use bson::{Bson, Document, doc};

use crate::ejson;
use crate::matcher::{EntityValues, exactly_equal, match_nested, match_root, match_root_array};
use checks::{
    ejson_keeps_key_order, ejson_numbers, ejson_rejects_trailing, expected_events, mismatch_path,
    observation_filters, requirements_auth, requirements_topologies, requirements_unmet,
    static_skips, tally_counts_tests_and_cases, uri_options, versions,
};

/// How a matcher case compares.
#[derive(Clone, Copy)]
enum Mode {
    Root,
    Nested,
    RootArray,
    Exact,
    /// A client bulk write's `writeErrors` or `writeConcernErrors` in `expectError`.
    EachAsRoot,
}

/// (expected, actual or "<absent>", mode, should match)
const MATCH_CASES: &[(&str, &str, Mode, bool)] = &[
    // Root documents allow extra fields; nested ones do not.
    (r#"{"x": 1}"#, r#"{"x": 1, "y": 2}"#, Mode::Root, true),
    (r#"{"x": 1}"#, r#"{"x": 1, "y": 2}"#, Mode::Nested, false),
    (
        r#"{"a": {"x": 1}}"#,
        r#"{"a": {"x": 1, "y": 1}}"#,
        Mode::Root,
        false,
    ),
    (r#"{"x": 1, "y": 1}"#, r#"{"x": 1}"#, Mode::Root, false),
    // Key order does not matter.
    (
        r#"{"x": 1, "y": 1}"#,
        r#"{"y": 1, "x": 1}"#,
        Mode::Nested,
        true,
    ),
    // Flexible numerics, but not across values or types.
    (r#"{"ok": 1}"#, r#"{"ok": 1.0}"#, Mode::Root, true),
    (
        r#"{"n": {"$numberLong": "2"}}"#,
        r#"{"n": 2}"#,
        Mode::Root,
        true,
    ),
    (r#"{"ok": 1}"#, r#"{"ok": 1.5}"#, Mode::Root, false),
    (r#"{"ok": 1}"#, r#"{"ok": "1"}"#, Mode::Root, false),
    // Arrays: same length, elements nested.
    (r#"[1, 2, 3]"#, r#"[1, 2, 3, 4]"#, Mode::Nested, false),
    (
        r#"[{"x": 1}]"#,
        r#"[{"x": 1, "y": 1}]"#,
        Mode::Nested,
        false,
    ),
    (
        r#"[{"x": 1}]"#,
        r#"[{"x": 1, "y": 1}]"#,
        Mode::RootArray,
        true,
    ),
    (
        r#"[{"x": 1}]"#,
        r#"[{"x": 1}, {"x": 2}]"#,
        Mode::RootArray,
        false,
    ),
    // $$exists
    (
        r#"{"a": {"$$exists": true}}"#,
        r#"{"a": null}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$exists": true}}"#,
        r#"{"b": 1}"#,
        Mode::Root,
        false,
    ),
    (
        r#"{"a": {"$$exists": false}}"#,
        r#"{"b": 1}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$exists": false}}"#,
        r#"{"a": 1}"#,
        Mode::Root,
        false,
    ),
    // $$type, single and list, "number" alias, arrays not examined element-wise.
    (
        r#"{"a": {"$$type": "int"}}"#,
        r#"{"a": 1}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$type": "long"}}"#,
        r#"{"a": 1}"#,
        Mode::Root,
        false,
    ),
    (
        r#"{"a": {"$$type": ["int", "long"]}}"#,
        r#"{"a": {"$numberLong": "5"}}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$type": "number"}}"#,
        r#"{"a": 2.5}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$type": "array"}}"#,
        r#"{"a": [1, "x"]}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$type": "objectId"}}"#,
        r#"{"a": {"$oid": "000000000000000000000001"}}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"a": {"$$type": "string"}}"#,
        r#"{"b": "x"}"#,
        Mode::Root,
        false,
    ),
    // $$unsetOrMatches keeps root-ness and recurses.
    (
        r#"{"insertedId": {"$$unsetOrMatches": 2}}"#,
        r#"{}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"insertedId": {"$$unsetOrMatches": 2}}"#,
        r#"{"insertedId": 2}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"insertedId": {"$$unsetOrMatches": 2}}"#,
        r#"{"insertedId": 3}"#,
        Mode::Root,
        false,
    ),
    (
        r#"{"$$unsetOrMatches": {"n": 1}}"#,
        "<absent>",
        Mode::Root,
        true,
    ),
    (
        r#"{"$$unsetOrMatches": {"n": 1}}"#,
        r#"{"n": 1, "extra": 1}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"$$unsetOrMatches": {"n": 1}}"#,
        r#"{"n": 1, "extra": 1}"#,
        Mode::Nested,
        false,
    ),
    (
        r#"{"a": {"$$unsetOrMatches": {"$$type": "int"}}}"#,
        r#"{"a": "s"}"#,
        Mode::Root,
        false,
    ),
    // $$lte with flexible numerics.
    (r#"{"a": {"$$lte": 1}}"#, r#"{"a": 1.0}"#, Mode::Root, true),
    (r#"{"a": {"$$lte": 1}}"#, r#"{"a": 0}"#, Mode::Root, true),
    (r#"{"a": {"$$lte": 1}}"#, r#"{"a": 1.1}"#, Mode::Root, false),
    // $$matchesHexBytes against strings and binary.
    (
        r#"{"$$matchesHexBytes": "6869"}"#,
        r#""hi""#,
        Mode::Root,
        true,
    ),
    (
        r#"{"$$matchesHexBytes": "6869"}"#,
        r#"{"$binary": {"base64": "aGk=", "subType": "00"}}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"$$matchesHexBytes": "6870"}"#,
        r#""hi""#,
        Mode::Root,
        false,
    ),
    // $$matchAsDocument parses Extended JSON strings, nested by default; $$matchAsRoot relaxes.
    (
        r#"{"$$matchAsDocument": {"a": 1}}"#,
        r#""{\"a\": 1}""#,
        Mode::Root,
        true,
    ),
    (
        r#"{"$$matchAsDocument": {"a": 1}}"#,
        r#""{\"a\": 1, \"b\": 2}""#,
        Mode::Root,
        false,
    ),
    (
        r#"{"$$matchAsDocument": {"$$matchAsRoot": {"a": 1}}}"#,
        r#""{\"a\": 1, \"b\": 2}""#,
        Mode::Root,
        true,
    ),
    // Unknown operators and unknown entities fail.
    (r#"{"a": {"$$bogus": 1}}"#, r#"{"a": 1}"#, Mode::Root, false),
    (
        r#"{"a": {"$$sessionLsid": "nobody"}}"#,
        r#"{"a": {"id": 1}}"#,
        Mode::Root,
        false,
    ),
    (
        r#"{"lsid": {"$$sessionLsid": "session0"}}"#,
        r#"{"lsid": {"id": 7}}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"lsid": {"$$sessionLsid": "session0"}}"#,
        r#"{"lsid": {"id": 8}}"#,
        Mode::Root,
        false,
    ),
    (
        r#"{"_id": {"$$matchesEntity": "saved"}}"#,
        r#"{"_id": 42}"#,
        Mode::Root,
        true,
    ),
    // A single-key document whose key starts with one `$` is data, not an operator.
    (
        r#"{"q": {"$gt": 1}}"#,
        r#"{"q": {"$gt": 1}}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"q": {"$gt": 1}}"#,
        r#"{"q": {"$gt": 2}}"#,
        Mode::Root,
        false,
    ),
    // Outcome comparison: exact, but key order and numeric type are free.
    (
        r#"{"_id": 1, "x": 11}"#,
        r#"{"x": 11.0, "_id": 1}"#,
        Mode::Exact,
        true,
    ),
    (r#"{"_id": 1}"#, r#"{"_id": 1, "x": 1}"#, Mode::Exact, false),
    // NaN matches NaN (a stored NaN reads back), and nothing else.
    (
        r#"{"_id": {"$numberDouble": "NaN"}}"#,
        r#"{"_id": {"$numberDouble": "NaN"}}"#,
        Mode::Root,
        true,
    ),
    (
        r#"{"_id": {"$numberDouble": "NaN"}}"#,
        r#"{"_id": 1.0}"#,
        Mode::Root,
        false,
    ),
    // Client bulk write errors: each entry matches as a root document, and no entry may be
    // unexpected.
    (
        r#"{"1": {"code": 17276}}"#,
        r#"{"1": {"code": 17276, "message": "undefined variable"}}"#,
        Mode::EachAsRoot,
        true,
    ),
    (
        r#"{"1": {"code": 17276}}"#,
        r#"{"1": {"code": 17276}, "2": {"code": 11000}}"#,
        Mode::EachAsRoot,
        false,
    ),
    (
        r#"{"1": {"code": 17276}}"#,
        r#"{"0": {"code": 17276}}"#,
        Mode::EachAsRoot,
        false,
    ),
    (
        r#"[{"code": 91}]"#,
        r#"[{"code": 91, "message": "shutting down"}]"#,
        Mode::EachAsRoot,
        true,
    ),
    (
        r#"[{"code": 91}]"#,
        r#"[{"code": 91}, {"code": 64}]"#,
        Mode::EachAsRoot,
        false,
    ),
];

/// A named self-check.
type Check = fn() -> Result<(), String>;

struct SelfTestEntities;

impl EntityValues for SelfTestEntities {
    fn session_lsid(&self, id: &str) -> Option<Document> {
        (id == "session0").then(|| doc! { "id": 7 })
    }
    fn bson_entity(&self, id: &str) -> Option<Bson> {
        (id == "saved").then_some(Bson::Int32(42))
    }
}

/// Runs every self-test case; returns the failures (empty when all passed) and the count run.
pub(crate) fn run() -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    for (index, (expected, actual, mode, should_match)) in MATCH_CASES.iter().enumerate() {
        count += 1;
        if let Err(problem) = match_case(expected, actual, *mode, *should_match) {
            failures.push(format!(
                "matcher case {index} ({expected} vs {actual}): {problem}"
            ));
        }
    }
    let checks: &[(&str, Check)] = &[
        ("ejson keeps key order", ejson_keeps_key_order),
        ("ejson integer widths and wrappers", ejson_numbers),
        ("ejson rejects trailing text", ejson_rejects_trailing),
        ("version parsing and order", versions),
        ("requirements pick topologies", requirements_topologies),
        ("requirements report the first unmet", requirements_unmet),
        ("requirements choose authentication", requirements_auth),
        ("mismatch names the field", mismatch_path),
        ("observation filters", observation_filters),
        ("expected events in order", expected_events),
        ("uriOptions override and extend", uri_options),
        ("static skips follow the table", static_skips),
        ("tally counts tests and cases", tally_counts_tests_and_cases),
        (
            "SDAM events match by type",
            sdam_checks::sdam_events_match_by_type,
        ),
        (
            "session and SDAM skips",
            sdam_checks::session_and_sdam_skips,
        ),
        (
            "createIndex reads every index option",
            option_checks::index_options_read,
        ),
        ("readPreference hedge", option_checks::read_preference_hedge),
        (
            "unified test files recognised",
            crate::discovery::recognises_unified_files,
        ),
        (
            "valid-fail failures judged by their file",
            crate::valid_fail::judged_by_file,
        ),
    ];
    for (name, check) in checks {
        count += 1;
        if let Err(problem) = check() {
            failures.push(format!("{name}: {problem}"));
        }
    }
    (count, failures)
}

fn match_case(expected: &str, actual: &str, mode: Mode, should_match: bool) -> Result<(), String> {
    let expected = ejson::parse(expected)?;
    let actual = if actual == "<absent>" {
        None
    } else {
        Some(ejson::parse(actual)?)
    };
    let entities = SelfTestEntities;
    let outcome = match mode {
        Mode::Root => match_root(&expected, actual.as_ref(), &entities).map_err(|m| m.to_string()),
        Mode::Nested => {
            match_nested(&expected, actual.as_ref(), &entities).map_err(|m| m.to_string())
        }
        Mode::RootArray => match actual {
            Some(Bson::Array(items)) => {
                match_root_array(&expected, &items, &entities).map_err(|m| m.to_string())
            }
            _ => return Err("a RootArray case needs an array".to_owned()),
        },
        Mode::Exact => match actual {
            Some(actual) => exactly_equal(&expected, &actual).map_err(|m| m.to_string()),
            None => return Err("an Exact case needs a value".to_owned()),
        },
        Mode::EachAsRoot => {
            crate::expect_error::match_each_as_root(&expected, actual.as_ref(), &entities)
        }
    };
    match (outcome, should_match) {
        (Ok(()), true) | (Err(_), false) => Ok(()),
        (Ok(()), false) => Err("matched, but should not".to_owned()),
        (Err(m), true) => Err(format!("did not match: {m}")),
    }
}
