//! Reading command arguments with mongod's (IDL) error codes and messages.

use bson::{Bson, Document};

use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::value_order::Number;

/// The collection named by the command's first field.
pub(crate) fn collection_name<'a>(command: &'a Document, name: &str) -> StoreResult<&'a str> {
    match command.get(name) {
        Some(Bson::String(collection)) => Ok(collection),
        Some(other) => Err(CommandError::new(
            code::INVALID_NAMESPACE,
            format!("collection name has invalid type {}", type_name(other)),
        )),
        None => Err(CommandError::new(
            code::INVALID_NAMESPACE,
            "collection name is missing",
        )),
    }
}

fn wrong_type(command_name: &str, field: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field '{command_name}.{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

/// A required field was absent.
pub(crate) fn missing(command_name: &str, field: &str) -> CommandError {
    CommandError::new(
        code::IDL_MISSING_FIELD,
        format!("BSON field '{command_name}.{field}' is missing but a required field"),
    )
}

/// An optional embedded document.
pub(crate) fn optional_document<'a>(
    command: &'a Document,
    command_name: &str,
    field: &str,
) -> StoreResult<Option<&'a Document>> {
    match command.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(document)) => Ok(Some(document)),
        Some(other) => Err(wrong_type(command_name, field, other, "object")),
    }
}

/// A required array.
pub(crate) fn required_array<'a>(
    command: &'a Document,
    command_name: &str,
    field: &str,
) -> StoreResult<&'a [Bson]> {
    match command.get(field) {
        Some(Bson::Array(items)) => Ok(items),
        Some(other) => Err(wrong_type(command_name, field, other, "array")),
        None => Err(missing(command_name, field)),
    }
}

/// An optional boolean; numbers are accepted as mongod's "safe bool" fields do.
pub(crate) fn optional_bool(
    command: &Document,
    command_name: &str,
    field: &str,
) -> StoreResult<Option<bool>> {
    match command.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Boolean(flag)) => Ok(Some(*flag)),
        Some(other) => match Number::of(other) {
            Some(number) => Ok(Some(number.as_f64() != 0.0)),
            None => Err(wrong_type(command_name, field, other, "bool")),
        },
    }
}

/// An optional integral number (any numeric type holding a whole value).
pub(crate) fn optional_integer(
    command: &Document,
    command_name: &str,
    field: &str,
) -> StoreResult<Option<i64>> {
    match command.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(value) => match Number::of(value) {
            Some(Number::Int(number)) => Ok(Some(number)),
            // Whole doubles only, so the cast is exact (saturating beyond i64's range).
            #[allow(clippy::cast_possible_truncation)]
            Some(Number::Float(number)) if number.fract() == 0.0 => Ok(Some(number as i64)),
            Some(Number::Float(_) | Number::Decimal(_)) => crate::integer::integral(value)
                .map(Some)
                .ok_or_else(|| whole_number_error(command_name, field)),
            None => Err(CommandError::type_mismatch(format!(
                "BSON field '{command_name}.{field}' is the wrong type '{}', expected types '[long, int, decimal, double]'",
                type_name(value)
            ))),
        },
    }
}

fn whole_number_error(command_name: &str, field: &str) -> CommandError {
    CommandError::bad_value(format!(
        "BSON field '{command_name}.{field}' must be a whole number"
    ))
}

/// An optional non-negative integer (`skip`, `limit`, `batchSize`).
pub(crate) fn optional_non_negative(
    command: &Document,
    command_name: &str,
    field: &str,
) -> StoreResult<Option<usize>> {
    match optional_integer(command, command_name, field)? {
        None => Ok(None),
        Some(value) if value < 0 => Err(CommandError::new(
            code::NON_NEGATIVE,
            format!("BSON field '{field}' value must be >= 0, actual value '{value}'"),
        )),
        Some(value) => Ok(Some(usize::try_from(value).unwrap_or(usize::MAX))),
    }
}

/// The `batchSize` of a `cursor: {batchSize}` option, for aggregate and the list commands.
pub(crate) fn cursor_batch_size(
    command: &Document,
    command_name: &str,
) -> StoreResult<Option<usize>> {
    match optional_document(command, command_name, "cursor")? {
        Some(cursor) => optional_non_negative(cursor, "cursor", "batchSize"),
        None => Ok(None),
    }
}

/// A statement of a write batch (`updates.N`, `deletes.N`) must be a document.
pub(crate) fn statement<'a>(
    item: &'a Bson,
    command_name: &str,
    field: &str,
    position: usize,
) -> StoreResult<&'a Document> {
    match item {
        Bson::Document(document) => Ok(document),
        other => Err(wrong_type(
            command_name,
            &format!("{field}.{position}"),
            other,
            "object",
        )),
    }
}

/// Fields every command may carry, which are not options of the command itself.
pub(crate) fn is_generic_field(field: &str) -> bool {
    field.starts_with('$')
        || matches!(
            field,
            "lsid"
                | "txnNumber"
                | "writeConcern"
                | "readConcern"
                | "comment"
                | "maxTimeMS"
                | "apiVersion"
                | "apiStrict"
                | "apiDeprecationErrors"
                | "autocommit"
                | "startTransaction"
                | "stmtId"
                | "stmtIds"
                | "bypassDocumentValidation"
        )
}
