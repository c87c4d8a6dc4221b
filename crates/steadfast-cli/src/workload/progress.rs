//! The live display while a run goes on: a progress bar on a terminal, a plain line per
//! second otherwise (or with `--json`). Both go to standard error, so standard output holds
//! only the report.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::watch;

use super::events::DriverWatch;
use super::inject::FaultBoard;

/// Counters the workers bump as they go.
#[derive(Debug, Default)]
pub(crate) struct LiveCounters {
    /// Completed operations.
    pub(crate) operations: AtomicU64,
    /// Operations that failed in the application's hands.
    pub(crate) failures: AtomicU64,
    /// Whether a change stream consumer runs (the display then shows its events).
    pub(crate) watching: AtomicBool,
    /// Change events the consumer received.
    pub(crate) events: AtomicU64,
}

impl LiveCounters {
    pub(crate) fn completed(&self, failed: bool) {
        self.operations.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Where the display reads the primary from: the simulator knows it for sure; against a real
/// deployment only the driver's view is available.
pub(crate) type PrimaryProbe = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// Everything the display shows.
pub(crate) struct ProgressSources {
    pub(crate) live: Arc<LiveCounters>,
    pub(crate) driver: Arc<DriverWatch>,
    pub(crate) board: Arc<FaultBoard>,
    pub(crate) primary: PrimaryProbe,
}

/// How to display progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Display {
    /// A bar redrawn in place.
    Bar,
    /// One line per second.
    Lines,
}

impl Display {
    /// A bar when standard error is a terminal and plain lines were not asked for.
    pub(crate) fn choose(plain: bool) -> Display {
        if !plain && std::io::stderr().is_terminal() {
            Display::Bar
        } else {
            Display::Lines
        }
    }
}

/// Shows progress until `stop` turns true.
///
/// # Cancel safety
///
/// Cancel safe; a bar left on screen is cleared when its handle drops.
pub(crate) async fn show(
    sources: ProgressSources,
    display: Display,
    start: Instant,
    total: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let period = match display {
        Display::Bar => Duration::from_millis(250),
        Display::Lines => Duration::from_secs(1),
    };
    let bar = (display == Display::Bar).then(|| {
        let bar = ProgressBar::with_draw_target(
            Some(total.as_millis().try_into().unwrap_or(u64::MAX)),
            ProgressDrawTarget::stderr(),
        );
        if let Ok(style) = ProgressStyle::with_template("{bar:30.cyan/blue} {msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    });
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_operations = 0;
    let mut last_tick = Instant::now();
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
        }
        let now = Instant::now();
        let operations = sources.live.operations.load(Ordering::Relaxed);
        let window = now.saturating_duration_since(last_tick).as_secs_f64();
        let rate = if window > 0.0 {
            (operations - last_operations) as f64 / window
        } else {
            0.0
        };
        last_operations = operations;
        last_tick = now;
        let elapsed = now.saturating_duration_since(start).min(total);
        let line = status_line(&sources, elapsed, rate);
        match &bar {
            Some(bar) => {
                bar.set_position(elapsed.as_millis().try_into().unwrap_or(u64::MAX));
                bar.set_message(line);
            }
            None => eprintln!("{line}"),
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

fn status_line(sources: &ProgressSources, elapsed: Duration, rate: f64) -> String {
    let primary = (sources.primary)().unwrap_or_else(|| "none".to_owned());
    let mut line = format!(
        "{:>5.1}s  {:>6.0} ops/s  retries {}  failures {}  primary {}",
        elapsed.as_secs_f64(),
        rate,
        sources.driver.retries(),
        sources.live.failures.load(Ordering::Relaxed),
        primary
    );
    if sources.live.watching.load(Ordering::Relaxed) {
        let _ = write!(
            line,
            "  events {}",
            sources.live.events.load(Ordering::Relaxed)
        );
    }
    if let Some(fault) = sources.board.current() {
        line.push_str("  fault: ");
        line.push_str(&fault);
    }
    line
}
