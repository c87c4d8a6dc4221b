//! Document validation: a collection's `validator` (query operators and `$jsonSchema`) with its
//! `validationLevel` and `validationAction`, checked on inserts and updates as mongod checks
//! them, refusing with DocumentValidationFailure (121) and mongod's `errInfo` (see [`details`]).

mod details;

use bson::{Bson, Document, doc};

use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::query::Filter;

/// Which writes the validator applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Every insert and update.
    Strict,
    /// Inserts, and updates of documents that satisfied the validator before.
    Moderate,
}

/// What a refused write does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// The write fails with 121.
    Error,
    /// The write goes through (mongod logs a warning; blackpipe has no log to write it to).
    Warn,
}

/// A collection's validator, parsed once when the options are set.
#[derive(Debug, Clone)]
pub(crate) struct Validator {
    filter: Filter,
    rules: Document,
    level: Level,
    action: Action,
}

/// What a write to a validated collection is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Write<'a> {
    Insert,
    /// An update (or replacement) of the document that was `before`.
    Update {
        before: &'a Document,
    },
}

fn option_error(command: &str, field: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field '{command}.{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

fn enumeration<'a>(
    command: &str,
    field: &str,
    value: &'a Bson,
    allowed: &[&str],
) -> StoreResult<&'a str> {
    let Bson::String(text) = value else {
        return Err(option_error(command, field, value, "string"));
    };
    if !allowed.contains(&text.as_str()) {
        return Err(CommandError::bad_value(format!(
            "Enumeration value '{text}' for field '{command}.{field}' is not a valid value."
        )));
    }
    Ok(text)
}

/// Checks the validation options `create` or `collMod` (`command`) sets.
///
/// # Errors
/// TypeMismatch for a field of the wrong type; BadValue for an unknown level or action; the
/// validator's parse errors.
pub(crate) fn check_options(command: &str, options: &Document) -> StoreResult<()> {
    if let Some(validator) = options.get("validator") {
        let Bson::Document(validator) = validator else {
            return Err(option_error(command, "validator", validator, "object"));
        };
        Filter::parse(validator)?;
    }
    if let Some(level) = options.get("validationLevel") {
        enumeration(
            command,
            "validationLevel",
            level,
            &["off", "strict", "moderate"],
        )?;
    }
    if let Some(action) = options.get("validationAction") {
        enumeration(command, "validationAction", action, &["error", "warn"])?;
    }
    Ok(())
}

impl Validator {
    /// The validator a collection's options set up: `None` without one, with an empty one, or
    /// with `validationLevel: "off"` (options were checked by [`check_options`] when set).
    pub(crate) fn of(options: &Document) -> Option<Validator> {
        let rules = options.get_document("validator").ok()?;
        if rules.is_empty() {
            return None;
        }
        let level = match options.get_str("validationLevel").unwrap_or("strict") {
            "off" => return None,
            "moderate" => Level::Moderate,
            _ => Level::Strict,
        };
        let action = match options.get_str("validationAction").unwrap_or("error") {
            "warn" => Action::Warn,
            _ => Action::Error,
        };
        Some(Validator {
            filter: Filter::parse(rules).ok()?,
            rules: rules.clone(),
            level,
            action,
        })
    }

    /// Checks `document` as written by `write`.
    ///
    /// # Errors
    /// DocumentValidationFailure (121) with `errInfo: {failingDocumentId, details}`.
    pub(crate) fn check(&self, document: &Document, write: Write<'_>) -> StoreResult<()> {
        if self.action == Action::Warn || self.filter.matches(document) {
            return Ok(());
        }
        if let (Level::Moderate, Write::Update { before }) = (self.level, write) {
            if !self.filter.matches(before) {
                return Ok(());
            }
        }
        let mut error = CommandError::new(
            code::DOCUMENT_VALIDATION_FAILURE,
            "Document failed validation",
        );
        error.extra.insert(
            "errInfo",
            doc! {
                "failingDocumentId": document.get("_id").cloned().unwrap_or(Bson::Null),
                "details": details::of_rules(&self.rules, document),
            },
        );
        Err(error)
    }
}
