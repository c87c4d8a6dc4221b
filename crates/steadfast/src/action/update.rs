//! `Collection::update_one` and `Collection::update_many`, and the run they share with
//! `replace_one`.

use bson::{Bson, Document};
use steadfast_core::options::WriteConcern;

use crate::bulk::models::check_update;
use crate::bulk::plan::BulkPlan;
use crate::coll::Collection;
use crate::error::{Error, Result};
use crate::operation::settings::OperationOverrides;
use crate::operation::write::{Statement, UpdateStatementFields, WriteCommandFields, WriteKind};
use crate::options::{Hint, UpdateModifications, UpdateOptions};
use crate::results::UpdateResult;
use crate::session::ClientSession;

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
}

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

    async fn execute(self) -> Result<UpdateResult> {
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

/// Runs one update statement (of an update or a replacement) as a single-statement write.
pub(super) async fn run_update<T: Send + Sync>(
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
