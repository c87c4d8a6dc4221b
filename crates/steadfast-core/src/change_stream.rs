//! The pure decisions of a change stream (change-streams spec): which `getMore` errors it
//! resumes after, how its resume token is cached, and which starting point a resume asks for.

use bson::{RawBson, Timestamp};

use crate::labels::ErrorLabels;

/// The label servers from 4.4 on attach to the errors a change stream may resume after.
pub const RESUMABLE_LABEL: &str = "ResumableChangeStreamError";

/// CursorNotFound: resumable on every server version.
pub const CURSOR_NOT_FOUND: i32 = 43;

/// The first wire version (4.4) whose servers label resumable errors themselves.
pub const LABELLING_WIRE_VERSION: i32 = 9;

/// The first wire version (4.0) that accepts `startAtOperationTime`.
pub const START_AT_OPERATION_TIME_WIRE_VERSION: i32 = 7;

/// The codes a change stream resumes after on servers older than 4.4 (which attach no label).
pub const RESUMABLE_CODES_BEFORE_LABELS: [i32; 17] = [
    6,     // HostUnreachable
    7,     // HostNotFound
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
    63,    // StaleShardVersion
    150,   // StaleEpoch
    13388, // StaleConfig
    234,   // RetryChangeStream
    133,   // FailedToSatisfyReadPreference
];

/// Where a `getMore` error came from, as far as resuming is concerned.
#[derive(Clone, Copy, Debug)]
pub enum ErrorSource<'a> {
    /// No answer from the server: the connection failed or timed out, the reply was
    /// unreadable, or the cursor's server could not be reached.
    Connection,
    /// The server answered with an error.
    Server {
        /// Its code, if it sent one.
        code: Option<i32>,
        /// Its labels.
        labels: &'a ErrorLabels,
    },
    /// The driver itself refused (a bad argument, a reply it could not read, ...).
    Driver,
}

/// Whether a change stream resumes after a `getMore` error, judged with the wire version of
/// the server that ran the command (never re-read afterwards). Errors of the opening
/// `aggregate` are never resumable: the caller only asks about `getMore` errors.
pub fn is_resumable(source: ErrorSource<'_>, wire_version: i32) -> bool {
    match source {
        ErrorSource::Connection => true,
        ErrorSource::Driver => false,
        ErrorSource::Server { code, labels } => {
            if code == Some(CURSOR_NOT_FOUND) {
                return true;
            }
            if wire_version >= LABELLING_WIRE_VERSION {
                labels.contains(RESUMABLE_LABEL)
            } else {
                code.is_some_and(|code| RESUMABLE_CODES_BEFORE_LABELS.contains(&code))
            }
        }
    }
}

/// How a resume restarts the stream (the spec's Resume Process).
#[derive(Clone, Debug, PartialEq)]
pub enum ResumeStart {
    /// `startAfter` with the cached token: the stream was opened with `startAfter` and has not
    /// returned an event yet.
    StartAfter(RawBson),
    /// `resumeAfter` with the cached token.
    ResumeAfter(RawBson),
    /// `startAtOperationTime`: no token yet, but an operation time is known.
    StartAtOperationTime(Timestamp),
    /// None of the three: the original command as it was.
    Original,
}

/// The event a document returned to the application is judged as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// The last document of its batch.
    LastInBatch,
    /// A document with more of its batch behind it.
    InBatch,
}

/// The first event handed out had no `_id` to resume after (a pipeline removed it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingResumeToken;

/// A change stream's resume bookkeeping: the cached token and what the stream was opened with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResumeState {
    token: Option<RawBson>,
    started_after: bool,
    returned_any: bool,
    operation_time: Option<Timestamp>,
}

impl ResumeState {
    /// The state of a stream opened with these options: `startAfter` is cached, else
    /// `resumeAfter`; a `startAtOperationTime` is kept for a resume before any token arrives.
    pub fn new(
        start_after: Option<RawBson>,
        resume_after: Option<RawBson>,
        start_at_operation_time: Option<Timestamp>,
    ) -> Self {
        let started_after = start_after.is_some();
        ResumeState {
            token: start_after.or(resume_after),
            started_after,
            returned_any: false,
            operation_time: start_at_operation_time,
        }
    }

    /// Takes in the opening `aggregate`'s reply: the batch's emptiness, its
    /// `postBatchResumeToken`, the reply's `operationTime` and the server's wire version. The
    /// operation time is saved only when the stream was opened without any starting point, on
    /// an empty batch without a post-batch token, from a server that accepts it.
    pub fn opened(
        &mut self,
        batch_is_empty: bool,
        post_batch_token: Option<RawBson>,
        operation_time: Option<Timestamp>,
        wire_version: i32,
    ) {
        let no_start_point = self.token.is_none() && self.operation_time.is_none();
        if no_start_point
            && batch_is_empty
            && post_batch_token.is_none()
            && wire_version >= START_AT_OPERATION_TIME_WIRE_VERSION
        {
            self.operation_time = operation_time;
        }
        self.batch_received(batch_is_empty, post_batch_token);
    }

    /// Takes in a batch (the opening one or a `getMore`'s): an empty batch's post-batch token
    /// is cached.
    pub fn batch_received(&mut self, batch_is_empty: bool, post_batch_token: Option<RawBson>) {
        if let (true, Some(token)) = (batch_is_empty, post_batch_token) {
            self.token = Some(token);
        }
    }

    /// Records that an event is handed to the application: the batch's post-batch token if it
    /// is the last one of its batch and the batch had one, else the event's `_id`.
    ///
    /// # Errors
    /// [`MissingResumeToken`] when the event has no `_id` and no post-batch token stands in
    /// for it; the stream must then end with an error.
    pub fn returned(
        &mut self,
        id: Option<RawBson>,
        position: Position,
        post_batch_token: Option<RawBson>,
    ) -> Result<(), MissingResumeToken> {
        let id = id.ok_or(MissingResumeToken)?;
        self.returned_any = true;
        self.token = match (position, post_batch_token) {
            (Position::LastInBatch, Some(token)) => Some(token),
            _ => Some(id),
        };
        Ok(())
    }

    /// The token a resume would use now (what `resume_token()` shows the application).
    pub fn token(&self) -> Option<&RawBson> {
        self.token.as_ref()
    }

    /// Which starting point the next resume sends.
    pub fn resume_start(&self) -> ResumeStart {
        match (&self.token, self.operation_time) {
            (Some(token), _) if self.started_after && !self.returned_any => {
                ResumeStart::StartAfter(token.clone())
            }
            (Some(token), _) => ResumeStart::ResumeAfter(token.clone()),
            (None, Some(time)) => ResumeStart::StartAtOperationTime(time),
            (None, None) => ResumeStart::Original,
        }
    }
}

#[cfg(test)]
mod tests;
