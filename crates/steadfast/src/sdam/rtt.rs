//! Round-trip times of one server: the statistics a monitor reports in its descriptions, and
//! the RTT task that measures them on a dedicated connection while the monitor streams.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::selection::{MinRoundTripTime, RoundTripTimeEstimator};
use tokio::sync::watch;

use super::hello::MonitorConnection;
use crate::conn::config::ConnectionConfig;
use crate::runtime;

/// The moving average and the recent minimum, shared by a monitor and its RTT task.
#[derive(Clone, Debug, Default)]
pub(super) struct RttStats {
    inner: Arc<Mutex<RttState>>,
}

#[derive(Debug, Default)]
struct RttState {
    average: RoundTripTimeEstimator,
    minimum: MinRoundTripTime,
}

impl RttStats {
    fn lock(&self) -> MutexGuard<'_, RttState> {
        // The state is two plain values; a panic elsewhere cannot leave them inconsistent.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Folds in one sample.
    pub(super) fn add_sample(&self, sample: Duration) {
        let mut state = self.lock();
        state.average.add_sample(sample);
        state.minimum.add_sample(sample);
    }

    /// The average (zero before any sample) and the minimum of recent samples.
    pub(super) fn current(&self) -> (Duration, Duration) {
        let state = self.lock();
        (
            state.average.average().unwrap_or(Duration::ZERO),
            state.minimum.minimum(),
        )
    }

    /// Forgets every sample: the server became unavailable.
    pub(super) fn reset(&self) {
        let mut state = self.lock();
        state.average.reset();
        state.minimum.reset();
    }
}

/// What an RTT task needs.
pub(super) struct RttTask {
    pub(super) address: ServerAddress,
    pub(super) config: Arc<ConnectionConfig>,
    pub(super) heartbeat_frequency: Duration,
    pub(super) stats: RttStats,
    /// Resolves (with an error) when the monitor that owns this task stops.
    pub(super) stop: watch::Receiver<()>,
    pub(super) connection_ids: Arc<std::sync::atomic::AtomicU64>,
}

impl RttTask {
    /// Measures hello every heartbeatFrequencyMS on its own connection until the monitor stops.
    /// Failures only drop the connection: they never change the topology, and publish no event
    /// (server-monitoring.md, "Measuring RTT").
    pub(super) async fn run(self) {
        // A clone, so that waiting on it does not borrow `self` (nothing is ever sent on it).
        let mut stop = self.stop.clone();
        let mut connection: Option<MonitorConnection> = None;
        loop {
            let sample = tokio::select! {
                _ = stop.changed() => return,
                sample = self.measure(&mut connection) => sample,
            };
            match sample {
                Some(rtt) => self.stats.add_sample(rtt),
                None => connection = None,
            }
            let next = runtime::now() + self.heartbeat_frequency;
            tokio::select! {
                _ = stop.changed() => return,
                () = runtime::sleep_until(next) => {}
            }
        }
    }

    async fn measure(&self, connection: &mut Option<MonitorConnection>) -> Option<Duration> {
        match connection {
            Some(open) => match open.hello(&self.config, self.config.connect_timeout).await {
                Ok(reply) => Some(reply.duration),
                Err(error) => {
                    tracing::debug!(address = %self.address, %error, "RTT measurement failed");
                    None
                }
            },
            None => {
                let id = self
                    .connection_ids
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match MonitorConnection::open(id, &self.address, &self.config).await {
                    Ok((open, reply)) => {
                        *connection = Some(open);
                        Some(reply.duration)
                    }
                    Err(error) => {
                        tracing::debug!(address = %self.address, %error, "RTT connection failed");
                        None
                    }
                }
            }
        }
    }
}
