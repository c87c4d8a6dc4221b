//! blackpipe's integration tests: the scripted server driven by raw wire clients and by the
//! official `mongodb` driver.

mod auth;
mod capacity;
mod change_streams;
mod collations;
mod deployment;
mod deployment_partition;
mod diagnostics;
mod fidelity;
mod fidelity_aggregate;
mod fidelity_sdam;
mod hostile_live;
mod interop;
mod load_balancer;
mod max_time;
mod numbers_hints_ttl;
mod query_language;
mod replication;
mod robustness;
mod scripted;
mod setup_options;
mod support;
mod tailable;
mod test_library;
mod transactions;
mod views_validation;
mod wire;
