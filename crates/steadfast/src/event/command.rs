//! Command monitoring events (command-logging-and-monitoring specification).

use std::time::Duration;

use bson::Document;
use bson::oid::ObjectId;
use steadfast_core::ServerAddress;

use crate::error::Error;

/// Which connection a command used.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The server.
    pub address: ServerAddress,
    /// The driver's id for the connection (unique within its pool).
    pub id: u64,
    /// The server's id for the connection (`connectionId` from its hello), if it sent one.
    pub server_id: Option<i64>,
}

/// A command was sent. Sensitive commands (authentication, and hello when it carries
/// speculative authentication) carry an empty document.
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug)]
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
#[derive(Clone, Debug)]
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
