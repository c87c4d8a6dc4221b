//! Where a freshly opened cursor lives.

use steadfast_core::ServerAddress;

use crate::session::ClientSession;

/// Returned by the executor with the reply of a cursor-opening command: the server every
/// `getMore` and `killCursors` must go to, and the implicit session the cursor keeps until it
/// is exhausted or dropped (`None` when the caller passed an explicit session).
#[derive(Debug)]
pub(crate) struct CursorPin {
    /// The server that holds the cursor.
    pub(crate) address: ServerAddress,
    /// The implicit session the cursor was opened on.
    pub(crate) session: Option<ClientSession>,
}
