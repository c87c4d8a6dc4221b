//! The Stable API as mongod enforces it: the `apiVersion` / `apiStrict` / `apiDeprecationErrors`
//! fields a command declares, the commands and aggregation stages outside API version 1, the
//! test-only commands a mongod started with `enableTestCommands` and `acceptApiVersion2`
//! answers, and the server parameters (`getParameter`) that describe that configuration.

use bson::{Bson, Document, doc};

use crate::deployment::errors;
use blackpipe_store::code::{
    self, API_DEPRECATION_ERROR, API_PARAMETERS_WITHOUT_VERSION, API_STRICT_ERROR,
    API_VERSION_ERROR,
};

/// The commands of API version 1 (the ones blackpipe answers).
const VERSION_1_COMMANDS: &[&str] = &[
    "abortTransaction",
    "aggregate",
    "authenticate",
    "bulkWrite",
    "collMod",
    "commitTransaction",
    "count",
    "create",
    "createIndexes",
    "delete",
    "drop",
    "dropDatabase",
    "dropIndexes",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getMore",
    "hello",
    "insert",
    "killCursors",
    "listCollections",
    "listDatabases",
    "listIndexes",
    "ping",
    "refreshSessions",
    "saslContinue",
    "saslStart",
    "testDeprecation",
    "testVersions1And2",
    "update",
];

/// The test command of version 2 only.
const TEST_VERSION_2: &str = "testVersion2";
/// The test command in versions 1 and 2.
const TEST_VERSIONS_1_AND_2: &str = "testVersions1And2";
/// The test command deprecated in version 1.
const TEST_DEPRECATION: &str = "testDeprecation";
/// The test command deprecated in version 2 only.
const TEST_DEPRECATION_IN_VERSION_2: &str = "testDeprecationInVersion2";

/// Aggregation stages outside API version 1.
const NON_VERSION_1_STAGES: &[&str] = &[
    "$collStats",
    "$currentOp",
    "$indexStats",
    "$listLocalSessions",
    "$listSessions",
    "$planCacheStats",
];

/// The server parameters blackpipe's nodes report, as `getParameter` answers them: a mongod
/// started with test commands enabled, accepting the test-only API version 2, and not requiring
/// an API version.
pub fn server_parameters() -> Document {
    doc! {
        "requireApiVersion": false,
        "enableTestCommands": true,
        "acceptApiVersion2": true,
        "featureCompatibilityVersion": { "version": "8.0" },
        "authenticationMechanisms": [
            "MONGODB-AWS", "MONGODB-OIDC", "MONGODB-X509", "PLAIN", "SCRAM-SHA-1", "SCRAM-SHA-256",
        ],
        "localLogicalSessionTimeoutMinutes": 30,
        "maxTransactionLockRequestTimeoutMillis": 5,
        "cursorTimeoutMillis": 600_000_i64,
        "ttlMonitorEnabled": true,
        "ttlMonitorSleepSecs": 60,
        "maxBSONDepth": 200,
    }
}

/// Whether `name` is one of the Stable API test commands this module answers itself.
pub(crate) fn is_test_command(name: &str) -> bool {
    matches!(
        name,
        TEST_VERSION_2 | TEST_VERSIONS_1_AND_2 | TEST_DEPRECATION | TEST_DEPRECATION_IN_VERSION_2
    )
}

/// The error reply mongod gives `command` (named `name`) for its API declaration, or `None`
/// when the declaration allows it.
pub(crate) fn refusal(name: &str, command: &Document) -> Option<Document> {
    let strict = flag(command, "apiStrict");
    let deprecation_errors = flag(command, "apiDeprecationErrors");
    let version = match command.get("apiVersion") {
        None if strict.is_some() || deprecation_errors.is_some() => {
            return Some(errors::error_reply(
                API_PARAMETERS_WITHOUT_VERSION,
                "Cannot specify apiStrict or apiDeprecationErrors without apiVersion",
            ));
        }
        None => return None,
        Some(Bson::String(v)) if v == "1" || v == "2" => v.as_str(),
        Some(Bson::String(v)) => {
            return Some(errors::error_reply(
                API_VERSION_ERROR,
                format!("API version must be \"1\", not \"{v}\""),
            ));
        }
        Some(other) => {
            return Some(errors::error_reply(
                code::TYPE_MISMATCH,
                format!("apiVersion must be a string, not {other}"),
            ));
        }
    };
    if strict == Some(true) {
        if let Some(error) = strict_refusal(version, name, command) {
            return Some(error);
        }
    }
    (deprecation_errors == Some(true) && is_deprecated(version, name)).then(|| {
        errors::error_reply(
            API_DEPRECATION_ERROR,
            format!("Provided apiDeprecationErrors:true, but the command {name} is deprecated in API Version {version}"),
        )
    })
}

/// `getParameter`'s reply: every parameter for `"*"` (or `{allParameters: true}`), else the
/// ones the command names (`runtime`: those `setParameter` can change, as they are now); a named parameter blackpipe does not model is an InvalidOptions
/// error, as mongod answers an unknown one.
pub(crate) fn get_parameter(command: &Document, runtime: Document) -> Document {
    let mut all = server_parameters();
    all.extend(runtime);
    let everything = match command.get("getParameter") {
        Some(Bson::String(s)) => s == "*",
        Some(Bson::Document(options)) => options.get_bool("allParameters").unwrap_or(false),
        _ => false,
    };
    if everything {
        return all;
    }
    let mut reply = Document::new();
    for key in command.keys().skip(1) {
        if key.starts_with('$') || key.starts_with("api") || key == "lsid" || key == "comment" {
            continue;
        }
        match all.get(key) {
            Some(value) => {
                reply.insert(key.clone(), value.clone());
            }
            None => {
                return errors::error_reply(
                    code::INVALID_OPTIONS,
                    format!("no option found to get: {key}"),
                );
            }
        }
    }
    if reply.is_empty() {
        return errors::error_reply(code::INVALID_OPTIONS, "no option found to get");
    }
    reply
}

fn flag(command: &Document, key: &str) -> Option<bool> {
    command.get(key).and_then(Bson::as_bool)
}

fn in_version(version: &str, name: &str) -> bool {
    match version {
        "1" => VERSION_1_COMMANDS.contains(&name),
        _ => matches!(
            name,
            TEST_VERSION_2 | TEST_VERSIONS_1_AND_2 | TEST_DEPRECATION_IN_VERSION_2
        ),
    }
}

fn is_deprecated(version: &str, name: &str) -> bool {
    match version {
        "1" => name == TEST_DEPRECATION,
        _ => name == TEST_DEPRECATION_IN_VERSION_2,
    }
}

fn strict_refusal(version: &str, name: &str, command: &Document) -> Option<Document> {
    if !in_version(version, name) {
        return Some(errors::error_reply(
            API_STRICT_ERROR,
            format!(
                "Provided apiStrict:true, but the command {name} is not in API Version {version}"
            ),
        ));
    }
    if name != "aggregate" {
        return None;
    }
    let stages = command.get_array("pipeline").ok()?;
    let stage = stages
        .iter()
        .filter_map(Bson::as_document)
        .filter_map(|stage| stage.keys().next())
        .find(|key| NON_VERSION_1_STAGES.contains(&key.as_str()))?;
    Some(errors::error_reply(
        API_STRICT_ERROR,
        format!("{stage} is not allowed with 'apiStrict: true' in API Version {version}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(reply: Option<Document>) -> Option<i32> {
        reply.map(|r| r.get_i32("code").unwrap_or(-1))
    }

    #[test]
    fn get_parameter_answers_the_named_parameters() {
        let reply = get_parameter(
            &doc! { "getParameter": 1, "requireApiVersion": 1 },
            Document::new(),
        );
        assert_eq!(reply, doc! { "requireApiVersion": false });
        let unknown = get_parameter(
            &doc! { "getParameter": 1, "noSuchParameter": 1 },
            Document::new(),
        );
        assert_eq!(unknown.get_i32("code").ok(), Some(72));
        assert_eq!(
            get_parameter(&doc! { "getParameter": "*" }, Document::new()),
            server_parameters()
        );
    }

    #[test]
    fn no_declaration_is_never_refused() {
        assert_eq!(code(refusal("distinct", &doc! { "distinct": "c" })), None);
    }

    #[test]
    fn strict_refuses_commands_and_stages_outside_version_1() {
        let distinct = doc! { "distinct": "c", "apiVersion": "1", "apiStrict": true };
        assert_eq!(code(refusal("distinct", &distinct)), Some(API_STRICT_ERROR));
        let find = doc! { "find": "c", "apiVersion": "1", "apiStrict": true };
        assert_eq!(code(refusal("find", &find)), None);
        let sessions = doc! {
            "aggregate": 1, "pipeline": [{ "$listLocalSessions": {} }],
            "apiVersion": "1", "apiStrict": true,
        };
        assert_eq!(
            code(refusal("aggregate", &sessions)),
            Some(API_STRICT_ERROR)
        );
        let lenient = doc! { "distinct": "c", "apiVersion": "1", "apiStrict": false };
        assert_eq!(code(refusal("distinct", &lenient)), None);
    }

    #[test]
    fn unknown_versions_and_orphan_parameters_are_refused() {
        let unknown = doc! { "ping": 1, "apiVersion": "never" };
        assert_eq!(code(refusal("ping", &unknown)), Some(API_VERSION_ERROR));
        let orphan = doc! { "ping": 1, "apiStrict": true };
        assert_eq!(
            code(refusal("ping", &orphan)),
            Some(API_PARAMETERS_WITHOUT_VERSION)
        );
    }

    #[test]
    fn deprecation_errors_refuse_deprecated_commands_only() {
        let deprecated = doc! {
            "testDeprecationInVersion2": 1, "apiVersion": "2", "apiDeprecationErrors": true,
        };
        assert_eq!(
            code(refusal(TEST_DEPRECATION_IN_VERSION_2, &deprecated)),
            Some(API_DEPRECATION_ERROR)
        );
        let in_1 = doc! { "testDeprecationInVersion2": 1, "apiVersion": "1", "apiDeprecationErrors": true };
        assert_eq!(code(refusal(TEST_DEPRECATION_IN_VERSION_2, &in_1)), None);
    }
}
