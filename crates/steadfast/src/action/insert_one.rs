//! `Collection::insert_one`.

use std::borrow::Borrow;

use bson::{Bson, RawDocumentBuf};
use serde::Serialize;
use steadfast_core::options::WriteConcern;

use crate::bulk::models::to_raw;
use crate::bulk::plan::BulkPlan;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::settings::OperationOverrides;
use crate::operation::write::{Statement, WriteKind};
use crate::options::InsertOneOptions;
use crate::results::InsertOneResult;
use crate::session::ClientSession;

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

    async fn execute(self) -> Result<InsertOneResult> {
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
