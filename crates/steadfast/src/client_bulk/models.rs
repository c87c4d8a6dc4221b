//! The write models of `Client::bulk_write`: each names its own namespace, so one call can
//! write to many collections of many databases.

use bson::{Array, Bson, Document, RawDocumentBuf};
use serde::Serialize;
use typed_builder::TypedBuilder;

use crate::bulk::models::{check_replacement, check_update, to_raw};
use crate::coll::Collection;
use crate::error::Result;
use crate::namespace::Namespace;
use crate::operation::write::{Statement, encode};
use crate::options::UpdateModifications;

/// One write of a client-level bulk write.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum WriteModel {
    /// Inserts one document.
    InsertOne(InsertOneModel),
    /// Updates the first matching document.
    UpdateOne(UpdateOneModel),
    /// Updates every matching document (the batch holding it is not a retryable write).
    UpdateMany(UpdateManyModel),
    /// Replaces the first matching document.
    ReplaceOne(ReplaceOneModel),
    /// Deletes the first matching document.
    DeleteOne(DeleteOneModel),
    /// Deletes every matching document (the batch holding it is not a retryable write).
    DeleteMany(DeleteManyModel),
}

/// Inserts `document` into `namespace`; an `_id` (ObjectId) is generated when it has none.
#[derive(Clone, Debug, TypedBuilder, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct InsertOneModel {
    /// Where to insert.
    #[builder(!default)]
    #[serde(skip_serializing)]
    pub namespace: Namespace,
    /// The document.
    #[builder(!default)]
    pub document: Document,
}

/// Updates the first document of `namespace` matching `filter`.
#[derive(Clone, Debug, TypedBuilder, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct UpdateOneModel {
    /// Where to update.
    #[builder(!default)]
    #[serde(skip_serializing)]
    pub namespace: Namespace,
    /// Which document.
    #[builder(!default)]
    pub filter: Document,
    /// Update operators or a pipeline.
    #[builder(!default)]
    #[serde(rename = "updateMods")]
    pub update: UpdateModifications,
    /// Which array elements `$[identifier]` operators apply to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_filters: Option<Array>,
    /// The collation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Document>,
    /// The index to use (its name or key pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<Bson>,
    /// Inserts a document when none matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upsert: Option<bool>,
    /// Which document is first when several match (servers 8.0+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<Document>,
}

/// Updates every document of `namespace` matching `filter`.
#[derive(Clone, Debug, TypedBuilder, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct UpdateManyModel {
    /// Where to update.
    #[builder(!default)]
    #[serde(skip_serializing)]
    pub namespace: Namespace,
    /// Which documents.
    #[builder(!default)]
    pub filter: Document,
    /// Update operators or a pipeline.
    #[builder(!default)]
    #[serde(rename = "updateMods")]
    pub update: UpdateModifications,
    /// Which array elements `$[identifier]` operators apply to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_filters: Option<Array>,
    /// The collation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Document>,
    /// The index to use (its name or key pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<Bson>,
    /// Inserts a document when none matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upsert: Option<bool>,
}

/// Replaces the first document of `namespace` matching `filter`.
#[derive(Clone, Debug, TypedBuilder, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct ReplaceOneModel {
    /// Where to replace.
    #[builder(!default)]
    #[serde(skip_serializing)]
    pub namespace: Namespace,
    /// Which document.
    #[builder(!default)]
    pub filter: Document,
    /// The new document (no update operators).
    #[builder(!default)]
    #[serde(rename = "updateMods")]
    pub replacement: Document,
    /// The collation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Document>,
    /// The index to use (its name or key pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<Bson>,
    /// Inserts the replacement when no document matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upsert: Option<bool>,
    /// Which document is first when several match (servers 8.0+).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<Document>,
}

/// Deletes the first document of `namespace` matching `filter`.
#[derive(Clone, Debug, TypedBuilder, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct DeleteOneModel {
    /// Where to delete.
    #[builder(!default)]
    #[serde(skip_serializing)]
    pub namespace: Namespace,
    /// Which document.
    #[builder(!default)]
    pub filter: Document,
    /// The collation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Document>,
    /// The index to use (its name or key pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<Bson>,
}

/// Deletes every document of `namespace` matching `filter`.
#[derive(Clone, Debug, TypedBuilder, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct DeleteManyModel {
    /// Where to delete.
    #[builder(!default)]
    #[serde(skip_serializing)]
    pub namespace: Namespace,
    /// Which documents.
    #[builder(!default)]
    pub filter: Document,
    /// The collation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collation: Option<Document>,
    /// The index to use (its name or key pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<Bson>,
}

macro_rules! into_write_model {
    ($($model:ident => $variant:ident),* $(,)?) => {
        $(
            impl From<$model> for WriteModel {
                fn from(model: $model) -> Self {
                    WriteModel::$variant(model)
                }
            }
        )*
    };
}

into_write_model!(
    InsertOneModel => InsertOne,
    UpdateOneModel => UpdateOne,
    UpdateManyModel => UpdateMany,
    ReplaceOneModel => ReplaceOne,
    DeleteOneModel => DeleteOne,
    DeleteManyModel => DeleteMany,
);

impl<T: Serialize + Send + Sync> Collection<T> {
    /// An [`InsertOneModel`] of `document` into this collection, for `Client::bulk_write`.
    ///
    /// # Errors
    /// `InvalidArgument` when `document` does not serialise to a BSON document.
    pub fn insert_one_model(
        &self,
        document: impl std::borrow::Borrow<T>,
    ) -> Result<InsertOneModel> {
        let document = bson::serialize_to_document(document.borrow())?;
        Ok(InsertOneModel::builder()
            .namespace(self.namespace())
            .document(document)
            .build())
    }

    /// A [`ReplaceOneModel`] of the document matching `filter` in this collection by
    /// `replacement`, for `Client::bulk_write`.
    ///
    /// # Errors
    /// `InvalidArgument` when `replacement` does not serialise to a BSON document.
    pub fn replace_one_model(
        &self,
        filter: Document,
        replacement: impl std::borrow::Borrow<T>,
    ) -> Result<ReplaceOneModel> {
        let replacement = bson::serialize_to_document(replacement.borrow())?;
        Ok(ReplaceOneModel::builder()
            .namespace(self.namespace())
            .filter(filter)
            .replacement(replacement)
            .build())
    }
}

/// Which kind of result a model's entry in the results cursor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// `insert`.
    Insert,
    /// `update` (update and replace models).
    Update,
    /// `delete`.
    Delete,
}

impl OpKind {
    /// The ops document's first key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            OpKind::Insert => "insert",
            OpKind::Update => "update",
            OpKind::Delete => "delete",
        }
    }
}

/// A model encoded once, before anything is sent: everything of its ops document but the
/// leading `<kind>: <nsInfo index>` pair, which depends on the batch it lands in.
#[derive(Clone, Debug)]
pub(crate) struct EncodedOp {
    pub(crate) kind: OpKind,
    /// `db.coll`.
    pub(crate) ns: String,
    /// The ops document's fields after the first.
    pub(crate) rest: RawDocumentBuf,
    /// The size checked against `maxBsonObjectSize` (the inserted document, or the larger of
    /// filter and update).
    pub(crate) checked_len: usize,
    /// Whether it may touch several documents (its batch is then not a retryable write).
    pub(crate) multi: bool,
    /// The `_id` of an inserted document (generated when it had none).
    pub(crate) inserted_id: Option<Bson>,
}

impl WriteModel {
    /// Encodes the model.
    ///
    /// # Errors
    /// `InvalidArgument` when a document cannot be encoded, an update document does not start
    /// with an operator, or a replacement does.
    pub(crate) fn encode(self) -> Result<EncodedOp> {
        match self {
            WriteModel::InsertOne(m) => {
                let (statement, id) = Statement::insert(to_raw(&m.document)?)?;
                let rest = bson::rawdoc! { "document": statement.document };
                Ok(EncodedOp {
                    kind: OpKind::Insert,
                    ns: m.namespace.to_string(),
                    rest,
                    checked_len: statement.checked_len,
                    multi: false,
                    inserted_id: Some(id),
                })
            }
            WriteModel::UpdateOne(m) => {
                check_update(&m.update)?;
                update_op(
                    m.namespace,
                    UpdateFields {
                        filter: m.filter,
                        update: m.update.to_bson(),
                        multi: false,
                        array_filters: m.array_filters,
                        collation: m.collation,
                        hint: m.hint,
                        upsert: m.upsert,
                        sort: m.sort,
                    },
                )
            }
            WriteModel::UpdateMany(m) => {
                check_update(&m.update)?;
                update_op(
                    m.namespace,
                    UpdateFields {
                        filter: m.filter,
                        update: m.update.to_bson(),
                        multi: true,
                        array_filters: m.array_filters,
                        collation: m.collation,
                        hint: m.hint,
                        upsert: m.upsert,
                        sort: None,
                    },
                )
            }
            WriteModel::ReplaceOne(m) => replace_op(m),
            WriteModel::DeleteOne(m) => {
                delete_op(m.namespace, m.filter, false, m.collation, m.hint)
            }
            WriteModel::DeleteMany(m) => {
                delete_op(m.namespace, m.filter, true, m.collation, m.hint)
            }
        }
    }
}

/// The fields of an update or replacement's ops document.
struct UpdateFields {
    filter: Document,
    /// Update operators, a pipeline or a replacement, already checked.
    update: Bson,
    multi: bool,
    array_filters: Option<Array>,
    collation: Option<Document>,
    hint: Option<Bson>,
    upsert: Option<bool>,
    sort: Option<Document>,
}

fn update_op(namespace: Namespace, fields: UpdateFields) -> Result<EncodedOp> {
    let filter_len = encode(&fields.filter)?.as_bytes().len();
    let update_len = match &fields.update {
        Bson::Document(doc) => encode(doc)?.as_bytes().len(),
        other => encode(&bson::doc! { "": other.clone() })?.as_bytes().len(),
    };
    let mut rest = Document::new();
    rest.insert("filter", fields.filter);
    rest.insert("updateMods", fields.update);
    rest.insert("multi", fields.multi);
    put(&mut rest, "upsert", fields.upsert.map(Bson::Boolean));
    put(
        &mut rest,
        "arrayFilters",
        fields.array_filters.map(Bson::Array),
    );
    put(&mut rest, "collation", fields.collation.map(Bson::Document));
    put(&mut rest, "hint", fields.hint);
    put(&mut rest, "sort", fields.sort.map(Bson::Document));
    Ok(EncodedOp {
        kind: OpKind::Update,
        ns: namespace.to_string(),
        rest: encode(&rest)?,
        checked_len: filter_len.max(update_len),
        multi: fields.multi,
        inserted_id: None,
    })
}

fn replace_op(m: ReplaceOneModel) -> Result<EncodedOp> {
    check_replacement(&m.replacement)?;
    update_op(
        m.namespace,
        UpdateFields {
            filter: m.filter,
            update: Bson::Document(m.replacement),
            multi: false,
            array_filters: None,
            collation: m.collation,
            hint: m.hint,
            upsert: m.upsert,
            sort: m.sort,
        },
    )
}

fn delete_op(
    namespace: Namespace,
    filter: Document,
    multi: bool,
    collation: Option<Document>,
    hint: Option<Bson>,
) -> Result<EncodedOp> {
    let filter_len = encode(&filter)?.as_bytes().len();
    let mut rest = Document::new();
    rest.insert("filter", filter);
    rest.insert("multi", multi);
    put(&mut rest, "collation", collation.map(Bson::Document));
    put(&mut rest, "hint", hint);
    Ok(EncodedOp {
        kind: OpKind::Delete,
        ns: namespace.to_string(),
        rest: encode(&rest)?,
        checked_len: filter_len,
        multi,
        inserted_id: None,
    })
}

fn put(doc: &mut Document, key: &str, value: Option<Bson>) {
    if let Some(value) = value {
        doc.insert(key, value);
    }
}
