//! Command monitoring (command-logging-and-monitoring specification): a started event before
//! each attempt's command is written, and a succeeded or failed event for each started one.
//! Nothing is built unless a handler listens (or debug logging is on for the command target).

use std::time::Duration;

use bson::{Bson, Document, RawDocumentBuf};
use steadfast_wire::DocumentSequence;

use crate::error::Error;
use crate::event::{
    CommandEvent, CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, ConnectionInfo,
    EventEmitter,
};

/// The tracing target of command log messages (the logging specification's `command`
/// component).
pub(super) const LOG_TARGET: &str = "steadfast::command";

/// Commands whose body and reply never appear in events or logs: they carry credentials.
const SENSITIVE_COMMANDS: [&str; 9] = [
    "authenticate",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "createuser",
    "updateuser",
    "copydbgetnonce",
    "copydbsaslstart",
    "copydb",
];

/// Whether `name` with `body` is sensitive: a credential-carrying command, or a hello that
/// carries speculative authentication.
pub(super) fn is_sensitive(name: &str, body: &Document) -> bool {
    let lower = name.to_ascii_lowercase();
    if SENSITIVE_COMMANDS.contains(&lower.as_str()) {
        return true;
    }
    matches!(lower.as_str(), "hello" | "ismaster") && body.contains_key("speculativeAuthenticate")
}

/// The identity of one command, shared by its started and finished events.
#[derive(Clone, Debug)]
pub(super) struct CommandIdentity {
    pub(super) name: String,
    pub(super) database: String,
    pub(super) request_id: i32,
    pub(super) operation_id: i64,
    pub(super) connection: ConnectionInfo,
    pub(super) sensitive: bool,
    /// The service behind the load balancer the connection reaches (load-balanced mode).
    pub(super) service_id: Option<bson::oid::ObjectId>,
}

/// Emits the started event: the command as sent, document sequences folded back in as arrays
/// (how the specification shows them), empty for sensitive commands.
pub(super) fn started(
    events: &EventEmitter,
    identity: &CommandIdentity,
    body: &Document,
    sequences: &[DocumentSequence],
) {
    events.command(|| {
        let command = if identity.sensitive {
            Document::new()
        } else {
            with_sequences(body, sequences)
        };
        CommandEvent::Started(CommandStartedEvent {
            command,
            db: identity.database.clone(),
            command_name: identity.name.clone(),
            request_id: identity.request_id,
            operation_id: identity.operation_id,
            connection: identity.connection.clone(),
            service_id: identity.service_id,
        })
    });
    tracing::debug!(
        target: LOG_TARGET,
        command = %identity.name,
        database = %identity.database,
        request_id = identity.request_id,
        operation_id = identity.operation_id,
        server = %identity.connection.address,
        driver_connection_id = identity.connection.id,
        "Command started"
    );
}

/// Emits the succeeded event.
pub(super) fn succeeded(
    events: &EventEmitter,
    identity: &CommandIdentity,
    reply: &RawDocumentBuf,
    duration: Duration,
) {
    events.command(|| {
        let reply = if identity.sensitive {
            Document::new()
        } else {
            Document::try_from(reply.clone()).unwrap_or_default()
        };
        CommandEvent::Succeeded(CommandSucceededEvent {
            duration,
            reply,
            command_name: identity.name.clone(),
            db: identity.database.clone(),
            request_id: identity.request_id,
            operation_id: identity.operation_id,
            connection: identity.connection.clone(),
            service_id: identity.service_id,
        })
    });
    tracing::debug!(
        target: LOG_TARGET,
        command = %identity.name,
        request_id = identity.request_id,
        operation_id = identity.operation_id,
        duration_ms = duration.as_secs_f64() * 1000.0,
        "Command succeeded"
    );
}

/// Emits the failed event.
pub(super) fn failed(
    events: &EventEmitter,
    identity: &CommandIdentity,
    error: &Error,
    duration: Duration,
) {
    events.command(|| {
        CommandEvent::Failed(CommandFailedEvent {
            duration,
            command_name: identity.name.clone(),
            db: identity.database.clone(),
            failure: error.clone(),
            request_id: identity.request_id,
            operation_id: identity.operation_id,
            connection: identity.connection.clone(),
            service_id: identity.service_id,
        })
    });
    tracing::debug!(
        target: LOG_TARGET,
        command = %identity.name,
        request_id = identity.request_id,
        operation_id = identity.operation_id,
        duration_ms = duration.as_secs_f64() * 1000.0,
        %error,
        "Command failed"
    );
}

fn with_sequences(body: &Document, sequences: &[DocumentSequence]) -> Document {
    let mut command = body.clone();
    for sequence in sequences {
        let documents: Vec<Bson> = sequence
            .documents
            .iter()
            .map(|d| Document::try_from(d.clone()).map_or(Bson::Null, Bson::Document))
            .collect();
        command.insert(sequence.identifier.clone(), documents);
    }
    command
}
