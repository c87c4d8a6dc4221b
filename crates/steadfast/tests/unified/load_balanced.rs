//! The `load-balanced` topology: two routers behind blackpipe's load balancers (see
//! `blackpipe::deployment::load_balancer`). Clients get the unified format's
//! `SINGLE_MONGOS_LB_URI` (a balancer fronting one router) when `useMultipleMongoses` is false
//! and `MULTI_MONGOS_LB_URI` (a balancer fronting both) otherwise, each with
//! `loadBalanced=true`.

use std::sync::atomic::{AtomicBool, Ordering};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::Bson;

use crate::requirements::Topology;

/// The suites whose load-balanced cases run. Many other suites name `load-balanced` among
/// their topologies; they join this list once the driver's load-balanced mode passes them
/// (until then their load-balanced cases are not run, and count as not selected).
const SUITES: &[&str] = &[
    "load-balancers",
    "server-selection/logging",
    "server-discovery-and-monitoring/unified",
];

/// Whether the suite being run is in [`SUITES`] (suites run one after another).
static SUITE_RUNS_LOAD_BALANCED: AtomicBool = AtomicBool::new(false);

/// Records which suite runs next.
pub(crate) fn enter_suite(suite: &str) {
    SUITE_RUNS_LOAD_BALANCED.store(SUITES.contains(&suite), Ordering::Relaxed);
}

/// The deployment a load-balanced case runs on.
pub(crate) fn config() -> DeploymentConfig {
    DeploymentConfig::load_balanced(2)
}

/// The connection string a client entity starts from on a load-balanced deployment.
pub(crate) fn uri(
    deployment: &Deployment,
    use_multiple_mongoses: Option<bool>,
) -> Result<String, String> {
    let uri = if use_multiple_mongoses == Some(false) {
        deployment.single_backend_load_balanced_uri()
    } else {
        deployment.load_balanced_uri()
    };
    uri.ok_or_else(|| "the load-balanced deployment has no balancer".to_owned())
}

/// Whether a case may run on `topology` given its file's and its test's `runOnRequirements`:
/// the load-balanced topology only in a suite of [`SUITES`] and when one of them names it,
/// since a case that names no
/// topology is meant for the deployments every driver runs (a load-balanced client behaves
/// differently by design).
pub(crate) fn named(topology: Topology, requirements: [&Option<Bson>; 2]) -> bool {
    topology != Topology::LoadBalanced
        || (SUITE_RUNS_LOAD_BALANCED.load(Ordering::Relaxed)
            && requirements.into_iter().flatten().any(names_load_balanced))
}

fn names_load_balanced(requirements: &Bson) -> bool {
    let Bson::Array(list) = requirements else {
        return false;
    };
    list.iter()
        .filter_map(Bson::as_document)
        .filter_map(|requirement| requirement.get_array("topologies").ok())
        .flatten()
        .any(|name| name.as_str() == Some(Topology::LoadBalanced.spec_name()))
}
