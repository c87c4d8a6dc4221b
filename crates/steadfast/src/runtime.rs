//! The driver's only source of randomness, clocks, sleeps and spawns: pure code
//! elsewhere takes these values as arguments.
//!
//! Clippy's configuration (`clippy.toml`) denies these calls everywhere else in the crate.
#![allow(
    clippy::disallowed_methods,
    reason = "this module is the one place the driver reads the clock, sleeps, spawns and draws random numbers"
)]

use base64::Engine as _;
use rand::RngCore as _;

/// A fresh SCRAM client nonce: 24 bytes from the thread-local CSPRNG, base64-encoded (so it
/// never contains the ',' that would break the SCRAM message syntax).
pub(crate) fn scram_nonce() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `N` bytes from the thread-local CSPRNG (MONGODB-AWS nonces and session names).
pub(crate) fn secure_random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

/// Wall-clock seconds since the Unix epoch (0 if the clock is set before it): SigV4 dates and
/// AWS credential expirations are wall-clock times.
pub(crate) fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The current monotonic time. Everything time-dependent in the driver reads it here, so that
/// pure code receives time as an argument.
pub(crate) fn now() -> std::time::Instant {
    std::time::Instant::now()
}

/// Starts an operation's deadline from its resolved timeoutMS (`None`: not set; zero:
/// unbounded). The clock is read only when there is a timeout to count from, so an operation
/// without timeoutMS reads it no more than the executor already does.
pub(crate) fn start_deadline(timeout: Option<std::time::Duration>) -> steadfast_core::Deadline {
    match timeout {
        None => steadfast_core::Deadline::None,
        Some(_) => steadfast_core::Deadline::from_timeout(timeout, now()),
    }
}

/// Sleeps until `deadline` (returns at once if it has passed).
///
/// # Cancel safety
/// Cancel safe.
pub(crate) async fn sleep_until(deadline: std::time::Instant) {
    tokio::time::sleep_until(deadline.into()).await;
}

/// Runs the CPU-bound `work` on tokio's blocking thread pool, so that it does not hold up the
/// async tasks sharing a worker thread. `None` when the runtime is shutting down and the work
/// was cancelled; a panic in `work` is a bug and resumes here.
///
/// # Cancel safety
/// Cancel safe, but dropping the future does not stop `work`: it runs to completion on its
/// thread and its result is discarded (callers bound the work instead).
pub(crate) async fn run_blocking<R, F>(work: F) -> Option<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => Some(result),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => None,
    }
}

/// A fresh `ObjectId` (it reads the clock and a process-wide counter), such as the id that
/// names a client's topology in SDAM events.
pub(crate) fn object_id() -> bson::oid::ObjectId {
    bson::oid::ObjectId::new()
}

/// The current wall-clock time as a BSON date (a GridFS file's `uploadDate`).
pub(crate) fn bson_now() -> bson::DateTime {
    bson::DateTime::now()
}

/// A small, fast generator for the pure decisions that take `&mut impl Rng` (server selection,
/// SRV host choice). Seeded with 64 bits of the thread-local CSPRNG (expanded by
/// `seed_from_u64`), which costs a fraction of filling the whole seed from it: several
/// generators are made per operation. `Send`, so it may live in a task.
pub(crate) fn rng() -> rand::rngs::SmallRng {
    use rand::SeedableRng as _;
    rand::rngs::SmallRng::seed_from_u64(rand::rng().next_u64())
}

/// Spawns the driver's background tasks and counts the live ones, so that shutdown can prove
/// nothing leaked. Cheap to clone: clones share the count.
#[derive(Clone, Debug)]
pub(crate) struct TaskTracker {
    handle: tokio::runtime::Handle,
    live: std::sync::Arc<TaskCount>,
}

#[derive(Debug, Default)]
struct TaskCount {
    live: std::sync::atomic::AtomicUsize,
    changed: tokio::sync::Notify,
}

/// Decrements the live count when a tracked task ends, however it ends (completed, aborted or
/// dropped with its runtime).
struct LiveTask(std::sync::Arc<TaskCount>);

impl Drop for LiveTask {
    fn drop(&mut self) {
        self.0
            .live
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

impl TaskTracker {
    /// A tracker spawning on the current tokio runtime.
    ///
    /// # Errors
    /// `InvalidArgument` when called outside a tokio runtime: the driver's background tasks need
    /// one.
    pub(crate) fn new() -> crate::error::Result<Self> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            crate::error::Error::invalid_argument(
                "the client must be created inside a tokio runtime (it runs background tasks)",
            )
        })?;
        Ok(TaskTracker {
            handle,
            live: std::sync::Arc::default(),
        })
    }

    /// Spawns `future` as a counted task.
    pub(crate) fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.live
            .live
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let guard = LiveTask(std::sync::Arc::clone(&self.live));
        self.handle.spawn(async move {
            let _guard = guard;
            future.await
        })
    }

    /// How many tasks spawned through this tracker (or its clones) are still alive.
    pub(crate) fn live(&self) -> usize {
        self.live.live.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until no tracked task is alive.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn wait_until_idle(&self) {
        loop {
            let changed = self.live.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.live() == 0 {
                return;
            }
            changed.await;
        }
    }
}
