//! `Collection::distinct`.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast_core::options::ReadConcern;

use super::run::execute;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::count::Distinct as DistinctOp;
use crate::operation::settings::OperationOverrides;
use crate::options::{DistinctOptions, Hint};
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
    /// The distinct values of `field` among the documents matching `filter`.
    pub fn distinct(&self, field: impl AsRef<str>, filter: Document) -> Distinct<'_, T> {
        Distinct {
            coll: self,
            field: field.as_ref().to_string(),
            filter,
            options: DistinctOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Collection::distinct`].
#[must_use = "an action does nothing until awaited"]
pub struct Distinct<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    field: String,
    filter: Document,
    options: DistinctOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> Distinct<'a, T> {
    options_and_session!(DistinctOptions);
    option_setters!(DistinctOptions;
        collation: crate::options::Collation,
        comment: #[into] Bson,
        hint: #[into] Hint,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
    );

    async fn execute(self) -> Result<Vec<Bson>> {
        let mut options = self.options;
        let own_read_concern = options.read_concern.is_some();
        let read_concern = self.coll.resolve_read_concern(options.read_concern.take());
        let criteria = self
            .coll
            .resolve_criteria(options.selection_criteria.take());
        let op = DistinctOp::new(
            self.coll.ns().clone(),
            self.field,
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

action_future!(Distinct<'a, T> where [T: Send + Sync + 'a] => Vec<Bson>);
