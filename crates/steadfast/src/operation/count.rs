//! `count` (for `estimated_document_count`) and `distinct`.

use bson::{Bson, Document, RawDocumentBuf};
use steadfast_core::options::ReadConcern;
use steadfast_core::selection::SelectionCriteria;

use super::fields::{put, put_max_time, reply_count};
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::error::{Error, Result};
use crate::namespace::Namespace;
use crate::options::{CountOptions, DistinctOptions, EstimatedDocumentCountOptions, append_hint};

/// The `count` command: without a query, the collection's document count from its metadata
/// (`estimated_document_count`); with one, the deprecated `count` helper's count of matching
/// documents.
#[derive(Debug)]
pub(crate) struct CountCommand {
    ns: Namespace,
    /// The filter of the deprecated helper; `None` for the estimate, which sends no `query`.
    query: Option<Document>,
    options: CountOptions,
    read_concern: Option<ReadConcern>,
    /// The application set `read_concern` on the operation itself (it was not inherited).
    own_read_concern: bool,
    criteria: SelectionCriteria,
}

impl CountCommand {
    /// Estimates the document count of `ns` from its metadata.
    pub(crate) fn estimated(
        ns: Namespace,
        options: EstimatedDocumentCountOptions,
        read_concern: Option<ReadConcern>,
        criteria: SelectionCriteria,
    ) -> Self {
        let count = CountOptions {
            comment: options.comment,
            max_time: options.max_time,
            ..CountOptions::default()
        };
        CountCommand {
            ns,
            query: None,
            options: count,
            read_concern,
            own_read_concern: false,
            criteria,
        }
    }

    /// Counts the documents of `ns` matching `filter` with the `count` command (the
    /// deprecated helper).
    pub(crate) fn filtered(
        ns: Namespace,
        filter: Document,
        options: CountOptions,
        read_concern: Option<ReadConcern>,
        criteria: SelectionCriteria,
    ) -> Self {
        CountCommand {
            ns,
            query: Some(filter),
            options,
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
}

impl Operation for CountCommand {
    type Output = u64;

    fn name(&self) -> &str {
        "count"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        let options = &self.options;
        let mut body = Document::new();
        body.insert("count", self.ns.coll.clone());
        put(&mut body, "query", self.query.clone());
        put(&mut body, "limit", options.limit.map(count_field));
        put(&mut body, "skip", options.skip.map(count_field));
        put(&mut body, "collation", options.collation.clone());
        append_hint(&mut body, options.hint.as_ref());
        put_max_time(&mut body, options.max_time);
        put(&mut body, "comment", options.comment.clone());
        Ok(Command::new("count", self.ns.db.clone(), body))
    }

    fn handle_reply(&mut self, reply: RawDocumentBuf, _context: &ReplyContext<'_>) -> Result<u64> {
        reply_count(&reply, "n", "count")
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

/// A `limit` or `skip` as the server reads it: an int64 (saturating; no collection holds
/// more than `i64::MAX` documents).
fn count_field(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `distinct`: the distinct values of a field among the matching documents.
#[derive(Debug)]
pub(crate) struct Distinct {
    ns: Namespace,
    field: String,
    filter: Document,
    options: DistinctOptions,
    read_concern: Option<ReadConcern>,
    /// The application set `read_concern` on the operation itself (it was not inherited).
    own_read_concern: bool,
    criteria: SelectionCriteria,
}

impl Distinct {
    /// The distinct values of `field` in `ns` among documents matching `filter`.
    pub(crate) fn new(
        ns: Namespace,
        field: String,
        filter: Document,
        options: DistinctOptions,
        read_concern: Option<ReadConcern>,
        criteria: SelectionCriteria,
    ) -> Self {
        Distinct {
            ns,
            field,
            filter,
            options,
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
}

impl Operation for Distinct {
    type Output = Vec<Bson>;

    fn name(&self) -> &str {
        "distinct"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        let mut body = Document::new();
        body.insert("distinct", self.ns.coll.clone());
        body.insert("key", self.field.clone());
        body.insert("query", self.filter.clone());
        put(&mut body, "collation", self.options.collation.clone());
        put(&mut body, "comment", self.options.comment.clone());
        append_hint(&mut body, self.options.hint.as_ref());
        put_max_time(&mut body, self.options.max_time);
        Ok(Command::new("distinct", self.ns.db.clone(), body))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<Vec<Bson>> {
        let reply = Document::try_from(reply)
            .map_err(|e| Error::protocol("the distinct reply is not valid BSON").with_source(e))?;
        match reply.get("values") {
            Some(Bson::Array(values)) => Ok(values.clone()),
            _ => Err(Error::protocol("the distinct reply has no `values` array")),
        }
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
