//! The op log writes that document writes make: what a change event about each will show.

use std::sync::Arc;

use bson::{Bson, Document, doc};

use crate::collection::Collection;
use crate::oplog::{Change, OplogWrite};
use crate::replication::entry::ApplyInfo;
use crate::value_order::identical;

/// Whether `collection` records pre- and post-images for change streams
/// (`changeStreamPreAndPostImages: {enabled: true}` at create or collMod).
pub(crate) fn records_images(collection: &Collection) -> bool {
    collection
        .options
        .get_document("changeStreamPreAndPostImages")
        .is_ok_and(|images| images.get_bool("enabled").is_ok_and(|enabled| enabled))
}

impl OplogWrite {
    /// The insert of `document` (as stored) into `collection`.
    pub(crate) fn insert(collection: &Collection, document: Arc<Document>) -> OplogWrite {
        OplogWrite {
            ns: collection.ns.clone(),
            uuid: Some(collection.uuid),
            id: document.get("_id").cloned(),
            change: Change::Insert(document),
            pre_image: None,
            previous: None,
            apply: ApplyInfo::default(),
        }
    }

    /// The modification of `before` into `after`: an update with its `updateDescription`
    /// (`description`), or a replacement (a document without update operators) without one.
    pub(crate) fn update(
        collection: &Collection,
        before: &Arc<Document>,
        after: Arc<Document>,
        description: Option<Document>,
    ) -> OplogWrite {
        let images = records_images(collection);
        let replacement = description.is_none();
        let change = match description {
            None => Change::Replace(after.clone()),
            Some(description) => Change::Update {
                description: Arc::new(description),
                post_image: images.then(|| after.clone()),
            },
        };
        OplogWrite {
            ns: collection.ns.clone(),
            uuid: Some(collection.uuid),
            id: after.get("_id").cloned(),
            change,
            pre_image: images.then(|| before.clone()),
            previous: Some(before.clone()),
            // The same `Arc` as the post-image when there is one, so it is held once.
            apply: ApplyInfo {
                after: (!replacement).then_some(after),
                ..ApplyInfo::default()
            },
        }
    }

    /// The delete of `removed`.
    pub(crate) fn delete(collection: &Collection, removed: &Arc<Document>) -> OplogWrite {
        OplogWrite {
            ns: collection.ns.clone(),
            uuid: Some(collection.uuid),
            id: removed.get("_id").cloned(),
            change: Change::Delete,
            pre_image: records_images(collection).then(|| removed.clone()),
            previous: Some(removed.clone()),
            apply: ApplyInfo::default(),
        }
    }
}

/// What an update changed, as a change event's `updateDescription`: built from the update's
/// operators (`update::describe`) or, for a pipeline, by comparing the two versions.
#[derive(Default)]
pub(crate) struct Description {
    updated: Document,
    removed: Vec<Bson>,
    truncated: Vec<Bson>,
    /// Paths whose dotted form is ambiguous (a numeric field name, or a dot inside a field
    /// name), with their components: strings for field names, integers for array indexes.
    disambiguated: Document,
}

/// One component of a path: a field name, or the position of an array element.
#[derive(Clone)]
pub(crate) enum Step {
    Field(String),
    Index(usize),
}

impl Description {
    fn path(steps: &[Step]) -> String {
        let parts: Vec<String> = steps
            .iter()
            .map(|step| match step {
                Step::Field(name) => name.clone(),
                Step::Index(index) => index.to_string(),
            })
            .collect();
        parts.join(".")
    }

    /// Notes `steps` in `disambiguatedPaths` if its dotted form could be read another way, as
    /// mongod's change stream diff parser does: a field name with a dot anywhere, or a strictly
    /// numeric field name after the first component (a top-level field cannot be an array
    /// index), makes the path ambiguous; array indexes alone do not.
    fn note_ambiguity(&mut self, steps: &[Step]) {
        let ambiguous = steps.iter().enumerate().any(|(position, step)| match step {
            Step::Field(name) => name.contains('.') || (position > 0 && strictly_numeric(name)),
            Step::Index(_) => false,
        });
        if !ambiguous {
            return;
        }
        let components: Vec<Bson> = steps
            .iter()
            .map(|step| match step {
                Step::Field(name) => Bson::String(name.clone()),
                Step::Index(index) => Bson::Int32(i32::try_from(*index).unwrap_or(i32::MAX)),
            })
            .collect();
        self.disambiguated
            .insert(Description::path(steps), components);
    }

    /// Reports the value at `steps` as updated (or created).
    pub(crate) fn set(&mut self, steps: &[Step], value: &Bson) {
        self.note_ambiguity(steps);
        self.updated.insert(Description::path(steps), value.clone());
    }

    fn documents(&mut self, steps: &mut Vec<Step>, before: &Document, after: &Document) {
        for (field, new) in after {
            steps.push(Step::Field(field.clone()));
            match before.get(field) {
                Some(old) => self.values(steps, old, new),
                None => self.set(steps, new),
            }
            steps.pop();
        }
        for field in before.keys().filter(|field| !after.contains_key(*field)) {
            steps.push(Step::Field(field.clone()));
            self.remove(steps);
            steps.pop();
        }
    }

    /// Reports the field at `steps` as removed.
    pub(crate) fn remove(&mut self, steps: &[Step]) {
        self.note_ambiguity(steps);
        self.removed.push(Bson::String(Description::path(steps)));
    }

    /// Compares what `steps` held before (`old`) and after (`new`) an update.
    pub(crate) fn values(&mut self, steps: &mut Vec<Step>, old: &Bson, new: &Bson) {
        if identical(old, new) {
            return;
        }
        match (old, new) {
            (Bson::Document(old), Bson::Document(new)) => self.documents(steps, old, new),
            (Bson::Array(old), Bson::Array(new)) => self.arrays(steps, old, new),
            _ => self.set(steps, new),
        }
    }

    /// Arrays are compared element by element: a shorter array is a truncation, then each
    /// changed or appended element is set by index.
    fn arrays(&mut self, steps: &mut Vec<Step>, old: &[Bson], new: &[Bson]) {
        if new.len() < old.len() {
            self.note_ambiguity(steps);
            self.truncated.push(Bson::Document(doc! {
                "field": Description::path(steps),
                "newSize": i32::try_from(new.len()).unwrap_or(i32::MAX),
            }));
        }
        for (index, value) in new.iter().enumerate() {
            if old.get(index).is_some_and(|old| identical(old, value)) {
                continue;
            }
            steps.push(Step::Index(index));
            self.set(steps, value);
            steps.pop();
        }
    }
}

/// mongod's `FieldRef::isNumericPathComponentStrict`: digits only, without a leading zero
/// unless the name is "0" ("01" cannot name an array element, so it is never ambiguous).
fn strictly_numeric(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|byte| byte.is_ascii_digit())
        && (name.len() == 1 || !name.starts_with('0'))
}

impl Description {
    /// Compares `before` and `after` field by field, as mongod diffs the versions a pipeline
    /// update produced.
    pub(crate) fn diff(before: &Document, after: &Document) -> Description {
        let mut description = Description::default();
        description.documents(&mut Vec::new(), before, after);
        description
    }

    /// The `updateDescription` document.
    pub(crate) fn into_document(self) -> Document {
        doc! {
            "updatedFields": self.updated,
            "removedFields": self.removed,
            "truncatedArrays": self.truncated,
            "disambiguatedPaths": self.disambiguated,
        }
    }
}
