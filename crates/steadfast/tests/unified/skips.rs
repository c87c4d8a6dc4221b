//! The one table of everything the runner skips, keyed by operation, entity type or
//! requirement, with the reason. A test is skipped only through an entry here; there are no
//! per-file or per-test special cases.

/// What a skip is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// An operation name (`operation.name`), on any object.
    Operation(&'static str),
    /// An entity type (`createEntities` key).
    Entity(&'static str),
    /// A `runOnRequirement` field that no blackpipe deployment satisfies.
    Requirement(&'static str),
    /// An assertion the runner cannot evaluate against steadfast's API.
    Assertion(&'static str),
    /// A server feature blackpipe lacks, needed by an operation the test expects to succeed.
    ServerFeature(&'static str),
    /// An operation argument (`operation.argument`) steadfast's API has no counterpart for.
    Argument(&'static str),
    /// A `sessionOptions` field of a session entity that steadfast does not implement.
    SessionOption(&'static str),
}

/// The table.
pub(crate) const TABLE: &[(Key, &str)] = &[
    (
        Key::Operation("clientBulkWrite"),
        "client-level bulkWrite (the 8.0 `bulkWrite` command) is out of scope for this runner",
    ),
    (
        Key::Operation("createChangeStream"),
        "change streams: neither steadfast nor blackpipe implements them",
    ),
    (
        Key::Operation("mapReduce"),
        "mapReduce: deprecated, and steadfast has no mapReduce API",
    ),
    (
        Key::Operation("count"),
        "the deprecated count helper: steadfast offers countDocuments and estimatedDocumentCount instead",
    ),
    (Key::Entity("bucket"), "GridFS: steadfast has no GridFS API"),
    (
        Key::SessionOption("snapshot"),
        "snapshot sessions come with transactions, which steadfast does not implement yet",
    ),
    (
        Key::Assertion("observeLogMessages"),
        "steadfast logs through `tracing`, not as the logging specification's structured messages that observeLogMessages asserts",
    ),
    (
        Key::Operation("startTransaction"),
        "transactions: steadfast has no multi-document transactions yet",
    ),
    (
        Key::Operation("withTransaction"),
        "transactions: steadfast has no convenient transaction API yet",
    ),
    (
        Key::Assertion("expectError.expectResult"),
        "steadfast's bulk write errors do not carry the partial BulkWriteResult (and the test does not wrap it in $$unsetOrMatches)",
    ),
    (
        Key::ServerFeature("$out"),
        "blackpipe's aggregation engine has no $out stage (tests expecting it to fail still run)",
    ),
    (
        Key::ServerFeature("$merge"),
        "blackpipe's aggregation engine has no $merge stage (tests expecting it to fail still run)",
    ),
    (
        Key::ServerFeature("$where"),
        "blackpipe runs no server-side JavaScript ($where filters, used to make a command sleep)",
    ),
    (
        Key::Argument("runCommand.readPreference"),
        "steadfast's Database::run_command always runs on the primary: it takes no read preference",
    ),
    (
        Key::Requirement("topologies"),
        "none of the required topologies is one blackpipe simulates (single, replicaset, sharded)",
    ),
    (
        Key::Requirement("version"),
        "the server version blackpipe reports (buildInfo) is outside the required range",
    ),
    (
        Key::Requirement("authMechanism"),
        "blackpipe authenticates with SCRAM-SHA-1 and SCRAM-SHA-256 only",
    ),
    (
        Key::Requirement("serverless"),
        "blackpipe is not an Atlas Serverless deployment",
    ),
    (
        Key::Requirement("serverParameters"),
        "blackpipe does not answer getParameter",
    ),
    (
        Key::Requirement("csfle"),
        "client-side field level encryption is not implemented",
    ),
];

/// The reason the table gives for `key`.
pub(crate) fn reason(key: Key) -> Option<&'static str> {
    TABLE.iter().find(|(k, _)| *k == key).map(|(_, r)| *r)
}

/// The table entry for an operation name, if the runner skips tests using it.
pub(crate) fn for_operation(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::Operation(n) if *n == name))
        .copied()
}

/// The table entry for an entity type, if the runner skips tests creating one.
pub(crate) fn for_entity(kind: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::Entity(n) if *n == kind))
        .copied()
}

/// The table entry for an assertion, if the runner skips tests making it.
pub(crate) fn for_assertion(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::Assertion(n) if *n == name))
        .copied()
}

/// The table entry for an operation argument, if the runner skips tests passing it.
pub(crate) fn for_argument(operation: &str, argument: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| {
            matches!(k, Key::Argument(n) if n.split_once('.') == Some((operation, argument)))
        })
        .copied()
}

/// The table entry for a session option, if the runner skips tests creating such sessions.
pub(crate) fn for_session_option(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::SessionOption(n) if *n == name))
        .copied()
}

/// The table entry for a server feature blackpipe lacks.
pub(crate) fn for_server_feature(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::ServerFeature(n) if *n == name))
        .copied()
}
