//! Search index management: `createSearchIndexes`, `updateSearchIndex`, `dropSearchIndex` and
//! the `$listSearchIndexes` aggregation stage. As the index management specification requires,
//! none of them sends a read or write concern, inherited or not.

/// `with_options` for a search index action: the official driver's options structs have no
/// field yet, so it is accepted so that code passing one compiles, and changes nothing sent.
macro_rules! search_index_options_setter {
    ($options:ident) => {
        #[doc = concat!("Sets the operation's [`", stringify!($options), "`](crate::options::", stringify!($options), "), which has no field yet.")]
        pub fn with_options(self, options: impl Into<Option<crate::options::$options>>) -> Self {
            let _no_fields_yet: Option<crate::options::$options> = options.into();
            self
        }
    };
}

use std::future::IntoFuture;

use bson::{Bson, Document, doc};
use futures_util::future::BoxFuture;

use super::Aggregate;
use super::run::execute;
use crate::coll::Collection;
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::executor::run_command::RunCommand as RunCommandOp;
use crate::operation::aggregate::AggregateTarget;
use crate::operation::settings::OperationOverrides;
use crate::options::AggregateOptions;
use crate::search_index::SearchIndexModel;
use steadfast_core::selection::SelectionCriteria;

/// The server's code for a namespace that does not exist, which `dropSearchIndex` ignores.
const NAMESPACE_NOT_FOUND: i32 = 26;

impl<T: Send + Sync> Collection<T> {
    /// Creates several search indexes (Atlas only: other deployments refuse the command).
    /// Awaiting the action returns the names the server gave them, in order.
    pub fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> CreateSearchIndexes<'_, T> {
        CreateSearchIndexes {
            coll: self,
            models: models.into_iter().collect(),
            overrides: OperationOverrides::default(),
        }
    }

    /// Creates one search index; awaiting the action returns its name.
    pub fn create_search_index(&self, model: SearchIndexModel) -> CreateSearchIndex<'_, T> {
        CreateSearchIndex {
            inner: self.create_search_indexes([model]),
        }
    }

    /// Replaces the definition of the search index named `name`.
    pub fn update_search_index(
        &self,
        name: impl Into<String>,
        definition: Document,
    ) -> UpdateSearchIndex<'_, T> {
        UpdateSearchIndex {
            coll: self,
            name: name.into(),
            definition,
            overrides: OperationOverrides::default(),
        }
    }

    /// Drops the search index named `name` (a missing collection is not an error).
    pub fn drop_search_index(&self, name: impl Into<String>) -> DropSearchIndex<'_, T> {
        DropSearchIndex {
            coll: self,
            name: name.into(),
            overrides: OperationOverrides::default(),
        }
    }

    /// Lists the collection's search indexes (all, or the one named with `.name(..)`).
    /// Awaiting the action returns a cursor of the server's index descriptions.
    pub fn list_search_indexes(&self) -> ListSearchIndexes<'_, T> {
        ListSearchIndexes {
            coll: self,
            name: None,
            aggregate_options: None,
            overrides: OperationOverrides::default(),
        }
    }

    /// Runs a search index command on the primary, without any read or write concern.
    async fn run_search_index_command(
        &self,
        body: Document,
        overrides: &OperationOverrides,
    ) -> Result<Document> {
        let op = RunCommandOp::new(&self.ns().db, body, SelectionCriteria::primary_read())?;
        let settings = self.operation_settings(overrides);
        execute(self.client(), op, None, &settings).await
    }
}

/// The action of [`Collection::create_search_indexes`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateSearchIndexes<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    models: Vec<SearchIndexModel>,
    overrides: OperationOverrides,
}

impl<T: Send + Sync> CreateSearchIndexes<'_, T> {
    operation_overrides!();

    async fn execute(self) -> Result<Vec<String>> {
        let indexes = self
            .models
            .iter()
            .map(|model| bson::serialize_to_bson(model).map_err(Error::from))
            .collect::<Result<Vec<Bson>>>()?;
        let body = doc! { "createSearchIndexes": self.coll.ns().coll.as_str(), "indexes": indexes };
        let reply = self
            .coll
            .run_search_index_command(body, &self.overrides)
            .await?;
        created_names(&reply)
    }
}

action_future!(CreateSearchIndexes<'a, T> where [T: Send + Sync + 'a] => Vec<String>);

/// The names in a `createSearchIndexes` reply's `indexesCreated`.
fn created_names(reply: &Document) -> Result<Vec<String>> {
    let malformed = || Error::protocol("createSearchIndexes replied without indexesCreated names");
    reply
        .get_array("indexesCreated")
        .map_err(|_| malformed())?
        .iter()
        .map(|entry| {
            entry
                .as_document()
                .and_then(|entry| entry.get_str("name").ok())
                .map(str::to_string)
                .ok_or_else(malformed)
        })
        .collect()
}

/// The action of [`Collection::create_search_index`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateSearchIndex<'a, T: Send + Sync> {
    inner: CreateSearchIndexes<'a, T>,
}

impl<T: Send + Sync> CreateSearchIndex<'_, T> {
    search_index_options_setter!(CreateSearchIndexOptions);

    /// Overrides the client's timeoutMS for this operation.
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.inner = self.inner.timeout(timeout);
        self
    }

    async fn execute(self) -> Result<String> {
        let mut names = self.inner.execute().await?;
        match (names.pop(), names.is_empty()) {
            (Some(name), true) => Ok(name),
            _ => Err(Error::protocol(
                "createSearchIndexes did not name exactly the one index created",
            )),
        }
    }
}

action_future!(CreateSearchIndex<'a, T> where [T: Send + Sync + 'a] => String);

/// The action of [`Collection::update_search_index`].
#[must_use = "an action does nothing until awaited"]
pub struct UpdateSearchIndex<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    name: String,
    definition: Document,
    overrides: OperationOverrides,
}

impl<T: Send + Sync> UpdateSearchIndex<'_, T> {
    search_index_options_setter!(UpdateSearchIndexOptions);

    operation_overrides!();

    async fn execute(self) -> Result<()> {
        let body = doc! {
            "updateSearchIndex": self.coll.ns().coll.as_str(),
            "name": self.name,
            "definition": self.definition,
        };
        self.coll
            .run_search_index_command(body, &self.overrides)
            .await
            .map(drop)
    }
}

action_future!(UpdateSearchIndex<'a, T> where [T: Send + Sync + 'a] => ());

/// The action of [`Collection::drop_search_index`].
#[must_use = "an action does nothing until awaited"]
pub struct DropSearchIndex<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    name: String,
    overrides: OperationOverrides,
}

impl<T: Send + Sync> DropSearchIndex<'_, T> {
    search_index_options_setter!(DropSearchIndexOptions);

    operation_overrides!();

    async fn execute(self) -> Result<()> {
        let body = doc! { "dropSearchIndex": self.coll.ns().coll.as_str(), "name": self.name };
        match self
            .coll
            .run_search_index_command(body, &self.overrides)
            .await
        {
            Err(error) if error.code() == Some(NAMESPACE_NOT_FOUND) => Ok(()),
            other => other.map(drop),
        }
    }
}

action_future!(DropSearchIndex<'a, T> where [T: Send + Sync + 'a] => ());

/// The action of [`Collection::list_search_indexes`].
#[must_use = "an action does nothing until awaited"]
pub struct ListSearchIndexes<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    name: Option<String>,
    aggregate_options: Option<AggregateOptions>,
    overrides: OperationOverrides,
}

impl<'a, T: Send + Sync> ListSearchIndexes<'a, T> {
    search_index_options_setter!(ListSearchIndexOptions);

    operation_overrides!();
    timeout_mode_setter!();

    /// Lists only the index named `name`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The options of the `aggregate` that lists them (batch size, comment, ...).
    pub fn aggregate_options(mut self, options: AggregateOptions) -> Self {
        self.aggregate_options = Some(options);
        self
    }

    fn aggregation(self) -> Aggregate<'a> {
        let mut stage = Document::new();
        if let Some(name) = self.name {
            stage.insert("name", name);
        }
        let ns = self.coll.ns();
        let target = AggregateTarget::Collection {
            db: ns.db.clone(),
            coll: ns.coll.clone(),
        };
        let inherited = self.coll.inherited().without_concerns();
        let mut aggregate = Aggregate::new(
            self.coll.client(),
            target,
            vec![doc! { "$listSearchIndexes": stage }],
            inherited,
        )
        .with_options(self.aggregate_options);
        let overrides = self.overrides;
        if let Some(timeout) = overrides.timeout {
            aggregate = aggregate.timeout(timeout);
        }
        if let Some(policy) = overrides.retry_policy {
            aggregate = aggregate.retry_policy(policy);
        }
        if let Some(mode) = overrides.timeout_mode {
            aggregate = aggregate.timeout_mode(mode);
        }
        aggregate
    }
}

impl<'a, T: Send + Sync> IntoFuture for ListSearchIndexes<'a, T> {
    type Output = Result<Cursor<Document>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        self.aggregation().into_future()
    }
}
