//! The `find` command.

use bson::{Document, RawDocumentBuf};
use steadfast_core::options::ReadConcern;
use steadfast_core::selection::SelectionCriteria;

use super::fields::{put, put_max_time};
use super::{Command, Operation, ReplyContext, Retryability};
use crate::coll::Namespace;
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::Result;
use crate::options::{CursorType, FindOptions, append_hint};

/// `find`: opens a cursor over the matching documents.
#[derive(Debug)]
pub(crate) struct Find {
    ns: Namespace,
    filter: Document,
    options: FindOptions,
    /// `find_one`: `limit: 1`, `singleBatch: true` and no `batchSize`.
    single: bool,
    read_concern: Option<ReadConcern>,
    criteria: SelectionCriteria,
}

impl Find {
    /// A `find` with already resolved read concern and read preference.
    pub(crate) fn new(
        ns: Namespace,
        filter: Document,
        options: FindOptions,
        read_concern: Option<ReadConcern>,
        criteria: SelectionCriteria,
    ) -> Self {
        Find {
            ns,
            filter,
            options,
            single: false,
            read_concern,
            criteria,
        }
    }

    /// The `find` of `find_one`.
    pub(crate) fn single(mut self) -> Self {
        self.single = true;
        self
    }

    fn body(&self) -> Document {
        let o = &self.options;
        let mut body = Document::new();
        body.insert("find", self.ns.coll.clone());
        body.insert("filter", self.filter.clone());
        put(&mut body, "sort", o.sort.clone());
        put(&mut body, "projection", o.projection.clone());
        if let Some(hint) = &o.hint {
            append_hint(&mut body, Some(hint));
        }
        if let Some(skip) = o.skip {
            body.insert("skip", i64::try_from(skip).unwrap_or(i64::MAX));
        }
        let (limit, batch_size, single_batch) = self.limit_and_batch_size();
        put(&mut body, "limit", limit);
        put(&mut body, "batchSize", batch_size);
        if single_batch {
            body.insert("singleBatch", true);
        }
        put(&mut body, "comment", o.comment.clone());
        put_max_time(&mut body, o.max_time);
        put(&mut body, "max", o.max.clone());
        put(&mut body, "min", o.min.clone());
        put(
            &mut body,
            "maxScan",
            o.max_scan.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
        );
        put(&mut body, "returnKey", o.return_key);
        put(&mut body, "showRecordId", o.show_record_id);
        match o.cursor_type {
            Some(CursorType::Tailable) => {
                body.insert("tailable", true);
            }
            Some(CursorType::TailableAwait) => {
                body.insert("tailable", true);
                body.insert("awaitData", true);
            }
            Some(CursorType::NonTailable) | None => {}
        }
        put(&mut body, "noCursorTimeout", o.no_cursor_timeout);
        put(&mut body, "allowPartialResults", o.allow_partial_results);
        put(&mut body, "collation", o.collation.clone());
        put(&mut body, "allowDiskUse", o.allow_disk_use);
        put(&mut body, "let", o.let_vars.clone());
        body
    }

    /// `limit`, `batchSize` and `singleBatch` as sent, following the find/getMore
    /// specification's mapping (a negative limit asks for one batch) and CRUD's rule that a
    /// `batchSize` equal to the limit is sent as `limit + 1`, so the server closes the cursor
    /// itself instead of leaving one to kill.
    fn limit_and_batch_size(&self) -> (Option<i64>, Option<i64>, bool) {
        if self.single {
            return (Some(1), None, true);
        }
        let limit = self.options.limit.unwrap_or(0);
        let single_batch = limit < 0;
        let limit = limit.checked_abs().unwrap_or(i64::MAX);
        let batch_size = i64::from(self.options.batch_size.unwrap_or(0));
        let batch_size = if single_batch {
            limit
        } else if limit != 0 && batch_size == limit {
            limit.saturating_add(1)
        } else {
            batch_size
        };
        (
            (limit != 0).then_some(limit),
            (batch_size != 0).then_some(batch_size),
            single_batch,
        )
    }
}

impl Operation for Find {
    type Output = CursorReply;

    fn name(&self) -> &str {
        "find"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new("find", self.ns.db.clone(), self.body()))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<CursorReply> {
        CursorReply::parse(&reply, "find")
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        self.criteria.clone()
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }

    fn read_concern(&self) -> Option<&ReadConcern> {
        self.read_concern.as_ref()
    }
}
