//! The deployments of the README's "Test Setup", on the ports it names, served by blackpipe
//! with TLS (and, as mongod's `--tlsMode preferTLS`, plain connections too: a test's own
//! `ssl=false` must still reach the servers).

use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::server::ServerTls;

/// The first port of every deployment (the README's mongod and mongos ports start here).
const FIRST_PORT: u16 = 27017;
/// The load balancers: the SRV records of the load-balanced tests point at port 8000, the
/// single-mongos HAProxy port of the drivers' test environment; the multi-mongos one follows.
const SINGLE_BALANCER_PORT: u16 = 8000;
const MULTI_BALANCER_PORT: u16 = 8001;

/// The suite folders, each with the deployment it runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setup {
    /// A three-member replica set `repl0` on 27017-27019, members named `localhost:<port>`.
    ReplicaSet,
    /// Two routers on 27017 and 27018.
    Sharded,
    /// Two routers on 27017 and 27018 behind load balancers on 8000 (router 0) and 8001.
    LoadBalanced,
}

impl Setup {
    /// Every folder, in the order they run.
    pub(crate) const ALL: [Setup; 3] = [Setup::ReplicaSet, Setup::LoadBalanced, Setup::Sharded];

    /// The folder's name under the suite.
    pub(crate) fn folder(self) -> &'static str {
        match self {
            Setup::ReplicaSet => "replica-set",
            Setup::Sharded => "sharded",
            Setup::LoadBalanced => "load-balanced",
        }
    }

    /// Starts the deployment, serving TLS with `tls`.
    ///
    /// # Errors
    /// A message when a port is taken or the configuration is refused.
    pub(crate) async fn start(self, tls: ServerTls) -> Result<Deployment, String> {
        let config = match self {
            Setup::ReplicaSet => DeploymentConfig::replica_set(3)
                .with_set_name("repl0")
                .with_host_name("localhost"),
            Setup::Sharded => DeploymentConfig::sharded(2).with_host_name("localhost"),
            Setup::LoadBalanced => DeploymentConfig::load_balanced(2)
                .with_host_name("localhost")
                .with_load_balancer_ports(MULTI_BALANCER_PORT, SINGLE_BALANCER_PORT),
        };
        let config = config
            .with_port(FIRST_PORT)
            .with_tls(tls.allowing_plaintext());
        Deployment::start(config)
            .await
            .map_err(|e| format!("the {} deployment did not start: {e}", self.folder()))
    }
}
