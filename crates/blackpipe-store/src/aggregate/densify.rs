//! `$densify`: documents added so that the values of `field` (numbers, or dates with a `unit`)
//! form a sequence spaced by `step`, over the `bounds` "full" (the whole input's range),
//! "partition" (each partition's range) or `[lower, upper)`, per partition of
//! `partitionByFields`. This file parses the stage and does its arithmetic; `densify_run.rs`
//! runs it, following mongod's algorithm so that the documents generated are the same.
//!
//! Bounded as mongod bounds it: at most `internalQueryMaxAllowedDensifyDocs` (500,000)
//! generated documents (5897900), and the stage's output within blackpipe's per-stage bytes.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::OutputBudget;
use super::single::{missing_field, stage_not_object, string_array, unknown_field, wrong_type};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::Expr;
use crate::path::split_path;
use crate::sort::SortSpec;
use crate::value_order::Number;

/// mongod's `internalQueryMaxAllowedDensifyDocs`.
pub(super) const MAX_GENERATED_DOCUMENTS: usize = 500_000;

/// The time units of a date range, as mongod's `parseTimeUnit` knows them.
const UNITS: &[&str] = &[
    "millisecond",
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "quarter",
    "year",
];

/// A parsed `$densify`.
#[derive(Debug, Clone)]
pub(crate) struct Densify {
    pub(super) field: Vec<String>,
    /// `partitionByFields`, split into path parts.
    pub(super) partitions: Vec<Vec<String>>,
    pub(super) step: Step,
    pub(super) bounds: Bounds,
    /// The sort mongod puts before the stage: partitions (but for "full") then the field.
    pub(super) sort: SortSpec,
    pub(super) collation: Option<Collation>,
}

#[derive(Debug, Clone)]
pub(crate) enum Bounds {
    Full,
    Partition,
    /// `[lower, upper)`: two numbers of the step's type, or two dates.
    Explicit(Box<(Bson, Bson)>),
}

/// The step and its arithmetic: `$add`/`$subtract` for numbers, `$dateAdd` for dates.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(super) value: Bson,
    /// The unit of a date step.
    pub(super) unit: Option<String>,
    forward: Expr,
    backward: Expr,
}

impl Step {
    fn new(value: Bson, unit: Option<String>) -> StoreResult<Step> {
        let (forward, backward) = match &unit {
            Some(unit) => {
                let amount = crate::integer::integral(&value).unwrap_or(0);
                let call = |amount: i64| {
                    doc! { "$dateAdd": { "startDate": "$v", "unit": unit.as_str(), "amount": amount } }
                };
                (call(amount), call(amount.saturating_neg()))
            }
            None => (
                doc! { "$add": ["$v", { "$literal": value.clone() }] },
                doc! { "$subtract": ["$v", { "$literal": value.clone() }] },
            ),
        };
        Ok(Step {
            forward: Expr::parse(&Bson::Document(forward))?,
            backward: Expr::parse(&Bson::Document(backward))?,
            value,
            unit,
        })
    }

    /// `value` plus one step.
    pub(super) fn increment(&self, value: &Bson) -> StoreResult<Bson> {
        apply(&self.forward, value)
    }

    /// `value` minus one step.
    pub(super) fn decrement(&self, value: &Bson) -> StoreResult<Bson> {
        apply(&self.backward, value)
    }
}

/// Evaluates a one-variable expression (`$v`) at `value`.
pub(super) fn apply(expr: &Expr, value: &Bson) -> StoreResult<Bson> {
    Ok(expr
        .evaluate(&doc! { "v": value.clone() })?
        .unwrap_or(Bson::Null))
}

impl Densify {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<Densify> {
        let Bson::Document(spec) = spec else {
            return Err(stage_not_object("$densify", spec));
        };
        let (mut field, mut partitions, mut range) = (None, None, None);
        for (name, value) in spec {
            match name.as_str() {
                "field" => match value {
                    Bson::String(path) => field = Some(path.clone()),
                    other => return Err(wrong_type("$densify.field", other, "type 'string'")),
                },
                "partitionByFields" => {
                    partitions = Some(string_array("$densify.partitionByFields", value)?);
                }
                "range" => match value {
                    Bson::Document(range_spec) => range = Some(parse_range_fields(range_spec)?),
                    other => return Err(wrong_type("$densify.range", other, "type 'object'")),
                },
                other => return Err(unknown_field(&format!("$densify.{other}"))),
            }
        }
        let field = field.ok_or_else(|| missing_field("$densify.field"))?;
        let (step, unit, bounds) = range.ok_or_else(|| missing_field("$densify.range"))?;
        let (step, bounds) = check_range(step, unit, bounds)?;
        let partitions = partitions.unwrap_or_default();
        for partition in &partitions {
            check_field_path(partition)?;
        }
        check_field_path(&field)?;
        if matches!(bounds, Bounds::Partition) && partitions.is_empty() {
            return Err(CommandError::new(
                code::DENSIFY_PARTITION_WITHOUT_FIELDS,
                "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.",
            ));
        }
        let mut sort = Document::new();
        if !matches!(bounds, Bounds::Full) {
            for partition in &partitions {
                sort.insert(partition.clone(), 1);
            }
        }
        sort.insert(field.clone(), 1);
        Ok(Densify {
            field: split_path(&field),
            partitions: partitions.iter().map(|path| split_path(path)).collect(),
            step,
            bounds,
            sort: SortSpec::parse(&sort)?,
            collation: None,
        })
    }

    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> Densify {
        self.sort = self.sort.with_collation(collation);
        self.collation = collation.cloned();
        self
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let sorted = self
            .sort
            .sort(documents, |document| Some(document.as_ref()));
        super::densify_run::run(self, sorted, budget)
    }
}

/// The fields of `range` as mongod's IDL reads them: `step` (a number), `unit` (a string),
/// `bounds` (anything), all but `unit` required.
fn parse_range_fields(range: &Document) -> StoreResult<(Bson, Option<String>, Bson)> {
    let (mut step, mut unit, mut bounds) = (None, None, None);
    for (name, value) in range {
        match name.as_str() {
            "step" if Number::of(value).is_some() => step = Some(value.clone()),
            "step" => {
                return Err(wrong_type(
                    "$densify.range.step",
                    value,
                    "types '[long, int, decimal, double]'",
                ));
            }
            "unit" => match value {
                Bson::String(text) => unit = Some(text.clone()),
                other => return Err(wrong_type("$densify.range.unit", other, "type 'string'")),
            },
            "bounds" => bounds = Some(value.clone()),
            other => return Err(unknown_field(&format!("$densify.range.{other}"))),
        }
    }
    let step = step.ok_or_else(|| missing_field("$densify.range.step"))?;
    let bounds = bounds.ok_or_else(|| missing_field("$densify.range.bounds"))?;
    Ok((step, unit, bounds))
}

/// mongod's `RangeStatement::parse`: the step, the unit and the bounds checked together.
fn check_range(step: Bson, unit: Option<String>, bounds: Bson) -> StoreResult<(Step, Bounds)> {
    let positive = Number::of(&step)
        .is_some_and(|number| number.compare(Number::Int(0)) == std::cmp::Ordering::Greater);
    if !positive {
        return Err(CommandError::new(
            code::DENSIFY_BAD_STEP,
            "The step parameter in a range statement must be a strictly positive numeric value",
        ));
    }
    if let Some(unit) = &unit {
        if crate::integer::integral(&step).is_none() {
            return Err(CommandError::new(
                code::DENSIFY_DATE_STEP_NOT_WHOLE,
                "The step parameter in a range statement must be a whole number when densifying a date range",
            ));
        }
        if !UNITS.contains(&unit.as_str()) {
            return Err(CommandError::failed_to_parse(format!(
                "unknown time unit value: {unit}"
            )));
        }
    }
    let bounds = match &bounds {
        Bson::Array(items) => check_explicit_bounds(items, &step, unit.is_some())?,
        Bson::String(text) if text == "full" => Bounds::Full,
        Bson::String(text) if text == "partition" => Bounds::Partition,
        Bson::String(_) => {
            return Err(CommandError::new(
                code::DENSIFY_BOUNDS_BAD_STRING,
                "Bounds string must either be 'full' or 'partition'",
            ));
        }
        _ => {
            return Err(CommandError::new(
                code::DENSIFY_BOUNDS_NOT_RANGE,
                "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates",
            ));
        }
    };
    Ok((Step::new(step, unit)?, bounds))
}

fn check_explicit_bounds(items: &[Bson], step: &Bson, has_unit: bool) -> StoreResult<Bounds> {
    let [lower, upper] = items else {
        return Err(CommandError::new(
            code::DENSIFY_BOUNDS_SIZE,
            "A bounding array in a range statement must have exactly two elements",
        ));
    };
    if crate::value_order::compare_values(lower, upper) == std::cmp::Ordering::Greater {
        return Err(CommandError::new(
            code::DENSIFY_BOUNDS_DESCENDING,
            "A bounding array must be an ascending array of either two dates or two numbers",
        ));
    }
    let error = |code, message: &str| Err(CommandError::new(code, message));
    if Number::of(lower).is_some() {
        if has_unit {
            return error(
                code::DENSIFY_NUMERIC_WITH_UNIT,
                "Numeric bounds may not have unit parameter",
            );
        }
        if Number::of(upper).is_none() {
            return error(
                code::DENSIFY_BOUNDS_NOT_NUMBERS,
                "A bounding array must contain either both dates or both numeric types",
            );
        }
        if type_name(lower) != type_name(upper) || type_name(lower) != type_name(step) {
            return error(
                code::DENSIFY_BOUNDS_TYPES,
                "Upper bound, lower bound, and step must all have the same type",
            );
        }
    } else if matches!(lower, Bson::DateTime(_)) {
        if !matches!(upper, Bson::DateTime(_)) {
            return error(
                code::DENSIFY_BOUNDS_NOT_DATES,
                "A bounding array must contain either both dates or both numeric types",
            );
        }
        if !has_unit {
            return error(
                code::DENSIFY_DATES_WITHOUT_UNIT,
                "A bounding array of dates must specify a unit",
            );
        }
    } else {
        return error(
            code::DENSIFY_BOUNDS_BAD_TYPE,
            "Explicit bounds must be numeric or dates",
        );
    }
    Ok(Bounds::Explicit(Box::new((lower.clone(), upper.clone()))))
}

/// mongod's `FieldPath` checks on a path it reads.
pub(super) fn check_field_path(path: &str) -> StoreResult<()> {
    if path.is_empty() {
        return Err(CommandError::new(
            code::EMPTY_FIELD_PATH,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    for part in path.split('.') {
        if part.is_empty() {
            return Err(CommandError::new(
                code::FIELD_PATH_EMPTY_COMPONENT,
                "FieldPath field names may not be empty strings.",
            ));
        }
        if part.starts_with('$') {
            return Err(CommandError::new(
                code::FIELD_PATH_DOLLAR_PREFIXED,
                "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
            ));
        }
    }
    Ok(())
}
