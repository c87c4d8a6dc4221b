//! `bulk_write`: mixed write models in as few commands as possible, on one collection
//! (`Collection::bulk_write`, with the `insert`/`update`/`delete` commands) or on any
//! namespaces (`Client::bulk_write`, with the server's `bulkWrite` command, 8.0+).

use std::future::IntoFuture;
use std::marker::PhantomData;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use serde::Serialize;
use steadfast_core::options::WriteConcern;

use crate::bulk::models::WriteModel;
use crate::bulk::plan::BulkPlan;
use crate::client::Client;
use crate::client_bulk::run::{BulkCall, run};
use crate::client_bulk::{
    SummaryBulkWriteResult, VerboseBulkWriteResult, WriteModel as ClientWriteModel,
};
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

    async fn execute(self) -> Result<BulkWriteResult> {
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

impl Client {
    /// Runs write models against any namespaces of the deployment with the server's
    /// `bulkWrite` command (servers 8.0+), in as few commands as the server's limits allow
    /// (`maxWriteBatchSize`, `maxMessageSizeBytes`). Ordered by default: stops at the first
    /// write error. Await the returned action for the totals
    /// ([`SummaryBulkWriteResult`]), or call
    /// [`verbose_results`](ClientBulkWrite::verbose_results) first for each model's own
    /// result too.
    ///
    /// Each command is a retryable write (its own `txnNumber`, retried once after a retryable
    /// error) when none of its models is an `UpdateMany` or `DeleteMany`.
    ///
    /// ```no_run
    /// # async fn demo(client: steadfast::Client) -> steadfast::Result<()> {
    /// use bson::doc;
    /// use steadfast::Namespace;
    /// use steadfast::options::{DeleteOneModel, InsertOneModel, WriteModel};
    ///
    /// let orders = Namespace::new("shop", "orders");
    /// let audit = Namespace::new("log", "audit");
    /// let models: Vec<WriteModel> = vec![
    ///     InsertOneModel::builder()
    ///         .namespace(orders.clone())
    ///         .document(doc! { "_id": 1, "item": "pen" })
    ///         .build()
    ///         .into(),
    ///     InsertOneModel::builder()
    ///         .namespace(audit)
    ///         .document(doc! { "order": 1 })
    ///         .build()
    ///         .into(),
    ///     DeleteOneModel::builder()
    ///         .namespace(orders)
    ///         .filter(doc! { "_id": 0 })
    ///         .build()
    ///         .into(),
    /// ];
    /// let result = client.bulk_write(models).verbose_results().await?;
    /// assert_eq!(result.summary.inserted_count, 2);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// - `InvalidArgument`, before anything is sent: an empty list, an invalid model (an update
    ///   without operators, a replacement with them), a document over the server's
    ///   `maxBsonObjectSize`, or an unacknowledged write concern with ordered writes or verbose
    ///   results.
    /// - [`ErrorKind::BulkWrite`](crate::ErrorKind::BulkWrite): write errors keyed by the
    ///   model's position, every write concern error, and the partial result when anything
    ///   was applied.
    /// - A top-level error (command, network, timeout): as is when nothing had been observed
    ///   yet, else inside `BulkWrite` as its source.
    ///
    /// Every failure carries [`Error::partial_write`](crate::Error::partial_write): the models
    /// applied, refused, never executed, and those of a batch whose reply was lost, reported
    /// as of unknown outcome rather than as not applied.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<ClientWriteModel>>,
    ) -> ClientBulkWrite<'_, SummaryBulkWriteResult> {
        ClientBulkWrite {
            client: self,
            models: models.into_iter().map(Into::into).collect(),
            options: BulkWriteOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
            shape: PhantomData,
        }
    }
}

/// The action of [`Client::bulk_write`]; await it. `R` is the result shape:
/// [`SummaryBulkWriteResult`] or, after [`verbose_results`](Self::verbose_results),
/// [`VerboseBulkWriteResult`].
#[must_use = "an action does nothing until awaited"]
pub struct ClientBulkWrite<'a, R> {
    client: &'a Client,
    models: Vec<ClientWriteModel>,
    options: BulkWriteOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
    shape: PhantomData<fn() -> R>,
}

impl<'a> ClientBulkWrite<'a, SummaryBulkWriteResult> {
    /// Returns each model's own result as well as the totals (the server then reports every
    /// model, not only the failed ones).
    pub fn verbose_results(self) -> ClientBulkWrite<'a, VerboseBulkWriteResult> {
        ClientBulkWrite {
            client: self.client,
            models: self.models,
            options: self.options,
            overrides: self.overrides,
            session: self.session,
            shape: PhantomData,
        }
    }
}

impl<'a, R> ClientBulkWrite<'a, R> {
    options_and_session!(BulkWriteOptions);
    option_setters!(BulkWriteOptions;
        ordered: bool,
        bypass_document_validation: bool,
        write_concern: WriteConcern,
        let_vars: #[into] Document,
        comment: #[into] Bson,
    );

    fn call(self) -> BulkCall<'a> {
        BulkCall {
            client: self.client,
            models: self.models,
            options: self.options,
            session: self.session,
            overrides: self.overrides,
        }
    }
}

impl<'a> IntoFuture for ClientBulkWrite<'a, SummaryBulkWriteResult> {
    type Output = Result<SummaryBulkWriteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(run::<SummaryBulkWriteResult>(self.call()))
    }
}

impl<'a> IntoFuture for ClientBulkWrite<'a, VerboseBulkWriteResult> {
    type Output = Result<VerboseBulkWriteResult>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(run::<VerboseBulkWriteResult>(self.call()))
    }
}
