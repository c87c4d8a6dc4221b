//! Without the `opentelemetry` feature: the same types as `spans.rs`, empty, so that the
//! executor and sessions call them unconditionally and the compiler removes the calls.

use bson::RawDocument;

use super::SentCommand;
use crate::error::Error;

/// No tracer: tracing needs the `opentelemetry` feature.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tracer;

impl Tracer {
    /// The tracer of a client (none without the feature).
    pub(crate) fn new() -> Tracer {
        Tracer
    }
}

/// No transaction span.
#[derive(Debug, Default)]
pub(crate) struct TransactionTrace;

impl TransactionTrace {
    pub(crate) fn start(_tracer: &Tracer) -> TransactionTrace {
        TransactionTrace
    }

    pub(crate) fn end(&mut self) {}
}

/// No operation span.
#[derive(Clone, Debug)]
pub(crate) struct OperationTrace;

impl OperationTrace {
    pub(crate) fn start(
        _tracer: &Tracer,
        _operation_name: &str,
        _transaction: Option<&TransactionTrace>,
    ) -> OperationTrace {
        OperationTrace
    }

    pub(crate) fn is_recording(&self) -> bool {
        false
    }

    pub(crate) fn command_sent(&self, _sent: &SentCommand<'_>) {}

    pub(crate) fn command_replied(&self, _reply: &RawDocument) {}

    pub(crate) fn attempt_ended(&self, _error: Option<&Error>) {}

    pub(crate) fn finish(&self, _error: Option<&Error>) {}
}
