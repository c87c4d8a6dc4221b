//! OP_QUERY and OP_REPLY, kept for the legacy handshake (a `hello`/`isMaster` sent to
//! `admin.$cmd` before the server is known to speak OP_MSG).

use bson::RawDocumentBuf;

use crate::WireError;
use crate::bson_check::{BsonValidation, check_bson};
use crate::read::{Reader, len_i64};

/// An OP_QUERY message body.
#[derive(Debug, Clone, PartialEq)]
pub struct OpQuery {
    /// Query flags (tailable, secondaryOk, exhaust, ...), raw.
    pub flags: u32,
    /// `<database>.<collection>`, `admin.$cmd` for commands.
    pub full_collection_name: String,
    /// Documents to skip.
    pub number_to_skip: i32,
    /// Documents to return in the first batch (-1 for commands).
    pub number_to_return: i32,
    /// The query or command document.
    pub query: RawDocumentBuf,
    /// Optional projection.
    pub return_fields_selector: Option<RawDocumentBuf>,
}

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

impl OpQuery {
    /// A command sent the legacy way: `query` to `<database>.$cmd`, returning one document.
    #[must_use]
    pub fn command(database: &str, query: RawDocumentBuf) -> Self {
        Self {
            flags: 0,
            full_collection_name: format!("{database}.$cmd"),
            number_to_skip: 0,
            number_to_return: -1,
            query,
            return_fields_selector: None,
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        let selector = self
            .return_fields_selector
            .as_ref()
            .map_or(0, |selector| selector.as_bytes().len());
        4 + self.full_collection_name.len() + 1 + 4 + 4 + self.query.as_bytes().len() + selector
    }

    pub(crate) fn encode_after_header(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.full_collection_name.as_bytes().contains(&0) {
            return Err(WireError::InvalidCString("fullCollectionName"));
        }
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(self.full_collection_name.as_bytes());
        out.push(0);
        out.extend_from_slice(&self.number_to_skip.to_le_bytes());
        out.extend_from_slice(&self.number_to_return.to_le_bytes());
        out.extend_from_slice(self.query.as_bytes());
        if let Some(selector) = &self.return_fields_selector {
            out.extend_from_slice(selector.as_bytes());
        }
        Ok(())
    }

    pub(crate) fn decode(bytes: &[u8], validation: BsonValidation) -> Result<Self, WireError> {
        let mut reader = Reader::new(bytes, "OP_QUERY");
        let flags = reader.u32()?;
        let full_collection_name = reader.cstr("fullCollectionName")?.to_owned();
        let number_to_skip = reader.i32()?;
        let number_to_return = reader.i32()?;
        let query = check_bson(reader.bson_bytes()?, validation)?.to_owned();
        let return_fields_selector = if reader.is_empty() {
            None
        } else {
            Some(check_bson(reader.bson_bytes()?, validation)?.to_owned())
        };
        if !reader.is_empty() {
            return Err(WireError::TrailingBytes {
                what: "OP_QUERY",
                count: reader.remaining(),
            });
        }
        Ok(Self {
            flags,
            full_collection_name,
            number_to_skip,
            number_to_return,
            query,
            return_fields_selector,
        })
    }
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
