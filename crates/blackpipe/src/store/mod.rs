//! The in-memory document store shared by the members of a simulated deployment.
