//! `aggregate`, on a collection or a whole database, and `countDocuments` built on it.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};
use steadfast_core::options::{ReadConcern, WriteConcern};
use steadfast_core::selection::SelectionCriteria;

use super::fields::{pipeline_writes, put, put_max_time};
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::{Error, Result};
use crate::options::{AggregateOptions, CountOptions, append_hint};

/// What an aggregation runs against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AggregateTarget {
    /// A collection: `aggregate: "<name>"`.
    Collection {
        /// The database.
        db: String,
        /// The collection.
        coll: String,
    },
    /// Collection-less stages (`$currentOp`, ...): `aggregate: 1`.
    Database(String),
}

/// `aggregate`: opens a cursor over the pipeline's output. A pipeline ending in `$out` or
/// `$merge` writes: it carries the write concern, is not a retryable read, and keeps its read
/// preference only where every server is 5.0+ (else it goes to the primary).
#[derive(Debug)]
pub(crate) struct Aggregate {
    target: AggregateTarget,
    pipeline: Vec<Document>,
    options: AggregateOptions,
    read_concern: Option<ReadConcern>,
    write_concern: Option<WriteConcern>,
    criteria: SelectionCriteria,
    writes: bool,
    /// The application set the read concern, the write concern, on the operation itself.
    own_concerns: (bool, bool),
}

impl Aggregate {
    /// An aggregation with already resolved concerns and read preference. `write_concern` is
    /// kept only when the pipeline writes.
    pub(crate) fn new(
        target: AggregateTarget,
        pipeline: Vec<Document>,
        options: AggregateOptions,
        read_concern: Option<ReadConcern>,
        write_concern: Option<WriteConcern>,
        criteria: SelectionCriteria,
    ) -> Self {
        let writes = pipeline_writes(&pipeline);
        Aggregate {
            target,
            pipeline,
            options,
            read_concern,
            write_concern: write_concern.filter(|_| writes),
            criteria,
            writes,
            own_concerns: (false, false),
        }
    }

    /// Marks the read concern and the write concern as the application's own, set on the
    /// operation.
    pub(crate) fn with_own_concerns(mut self, read: bool, write: bool) -> Self {
        self.own_concerns = (read, write);
        self
    }

    fn body(&self) -> (String, Document) {
        let o = &self.options;
        let mut body = Document::new();
        let db = match &self.target {
            AggregateTarget::Collection { db, coll } => {
                body.insert("aggregate", coll.clone());
                db.clone()
            }
            AggregateTarget::Database(db) => {
                body.insert("aggregate", 1);
                db.clone()
            }
        };
        body.insert(
            "pipeline",
            self.pipeline
                .iter()
                .cloned()
                .map(Bson::Document)
                .collect::<Vec<_>>(),
        );
        // A batch size would stop a writing pipeline from running to completion.
        let batch_size = o.batch_size.filter(|_| !self.writes).map(i64::from);
        let mut cursor = Document::new();
        put(&mut cursor, "batchSize", batch_size);
        body.insert("cursor", cursor);
        put(&mut body, "allowDiskUse", o.allow_disk_use);
        if self.writes {
            put(
                &mut body,
                "bypassDocumentValidation",
                o.bypass_document_validation,
            );
        }
        put(&mut body, "collation", o.collation.clone());
        put(&mut body, "comment", o.comment.clone());
        append_hint(&mut body, o.hint.as_ref());
        put(&mut body, "let", o.let_vars.clone());
        put_max_time(&mut body, o.max_time);
        (db, body)
    }
}

impl Operation for Aggregate {
    type Output = CursorReply;

    fn name(&self) -> &str {
        "aggregate"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        let (db, body) = self.body();
        Ok(Command::new("aggregate", db, body))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<CursorReply> {
        CursorReply::parse(&reply, "aggregate").map(|cursor| cursor.with_raw(reply))
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        self.criteria.clone()
    }

    fn has_write_stage(&self) -> bool {
        self.writes
    }

    fn retryability(&self) -> Retryability {
        if self.writes {
            Retryability::None
        } else {
            Retryability::Read
        }
    }

    fn idempotent(&self) -> bool {
        // $merge can apply its updates twice; $out replaces the target wholesale, but may
        // still race another writer: neither is treated as idempotent.
        !self.writes
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.write_concern.as_ref()
    }

    fn read_concern(&self) -> Option<&ReadConcern> {
        self.read_concern.as_ref()
    }

    fn has_own_read_concern(&self) -> bool {
        self.own_concerns.0
    }

    fn has_own_write_concern(&self) -> bool {
        self.own_concerns.1
    }
}

/// `countDocuments`: `$match`, optional `$skip`/`$limit`, then `$group` with `$sum: 1`. The count
/// is the `n` of the single result; an empty result means 0.
#[derive(Debug)]
pub(crate) struct CountDocuments {
    aggregate: Aggregate,
}

impl CountDocuments {
    /// Counts the documents of `db.coll` matching `filter`.
    pub(crate) fn new(
        db: String,
        coll: String,
        filter: Document,
        options: CountOptions,
        read_concern: Option<ReadConcern>,
        criteria: SelectionCriteria,
    ) -> Self {
        let mut pipeline = vec![doc! { "$match": filter }];
        if let Some(skip) = options.skip {
            pipeline.push(doc! { "$skip": i64::try_from(skip).unwrap_or(i64::MAX) });
        }
        if let Some(limit) = options.limit {
            pipeline.push(doc! { "$limit": i64::try_from(limit).unwrap_or(i64::MAX) });
        }
        pipeline.push(doc! { "$group": { "_id": 1, "n": { "$sum": 1 } } });
        let aggregate_options = AggregateOptions {
            collation: options.collation,
            comment: options.comment,
            hint: options.hint,
            max_time: options.max_time,
            ..AggregateOptions::default()
        };
        CountDocuments {
            aggregate: Aggregate::new(
                AggregateTarget::Collection { db, coll },
                pipeline,
                aggregate_options,
                read_concern,
                None,
                criteria,
            ),
        }
    }

    /// Marks the read concern as the application's own, set on the operation.
    pub(crate) fn with_own_read_concern(mut self, own: bool) -> Self {
        self.aggregate.own_concerns.0 = own;
        self
    }
}

impl Operation for CountDocuments {
    type Output = u64;

    fn name(&self) -> &str {
        "aggregate"
    }

    fn build(&mut self, description: &StreamDescription) -> Result<Command> {
        self.aggregate.build(description)
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, context: &ReplyContext<'_>) -> Result<u64> {
        let cursor = self.aggregate.handle_reply(reply, context)?;
        let Some(first) = cursor.first_batch.front() else {
            return Ok(0);
        };
        match first.get("n") {
            Ok(Some(RawBsonRef::Int32(n))) => u64::try_from(n).ok(),
            Ok(Some(RawBsonRef::Int64(n))) => u64::try_from(n).ok(),
            // $sum of 1s is integral; a double count is whole.
            Ok(Some(RawBsonRef::Double(n))) if n.fract() == 0.0 && n >= 0.0 => Some(n as u64),
            _ => None,
        }
        .ok_or_else(|| Error::protocol("the countDocuments result has no valid `n` field"))
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        self.aggregate.selection_criteria()
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }

    fn read_concern(&self) -> Option<&ReadConcern> {
        self.aggregate.read_concern()
    }

    fn has_own_read_concern(&self) -> bool {
        self.aggregate.has_own_read_concern()
    }
}
