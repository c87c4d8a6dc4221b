//! Aggregation pipelines: `$match $project $addFields/$set $unset $group $sort $limit $skip
//! $count $unwind $replaceRoot/$replaceWith $sortByCount`, and the single-input stages
//! `$bucket $bucketAuto $sample $redact $densify $fill` (`single.rs`).
//! Stages reading other collections and running sub-pipelines (`$lookup $graphLookup
//! $unionWith $facet $documents`): `multi.rs`, with the command's collections reached through
//! a [`Reader`] (`foreign.rs`).

mod group;
mod stage_names;
// Accumulators and window functions (accumulators): shared by `$group` and
// `$setWindowFields`.
mod acc_js;
mod acc_n;
mod acc_percentile;
mod acc_state;
mod accumulator;
mod window;
mod window_bounds;
mod window_exec;
mod window_funcs;
mod window_states;
// Single-input stages (stages-single).
mod bucket;
mod bucket_auto;
mod densify;
mod densify_run;
mod fill;
mod granularity;
mod redact;
mod sample;
mod single;
// Stages reading other collections and running sub-pipelines (stages-multi).
mod documents;
mod facet;
mod foreign;
mod graph_lookup;
mod lookup;
mod multi;
mod union_with;

pub(crate) use self::foreign::{ForeignSource, ParseContext, Reader, Scan};
pub(crate) use self::stage_names::lite_parse;

use std::sync::Arc;

use bson::{Bson, Document, doc};

use self::group::GroupSpec;
use self::stage_names::{UNSUPPORTED_STAGES, stage_not_one_field, unrecognized_stage};
use self::window::SetWindowFields;
use super::errors::{
    CommandError, MAX_INTERNAL_BSON_BYTES, StoreResult, check_bson_size, type_name,
};
use super::expr::Expr;
use super::path::{get_path, set_path_creating, split_path};
use super::projection::{Projection, ProjectionKind};
use super::query::Filter;
use super::sort::SortSpec;
use super::value_order::{Number, document_size, value_size};
use crate::code;

/// A parsed pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    stages: Vec<Stage>,
}

impl Pipeline {
    /// The pipeline with its `$match`, `$sort` and `$group` stages comparing strings under the
    /// command's collation.
    pub(crate) fn with_collation(
        self,
        collation: Option<&super::collation::Collation>,
    ) -> Pipeline {
        if collation.is_none() {
            return self;
        }
        let stages = self
            .stages
            .into_iter()
            .map(|stage| match stage {
                Stage::Match(filter) => Stage::Match(filter.with_collation(collation)),
                Stage::Sort(sort) => Stage::Sort(sort.with_collation(collation)),
                Stage::Group(group) => Stage::Group(group.with_collation(collation)),
                // Accumulators and window functions (accumulators).
                Stage::SetWindowFields(stage) => {
                    Stage::SetWindowFields(Box::new(stage.with_collation(collation)))
                }
                // Single-input stages (stages-single).
                Stage::Single(stage) => Stage::Single(stage.with_collation(collation)),
                Stage::Multi(multi) => Stage::Multi(Box::new(multi.with_collation(collation))),
                other => other,
            })
            .collect();
        Pipeline { stages }
    }

    /// The pipeline under the command's `allowDiskUse` (accumulators family): `$group` and
    /// `$setWindowFields` hold at most mongod's 100 MiB when it is false.
    pub(crate) fn with_allow_disk_use(self, allow: bool) -> Pipeline {
        let stages = self
            .stages
            .into_iter()
            .map(|stage| match stage {
                Stage::Group(group) => Stage::Group(group.with_allow_disk_use(allow)),
                Stage::SetWindowFields(stage) => {
                    Stage::SetWindowFields(Box::new(stage.with_allow_disk_use(allow)))
                }
                other => other,
            })
            .collect();
        Pipeline { stages }
    }
}

/// A command's `allowDiskUse`: mongod 8.0 lets stages spill unless the command says `false`
/// (`allowDiskUseByDefault`).
pub(crate) fn allow_disk_use(command: &Document) -> bool {
    !matches!(command.get("allowDiskUse"), Some(Bson::Boolean(false)))
}

#[derive(Debug, Clone)]
enum Stage {
    Match(Filter),
    Project(Projection),
    AddFields(Vec<(Vec<String>, Expr)>),
    Group(GroupSpec),
    Sort(SortSpec),
    Limit(usize),
    Skip(usize),
    Count(String),
    Unwind {
        parts: Vec<String>,
        include_index: Option<String>,
        preserve: bool,
    },
    ReplaceRoot(Expr),
    // Accumulators and window functions (accumulators).
    SetWindowFields(Box<SetWindowFields>),
    /// `$bucket $bucketAuto $sample $redact $densify $fill` (stages-single): `single.rs`.
    Single(single::SingleStage),
    /// `$lookup`, `$graphLookup`, `$unionWith`, `$facet`, `$documents` (stages-multi).
    Multi(Box<multi::MultiStage>),
}

impl Stage {
    fn allowed_in_update(&self) -> bool {
        matches!(
            self,
            Stage::Project(_) | Stage::AddFields(_) | Stage::ReplaceRoot(_)
        )
    }

    /// The name mongod gives the stage in errors (`$count` and `$sortByCount` are a `$group`
    /// there too).
    fn source_name(&self) -> &'static str {
        match self {
            Stage::Match(_) => "$match",
            Stage::Project(_) => "$project",
            Stage::AddFields(_) => "$addFields",
            Stage::Group(_) | Stage::Count(_) => "$group",
            Stage::Sort(_) => "$sort",
            Stage::Limit(_) => "$limit",
            Stage::Skip(_) => "$skip",
            Stage::Unwind { .. } => "$unwind",
            Stage::ReplaceRoot(_) => "$replaceRoot",
            // Accumulators and window functions (accumulators).
            Stage::SetWindowFields(_) => "$setWindowFields",
            Stage::Single(stage) => stage.source_name(),
            Stage::Multi(multi) => multi.name(),
        }
    }
}

impl Pipeline {
    /// Parses an aggregation pipeline that reads no other collection by name.
    pub(crate) fn parse(stages: &[Bson]) -> StoreResult<Pipeline> {
        Pipeline::parse_in(stages, ParseContext::TOP)
    }

    /// Parses a pipeline of a command on database `context.db`, `context`'s depth deep in
    /// sub-pipelines.
    pub(crate) fn parse_in(stages: &[Bson], context: ParseContext<'_>) -> StoreResult<Pipeline> {
        let mut parsed = Vec::with_capacity(stages.len());
        for stage in stages {
            parsed.extend(parse_any(stage, context)?);
        }
        multi::check_positions(&parsed)?;
        Ok(Pipeline { stages: parsed })
    }

    /// Parses a pipeline-style update, which allows only the document-reshaping stages. As
    /// mongod does, every stage is parsed before any is refused, so a malformed stage's own
    /// error wins over a misplaced one; stages blackpipe knows but does not model are refused
    /// by name.
    pub(crate) fn parse_for_update(stages: &[Bson]) -> StoreResult<Pipeline> {
        let mut parsed = Vec::with_capacity(stages.len());
        let mut refused = None;
        for stage in stages {
            let unsupported = stage.as_document().and_then(|stage| {
                let name = stage.keys().next().filter(|_| stage.len() == 1)?;
                UNSUPPORTED_STAGES.contains(&name.as_str()).then_some(name)
            });
            if let Some(name) = unsupported {
                refused = refused.or_else(|| Some(name.clone()));
                continue;
            }
            for stage in parse_any(stage, ParseContext::TOP)? {
                if refused.is_none() && !stage.allowed_in_update() {
                    refused = Some(stage.source_name().to_owned());
                }
                parsed.push(stage);
            }
        }
        match refused {
            Some(name) => Err(CommandError::new(
                code::INVALID_OPTIONS,
                format!("{name} is not allowed to be used within an update"),
            )),
            None => Ok(Pipeline { stages: parsed }),
        }
    }

    /// Parses the stages after `$changeStream`: only those that filter or reshape one event
    /// at a time (`$match $project $addFields/$set $unset $replaceRoot/$replaceWith`).
    pub(crate) fn parse_for_change_stream(stages: &[Bson]) -> StoreResult<Pipeline> {
        let pipeline = Pipeline::parse(stages)?;
        for stage in &pipeline.stages {
            // Single-input stages (stages-single): `$redact` may follow `$changeStream`.
            if matches!(stage, Stage::Single(single) if single.allowed_in_change_stream()) {
                continue;
            }
            if !matches!(
                stage,
                Stage::Match(_) | Stage::Project(_) | Stage::AddFields(_) | Stage::ReplaceRoot(_)
            ) {
                return Err(CommandError::new(
                    code::ILLEGAL_OPERATION,
                    "Only $match, $project, $addFields, $set, $unset, $replaceRoot and $replaceWith may follow $changeStream",
                ));
            }
        }
        Ok(pipeline)
    }

    /// The filter of a leading `$match`, which can be evaluated while scanning the collection.
    pub(crate) fn leading_match(&self) -> Option<&Filter> {
        match self.stages.first() {
            Some(Stage::Match(filter)) => Some(filter),
            _ => None,
        }
    }

    /// Runs the pipeline; with `skip_leading_match`, the caller already applied [`Self::leading_match`].
    /// A pipeline run this way may not read other collections (see [`Self::run_with`]).
    pub(crate) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        skip_leading_match: bool,
    ) -> StoreResult<Vec<Arc<Document>>> {
        Reader::detached(|reader| self.run_with(documents, skip_leading_match, reader))
    }

    /// [`Self::run`], reading other collections of the command's database through `reader`.
    pub(crate) fn run_with(
        &self,
        documents: Vec<Arc<Document>>,
        skip_leading_match: bool,
        reader: &mut Reader<'_>,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let skip = usize::from(skip_leading_match && self.leading_match().is_some());
        run_stages(&self.stages[skip..], documents, reader)
    }

    /// Whether the pipeline starts with `$documents` (stages-multi): it reads no collection.
    pub(crate) fn starts_with_documents(&self) -> bool {
        matches!(self.stages.first(), Some(Stage::Multi(multi)) if multi.is_source())
    }

    /// Applies a (reshaping-only) pipeline to one document, for pipeline-style updates.
    pub(crate) fn apply_to_one(&self, document: Document) -> StoreResult<Document> {
        let mut output = self.run(vec![Arc::new(document)], false)?;
        let result = output
            .pop()
            .ok_or_else(|| CommandError::bad_value("update pipeline produced no document"))?;
        Ok(Arc::unwrap_or_clone(result))
    }
}

/// Runs `stages` over `documents`, each stage's output the next one's input.
fn run_stages(
    stages: &[Stage],
    mut documents: Vec<Arc<Document>>,
    reader: &mut Reader<'_>,
) -> StoreResult<Vec<Arc<Document>>> {
    for stage in stages {
        let mut budget = OutputBudget {
            remaining: MAX_STAGE_OUTPUT_BYTES,
        };
        documents = match stage {
            // Stages reading other collections and running sub-pipelines (stages-multi).
            Stage::Multi(multi) => multi.run(documents, reader, &mut budget)?,
            other => run_stage(other, documents, &mut budget)?,
        };
    }
    Ok(documents)
}

/// Parses one stage in `context`: the stages reading other collections and running
/// sub-pipelines (stages-multi) need it; the others are parsed by [`parse_stage`].
fn parse_any(stage: &Bson, context: ParseContext<'_>) -> StoreResult<Vec<Stage>> {
    match multi::parse(stage, context)? {
        Some(multi) => Ok(vec![Stage::Multi(Box::new(multi))]),
        None => parse_stage(stage),
    }
}

/// Parses one stage; `$sortByCount` expands to a `$group` followed by a `$sort`.
fn parse_stage(stage: &Bson) -> StoreResult<Vec<Stage>> {
    let Bson::Document(stage) = stage else {
        return Err(CommandError::new(
            code::TYPE_MISMATCH,
            "Each element of the 'pipeline' array must be an object",
        ));
    };
    let (name, spec) = match stage.iter().next() {
        Some(field) if stage.len() == 1 => field,
        _ => return Err(stage_not_one_field()),
    };
    let parsed = match name.as_str() {
        "$match" => match spec {
            Bson::Document(filter) => Stage::Match(Filter::parse(filter)?),
            _ => {
                return Err(CommandError::new(
                    code::MATCH_NOT_OBJECT,
                    "the match filter must be an expression in an object",
                ));
            }
        },
        "$project" => match spec {
            Bson::Document(projection) => Stage::Project(
                Projection::parse(projection, ProjectionKind::Stage)?.ok_or_else(|| {
                    CommandError::new(
                        code::EMPTY_PROJECTION,
                        "projection specification must have at least one field",
                    )
                })?,
            ),
            _ => {
                return Err(CommandError::new(
                    code::PROJECT_NOT_OBJECT,
                    "$project specification must be an object",
                ));
            }
        },
        "$addFields" | "$set" => match spec {
            Bson::Document(fields) => Stage::AddFields(parse_add_fields(fields, "")?),
            _ => {
                return Err(CommandError::new(
                    code::ADD_FIELDS_NOT_OBJECT,
                    format!(
                        "{name} specification stage must be an object, got {}",
                        type_name(spec)
                    ),
                ));
            }
        },
        "$unset" => Stage::Project(Projection::exclusion(&unset_paths(spec)?)),
        "$group" => Stage::Group(GroupSpec::parse(spec)?),
        "$sort" => match spec {
            Bson::Document(keys) if !keys.is_empty() => Stage::Sort(SortSpec::parse(keys)?),
            Bson::Document(_) => {
                return Err(CommandError::new(
                    code::SORT_WITHOUT_KEYS,
                    "$sort stage must have at least one sort key",
                ));
            }
            _ => {
                return Err(CommandError::new(
                    code::SORT_NOT_OBJECT,
                    "the $sort key specification must be an object",
                ));
            }
        },
        "$limit" => match whole_number(spec) {
            Some(limit) if limit > 0 => Stage::Limit(usize::try_from(limit).unwrap_or(usize::MAX)),
            Some(_) => {
                return Err(CommandError::new(
                    code::LIMIT_NOT_POSITIVE,
                    "the limit must be positive",
                ));
            }
            None => {
                return Err(CommandError::new(
                    code::LIMIT_NOT_NUMBER,
                    "the limit must be specified as a number",
                ));
            }
        },
        "$skip" => match whole_number(spec) {
            Some(skip) if skip >= 0 => Stage::Skip(usize::try_from(skip).unwrap_or(usize::MAX)),
            Some(_) => {
                return Err(CommandError::new(
                    code::SKIP_NEGATIVE,
                    "invalid argument to $skip stage: value cannot be negative",
                ));
            }
            None => {
                return Err(CommandError::new(
                    code::SKIP_NOT_NUMBER,
                    "Argument to $skip must be a number",
                ));
            }
        },
        "$count" => Stage::Count(count_field(spec)?),
        "$unwind" => parse_unwind(spec)?,
        "$replaceRoot" => match spec {
            Bson::Document(options) => match options.get("newRoot") {
                Some(root) => Stage::ReplaceRoot(Expr::parse(root)?),
                None => {
                    return Err(CommandError::new(
                        code::REPLACE_ROOT_WITHOUT_NEW_ROOT,
                        "no newRoot specified for the $replaceRoot stage",
                    ));
                }
            },
            _ => {
                return Err(CommandError::new(
                    code::REPLACE_ROOT_NOT_OBJECT,
                    "expected an object as specification for $replaceRoot stage",
                ));
            }
        },
        "$replaceWith" => Stage::ReplaceRoot(Expr::parse(spec)?),
        // Accumulators and window functions (accumulators).
        "$setWindowFields" => Stage::SetWindowFields(Box::new(SetWindowFields::parse(spec)?)),
        "$sortByCount" => {
            let group = doc! { "_id": spec.clone(), "count": { "$sum": 1 } };
            let group = Stage::Group(GroupSpec::parse(&Bson::Document(group))?);
            let sort = Stage::Sort(SortSpec::parse(&doc! { "count": -1 })?);
            return Ok(vec![group, sort]);
        }
        // Single-input stages (stages-single): `single.rs`.
        name if single::NAMES.contains(&name) => {
            Stage::Single(single::SingleStage::parse(name, spec)?)
        }
        other if stage_names::is_mongod_stage(other) => {
            return Err(CommandError::new(
                code::UNRECOGNIZED_STAGE,
                format!("blackpipe does not support the {other} stage"),
            ));
        }
        other => return Err(unrecognized_stage(other)),
    };
    Ok(vec![parsed])
}

fn whole_number(value: &Bson) -> Option<i64> {
    match Number::of(value)? {
        Number::Int(number) => Some(number),
        #[allow(clippy::cast_possible_truncation)]
        Number::Float(number) if number.fract() == 0.0 => Some(number as i64),
        Number::Float(_) => None,
        Number::Decimal(_) => crate::integer::integral(value),
    }
}

fn parse_add_fields(fields: &Document, prefix: &str) -> StoreResult<Vec<(Vec<String>, Expr)>> {
    let mut out = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            // A nested object without operators sets the fields inside the embedded document.
            Bson::Document(nested)
                if !nested.is_empty()
                    && !nested.keys().next().is_some_and(|key| key.starts_with('$')) =>
            {
                out.extend(parse_add_fields(nested, &path)?);
            }
            other => out.push((split_path(&path), Expr::parse(other)?)),
        }
    }
    Ok(out)
}

fn unset_paths(spec: &Bson) -> StoreResult<Vec<String>> {
    let invalid = || {
        CommandError::new(
            code::UNSET_NOT_STRINGS,
            "$unset specification must be a string or an array containing only string values",
        )
    };
    match spec {
        Bson::String(path) => Ok(vec![path.clone()]),
        Bson::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(invalid))
            .collect(),
        _ => Err(invalid()),
    }
}

fn count_field(spec: &Bson) -> StoreResult<String> {
    let Bson::String(name) = spec else {
        return Err(CommandError::new(
            code::COUNT_FIELD_NOT_STRING,
            "the count field must be a non-empty string",
        ));
    };
    if name.is_empty() {
        return Err(CommandError::new(
            code::COUNT_FIELD_EMPTY,
            "the count field must be a non-empty string",
        ));
    }
    if name.starts_with('$') {
        return Err(CommandError::new(
            code::COUNT_FIELD_DOLLAR_PREFIXED,
            "the count field cannot be a $-prefixed path",
        ));
    }
    if name.contains('.') {
        return Err(CommandError::new(
            code::COUNT_FIELD_WITH_DOT,
            "the count field cannot contain '.'",
        ));
    }
    Ok(name.clone())
}

fn parse_unwind(spec: &Bson) -> StoreResult<Stage> {
    let (path, include_index, preserve) = match spec {
        Bson::String(path) => (path.clone(), None, false),
        Bson::Document(options) => {
            let Some(Bson::String(path)) = options.get("path") else {
                return Err(CommandError::new(
                    code::UNWIND_WITHOUT_PATH,
                    "no path specified to $unwind stage",
                ));
            };
            let include_index = match options.get("includeArrayIndex") {
                None => None,
                Some(Bson::String(name)) if !name.is_empty() && !name.starts_with('$') => {
                    Some(name.clone())
                }
                Some(_) => {
                    return Err(CommandError::new(
                        code::UNWIND_BAD_INDEX_FIELD,
                        "includeArrayIndex option to $unwind stage should be a non-empty string without a $ prefix",
                    ));
                }
            };
            let preserve = match options.get("preserveNullAndEmptyArrays") {
                None => false,
                Some(Bson::Boolean(flag)) => *flag,
                Some(_) => {
                    return Err(CommandError::new(
                        code::UNWIND_BAD_PRESERVE_NULL,
                        "expected a boolean for preserveNullAndEmptyArrays option to $unwind stage",
                    ));
                }
            };
            (path.clone(), include_index, preserve)
        }
        _ => {
            return Err(CommandError::new(
                code::UNWIND_BAD_SPEC,
                "expected either a string or an object as specification for $unwind stage",
            ));
        }
    };
    let Some(field) = path.strip_prefix('$') else {
        return Err(CommandError::new(
            code::UNWIND_PATH_WITHOUT_DOLLAR,
            format!("path option to $unwind stage should be prefixed with a '$': {path}"),
        ));
    };
    Ok(Stage::Unwind {
        parts: split_path(field),
        include_index,
        preserve,
    })
}

/// Bytes of new documents one stage may build. blackpipe materialises every stage's output
/// (mongod streams it), so without a bound a stage multiplying its input (`$unwind` of a large
/// array, `$addFields` repeating a large value) could build terabytes from one request.
const MAX_STAGE_OUTPUT_BYTES: usize = 256 * 1024 * 1024;

/// What remains of [`MAX_STAGE_OUTPUT_BYTES`] for the stage running.
struct OutputBudget {
    remaining: usize,
}

impl OutputBudget {
    /// Accounts for a new document of `size` bytes; ExceededMemoryLimit (146) past the bound,
    /// checked as each document is built so memory stays bounded.
    fn charge(&mut self, size: usize) -> StoreResult<()> {
        self.remaining = self.remaining.checked_sub(size).ok_or_else(|| {
            CommandError::new(
                code::EXCEEDED_MEMORY_LIMIT,
                format!(
                    "a pipeline stage built more than {MAX_STAGE_OUTPUT_BYTES} bytes of documents; \
                     blackpipe holds each stage's output in memory"
                ),
            )
        })?;
        Ok(())
    }

    /// Checks a new document against mongod's size limit and charges it.
    fn admit(&mut self, document: Document) -> StoreResult<Arc<Document>> {
        let size = document_size(&document);
        check_bson_size(size)?;
        self.charge(size)?;
        Ok(Arc::new(document))
    }
}

fn run_stage(
    stage: &Stage,
    documents: Vec<Arc<Document>>,
    budget: &mut OutputBudget,
) -> StoreResult<Vec<Arc<Document>>> {
    match stage {
        Stage::Match(filter) => Ok(documents.into_iter().filter(|document| filter.matches(document)).collect()),
        Stage::Project(projection) => documents
            .iter()
            .map(|document| budget.admit(projection.apply(document)?))
            .collect(),
        Stage::AddFields(fields) => documents
            .into_iter()
            .map(|document| budget.admit(add_fields(Arc::unwrap_or_clone(document), fields)?))
            .collect(),
        Stage::Group(spec) => spec
            .run(documents)?
            .into_iter()
            .map(|document| budget.admit(Arc::unwrap_or_clone(document)))
            .collect(),
        Stage::Sort(spec) => Ok(spec.sort(documents, |document| Some(document.as_ref()))),
        // Accumulators and window functions (accumulators).
        Stage::SetWindowFields(stage) => stage
            .run(documents)?
            .into_iter()
            .map(|document| budget.admit(Arc::unwrap_or_clone(document)))
            .collect(),
        Stage::Limit(limit) => Ok(documents.into_iter().take(*limit).collect()),
        Stage::Skip(skip) => Ok(documents.into_iter().skip(*skip).collect()),
        Stage::Count(name) => {
            if documents.is_empty() {
                return Ok(Vec::new());
            }
            let count = documents.len();
            let count = i32::try_from(count).map_or(Bson::Int64(i64::try_from(count).unwrap_or(i64::MAX)), Bson::Int32);
            let mut out = Document::new();
            out.insert(name.clone(), count);
            Ok(vec![Arc::new(out)])
        }
        // Single-input stages (stages-single).
        Stage::Single(stage) => stage.run(documents, budget),
        Stage::Unwind { parts, include_index, preserve } => unwind(documents, parts, include_index.as_deref(), *preserve, budget),
        Stage::ReplaceRoot(expr) => documents
            .iter()
            .map(|document| match expr.evaluate(document)? {
                Some(Bson::Document(root)) => budget.admit(root),
                other => Err(CommandError::new(
                    code::REPLACEMENT_NOT_OBJECT,
                    format!(
                        "'replacement document' must evaluate to an object, but resulting value was: {}. Type of resulting value: '{}'.",
                        other.as_ref().map_or_else(|| "MISSING".to_owned(), super::errors::format_value),
                        other.as_ref().map_or("missing", type_name)
                    ),
                )),
            })
            .collect(),
        // Run by `Pipeline::run_with`, which has the reader they need (stages-multi).
        Stage::Multi(multi) => Err(CommandError::new(
            code::INTERNAL_ERROR,
            format!("{} reached the single-collection runner", multi.name()),
        )),
    }
}

/// Applies `$addFields`/`$set` fields to one document. The document's size is tracked as an
/// upper bound (each new value counted in full, replaced values not subtracted) and measured
/// exactly only when the bound passes mongod's limit, so that a stage repeating a large value
/// fails as soon as the document really is too large, without measuring it after every field.
fn add_fields(mut document: Document, fields: &[(Vec<String>, Expr)]) -> StoreResult<Document> {
    let root = document.clone();
    let mut size_bound = document_size(&document);
    for (parts, expr) in fields {
        match expr.evaluate(&root)? {
            Some(value) => {
                let path_len: usize = parts.iter().map(|part| part.len() + 7).sum();
                size_bound = size_bound
                    .saturating_add(path_len)
                    .saturating_add(value_size(&value));
                set_path_creating(&mut document, parts, value);
                if size_bound > MAX_INTERNAL_BSON_BYTES {
                    size_bound = document_size(&document);
                    check_bson_size(size_bound)?;
                }
            }
            None => remove_path(&mut document, parts),
        }
    }
    Ok(document)
}

fn remove_path(document: &mut Document, parts: &[String]) {
    match parts {
        [] => {}
        [last] => {
            document.remove(last);
        }
        [first, rest @ ..] => {
            if let Some(Bson::Document(child)) = document.get_mut(first) {
                remove_path(child, rest);
            }
        }
    }
}

fn unwind(
    documents: Vec<Arc<Document>>,
    parts: &[String],
    include_index: Option<&str>,
    preserve: bool,
    budget: &mut OutputBudget,
) -> StoreResult<Vec<Arc<Document>>> {
    let mut out = Vec::with_capacity(documents.len());
    for document in documents {
        match get_path(&document, parts) {
            Some(Bson::Array(items)) if !items.is_empty() => {
                // Copies are made from a template without the array, so unwinding n elements
                // costs n small copies, not n copies of the whole array.
                let mut template = (*document).clone();
                set_path_creating(&mut template, parts, Bson::Null);
                for (position, item) in items.iter().enumerate() {
                    let mut copy = template.clone();
                    set_path_creating(&mut copy, parts, item.clone());
                    if let Some(name) = include_index {
                        copy.insert(
                            name,
                            Bson::Int64(i64::try_from(position).unwrap_or(i64::MAX)),
                        );
                    }
                    out.push(budget.admit(copy)?);
                }
            }
            Some(Bson::Array(_)) | Some(Bson::Null) | None => {
                if preserve {
                    let mut copy = (*document).clone();
                    // An empty array disappears from the output document; null stays.
                    if matches!(get_path(&document, parts), Some(Bson::Array(_))) {
                        remove_path(&mut copy, parts);
                    }
                    if let Some(name) = include_index {
                        copy.insert(name, Bson::Null);
                    }
                    out.push(budget.admit(copy)?);
                }
            }
            // A non-array value is treated as a one-element array.
            Some(_) => {
                if let Some(name) = include_index {
                    let mut copy = (*document).clone();
                    copy.insert(name, Bson::Null);
                    out.push(budget.admit(copy)?);
                } else {
                    out.push(document);
                }
            }
        }
    }
    Ok(out)
}
