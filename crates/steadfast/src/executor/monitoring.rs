//! Command monitoring (command-logging-and-monitoring specification): a started event before
//! each attempt's command is written, and a succeeded or failed event for each started one.
//! Nothing is built unless a handler listens (or debug logging is on for the command target).
//! Each event has its log message ("Command started", "Command succeeded", "Command failed",
//! at debug on [`logging::COMMAND`]) with the specification's field names; handshake and
//! heartbeat commands do not come through here, so they are neither monitored nor logged.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Bson, Document, RawDocumentBuf};
use steadfast_wire::DocumentSequence;

use crate::error::{CommandError, Error, ErrorKind};
use crate::event::{
    CommandEvent, CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, ConnectionInfo,
    EventEmitter,
};
use crate::logging;

/// The tracing target of command log messages (the logging specification's `command`
/// component).
pub(super) const LOG_TARGET: &str = crate::logging::COMMAND;

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

/// [`is_sensitive`] for a command as sent.
pub(super) fn is_sensitive_raw(name: &str, body: &bson::RawDocument) -> bool {
    sensitive(name, || {
        body.get("speculativeAuthenticate").ok().flatten().is_some()
    })
}

/// Whether `name` with `body` is sensitive: a credential-carrying command, or a hello that
/// carries speculative authentication.
pub(super) fn is_sensitive(name: &str, body: &Document) -> bool {
    sensitive(name, || body.contains_key("speculativeAuthenticate"))
}

/// The one rule of both: `speculative` says whether the body carries speculative
/// authentication (asked only of a hello).
fn sensitive(name: &str, speculative: impl FnOnce() -> bool) -> bool {
    let lower = name.to_ascii_lowercase();
    SENSITIVE_COMMANDS.contains(&lower.as_str())
        || (matches!(lower.as_str(), "hello" | "ismaster") && speculative())
}

/// The identity of one command, shared by its started and finished events.
#[derive(Clone, Debug)]
pub(super) struct CommandIdentity {
    pub(super) name: String,
    pub(super) database: String,
    pub(super) request_id: i32,
    pub(super) operation_id: i64,
    pub(super) connection: ConnectionInfo,
    /// The connection's `serviceId` (load-balanced mode).
    pub(super) service_id: Option<ObjectId>,
    pub(super) sensitive: bool,
}

/// Writes one command log message: the fields every command message carries (named as the
/// specification names them, optional ones left out when absent), then the message's own.
macro_rules! log_command {
    ($events:expr, $identity:expr, $text:literal, $($fields:tt)*) => {{
        let (host, port) = logging::host_and_port(&$identity.connection.address);
        let service_id = $identity.service_id.map(|id| id.to_hex());
        tracing::debug!(
            target: LOG_TARGET,
            topologyId = %$events.log().topology_id,
            commandName = %$identity.name,
            databaseName = %$identity.database,
            requestId = i64::from($identity.request_id),
            operationId = $identity.operation_id,
            driverConnectionId = $identity.connection.id,
            serverConnectionId = $identity.connection.server_id,
            serverHost = host,
            serverPort = port,
            serviceId = service_id.as_deref(),
            $($fields)*,
            $text
        );
    }};
}

/// Whether command log messages are wanted (debug on the command component).
pub(super) fn logging_enabled() -> bool {
    tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG)
}

/// Emits the started event: the command as sent, document sequences folded back in as arrays
/// (how the specification shows them), empty for sensitive commands.
pub(super) fn started(
    events: &EventEmitter,
    identity: &CommandIdentity,
    body: &Document,
    sequences: &[DocumentSequence],
) {
    let command = || {
        if identity.sensitive {
            Document::new()
        } else {
            with_sequences(body, sequences)
        }
    };
    events.command(|| {
        CommandEvent::Started(CommandStartedEvent {
            command: command(),
            db: identity.database.clone(),
            command_name: identity.name.clone(),
            request_id: identity.request_id,
            operation_id: identity.operation_id,
            connection: identity.connection.clone(),
            service_id: identity.service_id,
        })
    });
    if logging_enabled() {
        let command = events.log().render_document(&command());
        log_command!(
            events,
            identity,
            "Command started",
            command = command.as_str()
        );
    }
}

/// Emits the succeeded event (an empty reply for a sensitive command).
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
    if logging_enabled() {
        let reply = if identity.sensitive {
            "{}".to_owned()
        } else {
            events.log().render(reply)
        };
        log_command!(
            events,
            identity,
            "Command succeeded",
            durationMS = duration.as_secs_f64() * 1000.0,
            reply = reply.as_str()
        );
    }
}

/// Emits the failed event; a sensitive command's server error keeps only its code, code name
/// and labels (the specification's redaction).
pub(super) fn failed(
    events: &EventEmitter,
    identity: &CommandIdentity,
    error: &Error,
    duration: Duration,
) {
    let redacted = identity.sensitive.then(|| redact(error)).flatten();
    events.command(|| {
        CommandEvent::Failed(CommandFailedEvent {
            duration,
            command_name: identity.name.clone(),
            db: identity.database.clone(),
            failure: redacted.clone().unwrap_or_else(|| error.clone()),
            request_id: identity.request_id,
            operation_id: identity.operation_id,
            connection: identity.connection.clone(),
            service_id: identity.service_id,
        })
    });
    if logging_enabled() {
        let failure = match &redacted {
            Some(redacted) => format!("{} {redacted}", logging::REDACTED_FAILURE_PREFIX),
            None => error.to_string(),
        };
        log_command!(
            events,
            identity,
            "Command failed",
            durationMS = duration.as_secs_f64() * 1000.0,
            failure = failure.as_str()
        );
    }
}

/// A server error with everything but its code, code name and labels removed; `None` for an
/// error the server did not send (a network error carries nothing of the command's).
fn redact(error: &Error) -> Option<Error> {
    let server = error.command_error()?;
    let kept = CommandError::new(server.code, server.code_name.clone(), "");
    let mut redacted = Error::new(ErrorKind::Command(kept)).with_label_set(error.label_set());
    if let Some(address) = error.address() {
        redacted = redacted.with_address(address);
    }
    Some(redacted)
}

/// `body` with its document sequences folded back in as arrays, as a started event shows it.
pub(crate) fn with_sequences(body: &Document, sequences: &[DocumentSequence]) -> Document {
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
