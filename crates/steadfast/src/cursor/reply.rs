//! The `cursor` sub-document of `find`, `aggregate`, `listIndexes`, `listCollections` and
//! `getMore` replies.

use std::collections::VecDeque;

use bson::raw::RawElement;
use bson::{RawArray, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::error::{Error, Result};
use crate::namespace::Namespace;

/// A server cursor as a command reply describes it: its id (0 once exhausted), its namespace and
/// one batch of documents.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CursorReply {
    /// The cursor id; 0 means the server closed it (no `getMore` needed).
    pub(crate) id: i64,
    /// The namespace `getMore` and `killCursors` must name.
    pub(crate) ns: Namespace,
    /// The batch, in order.
    pub(crate) first_batch: VecDeque<RawDocumentBuf>,
    /// The resume token after this batch (change streams).
    pub(crate) post_batch_resume_token: Option<RawDocumentBuf>,
    /// The whole reply the cursor was read from, when the operation kept it (see
    /// [`CursorReply::with_raw`]): a raw batch cursor hands it out as one batch.
    pub(crate) raw: Option<RawDocumentBuf>,
}

impl AsRef<CursorReply> for CursorReply {
    fn as_ref(&self) -> &CursorReply {
        self
    }
}

/// The first element of each name `CursorReply::parse` reads from a `cursor` document.
#[derive(Default)]
struct CursorFields<'a> {
    id: Option<RawElement<'a>>,
    ns: Option<RawElement<'a>>,
    first_batch: Option<RawElement<'a>>,
    next_batch: Option<RawElement<'a>>,
    post_batch_resume_token: Option<RawElement<'a>>,
}

impl CursorReply {
    /// Reads the `cursor` field of `reply`, whose batch is `firstBatch` (initial commands) or
    /// `nextBatch` (`getMore`).
    ///
    /// # Errors
    /// `InvalidResponse` when the `cursor` document, its `id`, its `ns` or its batch is missing or has
    /// the wrong type.
    pub(crate) fn parse(reply: &RawDocument, command: &str) -> Result<CursorReply> {
        let malformed =
            |what: &str| Error::protocol(format!("the {command} reply is malformed: {what}"));
        let cursor = reply
            .get_document("cursor")
            .map_err(|_| malformed("no `cursor` document"))?;
        // One pass over the cursor document instead of one lookup per field: each lookup
        // re-walks (and re-checks) every element before the one it wants. As with a lookup,
        // the first element of each name counts. A malformed element is an error rather than
        // the end of the document: stopping there would silently drop the fields after it.
        let mut fields = CursorFields::default();
        for element in cursor.iter_elements() {
            let element = element.map_err(|_| malformed("the `cursor` document is corrupt"))?;
            let slot = match element.key().as_str() {
                "id" => &mut fields.id,
                "ns" => &mut fields.ns,
                "firstBatch" => &mut fields.first_batch,
                "nextBatch" => &mut fields.next_batch,
                "postBatchResumeToken" => &mut fields.post_batch_resume_token,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(element);
            }
        }
        let id = match fields.id.map(|e| e.value()) {
            Some(Ok(RawBsonRef::Int64(id))) => id,
            Some(Ok(RawBsonRef::Int32(id))) => i64::from(id),
            _ => return Err(malformed("`cursor.id` is missing or not an integer")),
        };
        let ns = match fields.ns.map(|e| e.value()) {
            Some(Ok(RawBsonRef::String(ns))) => ns,
            _ => return Err(malformed("`cursor.ns` is missing or not a string")),
        };
        let ns: Namespace = ns
            .parse()
            .map_err(|_| malformed("`cursor.ns` is not a namespace"))?;
        // The batch a server sends is the one read: a `firstBatch` of the wrong type is an
        // error, never a reason to fall back on a `nextBatch` (or on nothing).
        let batch = match (fields.first_batch, fields.next_batch) {
            (Some(element), _) => as_array(element, "firstBatch", &malformed)?,
            (None, Some(element)) => as_array(element, "nextBatch", &malformed)?,
            (None, None) => {
                return Err(malformed(
                    "the cursor has neither `firstBatch` nor `nextBatch`",
                ));
            }
        };
        let mut first_batch = VecDeque::new();
        for entry in batch {
            match entry {
                Ok(RawBsonRef::Document(doc)) => first_batch.push_back(doc.to_owned()),
                _ => return Err(malformed("a batch entry is not a document")),
            }
        }
        let post_batch_resume_token = match fields.post_batch_resume_token.map(|e| e.value()) {
            Some(Ok(RawBsonRef::Document(token))) => Some(token.to_owned()),
            _ => None,
        };
        Ok(CursorReply {
            id,
            ns,
            first_batch,
            post_batch_resume_token,
            raw: None,
        })
    }

    /// This reply with `reply`, the whole server reply it was parsed from, kept alongside.
    /// The cursor state drops it unless the cursor hands out whole batches.
    pub(crate) fn with_raw(mut self, reply: RawDocumentBuf) -> Self {
        self.raw = Some(reply);
        self
    }
}

/// The array `element` (the field `name`) holds.
///
/// # Errors
/// `malformed(..)` when the element is not a readable array.
fn as_array<'a>(
    element: RawElement<'a>,
    name: &str,
    malformed: &dyn Fn(&str) -> Error,
) -> Result<&'a RawArray> {
    match element.value() {
        Ok(RawBsonRef::Array(batch)) => Ok(batch),
        _ => Err(malformed(&format!("`cursor.{name}` is not an array"))),
    }
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::CursorReply;

    #[test]
    fn reads_a_first_batch() {
        let reply = rawdoc! {
            "cursor": { "id": 42_i64, "ns": "shop.orders", "firstBatch": [ { "a": 1 }, { "a": 2 } ] },
            "ok": 1.0,
        };
        let cursor = CursorReply::parse(&reply, "find").expect("well-formed");
        assert_eq!(cursor.id, 42);
        assert_eq!(cursor.ns.to_string(), "shop.orders");
        assert_eq!(cursor.first_batch.len(), 2);
        assert_eq!(cursor.first_batch[1].get_i32("a").ok(), Some(2));
        assert!(cursor.post_batch_resume_token.is_none());
    }

    #[test]
    fn reads_a_next_batch_with_a_resume_token() {
        let reply = rawdoc! {
            "cursor": { "id": 0_i64, "ns": "db.$cmd.listCollections", "nextBatch": [],
                        "postBatchResumeToken": { "_data": "00" } },
            "ok": 1,
        };
        let cursor = CursorReply::parse(&reply, "getMore").expect("well-formed");
        assert_eq!(cursor.id, 0);
        assert_eq!(cursor.ns.coll, "$cmd.listCollections");
        assert!(cursor.first_batch.is_empty());
        assert!(cursor.post_batch_resume_token.is_some());
    }

    #[test]
    fn rejects_malformed_replies() {
        let cases = [
            rawdoc! { "ok": 1 },
            rawdoc! { "cursor": { "ns": "a.b", "firstBatch": [] } },
            rawdoc! { "cursor": { "id": "x", "ns": "a.b", "firstBatch": [] } },
            rawdoc! { "cursor": { "id": 0_i64, "firstBatch": [] } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": "nodot", "firstBatch": [] } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b" } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "firstBatch": [1] } },
            // A batch of the wrong type, even beside a valid one of the other name.
            rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "firstBatch": "x" } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "firstBatch": { "0": {} }, "nextBatch": [] } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "nextBatch": 7 } },
            rawdoc! { "cursor": { "id": 1.5, "ns": "a.b", "firstBatch": [] } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": 3, "firstBatch": [] } },
            rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "firstBatch": [[]] } },
        ];
        for reply in cases {
            let error = CursorReply::parse(&reply, "find").expect_err("malformed");
            assert!(error.is_protocol_error(), "{error}");
        }
    }

    #[test]
    fn a_corrupt_cursor_document_is_an_error_not_a_truncation() {
        // A valid reply, then the `cursor` document's last element (a trailing Int32 field)
        // gets an unknown element type: the fields read before it must not be used as if the
        // document had ended there.
        let mut bytes = rawdoc! {
            "cursor": { "id": 0_i64, "ns": "a.b", "firstBatch": [], "z": 1 },
            "ok": 1,
        }
        .into_bytes();
        let z = bytes
            .windows(2)
            .position(|w| w == [0x10, b'z'])
            .expect("the trailing field is there");
        bytes[z] = 0x7e;
        let reply = bson::RawDocumentBuf::from_bytes(bytes).expect("the outer frame is intact");
        let error = CursorReply::parse(&reply, "find").expect_err("corrupt");
        assert!(error.is_protocol_error(), "{error}");
    }
}
