//! Server errors as mongod reports them: a numeric code, its code name and a message.

use std::fmt::Write as _;

use bson::{Bson, Document, doc};

use crate::code;

/// The code name mongod prints next to a code: its name in mongod's table, or `Location<code>`.
pub(crate) fn code_name(code: i32) -> String {
    code::name(code).map_or_else(|| format!("Location{code}"), str::to_owned)
}

/// mongod's `BSONObjMaxInternalSize`: the largest document (or value) the server builds
/// internally, 16 MiB plus 16 KiB of headroom for command overhead.
pub(crate) const MAX_INTERNAL_BSON_BYTES: usize = 16 * 1024 * 1024 + 16 * 1024;

/// Fails with BSONObjectTooLarge (10334), worded as mongod words it, when a value or document of
/// `size` bytes would pass [`MAX_INTERNAL_BSON_BYTES`]. Callers check before building the value,
/// so memory stays bounded by the limit.
pub(crate) fn check_bson_size(size: usize) -> StoreResult<()> {
    if size <= MAX_INTERNAL_BSON_BYTES {
        return Ok(());
    }
    Err(CommandError::new(
        code::BSON_OBJECT_TOO_LARGE,
        format!(
            "BSONObj size: {size} (0x{size:X}) is invalid. Size must be between 0 and \
             {MAX_INTERNAL_BSON_BYTES}(16MB)"
        ),
    ))
}

/// One error as mongod reports it, either as a whole command failure or as one write error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandError {
    pub(crate) code: i32,
    pub(crate) message: String,
    /// Extra fields mongod attaches to some errors (`keyPattern`/`keyValue` for duplicate keys).
    pub(crate) extra: Document,
}

/// Results inside the store.
pub(crate) type StoreResult<T> = Result<T, CommandError>;

impl CommandError {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            extra: Document::new(),
        }
    }

    pub(crate) fn bad_value(message: impl Into<String>) -> Self {
        Self::new(code::BAD_VALUE, message)
    }

    pub(crate) fn failed_to_parse(message: impl Into<String>) -> Self {
        Self::new(code::FAILED_TO_PARSE, message)
    }

    pub(crate) fn type_mismatch(message: impl Into<String>) -> Self {
        Self::new(code::TYPE_MISMATCH, message)
    }

    /// The same error labelled TransientTransactionError: the client may retry the whole
    /// transaction.
    pub(crate) fn transient(mut self) -> Self {
        self.extra
            .insert("errorLabels", vec![Bson::from("TransientTransactionError")]);
        self
    }

    /// The duplicate key error mongod reports for a unique index violation.
    pub(crate) fn duplicate_key(
        ns: &str,
        index_name: &str,
        key_pattern: &Document,
        key_value: Document,
    ) -> Self {
        let mut message =
            format!("E11000 duplicate key error collection: {ns} index: {index_name} dup key: ");
        message.push_str(&format_document(&key_value));
        Self {
            code: code::DUPLICATE_KEY,
            message,
            extra: doc! { "keyPattern": key_pattern.clone(), "keyValue": key_value },
        }
    }

    /// `ok: 0` reply for a failed command.
    pub(crate) fn to_reply(&self) -> Document {
        let mut reply = doc! {
            "ok": 0.0,
            "errmsg": self.message.clone(),
            "code": self.code,
            "codeName": code_name(self.code),
        };
        for (key, value) in &self.extra {
            reply.insert(key.clone(), value.clone());
        }
        reply
    }

    /// One entry of a write command's `writeErrors` array.
    pub(crate) fn to_write_error(&self, index: usize) -> Document {
        let mut entry = doc! { "index": index_as_i32(index), "code": self.code };
        for (key, value) in &self.extra {
            entry.insert(key.clone(), value.clone());
        }
        entry.insert("errmsg", self.message.clone());
        entry
    }
}

/// Batch indexes are bounded by `maxWriteBatchSize` (100 000), so they always fit an `i32`.
pub(crate) fn index_as_i32(index: usize) -> i32 {
    i32::try_from(index).unwrap_or(i32::MAX)
}

/// The BSON type name mongod uses in messages (`$type` aliases use the same names).
pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
}

/// Formats a document the way mongod prints BSON in error messages: `{ _id: 1, a: "x" }`.
pub(crate) fn format_document(document: &Document) -> String {
    let mut out = String::new();
    write_document(&mut out, document);
    out
}

/// Formats one value the way mongod prints it in error messages.
pub(crate) fn format_value(value: &Bson) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_document(out: &mut String, document: &Document) {
    if document.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{ ");
    for (position, (key, value)) in document.iter().enumerate() {
        if position > 0 {
            out.push_str(", ");
        }
        out.push_str(key);
        out.push_str(": ");
        write_value(out, value);
    }
    out.push_str(" }");
}

fn write_value(out: &mut String, value: &Bson) {
    // Writing into a String cannot fail, so the fmt results are ignored.
    match value {
        Bson::Double(number) => {
            if number.is_finite() && number.fract() == 0.0 && number.abs() < 1e15 {
                let _ = write!(out, "{number:.1}");
            } else {
                let _ = write!(out, "{number}");
            }
        }
        Bson::String(text) => {
            let _ = write!(out, "{text:?}");
        }
        Bson::Document(document) => write_document(out, document),
        Bson::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push_str("[ ");
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push_str(" ]");
        }
        Bson::Int32(number) => {
            let _ = write!(out, "{number}");
        }
        Bson::Int64(number) => {
            let _ = write!(out, "{number}");
        }
        Bson::ObjectId(id) => {
            let _ = write!(out, "ObjectId('{}')", id.to_hex());
        }
        Bson::Boolean(flag) => {
            let _ = write!(out, "{flag}");
        }
        Bson::Null => out.push_str("null"),
        Bson::Undefined => out.push_str("undefined"),
        Bson::DateTime(date) => {
            let _ = write!(out, "new Date({})", date.timestamp_millis());
        }
        Bson::Timestamp(ts) => {
            let _ = write!(out, "Timestamp({}, {})", ts.time, ts.increment);
        }
        Bson::Decimal128(number) => {
            let _ = write!(out, "NumberDecimal(\"{number}\")");
        }
        Bson::MinKey => out.push_str("MinKey"),
        Bson::MaxKey => out.push_str("MaxKey"),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}
