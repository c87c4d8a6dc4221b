//! `expectError` assertions against a steadfast [`Error`].

use bson::{Bson, Document};
use steadfast::error::{WriteConcernError, WriteFailure};
use steadfast::{Error, ErrorKind};

use crate::matcher::{EntityValues, match_root};

/// Checks `expected` (an `expectedError` document) against `error`; `partial_result` is the
/// result the error carries, if any (a bulk write's `writeResult`).
pub(crate) fn check(
    expected: &Document,
    error: &Error,
    partial_result: Option<&Bson>,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    for (key, value) in expected {
        match key.as_str() {
            "isError" => {}
            "isClientError" => {
                let wanted = value.as_bool().ok_or("isClientError is a boolean")?;
                let is_client = !matches!(
                    error.kind(),
                    ErrorKind::Command(_)
                        | ErrorKind::Write(_)
                        | ErrorKind::InsertMany(_)
                        | ErrorKind::BulkWrite(_)
                );
                if wanted != is_client {
                    return Err(format!(
                        "field `isClientError`: expected {wanted}, the error is {}a client error: {error}",
                        if is_client { "" } else { "not " }
                    ));
                }
            }
            "isTimeoutError" => {
                let wanted = value.as_bool().ok_or("isTimeoutError is a boolean")?;
                if wanted != error.is_timeout() {
                    return Err(format!(
                        "field `isTimeoutError`: expected {wanted}, got {}: {error}",
                        error.is_timeout()
                    ));
                }
            }
            "errorContains" => {
                let needle = value.as_str().ok_or("errorContains is a string")?;
                let message = error.to_string();
                if !message.to_lowercase().contains(&needle.to_lowercase()) {
                    return Err(format!(
                        "field `errorContains`: {needle:?} not found in {message:?}"
                    ));
                }
            }
            "errorCode" => {
                let wanted = integer(value).ok_or("errorCode is an integer")?;
                if error.code().map(i64::from) != Some(wanted) {
                    return Err(format!(
                        "field `errorCode`: expected {wanted}, got {:?}: {error}",
                        error.code()
                    ));
                }
            }
            "errorCodeName" => {
                let wanted = value.as_str().ok_or("errorCodeName is a string")?;
                let names = code_names(error);
                if !names.iter().any(|n| n.eq_ignore_ascii_case(wanted)) {
                    return Err(format!(
                        "field `errorCodeName`: expected {wanted}, got {names:?}: {error}"
                    ));
                }
            }
            "errorLabelsContain" => {
                for label in labels(value)? {
                    if !error.has_label(label) {
                        return Err(format!(
                            "field `errorLabelsContain`: label {label} missing; labels are {:?}: {error}",
                            error.labels().iter().collect::<Vec<_>>()
                        ));
                    }
                }
            }
            "errorLabelsOmit" => {
                for label in labels(value)? {
                    if error.has_label(label) {
                        return Err(format!(
                            "field `errorLabelsOmit`: label {label} present; labels are {:?}: {error}",
                            error.labels().iter().collect::<Vec<_>>()
                        ));
                    }
                }
            }
            "errorResponse" => {
                // A client bulk write wraps the command error it stopped on: its reply is
                // the source's.
                let source = std::error::Error::source(error)
                    .and_then(|s| s.downcast_ref::<steadfast::Error>());
                let response = error
                    .server_response()
                    .or_else(|| source?.server_response())
                    .and_then(|raw| Document::try_from(raw.clone()).ok())
                    .ok_or_else(|| format!("field `errorResponse`: no server reply in {error}"))?;
                match_root(value, Some(&Bson::Document(response)), entities)
                    .map_err(|m| format!("field `errorResponse`: {m}"))?;
            }
            "writeConcernErrors" | "writeErrors" => {
                let actual = crate::ops::client_bulk_write::error_field(error, key);
                match_each_as_root(value, actual.as_ref(), entities)
                    .map_err(|m| format!("field `{key}` of the error: {m}"))?;
            }
            "expectResult" => {
                match_root(value, partial_result, entities)
                    .map_err(|m| format!("field `expectResult` of the error: {m}"))?;
            }
            other => {
                return Err(format!(
                    "field `{other}` of expectError is not supported by this runner"
                ));
            }
        }
    }
    Ok(())
}

/// A client bulk write's `writeErrors` (by index) or `writeConcernErrors` (in order): each
/// expected entry matches the actual one as a root-level document (extra fields allowed), and
/// the error holds no entry the test did not expect.
pub(crate) fn match_each_as_root(
    expected: &Bson,
    actual: Option<&Bson>,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    match (expected, actual) {
        (Bson::Document(expected), Some(Bson::Document(actual))) => {
            for (index, entry) in expected {
                match_root(entry, actual.get(index), entities)
                    .map_err(|m| format!("entry {index}: {m}"))?;
            }
            match actual.keys().find(|index| !expected.contains_key(index)) {
                Some(index) => Err(format!("an unexpected entry at index {index}")),
                None => Ok(()),
            }
        }
        (Bson::Array(expected), Some(Bson::Array(actual))) => {
            if expected.len() != actual.len() {
                return Err(format!(
                    "expected {} entries, the error has {}",
                    expected.len(),
                    actual.len()
                ));
            }
            for (index, (entry, got)) in expected.iter().zip(actual).enumerate() {
                match_root(entry, Some(got), entities)
                    .map_err(|m| format!("entry {index}: {m}"))?;
            }
            Ok(())
        }
        (_, None) => Err("the error is not a client bulk write error".to_owned()),
        (expected, Some(actual)) => Err(format!("expected {expected}, the error has {actual}")),
    }
}

/// The code names of the command error, or of the write concern errors and write errors.
fn code_names(error: &Error) -> Vec<String> {
    let (concern, refused): (Vec<&WriteConcernError>, Vec<Option<&String>>) = match error.kind() {
        ErrorKind::Command(c) => return vec![c.code_name.clone()],
        ErrorKind::Write(WriteFailure::WriteConcernError(e)) => (vec![e], Vec::new()),
        ErrorKind::Write(WriteFailure::WriteError(e)) => (Vec::new(), vec![e.code_name.as_ref()]),
        ErrorKind::InsertMany(e) => (
            e.write_concern_error.iter().collect(),
            e.write_errors
                .iter()
                .flatten()
                .map(|e| e.code_name.as_ref())
                .collect(),
        ),
        ErrorKind::BulkWrite(e) => (
            e.write_concern_errors.iter().collect(),
            e.write_errors
                .values()
                .map(|e| e.code_name.as_ref())
                .collect(),
        ),
        _ => return Vec::new(),
    };
    concern
        .into_iter()
        .map(|e| e.code_name.clone())
        .chain(refused.into_iter().flatten().cloned())
        .collect()
}

fn labels(value: &Bson) -> Result<Vec<&str>, String> {
    match value {
        Bson::Array(items) => items
            .iter()
            .map(|l| l.as_str().ok_or_else(|| "labels are strings".to_owned()))
            .collect(),
        _ => Err("error labels must be an array".to_owned()),
    }
}

/// An integral BSON number.
pub(crate) fn integer(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 => format!("{v:.0}").parse().ok(),
        _ => None,
    }
}
