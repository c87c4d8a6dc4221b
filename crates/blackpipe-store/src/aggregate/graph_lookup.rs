//! `$graphLookup`: a breadth-first search through another collection (or view) of the same
//! database, from the values of `startWith`, following `connectFromField` values to the
//! documents whose `connectToField` matches them, into an array field `as`.
//!
//! Each round queries the collection for the whole frontier at once, as mongod does
//! (`{connectToField: {$in: frontier}}`, with `restrictSearchWithMatch`, and the null /
//! undefined / missing distinctions mongod adds), under the command's collation. Documents are
//! de-duplicated by `_id`; `depthField` records the round that found each (a long, 0 for the
//! documents `startWith` matched); `maxDepth` bounds the rounds. The documents found and the
//! frontier may hold 100 MiB at most (mongod's `internalDocumentSourceGraphLookupMaxMemoryBytes`,
//! error 40099). The order of the `as` array is unspecified in mongod; here it is the order in
//! which the search found the documents.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::foreign::{ParseContext, Reader, field_path, values_at_path};
use super::{OutputBudget, Pipeline, Stage};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_document, type_name};
use crate::expr::Expr;
use crate::path::set_path_creating;
use crate::query::Filter;
use crate::value_order::{Number, compare_values, document_size, value_size};

/// mongod's `internalDocumentSourceGraphLookupMaxMemoryBytes`.
const MAX_MEMORY_BYTES: usize = 100 * 1024 * 1024;

/// A parsed `$graphLookup`.
#[derive(Debug, Clone)]
pub(crate) struct GraphLookup {
    from: String,
    as_path: Vec<String>,
    start_with: Expr,
    connect_from: Vec<String>,
    connect_to: String,
    depth_field: Option<Vec<String>>,
    max_depth: Option<i64>,
    restrict: Option<Document>,
    /// How deep the searches' pipelines are (a view's pipeline is parsed there).
    depth: usize,
}

/// The arguments as given.
#[derive(Default)]
struct Arguments {
    from: Option<String>,
    as_field: Option<String>,
    start_with: Option<Expr>,
    connect_from: Option<String>,
    connect_to: Option<String>,
    depth_field: Option<String>,
    max_depth: Option<i64>,
    restrict: Option<Document>,
}

impl GraphLookup {
    /// Parses `$graphLookup`'s specification, its checks in mongod's order.
    ///
    /// # Errors
    /// FailedToParse or the 40100-40185 family for a malformed specification, InvalidNamespace
    /// (73) for an empty `from`, MaxSubPipelineDepthExceeded (232), the field paths' errors.
    pub(super) fn parse(spec: &Bson, context: ParseContext<'_>) -> StoreResult<GraphLookup> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::failed_to_parse(format!(
                "the $graphLookup stage specification must be an object, but found {}",
                type_name(spec)
            )));
        };
        check_from(spec, context)?;
        let mut arguments = Arguments::default();
        for (name, value) in spec {
            arguments.read(name, value)?;
        }
        let (Some(from), Some(as_field), Some(start_with), Some(connect_from), Some(connect_to)) = (
            arguments.from,
            arguments.as_field,
            arguments.start_with,
            arguments.connect_from,
            arguments.connect_to,
        ) else {
            return Err(CommandError::new(
                code::GRAPH_LOOKUP_MISSING_ARGUMENT,
                "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and \
                 'connectToField' to be specified.",
            ));
        };
        let sub = context.nested()?;
        field_path(&connect_to)?;
        Ok(GraphLookup {
            from,
            as_path: field_path(&as_field)?,
            start_with,
            connect_from: field_path(&connect_from)?,
            connect_to,
            depth_field: arguments
                .depth_field
                .as_deref()
                .map(field_path)
                .transpose()?,
            max_depth: arguments.max_depth,
            restrict: arguments.restrict,
            depth: sub.depth(),
        })
    }

    pub(super) fn involved(&self, out: &mut Vec<String>) {
        out.push(self.from.clone());
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        reader: &mut Reader<'_>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let mut out = Vec::with_capacity(documents.len());
        for document in documents {
            reader.charge(1)?;
            let found = self.search(&document, reader)?;
            let mut output = Arc::unwrap_or_clone(document);
            set_path_creating(&mut output, &self.as_path, Bson::Array(found));
            out.push(budget.admit(output)?);
        }
        Ok(out)
    }

    /// The documents the search from `document` reaches.
    fn search(&self, document: &Document, reader: &mut Reader<'_>) -> StoreResult<Vec<Bson>> {
        let mut frontier = match self.start_with.evaluate(document)? {
            Some(Bson::Array(values)) => values,
            Some(value) => vec![value],
            None => Vec::new(),
        };
        let mut search = Search::default();
        let mut depth: i64 = 0;
        loop {
            frontier = distinct(frontier);
            if frontier.is_empty() {
                break;
            }
            search.memory.frontier = frontier.iter().map(value_size).sum();
            search.memory.check()?;
            reader.charge(frontier.len())?;
            let filter = self.frontier_filter(&frontier, reader.collation())?;
            let round = Pipeline {
                stages: vec![Stage::Match(filter)],
            };
            let matched = reader.run_over(Some(&self.from), &round, self.depth)?;
            let found_before = search.found.len();
            let mut next = Vec::new();
            for candidate in matched {
                if candidate.get("_id").is_none() {
                    return Err(self.no_id(reader));
                }
                search.visit(self, candidate, depth, &mut next)?;
            }
            depth += 1;
            let nothing_new = search.found.len() == found_before;
            if nothing_new || self.max_depth.is_some_and(|max| depth > max) {
                break;
            }
            frontier = next;
        }
        Ok(search.found)
    }

    /// `{$and: [restrictSearchWithMatch, {connectToField: {$in: frontier}}, ...]}`; when null
    /// or undefined is in the frontier, the documents missing the field are excluded, and null
    /// and undefined are told apart, as mongod does.
    fn frontier_filter(
        &self,
        frontier: &[Bson],
        collation: Option<&Collation>,
    ) -> StoreResult<Filter> {
        let to = self.connect_to.as_str();
        let null = frontier.iter().any(|value| matches!(value, Bson::Null));
        let undefined = frontier
            .iter()
            .any(|value| matches!(value, Bson::Undefined));
        let mut clauses = Vec::new();
        if let Some(restrict) = &self.restrict {
            clauses.push(Bson::Document(restrict.clone()));
        }
        clauses.push(Bson::Document(doc! { to: { "$in": frontier.to_vec() } }));
        if null || undefined {
            clauses.push(Bson::Document(doc! { to: { "$exists": true } }));
            if !undefined {
                clauses.push(Bson::Document(
                    doc! { to: { "$not": { "$type": "undefined" } } },
                ));
            } else if !null {
                clauses.push(Bson::Document(doc! { to: { "$not": { "$type": "null" } } }));
            }
        }
        Ok(Filter::parse(&doc! { "$and": clauses })?.with_collation(collation))
    }

    fn no_id(&self, reader: &Reader<'_>) -> CommandError {
        CommandError::new(
            code::GRAPH_LOOKUP_NO_ID,
            format!(
                "Documents in the '{}.{}' namespace must contain an _id for de-duplication in \
                 $graphLookup",
                reader.db(),
                self.from
            ),
        )
    }
}

/// What one search has found so far.
#[derive(Default)]
struct Search {
    /// The `_id`s found.
    visited: BTreeSet<Key>,
    found: Vec<Bson>,
    memory: Memory,
}

impl Search {
    /// Keeps `candidate`, found `depth` rounds in, unless its `_id` was found before, and adds
    /// its `connectFromField` values to the `next` frontier.
    fn visit(
        &mut self,
        stage: &GraphLookup,
        candidate: Arc<Document>,
        depth: i64,
        next: &mut Vec<Bson>,
    ) -> StoreResult<()> {
        let id = candidate.get("_id").cloned().unwrap_or(Bson::Null);
        let id_bytes = value_size(&id);
        if !self.visited.insert(Key(id)) {
            return Ok(());
        }
        let mut candidate = Arc::unwrap_or_clone(candidate);
        if let Some(field) = &stage.depth_field {
            set_path_creating(&mut candidate, field, Bson::Int64(depth));
        }
        let before = next.len();
        values_at_path(&candidate, &stage.connect_from, next);
        self.memory.frontier += next[before..].iter().map(value_size).sum::<usize>();
        self.memory.visited += id_bytes + document_size(&candidate);
        self.memory.check()?;
        self.found.push(Bson::Document(candidate));
        Ok(())
    }
}

/// The bytes a search holds, as mongod counts them.
#[derive(Default)]
struct Memory {
    visited: usize,
    frontier: usize,
}

impl Memory {
    fn check(&self) -> StoreResult<()> {
        if self.visited.saturating_add(self.frontier) < MAX_MEMORY_BYTES {
            return Ok(());
        }
        Err(CommandError::new(
            code::GRAPH_LOOKUP_MEMORY,
            "$graphLookup reached maximum memory consumption",
        ))
    }
}

/// A value ordered (and so compared for equality) as the query language compares values.
#[derive(Debug)]
struct Key(Bson);

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

/// `values` without repeats, in first-seen order.
fn distinct(values: Vec<Bson>) -> Vec<Bson> {
    let mut seen = BTreeSet::new();
    values
        .into_iter()
        .filter(|value| seen.insert(Key(value.clone())))
        .collect()
}

/// `from` must be there, a non-empty string (checked first, as mongod's lite parse does).
fn check_from(spec: &Document, context: ParseContext<'_>) -> StoreResult<()> {
    match spec.get("from") {
        None => Err(CommandError::failed_to_parse(format!(
            "missing 'from' option to $graphLookup stage specification: {}",
            format_document(spec)
        ))),
        Some(Bson::String(name)) if name.is_empty() => Err(CommandError::new(
            code::INVALID_NAMESPACE,
            format!("invalid $graphLookup namespace: {}.", context.db),
        )),
        Some(Bson::String(_)) => Ok(()),
        Some(Bson::Document(target)) => Err(CommandError::failed_to_parse(format!(
            "$graphLookup with syntax {{from: {{db:<>, coll:<>}},..}} is not supported for db: \
             {} and coll: {}",
            target.get_str("db").unwrap_or_default(),
            target.get_str("coll").unwrap_or_default()
        ))),
        Some(other) => Err(CommandError::failed_to_parse(format!(
            "$graphLookup 'from' field must be a string, but found {}",
            type_name(other)
        ))),
    }
}

impl Arguments {
    /// Reads one argument.
    fn read(&mut self, name: &str, value: &Bson) -> StoreResult<()> {
        match name {
            "startWith" => self.start_with = Some(Expr::parse(value)?),
            "maxDepth" => self.max_depth = Some(max_depth(value)?),
            "restrictSearchWithMatch" => self.restrict = Some(restrict(value)?),
            "from" | "as" | "connectFromField" | "connectToField" | "depthField" => {
                let Bson::String(text) = value else {
                    return Err(CommandError::new(
                        code::GRAPH_LOOKUP_ARGUMENT_NOT_STRING,
                        format!(
                            "expected string as argument for {name}, found: {}",
                            type_name(value)
                        ),
                    ));
                };
                let text = Some(text.clone()).filter(|text| !text.is_empty());
                match name {
                    "from" => self.from = text,
                    "as" => self.as_field = text,
                    "connectFromField" => self.connect_from = text,
                    "connectToField" => self.connect_to = text,
                    _ => {
                        // mongod builds the depth field's path as soon as it reads it.
                        field_path(text.as_deref().unwrap_or_default())?;
                        self.depth_field = text;
                    }
                }
            }
            _ => {
                return Err(CommandError::new(
                    code::GRAPH_LOOKUP_UNKNOWN_ARGUMENT,
                    format!("Unknown argument to $graphLookup: {name}"),
                ));
            }
        }
        Ok(())
    }
}

/// `maxDepth`: a non-negative whole number.
fn max_depth(value: &Bson) -> StoreResult<i64> {
    let Some(number) = Number::of(value) else {
        return Err(CommandError::new(
            code::GRAPH_LOOKUP_MAX_DEPTH_NOT_NUMBER,
            format!("maxDepth must be numeric, found type: {}", type_name(value)),
        ));
    };
    let exact = number.as_f64();
    #[allow(clippy::cast_possible_truncation)]
    let whole = match number {
        Number::Int(whole) => whole,
        // mongod's `safeNumberLong`: truncated, saturated, NaN as 0.
        _ if exact.is_nan() => 0,
        _ => exact as i64,
    };
    if whole < 0 {
        return Err(CommandError::new(
            code::GRAPH_LOOKUP_MAX_DEPTH_NEGATIVE,
            format!("maxDepth requires a nonnegative argument, found: {whole}"),
        ));
    }
    #[allow(clippy::cast_precision_loss)]
    if !matches!(number, Number::Int(_)) && whole as f64 != exact {
        return Err(CommandError::new(
            code::GRAPH_LOOKUP_MAX_DEPTH_NOT_INTEGRAL,
            format!("maxDepth could not be represented as a long long: {whole}"),
        ));
    }
    Ok(whole)
}

/// `restrictSearchWithMatch`: a query filter, checked when the stage is parsed.
fn restrict(value: &Bson) -> StoreResult<Document> {
    let Bson::Document(filter) = value else {
        return Err(CommandError::new(
            code::GRAPH_LOOKUP_RESTRICT_NOT_OBJECT,
            format!(
                "restrictSearchWithMatch must be an object, found {}",
                type_name(value)
            ),
        ));
    };
    Filter::parse(filter).map_err(|error| {
        CommandError::new(
            error.code,
            format!(
                "Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: caused by \
                 :: {}",
                error.message
            ),
        )
    })?;
    Ok(filter.clone())
}
