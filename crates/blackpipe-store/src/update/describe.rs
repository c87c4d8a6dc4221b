//! What an update reports in its change event's `updateDescription`.
//!
//! mongod builds a change event from the update's oplog delta. For modifiers, that delta is
//! what each operator logs (`v2_log_builder`), not a comparison of the two versions: a `$set`
//! of a whole subdocument reports the subdocument, a field created under a missing parent
//! reports the parent, appends report `"arr.N"` entries, and array operators that rewrite the
//! array report it whole. A pipeline's delta is a comparison (`doc_diff`), which
//! [`Description::diff`] models.

use bson::{Bson, Document};

use super::{Action, Modifier, PushSpec, Update, positional};
use crate::change_stream::record::{Description, Step};
use crate::path::array_index;
use crate::value_order::identical;

impl Update {
    /// The `updateDescription` of this update turning `before` into `after`; `None` for a
    /// replacement, whose event carries the new document instead.
    pub(crate) fn describe(&self, before: &Document, after: &Document) -> Option<Document> {
        let description = match self {
            Update::Replacement(_) => return None,
            Update::Pipeline(_) => Description::diff(before, after),
            Update::Modifiers(modifiers, filters) => {
                match positional::expand(before, modifiers, filters) {
                    Ok(modifiers) => describe_modifiers(&modifiers, before, after),
                    // Unreachable: the update already expanded these paths against `before`.
                    Err(_) => Description::diff(before, after),
                }
            }
        };
        Some(description.into_document())
    }
}

fn describe_modifiers(modifiers: &[Modifier], before: &Document, after: &Document) -> Description {
    let mut out = Description::default();
    for modifier in modifiers {
        let versions = Versions { before, after };
        match &modifier.action {
            Action::Set(_)
            | Action::SetOnInsert(_)
            | Action::Inc(_)
            | Action::Mul(_)
            | Action::Min(_)
            | Action::Max(_)
            | Action::CurrentDate { .. } => versions.written(&mut out, &modifier.parts),
            Action::Unset => {
                versions.unset(&mut out, &modifier.parts);
            }
            Action::Push(spec) => versions.pushed(&mut out, &modifier.parts, spec),
            Action::AddToSet(_) => versions.appended(&mut out, &modifier.parts),
            Action::Pull(_) | Action::PullAll(_) | Action::Pop { .. } => {
                versions.rewritten(&mut out, &modifier.parts);
            }
            Action::Rename { to_parts, .. } => {
                if versions.unset(&mut out, &modifier.parts) {
                    versions.written(&mut out, to_parts);
                }
            }
        }
    }
    out
}

/// Where a modifier's path lies in the document before the update.
struct Located {
    /// Every component of the path, typed by what it addresses before the update (below a
    /// missing component, the documents the update created: field names).
    steps: Vec<Step>,
    /// The first component that did not exist before the update.
    missing: Option<usize>,
    /// The missing component is an array position past the end, so the update padded the
    /// array with nulls.
    padded: bool,
}

/// Follows `parts` through `document`; `None` when they cross a value that is neither a
/// document nor an array (the operator then changed nothing, or failed).
fn locate(document: &Document, parts: &[String]) -> Option<Located> {
    let mut located = Located {
        steps: Vec::with_capacity(parts.len()),
        missing: None,
        padded: false,
    };
    let mut current: Option<&Bson> = None;
    for (position, part) in parts.iter().enumerate() {
        let next = match (position, current) {
            (0, _) => {
                located.steps.push(Step::Field(part.clone()));
                document.get(part)
            }
            (_, None) => {
                located.steps.push(Step::Field(part.clone()));
                None
            }
            (_, Some(Bson::Document(parent))) => {
                located.steps.push(Step::Field(part.clone()));
                parent.get(part)
            }
            (_, Some(Bson::Array(items))) => {
                let index = array_index(part)?;
                located.steps.push(Step::Index(index));
                if located.missing.is_none() && index > items.len() {
                    located.padded = true;
                }
                items.get(index)
            }
            (_, Some(_)) => return None,
        };
        if next.is_none() && located.missing.is_none() {
            located.missing = Some(position);
        }
        current = next;
    }
    Some(located)
}

/// The value at `steps`.
fn value_at<'a>(document: &'a Document, steps: &[Step]) -> Option<&'a Bson> {
    let (first, rest) = steps.split_first()?;
    let Step::Field(name) = first else {
        return None;
    };
    let mut value = document.get(name)?;
    for step in rest {
        value = match (step, value) {
            (Step::Field(name), Bson::Document(document)) => document.get(name)?,
            (Step::Index(index), Bson::Array(items)) => items.get(*index)?,
            _ => return None,
        };
    }
    Some(value)
}

#[derive(Clone, Copy)]
struct Versions<'a> {
    before: &'a Document,
    after: &'a Document,
}

impl Versions<'_> {
    /// A value written at `parts` (`$set`, `$inc`, ...): the path if it existed and changed,
    /// else its first new component, created whole.
    fn written(self, out: &mut Description, parts: &[String]) {
        let Some(located) = locate(self.before, parts) else {
            return;
        };
        match located.missing {
            None => self.changed(out, &located.steps),
            Some(first_new) => self.created(out, &located, first_new),
        }
    }

    /// `$unset` (and a `$rename`'s source): a removed field, or a nulled array element.
    /// Returns whether the path existed.
    fn unset(self, out: &mut Description, parts: &[String]) -> bool {
        let Some(located) = locate(self.before, parts).filter(|found| found.missing.is_none())
        else {
            return false;
        };
        match located.steps.last() {
            Some(Step::Index(_)) => self.changed(out, &located.steps),
            _ => out.remove(&located.steps),
        }
        true
    }

    /// `$push`: appended elements one by one when the array only grew at its end, as mongod
    /// logs them, else the whole array (`$position` inside it, `$sort`, a `$slice` that cut,
    /// or an empty array).
    fn pushed(self, out: &mut Description, parts: &[String], spec: &PushSpec) {
        let appends_only = |old: &[Bson], new: &[Bson]| {
            let end = i64::try_from(old.len()).unwrap_or(i64::MAX);
            !old.is_empty()
                && spec.sort.is_none()
                && spec.position.is_none_or(|position| position > end)
                && new.len() == old.len() + spec.values.len()
        };
        self.array_change(out, parts, appends_only);
    }

    /// `$addToSet`: the elements it added, one by one.
    fn appended(self, out: &mut Description, parts: &[String]) {
        self.array_change(out, parts, |_, _| true);
    }

    /// `$pull`, `$pullAll`, `$pop`: the whole array when it changed.
    fn rewritten(self, out: &mut Description, parts: &[String]) {
        self.array_change(out, parts, |_, _| false);
    }

    /// An array operator's change: a created array whole, else the elements appended (when
    /// `appends_only` says the array only grew at its end) or the whole array.
    fn array_change(
        self,
        out: &mut Description,
        parts: &[String],
        appends_only: impl Fn(&[Bson], &[Bson]) -> bool,
    ) {
        let Some(located) = locate(self.before, parts) else {
            return;
        };
        if let Some(first_new) = located.missing {
            return self.created(out, &located, first_new);
        }
        let steps = &located.steps;
        let (Some(Bson::Array(old)), Some(Bson::Array(new))) =
            (value_at(self.before, steps), value_at(self.after, steps))
        else {
            return self.changed(out, steps);
        };
        if identical_arrays(old, new) {
            return;
        }
        if !appends_only(old, new) {
            return out.set(steps, &Bson::Array(new.clone()));
        }
        let mut element = steps.clone();
        for (index, value) in new.iter().enumerate().skip(old.len()) {
            element.push(Step::Index(index));
            out.set(&element, value);
            element.pop();
        }
    }

    /// The value at an existing path, reported when the update changed it.
    fn changed(self, out: &mut Description, steps: &[Step]) {
        let Some(new) = value_at(self.after, steps) else {
            return;
        };
        let unchanged = value_at(self.before, steps).is_some_and(|old| identical(old, new));
        if !unchanged {
            out.set(steps, new);
        }
    }

    /// A path whose component `first_new` the update created: that component, whole. Two
    /// modifiers creating under the same new parent report it once (its key is the same).
    fn created(self, out: &mut Description, located: &Located, first_new: usize) {
        let created = &located.steps[..=first_new];
        if located.padded {
            // How mongod logs the nulls an array was padded with is not modelled: compare the
            // array's versions instead.
            return self.compared(out, &created[..first_new]);
        }
        if let Some(value) = value_at(self.after, created) {
            out.set(created, value);
        }
    }

    /// The versions of the value at `steps` compared.
    fn compared(self, out: &mut Description, steps: &[Step]) {
        if let (Some(old), Some(new)) = (value_at(self.before, steps), value_at(self.after, steps))
        {
            out.values(&mut steps.to_vec(), old, new);
        }
    }
}

fn identical_arrays(old: &[Bson], new: &[Bson]) -> bool {
    old.len() == new.len() && old.iter().zip(new).all(|(old, new)| identical(old, new))
}
