//! The interleaved throughput runner: short rounds of each contender in turn on the same
//! server, so that machine noise hits every contender alike.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::BenchError;
use super::official::OfficialSide;
use super::raw::{RawConnection, encode, one_command};
use super::stats::{Summary, Tally, nanos};
use super::steadfast_side::SteadfastSide;
use super::workload::{
    ContenderKind, Workload, drop_inserts_command, raw_find_one_command, raw_ping_command,
};

/// How long and how often each contender runs in one (workload, concurrency) cell.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Schedule {
    /// Rounds per cell; every contender runs once per round.
    pub(crate) rounds: u32,
    /// Measured time of one contender in one round.
    #[serde(rename = "round_ms", serialize_with = "super::report::as_millis")]
    pub(crate) round: Duration,
    /// Unmeasured time each contender runs before a cell's first round (pools fill, caches
    /// warm).
    #[serde(rename = "warmup_ms", serialize_with = "super::report::as_millis")]
    pub(crate) warmup: Duration,
}

/// The raw baseline: pre-encoded requests and the sockets kept open between rounds.
pub(crate) struct RawSide {
    address: SocketAddr,
    ping: Arc<[u8]>,
    find_one: Arc<[u8]>,
    idle: Vec<RawConnection>,
}

/// The request id every pre-encoded raw request carries (each socket has one request in
/// flight, so reusing it is unambiguous).
const RAW_REQUEST_ID: i32 = 1;

impl RawSide {
    /// Encodes the raw requests once.
    pub(crate) fn new(address: SocketAddr) -> Result<Self, BenchError> {
        Ok(Self {
            address,
            ping: encode(&raw_ping_command(), RAW_REQUEST_ID)?.into(),
            find_one: encode(&raw_find_one_command(), RAW_REQUEST_ID)?.into(),
            idle: Vec::new(),
        })
    }
}

/// One side of the comparison.
pub(crate) enum Contender {
    /// steadfast.
    Steadfast(SteadfastSide),
    /// The official driver.
    Official(OfficialSide),
    /// Pre-encoded frames over plain sockets.
    Raw(RawSide),
}

/// What one task of a slice runs with.
enum Worker {
    Steadfast(SteadfastSide),
    Official(OfficialSide),
    Raw {
        connection: RawConnection,
        request: Arc<[u8]>,
    },
}

impl Worker {
    async fn execute(&mut self, workload: Workload, sequence: u64) -> Result<Duration, BenchError> {
        match self {
            Worker::Steadfast(side) => side.execute(workload, sequence).await,
            Worker::Official(side) => side.execute(workload, sequence).await,
            Worker::Raw {
                connection,
                request,
            } => {
                let started = Instant::now();
                let reply = connection.round_trip(request).await?;
                let elapsed = started.elapsed();
                if reply.response_to != RAW_REQUEST_ID {
                    return Err("a raw reply answered another request".into());
                }
                Ok(elapsed)
            }
        }
    }
}

impl Contender {
    /// Which side this is.
    pub(crate) fn kind(&self) -> ContenderKind {
        match self {
            Contender::Steadfast(_) => ContenderKind::Steadfast,
            Contender::Official(_) => ContenderKind::Official,
            Contender::Raw(_) => ContenderKind::Raw,
        }
    }

    /// Why this contender does not run `workload`, if it does not.
    pub(crate) fn unsupported(&self, workload: Workload) -> Option<&'static str> {
        match self {
            Contender::Steadfast(_) | Contender::Official(_) => None,
            Contender::Raw(_) => match workload {
                Workload::Ping | Workload::FindOne => None,
                _ => Some("the raw baseline covers ping and find_one only"),
            },
        }
    }

    /// One worker per task; raw sockets are reused from earlier slices or connected now,
    /// before the slice's clock starts.
    async fn workers(
        &mut self,
        workload: Workload,
        concurrency: usize,
    ) -> Result<Vec<Worker>, BenchError> {
        let mut workers = Vec::with_capacity(concurrency);
        match self {
            Contender::Steadfast(side) => {
                workers.extend((0..concurrency).map(|_| Worker::Steadfast(side.clone())));
            }
            Contender::Official(side) => {
                workers.extend((0..concurrency).map(|_| Worker::Official(side.clone())));
            }
            Contender::Raw(raw) => {
                let request = if workload == Workload::Ping {
                    Arc::clone(&raw.ping)
                } else {
                    Arc::clone(&raw.find_one)
                };
                for _ in 0..concurrency {
                    let connection = match raw.idle.pop() {
                        Some(connection) => connection,
                        None => RawConnection::connect(raw.address).await?,
                    };
                    workers.push(Worker::Raw {
                        connection,
                        request: Arc::clone(&request),
                    });
                }
            }
        }
        Ok(workers)
    }

    fn give_back(&mut self, worker: Worker) {
        if let (Contender::Raw(raw), Worker::Raw { connection, .. }) = (self, worker) {
            raw.idle.push(connection);
        }
    }
}

/// One contender's figures in one cell, or why there are none.
#[derive(Debug, Serialize)]
pub(crate) struct ContenderResult {
    /// Who ran.
    pub(crate) contender: ContenderKind,
    /// The figures, when at least one operation completed.
    pub(crate) summary: Option<Summary>,
    /// Why the contender was skipped, or the error that stopped it.
    pub(crate) note: Option<String>,
}

/// Every contender's figures for one (workload, concurrency).
#[derive(Debug, Serialize)]
pub(crate) struct CellReport {
    /// What ran.
    pub(crate) workload: Workload,
    /// Tasks sharing one client (or, for the raw baseline, one socket each).
    pub(crate) concurrency: usize,
    /// One entry per contender.
    pub(crate) results: Vec<ContenderResult>,
}

impl CellReport {
    /// The figures of `kind`, if it was measured.
    pub(crate) fn summary(&self, kind: ContenderKind) -> Option<&Summary> {
        self.results
            .iter()
            .find(|result| result.contender == kind)
            .and_then(|result| result.summary.as_ref())
    }
}

/// Runs one cell: a warm-up per contender, then `schedule.rounds` rounds in which every
/// contender runs for `schedule.round`, the starting contender rotating from round to round.
/// `admin` receives the `drop` that empties the insert collection before every slice.
pub(crate) async fn run_cell(
    contenders: &mut [&mut Contender],
    workload: Workload,
    concurrency: usize,
    schedule: Schedule,
    admin: SocketAddr,
) -> Result<CellReport, BenchError> {
    let mut tallies: Vec<Tally> = contenders.iter().map(|_| Tally::default()).collect();
    let mut notes: Vec<Option<String>> = contenders
        .iter()
        .map(|c| c.unsupported(workload).map(str::to_owned))
        .collect();
    for (index, contender) in contenders.iter_mut().enumerate() {
        if notes[index].is_none() {
            if let Err(error) =
                run_slice(contender, workload, concurrency, schedule.warmup, admin).await
            {
                notes[index] = Some(format!("failed during warm-up: {error}"));
            }
        }
    }
    let count = contenders.len();
    for round in 0..schedule.rounds as usize {
        for offset in 0..count {
            let index = (round + offset) % count;
            if notes[index].is_some() {
                continue;
            }
            let contender = &mut *contenders[index];
            match run_slice(contender, workload, concurrency, schedule.round, admin).await {
                Ok((busy, latencies)) => tallies[index].absorb(busy, latencies),
                Err(error) => notes[index] = Some(format!("failed: {error}")),
            }
        }
    }
    let results = contenders
        .iter()
        .zip(tallies.iter_mut().zip(notes))
        .map(|(contender, (tally, note))| ContenderResult {
            contender: contender.kind(),
            summary: tally.summarize(),
            note,
        })
        .collect();
    Ok(CellReport {
        workload,
        concurrency,
        results,
    })
}

/// Spacing between the operation numbers of two tasks, so that tasks read different `_id`s.
const TASK_SEQUENCE_STRIDE: u64 = 7_919;

/// `concurrency` tasks run `workload` in a loop for `duration`; returns the time until the
/// last task finished its last operation and every operation's latency.
async fn run_slice(
    contender: &mut Contender,
    workload: Workload,
    concurrency: usize,
    duration: Duration,
    admin: SocketAddr,
) -> Result<(Duration, Vec<u64>), BenchError> {
    if workload.inserts() {
        one_command(admin, &drop_inserts_command()).await?;
    }
    let workers = contender.workers(workload, concurrency).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = workers
        .into_iter()
        .zip(0u64..)
        .map(|(mut worker, task)| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(4096);
                let mut sequence = task * TASK_SEQUENCE_STRIDE;
                while !stop.load(Ordering::Relaxed) {
                    match worker.execute(workload, sequence).await {
                        Ok(latency) => latencies.push(nanos(latency)),
                        Err(error) => return (worker, Err(error)),
                    }
                    sequence += 1;
                }
                (worker, Ok(latencies))
            })
        })
        .collect();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    let mut first_error = None;
    for task in tasks {
        let (worker, result) = task.await?;
        contender.give_back(worker);
        match result {
            Ok(task_latencies) => latencies.extend(task_latencies),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    let busy = started.elapsed();
    match first_error {
        Some(error) => Err(error),
        None => Ok((busy, latencies)),
    }
}
