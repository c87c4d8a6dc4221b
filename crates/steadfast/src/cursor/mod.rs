//! Cursors over the results of `find`, `aggregate` and the listing commands.

mod pin;
mod reply;
mod session_cursor;
mod session_stream;
mod state;
mod stream;
#[cfg(test)]
mod tests;
mod timeout;

pub(crate) use pin::CursorPin;
pub(crate) use reply::CursorReply;
pub use session_cursor::SessionCursor;
pub use session_stream::SessionCursorStream;
pub(crate) use state::{CursorSettings, CursorState};
pub use stream::Cursor;
pub(crate) use stream::{CURSOR_GONE_CODES, KillLimit, deserialize, spawn_kill};
pub(crate) use timeout::{Tailing, call_deadline, cursor_timing};
