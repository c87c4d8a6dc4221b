//! Collections: the typed handle the CRUD API hangs off (its actions are in the `action` module).

mod db_ops;
mod handle;

pub use handle::Collection;
