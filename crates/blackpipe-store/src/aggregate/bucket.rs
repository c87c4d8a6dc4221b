//! `$bucket`: documents grouped into the ranges `[boundaries[i], boundaries[i + 1])` of their
//! `groupBy` value (or into the `default` bucket), each bucket's `output` accumulated with the
//! `$group` accumulators, buckets sorted by `_id` (their lower boundary or the default).
//!
//! mongod rewrites the stage into a `$group` on a `$switch` followed by a `$sort`; blackpipe
//! finds the bucket by binary search (the boundaries are sorted) and runs the same accumulators
//! (`GroupSpec`) over each bucket, with mongod's parse errors and its run-time error for a value
//! in no bucket.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use super::OutputBudget;
use super::group::GroupSpec;
use super::single::constant_value;
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::expr::Expr;
use crate::value_order::{canonical_rank, compare_values};

/// A parsed `$bucket`.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    group_by: Expr,
    boundaries: Vec<Bson>,
    default: Option<Bson>,
    output: GroupSpec,
    collation: Option<Collation>,
}

/// The arguments of a `$bucket`, as read in mongod's order.
#[derive(Default)]
struct Arguments<'a> {
    group_by: Option<&'a Bson>,
    boundaries: Vec<Bson>,
    default: Option<Bson>,
    output: Option<&'a Document>,
}

impl Bucket {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<Bucket> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::new(
                code::BUCKET_NOT_OBJECT,
                format!(
                    "Argument to $bucket stage must be an object, but found type: {}.",
                    type_name(spec)
                ),
            ));
        };
        let mut arguments = Arguments::default();
        for (name, value) in spec {
            match name.as_str() {
                "groupBy" => arguments.group_by = Some(check_group_by(value)?),
                "boundaries" => arguments.boundaries = parse_boundaries(value)?,
                "default" => {
                    arguments.default = Some(constant_value(value)?.ok_or_else(|| {
                        CommandError::new(
                            code::BUCKET_DEFAULT_NOT_CONSTANT,
                            format!(
                                "The $bucket 'default' field must be a constant expression, but found: {}.",
                                format_value(value)
                            ),
                        )
                    })?);
                }
                "output" => match value {
                    Bson::Document(output) => arguments.output = Some(output),
                    other => {
                        return Err(CommandError::new(
                            code::BUCKET_OUTPUT_NOT_OBJECT,
                            format!(
                                "The $bucket 'output' field must be an object, but found type: {}.",
                                type_name(other)
                            ),
                        ));
                    }
                },
                other => {
                    return Err(CommandError::new(
                        code::BUCKET_UNKNOWN_OPTION,
                        format!("Unrecognized option to $bucket: {other}."),
                    ));
                }
            }
        }
        let group_by = match arguments.group_by {
            Some(group_by) if !arguments.boundaries.is_empty() => group_by,
            _ => {
                return Err(CommandError::new(
                    code::BUCKET_MISSING_ARGUMENT,
                    "$bucket requires 'groupBy' and 'boundaries' to be specified.",
                ));
            }
        };
        check_default(arguments.default.as_ref(), &arguments.boundaries)?;
        Ok(Bucket {
            group_by: Expr::parse(group_by)?,
            boundaries: arguments.boundaries,
            default: arguments.default,
            output: parse_output(arguments.output)?,
            collation: None,
        })
    }

    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> Bucket {
        self.collation = collation.cloned();
        self
    }

    fn compare(&self, left: &Bson, right: &Bson) -> Ordering {
        match &self.collation {
            Some(collation) => compare_values(&collation.fold(left), &collation.fold(right)),
            None => compare_values(left, right),
        }
    }

    /// The index of the bucket `value` falls in; the default bucket is the last index.
    fn bucket_of(&self, value: &Bson) -> StoreResult<usize> {
        // The number of boundaries not above the value: the value is in bucket `below - 1`
        // when that is a bucket (it is under the last boundary).
        let below = self
            .boundaries
            .partition_point(|boundary| self.compare(boundary, value) != Ordering::Greater);
        if below > 0 && below < self.boundaries.len() {
            return Ok(below - 1);
        }
        if self.default.is_some() {
            return Ok(self.boundaries.len() - 1);
        }
        Err(CommandError::new(
            code::BUCKET_NO_MATCH,
            "$switch could not find a matching branch for an input, and no default was specified.",
        ))
    }

    pub(super) fn run(
        &self,
        documents: Vec<Arc<Document>>,
        budget: &mut OutputBudget,
    ) -> StoreResult<Vec<Arc<Document>>> {
        let mut members: Vec<Vec<Arc<Document>>> = vec![Vec::new(); self.boundaries.len()];
        for document in documents {
            // A missing value compares as mongod's comparison operators see it.
            let value = self
                .group_by
                .evaluate(&document)?
                .unwrap_or(Bson::Undefined);
            members[self.bucket_of(&value)?].push(document);
        }
        let last = self.boundaries.len() - 1;
        let mut buckets: Vec<(&Bson, Vec<Arc<Document>>)> = members
            .into_iter()
            .enumerate()
            .filter(|(_, members)| !members.is_empty())
            .filter_map(|(index, members)| {
                let id = if index == last {
                    self.default.as_ref()?
                } else {
                    &self.boundaries[index]
                };
                Some((id, members))
            })
            .collect();
        // The default sorts among the boundaries by its value, as mongod's `$sort` on `_id`.
        buckets.sort_by(|(left, _), (right, _)| self.compare(left, right));
        buckets
            .into_iter()
            .map(|(id, members)| {
                let mut out = Document::new();
                out.insert("_id", id.clone());
                out.extend(accumulate(&self.output, members)?);
                budget.admit(out)
            })
            .collect()
    }
}

/// mongod accepts a `$`-prefixed string or an object whose first field is `$`-prefixed.
fn check_group_by(value: &Bson) -> StoreResult<&Bson> {
    let accepted = match value {
        Bson::String(path) => path.starts_with('$'),
        Bson::Document(object) => object.keys().next().is_some_and(|key| key.starts_with('$')),
        _ => false,
    };
    if accepted {
        return Ok(value);
    }
    Err(CommandError::new(
        code::BUCKET_BAD_GROUP_BY,
        format!(
            "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: {}.",
            format_value(value)
        ),
    ))
}

fn parse_boundaries(value: &Bson) -> StoreResult<Vec<Bson>> {
    let Bson::Array(items) = value else {
        return Err(CommandError::new(
            code::BUCKET_BOUNDARIES_NOT_ARRAY,
            format!(
                "The $bucket 'boundaries' field must be an array, but found type: {}.",
                type_name(value)
            ),
        ));
    };
    let mut boundaries = Vec::with_capacity(items.len());
    for item in items {
        boundaries.push(constant_value(item)?.ok_or_else(|| {
            CommandError::new(
                code::BUCKET_BOUNDARY_NOT_CONSTANT,
                format!(
                    "The $bucket 'boundaries' field must be an array of constant values, but found value: {}.",
                    format_value(item)
                ),
            )
        })?);
    }
    if boundaries.len() < 2 {
        return Err(CommandError::new(
            code::BUCKET_TOO_FEW_BOUNDARIES,
            format!(
                "The $bucket 'boundaries' field must have at least 2 values, but found {} value(s).",
                boundaries.len()
            ),
        ));
    }
    for (position, pair) in boundaries.windows(2).enumerate() {
        let (lower, upper) = (&pair[0], &pair[1]);
        if canonical_rank(lower) != canonical_rank(upper) {
            return Err(CommandError::new(
                code::BUCKET_BOUNDARY_TYPES,
                format!(
                    "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types {} and {}.",
                    type_name(lower),
                    type_name(upper)
                ),
            ));
        }
        if compare_values(lower, upper) != Ordering::Less {
            return Err(CommandError::new(
                code::BUCKET_BOUNDARIES_UNSORTED,
                format!(
                    "The 'boundaries' option to $bucket must be sorted, but elements {} and {} are not in ascending order ({} is not less than {}).",
                    position,
                    position + 1,
                    format_value(lower),
                    format_value(upper)
                ),
            ));
        }
    }
    Ok(boundaries)
}

/// A default of the boundaries' type class must lie outside their range.
fn check_default(default: Option<&Bson>, boundaries: &[Bson]) -> StoreResult<()> {
    let (Some(default), Some(lowest), Some(highest)) =
        (default, boundaries.first(), boundaries.last())
    else {
        return Ok(());
    };
    if canonical_rank(default) != canonical_rank(lowest)
        || compare_values(default, lowest) == Ordering::Less
        || compare_values(default, highest) != Ordering::Less
    {
        return Ok(());
    }
    Err(CommandError::new(
        code::BUCKET_DEFAULT_IN_RANGE,
        "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.",
    ))
}

/// The accumulators of a `$bucket` or `$bucketAuto` `output` (a count without one), parsed as
/// the fields of a `$group`, whose parse errors mongod reports for them.
pub(super) fn parse_output(output: Option<&Document>) -> StoreResult<GroupSpec> {
    let mut group = Document::new();
    group.insert("_id", Bson::Null);
    match output {
        Some(output) => {
            for (name, value) in output {
                if name == "_id" {
                    // The bucket's `_id` is the stage's; mongod's `$group` sees a second one.
                    return Err(CommandError::new(
                        code::GROUP_ID_TWICE,
                        "a group's _id may only be specified once",
                    ));
                }
                group.insert(name.clone(), value.clone());
            }
        }
        None => {
            group.insert("count", bson::doc! { "$sum": 1 });
        }
    }
    GroupSpec::parse(&Bson::Document(group))
}

/// The accumulated fields of one bucket (the group's document without its `_id`).
pub(super) fn accumulate(output: &GroupSpec, members: Vec<Arc<Document>>) -> StoreResult<Document> {
    let mut grouped = output.run(members)?;
    let mut fields = grouped.pop().map(Arc::unwrap_or_clone).unwrap_or_default();
    fields.remove("_id");
    Ok(fields)
}
