//! Collections: the typed handle the CRUD API hangs off.

#[macro_use]
pub mod action;
pub(crate) mod bulk;
pub(crate) mod db_actions;
mod db_ops;
pub(crate) mod exec;
mod handle;
mod inherit;
pub(crate) mod models;
mod namespace;
#[cfg(test)]
mod tests;

pub use handle::Collection;
pub use models::{DeleteModel, InsertOneModel, ReplaceOneModel, UpdateModel, WriteModel};
pub use namespace::Namespace;
