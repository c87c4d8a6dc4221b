//! `steadfast`: the command-line companion of the steadfast driver.
//!
//! - `steadfast demo`: the article's counter workload on an embedded blackpipe replica set
//!   through a stepdown, closed connections, a partition and overload; the counters must match
//!   the acknowledged increments exactly.
//! - `steadfast torture`: a seeded random fault schedule under load, then the invariants (no
//!   write lost or doubled, no panic, no leaked task, connection or memory).
//!
//! The side-by-side benchmark against the official `mongodb` crate is the separate
//! `steadfast-bench` binary, so that building this one never compiles the official crate.

mod demo;
mod torture;
mod workload;

use std::alloc::System;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// The system allocator, counting the bytes it hands out and takes back, so that `torture`
/// can check that the live heap returns to its baseline (see `torture::memory`).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The steadfast command.
#[derive(Debug, Parser)]
#[command(
    name = "steadfast",
    version,
    about = "steadfast: a resilient MongoDB driver, and its proving ground"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start an embedded blackpipe server and show real round trips through steadfast.
    Demo(demo::DemoArgs),
    /// Randomized faults under concurrent load, then check that no write was lost or doubled.
    Torture(torture::TortureArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("steadfast: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(args).await,
            Command::Torture(args) => torture::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("steadfast: {error}");
            ExitCode::FAILURE
        }
    }
}
