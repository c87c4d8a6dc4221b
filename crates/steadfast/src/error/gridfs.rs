//! The GridFS errors: a file or revision that does not exist, a stored file whose chunks do
//! not add up (missing, extra or wrongly sized: the file is corrupt), and misuse of an upload
//! stream. Variants and fields follow the official driver's `GridFsErrorKind`.

use std::fmt;

use bson::Bson;

use super::Error;

/// What went wrong in a GridFS operation: the payload of
/// [`ErrorKind::GridFs`](super::ErrorKind::GridFs). New variants may be added.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GridFsErrorKind {
    /// No files collection document has the identifier.
    #[non_exhaustive]
    FileNotFound {
        /// The id or filename looked for.
        identifier: GridFsFileIdentifier,
    },
    /// Files with the name exist, but not the revision asked for.
    #[non_exhaustive]
    RevisionNotFound {
        /// The revision asked for (0 the oldest, -1 the newest).
        revision: i32,
    },
    /// The chunk numbered `n` was not where it had to be (the file is corrupt).
    #[non_exhaustive]
    MissingChunk {
        /// The chunk number expected next.
        n: u32,
    },
    /// A write, flush or close on an upload stream that was already closed or aborted.
    UploadStreamClosed,
    /// The chunk numbered `n` holds a different number of bytes than the file's length and
    /// chunk size imply (the file is corrupt).
    #[non_exhaustive]
    WrongSizeChunk {
        /// The bytes the chunk holds.
        actual_size: usize,
        /// The bytes it had to hold.
        expected_size: u32,
        /// The chunk number.
        n: u32,
    },
    /// The file has more chunks than its length and chunk size imply (the file is corrupt).
    #[non_exhaustive]
    WrongNumberOfChunks {
        /// How many chunks were found (at least; reading stops at the first extra one).
        actual_number: u32,
        /// How many it had to have.
        expected_number: u32,
    },
    /// Aborting an upload could not delete the chunks already written.
    #[non_exhaustive]
    AbortError {
        /// The error that made the upload abort, when an error did.
        original_error: Option<Error>,
        /// The error that deleting the written chunks ended with.
        delete_error: Error,
    },
    /// `close` was called on an upload stream while a write was still in progress.
    WriteInProgress,
    /// A files collection document or chunk that is not a valid GridFS document (a negative
    /// length, a zero chunk size, a chunk without binary `data` or an integer `n`, a length
    /// whose chunk count does not fit in 32 bits). steadfast's addition.
    #[non_exhaustive]
    CorruptFile {
        /// What was wrong.
        message: String,
    },
}

/// Names a stored file: by its unique id, or by its filename (which revisions share).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GridFsFileIdentifier {
    /// The filename.
    Filename(String),
    /// The file's `_id`.
    Id(Bson),
}

impl fmt::Display for GridFsFileIdentifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridFsFileIdentifier::Filename(name) => write!(f, "filename {name:?}"),
            GridFsFileIdentifier::Id(id) => write!(f, "id {id}"),
        }
    }
}

impl fmt::Display for GridFsErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridFsErrorKind::FileNotFound { identifier } => {
                write!(f, "GridFS: no file with {identifier}")
            }
            GridFsErrorKind::RevisionNotFound { revision } => {
                write!(f, "GridFS: no revision {revision} of the file")
            }
            GridFsErrorKind::MissingChunk { n } => {
                write!(f, "GridFS: chunk {n} is missing (corrupt file)")
            }
            GridFsErrorKind::UploadStreamClosed => {
                write!(f, "GridFS: the upload stream is closed or aborted")
            }
            GridFsErrorKind::WrongSizeChunk {
                actual_size,
                expected_size,
                n,
            } => write!(
                f,
                "GridFS: chunk {n} holds {actual_size} bytes, not {expected_size} (corrupt file)"
            ),
            GridFsErrorKind::WrongNumberOfChunks {
                actual_number,
                expected_number,
            } => write!(
                f,
                "GridFS: the file has at least {actual_number} chunks, not {expected_number} (corrupt file)"
            ),
            GridFsErrorKind::AbortError {
                original_error,
                delete_error,
            } => match original_error {
                Some(original) => write!(
                    f,
                    "GridFS: the upload failed ({original}) and its chunks could not be deleted: {delete_error}"
                ),
                None => write!(
                    f,
                    "GridFS: the aborted upload's chunks could not be deleted: {delete_error}"
                ),
            },
            GridFsErrorKind::WriteInProgress => {
                write!(f, "GridFS: close called while a write is in progress")
            }
            GridFsErrorKind::CorruptFile { message } => {
                write!(f, "GridFS: corrupt file: {message}")
            }
        }
    }
}
