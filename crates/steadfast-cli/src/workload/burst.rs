//! The demo's overload burst against blackpipe's capacity model: the primary's capacity drops
//! below the load the workers offer, for a while, and the figures say how much useful work got
//! done meanwhile.
//!
//! The offered load is measured first, on the primary itself: an unlimited capacity counts the
//! commands it admits for [`MEASURE`]. The capacity is then a fraction of that rate, so the
//! burst overloads the member on any machine, in debug or release builds alike.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use blackpipe::deployment::{Capacity, CapacityStats, Deployment};
use serde::Serialize;

use super::progress::LiveCounters;

/// How long the offered load is measured before the burst.
pub(crate) const MEASURE: Duration = Duration::from_millis(250);

/// What one burst did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct BurstFigures {
    /// The workload client's retry policy during the burst: `default` or `adaptive`.
    pub(crate) policy: &'static str,
    /// Commands per second the primary received before the burst (limited commands only).
    pub(crate) offered_per_sec: f64,
    /// The capacity during the burst, in commands per second.
    pub(crate) capacity_per_sec: f64,
    /// How long the burst lasted.
    pub(crate) seconds: f64,
    /// Application operations that succeeded during the burst.
    pub(crate) successes: u64,
    /// Errors that reached the application during the burst.
    pub(crate) errors: u64,
    /// Commands the primary admitted during the burst (attempts that ran).
    pub(crate) admitted: u64,
    /// Commands the primary rejected with 462 during the burst.
    pub(crate) rejected: u64,
    /// What the rejections cost the primary, in admitted commands.
    pub(crate) rejection_cost: f64,
}

impl BurstFigures {
    /// Successful application operations per second during the burst.
    pub(crate) fn goodput(&self) -> f64 {
        if self.seconds > 0.0 {
            self.successes as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Commands the server saw (admitted and rejected) per successful operation; `None`
    /// without a success.
    pub(crate) fn attempts_per_success(&self) -> Option<f64> {
        (self.successes > 0)
            .then(|| self.admitted.saturating_add(self.rejected) as f64 / self.successes as f64)
    }

    /// Goodput as a share of the capacity.
    pub(crate) fn goodput_share(&self) -> f64 {
        if self.capacity_per_sec > 0.0 {
            self.goodput() / self.capacity_per_sec
        } else {
            0.0
        }
    }

    /// One line for the text report.
    pub(crate) fn text_line(&self) -> String {
        let attempts = self
            .attempts_per_success()
            .map_or_else(|| "-".to_owned(), |a| format!("{a:.2}"));
        format!(
            "{} policy, capacity {:.0}/s for {:.1} s (offered {:.0}/s): goodput {:.0} ops/s ({:.0}% of capacity), \
             {attempts} attempts per success ({} admitted, {} rejected costing {:.1}), {} errors reached the application",
            self.policy,
            self.capacity_per_sec,
            self.seconds,
            self.offered_per_sec,
            self.goodput(),
            self.goodput_share() * 100.0,
            self.admitted,
            self.rejected,
            self.rejection_cost,
            self.errors,
        )
    }
}

/// The application's completed operations and failures so far.
fn live_snapshot(live: Option<&LiveCounters>) -> (u64, u64) {
    live.map_or((0, 0), |live| {
        (
            live.operations.load(Ordering::Relaxed),
            live.failures.load(Ordering::Relaxed),
        )
    })
}

fn control(result: Result<(), blackpipe::deployment::ControlError>) -> Result<(), String> {
    result.map_err(|error| error.to_string())
}

/// Measures the load on member `index`, gives it `fraction` of it as capacity for `duration`,
/// then removes the capacity. `injected` is set when the burst starts.
///
/// # Errors
///
/// If the member is unknown or the capacity cannot be set.
pub(crate) async fn play(
    deployment: &Deployment,
    index: usize,
    fraction: f64,
    duration: Duration,
    live: Option<&LiveCounters>,
    injected: &mut Instant,
) -> Result<BurstFigures, String> {
    control(deployment.set_capacity(index, Some(Capacity::unlimited())))?;
    let measuring = Instant::now();
    tokio::time::sleep(MEASURE).await;
    let measured = deployment
        .capacity_stats(index)
        .map_err(|e| e.to_string())?;
    let offered_per_sec = measured.admitted as f64 / measuring.elapsed().as_secs_f64();
    let capacity_per_sec = (offered_per_sec * fraction).max(1.0);
    let capacity = Capacity::unlimited()
        .with_ops_per_sec(capacity_per_sec)
        .map_err(|error| error.to_string())?;
    let (operations_before, failures_before) = live_snapshot(live);
    *injected = Instant::now();
    control(deployment.set_capacity(index, Some(capacity)))?;
    tokio::time::sleep(duration).await;
    // Lifted before its counters are read: removing a capacity keeps them and stops them, so
    // the figures hold every command the capacity judged, including one that arrived between
    // the end of the sleep and the lift.
    control(deployment.set_capacity(index, None))?;
    let seconds = injected.elapsed().as_secs_f64();
    let stats: CapacityStats = deployment
        .capacity_stats(index)
        .map_err(|e| e.to_string())?;
    let (operations_after, failures_after) = live_snapshot(live);
    let errors = failures_after.saturating_sub(failures_before);
    Ok(BurstFigures {
        policy: "default",
        offered_per_sec,
        capacity_per_sec,
        seconds,
        successes: operations_after
            .saturating_sub(operations_before)
            .saturating_sub(errors),
        errors,
        admitted: stats.admitted,
        rejected: stats.rejected,
        rejection_cost: stats.rejection_cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(successes: u64, admitted: u64, rejected: u64) -> BurstFigures {
        BurstFigures {
            policy: "default",
            offered_per_sec: 2000.0,
            capacity_per_sec: 1000.0,
            seconds: 2.0,
            successes,
            errors: 3,
            admitted,
            rejected,
            rejection_cost: rejected as f64 * 0.05,
        }
    }

    #[test]
    fn goodput_and_attempts_per_success_come_from_the_burst_window() {
        let burst = figures(1800, 1900, 950);
        assert_eq!(burst.goodput(), 900.0);
        assert!((burst.goodput_share() - 0.9).abs() < 1e-9);
        assert_eq!(burst.attempts_per_success(), Some(2850.0 / 1800.0));
        let line = burst.text_line();
        assert!(
            line.contains("goodput 900 ops/s (90% of capacity)"),
            "{line}"
        );
        assert!(line.contains("1.58 attempts per success"), "{line}");
        assert!(line.contains("3 errors reached the application"), "{line}");
    }

    /// Inserts as fast as one connection allows, until `stop`, counting completions in `live`.
    async fn load(
        collection: steadfast::Collection<bson::Document>,
        live: std::sync::Arc<LiveCounters>,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) {
        while !stop.load(Ordering::Relaxed) {
            let failed = collection.insert_one(bson::doc! {}).await.is_err();
            live.completed(failed);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_rejects_past_half_the_measured_load_then_lifts_the_capacity() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;

        let deployment = Deployment::start(blackpipe::deployment::DeploymentConfig::standalone())
            .await
            .expect("a standalone");
        let uri = format!("{}&retryWrites=false&retryReads=false", deployment.uri());
        let client = steadfast::Client::with_uri_str(&uri)
            .await
            .expect("a client");
        let collection = client.database("db").collection::<bson::Document>("c");
        let live = Arc::new(LiveCounters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                tokio::spawn(load(
                    collection.clone(),
                    Arc::clone(&live),
                    Arc::clone(&stop),
                ))
            })
            .collect();
        let mut injected = Instant::now();
        let figures = play(
            &deployment,
            0,
            0.5,
            Duration::from_millis(300),
            Some(&live),
            &mut injected,
        )
        .await
        .expect("the burst plays");
        stop.store(true, Ordering::Relaxed);
        for worker in workers {
            worker.await.expect("no panic");
        }
        assert!(
            (figures.capacity_per_sec - figures.offered_per_sec * 0.5).abs() < 1e-6
                || figures.capacity_per_sec == 1.0,
            "{figures:?}"
        );
        // Half the load it measured: the member turned commands away, and they reached this
        // client as errors (it never retries).
        assert!(figures.rejected > 0, "{figures:?}");
        assert!(figures.errors > 0, "{figures:?}");
        assert!((figures.rejection_cost - figures.rejected as f64 * 0.05).abs() < 1e-6);
        // Lifted afterwards.
        assert!(collection.insert_one(bson::doc! {}).await.is_ok());
        let after = deployment.capacity_stats(0).expect("member 0");
        assert_eq!(
            after.rejected, figures.rejected,
            "no rejection after the burst"
        );
        client.shutdown().await;
        deployment.stop().await;
    }

    #[test]
    fn a_burst_without_success_has_no_attempts_per_success() {
        let burst = figures(0, 0, 500);
        assert_eq!(burst.goodput(), 0.0);
        assert_eq!(burst.attempts_per_success(), None);
        assert!(burst.text_line().contains("- attempts per success"));
    }
}
