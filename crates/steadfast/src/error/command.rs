//! Command errors (`ok: 0` replies), parsed from replies.

use std::fmt;
use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use steadfast_core::ErrorLabels;
use steadfast_core::description::TopologyVersion;
use steadfast_core::description::topology_version_of;

/// A command the server answered with `ok: 0`. Serialized with the reply's own field names
/// (`code`, `codeName`, `errmsg`, `topologyVersion`, `baseBackoffMS`); the labels travel with
/// the [`crate::Error`], not here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CommandError {
    /// The numeric error code (0 when the server sent none).
    #[serde(default)]
    pub code: i32,
    /// The symbolic code name, e.g. `NotWritablePrimary` (empty when absent).
    #[serde(rename = "codeName", default)]
    pub code_name: String,
    /// The server's `errmsg`.
    #[serde(rename = "errmsg", default)]
    pub message: String,
    /// The `errorLabels` the server attached, until the [`crate::Error`] made of this takes
    /// them (read them there: [`crate::Error::labels`]); moved, never copied.
    #[serde(skip)]
    pub(crate) labels: ErrorLabels,
    /// The server's `topologyVersion` at the time of the error (4.4+ state-change errors).
    #[serde(
        rename = "topologyVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub topology_version: Option<TopologyVersion>,
    /// The base of the backoff before a retry the server asked for (`baseBackoffMS`, client
    /// backpressure specification): it replaces the driver's 100 ms base when positive.
    #[serde(
        rename = "baseBackoffMS",
        default,
        skip_serializing_if = "Option::is_none",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    pub base_backoff: Option<Duration>,
    #[serde(skip, default = "present")]
    has_code: bool,
}

/// A deserialized error names its code (it is not read from a reply without one).
fn present() -> bool {
    true
}

impl CommandError {
    /// A command error with the given code, name and message (no labels, no topology version).
    pub fn new(code: i32, code_name: impl Into<String>, message: impl Into<String>) -> Self {
        CommandError {
            code,
            code_name: code_name.into(),
            message: message.into(),
            labels: ErrorLabels::new(),
            topology_version: None,
            base_backoff: None,
            has_code: true,
        }
    }

    /// Reads a command error from a reply document whose `ok` is not 1.
    pub fn from_reply(reply: &Document) -> Self {
        let code = reply.get("code").and_then(bson_as_i32);
        CommandError {
            code: code.unwrap_or(0),
            code_name: reply.get_str("codeName").unwrap_or_default().to_string(),
            message: reply.get_str("errmsg").unwrap_or_default().to_string(),
            labels: labels_of(reply),
            topology_version: topology_version_of(reply),
            base_backoff: base_backoff_of(reply),
            has_code: code.is_some(),
        }
    }

    /// The code, or `None` when the reply had no `code` field (SDAM then falls back to the
    /// message).
    pub fn code_if_present(&self) -> Option<i32> {
        self.has_code.then_some(self.code)
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "command failed")?;
        match (self.has_code, self.code_name.is_empty()) {
            (true, false) => write!(f, " ({} {})", self.code_name, self.code)?,
            (true, true) => write!(f, " (code {})", self.code)?,
            (false, _) => {}
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// A numeric BSON value as i32, when it fits exactly.
pub(crate) fn bson_as_i32(value: &Bson) -> Option<i32> {
    match value {
        Bson::Int32(v) => Some(*v),
        Bson::Int64(v) => i32::try_from(*v).ok(),
        Bson::Double(v)
            if v.fract() == 0.0 && *v >= f64::from(i32::MIN) && *v <= f64::from(i32::MAX) =>
        {
            // Exact: checked integral and in range just above.
            Some(*v as i32)
        }
        _ => None,
    }
}

/// A positive `baseBackoffMS`, as a duration.
fn base_backoff_of(reply: &Document) -> Option<Duration> {
    let millis = match reply.get("baseBackoffMS")? {
        Bson::Int32(ms) => f64::from(*ms),
        // Backoffs are far below 2^53 ms: the conversion is exact where it matters.
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(ms) => *ms as f64,
        Bson::Double(ms) => *ms,
        _ => return None,
    };
    (millis.is_finite() && millis > 0.0).then(|| Duration::from_secs_f64(millis.min(1e12) / 1000.0))
}

pub(super) fn labels_of(doc: &Document) -> ErrorLabels {
    doc.get_array("errorLabels")
        .map(|labels| labels.iter().filter_map(Bson::as_str).collect())
        .unwrap_or_default()
}

impl std::error::Error for CommandError {}
