//! Client-level bulk writes (`Client::bulk_write`): write models that each name their own
//! namespace, sent with the server's `bulkWrite` command (8.0+).
//!
//! The models are encoded and checked once, before anything is sent. They then go in batches:
//! each batch holds as many models as fit the selected server's `maxWriteBatchSize` and
//! `maxMessageSizeBytes` (less the specification's 1000-byte allowance), as the `ops` and
//! `nsInfo` OP_MSG document sequences, and is one command with its own `txnNumber` (a
//! retryable write unless it may hold an `UpdateMany`/`DeleteMany`). Each batch's results
//! cursor is read to its end with `getMore` on the batch's session (killed if a fetch fails).
//! An ordered bulk stops after the batch with the first write error; write concern errors are
//! collected and reported at the end; a top-level error stops the bulk at once, and the models
//! of the batch it hit are reported as of unknown outcome unless the executor knows that no
//! attempt ran.

mod accumulate;
mod batch;
mod models;
pub(crate) mod results;
pub(crate) mod run;

pub use models::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateOneModel, WriteModel,
};
pub use results::{PartialBulkWriteResult, SummaryBulkWriteResult, VerboseBulkWriteResult};
#[cfg(test)]
mod tests;
