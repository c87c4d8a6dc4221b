//! Cursors over the results of `find`, `aggregate` and the listing commands.

mod pin;
mod reply;
mod state;
#[cfg(test)]
mod tests;

pub(crate) use pin::CursorPin;
pub(crate) use reply::CursorReply;
pub(crate) use state::{CursorSettings, CursorState};
