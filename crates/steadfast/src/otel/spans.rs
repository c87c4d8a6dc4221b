//! The OpenTelemetry spans themselves (feature `opentelemetry`): the client's [`Tracer`], an
//! operation's [`OperationTrace`] with the span of the command in flight, and a transaction's
//! [`TransactionTrace`].
//!
//! An operation's span starts with the operation, under the transaction's span when it runs in
//! one, else under the application's current span. Its name and namespace come from its first
//! command (the command as built names its database and collection); a command span is opened
//! when a command is sent and closed when its attempt ends, so a retried operation has one per
//! attempt that reached a server.

use std::sync::{Arc, Mutex, PoisonError};

use bson::RawDocument;
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use super::{SentCommand, facts};
use crate::error::Error;

/// The instrumentation scope's name (the crate's).
const SCOPE: &str = "steadfast";

/// The value of `db.system.name`.
const SYSTEM: &str = "mongodb";

/// A client's tracer: `None` when tracing is off for the client.
#[derive(Clone, Default)]
pub(crate) struct Tracer(Option<Arc<Active>>);

struct Active {
    tracer: BoxedTracer,
    query_text_max_length: usize,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("enabled", &self.0.is_some())
            .finish()
    }
}

impl Tracer {
    /// The tracer `options` ask for, the environment variables filling what they leave unset.
    pub(crate) fn new(options: Option<&super::OpentelemetryOptions>) -> Tracer {
        let variable = |name| std::env::var(name).ok();
        let configured = options.and_then(|o| o.enabled);
        if !super::enabled(configured, variable(super::ENABLED_VARIABLE).as_deref()) {
            return Tracer(None);
        }
        let query_text_max_length = super::query_text_max_length(
            options.and_then(|o| o.query_text_max_length),
            variable(super::QUERY_TEXT_MAX_LENGTH_VARIABLE).as_deref(),
        );
        let scope = InstrumentationScope::builder(SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = match options.and_then(|o| o.tracer_provider.as_ref()) {
            Some(provider) => BoxedTracer::new(provider.boxed_tracer(scope)),
            None => opentelemetry::global::tracer_with_scope(scope),
        };
        Tracer(Some(Arc::new(Active {
            tracer,
            query_text_max_length,
        })))
    }
}

/// A transaction's span, from `startTransaction` to the end of its commit or abort.
#[derive(Debug, Default)]
pub(crate) struct TransactionTrace(Option<Context>);

impl TransactionTrace {
    /// Opens the span of a transaction started now (nothing when tracing is off).
    pub(crate) fn start(tracer: &Tracer) -> TransactionTrace {
        let Some(active) = &tracer.0 else {
            return TransactionTrace(None);
        };
        let span = active
            .tracer
            .span_builder("transaction")
            .with_kind(SpanKind::Client)
            .with_attributes([KeyValue::new("db.system.name", SYSTEM)])
            .start(&active.tracer);
        TransactionTrace(Some(Context::current_with_span(span)))
    }

    /// Ends the span (the transaction committed or aborted).
    pub(crate) fn end(&mut self) {
        if let Some(context) = self.0.take() {
            context.span().end();
        }
    }
}

/// An operation's span and the span of its command in flight.
///
/// The handle [`OperationTrace::start`] returns owns the span and ends it in
/// [`OperationTrace::finish`]. A clone *joins* the operation: the commands run through it (the
/// batches of a bulk write, each executed on its own) nest in the same span, and its `finish`
/// ends only the command in flight, leaving the operation's span to its owner.
pub(crate) struct OperationTrace {
    spans: Option<Arc<Spans>>,
    owner: bool,
}

impl std::fmt::Debug for OperationTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationTrace")
            .field("recording", &self.spans.is_some())
            .field("owner", &self.owner)
            .finish()
    }
}

impl Clone for OperationTrace {
    fn clone(&self) -> Self {
        OperationTrace {
            spans: self.spans.clone(),
            owner: false,
        }
    }
}

struct Spans {
    active: Arc<Active>,
    operation_name: String,
    operation: Context,
    /// Set by the first command sent: the span's name and namespace come from it.
    named: Mutex<bool>,
    /// The span of the command in flight, until its attempt ends.
    command: Mutex<Option<Context>>,
}

impl OperationTrace {
    /// Opens the span of an operation starting now, inside `transaction`'s span when it runs
    /// in one.
    pub(crate) fn start(
        tracer: &Tracer,
        operation_name: &str,
        transaction: Option<&TransactionTrace>,
    ) -> OperationTrace {
        let Some(active) = &tracer.0 else {
            return OperationTrace {
                spans: None,
                owner: true,
            };
        };
        let parent = match transaction.and_then(|t| t.0.as_ref()) {
            Some(context) => context.clone(),
            None => Context::current(),
        };
        let span = active
            .tracer
            .span_builder(operation_name.to_owned())
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("db.system.name", SYSTEM),
                KeyValue::new("db.operation.name", operation_name.to_owned()),
            ])
            .start_with_context(&active.tracer, &parent);
        OperationTrace {
            spans: Some(Arc::new(Spans {
                active: Arc::clone(active),
                operation_name: operation_name.to_owned(),
                operation: parent.with_span(span),
                named: Mutex::new(false),
                command: Mutex::new(None),
            })),
            owner: true,
        }
    }

    /// Whether spans are recorded (the caller then describes the command it sends).
    pub(crate) fn is_recording(&self) -> bool {
        self.spans.is_some()
    }

    /// Opens the span of a command sent now, unless it is sensitive (naming the operation's
    /// span after the first).
    pub(crate) fn command_sent(&self, sent: &SentCommand<'_>) {
        let Some(spans) = &self.spans else {
            return;
        };
        let collection = facts::collection_name(sent.name, sent.body);
        spans.name_operation(sent.database, collection);
        if sent.sensitive {
            return;
        }
        let mut attributes = vec![
            KeyValue::new("db.system.name", SYSTEM),
            KeyValue::new("db.namespace", sent.database.to_owned()),
            KeyValue::new("db.command.name", sent.name.to_owned()),
            KeyValue::new(
                "db.query.summary",
                facts::summary(sent.name, sent.database, collection),
            ),
            KeyValue::new("server.address", sent.address.host().to_owned()),
            KeyValue::new(
                "db.mongodb.driver_connection_id",
                i64::try_from(sent.driver_connection_id).unwrap_or(i64::MAX),
            ),
        ];
        if let Some(collection) = collection {
            attributes.push(KeyValue::new("db.collection.name", collection.to_owned()));
        }
        attributes.extend(connection_attributes(sent));
        attributes.extend(session_attributes(sent.body));
        if let Some(cursor) = facts::cursor_of_command(sent.name, sent.body) {
            attributes.push(KeyValue::new("db.mongodb.cursor_id", cursor));
        }
        let max_length = spans.active.query_text_max_length;
        if max_length > 0 {
            let text = facts::query_text(sent.body, sent.sequences, max_length);
            attributes.push(KeyValue::new("db.query.text", text));
        }
        let span = spans
            .active
            .tracer
            .span_builder(sent.name.to_owned())
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&spans.active.tracer, &spans.operation);
        let context = spans.operation.with_span(span);
        // A command span left open by an attempt that never ended (none should be) ends now.
        if let Some(stale) = lock(&spans.command).replace(context) {
            stale.span().end();
        }
    }

    /// Records the cursor a command's reply opened or continued on the command's span.
    pub(crate) fn command_replied(&self, reply: &RawDocument) {
        let Some(spans) = &self.spans else {
            return;
        };
        if let (Some(cursor), Some(command)) =
            (facts::cursor_of_reply(reply), &*lock(&spans.command))
        {
            command
                .span()
                .set_attribute(KeyValue::new("db.mongodb.cursor_id", cursor));
        }
    }

    /// Ends the span of the attempt's command, if one was sent, with the attempt's error.
    pub(crate) fn attempt_ended(&self, error: Option<&Error>) {
        let Some(spans) = &self.spans else {
            return;
        };
        let Some(command) = lock(&spans.command).take() else {
            return;
        };
        if let Some(error) = error {
            record_error(&command, error);
            if let Some(code) = error.code() {
                command
                    .span()
                    .set_attribute(KeyValue::new("db.response.status_code", code.to_string()));
            }
        }
        command.span().end();
    }

    /// Ends the operation's span with its error, if it failed (a joined handle: only the
    /// command in flight).
    pub(crate) fn finish(&self, error: Option<&Error>) {
        let Some(spans) = &self.spans else {
            return;
        };
        if let Some(command) = lock(&spans.command).take() {
            command.span().end();
        }
        if !self.owner {
            return;
        }
        if let Some(error) = error {
            record_error(&spans.operation, error);
        }
        spans.operation.span().end();
    }
}

impl Spans {
    /// Names the operation's span `<operation> <db>.<collection>` and records its namespace,
    /// once (retries go to the same namespace).
    fn name_operation(&self, database: &str, collection: Option<&str>) {
        let mut named = lock(&self.named);
        if *named {
            return;
        }
        *named = true;
        let summary = facts::summary(&self.operation_name, database, collection);
        let span = self.operation.span();
        span.update_name(summary.clone());
        span.set_attribute(KeyValue::new("db.namespace", database.to_owned()));
        if let Some(collection) = collection {
            span.set_attribute(KeyValue::new("db.collection.name", collection.to_owned()));
        }
        span.set_attribute(KeyValue::new("db.operation.summary", summary));
    }
}

/// `server.port`, `network.transport` and the server's connection id.
fn connection_attributes(sent: &SentCommand<'_>) -> Vec<KeyValue> {
    let mut attributes = match sent.address.port() {
        Some(port) => vec![
            KeyValue::new("server.port", i64::from(port)),
            KeyValue::new("network.transport", "tcp"),
        ],
        None => vec![KeyValue::new("network.transport", "unix")],
    };
    if let Some(id) = sent.server_connection_id {
        attributes.push(KeyValue::new("db.mongodb.server_connection_id", id));
    }
    attributes
}

/// `db.mongodb.lsid` and `db.mongodb.txn_number`, when the command carries them.
fn session_attributes(body: &RawDocument) -> Vec<KeyValue> {
    let mut attributes = Vec::new();
    if let Some(lsid) = facts::lsid_json(body) {
        attributes.push(KeyValue::new("db.mongodb.lsid", lsid));
    }
    if let Ok(txn_number) = body.get_i64("txnNumber") {
        attributes.push(KeyValue::new("db.mongodb.txn_number", txn_number));
    }
    attributes
}

/// Records `error` on the span of `context`: the `exception.*` and `error.type` attributes and
/// the error status. `exception.stacktrace` is the stack where the driver recorded the error
/// (steadfast's errors carry no backtrace of their own); it is captured only here, on a failed
/// attempt or operation of a client that traces.
fn record_error(context: &Context, error: &Error) {
    let span = context.span();
    let message = error.to_string();
    let kind = facts::error_type(error.kind());
    span.set_attributes([
        KeyValue::new("exception.message", message.clone()),
        KeyValue::new("exception.type", kind),
        KeyValue::new(
            "exception.stacktrace",
            std::backtrace::Backtrace::force_capture().to_string(),
        ),
        KeyValue::new("error.type", kind),
    ]);
    span.set_status(Status::error(message));
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
