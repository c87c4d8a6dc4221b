//! The named self-checks of the runner's pure parts.

use bson::{Bson, Document, doc};

use crate::ejson;
use crate::entities::with_uri_options;
use crate::events::{self, CommandObserved, CommandStage, Observation, Observed};
use crate::matcher::{NoEntities, match_root};
use crate::model::TestFile;
use crate::requirements::{AuthNeed, Topology, Version, satisfied_on};
use crate::skips::Key;
use crate::tally::{Counts, Tally};

pub(super) fn expect(condition: bool, what: &str) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(what.to_owned())
    }
}

pub(super) fn ejson_keeps_key_order() -> Result<(), String> {
    let parsed = ejson::parse_document(r#"{"z": 1, "a": {"y": 1, "b": 2}, "m": 3}"#)?;
    let keys: Vec<&str> = parsed.keys().map(String::as_str).collect();
    expect(keys == ["z", "a", "m"], "top-level keys reordered")?;
    let inner = parsed.get_document("a").map_err(|e| e.to_string())?;
    let keys: Vec<&str> = inner.keys().map(String::as_str).collect();
    expect(keys == ["y", "b"], "nested keys reordered")
}

pub(super) fn ejson_numbers() -> Result<(), String> {
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

pub(super) fn ejson_rejects_trailing() -> Result<(), String> {
    expect(
        ejson::parse(r#"{"a": 1} x"#).is_err(),
        "trailing text accepted",
    )?;
    expect(
        ejson::parse_document("[1]").is_err(),
        "an array accepted as a document",
    )
}

pub(super) fn versions() -> Result<(), String> {
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

/// The topologies of [`satisfied_on`]'s answer, dropping the authentication needs.
fn topologies_on(list: Option<&bson::Bson>, version: Version) -> Result<Vec<Topology>, String> {
    let got = satisfied_on(list, version)?.map_err(|u| u.detail)?;
    Ok(got.into_iter().map(|(topology, _)| topology).collect())
}

pub(super) fn requirements_topologies() -> Result<(), String> {
    let v8 = Version(8, 0, 0);
    let parse = |text: &str| ejson::parse(text);
    let list = parse(r#"[{"minServerVersion": "4.0", "topologies": ["single", "replicaset"]}]"#)?;
    let got = topologies_on(Some(&list), v8)?;
    expect(
        got == [Topology::ReplicaSet, Topology::Single],
        "single+replicaset",
    )?;
    let list =
        parse(r#"[{"topologies": ["sharded", "load-balanced"]}, {"topologies": ["single"]}]"#)?;
    let got = topologies_on(Some(&list), v8)?;
    expect(
        got == [Topology::Sharded, Topology::Single, Topology::LoadBalanced],
        "any requirement may hold",
    )?;
    let got = topologies_on(None, v8)?;
    expect(
        got == Topology::CANDIDATES,
        "no requirements means every topology",
    )?;
    let list = parse(r#"[{"serverless": "forbid", "minServerVersion": "8.0"}]"#)?;
    let got = topologies_on(Some(&list), v8)?;
    expect(got == Topology::CANDIDATES, "serverless forbid holds")?;
    let list = parse(r#"[{"minServerVersion": "4.0"}]"#)?;
    let got = topologies_on(Some(&list), v8)?;
    expect(
        got == Topology::CANDIDATES,
        "a requirement naming no topology allows every one, load-balanced included",
    )?;
    let list = parse(r#"[{"bogusField": 1}]"#)?;
    expect(
        satisfied_on(Some(&list), v8).is_err(),
        "unknown field accepted",
    )
}

pub(super) fn requirements_unmet() -> Result<(), String> {
    let v8 = Version(8, 0, 0);
    let list = ejson::parse(r#"[{"minServerVersion": "4.2", "maxServerVersion": "4.2.99"}]"#)?;
    let unmet = satisfied_on(Some(&list), v8)?
        .err()
        .ok_or("4.2-only ran on 8.0")?;
    expect(
        unmet.key == Key::Requirement("version"),
        "wrong key for a version range",
    )?;
    let list = ejson::parse(r#"[{"authMechanism": "GSSAPI"}]"#)?;
    let unmet = satisfied_on(Some(&list), v8)?.err().ok_or("GSSAPI ran")?;
    expect(
        unmet.key == Key::Requirement("authMechanism"),
        "wrong key for an unsupported authMechanism",
    )?;
    let list = ejson::parse(r#"[{"topologies": ["sharded-replicaset"]}]"#)?;
    let unmet = satisfied_on(Some(&list), v8)?
        .err()
        .ok_or("sharded-replicaset ran")?;
    expect(
        unmet.key == Key::Requirement("topologies"),
        "wrong key for an unsimulated topology",
    )
}

pub(super) fn requirements_auth() -> Result<(), String> {
    let v8 = Version(8, 0, 0);
    // Either order of the fields asks for an OIDC deployment.
    for text in [
        r#"[{"auth": true, "authMechanism": "MONGODB-OIDC", "topologies": ["single"]}]"#,
        r#"[{"authMechanism": "MONGODB-OIDC", "auth": true, "topologies": ["single"]}]"#,
    ] {
        let got = satisfied_on(Some(&ejson::parse(text)?), v8)?.map_err(|u| u.detail)?;
        expect(
            got == [(Topology::Single, AuthNeed::Oidc)],
            "authMechanism MONGODB-OIDC runs with an OIDC issuer",
        )?;
    }
    let list = ejson::parse(r#"[{"auth": true, "topologies": ["replicaset"]}]"#)?;
    let got = satisfied_on(Some(&list), v8)?.map_err(|u| u.detail)?;
    expect(
        got == [(Topology::ReplicaSet, AuthNeed::Required)],
        "auth: true runs with authentication",
    )?;
    let list = ejson::parse(r#"[{"auth": false, "authMechanism": "SCRAM-SHA-256"}]"#)?;
    let got = satisfied_on(Some(&list), v8)?.map_err(|u| u.detail)?;
    expect(
        got.iter().all(|(_, need)| *need == AuthNeed::Forbidden),
        "auth: false runs without authentication",
    )?;
    expect(
        AuthNeed::Required.and(AuthNeed::Forbidden).is_none()
            && AuthNeed::Any.and(AuthNeed::Required) == Some(AuthNeed::Required),
        "a file's and a test's auth needs combine",
    )?;
    let list = ejson::parse(r#"[{"auth": 1}]"#)?;
    expect(
        satisfied_on(Some(&list), v8).is_err(),
        "a non-boolean auth accepted",
    )
}

pub(super) fn mismatch_path() -> Result<(), String> {
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

pub(super) fn observation_filters() -> Result<(), String> {
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

pub(super) fn expected_events() -> Result<(), String> {
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

pub(super) fn uri_options() -> Result<(), String> {
    let options = ejson::parse_document(
        r#"{"retryWrites": false, "heartbeatFrequencyMS": 500, "readPreferenceTags": ["a:1", "b:2"]}"#,
    )?;
    let uri = with_uri_options("mongodb://h1,h2/?replicaSet=rs0&retryWrites=true", &options)?;
    expect(
        uri == "mongodb://h1,h2/?replicaSet=rs0&retryWrites=false&heartbeatFrequencyMS=500\
                &readPreferenceTags=a:1&readPreferenceTags=b:2",
        &format!("got {uri}"),
    )?;
    let uri = with_uri_options("mongodb://h1", &Document::new())?;
    expect(uri == "mongodb://h1/", &format!("got {uri}"))
}

pub(super) fn static_skips() -> Result<(), String> {
    let file = TestFile::parse(
        r#"{"schemaVersion": "1.0",
            "createEntities": [{"database": {"id": "db0", "client": "c", "databaseName": "d"}}],
            "tests": [
              {"description": "out must succeed", "operations": [
                {"name": "aggregate", "object": "coll0", "arguments": {"pipeline": [{"$out": "x"}]}}]},
              {"description": "out may fail", "operations": [
                {"name": "aggregate", "object": "coll0", "arguments": {"pipeline": [{"$out": "x"}]},
                 "expectError": {"isError": true}}]},
              {"description": "database aggregate runs", "operations": [
                {"name": "aggregate", "object": "db0", "arguments": {"pipeline": []}}]},
              {"description": "map reduce", "operations": [
                {"name": "mapReduce", "object": "coll0", "arguments": {}}]},
              {"description": "never committed", "operations": [
                {"name": "failPoint", "object": "testRunner", "arguments": {"client": "c", "failPoint":
                  {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 2},
                   "data": {"failBeforeCommitExceptionCode": 1}}}}]},
              {"description": "committed once", "operations": [
                {"name": "failPoint", "object": "testRunner", "arguments": {"client": "c", "failPoint":
                  {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}}}}]},
              {"description": "Tailable cursor iteration timeoutMS is refreshed for getMore - failure",
               "operations": []},
              {"description": "partial result", "operations": [
                {"name": "bulkWrite", "object": "coll0", "arguments": {"requests": []},
                 "expectError": {"expectResult": {"insertedCount": 0}}}]},
              {"description": "optional partial result", "operations": [
                {"name": "bulkWrite", "object": "coll0", "arguments": {"requests": []},
                 "expectError": {"expectResult": {"$$unsetOrMatches": {"insertedCount": 0}}}}]}
            ]}"#,
    )?;
    let keys: Vec<Option<Key>> = file
        .tests
        .iter()
        .map(|t| t.static_skip(&file).map(|(key, _, _)| key))
        .collect();
    let expected = [
        // blackpipe runs $out: no server-feature skip is left for it.
        None,
        None,
        None,
        Some(Key::Operation("mapReduce")),
        None,
        None,
        Some(Key::SuiteDefect(
            "Tailable cursor iteration timeoutMS is refreshed for getMore - failure",
        )),
        None,
        None,
    ];
    expect(keys == expected, &format!("got {keys:?}"))?;
    expect(
        TestFile::parse(r#"{"schemaVersion": "2.0", "tests": []}"#).is_err(),
        "schema 2.0 accepted",
    )
}

/// A test counts once whatever its topologies: it passes only if every case passes, and a
/// skipped test stands for the cases it would have run.
pub(super) fn tally_counts_tests_and_cases() -> Result<(), String> {
    let mut tally = Tally::default();
    tally.ran(&[true, true, true]);
    tally.ran(&[true, false, true]);
    tally.skip(
        "f.json: t".to_owned(),
        Key::Entity("bucket"),
        "r".to_owned(),
        3,
    );
    tally.broken();
    let cases = Counts {
        passed: 5,
        failed: 2,
        skipped: 3,
    };
    let tests = Counts {
        passed: 1,
        failed: 2,
        skipped: 1,
    };
    expect(tally.cases == cases, "cases miscounted")?;
    expect(tally.tests == tests, "tests miscounted")?;
    expect(
        tally.line("s")
            == "spec-suite s: 5 passed, 2 failed, 3 skipped (tests: 1 passed, 2 failed, 1 skipped)",
        "the suite line is not in the agreed form",
    )
}
