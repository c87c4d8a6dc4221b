//! `Collection::create_index` and `Collection::create_indexes`.

use std::time::Duration;

use bson::{Bson, doc};
use steadfast_core::options::WriteConcern;

use super::run::execute;
use crate::coll::Collection;
use crate::error::{Error, Result};
use crate::operation::admin::CatalogCommand;
use crate::operation::fields::{put, put_max_time};
use crate::operation::settings::OperationOverrides;
use crate::options::{CreateIndexOptions, IndexModel};
use crate::results::{CreateIndexResult, CreateIndexesResult};
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
    /// Creates one index (nothing happens if an identical one exists).
    pub fn create_index(&self, index: IndexModel) -> CreateIndex<'_, T> {
        CreateIndex {
            inner: self.create_indexes([index]),
        }
    }

    /// Creates several indexes with one `createIndexes` command.
    pub fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
    ) -> CreateIndexes<'_, T> {
        CreateIndexes {
            coll: self,
            indexes: indexes.into_iter().collect(),
            options: CreateIndexOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Collection::create_index`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateIndex<'a, T: Send + Sync> {
    inner: CreateIndexes<'a, T>,
}

impl<'a, T: Send + Sync> CreateIndex<'a, T> {
    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<CreateIndexOptions>>) -> Self {
        self.inner = self.inner.with_options(options);
        self
    }

    /// Runs the operation in an explicit session.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.inner = self.inner.session(session);
        self
    }

    /// Sets timeoutMS for this operation alone (see [`CreateIndexes::timeout`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner = self.inner.timeout(timeout);
        self
    }

    /// Sets [`CreateIndexOptions::commit_quorum`](crate::options::CreateIndexOptions::commit_quorum).
    pub fn commit_quorum(mut self, value: crate::options::CommitQuorum) -> Self {
        self.inner = self.inner.commit_quorum(value);
        self
    }

    /// Sets [`CreateIndexOptions::max_time`](crate::options::CreateIndexOptions::max_time).
    pub fn max_time(mut self, value: Duration) -> Self {
        self.inner = self.inner.max_time(value);
        self
    }

    /// Sets [`CreateIndexOptions::write_concern`](crate::options::CreateIndexOptions::write_concern).
    pub fn write_concern(mut self, value: WriteConcern) -> Self {
        self.inner = self.inner.write_concern(value);
        self
    }

    /// Sets [`CreateIndexOptions::comment`](crate::options::CreateIndexOptions::comment).
    pub fn comment(mut self, value: impl Into<Bson>) -> Self {
        self.inner = self.inner.comment(value);
        self
    }

    /// Sets the retry policy for this operation alone (see [`CreateIndexes::retry_policy`]).
    pub fn retry_policy(mut self, policy: std::sync::Arc<dyn crate::retries::RetryPolicy>) -> Self {
        self.inner = self.inner.retry_policy(policy);
        self
    }

    /// Runs the operation within a deadline started by another (see [`CreateIndexes::within`]).
    pub(crate) fn within(mut self, deadline: steadfast_core::Deadline) -> Self {
        self.inner = self.inner.within(deadline);
        self
    }

    async fn execute(self) -> Result<CreateIndexResult> {
        let mut names = self.inner.execute().await?.index_names;
        let index_name = names
            .pop()
            .ok_or_else(|| Error::invalid_argument("no index to create"))?;
        Ok(CreateIndexResult { index_name })
    }
}

action_future!(CreateIndex<'a, T> where [T: Send + Sync + 'a] => CreateIndexResult);

/// The action of [`Collection::create_indexes`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateIndexes<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    indexes: Vec<IndexModel>,
    options: CreateIndexOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> CreateIndexes<'a, T> {
    options_and_session!(CreateIndexOptions);
    option_setters!(CreateIndexOptions;
        commit_quorum: crate::options::CommitQuorum,
        max_time: Duration,
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<CreateIndexesResult> {
        if self.indexes.is_empty() {
            return Err(Error::invalid_argument(
                "create_indexes needs at least one index",
            ));
        }
        if let Some(position) = self.indexes.iter().position(|i| i.keys.is_empty()) {
            return Err(Error::invalid_argument(format!(
                "index {position} has no keys"
            )));
        }
        let index_names: Vec<String> = self.indexes.iter().map(IndexModel::name).collect();
        let o = self.options;
        let mut body = doc! {
            "createIndexes": self.coll.name(),
            "indexes": self.indexes.iter().map(|i| Bson::Document(i.to_spec())).collect::<Vec<_>>(),
        };
        put(&mut body, "commitQuorum", o.commit_quorum);
        put_max_time(&mut body, o.max_time);
        put(&mut body, "comment", o.comment);
        let write_concern = self.coll.resolve_write_concern(o.write_concern);
        let op = CatalogCommand::new("createIndexes", &self.coll.ns().db, body, write_concern)?;
        let settings = self.coll.operation_settings(&self.overrides);
        execute(self.coll.client(), op, self.session, &settings).await?;
        Ok(CreateIndexesResult { index_names })
    }
}

action_future!(CreateIndexes<'a, T> where [T: Send + Sync + 'a] => CreateIndexesResult);
