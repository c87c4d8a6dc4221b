//! find_one_and_delete, find_one_and_update and find_one_and_replace (`findAndModify`).

use std::borrow::Borrow;
use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};
use serde::Serialize;
use serde::de::DeserializeOwned;
use steadfast_core::options::WriteConcern;

use super::run::execute;
use crate::bulk::models::{check_update, replacement_document};
use crate::coll::Collection;
use crate::cursor::deserialize;
use crate::error::Result;
use crate::operation::find_and_modify::{FindAndModify, FindAndModifyFields, Modification};
use crate::operation::settings::OperationOverrides;
use crate::options::{
    FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, Hint,
    ReturnDocument, UpdateModifications,
};
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
    /// Deletes the first document matching `filter` (by `sort`) and returns it.
    pub fn find_one_and_delete(&self, filter: Document) -> FindOneAndDelete<'_, T> {
        FindOneAndDelete {
            coll: self,
            filter,
            options: FindOneAndDeleteOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Updates the first document matching `filter` and returns it as it was before (default)
    /// or after the update.
    pub fn find_one_and_update(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> FindOneAndUpdate<'_, T> {
        FindOneAndUpdate {
            coll: self,
            filter,
            update: update.into(),
            options: FindOneAndUpdateOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

impl<T: Serialize + Send + Sync> Collection<T> {
    /// Replaces the first document matching `filter` and returns it as it was before (default)
    /// or after the replacement.
    pub fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
    ) -> FindOneAndReplace<'_, T> {
        FindOneAndReplace {
            coll: self,
            filter,
            replacement: replacement_document(replacement.borrow()),
            options: FindOneAndReplaceOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// Runs one `findAndModify` with the collection's write concern as the fallback.
async fn find_and_modify<T: DeserializeOwned + Send + Sync>(
    coll: &Collection<T>,
    filter: Document,
    modification: Modification,
    options: impl Into<FindAndModifyFields>,
    session: Option<&mut ClientSession>,
    overrides: &OperationOverrides,
) -> Result<Option<T>> {
    let mut fields: FindAndModifyFields = options.into();
    fields.own_write_concern = fields
        .write_concern
        .as_ref()
        .is_some_and(|wc| !wc.is_empty());
    fields.write_concern = coll.resolve_write_concern(fields.write_concern.take());
    let op = FindAndModify::new(coll.ns().clone(), filter, modification, fields);
    let settings = coll.operation_settings(overrides);
    let found: Option<RawDocumentBuf> = execute(coll.client(), op, session, &settings).await?;
    found.map(|doc| deserialize(Some(&doc))).transpose()
}

/// The action of [`Collection::find_one_and_delete`].
#[must_use = "an action does nothing until awaited"]
pub struct FindOneAndDelete<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOneAndDeleteOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> FindOneAndDelete<'a, T> {
    options_and_session!(FindOneAndDeleteOptions);
    option_setters!(FindOneAndDeleteOptions;
        max_time: Duration,
        projection: #[into] Document,
        sort: #[into] Document,
        write_concern: WriteConcern,
        collation: crate::options::Collation,
        hint: #[into] Hint,
        let_vars: #[into] Document,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<Option<T>>
    where
        T: DeserializeOwned,
    {
        find_and_modify(
            self.coll,
            self.filter,
            Modification::Delete,
            self.options,
            self.session,
            &self.overrides,
        )
        .await
    }
}

action_future!(FindOneAndDelete<'a, T> where [T: DeserializeOwned + Send + Sync + 'a] => Option<T>);

/// The action of [`Collection::find_one_and_update`].
#[must_use = "an action does nothing until awaited"]
pub struct FindOneAndUpdate<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    update: UpdateModifications,
    options: FindOneAndUpdateOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> FindOneAndUpdate<'a, T> {
    options_and_session!(FindOneAndUpdateOptions);
    option_setters!(FindOneAndUpdateOptions;
        array_filters: #[iter] Document,
        bypass_document_validation: bool,
        max_time: Duration,
        projection: #[into] Document,
        return_document: ReturnDocument,
        sort: #[into] Document,
        upsert: bool,
        write_concern: WriteConcern,
        collation: crate::options::Collation,
        hint: #[into] Hint,
        let_vars: #[into] Document,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<Option<T>>
    where
        T: DeserializeOwned,
    {
        check_update(&self.update)?;
        let modification = Modification::Update(self.update);
        find_and_modify(
            self.coll,
            self.filter,
            modification,
            self.options,
            self.session,
            &self.overrides,
        )
        .await
    }
}

action_future!(FindOneAndUpdate<'a, T> where [T: DeserializeOwned + Send + Sync + 'a] => Option<T>);

/// The action of [`Collection::find_one_and_replace`].
#[must_use = "an action does nothing until awaited"]
pub struct FindOneAndReplace<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    replacement: Result<Document>,
    options: FindOneAndReplaceOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> FindOneAndReplace<'a, T> {
    options_and_session!(FindOneAndReplaceOptions);
    option_setters!(FindOneAndReplaceOptions;
        bypass_document_validation: bool,
        max_time: Duration,
        projection: #[into] Document,
        return_document: ReturnDocument,
        sort: #[into] Document,
        upsert: bool,
        write_concern: WriteConcern,
        collation: crate::options::Collation,
        hint: #[into] Hint,
        let_vars: #[into] Document,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<Option<T>>
    where
        T: DeserializeOwned,
    {
        let modification = Modification::Replace(self.replacement?);
        find_and_modify(
            self.coll,
            self.filter,
            modification,
            self.options,
            self.session,
            &self.overrides,
        )
        .await
    }
}

action_future!(FindOneAndReplace<'a, T> where [T: DeserializeOwned + Send + Sync + 'a] => Option<T>);
