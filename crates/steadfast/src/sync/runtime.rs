//! The one tokio runtime the blocking API runs on: a multi-thread runtime, process-wide,
//! created on first use. Its workers run the clients' monitors, pools and background tasks;
//! a blocking call drives its own future on the calling thread with [`block_on`].

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{EnterGuard, Runtime};

use crate::error::{Error, Result};

/// The runtime, or why it could not be built (kept, so that every later call reports it
/// instead of retrying an OS failure on every operation).
static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

/// The process-wide runtime, built on first use.
///
/// # Errors
/// `InvalidArgument` when the operating system refused the runtime's threads or I/O driver.
fn runtime() -> Result<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("steadfast-sync")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| {
            Error::invalid_argument(format!("the sync API's runtime could not start: {e}"))
        })
}

/// Runs `future` to completion on the calling thread, inside the runtime's context.
///
/// # Errors
/// `InvalidArgument` when called from inside an async runtime (blocking one of its threads on
/// a future could deadlock it, and tokio forbids it); whatever the future reports.
pub(crate) fn block_on<F, T>(future: F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    refuse_inside_async()?;
    runtime()?.block_on(future)
}

/// `InvalidArgument` when the calling thread is inside an async runtime.
///
/// # Errors
/// As said.
fn refuse_inside_async() -> Result<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::invalid_argument(
            "the steadfast::sync API cannot be used inside an async runtime (it would block \
             one of the runtime's threads); use the async API (await the action) there",
        ));
    }
    Ok(())
}

/// Enters the runtime's context on the calling thread until the guard drops, for what spawns
/// tasks without blocking (creating a client, dropping a cursor or a session).
///
/// # Errors
/// As [`runtime`].
pub(crate) fn enter() -> Result<EnterGuard<'static>> {
    Ok(runtime()?.enter())
}

/// A value of the async API that the blocking API owns: dropped inside the runtime's context,
/// since dropping a cursor, a session or the last handle of a client spawns the tasks that
/// clean up after it (killCursors, ending a transaction, closing the pools).
pub(crate) struct InRuntime<T>(Option<T>);

impl<T> InRuntime<T> {
    pub(crate) fn new(value: T) -> Self {
        InRuntime(Some(value))
    }

    /// The value, no longer dropped in the runtime's context.
    pub(crate) fn into_inner(mut self) -> T {
        self.0.take().expect("present until dropped or taken")
    }
}

impl<T> std::ops::Deref for InRuntime<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0.as_ref().expect("present until dropped or taken")
    }
}

impl<T> std::ops::DerefMut for InRuntime<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("present until dropped or taken")
    }
}

impl<T: Clone> Clone for InRuntime<T> {
    fn clone(&self) -> Self {
        InRuntime(self.0.clone())
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for InRuntime<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> Drop for InRuntime<T> {
    fn drop(&mut self) {
        let Some(value) = self.0.take() else {
            return;
        };
        // Without a runtime (the OS refused it) nothing of the async API could have been
        // created, so the value holds no task to spawn.
        let _guard = enter().ok();
        drop(value);
    }
}
