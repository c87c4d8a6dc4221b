//! OpenTelemetry tracing, as the OpenTelemetry specification for MongoDB drivers describes it:
//! one span per driver operation (`find shop.users`), one child span per command sent for it
//! (`find`, one per attempt, so a retried operation shows each attempt; one per batch of a bulk
//! write; a cursor's `getMore`s are operations of their own), and a `transaction`
//! span around the operations of a transaction, with the specification's attributes
//! (`db.system.name`, `db.namespace`, `db.collection.name`, `db.operation.name`,
//! `db.query.summary`, `server.address`, `db.mongodb.*`, `db.response.status_code`,
//! `exception.*`...).
//!
//! Available with the crate feature `opentelemetry`, and off until enabled, per client by
//! `ClientOptions::tracing` (`OpentelemetryOptions::enabled`) or for every client by the
//! environment variable
//! `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED` (`1`, `true` or `yes`). Spans go to the tracer
//! provider the options name, else to OpenTelemetry's global one: steadfast depends on the
//! OpenTelemetry API only, never on an SDK or an exporter, which the application chooses.
//!
//! The command text (`db.query.text`) is added only when
//! `OpentelemetryOptions::query_text_max_length` (or the environment variable
//! `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH`) is positive; it is never rendered
//! otherwise. Sensitive commands (authentication, `hello` with speculative authentication) get
//! no command span, as they get no command event.
//!
//! ```no_run
//! # async fn demo() -> steadfast::Result<()> {
//! use steadfast::{Client, options::ClientOptions, otel::OpentelemetryOptions};
//!
//! let mut options = ClientOptions::parse("mongodb://127.0.0.1:27017").await?;
//! options.tracing = Some(
//!     OpentelemetryOptions::builder()
//!         .enabled(true)
//!         .query_text_max_length(1000)
//!         .build(),
//! );
//! let client = Client::with_options(options)?;
//! # Ok(())
//! # }
//! ```
//!
//! Without the feature, steadfast still emits its `tracing` spans (target
//! `steadfast::operation`, see [`retries`](crate::retries)), named alike, for
//! `tracing-opentelemetry` or any `tracing` subscriber.

pub(crate) mod facts;

#[cfg(feature = "opentelemetry")]
mod options;
#[cfg(feature = "opentelemetry")]
mod spans;

#[cfg(not(feature = "opentelemetry"))]
mod off;

#[cfg(not(feature = "opentelemetry"))]
pub(crate) use off::{OperationTrace, Tracer, TransactionTrace};
#[cfg(feature = "opentelemetry")]
pub use options::OpentelemetryOptions;
#[cfg(feature = "opentelemetry")]
pub(crate) use spans::{OperationTrace, Tracer, TransactionTrace};

/// The command a command span describes, as sent (built only when the feature reads it).
#[cfg_attr(
    not(feature = "opentelemetry"),
    allow(
        dead_code,
        reason = "read by the command span, which needs the feature"
    )
)]
pub(crate) struct SentCommand<'a> {
    pub(crate) name: &'a str,
    pub(crate) database: &'a str,
    pub(crate) body: &'a bson::RawDocument,
    pub(crate) sequences: &'a [steadfast_wire::DocumentSequence],
    pub(crate) address: &'a steadfast_core::ServerAddress,
    pub(crate) driver_connection_id: u64,
    pub(crate) server_connection_id: Option<i64>,
    /// A sensitive command: it names the operation's span but gets no span of its own.
    pub(crate) sensitive: bool,
}

/// The environment variable that turns tracing on for clients whose options leave it unset.
pub const ENABLED_VARIABLE: &str = "OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED";

/// The environment variable that sets `db.query.text`'s maximum length for clients whose
/// options leave it unset.
pub const QUERY_TEXT_MAX_LENGTH_VARIABLE: &str =
    "OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH";

/// Whether tracing is on: the client's option, else the environment variable's value (`1`,
/// `true` or `yes`, in any case), else off.
#[cfg(feature = "opentelemetry")]
pub(crate) fn enabled(configured: Option<bool>, variable: Option<&str>) -> bool {
    configured.unwrap_or_else(|| {
        variable.is_some_and(|value| {
            matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes"
            )
        })
    })
}

/// `db.query.text`'s maximum length: the client's option, else the environment variable's
/// value when it is a number, else 0 (no query text).
#[cfg(feature = "opentelemetry")]
pub(crate) fn query_text_max_length(configured: Option<usize>, variable: Option<&str>) -> usize {
    configured.unwrap_or_else(|| {
        variable
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0)
    })
}

#[cfg(all(test, feature = "opentelemetry"))]
mod tests {
    use super::*;

    #[test]
    fn the_option_overrides_the_environment_which_defaults_to_off() {
        assert!(!enabled(None, None));
        assert!(enabled(None, Some("true")));
        assert!(enabled(None, Some("YES")));
        assert!(enabled(None, Some("1")));
        assert!(!enabled(None, Some("false")));
        assert!(!enabled(None, Some("on")));
        assert!(!enabled(Some(false), Some("true")));
        assert!(enabled(Some(true), None));
    }

    #[test]
    fn the_query_text_length_comes_from_the_option_then_the_environment() {
        assert_eq!(query_text_max_length(None, None), 0);
        assert_eq!(query_text_max_length(None, Some("1024")), 1024);
        assert_eq!(query_text_max_length(None, Some("lots")), 0);
        assert_eq!(query_text_max_length(Some(10), Some("1024")), 10);
        assert_eq!(query_text_max_length(Some(0), Some("1024")), 0);
    }
}
