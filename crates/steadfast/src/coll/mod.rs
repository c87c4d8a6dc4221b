//! Collections: the typed handle the CRUD API hangs off.

mod bulk;
mod models;
mod namespace;
#[cfg(test)]
mod tests;

pub use models::{DeleteModel, InsertOneModel, ReplaceOneModel, UpdateModel, WriteModel};
pub use namespace::Namespace;
