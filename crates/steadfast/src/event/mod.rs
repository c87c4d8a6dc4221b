//! Monitoring events: connection pool (CMAP), topology (SDAM), commands, and retries.
//!
//! Two ways to subscribe. As with the official driver, set an [`EventHandler`] per kind in the
//! client's options (`command_event_handler`, `sdam_event_handler`, `cmap_event_handler`); it
//! receives the events of the [`command`], [`sdam`] and [`cmap`] modules. Or implement
//! [`EventListener`] (every method has an empty default, and it also hears retries) and pass
//! it in the client's options (`event_listeners`). Listeners and callbacks are called
//! synchronously on the driver's tasks, so they must be quick; forward to a channel for
//! anything slow. [`EventRecorder`] is a ready-made listener that keeps every event and lets a test *await* the one it expects instead of
//! sleeping.

pub mod cmap;
pub mod command;
mod handler;
mod recorder;
pub mod sdam;
mod shapes;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use command::{
    CommandEvent, CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, ConnectionInfo,
};
pub use handler::EventHandler;
pub(crate) use handler::EventHandlers;
pub use recorder::{Event, EventRecorder};
pub use steadfast_core::pool::{
    CheckOutFailedReason, ConnectionClosedReason, PoolEvent as CmapEvent,
};
pub use steadfast_core::retry::{Execution, RetryReason};
pub use steadfast_core::sdam::SdamEvent;

use steadfast_core::ServerAddress;

use crate::logging::LogContext;

/// A retry is about to happen.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RetryEvent {
    /// The command name of the operation.
    pub operation: String,
    /// The operation's id (shared by all its attempts' command events).
    pub operation_id: i64,
    /// The number of the attempt that failed (0 for the first).
    pub attempt: u32,
    /// Why it failed.
    pub reason: RetryReason,
    /// Whether the failed attempt could have executed.
    pub execution: Execution,
    /// How long the driver waits before the next attempt.
    pub delay: Duration,
    /// The server the failed attempt used, if one was selected.
    pub server: Option<ServerAddress>,
}

/// Receives monitoring events. Every method defaults to doing nothing.
pub trait EventListener: Send + Sync + 'static {
    /// A connection pool event.
    fn on_cmap(&self, _event: &CmapEvent) {}
    /// A topology event.
    fn on_sdam(&self, _event: &SdamEvent) {}
    /// A command event.
    fn on_command(&self, _event: &CommandEvent) {}
    /// A retry event.
    fn on_retry(&self, _event: &RetryEvent) {}
}

/// Fans events out to the registered handlers. Building an event is skipped entirely when no
/// handler is registered, so monitoring costs nothing on the hot path unless someone listens.
#[derive(Clone, Default)]
pub(crate) struct EventEmitter {
    handlers: Arc<[Arc<dyn EventListener>]>,
    /// What the client's log messages carry (its topology id, the document length).
    log: LogContext,
}

impl fmt::Debug for EventEmitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventEmitter")
            .field("handlers", &self.handlers.len())
            .finish()
    }
}

#[allow(dead_code)] // The pool, topology and executor emit through it as they land.
impl EventEmitter {
    /// An emitter for these handlers.
    pub(crate) fn new(handlers: Vec<Arc<dyn EventListener>>) -> Self {
        EventEmitter::with_log(handlers, LogContext::default())
    }

    /// An emitter for these handlers, whose log messages carry `log`'s topology id.
    pub(crate) fn with_log(handlers: Vec<Arc<dyn EventListener>>, log: LogContext) -> Self {
        EventEmitter {
            handlers: handlers.into(),
            log,
        }
    }

    /// The client's logging context: every log message carries its `topologyId`.
    pub(crate) fn log(&self) -> &LogContext {
        &self.log
    }

    /// Whether anyone listens.
    pub(crate) fn is_active(&self) -> bool {
        !self.handlers.is_empty()
    }

    pub(crate) fn cmap(&self, event: impl FnOnce() -> CmapEvent) {
        if self.is_active() {
            let event = event();
            self.handlers.iter().for_each(|h| h.on_cmap(&event));
        }
    }

    pub(crate) fn sdam(&self, event: impl FnOnce() -> SdamEvent) {
        if self.is_active() {
            let event = event();
            self.handlers.iter().for_each(|h| h.on_sdam(&event));
        }
    }

    pub(crate) fn command(&self, event: impl FnOnce() -> CommandEvent) {
        if self.is_active() {
            let event = event();
            self.handlers.iter().for_each(|h| h.on_command(&event));
        }
    }

    pub(crate) fn retry(&self, event: impl FnOnce() -> RetryEvent) {
        if self.is_active() {
            let event = event();
            self.handlers.iter().for_each(|h| h.on_retry(&event));
        }
    }
}
