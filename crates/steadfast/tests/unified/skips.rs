//! The one table of everything the runner skips, keyed by operation, entity type or
//! requirement, with the reason. A test is skipped only through an entry here. The one kind of
//! entry keyed by a test's description is a defect of the official suite itself, recorded with
//! its upstream ticket.

/// What a skip is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// An operation name (`operation.name`), on any object.
    Operation(&'static str),
    /// An operation argument steadfast's API deliberately lacks, on any operation.
    Argument(&'static str),
    /// An entity type (`createEntities` key).
    Entity(&'static str),
    /// A connection string option (a client entity's `uriOptions` key) steadfast lacks.
    UriOption(&'static str),
    /// A `runOnRequirement` field that no blackpipe deployment satisfies.
    Requirement(&'static str),
    /// An assertion the runner cannot evaluate against steadfast's API (for log messages:
    /// `observeLogMessages.<component>`, a component whose messages are not yet specified).
    #[allow(
        dead_code,
        reason = "no table entry needs it now; kept for an assertion the runner cannot make"
    )]
    Assertion(&'static str),
    /// A server feature blackpipe lacks, needed by an operation the test expects to succeed.
    ServerFeature(&'static str),
    /// A test (by description) whose expectations are wrong upstream, so no correct driver
    /// passes it; the reason names the ticket.
    SuiteDefect(&'static str),
}

/// The reason shared by the CSOT tests that expect a timeout from a 60 ms block under a
/// 100 ms per-iteration timeout.
const BLOCK_SHORTER_THAN_TIMEOUT: &str = "DRIVERS-2965: the fail point blocks getMore for 60 ms, \
    less than the 100 ms the iteration is given, yet the test expects a timeout; a driver that \
    refreshes timeoutMS per iteration, as the test's title requires, cannot time out (the \
    official Node.js driver skips it for the same ticket)";

/// The reason shared by the transactions tests the suite itself skips for DRIVERS-2032.
const PINNED_SERVER_SELECTABILITY: &str = "DRIVERS-2032: the suite marks it skipReason \
    \"Pinned servers need to be checked if they are still selectable\"; it expects a retry of \
    commit/abort after a handshake error to go back to the pinned server, which the \
    transactions specification does not yet require";

/// The table.
pub(crate) const TABLE: &[(Key, &str)] = &[
    (
        Key::SuiteDefect(
            "operations against load balancers fail if URI contains loadBalanced=false",
        ),
        "the suite marks it skipReason \"servers have not implemented LB support yet so they will \
         not fail the connection handshake in this case\"",
    ),
    (
        Key::SuiteDefect("AbortTransaction succeeds after handshake network error"),
        PINNED_SERVER_SELECTABILITY,
    ),
    (
        Key::SuiteDefect("CommitTransaction succeeds after handshake network error"),
        PINNED_SERVER_SELECTABILITY,
    ),
    (
        Key::SuiteDefect(
            "Non-tailable cursor iteration timeoutMS is refreshed for getMore if timeoutMode is iteration - failure",
        ),
        BLOCK_SHORTER_THAN_TIMEOUT,
    ),
    (
        Key::SuiteDefect("Tailable cursor iteration timeoutMS is refreshed for getMore - failure"),
        BLOCK_SHORTER_THAN_TIMEOUT,
    ),
    (
        Key::SuiteDefect(
            "Tailable cursor awaitData iteration timeoutMS is refreshed for getMore - failure",
        ),
        BLOCK_SHORTER_THAN_TIMEOUT,
    ),
    (
        Key::Operation("mapReduce"),
        "mapReduce runs JavaScript map and reduce functions, and blackpipe runs no server-side \
         JavaScript (mongod deprecated mapReduce in 5.0 for the aggregation pipeline; steadfast, \
         like the official Rust driver, has no mapReduce API)",
    ),
    (
        Key::Argument("rawData"),
        "rawData: the CRUD, bulk-write and index-management specifications say drivers SHOULD NOT \
         implement this internal option unless MongoDB asks them to (it grants access to the \
         underlying namespaces of time-series collections)",
    ),
    (
        Key::ServerFeature("returnKey"),
        "blackpipe has no query planner, so find's returnKey (the keys of the index a plan \
         used) is not implemented: it returns whole documents",
    ),
    (
        Key::ServerFeature("timeseries duplicate _id"),
        "blackpipe stores a time-series collection as an ordinary one, whose _id stays unique (mongod's buckets allow repeated _ids); creating one with its options works",
    ),
    (
        Key::ServerFeature("shardCollection"),
        "blackpipe's sharded deployment does not implement shardCollection",
    ),
    (
        Key::ServerFeature("$where"),
        "blackpipe runs no server-side JavaScript ($where filters, used to make a command sleep)",
    ),
    (
        Key::Requirement("topologies"),
        "none of the required topologies is one blackpipe simulates (single, replicaset, sharded, load-balanced)",
    ),
    (
        Key::Requirement("version"),
        "the server version blackpipe reports (buildInfo) is outside the required range",
    ),
    (
        Key::Requirement("authMechanism"),
        "blackpipe authenticates with SCRAM-SHA-1, SCRAM-SHA-256 and MONGODB-OIDC only",
    ),
    (
        Key::UriOption("waitQueueSize"),
        "waitQueueSize is deprecated by the CMAP specification (it never prevented the errors it \
         was meant to) and steadfast does not accept it; that specification puts it in the \
         \"Connection pool created\" log message only for drivers that support it",
    ),
    (
        Key::Requirement("serverless"),
        "blackpipe is not an Atlas Serverless deployment",
    ),
    (
        Key::Requirement("serverParameters"),
        "blackpipe's getParameter does not report the server parameter with that value",
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

/// The table entry for an operation argument, if the runner skips tests passing it.
pub(crate) fn for_argument(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::Argument(n) if *n == name))
        .copied()
}

/// The table entry for an entity type, if the runner skips tests creating one.
pub(crate) fn for_entity(kind: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::Entity(n) if *n == kind))
        .copied()
}

/// The table entry for a connection string option, if the runner skips tests setting it.
pub(crate) fn for_uri_option(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::UriOption(n) if *n == name))
        .copied()
}

/// The table entry for an assertion, if the runner skips tests making it.
pub(crate) fn for_assertion(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::Assertion(n) if *n == name))
        .copied()
}

/// The table entry for a test of the official suites known to be wrong upstream.
pub(crate) fn for_suite_defect(description: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::SuiteDefect(d) if *d == description))
        .copied()
}

/// The table entry for a server feature blackpipe lacks.
pub(crate) fn for_server_feature(name: &str) -> Option<(Key, &'static str)> {
    TABLE
        .iter()
        .find(|(k, _)| matches!(k, Key::ServerFeature(n) if *n == name))
        .copied()
}
