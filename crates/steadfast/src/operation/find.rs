//! The `find` command.

use bson::raw::cstr;
use bson::{Document, RawDocumentBuf};
use steadfast_core::options::ReadConcern;
use steadfast_core::selection::SelectionCriteria;

use super::fields::put_raw;
use super::write::encode;
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::Result;
use crate::namespace::Namespace;
use crate::options::{CursorType, FindOptions, Hint, duration_ms};

/// `find`: opens a cursor over the matching documents.
#[derive(Debug)]
pub(crate) struct Find {
    ns: Namespace,
    filter: Document,
    options: FindOptions,
    /// `find_one`: `limit: 1`, `singleBatch: true` and no `batchSize`.
    single: bool,
    read_concern: Option<ReadConcern>,
    /// The application set `read_concern` on the operation itself (it was not inherited).
    own_read_concern: bool,
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
            own_read_concern: false,
            criteria,
        }
    }

    /// Marks the read concern as the application's own, set on the operation.
    pub(crate) fn with_own_read_concern(mut self, own: bool) -> Self {
        self.own_read_concern = own;
        self
    }

    /// The `find` of `find_one`.
    pub(crate) fn single(mut self) -> Self {
        self.single = true;
        self
    }

    /// The body, written as BSON (`find` is a hot command: no map is built to be encoded).
    fn body(&self) -> Result<RawDocumentBuf> {
        let o = &self.options;
        let mut body = RawDocumentBuf::new();
        body.append(cstr!("find"), self.ns.coll.as_str());
        body.append(cstr!("filter"), encode(&self.filter)?);
        put_raw(&mut body, cstr!("sort"), o.sort.clone())?;
        put_raw(&mut body, cstr!("projection"), o.projection.clone())?;
        put_raw(&mut body, cstr!("hint"), o.hint.as_ref().map(Hint::to_bson))?;
        let skip = o.skip.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        put_raw(&mut body, cstr!("skip"), skip)?;
        let (limit, batch_size, single_batch) = self.limit_and_batch_size();
        put_raw(&mut body, cstr!("limit"), limit)?;
        put_raw(&mut body, cstr!("batchSize"), batch_size)?;
        if single_batch {
            body.append(cstr!("singleBatch"), true);
        }
        put_raw(&mut body, cstr!("comment"), o.comment.clone())?;
        put_raw(&mut body, cstr!("maxTimeMS"), o.max_time.map(duration_ms))?;
        put_raw(&mut body, cstr!("max"), o.max.clone())?;
        put_raw(&mut body, cstr!("min"), o.min.clone())?;
        let max_scan = o.max_scan.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        put_raw(&mut body, cstr!("maxScan"), max_scan)?;
        put_raw(&mut body, cstr!("returnKey"), o.return_key)?;
        put_raw(&mut body, cstr!("showRecordId"), o.show_record_id)?;
        match o.cursor_type {
            Some(CursorType::Tailable) => {
                body.append(cstr!("tailable"), true);
            }
            Some(CursorType::TailableAwait) => {
                body.append(cstr!("tailable"), true);
                body.append(cstr!("awaitData"), true);
            }
            Some(CursorType::NonTailable) | None => {}
        }
        put_raw(&mut body, cstr!("noCursorTimeout"), o.no_cursor_timeout)?;
        put_raw(
            &mut body,
            cstr!("allowPartialResults"),
            o.allow_partial_results,
        )?;
        put_raw(&mut body, cstr!("collation"), o.collation.clone())?;
        put_raw(&mut body, cstr!("allowDiskUse"), o.allow_disk_use)?;
        put_raw(&mut body, cstr!("let"), o.let_vars.clone())?;
        Ok(body)
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
        Ok(Command::raw("find", self.ns.db.clone(), self.body()?))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<CursorReply> {
        CursorReply::parse(&reply, "find").map(|cursor| cursor.with_raw(reply))
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

    fn has_own_read_concern(&self) -> bool {
        self.own_read_concern
    }
}
