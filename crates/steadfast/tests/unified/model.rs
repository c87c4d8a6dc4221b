//! The parts of a unified test file the runner reads, and the static skip decision.

use bson::{Bson, Document};

use crate::ejson;
use crate::requirements::Version;
use crate::skips::{self, Key};

/// The newest schema version whose files this runner accepts (same major, minor at most this).
pub(crate) const SUPPORTED_SCHEMA: Version = Version(1, 27, 0);

/// One test file.
#[derive(Debug)]
pub(crate) struct TestFile {
    /// `runOnRequirements` at file level.
    pub(crate) run_on: Option<Bson>,
    /// `createEntities`.
    pub(crate) entities: Vec<Document>,
    /// `initialData`.
    pub(crate) initial_data: Vec<CollectionData>,
    /// `tests`.
    pub(crate) tests: Vec<TestCase>,
}

/// One test of a file.
#[derive(Debug)]
pub(crate) struct TestCase {
    /// `description`.
    pub(crate) description: String,
    /// `runOnRequirements` of the test.
    pub(crate) run_on: Option<Bson>,
    /// `skipReason`.
    pub(crate) skip_reason: Option<String>,
    /// `operations`.
    pub(crate) operations: Vec<Document>,
    /// `expectEvents`.
    pub(crate) expect_events: Vec<Document>,
    /// `expectLogMessages`.
    pub(crate) expect_log_messages: Vec<Document>,
    /// `expectTracingMessages` (one object per client; a lone object counts as a list of one).
    pub(crate) expect_tracing_messages: Vec<Document>,
    /// `outcome`.
    pub(crate) outcome: Option<Vec<CollectionData>>,
}

/// `collectionData`: a collection's contents (initial or expected).
#[derive(Debug, Clone)]
pub(crate) struct CollectionData {
    /// `databaseName`.
    pub(crate) database: String,
    /// `collectionName`.
    pub(crate) collection: String,
    /// `createOptions`.
    pub(crate) create_options: Option<Document>,
    /// `documents`.
    pub(crate) documents: Vec<Document>,
}

impl TestFile {
    /// Reads a file's text.
    pub(crate) fn parse(text: &str) -> Result<TestFile, String> {
        let root = ejson::parse_document(text)?;
        let schema = Version::parse(root.get_str("schemaVersion").map_err(|e| e.to_string())?)?;
        if schema.0 != SUPPORTED_SCHEMA.0 || schema > SUPPORTED_SCHEMA {
            return Err(format!(
                "schemaVersion {schema} is newer than the runner's {SUPPORTED_SCHEMA}"
            ));
        }
        let tests = documents(&root, "tests")?
            .into_iter()
            .map(|test| TestCase::parse(&test))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(TestFile {
            run_on: root.get("runOnRequirements").cloned(),
            entities: documents(&root, "createEntities")?,
            initial_data: collection_data_list(&root, "initialData")?.unwrap_or_default(),
            tests,
        })
    }
}

impl TestCase {
    fn parse(test: &Document) -> Result<TestCase, String> {
        Ok(TestCase {
            description: test
                .get_str("description")
                .map_err(|_| "a test without a description".to_owned())?
                .to_owned(),
            run_on: test.get("runOnRequirements").cloned(),
            skip_reason: test.get_str("skipReason").ok().map(str::to_owned),
            operations: documents(test, "operations")?,
            expect_events: documents(test, "expectEvents")?,
            expect_log_messages: documents(test, "expectLogMessages")?,
            expect_tracing_messages: match test.get("expectTracingMessages") {
                Some(Bson::Document(single)) => vec![single.clone()],
                _ => documents(test, "expectTracingMessages")?,
            },
            outcome: collection_data_list(test, "outcome")?,
        })
    }

    /// The skip-table entry that excludes this test, if any: an entity type or an operation
    /// the runner does not exercise, anywhere in the file's entities or the test's operations.
    pub(crate) fn static_skip(&self, file: &TestFile) -> Option<(Key, &'static str, String)> {
        if let Some((key, reason)) = skips::for_suite_defect(&self.description) {
            return Some((key, reason, "a known defect of the suite".to_owned()));
        }
        let created_by_operations = self
            .operations
            .iter()
            .filter(|op| op.get_str("name").ok() == Some("createEntities"))
            .filter_map(|op| op.get_document("arguments").ok())
            .filter_map(|args| args.get_array("entities").ok())
            .flatten()
            .filter_map(Bson::as_document);
        for entity in file.entities.iter().chain(created_by_operations) {
            for (kind, spec) in entity {
                if let Some((key, reason)) = skips::for_entity(kind) {
                    return Some((key, reason, format!("creates a {kind} entity")));
                }
                let observed = spec
                    .as_document()
                    .and_then(|s| s.get_document("observeLogMessages").ok());
                for component in observed.into_iter().flat_map(Document::keys) {
                    let assertion = format!("observeLogMessages.{component}");
                    if let Some((key, reason)) = skips::for_assertion(&assertion) {
                        return Some((key, reason, format!("a {kind} observes {component} logs")));
                    }
                }
            }
            let client = entity.get_document("client").ok();
            let uri_options = client.and_then(|c| c.get_document("uriOptions").ok());
            for option in uri_options.into_iter().flat_map(|options| options.keys()) {
                if let Some((key, reason)) = skips::for_uri_option(option) {
                    return Some((key, reason, format!("sets the {option} option")));
                }
            }
        }
        let on_threads = self
            .operations
            .iter()
            .filter(|op| op.get_str("name").ok() == Some("runOnThread"))
            .filter_map(|op| op.get_document("arguments").ok())
            .filter_map(|args| args.get_document("operation").ok());
        for op in self.operations.iter().chain(on_threads) {
            let name = op.get_str("name").unwrap_or_default();
            let arguments = op.get_document("arguments").ok();
            let filter = arguments.and_then(|args| args.get_document("filter").ok());
            if filter.is_some_and(|f| f.contains_key("$where")) {
                if let Some((key, reason)) = skips::for_server_feature("$where") {
                    return Some((key, reason, format!("{name} filters with $where")));
                }
            }
            if let Some(feature) = missing_server_feature(op) {
                if let Some((key, reason)) = skips::for_server_feature(feature) {
                    return Some((key, reason, format!("{name} needs {feature} to succeed")));
                }
            }
            if let Some((key, reason)) = skips::for_operation(name) {
                return Some((key, reason, format!("uses {name}")));
            }
            let skipped_argument =
                arguments.and_then(|args| args.keys().find_map(|arg| skips::for_argument(arg)));
            if let Some((key, reason)) = skipped_argument {
                return Some((
                    key,
                    reason,
                    format!("{name} takes an argument steadfast lacks"),
                ));
            }
        }
        None
    }
}

/// The server feature blackpipe lacks that `op` needs, when the test expects `op` to succeed
/// (an operation expected to fail, e.g. through a fail point, does not depend on it).
fn missing_server_feature(op: &Document) -> Option<&'static str> {
    if op.contains_key("expectError") {
        return None;
    }
    let arguments = op.get_document("arguments").ok();
    match op.get_str("name").ok() {
        Some("aggregate") => {}
        Some("find") => {
            return arguments
                .is_some_and(|args| args.get_bool("returnKey").unwrap_or(false))
                .then_some("returnKey");
        }
        // Only a time-series collection takes documents sharing an `_id`.
        Some("insertMany") => {
            let documents = arguments.and_then(|args| args.get_array("documents").ok())?;
            let ids: Vec<&Bson> = documents
                .iter()
                .filter_map(|d| d.as_document()?.get("_id"))
                .collect();
            let repeated = ids.iter().enumerate().any(|(i, id)| ids[..i].contains(id));
            return repeated.then_some("timeseries duplicate _id");
        }
        Some("runCommand") => {
            let command = arguments.and_then(|args| args.get_document("command").ok())?;
            return match command.keys().next().map(String::as_str) {
                Some("shardCollection") => Some("shardCollection"),
                _ => None,
            };
        }
        _ => return None,
    }
    let stages = op
        .get_document("arguments")
        .ok()
        .and_then(|args| args.get_array("pipeline").ok())?;
    stages
        .iter()
        .filter_map(Bson::as_document)
        .filter_map(|stage| stage.keys().next())
        .find_map(|stage| match stage.as_str() {
            "$out" => Some("$out"),
            "$merge" => Some("$merge"),
            _ => None,
        })
}

fn documents(parent: &Document, key: &str) -> Result<Vec<Document>, String> {
    match parent.get(key) {
        None => Ok(Vec::new()),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|item| match item {
                Bson::Document(d) => Ok(d.clone()),
                other => Err(format!("{key}: expected documents, found {other}")),
            })
            .collect(),
        Some(other) => Err(format!("{key}: expected an array, found {other}")),
    }
}

fn collection_data_list(
    parent: &Document,
    key: &str,
) -> Result<Option<Vec<CollectionData>>, String> {
    if !parent.contains_key(key) {
        return Ok(None);
    }
    documents(parent, key)?
        .iter()
        .map(|data| {
            Ok(CollectionData {
                database: data
                    .get_str("databaseName")
                    .map_err(|_| format!("{key}: databaseName missing"))?
                    .to_owned(),
                collection: data
                    .get_str("collectionName")
                    .map_err(|_| format!("{key}: collectionName missing"))?
                    .to_owned(),
                create_options: data.get_document("createOptions").ok().cloned(),
                documents: documents(data, "documents")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}
