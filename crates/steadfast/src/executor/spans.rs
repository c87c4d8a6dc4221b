//! `tracing` spans for OpenTelemetry: one span per operation and one per command attempt inside
//! it, whose fields are the OpenTelemetry semantic conventions for database clients (`db.*`,
//! `server.*`, `network.transport`, `error.type`), with `otel.name`, `otel.kind` and
//! `otel.status_code`, which `tracing-opentelemetry` reads as the span's name, kind and status.
//!
//! The spans are at info level under the target [`SPAN_TARGET`]. Fields known only later (the
//! namespace, once the command is built; the server; the cursor; the error) are declared empty
//! and recorded when known, and only when a subscriber enabled the span: with none, nothing
//! here formats or parses anything.

use bson::RawDocument;
use tracing::Span;
use tracing::field::Empty;

use super::attempt::AttemptResult;
use super::prepare::Prepared;
use crate::error::Error;
use crate::otel::facts;

/// The target of the operation and command spans.
pub(crate) const SPAN_TARGET: &str = "steadfast::operation";

/// The span of one operation, named `otel.name` = "<operation> <db>.<collection>" (the
/// OpenTelemetry specification's operation span name) once its command is built.
pub(super) fn operation(name: &str, operation_id: i64) -> Span {
    tracing::info_span!(target: SPAN_TARGET, "operation",
        otel.name = Empty, otel.kind = "client", otel.status_code = Empty,
        db.system.name = "mongodb", db.operation.name = name, db.operation.summary = Empty,
        db.namespace = Empty, db.collection.name = Empty,
        db.mongodb.operation_id = operation_id, server.address = Empty, server.port = Empty,
        network.transport = Empty, db.mongodb.cursor_id = Empty, db.mongodb.lsid = Empty,
        db.mongodb.txn_number = Empty, db.response.status_code = Empty, error.type = Empty)
}

/// The span of one attempt of the operation's command (a child of the operation's span),
/// named `otel.name` = the command's name once it is built.
pub(super) fn command(name: &str, operation_id: i64, attempt: u32) -> Span {
    tracing::info_span!(target: SPAN_TARGET, "command",
        otel.name = Empty, otel.kind = "client", otel.status_code = Empty,
        db.system.name = "mongodb", db.operation.name = name, db.command.name = Empty,
        db.namespace = Empty, db.collection.name = Empty, db.query.summary = Empty,
        db.mongodb.operation_id = operation_id, db.mongodb.attempt = attempt,
        server.address = Empty, server.port = Empty, network.transport = Empty,
        db.mongodb.driver_connection_id = Empty, db.mongodb.server_connection_id = Empty,
        db.mongodb.cursor_id = Empty, db.mongodb.lsid = Empty, db.mongodb.txn_number = Empty,
        db.response.status_code = Empty, error.type = Empty)
}

/// The current span when it is an attempt's (inside one) and the operation's span is enabled,
/// else a disabled span: looking the current span up is skipped when nobody records spans, and
/// a disabled attempt span never lets its fields land on the operation's span.
pub(super) fn current_if(operation: &Span) -> Span {
    if operation.is_disabled() {
        return Span::none();
    }
    let current = Span::current();
    let is_command = current
        .metadata()
        .is_some_and(|m| m.target() == SPAN_TARGET && m.name() == "command");
    if is_command { current } else { Span::none() }
}

/// The connection a command is sent on, as the command span names it.
pub(super) struct SentOn<'a> {
    /// The driver operation's name (the operation span's name starts with it).
    pub(super) operation_name: &'a str,
    pub(super) address: &'a steadfast_core::ServerAddress,
    pub(super) driver_connection_id: u64,
    pub(super) server_connection_id: Option<i64>,
}

/// Records what the built command says (namespace, collection, session, transaction, cursor)
/// and where it goes on the command span and on the operation's span.
pub(super) fn sent(operation: &Span, command: &Span, prepared: &Prepared, on: &SentOn<'_>) {
    if command.is_disabled() && operation.is_disabled() {
        return;
    }
    let body: &RawDocument = prepared.message.body.as_ref();
    let database = prepared.database.as_str();
    let collection = facts::collection_name(&prepared.name, body);
    let lsid = facts::lsid_hex(body);
    let txn_number = body.get_i64("txnNumber").ok();
    let cursor_id = facts::cursor_of_command(&prepared.name, body);
    let (host, port) = (on.address.host(), on.address.port());
    let transport = if port.is_some() { "tcp" } else { "unix" };
    if !operation.is_disabled() {
        let summary = facts::summary(on.operation_name, database, collection);
        operation.record("otel.name", summary.as_str());
        operation.record("db.operation.summary", summary.as_str());
    }
    if !command.is_disabled() {
        let summary = facts::summary(&prepared.name, database, collection);
        command.record("otel.name", prepared.name.as_str());
        command.record("db.command.name", prepared.name.as_str());
        command.record("db.query.summary", summary.as_str());
    }
    for span in [operation, command] {
        span.record("db.namespace", database);
        span.record("db.collection.name", collection);
        span.record("server.address", host);
        span.record("server.port", port);
        span.record("network.transport", transport);
        span.record("db.mongodb.lsid", lsid.as_deref());
        span.record("db.mongodb.txn_number", txn_number);
        span.record("db.mongodb.cursor_id", cursor_id);
    }
    command.record("db.mongodb.driver_connection_id", on.driver_connection_id);
    command.record("db.mongodb.server_connection_id", on.server_connection_id);
}

/// Records the cursor a reply opened or continued (`cursor.id`, when not 0).
pub(super) fn replied(operation: &Span, command: &Span, reply: &RawDocument) {
    if command.is_disabled() && operation.is_disabled() {
        return;
    }
    if let Some(id) = facts::cursor_of_reply(reply) {
        operation.record("db.mongodb.cursor_id", id);
        command.record("db.mongodb.cursor_id", id);
    }
}

/// Records a failure: `error.type`, the server's code as `db.response.status_code`, and the
/// error status.
pub(super) fn failed(span: &Span, error: &Error) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "ERROR");
    span.record("error.type", facts::error_type(error.kind()));
    if let Some(code) = error.code() {
        span.record("db.response.status_code", code.to_string().as_str());
    }
}

/// Records how an attempt ended on its span, when it failed.
pub(super) fn attempt_finished<T>(span: &Span, result: &AttemptResult<T>) {
    if let Some(error) = super::attempt::error_of(result) {
        failed(span, error);
    }
}
