//! The `load-balanced` topology: two routers behind blackpipe's load balancers (see
//! `blackpipe::deployment::load_balancer`). Clients get the unified format's
//! `SINGLE_MONGOS_LB_URI` (a balancer fronting one router) when `useMultipleMongoses` is false
//! and `MULTI_MONGOS_LB_URI` (a balancer fronting both) otherwise, each with
//! `loadBalanced=true`.

use blackpipe::deployment::{Deployment, DeploymentConfig};

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
