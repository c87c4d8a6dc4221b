//! The write models of `Collection::bulk_write`, and the validation shared with the single
//! writes, `findAndModify` and `Client::bulk_write` (update documents must start with an
//! operator, replacements must not).

use bson::{Document, RawDocumentBuf};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::operation::write::{Statement, UpdateStatementFields, WriteKind};
use crate::options::{Collation, Hint, UpdateModifications};

/// Chainable setters of a model's optional fields, one per field; a field marked `#[into]`
/// takes `impl Into<Type>`: the options structs' setters.
macro_rules! model_setters {
    ($model:ident; $($field:ident : $(#[$into:ident])? $ty:ty),* $(,)?) => {
        $(
            crate::options::options_struct!(@setter $model, $field, $ty $(, $into)?);
        )*
    };
}

/// One write of a bulk write.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum WriteModel<T> {
    /// Inserts a document (an `_id` is generated when it has none).
    InsertOne(InsertOneModel<T>),
    /// Updates the first matching document.
    UpdateOne(UpdateModel),
    /// Updates every matching document (makes the bulk write non-retryable).
    UpdateMany(UpdateModel),
    /// Replaces the first matching document.
    ReplaceOne(ReplaceOneModel<T>),
    /// Deletes the first matching document.
    DeleteOne(DeleteModel),
    /// Deletes every matching document (makes the bulk write non-retryable).
    DeleteMany(DeleteModel),
}

/// Inserts one document.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct InsertOneModel<T> {
    /// The document.
    pub document: T,
}

impl<T> InsertOneModel<T> {
    /// Inserts `document`.
    pub fn new(document: T) -> Self {
        InsertOneModel { document }
    }
}

/// Updates the documents matching a filter (one or all, by the [`WriteModel`] variant).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct UpdateModel {
    /// Which documents.
    pub filter: Document,
    /// Update operators or a pipeline.
    pub update: UpdateModifications,
    /// Inserts a document when none matches.
    pub upsert: Option<bool>,
    /// Which array elements `$[identifier]` operators apply to.
    pub array_filters: Option<Vec<Document>>,
    /// The collation.
    pub collation: Option<Collation>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Which matching document an `UpdateOne` updates first (8.0+). An `UpdateMany` with a
    /// sort fails with `InvalidArgument` before anything is sent.
    pub sort: Option<Document>,
}

impl UpdateModel {
    /// Applies `update` to the documents matching `filter`.
    pub fn new(filter: Document, update: impl Into<UpdateModifications>) -> Self {
        UpdateModel {
            filter,
            update: update.into(),
            upsert: None,
            array_filters: None,
            collation: None,
            hint: None,
            sort: None,
        }
    }

    model_setters!(UpdateModel;
        upsert: bool,
        array_filters: Vec<Document>,
        collation: Collation,
        hint: #[into] Hint,
        sort: Document,
    );
}

/// Replaces the first document matching a filter.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReplaceOneModel<T> {
    /// Which document.
    pub filter: Document,
    /// The new document (without update operators).
    pub replacement: T,
    /// Inserts the replacement when no document matches.
    pub upsert: Option<bool>,
    /// The collation.
    pub collation: Option<Collation>,
    /// The index to use.
    pub hint: Option<Hint>,
    /// Which matching document is replaced first (8.0+).
    pub sort: Option<Document>,
}

impl<T> ReplaceOneModel<T> {
    /// Replaces the first document matching `filter` with `replacement`.
    pub fn new(filter: Document, replacement: T) -> Self {
        ReplaceOneModel {
            filter,
            replacement,
            upsert: None,
            collation: None,
            hint: None,
            sort: None,
        }
    }

    model_setters!(ReplaceOneModel;
        upsert: bool,
        collation: Collation,
        hint: #[into] Hint,
        sort: Document,
    );
}

/// Deletes the documents matching a filter (one or all, by the [`WriteModel`] variant).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DeleteModel {
    /// Which documents.
    pub filter: Document,
    /// The collation.
    pub collation: Option<Collation>,
    /// The index to use.
    pub hint: Option<Hint>,
}

impl DeleteModel {
    /// Deletes the documents matching `filter`.
    pub fn new(filter: Document) -> Self {
        DeleteModel {
            filter,
            collation: None,
            hint: None,
        }
    }

    model_setters!(DeleteModel; collation: Collation, hint: #[into] Hint);
}

impl<T> WriteModel<T> {
    /// Which write command carries this model.
    pub(crate) fn kind(&self) -> WriteKind {
        match self {
            WriteModel::InsertOne(_) => WriteKind::Insert,
            WriteModel::UpdateOne(_) | WriteModel::UpdateMany(_) | WriteModel::ReplaceOne(_) => {
                WriteKind::Update
            }
            WriteModel::DeleteOne(_) | WriteModel::DeleteMany(_) => WriteKind::Delete,
        }
    }
}

impl<T: Serialize> WriteModel<T> {
    /// The statement this model sends, and the `_id` of an inserted document.
    ///
    /// # Errors
    /// `InvalidArgument` when a document cannot be serialised, an update document does not
    /// start with an operator, or a replacement does.
    pub(crate) fn into_statement(self) -> Result<(Statement, Option<bson::Bson>)> {
        let statement = match self {
            WriteModel::InsertOne(model) => {
                let (statement, id) = Statement::insert(to_raw(&model.document)?)?;
                return Ok((statement, Some(id)));
            }
            WriteModel::UpdateOne(model) => update_statement(model, false)?,
            WriteModel::UpdateMany(model) => update_statement(model, true)?,
            WriteModel::ReplaceOne(model) => replace_statement(model)?,
            WriteModel::DeleteOne(model) => delete_statement(&model, false)?,
            WriteModel::DeleteMany(model) => delete_statement(&model, true)?,
        };
        Ok((statement, None))
    }
}

fn update_statement(model: UpdateModel, multi: bool) -> Result<Statement> {
    check_update(&model.update)?;
    if multi && model.sort.is_some() {
        return Err(Error::invalid_argument(
            "sort applies to a single-document update (UpdateOne), not UpdateMany",
        ));
    }
    let fields = UpdateStatementFields {
        upsert: model.upsert,
        array_filters: model.array_filters.as_deref(),
        collation: model.collation.as_ref(),
        hint: model.hint.as_ref(),
        sort: model.sort.as_ref(),
    };
    Statement::update(&model.filter, &model.update, multi, fields)
}

fn replace_statement<T: Serialize>(model: ReplaceOneModel<T>) -> Result<Statement> {
    let replacement = UpdateModifications::Document(replacement_document(&model.replacement)?);
    let fields = UpdateStatementFields {
        upsert: model.upsert,
        array_filters: None,
        collation: model.collation.as_ref(),
        hint: model.hint.as_ref(),
        sort: model.sort.as_ref(),
    };
    Statement::update(&model.filter, &replacement, false, fields)
}

fn delete_statement(model: &DeleteModel, multi: bool) -> Result<Statement> {
    let (collation, hint) = (model.collation.as_ref(), model.hint.as_ref());
    Statement::delete(&model.filter, multi, collation, hint)
}

/// `value` serialised as a BSON document.
///
/// # Errors
/// `InvalidArgument` when it does not serialise to a document.
pub(crate) fn to_raw<T: Serialize>(value: &T) -> Result<RawDocumentBuf> {
    bson::serialize_to_raw_document_buf(value).map_err(|e| {
        Error::invalid_argument("the value cannot be serialised as a BSON document").with_source(e)
    })
}

/// Checks that an update document is made of update operators (the CRUD specification checks
/// its first key); pipelines are left to the server.
///
/// # Errors
/// `InvalidArgument` for an empty update document or one whose first key is not an operator.
pub(crate) fn check_update(update: &UpdateModifications) -> Result<()> {
    match update {
        UpdateModifications::Document(doc) => match doc.keys().next() {
            Some(first) if first.starts_with('$') => Ok(()),
            Some(first) => Err(Error::invalid_argument(format!(
                "an update document must contain only update operators, but its first key is `{first}`; use a replace operation to replace a document"
            ))),
            None => Err(Error::invalid_argument("the update document is empty")),
        },
        UpdateModifications::Pipeline(_) => Ok(()),
    }
}

/// A replacement serialised as a document, checked not to start with an update operator.
///
/// # Errors
/// `InvalidArgument` when it cannot be serialised or its first key starts with `$`.
pub(crate) fn replacement_document<T: Serialize>(replacement: &T) -> Result<Document> {
    let doc = bson::serialize_to_document(replacement).map_err(|e| {
        Error::invalid_argument("the replacement cannot be serialised as a BSON document")
            .with_source(e)
    })?;
    check_replacement(&doc)?;
    Ok(doc)
}

/// Checks that a replacement is not an update: its first key must not start with `$`.
///
/// # Errors
/// `InvalidArgument` when it does.
pub(crate) fn check_replacement(replacement: &Document) -> Result<()> {
    match replacement.keys().next() {
        Some(first) if first.starts_with('$') => Err(Error::invalid_argument(format!(
            "a replacement document must not contain update operators, but its first key is `{first}`; use an update operation"
        ))),
        _ => Ok(()),
    }
}

impl<T> From<InsertOneModel<T>> for WriteModel<T> {
    fn from(model: InsertOneModel<T>) -> Self {
        WriteModel::InsertOne(model)
    }
}

impl<T> From<ReplaceOneModel<T>> for WriteModel<T> {
    fn from(model: ReplaceOneModel<T>) -> Self {
        WriteModel::ReplaceOne(model)
    }
}
