//! `Collection::insert_many`.

use std::borrow::Borrow;

use bson::{Bson, RawDocumentBuf};
use serde::Serialize;
use steadfast_core::options::WriteConcern;

use crate::bulk::models::to_raw;
use crate::bulk::plan::{BulkPlan, FailureShape, at_position};
use crate::coll::Collection;
use crate::error::{Error, Result};
use crate::operation::settings::OperationOverrides;
use crate::operation::write::{Statement, WriteKind};
use crate::options::InsertManyOptions;
use crate::results::InsertManyResult;
use crate::session::ClientSession;

impl<T: Serialize + Send + Sync> Collection<T> {
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
}

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

    async fn execute(self) -> Result<InsertManyResult> {
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
