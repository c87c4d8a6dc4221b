//! OP_QUERY, kept for the legacy handshake (a `hello`/`isMaster` sent to `admin.$cmd` before
//! the server is known to speak OP_MSG); the reply is an OP_REPLY (`op_reply.rs`).

use bson::RawDocumentBuf;

use crate::WireError;
use crate::bson_check::{BsonValidation, check_bson};
use crate::read::Reader;

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
