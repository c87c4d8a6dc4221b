//! The `aggregate` that opens (or reopens) a change stream: a `$changeStream` stage ahead of the
//! application's pipeline, with the starting point the stream resumes from.

use bson::{Bson, Document, RawBson, RawBsonRef, RawDocumentBuf, Timestamp, doc};
use steadfast_core::change_stream::ResumeStart;
use steadfast_core::options::ReadConcern;
use steadfast_core::selection::SelectionCriteria;

use super::aggregate::{Aggregate, AggregateTarget};
use super::fields::put;
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::cursor::CursorReply;
use crate::error::{Error, Result};
use crate::options::{AggregateOptions, ChangeStreamOptions};

/// Everything needed to open the stream again on resume: fixed when `watch()` runs.
#[derive(Clone, Debug)]
pub(crate) struct ChangeStreamSpec {
    pub(crate) target: AggregateTarget,
    pub(crate) pipeline: Vec<Document>,
    pub(crate) options: ChangeStreamOptions,
    /// A cluster-wide stream (`Client::watch`, on `admin`).
    pub(crate) all_changes_for_cluster: bool,
    pub(crate) read_concern: Option<ReadConcern>,
    /// The read preference, used again to select a server on resume.
    pub(crate) criteria: SelectionCriteria,
}

impl ChangeStreamSpec {
    /// The `aggregate` that opens the stream: from the options' own starting point (`None`),
    /// or from the one a resume chose.
    pub(crate) fn aggregate(&self, resume: Option<&ResumeStart>) -> Result<ChangeStreamAggregate> {
        let mut pipeline = Vec::with_capacity(self.pipeline.len().saturating_add(1));
        pipeline.push(doc! { "$changeStream": self.stage(resume)? });
        pipeline.extend(self.pipeline.iter().cloned());
        let options = AggregateOptions {
            batch_size: self.options.batch_size,
            collation: self.options.collation.clone(),
            comment: self.options.comment.clone(),
            ..AggregateOptions::default()
        };
        Ok(ChangeStreamAggregate {
            inner: Aggregate::new(
                self.target.clone(),
                pipeline,
                options,
                self.read_concern.clone(),
                None,
                self.criteria.clone(),
            ),
        })
    }

    /// The `$changeStream` stage's document.
    fn stage(&self, resume: Option<&ResumeStart>) -> Result<Document> {
        let o = &self.options;
        let mut stage = Document::new();
        put(
            &mut stage,
            "fullDocument",
            o.full_document.as_ref().map(|f| f.as_str().to_string()),
        );
        put(
            &mut stage,
            "fullDocumentBeforeChange",
            o.full_document_before_change
                .as_ref()
                .map(|f| f.as_str().to_string()),
        );
        let (resume_after, start_after, start_at) = match resume {
            None | Some(ResumeStart::Original) => (
                o.resume_after.as_ref().map(|t| t.0.clone()),
                o.start_after.as_ref().map(|t| t.0.clone()),
                o.start_at_operation_time,
            ),
            Some(ResumeStart::ResumeAfter(token)) => (Some(token.clone()), None, None),
            Some(ResumeStart::StartAfter(token)) => (None, Some(token.clone()), None),
            Some(ResumeStart::StartAtOperationTime(time)) => (None, None, Some(*time)),
        };
        put(
            &mut stage,
            "resumeAfter",
            resume_after.map(to_bson).transpose()?,
        );
        put(
            &mut stage,
            "startAfter",
            start_after.map(to_bson).transpose()?,
        );
        put(&mut stage, "startAtOperationTime", start_at);
        if self.all_changes_for_cluster {
            stage.insert("allChangesForCluster", true);
        }
        put(&mut stage, "showExpandedEvents", o.show_expanded_events);
        Ok(stage)
    }
}

/// A resume token as a command field.
///
/// # Errors
/// `InvalidArgument` for a token that is not valid BSON.
fn to_bson(token: RawBson) -> Result<Bson> {
    Bson::try_from(token)
        .map_err(|e| Error::invalid_argument(format!("the resume token is not valid BSON: {e}")))
}

/// What the opening `aggregate` of a change stream reports.
#[derive(Debug)]
pub(crate) struct ChangeStreamReply {
    pub(crate) cursor: CursorReply,
    /// The reply's `operationTime` (a resume may start there).
    pub(crate) operation_time: Option<Timestamp>,
    /// The wire version of the server that answered (decides which errors are resumable).
    pub(crate) wire_version: i32,
}

impl AsRef<CursorReply> for ChangeStreamReply {
    fn as_ref(&self) -> &CursorReply {
        &self.cursor
    }
}

/// The `aggregate` with a `$changeStream` stage: a retryable read.
#[derive(Debug)]
pub(crate) struct ChangeStreamAggregate {
    inner: Aggregate,
}

impl Operation for ChangeStreamAggregate {
    type Output = ChangeStreamReply;

    fn name(&self) -> &str {
        "aggregate"
    }

    fn build(&mut self, description: &StreamDescription) -> Result<Command> {
        self.inner.build(description)
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        context: &ReplyContext<'_>,
    ) -> Result<ChangeStreamReply> {
        let operation_time = match reply.get("operationTime") {
            Ok(Some(RawBsonRef::Timestamp(time))) => Some(time),
            _ => None,
        };
        let cursor = self.inner.handle_reply(reply, context)?;
        Ok(ChangeStreamReply {
            cursor,
            operation_time,
            wire_version: context.description.max_wire_version,
        })
    }

    fn selection_criteria(&self) -> SelectionCriteria {
        self.inner.selection_criteria()
    }

    fn retryability(&self) -> Retryability {
        Retryability::Read
    }

    fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.read_concern()
    }
}
