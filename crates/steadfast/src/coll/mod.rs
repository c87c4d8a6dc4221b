//! Collections: the typed handle the CRUD API hangs off.

mod namespace;

pub use namespace::Namespace;
