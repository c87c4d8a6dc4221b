//! `$bucketAuto`: documents sorted by their `groupBy` value and cut into at most `buckets`
//! buckets of about equal size, a value never split across two buckets, each bucket's `_id`
//! its `{min, max}` (max exclusive but for the last bucket) and its `output` accumulated with
//! the `$group` accumulators. With a `granularity`, boundaries are rounded to the preferred
//! number series (`granularity.rs`). Follows mongod's algorithm step by step so that bucket
//! boundaries are the same.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::OutputBudget;
use super::bucket::{accumulate, parse_output};
use super::granularity::Granularity;
use super::group::GroupSpec;
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::expr::Expr;
use crate::value_order::{Number, compare_values};

/// A parsed `$bucketAuto`.
#[derive(Debug, Clone)]
pub(crate) struct BucketAuto {
    group_by: Expr,
    buckets: usize,
    output: GroupSpec,
    granularity: Option<Granularity>,
    collation: Option<Collation>,
}

/// One input document with its sort key and input position.
struct Keyed {
    key: Bson,
    position: usize,
    document: Arc<Document>,
}

impl BucketAuto {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<BucketAuto> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::new(
                code::BUCKET_AUTO_NOT_OBJECT,
                format!(
                    "The argument to $bucketAuto must be an object, but found type: {}",
                    type_name(spec)
                ),
            ));
        };
        let (mut group_by, mut buckets, mut output, mut granularity) = (None, None, None, None);
        for (name, value) in spec {
            match name.as_str() {
                "groupBy" => group_by = Some(parse_group_by(value)?),
                "buckets" => buckets = Some(parse_buckets(value)?),
                "output" => match value {
                    Bson::Document(fields) => output = Some(parse_output(Some(fields))?),
                    other => {
                        return Err(CommandError::new(
                            code::BUCKET_AUTO_OUTPUT_NOT_OBJECT,
                            format!(
                                "The $bucketAuto 'output' field must be an object, but found type: {}",
                                type_name(other)
                            ),
                        ));
                    }
                },
                "granularity" => match value {
                    Bson::String(name) => granularity = Some(Granularity::parse(name)?),
                    other => {
                        return Err(CommandError::new(
                            code::BUCKET_AUTO_GRANULARITY_NOT_STRING,
                            format!(
                                "The $bucketAuto 'granularity' field must be a string, but found type: {}",
                                type_name(other)
                            ),
                        ));
                    }
                },
                other => {
                    return Err(CommandError::new(
                        code::BUCKET_AUTO_UNKNOWN_OPTION,
                        format!("Unrecognized option to $bucketAuto: {other}"),
                    ));
                }
            }
        }
        let (Some(group_by), Some(buckets)) = (group_by, buckets) else {
            return Err(CommandError::new(
                code::BUCKET_AUTO_MISSING_ARGUMENT,
                "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
            ));
        };
        if buckets <= 0 {
            return Err(CommandError::new(
                code::BUCKET_AUTO_BUCKETS_NOT_POSITIVE,
                format!(
                    "The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}"
                ),
            ));
        }
        Ok(BucketAuto {
            group_by,
            buckets: usize::try_from(buckets).unwrap_or(usize::MAX),
            output: match output {
                Some(output) => output,
                None => parse_output(None)?,
            },
            granularity,
            collation: None,
        })
    }

    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> BucketAuto {
        self.collation = collation.cloned();
        self
    }

    fn compare(&self, left: &Bson, right: &Bson) -> Ordering {
        match &self.collation {
            Some(collation) => compare_values(&collation.fold(left), &collation.fold(right)),
            None => compare_values(left, right),
        }
    }

    /// The document's bucketing key: missing is null, as in `$group`; with a granularity, a
    /// non-negative number.
    fn key(&self, document: &Document) -> StoreResult<Bson> {
        let key = self.group_by.evaluate(document)?;
        if self.granularity.is_some() {
            check_granular(key.as_ref())?;
        }
        Ok(key.unwrap_or(Bson::Null))
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let mut keyed = Vec::with_capacity(documents.len());
        for (position, document) in documents.into_iter().enumerate() {
            let key = self.key(&document)?;
            keyed.push(Keyed {
                key,
                position,
                document,
            });
        }
        // Stable: equal keys keep their input order.
        keyed.sort_by(|left, right| self.compare(&left.key, &right.key));
        let mut out = Vec::new();
        let mut start = 0;
        let mut previous_max = None;
        let approximate = approximate_size(keyed.len(), self.buckets);
        while start < keyed.len() && out.len() < self.buckets {
            let last_bucket = out.len() + 1 == self.buckets;
            let end = if last_bucket {
                keyed.len()
            } else {
                keyed.len().min(start + approximate)
            };
            let (end, min, max) = self.boundaries(&keyed, start, end, previous_max.take())?;
            previous_max = Some(max.clone());
            let mut members: Vec<&Keyed> = keyed[start..end].iter().collect();
            // Accumulators see a bucket's documents in input order, as mongod's positional
            // accumulators ($first, $push...) in $bucketAuto do.
            members.sort_by_key(|member| member.position);
            let members = members
                .into_iter()
                .map(|member| member.document.clone())
                .collect();
            let mut bucket = doc! { "_id": { "min": min, "max": max } };
            bucket.extend(accumulate(&self.output, members)?);
            out.push(budget.admit(bucket)?);
            start = end;
        }
        Ok(out)
    }

    /// The end of the bucket starting at `start` (first cut at `end`) once equal values (or,
    /// with a granularity, values under the rounded boundary) are absorbed, and its min and max.
    fn boundaries(
        &self,
        keyed: &[Keyed],
        start: usize,
        mut end: usize,
        previous_max: Option<Bson>,
    ) -> StoreResult<(usize, Bson, Bson)> {
        let mut max = keyed[end - 1].key.clone();
        let Some(granularity) = self.granularity else {
            while end < keyed.len() && self.compare(&max, &keyed[end].key) == Ordering::Equal {
                end += 1;
            }
            if let Some(next) = keyed.get(end) {
                max = next.key.clone();
            }
            return Ok((end, keyed[start].key.clone(), max));
        };
        let min = match previous_max {
            Some(previous) => previous,
            None => granularity.round_down(&keyed[start].key)?,
        };
        let boundary = granularity.round_up(&max)?;
        while let Some(next) = keyed.get(end) {
            let absorbed = self.compare(&boundary, &next.key) == Ordering::Greater
                || self.compare(&max, &next.key) == Ordering::Equal;
            if !absorbed {
                break;
            }
            max = next.key.clone();
            end += 1;
        }
        // A first bucket ending at zero takes the next value rounded down as its max, so that
        // it stays exclusive.
        let at_zero = Number::of(&boundary).is_some_and(|number| number.as_f64() == 0.0);
        let max = match keyed.get(end) {
            Some(next) if at_zero => granularity.round_down(&next.key)?,
            _ => boundary,
        };
        Ok((end, min, max))
    }
}

/// mongod's target bucket size: the document count over the bucket count, rounded half away
/// from zero, at least one.
fn approximate_size(documents: usize, buckets: usize) -> usize {
    if buckets == 0 {
        return documents.max(1);
    }
    let quotient = documents / buckets;
    let remainder = documents % buckets;
    // round(d / b) rounds up when the remainder is at least half of b.
    let rounded = if remainder * 2 >= buckets && remainder > 0 {
        quotient + 1
    } else {
        quotient
    };
    rounded.max(1)
}

fn parse_group_by(value: &Bson) -> StoreResult<Expr> {
    let accepted = match value {
        Bson::Document(object) => object.keys().next().is_some_and(|key| key.starts_with('$')),
        Bson::String(path) => path.len() > 1 && path.starts_with('$'),
        _ => false,
    };
    if !accepted {
        return Err(CommandError::new(
            code::BUCKET_AUTO_BAD_GROUP_BY,
            format!(
                "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: {}",
                format_value(value)
            ),
        ));
    }
    Expr::parse(value)
}

/// `buckets`: a number with a 32-bit integral value.
fn parse_buckets(value: &Bson) -> StoreResult<i64> {
    let Some(number) = Number::of(value) else {
        return Err(CommandError::new(
            code::BUCKET_AUTO_BUCKETS_NOT_NUMBER,
            format!(
                "The $bucketAuto 'buckets' field must be a numeric value, but found type: {}",
                type_name(value)
            ),
        ));
    };
    match crate::integer::integral(value).filter(|whole| i32::try_from(*whole).is_ok()) {
        Some(whole) => Ok(whole),
        None => Err(CommandError::new(
            code::BUCKET_AUTO_BUCKETS_NOT_INT,
            format!(
                "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found {}",
                format_double(number.as_f64())
            ),
        )),
    }
}

/// A double printed as mongod prints one in a message (no trailing `.0` for whole values).
fn format_double(value: f64) -> String {
    format_value(&Bson::Double(value))
}

/// With a granularity, the key must be a non-negative number.
fn check_granular(key: Option<&Bson>) -> StoreResult<()> {
    let Some(number) = key.and_then(Number::of) else {
        return Err(CommandError::new(
            code::BUCKET_AUTO_GRANULARITY_NOT_NUMBER,
            format!(
                "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: {}",
                key.map_or("missing", type_name)
            ),
        ));
    };
    let value = number.as_f64();
    if value.is_nan() {
        return Err(CommandError::new(
            code::BUCKET_AUTO_GRANULARITY_NAN,
            "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN",
        ));
    }
    if value < 0.0 {
        return Err(CommandError::new(
            code::BUCKET_AUTO_GRANULARITY_NEGATIVE,
            "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative number",
        ));
    }
    Ok(())
}
