//! `blackpipe`: runs a simulated MongoDB deployment in the foreground and prints its connection
//! string. Control it with the `{blackpipe: ...}` admin command (see
//! `blackpipe::deployment::admin`) or mongod's own commands (`replSetStepDown`,
//! `configureFailPoint`, ...). Stop it with Ctrl-C.
//!
//! `--auth --user app:secret` requires SCRAM authentication, as `mongod --auth` does: connect
//! with `mongodb://app:secret@127.0.0.1:27017/`.

use std::process::ExitCode;
use std::time::Duration;

use blackpipe::auth::User;
use blackpipe::deployment::{DeploymentConfig, serve_forever};
use clap::Parser;

/// Serve a simulated MongoDB standalone, replica set or sharded cluster on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "blackpipe", version, about)]
struct Args {
    /// A replica set of N members, listening on PORT, PORT+1, ... (the default, with 3).
    #[arg(long, value_name = "N", conflicts_with_all = ["standalone", "sharded"])]
    replset: Option<usize>,
    /// A single standalone mongod.
    #[arg(long, conflicts_with = "sharded")]
    standalone: bool,
    /// N mongos routers over one shared store.
    #[arg(long, value_name = "N")]
    sharded: Option<usize>,
    /// The first port (0: ephemeral ports).
    #[arg(long, default_value_t = 27017)]
    port: u16,
    /// The replica set name.
    #[arg(long, default_value = "rs0")]
    set_name: String,
    /// Do not elect a new primary automatically when the set loses one.
    #[arg(long)]
    no_auto_failover: bool,
    /// Delay before an automatic election, in milliseconds.
    #[arg(long, default_value_t = 100)]
    election_delay_ms: u64,
    /// How far behind the primary secondaries report their lastWrite, in milliseconds.
    #[arg(long, default_value_t = 0)]
    replication_lag_ms: u64,
    /// Seed for fail point probabilities and generated ids.
    #[arg(long)]
    seed: Option<u64>,
    /// Require authentication: every command but hello, saslStart, saslContinue, ping,
    /// buildInfo and connectionStatus fails with Unauthorized (13) until the connection
    /// authenticates with SCRAM-SHA-256 or SCRAM-SHA-1.
    #[arg(long, requires = "users")]
    auth: bool,
    /// A user in the admin database, as NAME:PASSWORD (repeatable). Users can authenticate
    /// even without --auth.
    #[arg(long = "user", value_name = "NAME:PASSWORD", value_parser = parse_user)]
    users: Vec<User>,
}

/// Parses `NAME:PASSWORD`; the password may contain `:`.
fn parse_user(text: &str) -> Result<User, String> {
    match text.split_once(':') {
        Some((name, password)) if !name.is_empty() => Ok(User::new(name, password)),
        _ => Err("expected NAME:PASSWORD".to_owned()),
    }
}

impl Args {
    fn config(&self) -> DeploymentConfig {
        let config = if self.standalone {
            DeploymentConfig::standalone()
        } else if let Some(routers) = self.sharded {
            DeploymentConfig::sharded(routers)
        } else {
            DeploymentConfig::replica_set(self.replset.unwrap_or(3))
        };
        let config = config
            .with_port(self.port)
            .with_set_name(self.set_name.clone())
            .with_auto_failover(!self.no_auto_failover)
            .with_election_delay(Duration::from_millis(self.election_delay_ms))
            .with_replication_lag(Duration::from_millis(self.replication_lag_ms));
        let mut config = match self.seed {
            Some(seed) => config.with_seed(seed),
            None => config,
        };
        config.users.clone_from(&self.users);
        config.with_auth(self.auth)
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match serve_forever(args.config()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("blackpipe: {error}");
            ExitCode::FAILURE
        }
    }
}
