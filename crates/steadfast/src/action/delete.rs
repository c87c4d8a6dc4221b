//! `Collection::delete_one` and `Collection::delete_many`.

use bson::{Bson, Document};
use steadfast_core::options::WriteConcern;

use crate::bulk::plan::BulkPlan;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::settings::OperationOverrides;
use crate::operation::write::{Statement, WriteKind};
use crate::options::{DeleteOptions, Hint};
use crate::results::DeleteResult;
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
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
}

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

    async fn execute(self) -> Result<DeleteResult> {
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
