//! The machinery `steadfast demo` and `steadfast torture` share: the article's counter
//! workload run by concurrent workers, faults injected on a schedule, the live display, and
//! the checks and report at the end.
//!
//! - [`ledger`]: what each worker saw, merged into one [`ledger::Ledger`].
//! - [`worker`]: the workload itself, through steadfast's public API.
//! - [`fault`] and [`inject`]: faults and how they are played on blackpipe or a real server;
//!   [`burst`]: the overload burst against blackpipe's capacity model, and its figures.
//! - [`run`]: workers, schedule and display together.
//! - [`verify`]: the application's view against the data; [`report`]: the final report.
//! - [`transfers`] and [`stream_check`]: the transfer workload's and the change stream
//!   consumer's bookkeeping and checks.
//! - [`durability`]: the write concern of a run, the writes rollbacks discarded, and whether
//!   the members converged.

pub(crate) mod burst;
pub(crate) mod consumer;
pub(crate) mod durability;
pub(crate) mod events;
pub(crate) mod fault;
pub(crate) mod inject;
pub(crate) mod ledger;
pub(crate) mod policy_switch;
pub(crate) mod progress;
pub(crate) mod report;
pub(crate) mod roles;
pub(crate) mod run;
pub(crate) mod setup;
pub(crate) mod stats;
pub(crate) mod stream_check;
pub(crate) mod timeline;
pub(crate) mod transfer_worker;
pub(crate) mod transfers;
pub(crate) mod verify;
pub(crate) mod worker;
