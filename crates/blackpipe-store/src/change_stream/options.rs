//! The `$changeStream` stage's options.

use bson::{Bson, Timestamp};

use super::token::{Position, ResumeToken};
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};

/// What a change stream watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    Collection { db: String, collection: String },
    Database { db: String },
    Cluster,
}

/// `fullDocument`: what update events carry as the document after the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FullDocument {
    Default,
    UpdateLookup,
    WhenAvailable,
    Required,
}

/// `fullDocumentBeforeChange`: whether events carry the document before the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BeforeChange {
    Off,
    WhenAvailable,
    Required,
}

/// Where the stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartPoint {
    /// After the newest write.
    Now,
    ResumeAfter(ResumeToken),
    StartAfter(ResumeToken),
    AtOperationTime(Timestamp),
}

impl StartPoint {
    /// The position to start after, given the newest write's timestamp.
    pub(crate) fn position(self, newest: Timestamp) -> Position {
        match self {
            StartPoint::Now => Position::after_all_at(newest),
            StartPoint::ResumeAfter(token) | StartPoint::StartAfter(token) => token.position,
            StartPoint::AtOperationTime(ts) => Position::before(ts),
        }
    }
}

/// A parsed `$changeStream` stage.
#[derive(Debug, Clone)]
pub(crate) struct StreamSpec {
    pub(crate) scope: Scope,
    pub(crate) full_document: FullDocument,
    pub(crate) before_change: BeforeChange,
    pub(crate) show_expanded: bool,
    pub(crate) start: StartPoint,
}

fn string_option<'a>(field: &str, value: &'a Bson) -> StoreResult<&'a str> {
    match value {
        Bson::String(text) => Ok(text),
        other => Err(CommandError::type_mismatch(format!(
            "BSON field '$changeStream.{field}' is the wrong type '{}', expected type 'string'",
            type_name(other)
        ))),
    }
}

fn bool_option(field: &str, value: &Bson) -> StoreResult<bool> {
    match value {
        Bson::Boolean(flag) => Ok(*flag),
        other => Err(CommandError::type_mismatch(format!(
            "BSON field '$changeStream.{field}' is the wrong type '{}', expected type 'bool'",
            type_name(other)
        ))),
    }
}

fn full_document(value: &Bson) -> StoreResult<FullDocument> {
    match string_option("fullDocument", value)? {
        "default" => Ok(FullDocument::Default),
        "updateLookup" => Ok(FullDocument::UpdateLookup),
        "whenAvailable" => Ok(FullDocument::WhenAvailable),
        "required" => Ok(FullDocument::Required),
        other => Err(CommandError::bad_value(format!(
            "Enumeration value '{other}' for field '$changeStream.fullDocument' is not a valid value."
        ))),
    }
}

fn before_change(value: &Bson) -> StoreResult<BeforeChange> {
    match string_option("fullDocumentBeforeChange", value)? {
        "off" => Ok(BeforeChange::Off),
        "whenAvailable" => Ok(BeforeChange::WhenAvailable),
        "required" => Ok(BeforeChange::Required),
        other => Err(CommandError::bad_value(format!(
            "Enumeration value '{other}' for field '$changeStream.fullDocumentBeforeChange' is not a valid value."
        ))),
    }
}

impl StreamSpec {
    /// Parses the stage's specification for a stream over `scope` (as the aggregate's target
    /// says; `allChangesForCluster` must agree with it).
    ///
    /// # Errors
    ///
    /// mongod's errors for a non-document specification, an unknown field, a wrong type or
    /// value, several resume options at once, and `allChangesForCluster` outside
    /// `{aggregate: 1}` on `admin` (or its absence there).
    pub(crate) fn parse(stage: &Bson, scope: Scope) -> StoreResult<StreamSpec> {
        let Bson::Document(options) = stage else {
            return Err(CommandError::new(
                code::FAILED_TO_PARSE,
                format!(
                    "the $changeStream stage must be an object, but found {}",
                    type_name(stage)
                ),
            ));
        };
        let mut spec = StreamSpec {
            scope,
            full_document: FullDocument::Default,
            before_change: BeforeChange::Off,
            show_expanded: false,
            start: StartPoint::Now,
        };
        let mut all_changes_for_cluster = false;
        for (field, value) in options {
            match field.as_str() {
                "fullDocument" => spec.full_document = full_document(value)?,
                "fullDocumentBeforeChange" => spec.before_change = before_change(value)?,
                "showExpandedEvents" => spec.show_expanded = bool_option(field, value)?,
                "allChangesForCluster" => all_changes_for_cluster = bool_option(field, value)?,
                "resumeAfter" => {
                    spec.set_start(StartPoint::ResumeAfter(ResumeToken::parse(field, value)?))?;
                }
                "startAfter" => {
                    spec.set_start(StartPoint::StartAfter(ResumeToken::parse(field, value)?))?;
                }
                "startAtOperationTime" => match value {
                    Bson::Timestamp(ts) => spec.set_start(StartPoint::AtOperationTime(*ts))?,
                    other => {
                        return Err(CommandError::type_mismatch(format!(
                            "BSON field '$changeStream.startAtOperationTime' is the wrong type '{}', expected type 'timestamp'",
                            type_name(other)
                        )));
                    }
                },
                // Accepted and without effect here: blackpipe has no system, migration or
                // raw oplog events to show.
                "showSystemEvents" | "showMigrationEvents" | "showRawUpdateDescription" => {
                    bool_option(field, value)?;
                }
                other => {
                    return Err(CommandError::new(
                        code::IDL_UNKNOWN_FIELD,
                        format!("BSON field '$changeStream.{other}' is an unknown field."),
                    ));
                }
            }
        }
        spec.check_scope(all_changes_for_cluster)?;
        Ok(spec)
    }

    fn set_start(&mut self, start: StartPoint) -> StoreResult<()> {
        if self.start != StartPoint::Now {
            return Err(CommandError::new(
                code::MULTIPLE_RESUME_OPTIONS,
                "Only one type of resume option is allowed, but multiple were found.",
            ));
        }
        self.start = start;
        Ok(())
    }

    /// A cluster-wide stream is `{aggregate: 1}` on `admin` with `allChangesForCluster`; the
    /// internal databases cannot be watched otherwise.
    fn check_scope(&self, all_changes_for_cluster: bool) -> StoreResult<()> {
        let internal = |db: &str| matches!(db, "admin" | "config" | "local");
        match &self.scope {
            Scope::Cluster if !all_changes_for_cluster => Err(CommandError::new(
                code::INVALID_NAMESPACE,
                "$changeStream may not be opened on the internal admin database",
            )),
            Scope::Cluster => Ok(()),
            _ if all_changes_for_cluster => Err(CommandError::new(
                code::INVALID_OPTIONS,
                "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name",
            )),
            Scope::Collection { db, .. } | Scope::Database { db } if internal(db) => {
                Err(CommandError::new(
                    code::INVALID_NAMESPACE,
                    format!("$changeStream may not be opened on the internal {db} database"),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The specification document of a `$changeStream` first stage, if the pipeline has one.
pub fn first_stage(stages: &[Bson]) -> Option<&Bson> {
    match stages.first() {
        Some(Bson::Document(stage)) if stage.len() == 1 => stage.get("$changeStream"),
        _ => None,
    }
}

/// Whether `stage` is `{<name>: ...}` for one of `names`.
pub(crate) fn is_stage(stage: &Bson, names: &[&str]) -> bool {
    matches!(stage, Bson::Document(stage) if stage.keys().next().is_some_and(|name| names.contains(&name.as_str())))
}
