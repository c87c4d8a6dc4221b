//! `blackpipe`: runs a simulated MongoDB deployment in the foreground and prints its connection
//! string. Control it with the `{blackpipe: ...}` admin command (see
//! `blackpipe::deployment::admin`) or mongod's own commands (`replSetStepDown`,
//! `configureFailPoint`, ...). Stop it with Ctrl-C.
//!
//! `--auth --user app:secret` requires SCRAM authentication, as `mongod --auth` does: connect
//! with `mongodb://app:secret@127.0.0.1:27017/`.
//!
//! `--tls-certificate-key-file server.pem [--tls-ca-file ca.pem] --external-user 'CN=client'`
//! serves TLS (requiring client certificates signed by the CA) and lets that certificate's
//! holder authenticate with MONGODB-X509.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use blackpipe::auth::OidcConfig;
use blackpipe::auth::User;
use blackpipe::deployment::capacity::{DEFAULT_BURST, DEFAULT_REJECT_COST};
use blackpipe::deployment::{
    Capacity, ControlError, Deployment, DeploymentConfig, serve_forever_then,
};
use blackpipe::server::{
    ClientCertificates, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT,
    ServerConfig, ServerTls,
};
use clap::Parser;

/// Serve a simulated MongoDB standalone, replica set or sharded cluster (on 127.0.0.1 unless
/// --bind says otherwise).
///
/// blackpipe is a test server: it has no access control unless --auth is given, so anyone who
/// can reach the bound address can read, change and shut down the deployment. Keep the default
/// loopback --bind unless the network is yours alone.
#[derive(Debug, Parser)]
#[command(name = "blackpipe", version, about)]
struct Args {
    /// Address every node listens on. WARNING: without --auth blackpipe has no access control;
    /// any address other than loopback exposes it to the network.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Most connections each node keeps open at once; more are closed as they arrive.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Seconds a connection may stay idle between requests before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs())]
    idle_timeout_secs: u64,
    /// Seconds a request may take to arrive once its first byte has, before the connection is
    /// closed.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_READ_TIMEOUT.as_secs())]
    read_timeout_secs: u64,
    /// A replica set of N members, listening on PORT, PORT+1, ... (the default, with 3).
    #[arg(long, value_name = "N", conflicts_with_all = ["standalone", "sharded"])]
    replset: Option<usize>,
    /// A single standalone mongod.
    #[arg(long, conflicts_with = "sharded")]
    standalone: bool,
    /// N mongos routers over one shared store.
    #[arg(long, value_name = "N")]
    sharded: Option<usize>,
    /// Put the --sharded routers behind a load balancer (each connection bound to one router,
    /// round robin; hello needs `loadBalanced: true` and answers with `serviceId`), plus a
    /// second balancer that fronts router 0 only. With a fixed --port they listen on the two
    /// ports after the routers'.
    #[arg(long, requires = "sharded")]
    load_balanced: bool,
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
    /// How far behind the primary secondaries apply the op log, in milliseconds (their reads
    /// are this stale; majority writes wait for it).
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
    /// A user in `$external` with no password (repeatable): a MONGODB-X509 identity, named by
    /// its certificate's subject in RFC 2253 form, e.g. `CN=client,O=example`.
    #[arg(long = "external-user", value_name = "SUBJECT")]
    external_users: Vec<String>,
    /// Serve TLS with the certificate chain and private key in this PEM file (mongod's
    /// tlsCertificateKeyFile).
    #[arg(long, value_name = "PATH")]
    tls_certificate_key_file: Option<PathBuf>,
    /// Ask clients for a certificate signed by a CA in this PEM file and refuse those without
    /// one (mongod's tlsCAFile).
    #[arg(long, value_name = "PATH", requires = "tls_certificate_key_file")]
    tls_ca_file: Option<PathBuf>,
    /// With --tls-ca-file: accept clients that present no certificate (mongod's
    /// tlsAllowConnectionsWithoutCertificates).
    #[arg(long, requires = "tls_ca_file")]
    tls_allow_connections_without_certificates: bool,
    /// Every data-bearing member admits at most this many commands per second and rejects
    /// the rest with IngressRequestRateLimitExceeded (462), as mongod's ingress rate limiter
    /// does (hello, ping and authentication are exempt). 0: no rate limit.
    #[arg(long, value_name = "RATE", default_value_t = 0.0)]
    capacity_ops_per_sec: f64,
    /// Every data-bearing member runs at most N limited commands at once; more are rejected
    /// with 462. 0: no concurrency limit.
    #[arg(long, value_name = "N", default_value_t = 0)]
    capacity_concurrent: u32,
    /// What each rejection costs the member, as a fraction of one admitted command, taken
    /// from the rate budget.
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_REJECT_COST)]
    capacity_reject_cost: f64,
    /// How many seconds of the rate the member can admit at once after being idle.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_BURST.as_secs_f64())]
    capacity_burst_secs: f64,
    /// The baseBackoffMS hint capacity rejections carry (0: none).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    capacity_base_backoff_ms: u32,
    /// Accept MONGODB-OIDC tokens from a test issuer (a key pair generated at start), require
    /// authentication, and write a token for --oidc-principal, valid for a day, to this file
    /// (what a driver's `ENVIRONMENT:test` reads through OIDC_TOKEN_FILE).
    #[arg(long, value_name = "PATH")]
    oidc_token_file: Option<std::path::PathBuf>,
    /// The `$external` user the token of --oidc-token-file names.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "test_user1",
        requires = "oidc_token_file"
    )]
    oidc_principal: String,
}

/// How long the token written by --oidc-token-file is valid.
const OIDC_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// Parses `NAME:PASSWORD`; the password may contain `:`.
fn parse_user(text: &str) -> Result<User, String> {
    match text.split_once(':') {
        Some((name, password)) if !name.is_empty() => Ok(User::new(name, password)),
        _ => Err("expected NAME:PASSWORD".to_owned()),
    }
}

impl Args {
    /// The capacity the flags describe, `None` without a limit.
    fn capacity(&self) -> Result<Option<Capacity>, ControlError> {
        if self.capacity_ops_per_sec == 0.0 && self.capacity_concurrent == 0 {
            return Ok(None);
        }
        let burst = Duration::try_from_secs_f64(self.capacity_burst_secs).map_err(|_| {
            ControlError::BadArgument("--capacity-burst-secs must be a positive number".into())
        })?;
        Capacity::unlimited()
            .with_ops_per_sec(self.capacity_ops_per_sec)?
            .with_concurrent(self.capacity_concurrent)?
            .with_reject_cost(self.capacity_reject_cost)?
            .with_burst(burst)
            .map(|capacity| Some(capacity.with_base_backoff_ms(self.capacity_base_backoff_ms)))
    }

    /// The TLS settings the flags describe, `None` without --tls-certificate-key-file.
    fn tls(&self) -> Result<Option<ServerTls>, ControlError> {
        let Some(certificate_key_file) = &self.tls_certificate_key_file else {
            return Ok(None);
        };
        let bad = |what: &str, error: &dyn std::fmt::Display| {
            ControlError::BadArgument(format!("{what}: {error}"))
        };
        let pem = std::fs::read_to_string(certificate_key_file)
            .map_err(|e| bad("--tls-certificate-key-file", &e))?;
        let tls = ServerTls::new(&pem).map_err(|e| bad("--tls-certificate-key-file", &e))?;
        let Some(ca_file) = &self.tls_ca_file else {
            return Ok(Some(tls));
        };
        let ca = std::fs::read_to_string(ca_file).map_err(|e| bad("--tls-ca-file", &e))?;
        let policy = if self.tls_allow_connections_without_certificates {
            ClientCertificates::Optional
        } else {
            ClientCertificates::Required
        };
        tls.with_client_ca(&ca, policy)
            .map(Some)
            .map_err(|e| bad("--tls-ca-file", &e))
    }

    fn config(&self) -> Result<DeploymentConfig, ControlError> {
        let config = if self.standalone {
            DeploymentConfig::standalone()
        } else if let Some(routers) = self.sharded {
            DeploymentConfig::sharded(routers)
        } else {
            DeploymentConfig::replica_set(self.replset.unwrap_or(3))
        };
        // A balancer in front of anything but routers is refused when the deployment starts.
        let config = config
            .with_load_balancer(self.load_balanced)
            .with_port(self.port)
            .with_set_name(self.set_name.clone())
            .with_auto_failover(!self.no_auto_failover)
            .with_election_delay(Duration::from_millis(self.election_delay_ms))
            .with_replication_lag(Duration::from_millis(self.replication_lag_ms))
            .with_server(
                ServerConfig::default()
                    .with_bind(self.bind)
                    .with_max_connections(self.max_connections)
                    .with_idle_timeout(Duration::from_secs(self.idle_timeout_secs))
                    .with_read_timeout(Duration::from_secs(self.read_timeout_secs)),
            );
        let mut config = match self.seed {
            Some(seed) => config.with_seed(seed),
            None => config,
        };
        config.users.clone_from(&self.users);
        config
            .users
            .extend(self.external_users.iter().map(User::external));
        if let Some(tls) = self.tls()? {
            config = config.with_tls(tls);
        }
        config.capacity = self.capacity()?;
        if self.oidc_token_file.is_some() {
            config.oidc = Some(OidcConfig::default());
        }
        Ok(config.with_auth(self.auth || self.oidc_token_file.is_some()))
    }

    /// Writes the --oidc-token-file token once the deployment runs.
    fn write_oidc_token(&self, deployment: &Deployment) -> Result<(), ControlError> {
        let (Some(path), Some(issuer)) = (&self.oidc_token_file, deployment.oidc_issuer()) else {
            return Ok(());
        };
        let token = issuer.mint(&self.oidc_principal, OIDC_TOKEN_LIFETIME);
        std::fs::write(path, token)
            .map_err(|e| ControlError::BadArgument(format!("cannot write {}: {e}", path.display())))
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let config = match args.config() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("blackpipe: {error}");
            return ExitCode::FAILURE;
        }
    };
    match serve_forever_then(config, |deployment| args.write_oidc_token(deployment)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("blackpipe: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("blackpipe").chain(flags.iter().copied()))
            .expect("valid flags")
    }

    #[test]
    fn capacity_flags_give_every_data_bearing_member_a_capacity() {
        assert_eq!(parse(&[]).config().unwrap().capacity, None);
        let config = parse(&[
            "--capacity-ops-per-sec",
            "500",
            "--capacity-concurrent",
            "8",
            "--capacity-base-backoff-ms",
            "20",
        ])
        .config()
        .unwrap();
        let capacity = config.capacity.expect("a capacity");
        assert_eq!(capacity.ops_per_sec(), Some(500.0));
        assert_eq!(capacity.concurrent(), Some(8));
        assert_eq!(capacity.reject_cost(), DEFAULT_REJECT_COST);
        assert_eq!(capacity.base_backoff_ms(), Some(20));
    }

    #[test]
    fn tls_flags_need_their_prerequisites_and_readable_files() {
        let refused = |flags: &[&str]| {
            Args::try_parse_from(std::iter::once("blackpipe").chain(flags.iter().copied())).is_err()
        };
        assert!(refused(&["--tls-ca-file", "ca.pem"]));
        assert!(refused(&[
            "--tls-certificate-key-file",
            "s.pem",
            "--tls-allow-connections-without-certificates"
        ]));
        let missing = parse(&["--tls-certificate-key-file", "/nonexistent/server.pem"]);
        assert!(matches!(
            missing.config(),
            Err(ControlError::BadArgument(_))
        ));
        let external = parse(&["--external-user", "CN=client,O=example"])
            .config()
            .unwrap();
        assert_eq!(external.users, vec![User::external("CN=client,O=example")]);
        assert!(external.server.tls.is_none());
    }

    #[test]
    fn an_oidc_token_file_turns_on_the_issuer_and_authentication() {
        let plain = parse(&[]).config().unwrap();
        assert!(plain.oidc.is_none() && !plain.auth);
        let config = parse(&["--oidc-token-file", "/tmp/token"])
            .config()
            .unwrap();
        assert!(config.oidc.is_some());
        assert!(config.auth, "OIDC requires authentication");
    }

    #[tokio::test]
    async fn the_oidc_token_file_holds_a_token_the_deployment_accepts() {
        let dir = std::env::temp_dir().join(format!("blackpipe-oidc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        let args = parse(&[
            "--standalone",
            "--port",
            "0",
            "--oidc-token-file",
            path.to_str().unwrap(),
        ]);
        let deployment = Deployment::start(args.config().unwrap()).await.unwrap();
        args.write_oidc_token(&deployment).unwrap();
        let token = std::fs::read_to_string(&path).unwrap();
        let issuer = deployment.oidc_issuer().unwrap();
        assert_eq!(issuer.verify(&token).unwrap().principal, "test_user1");
        deployment.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn out_of_range_capacity_flags_are_refused() {
        for flags in [
            ["--capacity-ops-per-sec=-1", "--capacity-concurrent=1"],
            ["--capacity-ops-per-sec=NaN", "--capacity-concurrent=1"],
            ["--capacity-reject-cost=2", "--capacity-concurrent=1"],
            ["--capacity-burst-secs=0", "--capacity-concurrent=1"],
        ] {
            let args = parse(&flags);
            assert!(
                matches!(args.config(), Err(ControlError::BadArgument(_))),
                "{flags:?}"
            );
        }
    }
}
