//! Without the `opentelemetry` feature: the same types as `spans.rs`, empty, so that the
//! executor and sessions call them unconditionally and the compiler removes the calls.

use bson::RawDocument;

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

/// The command a command span would describe (never built without the feature).
#[allow(
    dead_code,
    reason = "the same fields as with the feature, which reads them"
)]
pub(crate) struct SentCommand<'a> {
    pub(crate) name: &'a str,
    pub(crate) database: &'a str,
    pub(crate) body: &'a RawDocument,
    pub(crate) sequences: &'a [steadfast_wire::DocumentSequence],
    pub(crate) address: &'a steadfast_core::ServerAddress,
    pub(crate) driver_connection_id: u64,
    pub(crate) server_connection_id: Option<i64>,
    /// A sensitive command: it names the operation's span but gets no span of its own.
    pub(crate) sensitive: bool,
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
