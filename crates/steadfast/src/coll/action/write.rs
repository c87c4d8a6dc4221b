//! insert_one, insert_many, update_one/many, replace_one, delete_one/many and bulk_write.

use std::borrow::Borrow;

use bson::{Bson, Document, RawDocumentBuf};
use serde::Serialize;

use crate::coll::Collection;
use crate::coll::bulk::{BulkPlan, FailureShape, at_position};
use crate::coll::exec::OperationOverrides;
use crate::coll::models::{WriteModel, check_update, replacement_document, to_raw};
use crate::error::{Error, Result};
use crate::operation::write::{Statement, UpdateStatementFields, WriteCommandFields, WriteKind};
use crate::options::{
    BulkWriteOptions, DeleteOptions, Hint, InsertManyOptions, InsertOneOptions, ReplaceOptions,
    UpdateModifications, UpdateOptions,
};
use crate::results::{
    BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, UpdateResult,
};
use crate::session::ClientSession;
use steadfast_core::options::WriteConcern;

impl<T: Serialize + Send + Sync> Collection<T> {
    /// Inserts one document. An `_id` (ObjectId) is generated when the document has none, so a
    /// retried insert never creates a second copy.
    ///
    /// Await the returned action; it fails with `InvalidArgument` when the document cannot be
    /// serialised or exceeds the server's `maxBsonObjectSize`, `Write` for a write error
    /// (e.g. duplicate key 11000) or write concern error, and with any command or network
    /// error.
    pub fn insert_one(&self, document: impl Borrow<T>) -> InsertOne<'_, T> {
        InsertOne {
            coll: self,
            document: to_raw(document.borrow()),
            options: InsertOneOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Inserts documents in as few `insert` commands as the server's limits allow
    /// (`maxWriteBatchSize`, `maxMessageSizeBytes`). Ordered by default: stops at the first
    /// failed document.
    ///
    /// Await the returned action; it fails with `InvalidArgument` for an empty list or an
    /// oversized document (before anything is sent), and with `InsertMany` carrying every
    /// write error at its position in the input and the `_id`s inserted.
    pub fn insert_many(
        &self,
        documents: impl IntoIterator<Item = impl Borrow<T>>,
    ) -> InsertMany<'_, T> {
        InsertMany {
            coll: self,
            documents: documents.into_iter().map(|d| to_raw(d.borrow())).collect(),
            options: InsertManyOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Replaces the first document matching `filter` with `replacement`, which must not
    /// contain update operators.
    pub fn replace_one(&self, filter: Document, replacement: impl Borrow<T>) -> Replace<'_, T> {
        Replace {
            coll: self,
            filter,
            replacement: replacement_document(replacement.borrow()),
            options: ReplaceOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Runs a list of mixed write models in as few commands as possible: ordered (the
    /// default) runs them in order and stops at the first write error; unordered runs all
    /// inserts, then updates, then deletes, continuing past errors.
    ///
    /// Await the returned action; it fails with `InvalidArgument` for an empty list or an
    /// invalid model (before anything is sent), and with `BulkWrite` carrying every write error
    /// keyed by the model's position, every write concern error and what was applied.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<WriteModel<T>>>,
    ) -> BulkWrite<'_, T> {
        BulkWrite {
            coll: self,
            models: models.into_iter().map(Into::into).collect(),
            options: BulkWriteOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

impl<T: Send + Sync> Collection<T> {
    /// Updates the first document matching `filter` with update operators or a pipeline.
    pub fn update_one(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> Update<'_, T> {
        Update {
            coll: self,
            filter,
            update: update.into(),
            multi: false,
            options: UpdateOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Updates every document matching `filter` (not a retryable write).
    pub fn update_many(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> Update<'_, T> {
        Update {
            multi: true,
            ..self.update_one(filter, update)
        }
    }

    /// Deletes the first document matching `filter`.
    pub fn delete_one(&self, filter: Document) -> Delete<'_, T> {
        Delete {
            coll: self,
            filter,
            multi: false,
            options: DeleteOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Deletes every document matching `filter` (not a retryable write).
    pub fn delete_many(&self, filter: Document) -> Delete<'_, T> {
        Delete {
            multi: true,
            ..self.delete_one(filter)
        }
    }

    fn write_fields(
        &self,
        ordered: bool,
        bypass_document_validation: Option<bool>,
        write_concern: Option<WriteConcern>,
        comment: Option<Bson>,
        let_vars: Option<Document>,
    ) -> WriteCommandFields {
        WriteCommandFields {
            ordered,
            bypass_document_validation,
            write_concern: self.resolve_write_concern(write_concern),
            comment,
            let_vars,
        }
    }
}

/// The action of [`Collection::insert_one`].
#[must_use = "an action does nothing until awaited"]
pub struct InsertOne<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    document: Result<RawDocumentBuf>,
    options: InsertOneOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> InsertOne<'a, T> {
    options_and_session!(InsertOneOptions);
    option_setters!(InsertOneOptions;
        bypass_document_validation: bool,
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn run(self) -> Result<InsertOneResult> {
        let (statement, id) = Statement::insert(self.document?)?;
        let o = self.options;
        let fields = self.coll.write_fields(
            true,
            o.bypass_document_validation,
            o.write_concern,
            o.comment,
            None,
        );
        let plan = BulkPlan::single_run(WriteKind::Insert, vec![statement], vec![id.clone()]);
        self.coll
            .run_write_plan(plan, fields, self.session, &self.overrides)
            .await?;
        Ok(InsertOneResult { inserted_id: id })
    }
}

action_future!(InsertOne<'a, T> where [T: Send + Sync + 'a] => InsertOneResult);

/// The action of [`Collection::insert_many`].
#[must_use = "an action does nothing until awaited"]
pub struct InsertMany<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    documents: Vec<Result<RawDocumentBuf>>,
    options: InsertManyOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> InsertMany<'a, T> {
    options_and_session!(InsertManyOptions);
    option_setters!(InsertManyOptions;
        bypass_document_validation: bool,
        ordered: bool,
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn run(self) -> Result<InsertManyResult> {
        if self.documents.is_empty() {
            return Err(Error::invalid_argument(
                "insert_many needs at least one document",
            ));
        }
        let mut statements = Vec::with_capacity(self.documents.len());
        let mut ids = Vec::with_capacity(self.documents.len());
        for (position, document) in self.documents.into_iter().enumerate() {
            let (statement, id) = document
                .and_then(Statement::insert)
                .map_err(|e| at_position(e, position))?;
            statements.push(statement);
            ids.push(id);
        }
        let o = self.options;
        let fields = self.coll.write_fields(
            o.ordered.unwrap_or(true),
            o.bypass_document_validation,
            o.write_concern,
            o.comment,
            None,
        );
        let plan = BulkPlan::single_run(WriteKind::Insert, statements, ids)
            .reported_as(FailureShape::InsertMany);
        let result = self
            .coll
            .run_write_plan(plan, fields, self.session, &self.overrides)
            .await?;
        Ok(InsertManyResult {
            inserted_ids: result.inserted_ids,
        })
    }
}

action_future!(InsertMany<'a, T> where [T: Send + Sync + 'a] => InsertManyResult);

/// The action of [`Collection::update_one`] and [`Collection::update_many`].
#[must_use = "an action does nothing until awaited"]
pub struct Update<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    update: UpdateModifications,
    multi: bool,
    options: UpdateOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> Update<'a, T> {
    options_and_session!(UpdateOptions);
    option_setters!(UpdateOptions;
        array_filters: #[iter] Document,
        bypass_document_validation: bool,
        collation: crate::options::Collation,
        hint: #[into] Hint,
        upsert: bool,
        write_concern: WriteConcern,
        let_vars: #[into] Document,
        comment: #[into] Bson,
        sort: #[into] Document,
    );

    async fn run(self) -> Result<UpdateResult> {
        check_update(&self.update)?;
        let o = self.options;
        if self.multi && o.sort.is_some() {
            return Err(Error::invalid_argument(
                "sort applies to update_one, not update_many",
            ));
        }
        let statement = Statement::update(
            &self.filter,
            &self.update,
            self.multi,
            UpdateStatementFields {
                upsert: o.upsert,
                array_filters: o.array_filters.as_deref(),
                collation: o.collation.as_ref(),
                hint: o.hint.as_ref(),
                sort: o.sort.as_ref(),
            },
        )?;
        let fields = self.coll.write_fields(
            true,
            o.bypass_document_validation,
            o.write_concern,
            o.comment,
            o.let_vars,
        );
        run_update(self.coll, statement, fields, self.session, &self.overrides).await
    }
}

action_future!(Update<'a, T> where [T: Send + Sync + 'a] => UpdateResult);

async fn run_update<T: Send + Sync>(
    coll: &Collection<T>,
    statement: Statement,
    fields: WriteCommandFields,
    session: Option<&mut ClientSession>,
    overrides: &OperationOverrides,
) -> Result<UpdateResult> {
    let plan = BulkPlan::single_run(WriteKind::Update, vec![statement], Vec::new());
    let mut result = coll
        .run_write_plan(plan, fields, session, overrides)
        .await?;
    Ok(UpdateResult {
        matched_count: result.matched_count,
        modified_count: result.modified_count,
        upserted_id: result.upserted_ids.remove(&0),
    })
}

/// The action of [`Collection::replace_one`].
#[must_use = "an action does nothing until awaited"]
pub struct Replace<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    replacement: Result<Document>,
    options: ReplaceOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> Replace<'a, T> {
    options_and_session!(ReplaceOptions);
    option_setters!(ReplaceOptions;
        bypass_document_validation: bool,
        collation: crate::options::Collation,
        hint: #[into] Hint,
        upsert: bool,
        write_concern: WriteConcern,
        let_vars: #[into] Document,
        comment: #[into] Bson,
        sort: #[into] Document,
    );

    async fn run(self) -> Result<UpdateResult> {
        let replacement = UpdateModifications::Document(self.replacement?);
        let o = self.options;
        let statement = Statement::update(
            &self.filter,
            &replacement,
            false,
            UpdateStatementFields {
                upsert: o.upsert,
                array_filters: None,
                collation: o.collation.as_ref(),
                hint: o.hint.as_ref(),
                sort: o.sort.as_ref(),
            },
        )?;
        let fields = self.coll.write_fields(
            true,
            o.bypass_document_validation,
            o.write_concern,
            o.comment,
            o.let_vars,
        );
        run_update(self.coll, statement, fields, self.session, &self.overrides).await
    }
}

action_future!(Replace<'a, T> where [T: Send + Sync + 'a] => UpdateResult);

/// The action of [`Collection::delete_one`] and [`Collection::delete_many`].
#[must_use = "an action does nothing until awaited"]
pub struct Delete<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    multi: bool,
    options: DeleteOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> Delete<'a, T> {
    options_and_session!(DeleteOptions);
    option_setters!(DeleteOptions;
        collation: crate::options::Collation,
        hint: #[into] Hint,
        write_concern: WriteConcern,
        let_vars: #[into] Document,
        comment: #[into] Bson,
    );

    async fn run(self) -> Result<DeleteResult> {
        let o = self.options;
        let statement = Statement::delete(
            &self.filter,
            self.multi,
            o.collation.as_ref(),
            o.hint.as_ref(),
        )?;
        let fields = self
            .coll
            .write_fields(true, None, o.write_concern, o.comment, o.let_vars);
        let plan = BulkPlan::single_run(WriteKind::Delete, vec![statement], Vec::new());
        let result = self
            .coll
            .run_write_plan(plan, fields, self.session, &self.overrides)
            .await?;
        Ok(DeleteResult {
            deleted_count: result.deleted_count,
        })
    }
}

action_future!(Delete<'a, T> where [T: Send + Sync + 'a] => DeleteResult);

/// The action of [`Collection::bulk_write`].
#[must_use = "an action does nothing until awaited"]
pub struct BulkWrite<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    models: Vec<WriteModel<T>>,
    options: BulkWriteOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Serialize + Send + Sync> BulkWrite<'a, T> {
    options_and_session!(BulkWriteOptions);
    option_setters!(BulkWriteOptions;
        ordered: bool,
        bypass_document_validation: bool,
        write_concern: WriteConcern,
        let_vars: #[into] Document,
        comment: #[into] Bson,
    );

    async fn run(self) -> Result<BulkWriteResult> {
        let o = self.options;
        let ordered = o.ordered.unwrap_or(true);
        let plan = BulkPlan::new(self.models, ordered)?;
        let fields = self.coll.write_fields(
            ordered,
            o.bypass_document_validation,
            o.write_concern,
            o.comment,
            o.let_vars,
        );
        self.coll
            .run_write_plan(plan, fields, self.session, &self.overrides)
            .await
    }
}

action_future!(BulkWrite<'a, T> where [T: Serialize + Send + Sync + 'a] => BulkWriteResult);
