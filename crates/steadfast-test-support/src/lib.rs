//! Test-only plumbing shared by the test harnesses of the steadfast crates.
//!
//! This crate is never published: the published crates name it only as a path
//! dev-dependency, so nothing here becomes part of their API.

pub mod import_graph;
pub mod pki;
pub mod spec_tests;
