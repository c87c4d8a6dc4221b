//! `explain` of `find`, `aggregate`, `count`, `distinct`, `update`, `delete` and
//! `findAndModify`: the plan mongod's planner would pick ([`plan`]), and with the
//! `executionStats` or `allPlansExecution` verbosity the counts of running it. Writes are never
//! applied: their counts say what they would do. The store has no clock, so
//! `executionTimeMillis` is 0 (FIDELITY.md).

use bson::{Bson, Document, doc};

use super::Exec;
use super::args::{collection_name, optional_document, optional_non_negative};
use super::hint;
use super::plan::{self, Access, Query, winning_plan, wrap};
use crate::catalog::{read, validate_namespace};
use crate::code;
use crate::collection::Collection;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::query::Filter;

/// How much an explain reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verbosity {
    QueryPlanner,
    ExecutionStats,
    AllPlansExecution,
}

fn verbosity(command: &Document) -> StoreResult<Verbosity> {
    match command.get("verbosity") {
        None => Ok(Verbosity::AllPlansExecution),
        Some(Bson::String(name)) => match name.as_str() {
            "queryPlanner" => Ok(Verbosity::QueryPlanner),
            "executionStats" => Ok(Verbosity::ExecutionStats),
            "allPlansExecution" => Ok(Verbosity::AllPlansExecution),
            _ => Err(CommandError::bad_value(
                "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}",
            )),
        },
        Some(other) => Err(CommandError::type_mismatch(format!(
            "BSON field 'explain.verbosity' is the wrong type '{}', expected type 'string'",
            type_name(other)
        ))),
    }
}

/// What one explained command reads and, for a write, would do.
struct Explained {
    collection: String,
    query: Query,
    /// The stage above the query's plan (`COUNT`, `UPDATE`, `DELETE`...), if any.
    top: Option<Document>,
    /// Pipeline stages run after the query (an aggregate's, after those pushed into it).
    later_stages: Vec<Bson>,
    /// For a write: whether it affects every match or one.
    multi: Option<bool>,
}

/// `explain`.
///
/// # Errors
/// The inner command's parse errors, BadValue for a bad verbosity or a hint naming no index,
/// CommandNotFound for a command that cannot be explained, InvalidLength for a write batch of
/// more than one statement.
pub(crate) fn explain(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let inner = match command.get("explain") {
        Some(Bson::Document(inner)) => inner,
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'explain.explain' is the wrong type '{}', expected type 'object'",
                type_name(other)
            )));
        }
        None => return Err(super::args::missing("explain", "explain")),
    };
    let verbosity = verbosity(command)?;
    let name = inner.keys().next().map(String::as_str).unwrap_or_default();
    let explained = describe(name, inner)?;
    validate_namespace(exec.db, &explained.collection)?;
    if super::views::resolve(exec, &explained.collection)?.is_some() {
        return Err(CommandError::new(
            code::COMMAND_NOT_SUPPORTED_ON_VIEW,
            "blackpipe does not explain commands on views",
        ));
    }
    let ns = exec.ns(&explained.collection);
    let handle = exec.collection(&explained.collection)?;
    let guard = handle.as_ref().map(|handle| read(handle));
    let collection = guard.as_deref();
    let mut query = explained.query;
    query.hint = hint::resolve(&doc_with_hint(inner, name), collection)?;
    let (access, rejected) = plan::choose(collection, &query);
    let mut winning = winning_plan(&access, &query);
    if let Some(top) = &explained.top {
        winning = wrap(top.clone(), winning);
    }
    let planner = doc! {
        "namespace": &ns,
        "parsedQuery": plan::parsed_query(&query.filter),
        "indexFilterSet": false,
        "maxIndexedOrSolutionsReached": false,
        "maxIndexedAndSolutionsReached": false,
        "maxScansToExplodeReached": false,
        "prunedSimilarIndexes": false,
        "winningPlan": winning.clone(),
        "rejectedPlans": rejected
            .iter()
            .map(|spec| Bson::Document(winning_plan(&Access::Index(spec.clone()), &query)))
            .collect::<Vec<_>>(),
    };
    let stats = (verbosity != Verbosity::QueryPlanner)
        .then(|| {
            execution_stats(
                collection,
                &access,
                &query,
                explained.multi,
                &winning,
                verbosity,
            )
        })
        .transpose()?;
    let mut reply = doc! { "explainVersion": "1" };
    if explained.later_stages.is_empty() {
        reply.insert("queryPlanner", planner);
        if let Some(stats) = stats {
            reply.insert("executionStats", stats);
        }
    } else {
        let mut cursor = doc! { "queryPlanner": planner };
        if let Some(stats) = stats {
            cursor.insert("executionStats", stats);
        }
        let mut stages = vec![Bson::Document(doc! { "$cursor": cursor })];
        stages.extend(explained.later_stages);
        reply.insert("stages", stages);
    }
    let mut echoed = inner.clone();
    echoed.insert("$db", exec.db);
    reply.insert("command", echoed);
    reply.insert("serverInfo", server_info(exec.host));
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// The inner command's `hint` where [`hint::resolve`] looks for it (a write statement's own).
fn doc_with_hint(inner: &Document, name: &str) -> Document {
    let statement = match name {
        "update" => inner.get_array("updates").ok().and_then(|s| s.first()),
        "delete" => inner.get_array("deletes").ok().and_then(|s| s.first()),
        _ => None,
    };
    match statement {
        Some(Bson::Document(statement)) => statement.clone(),
        _ => inner.clone(),
    }
}

fn server_info(host: Option<&str>) -> Document {
    let (name, port) = host
        .and_then(|host| host.rsplit_once(':'))
        .map_or(("localhost", 27017), |(name, port)| {
            (name, port.parse().unwrap_or(27017))
        });
    doc! { "host": name, "port": port, "version": crate::SERVER_VERSION, "gitVersion": "blackpipe" }
}

/// Reads the explained command into a query and the stage above it.
fn describe(name: &str, inner: &Document) -> StoreResult<Explained> {
    let explained = |collection: &str, query: Query| Explained {
        collection: collection.to_owned(),
        query,
        top: None,
        later_stages: Vec::new(),
        multi: None,
    };
    match name {
        "find" => {
            let query = Query {
                filter: document_field(inner, name, "filter")?,
                sort: optional_document(inner, name, "sort")?.cloned(),
                projection: optional_document(inner, name, "projection")?.cloned(),
                skip: optional_non_negative(inner, name, "skip")?.unwrap_or(0),
                limit: optional_non_negative(inner, name, "limit")?.filter(|limit| *limit > 0),
                collation: optional_document(inner, name, "collation")?.cloned(),
                hint: None,
            };
            Ok(explained(collection_name(inner, name)?, query))
        }
        "count" => {
            let query = Query {
                filter: document_field(inner, name, "query")?,
                collation: optional_document(inner, name, "collation")?.cloned(),
                ..Query::default()
            };
            let mut explained = explained(collection_name(inner, name)?, query);
            explained.top = Some(doc! { "stage": "COUNT" });
            Ok(explained)
        }
        "distinct" => {
            let key = inner
                .get_str("key")
                .map_err(|_| super::args::missing(name, "key"))?;
            let query = Query {
                filter: document_field(inner, name, "query")?,
                projection: Some(doc! { "_id": 0, key: 1 }),
                collation: optional_document(inner, name, "collation")?.cloned(),
                ..Query::default()
            };
            Ok(explained(collection_name(inner, name)?, query))
        }
        "aggregate" => aggregate(inner),
        "update" | "delete" => write(name, inner),
        "findAndModify" | "findandmodify" => {
            let query = Query {
                filter: document_field(inner, name, "query")?,
                sort: optional_document(inner, name, "sort")?.cloned(),
                collation: optional_document(inner, name, "collation")?.cloned(),
                ..Query::default()
            };
            let remove = matches!(inner.get("remove"), Some(Bson::Boolean(true)));
            let mut explained = explained(collection_name(inner, name)?, query);
            explained.top = Some(doc! { "stage": if remove { "DELETE" } else { "UPDATE" } });
            explained.multi = Some(false);
            Ok(explained)
        }
        other => Err(CommandError::new(
            code::COMMAND_NOT_FOUND,
            format!("Explain failed due to unknown command: {other}"),
        )),
    }
}

fn document_field(inner: &Document, name: &str, field: &str) -> StoreResult<Document> {
    Ok(optional_document(inner, name, field)?
        .cloned()
        .unwrap_or_default())
}

/// An aggregate: its leading `$match` stages, then a `$sort`, `$skip` and `$limit` directly
/// after them, are the query (as mongod pushes them down); the rest are later stages.
fn aggregate(inner: &Document) -> StoreResult<Explained> {
    let collection = collection_name(inner, "aggregate")?.to_owned();
    let pipeline = inner
        .get_array("pipeline")
        .map_err(|_| super::args::missing("aggregate", "pipeline"))?;
    let mut query = Query {
        collation: optional_document(inner, "aggregate", "collation")?.cloned(),
        ..Query::default()
    };
    let mut matches: Vec<Bson> = Vec::new();
    let mut rest = pipeline.iter().peekable();
    while let Some(Bson::Document(stage)) = rest.peek() {
        let Ok(filter) = stage.get_document("$match") else {
            break;
        };
        matches.push(Bson::Document(filter.clone()));
        rest.next();
    }
    query.filter = match matches.len() {
        0 => Document::new(),
        1 => matches
            .pop()
            .and_then(|m| m.as_document().cloned())
            .unwrap_or_default(),
        _ => doc! { "$and": matches },
    };
    if let Some(Bson::Document(stage)) = rest.peek() {
        if let Ok(sort) = stage.get_document("$sort") {
            query.sort = Some(sort.clone());
            rest.next();
        }
    }
    let number = |stage: &Document, key: &str| {
        stage
            .get(key)
            .and_then(crate::value_order::Number::of)
            .map(|n| n.as_f64().max(0.0) as usize)
    };
    while let Some(Bson::Document(stage)) = rest.peek() {
        if let Some(skip) = number(stage, "$skip").filter(|_| query.limit.is_none()) {
            query.skip = query.skip.saturating_add(skip);
        } else if let Some(limit) = number(stage, "$limit") {
            query.limit = Some(query.limit.map_or(limit, |own| own.min(limit)));
        } else {
            break;
        }
        rest.next();
    }
    Ok(Explained {
        collection,
        query,
        top: None,
        later_stages: rest.cloned().collect(),
        multi: None,
    })
}

/// An update or delete: exactly one statement, as mongod requires of an explained batch.
fn write(name: &str, inner: &Document) -> StoreResult<Explained> {
    let field = if name == "update" {
        "updates"
    } else {
        "deletes"
    };
    let statements = inner
        .get_array(field)
        .map_err(|_| super::args::missing(name, field))?;
    let [Bson::Document(statement)] = statements.as_slice() else {
        return Err(CommandError::new(
            code::INVALID_LENGTH,
            "explained write batches must be of size 1",
        ));
    };
    let filter = statement.get_document("q").cloned().unwrap_or_default();
    let multi = if name == "update" {
        matches!(statement.get("multi"), Some(Bson::Boolean(true)))
    } else {
        statement
            .get("limit")
            .and_then(crate::value_order::Number::of)
            .is_some_and(|n| n.as_f64() == 0.0)
    };
    Ok(Explained {
        collection: collection_name(inner, name)?.to_owned(),
        query: Query {
            filter,
            collation: statement.get_document("collation").ok().cloned(),
            ..Query::default()
        },
        top: Some(doc! { "stage": if name == "update" { "UPDATE" } else { "DELETE" } }),
        later_stages: Vec::new(),
        multi: Some(multi),
    })
}

/// The counts of running the plan (for a write, of what it would do).
fn execution_stats(
    collection: Option<&Collection>,
    access: &Access,
    query: &Query,
    multi: Option<bool>,
    winning: &Document,
    verbosity: Verbosity,
) -> StoreResult<Document> {
    let filter = Filter::parse(&query.filter)?;
    let (matched, examined_docs, examined_keys) = match (collection, access) {
        (Some(collection), Access::Index(spec)) => {
            let held: Vec<_> = held_by(collection, spec);
            let matched = held
                .iter()
                .filter(|document| filter.matches(document))
                .count();
            (matched, held.len(), held.len())
        }
        (Some(collection), _) => {
            let matched = collection
                .documents()
                .filter(|document| filter.matches(document))
                .count();
            (matched, collection.len(), 0)
        }
        (None, _) => (0, 0, 0),
    };
    let returned = match multi {
        Some(false) => matched.min(1),
        _ => matched
            .saturating_sub(query.skip)
            .min(query.limit.unwrap_or(usize::MAX)),
    };
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let mut stages = winning.clone();
    stages.insert(
        "nReturned",
        count(if multi.is_some() { 0 } else { returned }),
    );
    match stages.get_str("stage") {
        Ok("UPDATE") => {
            stages.insert("nMatched", count(returned));
            stages.insert("nWouldModify", count(returned));
        }
        Ok("DELETE") => {
            stages.insert("nWouldDelete", count(returned));
        }
        _ => {}
    }
    let mut stats = doc! {
        "executionSuccess": true,
        "nReturned": count(if multi.is_some() { 0 } else { returned }),
        "executionTimeMillis": 0_i64,
        "totalKeysExamined": count(examined_keys),
        "totalDocsExamined": count(examined_docs),
        "executionStages": stages,
    };
    if verbosity == Verbosity::AllPlansExecution {
        stats.insert("allPlansExecution", Vec::<Bson>::new());
    }
    Ok(stats)
}

/// The documents an index scan over `spec` reaches: those the index holds (a partial or
/// sparse index leaves some out) and that its key bounds admit (approximated by the whole
/// filter's conditions on the index's fields).
fn held_by(collection: &Collection, spec: &Document) -> Vec<std::sync::Arc<Document>> {
    let key = spec.get_document("key").cloned().unwrap_or_default();
    let index = collection.secondary_index(&key);
    collection
        .documents()
        .filter(|document| index.is_none_or(|index| index.holds(document)))
        .cloned()
        .collect()
}
