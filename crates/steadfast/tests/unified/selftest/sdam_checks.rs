//! Self-checks of the SDAM and sessions additions: SDAM event matching and counting, and the
//! skip-table entries they brought.

use bson::doc;

use super::checks::expect;
use crate::ejson;
use crate::events::{self, Observed};
use crate::matcher::NoEntities;
use crate::model::TestFile;
use crate::skips::Key;

fn changed(previous: &str, new: &str) -> Observed {
    Observed::Sdam {
        name: "serverDescriptionChangedEvent",
        fields: doc! {
            "previousDescription": { "type": previous },
            "newDescription": { "type": new },
        },
    }
}

/// Descriptions are matched by the fields the test gives; `waitForEvent`'s count sees only
/// matching events; `eventType: sdam` selects SDAM events alone.
pub(super) fn sdam_events_match_by_type() -> Result<(), String> {
    let observed = vec![
        changed("Unknown", "RSPrimary"),
        Observed::Cmap {
            name: "poolClearedEvent",
            fields: doc! { "interruptInUseConnections": false },
        },
        changed("RSPrimary", "Unknown"),
    ];
    let unknown = ejson::parse_document(
        r#"{"serverDescriptionChangedEvent": {"newDescription": {"type": "Unknown"}}}"#,
    )?;
    expect(
        events::count_matching(&unknown, &observed, &NoEntities) == 1,
        "newDescription type not matched",
    )?;
    let any = ejson::parse_document(r#"{"serverDescriptionChangedEvent": {}}"#)?;
    expect(
        events::count_matching(&any, &observed, &NoEntities) == 2,
        "an empty assertion must match every such event",
    )?;
    let sdam = ejson::parse_document(
        r#"{"client": "c", "eventType": "sdam", "events": [
            {"serverDescriptionChangedEvent": {"newDescription": {}}},
            {"serverDescriptionChangedEvent": {"previousDescription": {"type": "RSPrimary"}}}]}"#,
    )?;
    events::check(&sdam, &observed, &NoEntities)?;
    let wrong = ejson::parse_document(
        r#"{"client": "c", "eventType": "sdam", "events": [
            {"serverDescriptionChangedEvent": {"newDescription": {"type": "Unknown"}}}],
            "ignoreExtraEvents": true}"#,
    )?;
    expect(
        events::check(&wrong, &observed, &NoEntities).is_err(),
        "a description of another type accepted",
    )
}

/// Snapshot sessions, `$where` (on a thread too) and log observation are skipped through their
/// table entries; runCommand's readPreference is not skipped (run_command takes one).
pub(super) fn session_and_sdam_skips() -> Result<(), String> {
    let file = TestFile::parse(
        r#"{"schemaVersion": "1.0", "tests": [
          {"description": "snapshot", "operations": [{"name": "createEntities", "object": "testRunner",
            "arguments": {"entities": [{"session": {"id": "s", "client": "c", "sessionOptions": {"snapshot": true}}}]}}]},
          {"description": "where", "operations": [{"name": "runOnThread", "object": "testRunner",
            "arguments": {"thread": "t", "operation": {"name": "find", "object": "coll",
              "arguments": {"filter": {"$where": "sleep(100) || true"}}}}}]},
          {"description": "read preference", "operations": [{"name": "runCommand", "object": "db",
            "arguments": {"command": {"ping": 1}, "commandName": "ping", "readPreference": {"mode": "secondary"}}}]},
          {"description": "logs", "operations": [{"name": "createEntities", "object": "testRunner",
            "arguments": {"entities": [{"client": {"id": "c", "observeLogMessages": {"topology": "debug"}}}]}}]},
          {"description": "plain", "operations": [{"name": "createEntities", "object": "testRunner",
            "arguments": {"entities": [{"session": {"id": "s", "client": "c", "sessionOptions": {"causalConsistency": false}}}]}}]}
        ]}"#,
    )?;
    let keys: Vec<Option<Key>> = file
        .tests
        .iter()
        .map(|t| t.static_skip(&file).map(|(key, _, _)| key))
        .collect();
    // Snapshot sessions run since steadfast implements them.
    let expected = [
        None,
        Some(Key::ServerFeature("$where")),
        None,
        // Log messages are observed since the runner captures them (logs.rs).
        None,
        None,
    ];
    expect(keys == expected, &format!("got {keys:?}"))
}
