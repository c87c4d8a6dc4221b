//! `Collection::count_documents`, `Collection::estimated_document_count` and the deprecated
//! `Collection::count`.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast_core::options::ReadConcern;

use super::run::execute;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::aggregate::CountDocuments as CountDocumentsOp;
use crate::operation::count::CountCommand;
use crate::operation::settings::OperationOverrides;
use crate::options::{CountOptions, EstimatedDocumentCountOptions, Hint};
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
    /// Counts the documents matching `filter` exactly, with an aggregation (`$match` then
    /// `$group`). Query operators that `$match` does not allow (`$where`, `$near`, ...) cannot
    /// be used.
    pub fn count_documents(&self, filter: Document) -> CountDocuments<'_, T> {
        CountDocuments {
            coll: self,
            filter,
            options: CountOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// An estimate of the collection's document count from its metadata, with the `count`
    /// command (see the server's documentation of `count` for its behaviour; with the Stable
    /// API, servers 5.0.0-5.0.8 need `apiStrict: false`).
    pub fn estimated_document_count(&self) -> EstimatedDocumentCount<'_, T> {
        EstimatedDocumentCount {
            coll: self,
            options: EstimatedDocumentCountOptions::default(),
            overrides: OperationOverrides::default(),
        }
    }

    /// Counts the documents matching `filter` with the `count` command, as drivers did before
    /// `count_documents` and `estimated_document_count` replaced it.
    ///
    /// The `count` command may count wrongly on a sharded cluster (orphaned documents, a chunk
    /// migration in progress) and, without a filter, answers from metadata, so it is
    /// deprecated by the CRUD specification; it is kept for applications moving from a driver
    /// that still has it. It is a retryable read.
    #[deprecated(
        since = "0.1.0",
        note = "use count_documents for an exact count or estimated_document_count for a fast one"
    )]
    pub fn count(&self, filter: Document) -> Count<'_, T> {
        Count {
            coll: self,
            filter,
            options: CountOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Collection::count_documents`].
#[must_use = "an action does nothing until awaited"]
pub struct CountDocuments<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    options: CountOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> CountDocuments<'a, T> {
    options_and_session!(CountOptions);
    option_setters!(CountOptions;
        collation: crate::options::Collation,
        comment: #[into] Bson,
        hint: #[into] Hint,
        limit: u64,
        max_time: Duration,
        skip: u64,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
    );

    async fn execute(self) -> Result<u64> {
        let mut options = self.options;
        let own_read_concern = options.read_concern.is_some();
        let read_concern = self.coll.resolve_read_concern(options.read_concern.take());
        let criteria = self
            .coll
            .resolve_criteria(options.selection_criteria.take());
        let ns = self.coll.ns();
        let op = CountDocumentsOp::new(
            ns.db.clone(),
            ns.coll.clone(),
            self.filter,
            options,
            read_concern,
            criteria,
        )
        .with_own_read_concern(own_read_concern);
        let settings = self.coll.operation_settings(&self.overrides);
        execute(self.coll.client(), op, self.session, &settings).await
    }
}

action_future!(CountDocuments<'a, T> where [T: Send + Sync + 'a] => u64);

/// The action of [`Collection::estimated_document_count`].
#[must_use = "an action does nothing until awaited"]
pub struct EstimatedDocumentCount<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    options: EstimatedDocumentCountOptions,
    overrides: OperationOverrides,
}

impl<'a, T: Send + Sync> EstimatedDocumentCount<'a, T> {
    operation_overrides!();

    /// Replaces every option at once.
    pub fn with_options(
        mut self,
        options: impl Into<Option<EstimatedDocumentCountOptions>>,
    ) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    option_setters!(EstimatedDocumentCountOptions;
        comment: #[into] Bson,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
    );

    async fn execute(self) -> Result<u64> {
        let mut options = self.options;
        let read_concern = self.coll.resolve_read_concern(options.read_concern.take());
        let criteria = self
            .coll
            .resolve_criteria(options.selection_criteria.take());
        let op = CountCommand::estimated(self.coll.ns().clone(), options, read_concern, criteria);
        let settings = self.coll.operation_settings(&self.overrides);
        execute(self.coll.client(), op, None, &settings).await
    }
}

action_future!(EstimatedDocumentCount<'a, T> where [T: Send + Sync + 'a] => u64);

/// The action of the deprecated [`Collection::count`].
#[must_use = "an action does nothing until awaited"]
pub struct Count<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    options: CountOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> Count<'a, T> {
    options_and_session!(CountOptions);
    option_setters!(CountOptions;
        collation: crate::options::Collation,
        comment: #[into] Bson,
        hint: #[into] Hint,
        limit: u64,
        max_time: Duration,
        skip: u64,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
    );

    async fn execute(self) -> Result<u64> {
        let mut options = self.options;
        let own_read_concern = options.read_concern.is_some();
        let read_concern = self.coll.resolve_read_concern(options.read_concern.take());
        let criteria = self
            .coll
            .resolve_criteria(options.selection_criteria.take());
        let ns = self.coll.ns().clone();
        let op = CountCommand::filtered(ns, self.filter, options, read_concern, criteria)
            .with_own_read_concern(own_read_concern);
        let settings = self.coll.operation_settings(&self.overrides);
        execute(self.coll.client(), op, self.session, &settings).await
    }
}

action_future!(Count<'a, T> where [T: Send + Sync + 'a] => u64);
