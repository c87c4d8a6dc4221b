//! `$lookup`: joins each input document with documents of another collection (or view) of the
//! same database, into an array field `as`.
//!
//! Three forms, as in mongod 8.0:
//! - equality: `localField`/`foreignField`; the local values (every value the path reaches,
//!   array elements one by one; none is null) are matched against `foreignField` with query
//!   equality (`$eq`, `$in`, or an `$or` of `$eq` when a value is a regular expression, so that
//!   it matches only an equal regular expression), under the command's collation;
//! - pipeline: `pipeline` with `let` variables evaluated against the input document and
//!   visible in the sub-pipeline (`$$name` in expressions and in `$match` through `$expr`);
//! - both: the equality `$match` runs first, then `pipeline`.
//!
//! Without `from`, the pipeline must start with `$documents`. A missing collection matches
//! nothing. The `let` variables are bound by substitution (see `let_vars.rs`): the raw
//! sub-pipeline is bound and parsed for each input document; it is parsed once beforehand
//! with placeholder values so that its errors surface whatever the input.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::foreign::{ParseContext, Reader, field_path, values_at_path};
use super::multi::{Parent, parse_sub_pipeline};
use super::{OutputBudget, Pipeline, Stage, run_stages};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::expr::Expr;
use crate::expr::vars::check_name_for_write;
use crate::let_vars::LetVars;
use crate::path::set_path_creating;
use crate::query::Filter;
use crate::value_order::{document_size, value_size};

/// mongod's `internalLookupStageIntermediateDocumentMaxSizeBytes`: the documents one input
/// document joins with may total this much.
const MAX_MATCHES_BYTES: usize = 100 * 1024 * 1024;

/// A parsed `$lookup`.
#[derive(Debug, Clone)]
pub(crate) struct Lookup {
    /// The collection or view read; `None` when the pipeline starts with `$documents`.
    from: Option<String>,
    as_path: Vec<String>,
    join: Option<Join>,
    lets: Vec<(String, Expr)>,
    /// The sub-pipeline as given, bound for each document when there are `lets`.
    raw: Vec<Bson>,
    /// The sub-pipeline parsed (with placeholder variables when there are `lets`).
    pipeline: Pipeline,
    /// What binding and parsing the sub-pipeline again for one document costs, in
    /// documents examined (about one per 64 bytes of it).
    bind_cost: usize,
    /// How deep the sub-pipeline is.
    depth: usize,
}

/// The `localField`/`foreignField` equality.
#[derive(Debug, Clone)]
struct Join {
    local: Vec<String>,
    foreign: String,
}

/// The arguments as given, before the checks between them.
#[derive(Default)]
struct Arguments {
    from: Option<String>,
    as_field: Option<String>,
    local: Option<String>,
    foreign: Option<String>,
    lets: Option<Document>,
    pipeline: Option<Bson>,
}

impl Lookup {
    /// Parses `$lookup`'s specification, its checks in mongod's order.
    ///
    /// # Errors
    /// FailedToParse for a malformed specification, InvalidNamespace (73) for an empty
    /// `from`, MaxSubPipelineDepthExceeded (232), the field paths' and the sub-pipeline's
    /// errors.
    pub(super) fn parse(spec: &Bson, context: ParseContext<'_>) -> StoreResult<Lookup> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::failed_to_parse(format!(
                "the $lookup stage specification must be an object, but found {}",
                type_name(spec)
            )));
        };
        let from = parse_from(spec, context)?;
        let arguments = Arguments::read(spec, from)?;
        arguments.check_form()?;
        let sub = context.nested()?;
        let as_path = field_path(arguments.as_field.as_deref().unwrap_or_default())?;
        let join = match (&arguments.local, &arguments.foreign) {
            (Some(local), Some(foreign)) => {
                field_path(foreign)?;
                Some(Join {
                    local: field_path(local)?,
                    foreign: foreign.clone(),
                })
            }
            _ => None,
        };
        let lets = parse_lets(arguments.lets.as_ref())?;
        let (raw, pipeline) = match &arguments.pipeline {
            Some(value) => parse_with_placeholders(value, &lets, sub)?,
            None => (Vec::new(), Pipeline { stages: Vec::new() }),
        };
        let raw_bytes: usize = raw.iter().map(value_size).sum();
        Ok(Lookup {
            bind_cost: 1 + raw_bytes / 64,
            from: arguments.from,
            as_path,
            join,
            lets,
            raw,
            pipeline,
            depth: sub.depth(),
        })
    }

    pub(super) fn with_collation(mut self, collation: Option<&Collation>) -> Lookup {
        self.pipeline = self.pipeline.with_collation(collation);
        self
    }

    pub(super) fn involved(&self, out: &mut Vec<String>) {
        out.extend(self.from.iter().cloned());
        super::multi::pipeline_involved(&self.pipeline, out);
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
            let matches = self.matches_for(&document, reader)?;
            out.push(budget.admit(self.joined(document, matches)?)?);
        }
        Ok(out)
    }

    /// The documents `document` joins with.
    fn matches_for(
        &self,
        document: &Document,
        reader: &mut Reader<'_>,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let bound;
        let pipeline = if self.lets.is_empty() {
            &self.pipeline
        } else {
            bound = self.bind(document, reader)?;
            &bound
        };
        let Some(join) = &self.join else {
            return reader.run_over(self.from.as_deref(), pipeline, self.depth);
        };
        let (filter, values) = join.filter(document, reader.collation())?;
        // A large array of local values is a large filter to build, for every document.
        reader.charge(values)?;
        // The equality `$match` comes after a leading `$documents`, before the rest.
        if pipeline.starts_with_documents() {
            let produced = run_stages(&pipeline.stages[..1], Vec::new(), reader)?;
            reader.charge(produced.len())?;
            let matched = produced
                .into_iter()
                .filter(|candidate| filter.matches(candidate))
                .collect();
            return run_stages(&pipeline.stages[1..], matched, reader);
        }
        let equality = Pipeline {
            stages: vec![Stage::Match(filter)],
        };
        let matched = reader.run_over(self.from.as_deref(), &equality, self.depth)?;
        reader.charge(matched.len())?;
        run_stages(&pipeline.stages, matched, reader)
    }

    /// The sub-pipeline with the `let` variables bound to their values for `document`.
    fn bind(&self, document: &Document, reader: &mut Reader<'_>) -> StoreResult<Pipeline> {
        reader.charge(self.bind_cost)?;
        let values = self
            .lets
            .iter()
            .map(|(name, expr)| Ok((name.clone(), expr.evaluate(document)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        let bound = LetVars::bound(values).pipeline(&self.raw)?;
        let context = ParseContext::at(reader.db(), self.depth);
        Ok(Pipeline::parse_in(&bound, context)?.with_collation(reader.collation()))
    }

    /// `document` with the matches in its `as` field.
    ///
    /// # Errors
    /// Location4568 past [`MAX_MATCHES_BYTES`].
    fn joined(
        &self,
        document: Arc<Document>,
        matches: Vec<Arc<Document>>,
    ) -> StoreResult<Document> {
        let mut total = 0usize;
        let mut array = Vec::with_capacity(matches.len());
        for matched in matches {
            total = total.saturating_add(document_size(&matched));
            if total > MAX_MATCHES_BYTES {
                return Err(CommandError::new(
                    code::LOOKUP_MATCHES_TOO_LARGE,
                    format!(
                        "Total size of documents in {} matching pipeline's $lookup stage \
                         exceeds {MAX_MATCHES_BYTES} bytes",
                        self.from.as_deref().unwrap_or_default()
                    ),
                ));
            }
            array.push(Bson::Document(Arc::unwrap_or_clone(matched)));
        }
        let mut output = Arc::unwrap_or_clone(document);
        set_path_creating(&mut output, &self.as_path, Bson::Array(array));
        Ok(output)
    }
}

impl Join {
    /// The filter a foreign document must pass to join with `document`, built as mongod
    /// builds it, and how many local values it holds.
    fn filter(
        &self,
        document: &Document,
        collation: Option<&Collation>,
    ) -> StoreResult<(Filter, usize)> {
        let mut values = Vec::new();
        values_at_path(document, &self.local, &mut values);
        let count = values.len();
        let foreign = self.foreign.as_str();
        let query = match values.len() {
            // Missing values (and an empty array) join with null.
            0 => doc! { foreign: { "$eq": Bson::Null } },
            1 => doc! { foreign: { "$eq": values.swap_remove(0) } },
            _ if values
                .iter()
                .any(|value| matches!(value, Bson::RegularExpression(_))) =>
            {
                let clauses: Vec<Bson> = values
                    .into_iter()
                    .map(|value| Bson::Document(doc! { foreign: { "$eq": value } }))
                    .collect();
                doc! { "$or": clauses }
            }
            _ => doc! { foreign: { "$in": values } },
        };
        Ok((Filter::parse(&query)?.with_collation(collation), count))
    }
}

/// `from`, checked first as mongod's lite parse does.
fn parse_from(spec: &Document, context: ParseContext<'_>) -> StoreResult<Option<String>> {
    match spec.get("from") {
        None => {
            let Some(pipeline) = spec.get("pipeline") else {
                return Err(CommandError::failed_to_parse(
                    "must specify 'pipeline' when 'from' is empty",
                ));
            };
            let starts_with_documents = match pipeline {
                Bson::Array(stages) => stages
                    .first()
                    .and_then(Bson::as_document)
                    .is_some_and(|first| first.contains_key("$documents")),
                _ => false,
            };
            if !starts_with_documents {
                return Err(CommandError::failed_to_parse(
                    "$lookup stage without explicit collection must have a pipeline with \
                     $documents as first stage",
                ));
            }
            Ok(None)
        }
        Some(Bson::String(name)) if name.is_empty() => Err(CommandError::new(
            code::INVALID_NAMESPACE,
            format!("invalid $lookup namespace: {}.", context.db),
        )),
        Some(Bson::String(name)) => Ok(Some(name.clone())),
        Some(Bson::Document(target)) => Err(CommandError::failed_to_parse(format!(
            "$lookup with syntax {{from: {{db:<>, coll:<>}},..}} is not supported for db: {} \
             and coll: {}",
            target.get_str("db").unwrap_or_default(),
            target.get_str("coll").unwrap_or_default()
        ))),
        Some(other) => Err(CommandError::failed_to_parse(format!(
            "$lookup 'from' field must be a string, but found {}",
            type_name(other)
        ))),
    }
}

impl Arguments {
    /// Reads the arguments in order, refusing those of the wrong type and unknown ones.
    fn read(spec: &Document, from: Option<String>) -> StoreResult<Arguments> {
        let mut arguments = Arguments {
            from,
            ..Arguments::default()
        };
        for (name, value) in spec {
            match (name.as_str(), value) {
                ("pipeline", Bson::Array(_)) => arguments.pipeline = Some(value.clone()),
                ("pipeline", _) => {
                    return Err(CommandError::type_mismatch(
                        "'pipeline' option must be specified as an array",
                    ));
                }
                ("let", Bson::Document(lets)) => arguments.lets = Some(lets.clone()),
                ("let", other) => {
                    return Err(CommandError::failed_to_parse(format!(
                        "$lookup argument 'let: {}' must be an object, is type {}",
                        format_value(other),
                        type_name(other)
                    )));
                }
                ("from", _) => {}
                ("_internalCollation", _) => {
                    return Err(CommandError::failed_to_parse(
                        "blackpipe does not support $lookup's internal '_internalCollation'",
                    ));
                }
                ("as" | "localField" | "foreignField", Bson::String(text)) => {
                    let slot = match name.as_str() {
                        "as" => &mut arguments.as_field,
                        "localField" => &mut arguments.local,
                        _ => &mut arguments.foreign,
                    };
                    *slot = Some(text.clone()).filter(|text| !text.is_empty());
                }
                ("as" | "localField" | "foreignField", other) => {
                    return Err(CommandError::failed_to_parse(format!(
                        "$lookup argument '{name}' must be a string, found {name}: {}: {}",
                        format_value(other),
                        type_name(other)
                    )));
                }
                _ => {
                    return Err(CommandError::failed_to_parse(format!(
                        "unknown argument to $lookup: {name}"
                    )));
                }
            }
        }
        Ok(arguments)
    }

    /// The checks between the arguments.
    fn check_form(&self) -> StoreResult<()> {
        if self.as_field.is_none() {
            return Err(CommandError::failed_to_parse(
                "must specify 'as' field for a $lookup",
            ));
        }
        let fields = (self.local.is_some(), self.foreign.is_some());
        if self.pipeline.is_some() {
            if fields.0 != fields.1 {
                return Err(CommandError::failed_to_parse(
                    "$lookup requires both or neither of 'localField' and 'foreignField' to be \
                     specified",
                ));
            }
            return Ok(());
        }
        if fields != (true, true) {
            return Err(CommandError::failed_to_parse(
                "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to \
                 be specified",
            ));
        }
        if self.lets.is_some() {
            return Err(CommandError::failed_to_parse(
                "$lookup with a 'let' argument must also specify 'pipeline'",
            ));
        }
        Ok(())
    }
}

/// The `let` variables: names a user may bind, values parsed as expressions.
fn parse_lets(lets: Option<&Document>) -> StoreResult<Vec<(String, Expr)>> {
    let Some(lets) = lets else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(lets.len());
    for (name, value) in lets {
        check_name_for_write(name)?;
        if name == "CURRENT" {
            // mongod would rebind `$$CURRENT` (and so every field path) in the sub-pipeline;
            // blackpipe binds variables by substitution, which cannot reach field paths.
            return Err(CommandError::failed_to_parse(
                "blackpipe does not support binding 'CURRENT' in a $lookup's let",
            ));
        }
        out.push((name.clone(), Expr::parse(value)?));
    }
    Ok(out)
}

/// Parses the sub-pipeline with every `let` variable bound to null, so that its errors
/// (an undefined variable, a malformed stage) surface at parse time as in mongod.
fn parse_with_placeholders(
    value: &Bson,
    lets: &[(String, Expr)],
    context: ParseContext<'_>,
) -> StoreResult<(Vec<Bson>, Pipeline)> {
    let Bson::Array(raw) = value else {
        return parse_sub_pipeline(value, Parent::Lookup, context);
    };
    let placeholders = lets
        .iter()
        .map(|(name, _)| (name.clone(), Some(Bson::Null)))
        .collect();
    let bound = LetVars::bound(placeholders).pipeline(raw)?;
    let (_, pipeline) =
        parse_sub_pipeline(&Bson::Array(bound.into_owned()), Parent::Lookup, context)?;
    Ok((raw.clone(), pipeline))
}
