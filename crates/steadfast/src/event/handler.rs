//! [`EventHandler`]: where the events of one kind go when set in
//! [`ClientOptions`](crate::options::ClientOptions) (`command_event_handler`,
//! `sdam_event_handler`, `cmap_event_handler`), in the shape of the official driver's.
//!
//! Internally every event is first built once as steadfast's own value (the [`Event`] family
//! delivered to [`EventListener`]s); [`HandlerListener`] is the one place that turns those
//! values into the [`command`], [`sdam`] and [`cmap`] events and hands them to the handlers.
//!
//! [`Event`]: super::Event

use std::fmt;
use std::sync::Arc;

use bson::oid::ObjectId;
use futures_util::future::BoxFuture;

use super::{CmapEvent as PoolEvent, EventListener, SdamEvent as CoreSdamEvent};
use super::{cmap, command, sdam};
use crate::runtime::TaskTracker;

/// A destination for events of type `T`: a function, an async function, or a tokio channel.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use steadfast::event::{EventHandler, command::CommandEvent};
///
/// let started = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&started);
/// let handler = EventHandler::callback(move |event: CommandEvent| {
///     if let CommandEvent::Started(_) = event {
///         counter.fetch_add(1, Ordering::Relaxed);
///     }
/// });
/// # let _ = handler;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum EventHandler<T> {
    /// Called synchronously on the driver's task that produced the event: keep it quick.
    Callback(Arc<dyn Fn(T) + Send + Sync>),
    /// Called on the driver's task; the future it returns runs as a task of its own, which
    /// [`Client::shutdown`](crate::Client::shutdown) does not wait for.
    AsyncCallback(Arc<dyn Fn(T) -> BoxFuture<'static, ()> + Send + Sync>),
    /// Each event is sent on the channel from a task of its own, so a full channel delays only
    /// that task, never the driver (nor [`Client::shutdown`](crate::Client::shutdown)).
    TokioMpsc(tokio::sync::mpsc::Sender<T>),
}

impl<T> fmt::Debug for EventHandler<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            EventHandler::Callback(_) => "Callback",
            EventHandler::AsyncCallback(_) => "AsyncCallback",
            EventHandler::TokioMpsc(_) => "TokioMpsc",
        };
        f.debug_tuple("EventHandler").field(&kind).finish()
    }
}

impl<T> From<tokio::sync::mpsc::Sender<T>> for EventHandler<T> {
    fn from(sender: tokio::sync::mpsc::Sender<T>) -> Self {
        EventHandler::TokioMpsc(sender)
    }
}

/// An `Arc` of a legacy [`CommandEventHandler`](command::CommandEventHandler) is accepted
/// wherever an `EventHandler<CommandEvent>` is: each event goes to its `handle_*` method.
#[allow(deprecated, reason = "the legacy handler traits still convert")]
impl<H: command::CommandEventHandler + 'static> From<Arc<H>>
    for EventHandler<command::CommandEvent>
{
    fn from(handler: Arc<H>) -> Self {
        EventHandler::callback(move |event: command::CommandEvent| event.deliver_to(&*handler))
    }
}

/// An `Arc` of a legacy [`CmapEventHandler`](cmap::CmapEventHandler) is accepted wherever an
/// `EventHandler<CmapEvent>` is: each event goes to its `handle_*` method.
#[allow(deprecated, reason = "the legacy handler traits still convert")]
impl<H: cmap::CmapEventHandler + 'static> From<Arc<H>> for EventHandler<cmap::CmapEvent> {
    fn from(handler: Arc<H>) -> Self {
        EventHandler::callback(move |event: cmap::CmapEvent| event.deliver_to(&*handler))
    }
}

/// An `Arc` of a legacy [`SdamEventHandler`](sdam::SdamEventHandler) is accepted wherever an
/// `EventHandler<SdamEvent>` is: each event goes to its `handle_*` method.
#[allow(deprecated, reason = "the legacy handler traits still convert")]
impl<H: sdam::SdamEventHandler + 'static> From<Arc<H>> for EventHandler<sdam::SdamEvent> {
    fn from(handler: Arc<H>) -> Self {
        EventHandler::callback(move |event: sdam::SdamEvent| event.deliver_to(&*handler))
    }
}

impl<T: Send + Sync + 'static> EventHandler<T> {
    /// A handler calling `f` with each event.
    pub fn callback(f: impl Fn(T) + Send + Sync + 'static) -> Self {
        EventHandler::Callback(Arc::new(f))
    }

    /// A handler calling `f` with each event and running the future it returns.
    pub fn async_callback(f: impl Fn(T) -> BoxFuture<'static, ()> + Send + Sync + 'static) -> Self {
        EventHandler::AsyncCallback(Arc::new(f))
    }

    /// Delivers `event`, spawning on `tasks` what must not block the caller.
    fn deliver(&self, event: T, tasks: &TaskTracker) {
        match self {
            EventHandler::Callback(f) => f(event),
            EventHandler::AsyncCallback(f) => {
                tasks.spawn(f(event));
            }
            EventHandler::TokioMpsc(sender) => {
                let sender = sender.clone();
                tasks.spawn(async move {
                    // A closed channel means the application stopped listening: nothing to do.
                    let _ = sender.send(event).await;
                });
            }
        }
    }
}

/// The three [`EventHandler`]s a client's options may set.
#[derive(Clone, Debug, Default)]
pub(crate) struct EventHandlers {
    pub(crate) command: Option<EventHandler<command::CommandEvent>>,
    pub(crate) sdam: Option<EventHandler<sdam::SdamEvent>>,
    pub(crate) cmap: Option<EventHandler<cmap::CmapEvent>>,
}

impl EventHandlers {
    /// The listener that feeds these handlers, or `None` when none is set (so that no event
    /// is built for nobody).
    pub(crate) fn into_listener(
        self,
        tasks: TaskTracker,
        topology_id: ObjectId,
    ) -> Option<Arc<dyn EventListener>> {
        if self.command.is_none() && self.sdam.is_none() && self.cmap.is_none() {
            return None;
        }
        Some(Arc::new(HandlerListener {
            handlers: self,
            topology_id,
            tasks,
        }))
    }
}

/// Converts steadfast's events to the handlers' shapes and delivers them.
struct HandlerListener {
    handlers: EventHandlers,
    /// Identifies this client's topology in SDAM events.
    topology_id: ObjectId,
    tasks: TaskTracker,
}

impl EventListener for HandlerListener {
    fn on_cmap(&self, event: &PoolEvent) {
        if let Some(handler) = &self.handlers.cmap {
            if let Some(event) = cmap::CmapEvent::from_pool_event(event) {
                handler.deliver(event, &self.tasks);
            }
        }
    }

    fn on_sdam(&self, event: &CoreSdamEvent) {
        if let Some(handler) = &self.handlers.sdam {
            if let Some(event) = sdam::SdamEvent::from_core(event, self.topology_id) {
                handler.deliver(event, &self.tasks);
            }
        }
    }

    fn on_command(&self, event: &command::CommandEvent) {
        if let Some(handler) = &self.handlers.command {
            handler.deliver(event.clone(), &self.tasks);
        }
    }
}
