//! OP_REPLY, the legacy handshake's answer to an OP_QUERY (`op_query.rs`).

use bson::RawDocumentBuf;

use crate::WireError;
use crate::bson_check::{BsonValidation, check_bson};
use crate::read::{Reader, len_i64};

/// An OP_REPLY message body.
#[derive(Debug, Clone, PartialEq)]
pub struct OpReply {
    /// Response flags (cursorNotFound, queryFailure, awaitCapable, ...), raw.
    pub response_flags: u32,
    /// Cursor id, 0 when exhausted.
    pub cursor_id: i64,
    /// Position of the first document in the cursor.
    pub starting_from: i32,
    /// The documents; their count is written as numberReturned.
    pub documents: Vec<RawDocumentBuf>,
}

impl OpReply {
    /// A reply carrying `documents` with no flags and no cursor.
    #[must_use]
    pub fn new(documents: Vec<RawDocumentBuf>) -> Self {
        Self {
            response_flags: 0,
            cursor_id: 0,
            starting_from: 0,
            documents,
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        let documents: usize = self.documents.iter().map(|d| d.as_bytes().len()).sum();
        4 + 8 + 4 + 4 + documents
    }

    pub(crate) fn encode_after_header(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let number_returned = i32::try_from(self.documents.len()).map_err(|_| {
            WireError::invalid_length("numberReturned", len_i64(self.documents.len()))
        })?;
        out.extend_from_slice(&self.response_flags.to_le_bytes());
        out.extend_from_slice(&self.cursor_id.to_le_bytes());
        out.extend_from_slice(&self.starting_from.to_le_bytes());
        out.extend_from_slice(&number_returned.to_le_bytes());
        for document in &self.documents {
            out.extend_from_slice(document.as_bytes());
        }
        Ok(())
    }

    pub(crate) fn decode(bytes: &[u8], validation: BsonValidation) -> Result<Self, WireError> {
        let mut reader = Reader::new(bytes, "OP_REPLY");
        let response_flags = reader.u32()?;
        let cursor_id = reader.i64()?;
        let starting_from = reader.i32()?;
        let declared = reader.i32()?;
        let count = usize::try_from(declared)
            .map_err(|_| WireError::invalid_length("numberReturned", declared))?;
        // Never trust the count for allocation: each document takes at least 5 bytes.
        let mut documents = Vec::with_capacity(count.min(reader.remaining() / 5));
        while !reader.is_empty() {
            documents.push(check_bson(reader.bson_bytes()?, validation)?.to_owned());
        }
        if documents.len() != count {
            return Err(WireError::DocumentCountMismatch {
                declared,
                actual: documents.len(),
            });
        }
        Ok(Self {
            response_flags,
            cursor_id,
            starting_from,
            documents,
        })
    }
}
