//! The `data` of mongod's `failCommand` and `onPrimaryTransactionalWrite` fail points.

use std::time::Duration;

use bson::{Bson, Document};

use super::FailPointError;
use super::mode::integral;

/// What the server knows about a command when it evaluates `failCommand`.
#[derive(Debug, Clone, Copy)]
pub struct CommandFacts<'a> {
    /// The canonical command name (`isMaster` for `ismaster`, `findAndModify` for
    /// `findandmodify`).
    pub name: &'a str,
    /// `db.collection` for commands naming a collection, `db.$cmd` otherwise.
    pub namespace: &'a str,
    /// The `application.name` the client sent in its handshake, if any.
    pub app_name: Option<&'a str>,
    /// Whether the command accepts a write concern (only those get an injected
    /// `writeConcernError`).
    pub supports_write_concern: bool,
}

/// The parsed `data` document of a `failCommand` fail point.
#[derive(Debug, Clone, PartialEq)]
pub struct FailCommand {
    /// Command names the fail point applies to (`failCommands`).
    pub fail_commands: Vec<String>,
    /// Only connections whose handshake named this application (`appName`).
    pub app_name: Option<String>,
    /// Only commands on this `db.coll` namespace (`namespace`).
    pub namespace: Option<String>,
    /// `closeConnection`: close the connection without replying.
    pub close_connection: bool,
    /// `errorCode`: fail the command with this code instead of running it.
    pub error_code: Option<i32>,
    /// `errorLabels`: replaces the labels the server would attach (`[]` removes them).
    pub error_labels: Option<Vec<String>>,
    /// `blockConnection` + `blockTimeMS`: hold the command this long first.
    pub block_for: Option<Duration>,
    /// `writeConcernError`: added to the reply after the write is applied.
    pub write_concern_error: Option<Document>,
    /// Whether any of `closeConnection`, `errorCode` or `blockConnection` was present: only then
    /// does the fail point act before the command runs (and consume its count there).
    acts_before_command: bool,
}

impl FailCommand {
    /// Parses the `data` document.
    ///
    /// # Errors
    ///
    /// `TypeMismatch` (14) when a field has the wrong type, `InvalidOptions` (72) when
    /// `blockConnection` is set without a non-negative `blockTimeMS`.
    pub fn parse(data: &Document) -> Result<Self, FailPointError> {
        let fail_commands = match data.get("failCommands") {
            None => Vec::new(),
            Some(Bson::Array(names)) => names
                .iter()
                .map(|name| match name {
                    Bson::String(name) => Ok(name.clone()),
                    _ => Err(FailPointError::type_mismatch(
                        "'failCommands' must be an array of strings",
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(FailPointError::type_mismatch(
                    "'failCommands' must be an array of strings",
                ));
            }
        };
        let close_connection = optional_bool(data, "closeConnection")?.unwrap_or(false);
        let error_code = match data.get("errorCode") {
            None => None,
            Some(code) => Some(
                integral(code)
                    .and_then(|code| i32::try_from(code).ok())
                    .ok_or_else(|| FailPointError::type_mismatch("'errorCode' must be a number"))?,
            ),
        };
        let error_labels = match data.get("errorLabels") {
            None => None,
            Some(Bson::Array(labels)) => Some(
                labels
                    .iter()
                    .map(|label| match label {
                        Bson::String(label) => Ok(label.clone()),
                        _ => Err(FailPointError::type_mismatch(
                            "'errorLabels' must be an array of strings",
                        )),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) => {
                return Err(FailPointError::type_mismatch(
                    "'errorLabels' must be an array of strings",
                ));
            }
        };
        let block_for = if optional_bool(data, "blockConnection")?.unwrap_or(false) {
            let millis = data.get("blockTimeMS").and_then(integral).ok_or_else(|| {
                FailPointError::invalid_options(
                    "must specify 'blockTimeMS' when 'blockConnection' is true",
                )
            })?;
            let millis = u64::try_from(millis).map_err(|_| {
                FailPointError::invalid_options("'blockTimeMS' must be non-negative")
            })?;
            // mongod reads blockTimeMS as a 32-bit int; refusing more keeps every deadline
            // computed from it far from overflow.
            if millis > u64::from(i32::MAX.unsigned_abs()) {
                return Err(FailPointError::bad_value(
                    "'blockTimeMS' must be at most 2147483647",
                ));
            }
            Some(Duration::from_millis(millis))
        } else {
            None
        };
        let write_concern_error = match data.get("writeConcernError") {
            None => None,
            Some(Bson::Document(error)) => Some(error.clone()),
            Some(_) => {
                return Err(FailPointError::type_mismatch(
                    "'writeConcernError' must be an object",
                ));
            }
        };
        Ok(Self {
            fail_commands,
            app_name: optional_string(data, "appName")?,
            namespace: optional_string(data, "namespace")?,
            close_connection,
            error_code,
            error_labels,
            block_for,
            write_concern_error,
            acts_before_command: data.contains_key("closeConnection")
                || data.contains_key("errorCode")
                || data.contains_key("blockConnection"),
        })
    }

    /// The filters, in mongod's order: application name, namespace, command name. The
    /// `configureFailPoint` command itself is never failed.
    pub fn matches(&self, facts: &CommandFacts<'_>) -> bool {
        if facts.name == "configureFailPoint" {
            return false;
        }
        if let Some(app_name) = &self.app_name {
            if facts.app_name != Some(app_name.as_str()) {
                return false;
            }
        }
        if let Some(namespace) = &self.namespace {
            if namespace != facts.namespace {
                return false;
            }
        }
        self.fail_commands
            .iter()
            .any(|name| same_command(name, facts.name))
    }

    /// Whether this fail point does anything before the command runs.
    pub fn acts_before_command(&self) -> bool {
        self.acts_before_command
    }

    /// What the server does before running a command this fail point triggered on.
    pub fn before_command_action(&self) -> FailCommandAction {
        // mongod blocks first, then closes, then fails with the code: closing wins over a code.
        let outcome = if self.close_connection {
            FailOutcome::CloseConnection
        } else if let Some(code) = self.error_code {
            FailOutcome::Error {
                code,
                labels: self.error_labels.clone(),
            }
        } else {
            FailOutcome::Proceed
        };
        FailCommandAction {
            block_for: self.block_for,
            outcome,
        }
    }
}

/// What to do with a command before running it.
#[derive(Debug, Clone, PartialEq)]
pub struct FailCommandAction {
    /// Hold the command this long first.
    pub block_for: Option<Duration>,
    /// Then do this.
    pub outcome: FailOutcome,
}

/// The end of a [`FailCommandAction`].
#[derive(Debug, Clone, PartialEq)]
pub enum FailOutcome {
    /// Run the command normally.
    Proceed,
    /// Close the connection without replying.
    CloseConnection,
    /// Reply with this error code, not running the command.
    Error {
        /// The error code.
        code: i32,
        /// Labels replacing the server's defaults, if the fail point gave `errorLabels`.
        labels: Option<Vec<String>>,
    },
}

/// A `writeConcernError` to add to a successful write's reply.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteConcernInjection {
    /// The `writeConcernError` document, as given to the fail point.
    pub error: Document,
    /// Labels replacing the server's defaults, if the fail point gave `errorLabels`.
    pub labels: Option<Vec<String>>,
}

/// The parsed `data` of `onPrimaryTransactionalWrite`.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionalWriteFault {
    /// `closeConnection` (default true): close the connection after the write commits.
    pub close_connection: bool,
    /// `failBeforeCommitExceptionCode`: fail with this code without committing (the driver sees
    /// the code only when `closeConnection` is false).
    pub fail_before_commit_code: Option<i32>,
}

impl TransactionalWriteFault {
    /// Parses the `data` document.
    ///
    /// # Errors
    ///
    /// `TypeMismatch` (14) when a field has the wrong type.
    pub fn parse(data: &Document) -> Result<Self, FailPointError> {
        let fail_before_commit_code = match data.get("failBeforeCommitExceptionCode") {
            None => None,
            Some(code) => Some(
                integral(code)
                    .and_then(|code| i32::try_from(code).ok())
                    .ok_or_else(|| {
                        FailPointError::type_mismatch(
                            "'failBeforeCommitExceptionCode' must be a number",
                        )
                    })?,
            ),
        };
        Ok(Self {
            close_connection: optional_bool(data, "closeConnection")?.unwrap_or(true),
            fail_before_commit_code,
        })
    }

    /// What the fault does to a retryable write it triggered on.
    ///
    /// mongod ends the client's session first (when `closeConnection`) and then, when
    /// `failBeforeCommitExceptionCode` is set, throws before the write unit commits: with both
    /// the write is not applied and the driver sees only the closed connection.
    pub fn action(&self) -> TransactionalWriteAction {
        if let Some(code) = self.fail_before_commit_code {
            if self.close_connection {
                TransactionalWriteAction::CloseBeforeCommit
            } else {
                TransactionalWriteAction::FailBeforeCommit { code }
            }
        } else if self.close_connection {
            TransactionalWriteAction::CloseAfterCommit
        } else {
            TransactionalWriteAction::Proceed
        }
    }
}

/// What `onPrimaryTransactionalWrite` does to one retryable write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionalWriteAction {
    /// Nothing.
    Proceed,
    /// Apply the write, then close the connection instead of replying.
    CloseAfterCommit,
    /// Close the connection without applying the write.
    CloseBeforeCommit,
    /// Fail with this code without applying the write.
    FailBeforeCommit {
        /// The error code.
        code: i32,
    },
}

fn optional_bool(data: &Document, field: &str) -> Result<Option<bool>, FailPointError> {
    match data.get(field) {
        None => Ok(None),
        Some(Bson::Boolean(value)) => Ok(Some(*value)),
        // mongod's boolean extraction also takes numbers (non-zero is true).
        Some(value) => match integral(value) {
            Some(number) => Ok(Some(number != 0)),
            None => Err(FailPointError::type_mismatch(format!(
                "'{field}' must be a boolean"
            ))),
        },
    }
}

fn optional_string(data: &Document, field: &str) -> Result<Option<String>, FailPointError> {
    match data.get(field) {
        None => Ok(None),
        Some(Bson::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(FailPointError::type_mismatch(format!(
            "'{field}' must be a string"
        ))),
    }
}

/// Whether a `failCommands` entry names the command `name`: mongod matches a command by its
/// name or any of its aliases, and the legacy hello is registered as `isMaster` with the
/// alias `ismaster`.
fn same_command(entry: &str, name: &str) -> bool {
    const LEGACY_HELLO: [&str; 2] = ["isMaster", "ismaster"];
    entry == name || (LEGACY_HELLO.contains(&entry) && LEGACY_HELLO.contains(&name))
}
