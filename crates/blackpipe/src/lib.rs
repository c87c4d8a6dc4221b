//! blackpipe: a MongoDB wire-protocol server for testing drivers.
//!
//! Two layers: a scripted server, where a test receives requests and decides each reply, and a
//! simulated deployment (standalone, replica set, sharded) with an in-memory store and mongod's
//! fail points. blackpipe depends on `steadfast-wire` for framing and on `bson` only: it builds
//! every reply itself and never reuses the driver's SDAM or hello logic, so a bug cannot hide on
//! both sides of the wire.

pub mod deployment;
pub mod failpoint;
pub mod scripted;
pub mod server;
pub mod store;
