//! `$fill`: null and missing values of `output` fields filled, with a value expression
//! (`{value: <expr>}`), the last non-null value before (`{method: "locf"}`) or a linear
//! interpolation between the surrounding non-null values along the one `sortBy` field
//! (`{method: "linear"}`), per partition (`partitionBy` or `partitionByFields`).
//!
//! mongod rewrites the stage into a `$setWindowFields` (`$locf`, `$linearFill`) sorted by
//! partition then `sortBy`, followed by an `$addFields` of `$ifNull`s; blackpipe runs the same
//! steps, with the window functions' errors.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use super::OutputBudget;
use super::single::{
    arith, missing_field, stage_not_object, string_array, unknown_field, wrong_type,
};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::{Expr, Operator};
use crate::path::{set_path_creating, split_path};
use crate::sort::SortSpec;
use crate::value_order::{Number, compare_values};

/// A parsed `$fill`.
#[derive(Debug, Clone)]
pub(crate) struct Fill {
    sort: Option<SortSpec>,
    /// The one `sortBy` field, which `linear` interpolates along.
    sort_field: Option<Expr>,
    partition: Option<Expr>,
    methods: Vec<(Vec<String>, Expr, Method)>,
    values: Vec<(Vec<String>, Expr, Expr)>,
    collation: Option<Collation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Locf,
    Linear,
}

impl Fill {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<Fill> {
        let Bson::Document(spec) = spec else {
            return Err(stage_not_object("$fill", spec));
        };
        let (mut sort_by, mut fields, mut partition_by, mut output) = (None, None, None, None);
        for (name, value) in spec {
            match name.as_str() {
                "sortBy" => match value {
                    Bson::Document(sort) => sort_by = Some(sort),
                    other => return Err(wrong_type("$fill.sortBy", other, "type 'object'")),
                },
                "partitionByFields" => {
                    fields = Some(string_array("$fill.partitionByFields", value)?);
                }
                "partitionBy" => match value {
                    Bson::Document(_) | Bson::String(_) => partition_by = Some(value),
                    other => {
                        return Err(wrong_type(
                            "$fill.partitionBy",
                            other,
                            "types '[object, string]'",
                        ));
                    }
                },
                "output" => match value {
                    Bson::Document(fields) => output = Some(fields),
                    other => return Err(wrong_type("$fill.output", other, "type 'object'")),
                },
                other => return Err(unknown_field(&format!("$fill.{other}"))),
            }
        }
        let output = output.ok_or_else(|| missing_field("$fill.output"))?;
        let (methods, values) = parse_output(output)?;
        if partition_by.is_some() && fields.is_some() {
            return Err(CommandError::new(
                code::FILL_TWO_PARTITIONS,
                "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'",
            ));
        }
        let partition = match (partition_by, fields) {
            (Some(expression), _) => Some(Expr::parse(expression)?),
            (None, Some(fields)) => {
                let mut object = Document::new();
                for field in fields {
                    object.insert(field.clone(), format!("${field}"));
                }
                Some(Expr::parse(&Bson::Document(object))?)
            }
            (None, None) => None,
        };
        let sort = sort_by.map(SortSpec::parse).transpose()?;
        let linear = methods
            .iter()
            .any(|(_, _, method)| *method == Method::Linear);
        let single_key = sort_by.filter(|sort| sort.len() == 1);
        if linear && single_key.is_none() {
            return Err(CommandError::new(
                code::FILL_LINEAR_SORT_BY,
                "$linearFill must be specified with a top level sortBy expression with exactly one element",
            ));
        }
        let sort_field = match single_key.and_then(|sort| sort.keys().next()) {
            Some(key) => Some(Expr::parse(&Bson::String(format!("${key}")))?),
            None => None,
        };
        Ok(Fill {
            sort,
            sort_field,
            partition,
            methods,
            values,
            collation: None,
        })
    }

    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> Fill {
        self.sort = self.sort.map(|sort| sort.with_collation(collation));
        self.collation = collation.cloned();
        self
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let documents = if self.methods.is_empty() {
            documents
        } else {
            self.fill_methods(documents)?
        };
        if self.values.is_empty() && self.methods.is_empty() {
            return Ok(documents);
        }
        documents
            .into_iter()
            .map(|document| budget.admit(self.fill_values(Arc::unwrap_or_clone(document))?))
            .collect()
    }

    /// The window part: documents sorted by partition then `sortBy`, each partition's
    /// `locf` and `linear` fields filled.
    fn fill_methods(&self, documents: Vec<Arc<Document>>) -> StoreResult<Vec<Arc<Document>>> {
        let mut keyed = Vec::with_capacity(documents.len());
        for document in documents {
            let key = self.partition_of(&document)?;
            keyed.push((key, Arc::unwrap_or_clone(document)));
        }
        if let Some(sort) = &self.sort {
            keyed = sort.sort(keyed, |(_, document)| Some(document));
        }
        if self.partition.is_some() {
            keyed.sort_by(|(left, _), (right, _)| self.compare(left, right));
        }
        let mut out = Vec::with_capacity(keyed.len());
        let mut start = 0;
        while start < keyed.len() {
            let end = start
                + keyed[start..]
                    .iter()
                    .take_while(|(key, _)| self.compare(key, &keyed[start].0) == Ordering::Equal)
                    .count();
            let mut partition: Vec<Document> = keyed[start..end]
                .iter()
                .map(|(_, document)| document.clone())
                .collect();
            for (path, input, method) in &self.methods {
                match method {
                    Method::Locf => locf(&mut partition, path, input)?,
                    Method::Linear => self.linear(&mut partition, path, input)?,
                }
            }
            out.extend(partition.into_iter().map(Arc::new));
            start = end;
        }
        Ok(out)
    }

    fn compare(&self, left: &Bson, right: &Bson) -> Ordering {
        match &self.collation {
            Some(collation) => compare_values(&collation.fold(left), &collation.fold(right)),
            None => compare_values(left, right),
        }
    }

    /// The document's partition: missing is null; an array is refused, as mongod refuses it.
    fn partition_of(&self, document: &Document) -> StoreResult<Bson> {
        let Some(partition) = &self.partition else {
            return Ok(Bson::Null);
        };
        match partition.evaluate(document)? {
            Some(Bson::Array(_)) => Err(CommandError::new(
                code::FILL_PARTITION_ARRAY,
                "An expression used to partition cannot evaluate to value of type array",
            )),
            Some(value) => Ok(value),
            None => Ok(Bson::Null),
        }
    }

    /// `$linearFill` over one partition, in order.
    fn linear(&self, partition: &mut [Document], path: &[String], input: &Expr) -> StoreResult<()> {
        let Some(sort_field) = &self.sort_field else {
            return Ok(());
        };
        let mut points = Vec::with_capacity(partition.len());
        for document in partition.iter() {
            let y = input.evaluate(document)?.filter(|value| !is_nullish(value));
            let x = sort_field.evaluate(document)?;
            points.push((x, y));
        }
        // The next known point after each document, found in one pass from the end (mongod
        // caches it the same way), so a long run of nulls costs linear work.
        let mut next_known = vec![None; points.len()];
        let mut known: Option<(Bson, Bson)> = None;
        for (position, (x, y)) in points.iter().enumerate().rev() {
            next_known[position] = known.clone();
            if let (Some(x), Some(y)) = (x, y) {
                if !is_nullish(x) {
                    known = Some((x.clone(), y.clone()));
                }
            }
        }
        let mut last_x: Option<&Bson> = None;
        let mut previous: Option<(Bson, Bson)> = None;
        let mut filled = Vec::with_capacity(points.len());
        for ((x, y), next) in points.iter().zip(next_known) {
            check_linear_point(x.as_ref(), y.as_ref(), last_x)?;
            last_x = x.as_ref();
            let x = x.clone().unwrap_or(Bson::Null);
            if let Some(y) = y {
                previous = Some((x, y.clone()));
                filled.push(y.clone());
                continue;
            }
            filled.push(match (&previous, next) {
                (Some((x1, y1)), Some((x2, y2))) => interpolate(x1, y1, &x2, &y2, &x)?,
                _ => Bson::Null,
            });
        }
        for (document, value) in partition.iter_mut().zip(filled) {
            set_path_creating(document, path, value);
        }
        Ok(())
    }

    /// The `value` fields: each null or missing one set to its expression's value (all read
    /// from the document as it was before, as `$addFields` does).
    fn fill_values(&self, document: Document) -> StoreResult<Document> {
        let mut out = document.clone();
        for (path, current, value) in &self.values {
            if current
                .evaluate(&document)?
                .is_some_and(|value| !is_nullish(&value))
            {
                continue;
            }
            match value.evaluate(&document)? {
                Some(value) => set_path_creating(&mut out, path, value),
                None => remove_path(&mut out, path),
            }
        }
        Ok(out)
    }
}

type Outputs = (
    Vec<(Vec<String>, Expr, Method)>,
    Vec<(Vec<String>, Expr, Expr)>,
);

/// The `output` fields, split into the window methods and the value expressions.
fn parse_output(output: &Document) -> StoreResult<Outputs> {
    if output.is_empty() {
        return Err(CommandError::new(
            code::FILL_OUTPUT_EMPTY,
            "The output field in '$fill' must contain an object with at least one element",
        ));
    }
    let (mut methods, mut values) = (Vec::new(), Vec::new());
    for (field, spec) in output {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::new(
                code::FILL_OUTPUT_NOT_OBJECT,
                "Each fill output specification must be an object with exactly one field",
            ));
        };
        let (mut method, mut value) = (None, None);
        for (name, argument) in spec {
            match name.as_str() {
                "method" => match argument {
                    Bson::String(text) => method = Some(text.as_str()),
                    other => return Err(wrong_type("$fill.method", other, "type 'string'")),
                },
                "value" => value = Some(argument),
                other => return Err(unknown_field(&format!("$fill.{other}"))),
            }
        }
        let input = Expr::parse(&Bson::String(format!("${field}")))?;
        match (method, value) {
            (Some(_), Some(_)) => {
                return Err(CommandError::new(
                    code::FILL_METHOD_AND_VALUE,
                    "Each fill output specification must have exactly one of 'method' or 'value' fields, not both",
                ));
            }
            (Some(method), None) => {
                let method = match method {
                    "locf" => Method::Locf,
                    "linear" => Method::Linear,
                    _ => {
                        return Err(CommandError::new(
                            code::FILL_BAD_METHOD,
                            "Method must be either locf or linear",
                        ));
                    }
                };
                methods.push((split_path(field), input, method));
            }
            (None, Some(value)) => values.push((split_path(field), input, Expr::parse(value)?)),
            (None, None) => {}
        }
    }
    Ok((methods, values))
}

/// `$locf` over one partition: the last non-null value so far (null before any).
fn locf(partition: &mut [Document], path: &[String], input: &Expr) -> StoreResult<()> {
    let mut last = Bson::Null;
    for document in partition.iter_mut() {
        if let Some(value) = input.evaluate(document)?.filter(|value| !is_nullish(value)) {
            last = value;
        }
        set_path_creating(document, path, last.clone());
    }
    Ok(())
}

/// `$linearFill`'s checks on one document: a numeric (or nullish) value, a numeric or date
/// sort value, not repeated, of the same kind as the previous one.
fn check_linear_point(
    x: Option<&Bson>,
    y: Option<&Bson>,
    last_x: Option<&Bson>,
) -> StoreResult<()> {
    if let Some(y) = y.filter(|y| Number::of(y).is_none()) {
        return Err(CommandError::type_mismatch(format!(
            "Value to be filled must be numeric or nullish, but found {}",
            type_name(y)
        )));
    }
    let x_kind = x.and_then(kind);
    if x_kind.is_none() {
        return Err(CommandError::type_mismatch(format!(
            "Value of the sortBy field must be numeric or a date, but found {}",
            x.map_or("missing", type_name)
        )));
    }
    let Some(last) = last_x else {
        return Ok(());
    };
    if x.is_some_and(|x| compare_values(x, last) == Ordering::Equal) {
        return Err(CommandError::new(
            code::FILL_LINEAR_REPEATED_SORT_VALUE,
            "There can be no repeated values in the sort field in the same partition",
        ));
    }
    if kind(last) != x_kind {
        return Err(CommandError::type_mismatch(format!(
            "Conflicting sort value types, previously received type {}, but found {}",
            type_name(last),
            x.map_or("missing", type_name)
        )));
    }
    Ok(())
}

/// Whether a sort value is a number (`Some(false)`) or a date (`Some(true)`).
fn kind(value: &Bson) -> Option<bool> {
    match value {
        Bson::DateTime(_) => Some(true),
        other if Number::of(other).is_some() => Some(false),
        _ => None,
    }
}

/// `y1 + (x - x1) * ((y2 - y1) / (x2 - x1))`, with the expressions' arithmetic.
fn interpolate(x1: &Bson, y1: &Bson, x2: &Bson, y2: &Bson, x: &Bson) -> StoreResult<Bson> {
    let slope = arith(
        Operator::Divide,
        &arith(Operator::Subtract, y2, y1)?,
        &arith(Operator::Subtract, x2, x1)?,
    )?;
    let offset = arith(
        Operator::Multiply,
        &arith(Operator::Subtract, x, x1)?,
        &slope,
    )?;
    arith(Operator::Add, y1, &offset)
}

fn is_nullish(value: &Bson) -> bool {
    matches!(value, Bson::Null | Bson::Undefined)
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
