//! Time a command spends on the server, and `maxTimeMS`: how mongod reads it and what it does
//! to the time a command takes.
//!
//! mongod reads `maxTimeMS` after the `failCommand` fail point (so `blockConnection` neither
//! counts towards it nor is cut short by it) and then interrupts the command once that much
//! time has passed, answering `MaxTimeMSExpired` (50). blackpipe's commands run instantly
//! except where a knob gives them time (a slow node, a member's command execution time):
//! those waits end at `maxTimeMS`.

use std::time::Duration;

use bson::{Bson, Document};

use super::NodeContext;
use crate::deployment::errors::{self, INTERRUPTED_DUE_TO_REPL_STATE_CHANGE, SessionFacts};
use crate::server::Outcome;
use blackpipe_store::code;

/// The largest `maxTimeMS` mongod accepts (`INT_MAX`).
const MAX_TIME_MS_LIMIT: i64 = i32::MAX as i64;

/// Reads a command's `maxTimeMS` as mongod's `parseMaxTimeMS` does: absent or `0` is no limit;
/// any numeric type is accepted if it is a whole number from 0 to 2^31 - 1.
///
/// # Errors
///
/// The `BadValue` (2) reply mongod sends: not a number, out of range, or (for a double) not a
/// whole number.
pub(crate) fn parse(command: &Document) -> Result<Option<Duration>, Document> {
    let millis = match command.get("maxTimeMS") {
        None => return Ok(None),
        Some(Bson::Int32(value)) => i64::from(*value),
        Some(Bson::Int64(value)) => *value,
        Some(Bson::Double(value)) => whole_millis(*value)?,
        Some(Bson::Decimal128(value)) => {
            // mongod truncates a decimal towards zero; a value it cannot read is no number.
            let parsed = value
                .to_string()
                .parse::<f64>()
                .map_err(|_| not_a_number())?;
            whole_millis(parsed.trunc())?
        }
        Some(_) => return Err(not_a_number()),
    };
    if !(0..=MAX_TIME_MS_LIMIT).contains(&millis) {
        return Err(bad_value("maxTimeMS is out of range"));
    }
    let millis = u64::try_from(millis).map_err(|_| bad_value("maxTimeMS is out of range"))?;
    Ok((millis > 0).then(|| Duration::from_millis(millis)))
}

/// A double as whole milliseconds: out-of-range values saturate (and are then refused by the
/// range check), fractions and NaN are refused, in that order, as mongod checks them.
fn whole_millis(value: f64) -> Result<i64, Document> {
    // `as` saturates, and maps NaN to 0, exactly like mongod's safeNumberLong.
    let saturated = value as i64;
    if !(0..=MAX_TIME_MS_LIMIT).contains(&saturated) {
        return Err(bad_value("maxTimeMS is out of range"));
    }
    if value.floor() != value {
        return Err(bad_value("maxTimeMS has non-integral value"));
    }
    Ok(saturated)
}

fn not_a_number() -> Document {
    bad_value("maxTimeMS must be a number")
}

fn bad_value(message: &str) -> Document {
    errors::error_reply(code::BAD_VALUE, message)
}

/// How long a command that would take `work` runs under a `maxTimeMS` of `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// It finishes after `work`.
    Completes(Duration),
    /// It is interrupted after `limit` and answers `MaxTimeMSExpired`.
    Expires(Duration),
}

impl Run {
    /// A command doing `work` under `limit`: interrupted when `limit` is shorter. A command
    /// that takes exactly its limit completes, as mongod checks for interruption only between
    /// units of work.
    pub(crate) fn of(work: Duration, limit: Option<Duration>) -> Self {
        match limit {
            Some(limit) if limit < work => Self::Expires(limit),
            _ => Self::Completes(work),
        }
    }

    /// How long the command runs before it answers.
    pub(crate) fn duration(self) -> Duration {
        match self {
            Self::Completes(duration) | Self::Expires(duration) => duration,
        }
    }
}

/// mongod's reply to a command interrupted at its `maxTimeMS`.
pub(crate) fn expired_reply() -> Document {
    errors::error_reply(code::MAX_TIME_MS_EXPIRED, "operation exceeded time limit")
}

/// Spends `work` of modelled server time on a command limited to `limit` (its maxTimeMS).
/// `Some` answer when the command ends there: interrupted at its maxTimeMS, or, for a write on
/// the primary, by a stepdown. `None` when the work is done and the command goes on.
pub(crate) async fn spend(
    node: &NodeContext,
    work: Duration,
    limit: Option<Duration>,
    write_on_primary: Option<i64>,
    session: SessionFacts,
) -> Option<Outcome> {
    if work.is_zero() {
        return None;
    }
    let run = Run::of(work, limit);
    if node.pause(run.duration(), write_on_primary).await.is_err() {
        return Some(interrupted(node, session));
    }
    match run {
        Run::Completes(_) => None,
        Run::Expires(_) => Some(node.finish(expired_reply(), session, None)),
    }
}

pub(crate) fn interrupted(node: &NodeContext, session: SessionFacts) -> Outcome {
    node.finish(
        errors::error_reply(
            INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
            "operation was interrupted because a replica set state change occurred",
        ),
        session,
        None,
    )
}

#[cfg(test)]
mod tests {
    use bson::{Decimal128, doc};

    use super::*;

    fn code(reply: &Document) -> Option<i32> {
        reply.get_i32("code").ok()
    }

    fn millis(value: impl Into<Bson>) -> Result<Option<Duration>, Document> {
        parse(&doc! { "find": "c", "maxTimeMS": value.into() })
    }

    #[test]
    fn absent_and_zero_mean_no_limit() {
        assert_eq!(parse(&doc! { "find": "c" }), Ok(None));
        assert_eq!(millis(0), Ok(None));
        assert_eq!(millis(0.0), Ok(None));
    }

    #[test]
    fn every_numeric_type_holding_a_whole_number_is_a_limit() {
        let fifty = Ok(Some(Duration::from_millis(50)));
        assert_eq!(millis(50), fifty);
        assert_eq!(millis(50_i64), fifty);
        assert_eq!(millis(50.0), fifty);
        let decimal: Decimal128 = "50.7".parse().unwrap();
        assert_eq!(millis(decimal), fifty);
        assert_eq!(
            millis(i64::from(i32::MAX)),
            Ok(Some(Duration::from_millis(2_147_483_647)))
        );
    }

    #[test]
    fn negative_too_large_fractional_and_non_numeric_values_are_bad_values() {
        for value in [
            Bson::Int32(-1),
            Bson::Int64(i64::from(i32::MAX) + 1),
            Bson::Int64(i64::MIN),
            Bson::Double(-0.5),
            Bson::Double(1e300),
            Bson::Double(f64::INFINITY),
            Bson::Double(f64::NAN),
            Bson::Double(12.5),
            Bson::String("50".into()),
            Bson::Boolean(true),
            Bson::Null,
        ] {
            let reply = millis(value.clone()).expect_err(&format!("{value:?} accepted"));
            assert_eq!(code(&reply), Some(2), "{value:?}: {reply}");
            assert_eq!(reply.get_str("codeName").ok(), Some("BadValue"));
        }
    }

    #[test]
    fn work_longer_than_the_limit_expires_at_the_limit() {
        let limit = Some(Duration::from_millis(50));
        assert_eq!(
            Run::of(Duration::from_millis(200), limit),
            Run::Expires(Duration::from_millis(50))
        );
        assert_eq!(
            Run::of(Duration::from_millis(50), limit),
            Run::Completes(Duration::from_millis(50))
        );
        assert_eq!(
            Run::of(Duration::from_millis(200), None),
            Run::Completes(Duration::from_millis(200))
        );
        assert_eq!(
            Run::of(Duration::from_millis(200), limit).duration(),
            Duration::from_millis(50)
        );
    }

    #[test]
    fn the_expired_reply_is_mongods() {
        let reply = expired_reply();
        assert_eq!(code(&reply), Some(code::MAX_TIME_MS_EXPIRED));
        assert_eq!(reply.get_str("codeName").ok(), Some("MaxTimeMSExpired"));
    }
}
