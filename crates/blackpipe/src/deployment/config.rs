//! How to start a [`Deployment`](super::Deployment).

use std::time::Duration;

use super::capacity::Capacity;
use super::model::{DeploymentKind, MemberOptions};
use crate::auth::{AwsKey, OidcConfig, User};
use crate::server::{ServerConfig, ServerTls};

/// What to start and how it behaves. Build with [`DeploymentConfig::standalone`],
/// [`DeploymentConfig::replica_set`], [`DeploymentConfig::replica_set_with`] or
/// [`DeploymentConfig::sharded`] or [`DeploymentConfig::load_balanced`], then adjust with the `with_*` methods.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DeploymentConfig {
    /// Standalone, replica set or sharded.
    pub kind: DeploymentKind,
    /// The replica set name (replica sets only).
    pub set_name: String,
    /// One entry per node: member options for a replica set; defaults for the others.
    pub members: Vec<MemberOptions>,
    /// The first node listens on this port, the next on `port + 1`, and so on; 0 gives every
    /// node an ephemeral port.
    pub port: u16,
    /// When the set loses its primary (stepdown, kill, partition), elect the best remaining
    /// candidate after [`Self::election_delay`], as mongod's election handoff and election
    /// timeout do. On by default.
    pub auto_failover: bool,
    /// Delay before an automatic election.
    pub election_delay: Duration,
    /// How far behind the primary the secondaries apply the op log.
    pub replication_lag: Duration,
    /// Seed for the generator behind `activationProbability` and probabilistic overload;
    /// `None` seeds from the operating system.
    pub seed: Option<u64>,
    /// Listener settings every node uses: bind address (127.0.0.1 by default), connection
    /// limit, idle and read timeouts. Its `port` is ignored (see [`Self::port`]). Hosts are
    /// still advertised as `127.0.0.1:<port>`, so a node bound elsewhere than loopback or the
    /// unspecified address is not reachable under the name the deployment reports.
    pub server: ServerConfig,
    /// Refuse every command but the handshake and authentication ones (Unauthorized, 13)
    /// until the connection authenticates, as `mongod --auth` does.
    pub auth: bool,
    /// The users that exist from the start, stored as SCRAM credentials. They can
    /// authenticate even when [`Self::auth`] is off.
    pub users: Vec<User>,
    /// Test AWS keys MONGODB-AWS accepts (signatures are checked, STS is not called); each
    /// authenticates as its ARN in `$external`.
    pub aws_keys: Vec<AwsKey>,
    /// MONGODB-OIDC with a test identity provider: `None` (the default) refuses the mechanism.
    pub oidc: Option<OidcConfig>,
    /// The capacity every data-bearing member (all but arbiters) starts with; `None`, the
    /// default, admits everything. Change it at run time with
    /// [`Deployment::set_capacity`](super::Deployment::set_capacity).
    pub capacity: Option<Capacity>,
    /// Put the routers behind load balancers (sharded deployments only): see
    /// [`load_balancer`](super::load_balancer).
    pub load_balanced: bool,
    /// The ports of the multi-backend and single-backend balancers (0: ephemeral); `None` (the
    /// default) puts them right after the routers' fixed ports, or on ephemeral ones.
    pub load_balancer_ports: Option<(u16, u16)>,
    /// The name the nodes report themselves under (`hosts`, `me`, `primary` in hello, the
    /// replica set configuration): `127.0.0.1` (the default) or `localhost`, as a replica set
    /// configured with `localhost:<port>` members reports them. Nodes listen on the bind
    /// address either way.
    pub host_name: String,
    /// How often the TTL monitor deletes the documents past their TTL index's expiry on the
    /// primary (or standalone, or the routers' shared store): mongod's
    /// `ttlMonitorSleepSecs`, 60 seconds by default. The deletions replicate through the op
    /// log like any delete.
    pub ttl_monitor_period: Duration,
}

/// mongod's default `ttlMonitorSleepSecs`.
const DEFAULT_TTL_MONITOR_PERIOD: Duration = Duration::from_secs(60);

impl DeploymentConfig {
    fn new(kind: DeploymentKind, members: Vec<MemberOptions>) -> Self {
        Self {
            kind,
            set_name: "rs0".into(),
            members,
            port: 0,
            auto_failover: true,
            election_delay: Duration::from_millis(100),
            replication_lag: Duration::ZERO,
            seed: None,
            server: ServerConfig::default(),
            auth: false,
            users: Vec::new(),
            aws_keys: Vec::new(),
            oidc: None,
            capacity: None,
            load_balanced: false,
            load_balancer_ports: None,
            host_name: "127.0.0.1".into(),
            ttl_monitor_period: DEFAULT_TTL_MONITOR_PERIOD,
        }
    }

    /// One standalone mongod.
    pub fn standalone() -> Self {
        Self::new(DeploymentKind::Standalone, vec![MemberOptions::default()])
    }

    /// A replica set of `members` electable members (the first one starts as primary).
    pub fn replica_set(members: usize) -> Self {
        Self::new(
            DeploymentKind::ReplicaSet,
            vec![MemberOptions::electable(); members.max(1)],
        )
    }

    /// A replica set with these members (priority-0, hidden, arbiters...).
    pub fn replica_set_with(members: Vec<MemberOptions>) -> Self {
        Self::new(DeploymentKind::ReplicaSet, members)
    }

    /// `routers` mongos-like routers over one shared store.
    pub fn sharded(routers: usize) -> Self {
        Self::new(
            DeploymentKind::Sharded,
            vec![MemberOptions::default(); routers.max(1)],
        )
    }

    /// `routers` mongos-like routers behind a layer-4 load balancer (and a second one that
    /// fronts router 0 only): see [`load_balancer`](super::load_balancer). With fixed ports,
    /// the balancers listen on the two ports after the routers'.
    pub fn load_balanced(routers: usize) -> Self {
        Self::sharded(routers).with_load_balancer(true)
    }

    /// Puts the routers behind load balancers, or not (sharded deployments only).
    #[must_use]
    pub fn with_load_balancer(mut self, enabled: bool) -> Self {
        self.load_balanced = enabled;
        self
    }

    /// Puts the multi-backend balancer on `multi` and the single-backend one on `single`
    /// instead of right after the routers (as a test environment with HAProxy in front of the
    /// mongoses has them on ports of its own).
    #[must_use]
    pub fn with_load_balancer_ports(mut self, multi: u16, single: u16) -> Self {
        self.load_balancer_ports = Some((multi, single));
        self
    }

    /// Reports the nodes as `<name>:<port>`: `127.0.0.1` (the default) or `localhost`. Any
    /// other name is refused when the deployment starts, since the nodes listen on the loopback
    /// address only.
    #[must_use]
    pub fn with_host_name(mut self, name: impl Into<String>) -> Self {
        self.host_name = name.into();
        self
    }

    /// Listens on `port`, `port + 1`, ... (0: ephemeral ports).
    #[must_use]
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Names the replica set.
    #[must_use]
    pub fn with_set_name(mut self, name: impl Into<String>) -> Self {
        self.set_name = name.into();
        self
    }

    /// Turns automatic elections on or off.
    #[must_use]
    pub fn with_auto_failover(mut self, enabled: bool) -> Self {
        self.auto_failover = enabled;
        self
    }

    /// Sets the delay before an automatic election.
    #[must_use]
    pub fn with_election_delay(mut self, delay: Duration) -> Self {
        self.election_delay = delay;
        self
    }

    /// Sets how often the TTL monitor runs (mongod's `ttlMonitorSleepSecs`; 60 s by default),
    /// so that tests of TTL indexes need not wait a minute.
    #[must_use]
    pub fn with_ttl_monitor_period(mut self, period: Duration) -> Self {
        self.ttl_monitor_period = period;
        self
    }

    /// Sets how far behind the primary the secondaries apply the op log.
    #[must_use]
    pub fn with_replication_lag(mut self, lag: Duration) -> Self {
        self.replication_lag = lag;
        self
    }

    /// Seeds the random generator.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets every node's listener settings (bind address, connection limit, timeouts).
    #[must_use]
    pub fn with_server(mut self, server: ServerConfig) -> Self {
        self.server = server;
        self
    }

    /// Adds `user` and requires authentication.
    #[must_use]
    pub fn with_user(mut self, user: User) -> Self {
        self.users.push(user);
        self.auth = true;
        self
    }

    /// Every node serves TLS with `tls` (its certificate, key and optional client CA).
    #[must_use]
    pub fn with_tls(mut self, tls: ServerTls) -> Self {
        self.server.tls = Some(tls);
        self
    }

    /// Accepts `key` for MONGODB-AWS and requires authentication.
    #[must_use]
    pub fn with_aws_key(mut self, key: AwsKey) -> Self {
        self.aws_keys.push(key);
        self.auth = true;
        self
    }

    /// Accepts MONGODB-OIDC tokens from the test issuer `oidc` describes (mint them with
    /// [`Deployment::oidc_issuer`](super::Deployment::oidc_issuer)) and requires
    /// authentication.
    #[must_use]
    pub fn with_oidc(mut self, oidc: OidcConfig) -> Self {
        self.oidc = Some(oidc);
        self.auth = true;
        self
    }

    /// Turns the authentication requirement on or off (users stay).
    #[must_use]
    pub fn with_auth(mut self, required: bool) -> Self {
        self.auth = required;
        self
    }

    /// Gives every data-bearing member `capacity` from the start (see
    /// [`capacity`](super::capacity) for what it models).
    #[must_use]
    pub fn with_capacity(mut self, capacity: Capacity) -> Self {
        self.capacity = Some(capacity);
        self
    }
}
