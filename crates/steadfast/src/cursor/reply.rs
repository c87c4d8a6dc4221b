//! The `cursor` sub-document of `find`, `aggregate`, `listIndexes`, `listCollections` and
//! `getMore` replies.

use std::collections::VecDeque;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

use crate::coll::Namespace;
use crate::error::{Error, Result};

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
}

impl CursorReply {
    /// Reads the `cursor` field of `reply`, whose batch is `firstBatch` (initial commands) or
    /// `nextBatch` (`getMore`).
    ///
    /// # Errors
    /// `Protocol` when the `cursor` document, its `id`, its `ns` or its batch is missing or has
    /// the wrong type.
    pub(crate) fn parse(reply: &RawDocument, command: &str) -> Result<CursorReply> {
        let malformed =
            |what: &str| Error::protocol(format!("the {command} reply is malformed: {what}"));
        let cursor = reply
            .get_document("cursor")
            .map_err(|_| malformed("no `cursor` document"))?;
        let id = match cursor.get("id") {
            Ok(Some(RawBsonRef::Int64(id))) => id,
            Ok(Some(RawBsonRef::Int32(id))) => i64::from(id),
            _ => return Err(malformed("`cursor.id` is missing or not an integer")),
        };
        let ns = cursor
            .get_str("ns")
            .map_err(|_| malformed("`cursor.ns` is missing or not a string"))?;
        let ns: Namespace = ns
            .parse()
            .map_err(|_| malformed("`cursor.ns` is not a namespace"))?;
        let batch = match (
            cursor.get_array("firstBatch"),
            cursor.get_array("nextBatch"),
        ) {
            (Ok(batch), _) | (_, Ok(batch)) => batch,
            _ => {
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
        let post_batch_resume_token = cursor
            .get_document("postBatchResumeToken")
            .ok()
            .map(ToOwned::to_owned);
        Ok(CursorReply {
            id,
            ns,
            first_batch,
            post_batch_resume_token,
        })
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
        ];
        for reply in cases {
            let error = CursorReply::parse(&reply, "find").expect_err("malformed");
            assert!(error.is_protocol_error(), "{error}");
        }
    }
}
