//! Checks made on a request's raw encoding, before it is turned into documents: a 48 MB message
//! of empty documents is millions of statements (gigabytes once materialised), and a document
//! nested a hundred thousand levels deep overflows the stack of any recursive walk (decoding,
//! comparing, dropping). mongod refuses both; so do these checks, without recursion or
//! allocation proportional to the input.

use std::fmt;

use bson::RawDocument;
use bson::raw::{RawBsonRef, RawIter};

use super::write::MAX_WRITE_BATCH;
use crate::code;

/// mongod's `maxBSONDepth` default: how many levels of documents and arrays may be nested
/// below a command document.
pub const MAX_BSON_DEPTH: usize = 200;

/// Why a raw request is refused before it is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RawRequestError {
    /// A write batch holds more than mongod's `maxWriteBatchSize` (100,000) statements
    /// (InvalidLength, 16).
    WriteBatchTooLarge {
        /// How many statements the batch holds.
        count: usize,
    },
    /// A document nests deeper than [`MAX_BSON_DEPTH`] (Overflow, 15).
    NestedTooDeep,
}

impl RawRequestError {
    /// The mongod error code to answer with.
    pub fn code(&self) -> i32 {
        match self {
            RawRequestError::WriteBatchTooLarge { .. } => code::INVALID_LENGTH,
            RawRequestError::NestedTooDeep => code::OVERFLOW,
        }
    }

    /// The name of [`RawRequestError::code`].
    pub fn code_name(&self) -> &'static str {
        match self {
            RawRequestError::WriteBatchTooLarge { .. } => "InvalidLength",
            RawRequestError::NestedTooDeep => "Overflow",
        }
    }
}

impl fmt::Display for RawRequestError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawRequestError::WriteBatchTooLarge { count } => write!(
                formatter,
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH}. Got {count} operations."
            ),
            RawRequestError::NestedTooDeep => write!(
                formatter,
                "BSONObj exceeded maximum nested object depth: {MAX_BSON_DEPTH}"
            ),
        }
    }
}

impl std::error::Error for RawRequestError {}

/// Checks a command on its raw encoding: `body` is the command document and `sequences` the
/// OP_MSG document sequences. Malformed BSON passes (the decoder reports it).
///
/// # Errors
///
/// [`RawRequestError::NestedTooDeep`] when any document nests more than [`MAX_BSON_DEPTH`]
/// levels; [`RawRequestError::WriteBatchTooLarge`] when an `insert`, `update` or `delete`
/// holds more than 100,000 statements.
pub fn check_raw_request<'a>(
    body: &RawDocument,
    sequences: impl IntoIterator<Item = (&'a str, &'a [bson::RawDocumentBuf])>,
) -> Result<(), RawRequestError> {
    check_depth(body)?;
    let sequences: Vec<(&str, &[bson::RawDocumentBuf])> = sequences.into_iter().collect();
    for (_, documents) in &sequences {
        for document in documents.iter() {
            check_depth(document)?;
        }
    }
    check_batch_size(body, &sequences)
}

/// Walks `document` with an explicit stack of element iterators, never recursing.
fn check_depth(document: &RawDocument) -> Result<(), RawRequestError> {
    let mut open: Vec<RawIter<'_>> = vec![document.iter_elements()];
    while let Some(current) = open.last_mut() {
        let Some(element) = current.next() else {
            open.pop();
            continue;
        };
        let Ok(value) = element.and_then(|element| element.value()) else {
            return Ok(());
        };
        let nested = match value {
            RawBsonRef::Document(nested) => nested.iter_elements(),
            RawBsonRef::Array(items) => items.iter_elements(),
            RawBsonRef::JavaScriptCodeWithScope(code) => code.scope.iter_elements(),
            _ => continue,
        };
        if open.len() > MAX_BSON_DEPTH {
            return Err(RawRequestError::NestedTooDeep);
        }
        open.push(nested);
    }
    Ok(())
}

/// The statement count of a write command, from its document sequence or its body's array.
fn check_batch_size(
    body: &RawDocument,
    sequences: &[(&str, &[bson::RawDocumentBuf])],
) -> Result<(), RawRequestError> {
    let Some(Ok(first)) = body.iter_elements().next() else {
        return Ok(());
    };
    let field = match first.key().as_str() {
        "insert" => "documents",
        "update" => "updates",
        "delete" => "deletes",
        _ => return Ok(()),
    };
    let from_sequence = sequences
        .iter()
        .find(|(identifier, _)| *identifier == field)
        .map(|(_, documents)| documents.len());
    let count = from_sequence.unwrap_or_else(|| match body.get_array(field) {
        Ok(items) => items.into_iter().count(),
        Err(_) => 0,
    });
    if count > MAX_WRITE_BATCH {
        return Err(RawRequestError::WriteBatchTooLarge { count });
    }
    Ok(())
}
