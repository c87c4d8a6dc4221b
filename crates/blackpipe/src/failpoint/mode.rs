//! The generic `mode` of a fail point and its activation counting.

use bson::Bson;
use rand::Rng;

use super::FailPointError;

/// When a fail point triggers, as given by the `mode` field of `configureFailPoint`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailPointMode {
    /// Never triggers (`"off"`).
    Off,
    /// Triggers on every matching evaluation (`"alwaysOn"`).
    AlwaysOn,
    /// Triggers on the next `n` matching evaluations, then turns itself off (`{times: n}`).
    Times(i64),
    /// Lets the next `n` matching evaluations pass, then stays on (`{skip: n}`).
    Skip(i64),
    /// Triggers on each matching evaluation with this probability (`{activationProbability: p}`).
    Probability(f64),
}

impl FailPointMode {
    /// Parses the `mode` field the way mongod does: a string (`"off"`, `"alwaysOn"`) or a
    /// document with exactly one of `times`, `skip` or `activationProbability`.
    ///
    /// # Errors
    ///
    /// `TypeMismatch` (14) for a value of the wrong type, `BadValue` (2) for an unknown mode or
    /// an out-of-range number.
    pub fn parse(value: &Bson) -> Result<Self, FailPointError> {
        match value {
            Bson::String(name) => match name.as_str() {
                "off" => Ok(Self::Off),
                "alwaysOn" => Ok(Self::AlwaysOn),
                other => Err(FailPointError::bad_value(format!("unknown mode: {other}"))),
            },
            Bson::Document(options) => {
                if let Some(times) = options.get("times") {
                    Ok(Self::Times(non_negative_count(times, "times")?))
                } else if let Some(skip) = options.get("skip") {
                    Ok(Self::Skip(non_negative_count(skip, "skip")?))
                } else if let Some(probability) = options.get("activationProbability") {
                    let probability = as_f64(probability).ok_or_else(|| {
                        FailPointError::type_mismatch(
                            "'activationProbability' option to 'mode' must be a double",
                        )
                    })?;
                    if !(0.0..=1.0).contains(&probability) {
                        return Err(FailPointError::bad_value(
                            "'activationProbability' option to 'mode' must be between 0 and 1",
                        ));
                    }
                    Ok(Self::Probability(probability))
                } else {
                    Err(FailPointError::bad_value(
                        "'mode' must be one of 'off', 'alwaysOn', 'times', 'skip' and \
                         'activationProbability'",
                    ))
                }
            }
            _ => Err(FailPointError::type_mismatch(
                "'mode' must be a string or JSON object",
            )),
        }
    }
}

fn as_f64(value: &Bson) -> Option<f64> {
    match value {
        Bson::Double(v) => Some(*v),
        Bson::Int32(v) => Some(f64::from(*v)),
        // Counts this large are meaningless for a probability; precision loss is irrelevant.
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(v) => Some(*v as f64),
        _ => None,
    }
}

/// Reads an integral count: int32, int64, or a double without a fractional part (mongod's
/// `bsonExtractIntegerField` accepts all three), through the store's
/// [`blackpipe_store::integer::integral`]. Fail point fields take no decimals and only doubles
/// well inside `i64`'s exact range, as they always have: a larger one is not a number here.
pub(crate) fn integral(value: &Bson) -> Option<i64> {
    match value {
        Bson::Double(v) if v.abs() >= 9.0e15 => None,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => {
            blackpipe_store::integer::integral(value)
        }
        _ => None,
    }
}

fn non_negative_count(value: &Bson, field: &str) -> Result<i64, FailPointError> {
    let count = integral(value).ok_or_else(|| {
        FailPointError::type_mismatch(format!("'{field}' option to 'mode' must be a number"))
    })?;
    if count < 0 {
        return Err(FailPointError::bad_value(format!(
            "'{field}' option to 'mode' must be positive"
        )));
    }
    if count > i64::from(i32::MAX) {
        return Err(FailPointError::bad_value(format!(
            "'{field}' option to 'mode' is too large"
        )));
    }
    Ok(count)
}

/// A configured mode plus what is left of its count and how often it has triggered.
#[derive(Debug, Clone)]
pub(crate) struct ModeState {
    mode: FailPointMode,
    times_entered: i64,
}

impl ModeState {
    pub(crate) fn new(mode: FailPointMode) -> Self {
        Self {
            mode,
            times_entered: 0,
        }
    }

    /// True while the fail point can still trigger.
    pub(crate) fn is_active(&self) -> bool {
        match self.mode {
            FailPointMode::Off | FailPointMode::Times(0) => false,
            FailPointMode::Probability(p) => p > 0.0,
            _ => true,
        }
    }

    /// How many times the fail point triggered since it was configured.
    pub(crate) fn times_entered(&self) -> i64 {
        self.times_entered
    }

    /// Called once per evaluation whose filters matched: decides whether it triggers now, and
    /// consumes one unit of `times` / `skip`. Filters are checked before this, as mongod does,
    /// so non-matching commands never consume the count.
    pub(crate) fn should_trigger(&mut self, rng: &mut impl Rng) -> bool {
        let triggered = match &mut self.mode {
            FailPointMode::Off => false,
            FailPointMode::AlwaysOn => true,
            FailPointMode::Times(remaining) => {
                if *remaining > 0 {
                    *remaining -= 1;
                    true
                } else {
                    false
                }
            }
            FailPointMode::Skip(remaining) => {
                if *remaining > 0 {
                    *remaining -= 1;
                    false
                } else {
                    true
                }
            }
            FailPointMode::Probability(p) => rng.random_bool(p.clamp(0.0, 1.0)),
        };
        if triggered {
            self.times_entered += 1;
        }
        triggered
    }
}
