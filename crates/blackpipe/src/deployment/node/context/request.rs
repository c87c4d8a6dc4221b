//! What the pipeline reads off a request before any gate: the command's canonical name, how
//! mongod lets it run on a node that is not primary, its namespace, and its read preference.

use bson::{Bson, Document};

use crate::server::{Request, RequestKind};

/// OP_QUERY flag bit 2: the legacy secondaryOk bit.
const QUERY_SECONDARY_OK: u32 = 1 << 2;

/// How mongod lets a command run on a node that is not primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandClass {
    /// Runs anywhere (hello, ping, getMore, admin commands...).
    Always,
    /// A read: on a secondary only with secondaryOk (`kOptIn`).
    Read,
    /// A write: primary only (`kNever`).
    Write,
}

/// The canonical name mongod gives a command (aliases resolved).
pub(crate) fn canonical_name(name: &str) -> &str {
    match name {
        "ismaster" => "isMaster",
        "findandmodify" => "findAndModify",
        "buildinfo" => "buildInfo",
        other => other,
    }
}

pub(crate) fn classify(name: &str) -> CommandClass {
    match name {
        "insert" | "update" | "delete" | "findAndModify" | "create" | "drop" | "dropDatabase"
        | "createIndexes" | "dropIndexes" | "renameCollection" | "collMod" | "bulkWrite"
        | "commitTransaction" | "abortTransaction" => CommandClass::Write,
        "find" | "aggregate" | "count" | "distinct" | "listCollections" | "listIndexes"
        | "listDatabases" | "dbStats" | "collStats" | "dataSize" => CommandClass::Read,
        _ => CommandClass::Always,
    }
}

/// Whether `command` (named `name`) is an `aggregate` whose last stage writes (`$out` or
/// `$merge`): its `writeConcern` applies as a write's does.
pub(crate) fn aggregate_writes(name: &str, command: &Document) -> bool {
    name == "aggregate"
        && command
            .get_array("pipeline")
            .ok()
            .and_then(|stages| stages.last())
            .and_then(Bson::as_document)
            .and_then(|stage| stage.keys().next())
            .is_some_and(|stage| stage == "$out" || stage == "$merge")
}

/// `db.coll` when the command's first value names a collection (for `getMore`, its
/// `collection` field), `db.$cmd` otherwise.
pub(crate) fn namespace_of(request: &Request) -> String {
    let command = request.command();
    if request.command_name() == "getMore" {
        if let Ok(collection) = command.get_str("collection") {
            return format!("{}.{collection}", request.database());
        }
    }
    match command.values().next() {
        Some(Bson::String(collection)) => format!("{}.{collection}", request.database()),
        _ => format!("{}.$cmd", request.database()),
    }
}

/// OP_MSG: a `$readPreference` other than primary; OP_QUERY: the secondaryOk bit.
pub(crate) fn secondary_ok(request: &Request) -> bool {
    match request.kind() {
        RequestKind::Msg => request
            .command()
            .get_document("$readPreference")
            .ok()
            .and_then(|preference| preference.get_str("mode").ok())
            .is_some_and(|mode| mode != "primary"),
        RequestKind::Query => match &request.message().body {
            steadfast_wire::Body::Query(query) => query.flags & QUERY_SECONDARY_OK != 0,
            _ => false,
        },
    }
}

/// Reads `helloOk: true`.
pub(crate) fn wants_hello_ok(command: &Document) -> bool {
    matches!(command.get("helloOk"), Some(Bson::Boolean(true)))
}
