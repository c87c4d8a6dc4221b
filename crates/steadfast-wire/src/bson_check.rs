//! Deep validation of BSON documents received from the network.
//!
//! bson 3's `RawDocument::from_bytes` checks only the outer frame (length prefix and trailing
//! NUL). This module walks every element once, including nested documents, arrays and the scope
//! of code-with-scope values, asking bson to parse each value. After that pass, reading any value
//! of the document with bson's raw accessors succeeds, and the nesting depth is bounded so that
//! recursive readers (serde, `Document::try_from`) cannot exhaust the stack. The walk itself keeps
//! an explicit stack instead of recursing, for the same reason.

use bson::raw::{RawBsonRef, RawDocument, RawIter};

use crate::WireError;

/// Smallest valid BSON document: int32 length plus the terminating NUL.
pub(crate) const MIN_DOCUMENT_LEN: usize = 5;

/// Deepest nesting of documents and arrays accepted in a received document (the top level is
/// depth 1).
///
/// MongoDB itself refuses documents nested deeper than 200 levels, so any reply a real server
/// sends fits comfortably; the limit exists so that a hostile peer cannot make later recursive
/// readers overflow the stack.
pub const MAX_BSON_NESTING_DEPTH: usize = 512;

/// How thoroughly received BSON documents are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BsonValidation {
    /// Every element of every document is parsed once, recursively, and nesting is limited to
    /// [`MAX_BSON_NESTING_DEPTH`]. Reading any value later cannot fail. The default.
    #[default]
    Deep,
    /// Only each document's frame is checked (length prefix and trailing NUL), as bson's
    /// `RawDocument::from_bytes` does. Faster; bson's raw accessors then report malformed
    /// elements as errors when they are read.
    Framing,
}

/// Checks `bytes` as one complete BSON document, as thoroughly as `validation` says.
pub(crate) fn check_document(
    bytes: &[u8],
    validation: BsonValidation,
) -> Result<&RawDocument, WireError> {
    match validation {
        BsonValidation::Deep => validate_document(bytes),
        BsonValidation::Framing => RawDocument::from_bytes(bytes).map_err(invalid),
    }
}

/// Validates `bytes` as one complete BSON document, deeply.
pub(crate) fn validate_document(bytes: &[u8]) -> Result<&RawDocument, WireError> {
    let document = RawDocument::from_bytes(bytes).map_err(invalid)?;
    // Iterators of the enclosing documents; empty (and unallocated) for flat documents.
    let mut parents: Vec<RawIter<'_>> = Vec::new();
    let mut current = document.iter_elements();
    loop {
        let Some(element) = current.next() else {
            match parents.pop() {
                Some(parent) => current = parent,
                None => break,
            }
            continue;
        };
        let nested = match element
            .and_then(|element| element.value())
            .map_err(invalid)?
        {
            RawBsonRef::Document(inner) => inner.iter_elements(),
            RawBsonRef::Array(inner) => inner.iter_elements(),
            RawBsonRef::JavaScriptCodeWithScope(code) => code.scope.iter_elements(),
            _ => continue,
        };
        // `current` is at depth parents.len() + 1; `nested` would be one deeper.
        if parents.len() + 2 > MAX_BSON_NESTING_DEPTH {
            return Err(WireError::InvalidBson(format!(
                "nested deeper than {MAX_BSON_NESTING_DEPTH} levels"
            )));
        }
        parents.push(std::mem::replace(&mut current, nested));
    }
    Ok(document)
}

fn invalid(error: bson::error::Error) -> WireError {
    WireError::InvalidBson(error.to_string())
}
