//! Where a freshly opened cursor lives.

use steadfast_core::ServerAddress;

use crate::pool::PinnedConnection;
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
    /// In load-balanced mode, the connection the cursor's `getMore`s and `killCursors` must
    /// use (`None` when the cursor is exhausted, or runs in a transaction, which has its own).
    pub(crate) connection: Option<PinnedConnection>,
}
