//! `Collection::bulk_write`: mixed write models in as few commands as possible.

use bson::{Bson, Document};
use serde::Serialize;
use steadfast_core::options::WriteConcern;

use crate::bulk::models::WriteModel;
use crate::bulk::plan::BulkPlan;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::settings::OperationOverrides;
use crate::options::BulkWriteOptions;
use crate::results::BulkWriteResult;
use crate::session::ClientSession;

impl<T: Serialize + Send + Sync> Collection<T> {
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
