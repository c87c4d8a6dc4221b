//! Applying modifiers to a document: path navigation (creating what `$set`-like operators need)
//! and each operator's semantics.

use std::cmp::Ordering;

use bson::{Bson, Document, Timestamp};

use super::{Action, ApplyContext, Modifier, PullCondition, PushSort, PushSpec};
use crate::arith::{ArithOp, apply_exact, is_number, zero_like};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value, type_name};
use crate::path::array_index;
use crate::value_order::{compare_values, values_equal};

/// The position a path names: a field of a document or an element of an array.
enum Slot<'a> {
    Field(&'a mut Document, &'a str),
    Element(&'a mut Vec<Bson>, usize),
}

impl Slot<'_> {
    fn get(&self) -> Option<&Bson> {
        match self {
            Slot::Field(document, name) => document.get(*name),
            Slot::Element(items, position) => items.get(*position),
        }
    }

    fn get_mut(&mut self) -> Option<&mut Bson> {
        match self {
            Slot::Field(document, name) => document.get_mut(*name),
            Slot::Element(items, position) => items.get_mut(*position),
        }
    }

    /// Stores `value` at the slot, padding an array with nulls up to the position (within
    /// [`MAX_ARRAY_PADDING`]; beyond it nothing is changed and CannotBackfillArray is returned).
    fn set(&mut self, value: Bson) -> StoreResult<()> {
        match self {
            Slot::Field(document, name) => {
                document.insert(*name, value);
            }
            Slot::Element(items, position) => {
                pad_with_nulls(items, *position)?;
                match items.get_mut(*position) {
                    Some(item) => *item = value,
                    None => items.push(value),
                }
            }
        }
        Ok(())
    }

    /// Removes a field; an array element is replaced by null (positions do not shift).
    fn remove(&mut self) -> Option<Bson> {
        match self {
            Slot::Field(document, name) => document.remove(*name),
            Slot::Element(items, position) => items
                .get_mut(*position)
                .map(|item| std::mem::replace(item, Bson::Null)),
        }
    }
}

/// mongod's `kMaxPaddingAllowed`: how many nulls an update may append to reach an array position.
const MAX_ARRAY_PADDING: usize = 1_500_000;

/// Appends nulls so that `items` has at least `len` elements, refusing (before any change) to
/// append more than [`MAX_ARRAY_PADDING`] of them, as mongod does: `{$set: {"a.4000000000": 1}}`
/// must not allocate gigabytes.
fn pad_with_nulls(items: &mut Vec<Bson>, len: usize) -> StoreResult<()> {
    let missing = len.saturating_sub(items.len());
    if missing > MAX_ARRAY_PADDING {
        return Err(CommandError::new(
            code::CANNOT_BACKFILL_ARRAY,
            format!("can't backfill more than {MAX_ARRAY_PADDING} elements"),
        ));
    }
    items.resize(items.len() + missing, Bson::Null);
    Ok(())
}

type LeafFn<'f> = dyn FnMut(Slot<'_>) -> StoreResult<()> + 'f;

/// Walks to the parent of the last path component and calls `leaf` there. With `create`,
/// missing intermediate documents are created; otherwise a missing path is a no-op.
fn walk_document(
    document: &mut Document,
    parts: &[String],
    create: bool,
    leaf: &mut LeafFn<'_>,
) -> StoreResult<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    if rest.is_empty() {
        return leaf(Slot::Field(document, first));
    }
    if !document.contains_key(first) {
        if !create {
            return Ok(());
        }
        document.insert(first.clone(), Document::new());
    }
    match document.get_mut(first) {
        Some(child) => walk_value(child, first, rest, create, leaf),
        None => Ok(()),
    }
}

fn walk_value(
    value: &mut Bson,
    name: &str,
    parts: &[String],
    create: bool,
    leaf: &mut LeafFn<'_>,
) -> StoreResult<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    match value {
        Bson::Document(document) => walk_document(document, parts, create, leaf),
        Bson::Array(items) => {
            let Some(position) = array_index(first) else {
                return if create {
                    Err(cannot_create(first, name, value))
                } else {
                    Ok(())
                };
            };
            if rest.is_empty() {
                return leaf(Slot::Element(items, position));
            }
            if position >= items.len() {
                if !create {
                    return Ok(());
                }
                pad_with_nulls(items, position)?;
                items.push(Bson::Document(Document::new()));
            }
            match items.get_mut(position) {
                Some(item) => walk_value(item, first, rest, create, leaf),
                None => Ok(()),
            }
        }
        _ if create => Err(cannot_create(first, name, value)),
        _ => Ok(()),
    }
}

fn cannot_create(field: &str, name: &str, value: &Bson) -> CommandError {
    let mut element = Document::new();
    element.insert(name, value.clone());
    CommandError::new(
        code::PATH_NOT_VIABLE,
        format!(
            "Cannot create field '{field}' in element {}",
            crate::errors::format_document(&element)
        ),
    )
}

/// Applies sorted, conflict-free modifiers in place.
pub(super) fn apply_modifiers(
    document: &mut Document,
    modifiers: &[Modifier],
    context: ApplyContext,
) -> StoreResult<()> {
    let id_text = document
        .get("_id")
        .map(|id| format!("{{_id: {}}}", format_value(id)))
        .unwrap_or_default();
    for modifier in modifiers {
        apply_one(document, modifier, context, &id_text)?;
    }
    Ok(())
}

fn apply_one(
    document: &mut Document,
    modifier: &Modifier,
    context: ApplyContext,
    id_text: &str,
) -> StoreResult<()> {
    let path = modifier.path.as_str();
    match &modifier.action {
        Action::Set(value) => walk_document(document, &modifier.parts, true, &mut |mut slot| {
            slot.set(value.clone())
        }),
        Action::SetOnInsert(value) => {
            if !context.is_insert {
                return Ok(());
            }
            walk_document(document, &modifier.parts, true, &mut |mut slot| {
                slot.set(value.clone())
            })
        }
        Action::Unset => walk_document(document, &modifier.parts, false, &mut |mut slot| {
            slot.remove();
            Ok(())
        }),
        Action::Inc(amount) | Action::Mul(amount) => {
            let op = if matches!(modifier.action, Action::Inc(_)) {
                ArithOp::Add
            } else {
                ArithOp::Multiply
            };
            walk_document(document, &modifier.parts, true, &mut |mut slot| {
                let next = match slot.get() {
                    None => if op == ArithOp::Add { amount.clone() } else { zero_like(amount) },
                    Some(current) if is_number(current) => apply_exact(op, current, amount).ok_or_else(|| {
                        let name = if op == ArithOp::Add { "$inc" } else { "$mul" };
                        CommandError::bad_value(format!(
                            "Failed to apply {name} operations to current value ({}) for document {id_text}",
                            format_value(current)
                        ))
                    })?,
                    Some(current) => {
                        let name = if op == ArithOp::Add { "$inc" } else { "$mul" };
                        return Err(CommandError::type_mismatch(format!(
                            "Cannot apply {name} to a value of non-numeric type. {id_text} has the field '{}' of \
                             non-numeric type {}",
                            modifier.parts.last().map_or(path, String::as_str),
                            type_name(current)
                        )));
                    }
                };
                slot.set(next)
            })
        }
        Action::Min(value) | Action::Max(value) => {
            let wanted = if matches!(modifier.action, Action::Min(_)) {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            walk_document(document, &modifier.parts, true, &mut |mut slot| {
                let replace = slot
                    .get()
                    .is_none_or(|current| compare_values(value, current) == wanted);
                if replace {
                    slot.set(value.clone())?;
                }
                Ok(())
            })
        }
        Action::Push(spec) => walk_document(document, &modifier.parts, true, &mut |mut slot| {
            match slot.get_mut() {
                None => slot.set(Bson::Array(finish_push(Vec::new(), spec)))?,
                Some(Bson::Array(items)) => {
                    let current = std::mem::take(items);
                    *items = finish_push(current, spec);
                }
                Some(other) => {
                    return Err(CommandError::bad_value(format!(
                        "The field '{path}' must be an array but is of type {} in document {id_text}",
                        type_name(other)
                    )));
                }
            }
            Ok(())
        }),
        Action::AddToSet(values) => {
            walk_document(document, &modifier.parts, true, &mut |mut slot| {
                match slot.get_mut() {
                    None => {
                        let mut items: Vec<Bson> = Vec::with_capacity(values.len());
                        add_unique(&mut items, values);
                        slot.set(Bson::Array(items))?;
                    }
                    Some(Bson::Array(items)) => add_unique(items, values),
                    Some(other) => {
                        return Err(CommandError::bad_value(format!(
                            "Cannot apply $addToSet to non-array field. Field named '{}' has non-array type {}",
                            modifier.parts.last().map_or(path, String::as_str),
                            type_name(other)
                        )));
                    }
                }
                Ok(())
            })
        }
        Action::Pull(condition) => {
            walk_document(document, &modifier.parts, false, &mut |mut slot| {
                match slot.get_mut() {
                    None => {}
                    Some(Bson::Array(items)) => items.retain(|item| !pull_matches(condition, item)),
                    Some(_) => {
                        return Err(CommandError::bad_value(
                            "Cannot apply $pull to a non-array value",
                        ));
                    }
                }
                Ok(())
            })
        }
        Action::PullAll(values) => {
            walk_document(document, &modifier.parts, false, &mut |mut slot| {
                match slot.get_mut() {
                    None => {}
                    Some(Bson::Array(items)) => {
                        items.retain(|item| !values.iter().any(|value| values_equal(item, value)))
                    }
                    Some(_) => {
                        return Err(CommandError::bad_value(
                            "$pullAll requires an array argument",
                        ));
                    }
                }
                Ok(())
            })
        }
        Action::Pop { first } => {
            walk_document(document, &modifier.parts, false, &mut |mut slot| {
                match slot.get_mut() {
                    None => {}
                    Some(Bson::Array(items)) => {
                        if *first {
                            if !items.is_empty() {
                                items.remove(0);
                            }
                        } else {
                            items.pop();
                        }
                    }
                    Some(other) => {
                        return Err(CommandError::type_mismatch(format!(
                            "Path '{path}' contains an element of non-array type '{}'",
                            type_name(other)
                        )));
                    }
                }
                Ok(())
            })
        }
        Action::Rename { to_parts, .. } => {
            let mut moved = None;
            walk_document(document, &modifier.parts, false, &mut |mut slot| {
                if matches!(slot, Slot::Element(..)) {
                    return Err(CommandError::bad_value(format!(
                        "The source field cannot be an array element, '{path}' in doc with {id_text} has an array field"
                    )));
                }
                moved = slot.remove();
                Ok(())
            })?;
            match moved {
                Some(value) => walk_document(document, to_parts, true, &mut |mut slot| {
                    slot.set(value.clone())
                }),
                None => Ok(()),
            }
        }
        Action::CurrentDate { timestamp } => {
            let value = if *timestamp {
                let seconds =
                    u32::try_from(context.now.timestamp_millis().div_euclid(1000)).unwrap_or(0);
                Bson::Timestamp(Timestamp {
                    time: seconds,
                    increment: 1,
                })
            } else {
                Bson::DateTime(context.now)
            };
            walk_document(document, &modifier.parts, true, &mut |mut slot| {
                slot.set(value.clone())
            })
        }
    }
}

fn add_unique(items: &mut Vec<Bson>, values: &[Bson]) {
    for value in values {
        if !items.iter().any(|item| values_equal(item, value)) {
            items.push(value.clone());
        }
    }
}

fn pull_matches(condition: &PullCondition, item: &Bson) -> bool {
    match condition {
        PullCondition::Equals(value) => values_equal(item, value),
        PullCondition::ValuePredicate(filter) => {
            let mut wrapper = Document::new();
            wrapper.insert("v", item.clone());
            filter.matches(&wrapper)
        }
        PullCondition::DocumentFilter(filter) => {
            matches!(item, Bson::Document(document) if filter.matches(document))
        }
    }
}

fn finish_push(mut items: Vec<Bson>, spec: &PushSpec) -> Vec<Bson> {
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let position = match spec.position {
        None => items.len(),
        Some(position) if position >= 0 => {
            usize::try_from(position.min(len)).unwrap_or(items.len())
        }
        Some(position) => usize::try_from((len + position).max(0)).unwrap_or(0),
    };
    let tail = items.split_off(position);
    items.extend(spec.values.iter().cloned());
    items.extend(tail);
    if let Some(sort) = &spec.sort {
        items = match sort {
            PushSort::Values { ascending } => {
                items.sort_by(|left, right| {
                    let order = compare_values(left, right);
                    if *ascending { order } else { order.reverse() }
                });
                items
            }
            PushSort::Fields(spec) => spec.sort(items, |item| match item {
                Bson::Document(document) => Some(document),
                _ => None,
            }),
        };
    }
    if let Some(slice) = spec.slice {
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if slice >= 0 {
            items.truncate(usize::try_from(slice.min(len)).unwrap_or(items.len()));
        } else {
            // Saturating: a $slice of i64::MIN (or -1e300) must not overflow on negation.
            let keep = usize::try_from(slice.saturating_neg().min(len)).unwrap_or(0);
            let start = items.len() - keep;
            items.drain(..start);
        }
    }
    items
}
