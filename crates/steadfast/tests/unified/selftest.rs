//! Checks of the runner's pure parts (Extended JSON reading, matching, requirements, event
//! expectations), run before the suites: this binary has no libtest harness, so these are
//! its unit tests. Each case states its expectation; a failing case fails the run.

use bson::{Bson, Document, doc};

use crate::ejson;
use crate::events::{self, CommandObserved, CommandStage, Observation, Observed};
use crate::matcher::{
    EntityValues, NoEntities, exactly_equal, match_nested, match_root, match_root_array,
};
use crate::requirements::{Topology, Version, satisfied_on};
use crate::skips::Key;

/// How a matcher case compares.
#[derive(Clone, Copy)]
enum Mode {
    Root,
    Nested,
    RootArray,
    Exact,
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
        ("mismatch names the field", mismatch_path),
        ("observation filters", observation_filters),
        ("expected events in order", expected_events),
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
        Mode::Root => match_root(&expected, actual.as_ref(), &entities),
        Mode::Nested => match_nested(&expected, actual.as_ref(), &entities),
        Mode::RootArray => match actual {
            Some(Bson::Array(items)) => match_root_array(&expected, &items, &entities),
            _ => return Err("a RootArray case needs an array".to_owned()),
        },
        Mode::Exact => match actual {
            Some(actual) => exactly_equal(&expected, &actual),
            None => return Err("an Exact case needs a value".to_owned()),
        },
    };
    match (outcome, should_match) {
        (Ok(()), true) | (Err(_), false) => Ok(()),
        (Ok(()), false) => Err("matched, but should not".to_owned()),
        (Err(m), true) => Err(format!("did not match: {m}")),
    }
}

fn expect(condition: bool, what: &str) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(what.to_owned())
    }
}

fn ejson_keeps_key_order() -> Result<(), String> {
    let parsed = ejson::parse_document(r#"{"z": 1, "a": {"y": 1, "b": 2}, "m": 3}"#)?;
    let keys: Vec<&str> = parsed.keys().map(String::as_str).collect();
    expect(keys == ["z", "a", "m"], "top-level keys reordered")?;
    let inner = parsed.get_document("a").map_err(|e| e.to_string())?;
    let keys: Vec<&str> = inner.keys().map(String::as_str).collect();
    expect(keys == ["y", "b"], "nested keys reordered")
}

fn ejson_numbers() -> Result<(), String> {
    let parsed = ejson::parse_document(
        r#"{"small": 5, "negative": -1, "big": 3000000000, "long": {"$numberLong": "1"},
            "double": 1.0, "oid": {"$oid": "5f0000000000000000000000"}, "date": {"$date": {"$numberLong": "0"}}}"#,
    )?;
    expect(
        parsed.get("small") == Some(&Bson::Int32(5)),
        "5 is not an int32",
    )?;
    expect(
        parsed.get("negative") == Some(&Bson::Int32(-1)),
        "-1 is not an int32",
    )?;
    expect(
        parsed.get("big") == Some(&Bson::Int64(3_000_000_000)),
        "3e9 is not an int64",
    )?;
    expect(
        parsed.get("long") == Some(&Bson::Int64(1)),
        "$numberLong is not an int64",
    )?;
    expect(
        parsed.get("double") == Some(&Bson::Double(1.0)),
        "1.0 is not a double",
    )?;
    expect(
        matches!(parsed.get("oid"), Some(Bson::ObjectId(_))),
        "$oid not decoded",
    )?;
    expect(
        matches!(parsed.get("date"), Some(Bson::DateTime(_))),
        "$date not decoded",
    )
}

fn ejson_rejects_trailing() -> Result<(), String> {
    expect(
        ejson::parse(r#"{"a": 1} x"#).is_err(),
        "trailing text accepted",
    )?;
    expect(
        ejson::parse_document("[1]").is_err(),
        "an array accepted as a document",
    )
}

fn versions() -> Result<(), String> {
    expect(
        Version::parse("4.0.10")? > Version::parse("4.0.9")?,
        "4.0.10 <= 4.0.9",
    )?;
    expect(
        Version::parse("4.0.10")? > Version::parse("3.6")?,
        "4.0.10 <= 3.6",
    )?;
    expect(
        Version::parse("4.0.10")? < Version::parse("4.2.0")?,
        "4.0.10 >= 4.2.0",
    )?;
    expect(
        Version::parse("4.9.0-alpha4-271-g7d5cf02")? == Version(4, 9, 0),
        "pre-release suffix kept",
    )?;
    expect(
        Version::parse("8")? == Version(8, 0, 0),
        "missing components are not zero",
    )?;
    expect(Version::parse("x.1").is_err(), "garbage accepted")
}

fn requirements_topologies() -> Result<(), String> {
    let v8 = Version(8, 0, 0);
    let parse = |text: &str| ejson::parse(text);
    let list = parse(r#"[{"minServerVersion": "4.0", "topologies": ["single", "replicaset"]}]"#)?;
    let got = satisfied_on(Some(&list), v8)?.map_err(|u| u.detail)?;
    expect(
        got == [Topology::ReplicaSet, Topology::Single],
        "single+replicaset",
    )?;
    let list =
        parse(r#"[{"topologies": ["sharded", "load-balanced"]}, {"topologies": ["single"]}]"#)?;
    let got = satisfied_on(Some(&list), v8)?.map_err(|u| u.detail)?;
    expect(
        got == [Topology::Sharded, Topology::Single],
        "any requirement may hold",
    )?;
    let got = satisfied_on(None, v8)?.map_err(|u| u.detail)?;
    expect(got == Topology::ALL, "no requirements means every topology")?;
    let list = parse(r#"[{"serverless": "forbid", "minServerVersion": "8.0"}]"#)?;
    let got = satisfied_on(Some(&list), v8)?.map_err(|u| u.detail)?;
    expect(got == Topology::ALL, "serverless forbid holds")?;
    let list = parse(r#"[{"bogusField": 1}]"#)?;
    expect(
        satisfied_on(Some(&list), v8).is_err(),
        "unknown field accepted",
    )
}

fn requirements_unmet() -> Result<(), String> {
    let v8 = Version(8, 0, 0);
    let list = ejson::parse(r#"[{"minServerVersion": "4.2", "maxServerVersion": "4.2.99"}]"#)?;
    let unmet = satisfied_on(Some(&list), v8)?
        .err()
        .ok_or("4.2-only ran on 8.0")?;
    expect(
        unmet.key == Key::Requirement("version"),
        "wrong key for a version range",
    )?;
    let list = ejson::parse(r#"[{"auth": true, "topologies": ["replicaset"]}]"#)?;
    let unmet = satisfied_on(Some(&list), v8)?.err().ok_or("auth ran")?;
    expect(
        unmet.key == Key::Requirement("auth") || unmet.key == Key::Requirement("topologies"),
        "wrong key for auth",
    )?;
    let list = ejson::parse(r#"[{"topologies": ["load-balanced"]}]"#)?;
    let unmet = satisfied_on(Some(&list), v8)?
        .err()
        .ok_or("load-balanced ran")?;
    expect(
        unmet.key == Key::Requirement("topologies"),
        "wrong key for load-balanced",
    )
}

fn mismatch_path() -> Result<(), String> {
    let expected = ejson::parse(r#"{"a": {"b": [1, {"c": 2}]}}"#)?;
    let actual = ejson::parse(r#"{"a": {"b": [1, {"c": 3}]}}"#)?;
    let mismatch = match_root(&expected, Some(&actual), &NoEntities)
        .err()
        .ok_or("matched")?;
    expect(
        mismatch.path == "$.a.b.1.c",
        &format!("path was {}", mismatch.path),
    )
}

fn started(name: &str, command: Document) -> Observed {
    Observed::Command(CommandObserved {
        stage: CommandStage::Started,
        command_name: name.to_owned(),
        database_name: "db".to_owned(),
        document: command,
        has_service_id: false,
        has_server_connection_id: true,
    })
}

fn failed(name: &str) -> Observed {
    Observed::Command(CommandObserved {
        stage: CommandStage::Failed,
        command_name: name.to_owned(),
        database_name: "db".to_owned(),
        document: Document::new(),
        has_service_id: false,
        has_server_connection_id: true,
    })
}

fn observation_filters() -> Result<(), String> {
    let observation = Observation {
        observe: vec!["commandStartedEvent".to_owned()],
        ignore_commands: vec!["killCursors".to_owned()],
        observe_sensitive: false,
    };
    expect(observation.keeps(&started("find", doc! {})), "find dropped")?;
    expect(!observation.keeps(&failed("find")), "unobserved type kept")?;
    expect(
        !observation.keeps(&started("killCursors", doc! {})),
        "ignored command kept",
    )?;
    expect(
        !observation.keeps(&started("configureFailPoint", doc! {})),
        "configureFailPoint kept",
    )?;
    expect(
        !observation.keeps(&started("saslStart", doc! {})),
        "sensitive command kept",
    )?;
    expect(
        !observation.keeps(&started("hello", doc! {})),
        "redacted hello kept",
    )?;
    let cmap = Observed::Cmap {
        name: "connectionCheckedOutEvent",
        fields: doc! {},
    };
    expect(!observation.keeps(&cmap), "unobserved CMAP event kept")
}

fn expected_events() -> Result<(), String> {
    let observed = vec![
        started(
            "insert",
            doc! { "insert": "coll", "documents": [{ "_id": 1 }], "lsid": { "id": 1 } },
        ),
        Observed::Cmap {
            name: "connectionCheckedOutEvent",
            fields: doc! {},
        },
        failed("insert"),
        started(
            "insert",
            doc! { "insert": "coll", "documents": [{ "_id": 1 }] },
        ),
    ];
    let good = ejson::parse_document(
        r#"{"client": "c", "events": [
            {"commandStartedEvent": {"command": {"insert": "coll", "documents": [{"_id": 1}]}, "commandName": "insert", "databaseName": "db"}},
            {"commandFailedEvent": {"commandName": "insert"}},
            {"commandStartedEvent": {"commandName": "insert", "hasServerConnectionId": true}}]}"#,
    )?;
    events::check(&good, &observed, &NoEntities)?;
    let too_few = ejson::parse_document(
        r#"{"client": "c", "events": [{"commandStartedEvent": {"commandName": "insert"}}]}"#,
    )?;
    expect(
        events::check(&too_few, &observed, &NoEntities).is_err(),
        "extra events accepted",
    )?;
    let ignoring = ejson::parse_document(
        r#"{"client": "c", "ignoreExtraEvents": true, "events": [{"commandStartedEvent": {"commandName": "insert"}}]}"#,
    )?;
    events::check(&ignoring, &observed, &NoEntities)?;
    let wrong_order = ejson::parse_document(
        r#"{"client": "c", "ignoreExtraEvents": true, "events": [{"commandFailedEvent": {}}]}"#,
    )?;
    expect(
        events::check(&wrong_order, &observed, &NoEntities).is_err(),
        "wrong event type accepted",
    )?;
    let cmap = ejson::parse_document(
        r#"{"client": "c", "eventType": "cmap", "events": [{"connectionCheckedOutEvent": {}}]}"#,
    )?;
    events::check(&cmap, &observed, &NoEntities)?;
    let nested_extra = ejson::parse_document(
        r#"{"client": "c", "ignoreExtraEvents": true, "events": [
            {"commandStartedEvent": {"command": {"documents": [{}]}}}]}"#,
    )?;
    expect(
        events::check(&nested_extra, &observed, &NoEntities).is_err(),
        "nested extra field accepted",
    )
}
