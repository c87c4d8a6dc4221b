//! steadfast-wire
