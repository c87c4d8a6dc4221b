//! The official `mongodb` crate's side: the shared task code, its GridFS and client bulkWrite,
//! and no Collection::bulkWrite (the crate has none).

use super::task::Task;

/// What a task the driver cannot run reports.
pub(crate) const NOT_AVAILABLE: &str = "not available";

super::side::core_tasks!(mongodb);
super::side::gridfs_tasks!(mongodb);
super::side::client_bulk_tasks!(mongodb);
super::side::collection_bulk_stub!();

/// Why the official crate cannot run `task`, if it cannot.
pub(crate) fn unavailable(task: Task) -> Option<&'static str> {
    match task {
        Task::SmallCollectionBulkInsert
        | Task::LargeCollectionBulkInsert
        | Task::SmallCollectionBulkMixed => Some("the mongodb crate has no Collection::bulk_write"),
        _ => None,
    }
}
