//! Collections: the typed handle the CRUD API hangs off.

mod bulk;
mod db_ops;
mod handle;
mod models;
mod namespace;
#[cfg(test)]
mod tests;

pub use handle::Collection;
pub use models::{DeleteModel, InsertOneModel, ReplaceOneModel, UpdateModel, WriteModel};
pub use namespace::Namespace;
