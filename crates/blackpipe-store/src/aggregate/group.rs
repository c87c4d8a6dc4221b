//! The `$group` stage and its accumulators.

use std::collections::HashMap;
use std::sync::Arc;

use bson::{Bson, Document};

use crate::arith::{ArithOp, apply_widening, decimal_operand, is_number};
use crate::code;
use crate::decimal::{self, DecimalOp};
use crate::errors::{CommandError, StoreResult, format_document};
use crate::expr::Expr;
use crate::key::encode_key;
use crate::value_order::{Number, compare_values, value_size, values_equal};

/// A parsed `$group` specification.
#[derive(Debug, Clone)]
pub(crate) struct GroupSpec {
    id: Expr,
    fields: Vec<(String, Accumulator, Expr)>,
    /// Group keys that compare equal under it are one group (the first key seen names it).
    collation: Option<crate::collation::Collation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accumulator {
    Sum,
    Avg,
    Min,
    Max,
    Push,
    AddToSet,
    First,
    Last,
    Count,
}

#[derive(Debug, Clone)]
enum State {
    Sum(Bson),
    /// `$avg`: a double sum, and beside it an exact decimal sum that becomes the answer once a
    /// decimal was seen (mongod averages in decimal then, never through double).
    Avg {
        total: f64,
        decimal_total: dec::Decimal128,
        count: u64,
        decimal: bool,
    },
    Extreme(Option<Bson>),
    /// `$push`/`$addToSet` values and their encoded size, bounded by [`MAX_LIST_BYTES`].
    List {
        items: Vec<Bson>,
        bytes: usize,
    },
    First(Option<Bson>),
    Last(Bson),
}

impl GroupSpec {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<GroupSpec> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::new(
                code::GROUP_SPEC_NOT_OBJECT,
                "a group's fields must be specified in an object",
            ));
        };
        let mut id = None;
        let mut fields = Vec::new();
        for (name, value) in spec {
            if name == "_id" {
                id = Some(Expr::parse(value)?);
                continue;
            }
            if name.contains('.') {
                return Err(CommandError::new(
                    code::GROUP_FIELD_WITH_DOT,
                    format!("The field name '{name}' cannot contain '.'"),
                ));
            }
            let Bson::Document(accumulator_spec) = value else {
                return Err(CommandError::new(
                    code::GROUP_FIELD_NOT_ACCUMULATOR,
                    format!("The field '{name}' must be an accumulator object"),
                ));
            };
            if accumulator_spec.len() != 1 {
                return Err(CommandError::new(
                    code::GROUP_FIELD_ACCUMULATOR_COUNT,
                    format!("The field '{name}' must specify one accumulator"),
                ));
            }
            let Some((operator, argument)) = accumulator_spec.iter().next() else {
                return Err(CommandError::new(
                    code::GROUP_FIELD_ACCUMULATOR_COUNT,
                    format!("The field '{name}' must specify one accumulator"),
                ));
            };
            let accumulator = match operator.as_str() {
                "$sum" => Accumulator::Sum,
                "$avg" => Accumulator::Avg,
                "$min" => Accumulator::Min,
                "$max" => Accumulator::Max,
                "$push" => Accumulator::Push,
                "$addToSet" => Accumulator::AddToSet,
                "$first" => Accumulator::First,
                "$last" => Accumulator::Last,
                "$count" => {
                    if !matches!(argument, Bson::Document(empty) if empty.is_empty()) {
                        return Err(CommandError::new(
                            code::COUNT_ACCUMULATOR_ARGUMENT,
                            format!(
                                "$count takes no arguments, i.e. $count:{{}}, got {}",
                                format_document(accumulator_spec)
                            ),
                        ));
                    }
                    Accumulator::Count
                }
                other => {
                    return Err(CommandError::new(
                        code::UNKNOWN_GROUP_OPERATOR,
                        format!("unknown group operator '{other}'"),
                    ));
                }
            };
            let expr = if accumulator == Accumulator::Count {
                Expr::Literal(Bson::Int32(1))
            } else {
                Expr::parse(argument)?
            };
            fields.push((name.clone(), accumulator, expr));
        }
        let id = id.ok_or_else(|| {
            CommandError::new(
                code::GROUP_WITHOUT_ID,
                "a group specification must include an _id",
            )
        })?;
        Ok(GroupSpec {
            id,
            fields,
            collation: None,
        })
    }

    /// The specification grouping string keys under `collation`.
    pub(crate) fn with_collation(
        mut self,
        collation: Option<&crate::collation::Collation>,
    ) -> GroupSpec {
        self.collation = collation.cloned();
        self
    }

    /// Groups the input, emitting groups in order of first appearance.
    pub(crate) fn run(&self, input: Vec<Arc<Document>>) -> StoreResult<Vec<Arc<Document>>> {
        let mut positions: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut groups: Vec<(Bson, Vec<State>)> = Vec::new();
        for document in &input {
            let id = self.id.evaluate(document)?.unwrap_or(Bson::Null);
            let key = match &self.collation {
                Some(collation) => encode_key(&collation.fold(&id)),
                None => encode_key(&id),
            };
            let position = match positions.get(&key) {
                Some(position) => *position,
                None => {
                    let states = self
                        .fields
                        .iter()
                        .map(|(_, accumulator, _)| initial_state(*accumulator))
                        .collect();
                    groups.push((id, states));
                    positions.insert(key, groups.len() - 1);
                    groups.len() - 1
                }
            };
            let states = &mut groups[position].1;
            for ((_, accumulator, expr), state) in self.fields.iter().zip(states.iter_mut()) {
                let value = expr.evaluate(document)?;
                accumulate(*accumulator, state, value)?;
            }
        }
        Ok(groups
            .into_iter()
            .map(|(id, states)| {
                let mut out = Document::new();
                out.insert("_id", id);
                for ((name, _, _), state) in self.fields.iter().zip(states) {
                    out.insert(name.clone(), finish(state));
                }
                Arc::new(out)
            })
            .collect())
    }
}

fn initial_state(accumulator: Accumulator) -> State {
    match accumulator {
        Accumulator::Sum | Accumulator::Count => State::Sum(Bson::Int32(0)),
        Accumulator::Avg => State::Avg {
            total: 0.0,
            decimal_total: decimal::from_i64(0),
            count: 0,
            decimal: false,
        },
        Accumulator::Min | Accumulator::Max => State::Extreme(None),
        Accumulator::Push | Accumulator::AddToSet => State::List {
            items: Vec::new(),
            bytes: 0,
        },
        Accumulator::First => State::First(None),
        Accumulator::Last => State::Last(Bson::Null),
    }
}

/// mongod's `internalQueryMaxPushBytes` and `internalQueryMaxAddToSetBytes` (100 MiB): how much
/// one `$push` or `$addToSet` may hold for one group.
const MAX_LIST_BYTES: usize = 100 * 1024 * 1024;

/// Adds `value` to a `$push`/`$addToSet` list, failing with ExceededMemoryLimit (146) as mongod
/// does when the list would pass [`MAX_LIST_BYTES`].
fn push_bounded(
    accumulator: Accumulator,
    items: &mut Vec<Bson>,
    bytes: &mut usize,
    value: Bson,
) -> StoreResult<()> {
    let grown = bytes.saturating_add(value_size(&value));
    if grown > MAX_LIST_BYTES {
        let name = if accumulator == Accumulator::Push {
            "$push"
        } else {
            "$addToSet"
        };
        return Err(CommandError::new(
            code::EXCEEDED_MEMORY_LIMIT,
            format!(
                "{name} used too much memory and cannot spill to disk. Memory limit: {MAX_LIST_BYTES} bytes"
            ),
        ));
    }
    *bytes = grown;
    items.push(value);
    Ok(())
}

fn accumulate(accumulator: Accumulator, state: &mut State, value: Option<Bson>) -> StoreResult<()> {
    match (accumulator, state) {
        (Accumulator::Sum | Accumulator::Count, State::Sum(total)) => {
            // $sum of an array argument adds up its numeric elements; non-numbers are ignored.
            let numbers: Vec<&Bson> = match &value {
                Some(Bson::Array(items)) => items.iter().filter(|item| is_number(item)).collect(),
                Some(number) if is_number(number) => vec![number],
                _ => Vec::new(),
            };
            for number in numbers {
                if let Some(next) = apply_widening(ArithOp::Add, total, number) {
                    *total = next;
                }
            }
        }
        (
            Accumulator::Avg,
            State::Avg {
                total,
                decimal_total,
                count,
                decimal,
            },
        ) => {
            if let Some(number) = value.as_ref().and_then(Number::of) {
                *total += number.as_f64();
                *decimal_total =
                    decimal::apply(DecimalOp::Add, *decimal_total, decimal_operand(number));
                *count += 1;
                *decimal |= matches!(value, Some(Bson::Decimal128(_)));
            }
        }
        (Accumulator::Min | Accumulator::Max, State::Extreme(best)) => {
            let Some(value) = value.filter(|value| !matches!(value, Bson::Null | Bson::Undefined))
            else {
                return Ok(());
            };
            let wanted = if accumulator == Accumulator::Min {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
            if best
                .as_ref()
                .is_none_or(|current| compare_values(&value, current) == wanted)
            {
                *best = Some(value);
            }
        }
        (Accumulator::Push, State::List { items, bytes }) => {
            if let Some(value) = value {
                push_bounded(accumulator, items, bytes, value)?;
            }
        }
        (Accumulator::AddToSet, State::List { items, bytes }) => {
            if let Some(value) = value {
                if !items.iter().any(|item| values_equal(item, &value)) {
                    push_bounded(accumulator, items, bytes, value)?;
                }
            }
        }
        (Accumulator::First, State::First(first @ None)) => {
            *first = Some(value.unwrap_or(Bson::Null))
        }
        (Accumulator::Last, State::Last(last)) => *last = value.unwrap_or(Bson::Null),
        _ => {}
    }
    Ok(())
}

fn finish(state: State) -> Bson {
    match state {
        State::Sum(total) => total,
        State::Avg { count: 0, .. } => Bson::Null,
        State::Avg {
            total,
            decimal_total,
            count,
            decimal,
        } => {
            if decimal {
                let count = decimal::from_i64(i64::try_from(count).unwrap_or(i64::MAX));
                decimal::to_bson(decimal::apply(DecimalOp::Divide, decimal_total, count))
            } else {
                // Group sizes are far below 2^53, so the conversion is exact.
                #[allow(clippy::cast_precision_loss)]
                let average = total / count as f64;
                Bson::Double(average)
            }
        }
        State::Extreme(best) => best.unwrap_or(Bson::Null),
        State::List { items, .. } => Bson::Array(items),
        State::First(first) => first.unwrap_or(Bson::Null),
        State::Last(last) => last,
    }
}
