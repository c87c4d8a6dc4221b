//! Collection writes as plain values, for `Collection::bulk_write` as `client_bulk` is for
//! `Client::bulk_write`: the write models and the argument checks every write shares
//! ([`models`]), and the plan that groups statements into runs of one command kind and merges
//! the batch replies into one result or one failure ([`plan`]). A single write
//! (`insert_one`, `update_many`, ...) is a plan of one run; `action::run` sends the batches.

pub(crate) mod models;
pub(crate) mod plan;
#[cfg(test)]
mod tests;
