//! mongod's fail points, as the `configureFailPoint` command sets them.
//!
//! Pure state: parsing and evaluation take the random generator as an argument, so a test can
//! replay any sequence. Each simulated process owns one [`FailPoints`]; a restart gives it a
//! fresh one, as restarting mongod does.
//!
//! Supported fail points:
//! - `failCommand`: filters `appName`, `namespace`, `failCommands` (checked in that order, and
//!   before the mode counts, so a command that does not match never consumes `times` or
//!   `skip`); effects `blockConnection`/`blockTimeMS`, `closeConnection`, `errorCode`,
//!   `errorLabels` (replacing the default labels; `[]` removes them) and `writeConcernError`
//!   (added after the write is applied, counted separately, as mongod does).
//! - `onPrimaryTransactionalWrite`: `closeConnection` (default true) after the write commits,
//!   or, with `failBeforeCommitExceptionCode`, without committing it; the code reaches the
//!   driver only when `closeConnection` is false.
//!
//! - `failGetMoreAfterCursorCheckout`: `errorCode` fails a getMore whose cursor exists, as
//!   if the error arose while it ran (so the server's own labels apply, e.g.
//!   `ResumableChangeStreamError` on a change stream).
//!
//! Modes: `"alwaysOn"`, `"off"`, `{times}`, `{skip}`, `{activationProbability}`. The reply is
//! `{count, ok: 1}` where `count` is how many times the fail point has triggered in this
//! process so far (mongod's `timesEntered`, which reconfiguring does not reset).
//!
//! Deviations from mongod, all stricter: an unknown fail point name, and a `data` document
//! mongod would only reject when the fail point fires (e.g. `blockConnection` without
//! `blockTimeMS`), are rejected by `configureFailPoint` itself.

mod fail_command;
mod mode;
mod overload;

#[cfg(test)]
mod tests;

use bson::{Bson, Document, doc};
use rand::Rng;

pub use fail_command::{
    CommandFacts, FailCommand, FailCommandAction, FailOutcome, TransactionalWriteAction,
    TransactionalWriteFault, WriteConcernInjection,
};
pub use mode::FailPointMode;
pub use overload::{OVERLOAD_CODE, Overload, OverloadError};

use mode::ModeState;

use blackpipe_store::code;

/// An error from `configureFailPoint`, shaped like mongod's command errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code_name} ({code}): {message}")]
pub struct FailPointError {
    /// The error code.
    pub code: i32,
    /// The code's name.
    pub code_name: &'static str,
    /// The message.
    pub message: String,
}

impl FailPointError {
    fn new(code: i32, code_name: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            code_name,
            message: message.into(),
        }
    }

    pub(crate) fn bad_value(message: impl Into<String>) -> Self {
        Self::new(code::BAD_VALUE, "BadValue", message)
    }

    pub(crate) fn type_mismatch(message: impl Into<String>) -> Self {
        Self::new(code::TYPE_MISMATCH, "TypeMismatch", message)
    }

    pub(crate) fn invalid_options(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_OPTIONS, "InvalidOptions", message)
    }

    /// The error as a command reply: `{ok: 0, errmsg, code, codeName}`.
    pub fn to_reply(&self) -> Document {
        doc! {
            "ok": 0.0,
            "errmsg": self.message.clone(),
            "code": self.code,
            "codeName": self.code_name,
        }
    }
}

/// The names of the fail points [`FailPoints`] understands.
pub const FAIL_COMMAND: &str = "failCommand";
/// See [`FAIL_COMMAND`].
pub const ON_PRIMARY_TRANSACTIONAL_WRITE: &str = "onPrimaryTransactionalWrite";
/// See [`FAIL_COMMAND`].
pub const FAIL_GET_MORE_AFTER_CURSOR_CHECKOUT: &str = "failGetMoreAfterCursorCheckout";
/// See [`FAIL_COMMAND`]: every operation with a time limit fails with MaxTimeMSExpired, as if
/// its time had run out.
pub const MAX_TIME_ALWAYS_TIME_OUT: &str = "maxTimeAlwaysTimeOut";

/// The fail points of one simulated server process.
#[derive(Debug, Clone, Default)]
pub struct FailPoints {
    fail_command: Option<(ModeState, FailCommand)>,
    transactional_write: Option<(ModeState, TransactionalWriteFault)>,
    /// `failGetMoreAfterCursorCheckout` and its error code.
    get_more: Option<(ModeState, i32)>,
    /// `maxTimeAlwaysTimeOut`.
    max_time: Option<ModeState>,
    /// Triggers of earlier configurations: mongod's `timesEntered` counts for the life of the
    /// process, across reconfigurations.
    fail_command_entered_before: i64,
    transactional_write_entered_before: i64,
    get_more_entered_before: i64,
    max_time_entered_before: i64,
}

impl FailPoints {
    /// Empty: every fail point off.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `configureFailPoint` (the caller has checked it was sent to `admin`), returning the
    /// reply `{count, ok: 1}`.
    ///
    /// # Errors
    ///
    /// The mongod-style error to send back (`BadValue`, `TypeMismatch`, `InvalidOptions`, or
    /// `IllegalOperation` (20) when `mode` is missing).
    pub fn configure(&mut self, command: &Document) -> Result<Document, FailPointError> {
        let name = match command.get("configureFailPoint") {
            Some(Bson::String(name)) => name.as_str(),
            _ => {
                return Err(FailPointError::type_mismatch(
                    "'configureFailPoint' must be the name of a fail point",
                ));
            }
        };
        let mode = match command.get("mode") {
            Some(mode) => FailPointMode::parse(mode)?,
            None => {
                return Err(FailPointError::new(
                    code::ILLEGAL_OPERATION,
                    "IllegalOperation",
                    "When setting a failpoint, you must supply a 'mode'",
                ));
            }
        };
        let empty = Document::new();
        let data = match command.get("data") {
            None => &empty,
            Some(Bson::Document(data)) => data,
            Some(_) => {
                return Err(FailPointError::type_mismatch(
                    "the 'data' field must be a JSON object",
                ));
            }
        };
        let times_entered = match name {
            FAIL_COMMAND => {
                let parsed = FailCommand::parse(data)?;
                let previous = self.fail_command.replace((ModeState::new(mode), parsed));
                self.fail_command_entered_before +=
                    previous.map_or(0, |(state, _)| state.times_entered());
                self.fail_command_entered_before
            }
            ON_PRIMARY_TRANSACTIONAL_WRITE => {
                let parsed = TransactionalWriteFault::parse(data)?;
                let previous = self
                    .transactional_write
                    .replace((ModeState::new(mode), parsed));
                self.transactional_write_entered_before +=
                    previous.map_or(0, |(state, _)| state.times_entered());
                self.transactional_write_entered_before
            }
            FAIL_GET_MORE_AFTER_CURSOR_CHECKOUT => {
                // Turning it off needs no error code (the unified runner sends only the mode).
                let code = match mode {
                    FailPointMode::Off => 0,
                    _ => get_more_error_code(data)?,
                };
                let previous = self.get_more.replace((ModeState::new(mode), code));
                self.get_more_entered_before +=
                    previous.map_or(0, |(state, _)| state.times_entered());
                self.get_more_entered_before
            }
            MAX_TIME_ALWAYS_TIME_OUT => {
                let previous = self.max_time.replace(ModeState::new(mode));
                self.max_time_entered_before += previous.map_or(0, |state| state.times_entered());
                self.max_time_entered_before
            }
            other => {
                return Err(FailPointError::bad_value(format!(
                    "Failed to find FailPoint {other}"
                )));
            }
        };
        Ok(doc! { "count": times_entered, "ok": 1.0 })
    }

    /// Evaluates `failCommand` before a command runs. `None` when it does not trigger.
    pub fn before_command(
        &mut self,
        facts: &CommandFacts<'_>,
        rng: &mut impl Rng,
    ) -> Option<FailCommandAction> {
        let (state, fail_command) = self.fail_command.as_mut()?;
        if !state.is_active() || !fail_command.acts_before_command() || !fail_command.matches(facts)
        {
            return None;
        }
        state
            .should_trigger(rng)
            .then(|| fail_command.before_command_action())
    }

    /// Evaluates `failCommand`'s `writeConcernError` after a write was applied. `None` when it
    /// does not trigger.
    pub fn after_write(
        &mut self,
        facts: &CommandFacts<'_>,
        rng: &mut impl Rng,
    ) -> Option<WriteConcernInjection> {
        let (state, fail_command) = self.fail_command.as_mut()?;
        let error = fail_command.write_concern_error.as_ref()?;
        if !facts.supports_write_concern || !state.is_active() || !fail_command.matches(facts) {
            return None;
        }
        state.should_trigger(rng).then(|| WriteConcernInjection {
            error: error.clone(),
            labels: fail_command.error_labels.clone(),
        })
    }

    /// Evaluates `onPrimaryTransactionalWrite` for a write carrying `lsid` + `txnNumber` on a
    /// primary.
    pub fn transactional_write(&mut self, rng: &mut impl Rng) -> TransactionalWriteAction {
        match self.transactional_write.as_mut() {
            Some((state, fault)) if state.is_active() => {
                if state.should_trigger(rng) {
                    fault.action()
                } else {
                    TransactionalWriteAction::Proceed
                }
            }
            _ => TransactionalWriteAction::Proceed,
        }
    }

    /// Evaluates `failGetMoreAfterCursorCheckout` for a getMore whose cursor exists: the error
    /// code to fail it with, if the fail point triggers.
    pub fn get_more_after_checkout(&mut self, rng: &mut impl Rng) -> Option<i32> {
        let (state, code) = self.get_more.as_mut()?;
        (state.is_active() && state.should_trigger(rng)).then_some(*code)
    }

    /// Evaluates `maxTimeAlwaysTimeOut` for an operation with a time limit: whether it fails
    /// with MaxTimeMSExpired.
    pub fn max_time_always_times_out(&mut self, rng: &mut impl Rng) -> bool {
        self.max_time
            .as_mut()
            .is_some_and(|state| state.is_active() && state.should_trigger(rng))
    }

    /// True if any fail point can still trigger (lets the hot path skip evaluation).
    pub fn any_active(&self) -> bool {
        self.fail_command
            .as_ref()
            .is_some_and(|(state, _)| state.is_active())
            || self
                .transactional_write
                .as_ref()
                .is_some_and(|(state, _)| state.is_active())
            || self
                .get_more
                .as_ref()
                .is_some_and(|(state, _)| state.is_active())
            || self.max_time.as_ref().is_some_and(ModeState::is_active)
    }
}

/// The `errorCode` of `failGetMoreAfterCursorCheckout` (required: the fail point only fails).
fn get_more_error_code(data: &Document) -> Result<i32, FailPointError> {
    match data.get("errorCode") {
        Some(code) => mode::integral(code)
            .and_then(|code| i32::try_from(code).ok())
            .ok_or_else(|| FailPointError::type_mismatch("'errorCode' must be a number")),
        None => Err(FailPointError::bad_value(
            "failGetMoreAfterCursorCheckout requires an 'errorCode'",
        )),
    }
}
