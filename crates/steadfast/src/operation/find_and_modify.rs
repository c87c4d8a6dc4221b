//! `findAndModify`: find_one_and_delete / _update / _replace.

use std::time::Duration;

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};
use steadfast_core::options::WriteConcern;

use super::fields::{put, put_max_time};
use super::{Command, Operation, ReplyContext, Retryability};
use crate::conn::description::StreamDescription;
use crate::error::{Error, ReplyWriteErrors, Result};
use crate::namespace::Namespace;
use crate::options::{
    Collation, FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, Hint,
    ReturnDocument, UpdateModifications, append_hint,
};

/// What happens to the document found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Modification {
    /// `remove: true`.
    Delete,
    /// `update: <operators or pipeline>`.
    Update(UpdateModifications),
    /// `update: <replacement document>`.
    Replace(Document),
}

/// The options of the three helpers, merged.
#[derive(Clone, Debug, Default)]
pub(crate) struct FindAndModifyFields {
    pub(crate) sort: Option<Document>,
    pub(crate) projection: Option<Document>,
    pub(crate) return_document: Option<ReturnDocument>,
    pub(crate) upsert: Option<bool>,
    pub(crate) bypass_document_validation: Option<bool>,
    pub(crate) max_time: Option<Duration>,
    pub(crate) collation: Option<Collation>,
    pub(crate) array_filters: Option<Vec<Document>>,
    pub(crate) hint: Option<Hint>,
    pub(crate) let_vars: Option<Document>,
    pub(crate) comment: Option<Bson>,
    pub(crate) write_concern: Option<WriteConcern>,
    /// The application set `write_concern` on the operation itself (it was not inherited).
    pub(crate) own_write_concern: bool,
}

impl From<FindOneAndDeleteOptions> for FindAndModifyFields {
    fn from(o: FindOneAndDeleteOptions) -> Self {
        FindAndModifyFields {
            sort: o.sort,
            projection: o.projection,
            max_time: o.max_time,
            collation: o.collation,
            hint: o.hint,
            let_vars: o.let_vars,
            comment: o.comment,
            write_concern: o.write_concern,
            ..FindAndModifyFields::default()
        }
    }
}

impl From<FindOneAndUpdateOptions> for FindAndModifyFields {
    fn from(o: FindOneAndUpdateOptions) -> Self {
        FindAndModifyFields {
            sort: o.sort,
            projection: o.projection,
            return_document: o.return_document,
            upsert: o.upsert,
            bypass_document_validation: o.bypass_document_validation,
            max_time: o.max_time,
            collation: o.collation,
            array_filters: o.array_filters,
            hint: o.hint,
            let_vars: o.let_vars,
            comment: o.comment,
            write_concern: o.write_concern,
            own_write_concern: false,
        }
    }
}

impl From<FindOneAndReplaceOptions> for FindAndModifyFields {
    fn from(o: FindOneAndReplaceOptions) -> Self {
        FindAndModifyFields {
            sort: o.sort,
            projection: o.projection,
            return_document: o.return_document,
            upsert: o.upsert,
            bypass_document_validation: o.bypass_document_validation,
            max_time: o.max_time,
            collation: o.collation,
            hint: o.hint,
            let_vars: o.let_vars,
            comment: o.comment,
            write_concern: o.write_concern,
            array_filters: None,
            own_write_concern: false,
        }
    }
}

/// `findAndModify` on one document; a retryable write.
#[derive(Debug)]
pub(crate) struct FindAndModify {
    ns: Namespace,
    filter: Document,
    modification: Modification,
    fields: FindAndModifyFields,
}

impl FindAndModify {
    /// Finds one document of `ns` matching `filter` and applies `modification`.
    pub(crate) fn new(
        ns: Namespace,
        filter: Document,
        modification: Modification,
        fields: FindAndModifyFields,
    ) -> Self {
        FindAndModify {
            ns,
            filter,
            modification,
            fields,
        }
    }

    fn body(&self) -> Document {
        let f = &self.fields;
        let mut body = Document::new();
        body.insert("findAndModify", self.ns.coll.clone());
        body.insert("query", self.filter.clone());
        match &self.modification {
            Modification::Delete => {
                body.insert("remove", true);
            }
            Modification::Update(update) => {
                body.insert("update", update.to_bson());
            }
            Modification::Replace(replacement) => {
                body.insert("update", replacement.clone());
            }
        }
        if self.modification != Modification::Delete {
            if f.return_document == Some(ReturnDocument::After) {
                body.insert("new", true);
            }
            put(&mut body, "upsert", f.upsert);
            put(
                &mut body,
                "bypassDocumentValidation",
                f.bypass_document_validation,
            );
            if let Some(filters) = &f.array_filters {
                body.insert(
                    "arrayFilters",
                    filters
                        .iter()
                        .cloned()
                        .map(Bson::Document)
                        .collect::<Vec<_>>(),
                );
            }
        }
        put(&mut body, "sort", f.sort.clone());
        put(&mut body, "fields", f.projection.clone());
        put_max_time(&mut body, f.max_time);
        put(&mut body, "collation", f.collation.clone());
        append_hint(&mut body, f.hint.as_ref());
        put(&mut body, "let", f.let_vars.clone());
        put(&mut body, "comment", f.comment.clone());
        body
    }
}

impl Operation for FindAndModify {
    type Output = Option<RawDocumentBuf>;

    fn name(&self) -> &str {
        "findAndModify"
    }

    fn build(&mut self, _description: &StreamDescription) -> Result<Command> {
        Ok(Command::new(
            "findAndModify",
            self.ns.db.clone(),
            self.body(),
        ))
    }

    fn handle_reply(
        &mut self,
        reply: RawDocumentBuf,
        _context: &ReplyContext<'_>,
    ) -> Result<Option<RawDocumentBuf>> {
        check_write_concern(&reply, "findAndModify")?;
        match reply.get("value") {
            Ok(Some(RawBsonRef::Document(doc))) => Ok(Some(doc.to_owned())),
            Ok(Some(RawBsonRef::Null)) | Ok(None) => Ok(None),
            _ => Err(Error::protocol(
                "the findAndModify reply's `value` is neither a document nor null",
            )),
        }
    }

    fn retryability(&self) -> Retryability {
        Retryability::Write
    }

    fn write_concern(&self) -> Option<&WriteConcern> {
        self.fields.write_concern.as_ref()
    }

    fn has_own_write_concern(&self) -> bool {
        self.fields.own_write_concern
    }
}

/// Turns a write concern error left in an `ok: 1` reply into an error, so that a command that
/// did its work but could not satisfy the write concern is never reported as a success.
///
/// # Errors
/// `Write` with the write concern error; `InvalidResponse` when the reply is not valid BSON.
pub(crate) fn check_write_concern(reply: &RawDocumentBuf, command: &str) -> Result<()> {
    if !matches!(reply.get("writeConcernError"), Ok(Some(_))) {
        return Ok(());
    }
    let reply = Document::try_from(reply.clone()).map_err(|e| {
        Error::protocol(format!("the {command} reply is not valid BSON")).with_source(e)
    })?;
    match ReplyWriteErrors::from_reply(&reply).and_then(Error::from_write_concern_reply) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}
