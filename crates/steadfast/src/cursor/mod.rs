//! Cursors over the results of `find`, `aggregate` and the listing commands.

mod reply;

pub(crate) use reply::CursorReply;
