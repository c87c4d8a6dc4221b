//! Command monitoring events (command-logging-and-monitoring specification).
//!
//! The events serialize in the official driver's shape: camel-case field names
//! (`commandName`, `requestId`, ...), durations in serde's `{"secs", "nanos"}` shape, a
//! failure as its message, addresses as `{"Tcp": {"host", "port"}}`, and [`CommandEvent`] as
//! the event it holds (untagged).

use std::time::Duration;

use bson::Document;
use bson::oid::ObjectId;
use serde::Serialize;
use steadfast_core::ServerAddress;

use super::shapes;
use crate::error::Error;

/// Which connection a command used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The server.
    #[serde(serialize_with = "shapes::serialize_address")]
    pub address: ServerAddress,
    /// The driver's id for the connection (unique within its pool).
    pub id: u64,
    /// The server's id for the connection (`connectionId` from its hello), if it sent one.
    pub server_id: Option<i64>,
}

/// A command was sent. Sensitive commands (authentication, and hello when it carries
/// speculative authentication) carry an empty document.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandStartedEvent {
    /// The command as sent (including `$db`, `lsid`, `txnNumber`...).
    pub command: Document,
    /// The database it ran against.
    pub db: String,
    /// The command's name.
    pub command_name: String,
    /// The wire request id.
    pub request_id: i32,
    /// Shared by every attempt of one operation.
    pub operation_id: i64,
    /// The connection used.
    pub connection: ConnectionInfo,
    /// The service id (load-balanced mode).
    pub service_id: Option<ObjectId>,
}

/// A command succeeded.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandSucceededEvent {
    /// Time from sending to the reply being parsed.
    pub duration: Duration,
    /// The reply (empty for sensitive commands).
    pub reply: Document,
    /// The command's name.
    pub command_name: String,
    /// The database it ran against.
    pub db: String,
    /// The wire request id.
    pub request_id: i32,
    /// Shared by every attempt of one operation.
    pub operation_id: i64,
    /// The connection used.
    pub connection: ConnectionInfo,
    /// The service id (load-balanced mode).
    pub service_id: Option<ObjectId>,
}

/// A command failed (a network error, or a reply with `ok: 0`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommandFailedEvent {
    /// Time from sending to the failure.
    pub duration: Duration,
    /// The command's name.
    pub command_name: String,
    /// The database it ran against.
    pub db: String,
    /// The error. For a sensitive command (see [`CommandStartedEvent`]), a server error keeps
    /// only its code, code name and labels (and the server's address).
    #[serde(serialize_with = "shapes::serialize_error")]
    pub failure: Error,
    /// The wire request id.
    pub request_id: i32,
    /// Shared by every attempt of one operation.
    pub operation_id: i64,
    /// The connection used.
    pub connection: ConnectionInfo,
    /// The service id (load-balanced mode).
    pub service_id: Option<ObjectId>,
}

/// One command event.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CommandEvent {
    /// Sent.
    Started(CommandStartedEvent),
    /// Succeeded.
    Succeeded(CommandSucceededEvent),
    /// Failed.
    Failed(CommandFailedEvent),
}

impl CommandEvent {
    /// The command's name.
    pub fn command_name(&self) -> &str {
        match self {
            CommandEvent::Started(e) => &e.command_name,
            CommandEvent::Succeeded(e) => &e.command_name,
            CommandEvent::Failed(e) => &e.command_name,
        }
    }

    /// The wire request id, which pairs a started event with its outcome.
    pub fn request_id(&self) -> i32 {
        match self {
            CommandEvent::Started(e) => e.request_id,
            CommandEvent::Succeeded(e) => e.request_id,
            CommandEvent::Failed(e) => e.request_id,
        }
    }
}

/// The pre-[`EventHandler`](super::EventHandler) way to receive command events, kept so that
/// code written for it still works: implement the methods for the events wanted (each defaults
/// to ignoring its event) and pass an `Arc` of the handler as `command_event_handler`, which
/// turns it into an [`EventHandler<CommandEvent>`](super::EventHandler) calling the method
/// matching each event on the driver's task (so keep them quick).
///
/// ```
/// # #![allow(deprecated)]
/// use std::sync::Arc;
/// use steadfast::event::command::{CommandEventHandler, CommandFailedEvent};
/// use steadfast::options::ClientOptions;
///
/// struct FailedCommands;
///
/// impl CommandEventHandler for FailedCommands {
///     fn handle_command_failed_event(&self, event: CommandFailedEvent) {
///         eprintln!("{} failed: {}", event.command_name, event.failure);
///     }
/// }
///
/// let options = ClientOptions::builder()
///     .command_event_handler(Arc::new(FailedCommands))
///     .build();
/// # let _ = options;
/// ```
#[deprecated = "use the EventHandler API"]
pub trait CommandEventHandler: Send + Sync {
    /// Receives each [`CommandStartedEvent`].
    fn handle_command_started_event(&self, _event: CommandStartedEvent) {}
    /// Receives each [`CommandSucceededEvent`].
    fn handle_command_succeeded_event(&self, _event: CommandSucceededEvent) {}
    /// Receives each [`CommandFailedEvent`].
    fn handle_command_failed_event(&self, _event: CommandFailedEvent) {}
}

#[allow(deprecated, reason = "the legacy trait is still delivered to")]
impl CommandEvent {
    /// Calls the method of `handler` that matches this event.
    pub(crate) fn deliver_to<H: CommandEventHandler + ?Sized>(self, handler: &H) {
        match self {
            CommandEvent::Started(e) => handler.handle_command_started_event(e),
            CommandEvent::Succeeded(e) => handler.handle_command_succeeded_event(e),
            CommandEvent::Failed(e) => handler.handle_command_failed_event(e),
        }
    }
}
