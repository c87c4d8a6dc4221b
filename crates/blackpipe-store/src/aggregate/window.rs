//! The `$setWindowFields` stage: `{partitionBy, sortBy, output: {<path>: <window function>}}`.
//!
//! As mongod does, the documents are sorted by the partition key (missing counts as null) and
//! then `sortBy`, each run of equal partition keys is a partition, and every output field is
//! computed for every document over its frame. The output keeps that order.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use super::accumulator::{Accumulator, Item, constant_of};
use super::window_bounds::{self, Bounds};
use super::window_exec;
use super::window_funcs::{self, WindowFn};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::Expr;
use crate::path::{set_path_creating, split_path};
use crate::sort::SortSpec;
use crate::value_order::{compare_values, document_size, value_size};

/// mongod's `internalDocumentSourceSetWindowFieldsMaxMemoryBytes` (100 MiB).
const MAX_WINDOW_BYTES: usize = 100 * 1024 * 1024;

/// The most values window frames may feed to accumulators in one stage: blackpipe recomputes
/// a sliding frame where mongod removes values from it, so a wide sliding window over a large
/// partition is bounded here (ExceededTimeLimit) rather than left to run for hours.
const MAX_FRAME_WORK: u64 = 1 << 26;

/// The bytes of output values one stage may compute before they are turned into documents
/// (the stage output's own bound, `MAX_STAGE_OUTPUT_BYTES`).
const MAX_OUTPUT_VALUE_BYTES: usize = 256 * 1024 * 1024;

/// A parsed `$setWindowFields`.
#[derive(Debug, Clone)]
pub(crate) struct SetWindowFields {
    partition_by: Option<Expr>,
    sort_by: Option<SortSpec>,
    /// The `sortBy` field path, when `sortBy` has one field.
    sort_path: Option<Vec<String>>,
    outputs: Vec<(Vec<String>, WindowFn)>,
    collation: Option<Collation>,
    allow_disk_use: bool,
}

fn idl_type_error(field: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field '$setWindowFields.{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

impl SetWindowFields {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<SetWindowFields> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::failed_to_parse(format!(
                "the $setWindowFields stage specification must be an object, found {}",
                type_name(spec)
            )));
        };
        let (mut partition_by, mut sort_by, mut output) = (None, None, None);
        for (key, value) in spec {
            match key.as_str() {
                "partitionBy" => partition_by = Some(value),
                "sortBy" => match value {
                    Bson::Document(sort) => sort_by = Some(sort),
                    other => return Err(idl_type_error("sortBy", other, "object")),
                },
                "output" => match value {
                    Bson::Document(fields) => output = Some(fields),
                    other => return Err(idl_type_error("output", other, "object")),
                },
                _ => {
                    return Err(CommandError::new(
                        code::IDL_UNKNOWN_FIELD,
                        format!("BSON field '$setWindowFields.{key}' is an unknown field."),
                    ));
                }
            }
        }
        let output = output.ok_or_else(|| {
            CommandError::new(
                code::IDL_MISSING_FIELD,
                "BSON field '$setWindowFields.output' is missing but a required field",
            )
        })?;
        let partition_by = partition_by.map(parse_partition_by).transpose()?.flatten();
        let sort_by = sort_by.map(SortSpec::parse).transpose()?;
        let sort_path = sort_by.as_ref().and_then(|sort| match sort.keys() {
            [(path, _)] => Some(path.clone()),
            _ => None,
        });
        let outputs = parse_outputs(output, sort_by.as_ref())?;
        Ok(SetWindowFields {
            partition_by,
            sort_by,
            sort_path,
            outputs,
            collation: None,
            allow_disk_use: true,
        })
    }

    /// The stage sorting and partitioning strings under `collation`.
    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> SetWindowFields {
        self.collation = collation.cloned();
        self.sort_by = self.sort_by.map(|sort| sort.with_collation(collation));
        self
    }

    /// The stage under the command's `allowDiskUse`.
    pub(crate) fn with_allow_disk_use(mut self, allow: bool) -> SetWindowFields {
        self.allow_disk_use = allow;
        self
    }

    pub(crate) fn run(&self, input: Vec<Arc<Document>>) -> StoreResult<Vec<Arc<Document>>> {
        let ordered = self.sorted(input)?;
        let mut work = Budget::default();
        let mut out = Vec::with_capacity(ordered.len());
        let mut start = 0;
        while start < ordered.len() {
            let key = &ordered[start].0;
            let end = ordered[start..]
                .iter()
                .position(|(other, _)| compare_values(other, key) != Ordering::Equal)
                .map_or(ordered.len(), |offset| start + offset);
            let partition: Vec<Arc<Document>> = ordered[start..end]
                .iter()
                .map(|(_, document)| Arc::clone(document))
                .collect();
            out.extend(self.run_partition(partition, &mut work)?);
            start = end;
        }
        Ok(out)
    }

    /// The documents with their partition keys, in partition then `sortBy` order.
    fn sorted(&self, input: Vec<Arc<Document>>) -> StoreResult<Vec<(Bson, Arc<Document>)>> {
        let mut keyed = Vec::with_capacity(input.len());
        for document in input {
            let key = match &self.partition_by {
                None => Bson::Null,
                Some(expr) => match expr.evaluate(&document)? {
                    Some(Bson::Array(_)) => {
                        return Err(CommandError::type_mismatch(
                            "Cannot 'partitionBy' an expression of type array",
                        ));
                    }
                    Some(key) => match &self.collation {
                        Some(collation) => collation.fold(&key).into_owned(),
                        None => key,
                    },
                    None => Bson::Null,
                },
            };
            let sort_key = self
                .sort_by
                .as_ref()
                .map(|sort| sort.sort_key(&document))
                .unwrap_or_default();
            keyed.push((key, sort_key, document));
        }
        keyed.sort_by(|(a, a_sort, _), (b, b_sort, _)| {
            compare_values(a, b).then_with(|| match &self.sort_by {
                Some(sort) => sort.compare_keys(a_sort, b_sort),
                None => Ordering::Equal,
            })
        });
        Ok(keyed
            .into_iter()
            .map(|(key, _, document)| (key, document))
            .collect())
    }

    fn run_partition(
        &self,
        partition: Vec<Arc<Document>>,
        work: &mut Budget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        if !self.allow_disk_use {
            let held: usize = partition
                .iter()
                .map(|document| document_size(document))
                .sum();
            check_memory(held)?;
        }
        let sort_values = match &self.sort_path {
            Some(path) => partition
                .iter()
                .map(|document| Expr::Field(path.clone()).evaluate(document))
                .collect::<StoreResult<Vec<_>>>()?,
            None => vec![None; partition.len()],
        };
        let mut columns = Vec::with_capacity(self.outputs.len());
        for (_, function) in &self.outputs {
            columns.push(self.column(function, &partition, &sort_values, work)?);
        }
        let mut out = Vec::with_capacity(partition.len());
        for (position, document) in partition.into_iter().enumerate() {
            let mut document = Arc::unwrap_or_clone(document);
            for ((path, _), column) in self.outputs.iter().zip(columns.iter_mut()) {
                match column[position].take() {
                    Some(value) => set_path_creating(&mut document, path, value),
                    None => remove_path(&mut document, path),
                }
            }
            out.push(Arc::new(document));
        }
        Ok(out)
    }

    /// One output field's values over a partition (`None`: missing).
    fn column(
        &self,
        function: &WindowFn,
        partition: &[Arc<Document>],
        sort_values: &[Option<Bson>],
        work: &mut Budget,
    ) -> StoreResult<Vec<Option<Bson>>> {
        let values = match function {
            WindowFn::Accumulate(accumulator, bounds) => {
                let frames = window_bounds::frames(bounds, sort_values, partition.len())?;
                accumulate(accumulator, bounds, &frames, partition, work)?
            }
            WindowFn::Endpoint {
                last,
                input,
                bounds,
            } => {
                let frames = window_bounds::frames(bounds, sort_values, partition.len())?;
                window_exec::endpoints(*last, input, &frames, partition)?
            }
            WindowFn::Shift {
                output,
                by,
                default,
            } => window_exec::shift(output, *by, default, partition)?,
            WindowFn::Derivative {
                input,
                unit_ms,
                bounds,
            } => {
                let frames = window_bounds::frames(bounds, sort_values, partition.len())?;
                window_exec::derivative(input, *unit_ms, &frames, sort_values, partition)?
            }
            WindowFn::LinearFill(input) => window_exec::linear_fill(input, sort_values, partition)?,
        };
        work.output(&values)?;
        Ok(values)
    }
}

/// `partitionBy`: an expression; a constant one puts every document in one partition (an
/// array constant is refused as mongod refuses it).
fn parse_partition_by(value: &Bson) -> StoreResult<Option<Expr>> {
    let expr = Expr::parse(value)?;
    match constant_of(&expr) {
        Some(Bson::Array(_)) => Err(CommandError::type_mismatch(
            "An expression used to partition cannot evaluate to value of type array",
        )),
        Some(_) => Ok(None),
        None => Ok(Some(expr)),
    }
}

fn parse_outputs(
    output: &Document,
    sort_by: Option<&SortSpec>,
) -> StoreResult<Vec<(Vec<String>, WindowFn)>> {
    let mut outputs: Vec<(Vec<String>, WindowFn)> = Vec::with_capacity(output.len());
    for (name, value) in output {
        let path = split_path(name);
        if path.iter().any(String::is_empty) {
            return Err(CommandError::new(
                code::EMPTY_FIELD_PATH,
                "FieldPath cannot be constructed with empty string",
            ));
        }
        if path.iter().any(|part| part.starts_with('$')) {
            return Err(CommandError::new(
                code::FIELD_PATH_DOLLAR_PREFIXED,
                "FieldPath field names may not start with '$'. Consider using $getField or \
                 $setField.",
            ));
        }
        let conflicts = outputs.iter().any(|(other, _)| {
            let shared = other.len().min(path.len());
            other[..shared] == path[..shared]
        });
        if conflicts {
            return Err(CommandError::new(
                code::WINDOW_OUTPUT_CONFLICT,
                "$setWindowFields 'output' specification contains two conflicting paths",
            ));
        }
        let Bson::Document(spec) = value else {
            return Err(CommandError::failed_to_parse(format!(
                "The field '{name}' must be an object"
            )));
        };
        outputs.push((path, window_funcs::parse(spec, sort_by)?));
    }
    Ok(outputs)
}

fn check_memory(held: usize) -> StoreResult<()> {
    if held > MAX_WINDOW_BYTES {
        return Err(CommandError::new(
            code::WINDOW_MEMORY_LIMIT,
            format!(
                "Exceeded memory limit in DocumentSourceSetWindowFields, used {held} bytes but \
                 max allowed is {MAX_WINDOW_BYTES}"
            ),
        ));
    }
    Ok(())
}

/// The work and output a stage has spent.
#[derive(Debug, Default)]
struct Budget {
    fed: u64,
    output_bytes: usize,
}

impl Budget {
    fn feed(&mut self, count: usize) -> StoreResult<()> {
        self.fed = self
            .fed
            .saturating_add(u64::try_from(count).unwrap_or(u64::MAX));
        if self.fed > MAX_FRAME_WORK {
            return Err(CommandError::new(
                code::EXCEEDED_TIME_LIMIT,
                format!(
                    "$setWindowFields would feed more than {MAX_FRAME_WORK} values to its window \
                     functions; blackpipe recomputes sliding windows and stops there (mongod has \
                     no such limit)"
                ),
            ));
        }
        Ok(())
    }

    fn output(&mut self, values: &[Option<Bson>]) -> StoreResult<()> {
        let bytes: usize = values.iter().flatten().map(value_size).sum();
        self.output_bytes = self.output_bytes.saturating_add(bytes);
        if self.output_bytes > MAX_OUTPUT_VALUE_BYTES {
            return Err(CommandError::new(
                code::EXCEEDED_MEMORY_LIMIT,
                format!(
                    "$setWindowFields computed more than {MAX_OUTPUT_VALUE_BYTES} bytes of output \
                     values; blackpipe holds each stage's output in memory"
                ),
            ));
        }
        Ok(())
    }
}

/// An accumulator over each document's frame. A frame that only grows at its end (a running
/// window) extends the previous frame's state; any other is recomputed.
fn accumulate(
    accumulator: &Accumulator,
    bounds: &Bounds,
    frames: &[Option<(usize, usize)>],
    partition: &[Arc<Document>],
    work: &mut Budget,
) -> StoreResult<Vec<Option<Bson>>> {
    let empty = Document::new();
    let removable = bounds.removable();
    let items = partition
        .iter()
        .map(|document| accumulator.item(document))
        .collect::<StoreResult<Vec<Item>>>()?;
    let mut current: Option<(usize, usize, super::acc_state::State)> = None;
    let mut empty_value = None;
    let mut values = Vec::with_capacity(frames.len());
    for frame in frames {
        let Some((low, high)) = *frame else {
            if empty_value.is_none() {
                empty_value = Some(accumulator.start(&empty, removable)?.value());
            }
            values.push(empty_value.clone());
            continue;
        };
        let (from, mut state) = match current.take() {
            Some((previous_low, previous_high, state))
                if previous_low == low && previous_high <= high =>
            {
                (previous_high + 1, state)
            }
            _ => (low, accumulator.start(&empty, removable)?),
        };
        work.feed((high + 1).saturating_sub(from))?;
        for item in &items[from..=high] {
            state.add(item.clone())?;
        }
        if state.bytes() > MAX_WINDOW_BYTES {
            check_memory(state.bytes())?;
        }
        values.push(Some(state.value()));
        current = Some((low, high, state));
    }
    Ok(values)
}

/// Removes the field at `parts` (an output that evaluated to missing is not set).
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
