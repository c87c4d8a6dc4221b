//! `Collection::replace_one`.

use std::borrow::Borrow;

use bson::{Bson, Document};
use serde::Serialize;
use steadfast_core::options::WriteConcern;

use super::update::run_update;
use crate::bulk::models::replacement_document;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::settings::OperationOverrides;
use crate::operation::write::{Statement, UpdateStatementFields};
use crate::options::{Hint, ReplaceOptions, UpdateModifications};
use crate::results::UpdateResult;
use crate::session::ClientSession;

impl<T: Serialize + Send + Sync> Collection<T> {
    /// Replaces the first document matching `filter` with `replacement`, which must not
    /// contain update operators.
    pub fn replace_one(&self, filter: Document, replacement: impl Borrow<T>) -> ReplaceOne<'_, T> {
        ReplaceOne {
            coll: self,
            filter,
            replacement: replacement_document(replacement.borrow()),
            options: ReplaceOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Collection::replace_one`].
#[must_use = "an action does nothing until awaited"]
pub struct ReplaceOne<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    replacement: Result<Document>,
    options: ReplaceOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> ReplaceOne<'a, T> {
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

    async fn execute(self) -> Result<UpdateResult> {
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

action_future!(ReplaceOne<'a, T> where [T: Send + Sync + 'a] => UpdateResult);
