//! Closing a cursor or a change stream, or ending a session, finishes in the background in
//! steadfast (`killCursors`, then the check-in of a load-balanced cursor's pinned connection;
//! a session's abortTransaction), where the official API's `close`/`endSession` return once it
//! is done. The runner waits for that work before the next operation, so that event sequences
//! and connection counts read as the specifications show them.

use crate::entities::EntityMap;

/// Operations whose work finishes on the client's background tasks.
const CLOSING: [&str; 2] = ["close", "endSession"];

/// After operation `name`: if it closes something, waits until every client's own background
/// tasks are done.
pub(super) async fn settle_after(name: &str, entities: &EntityMap) {
    if !CLOSING.contains(&name) {
        return;
    }
    for entity in entities.clients() {
        entity
            .client
            .background_tasks()
            .wait_until_client_tasks_idle()
            .await;
    }
}
