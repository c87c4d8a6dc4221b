//! Connection failures and timeouts are [`ErrorKind::Io`](super::ErrorKind::Io) errors, as in
//! the official driver, so that code matching `ErrorKind::Io(_)` sees them. The `io::Error`
//! inside carries the driver's description of what it was doing; that payload is what tells
//! them apart from a local file's I/O error for the retry rules and SDAM.

use std::fmt;
use std::io;

/// The payload of the `io::Error` of a connection failure or a timeout.
#[derive(Debug)]
struct ConnectionIo {
    /// What the driver was doing, e.g. "reading a reply failed".
    message: String,
    /// The driver's verdict, which decides retries and SDAM. It is kept apart from the
    /// `io::ErrorKind`: an operating system's own `TimedOut` (a TCP connect that got no
    /// answer) is a connection failure, not a driver timeout.
    how: ConnectionIoKind,
}

impl fmt::Display for ConnectionIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectionIo {}

/// How a connection failed, as recorded in its `io::Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectionIoKind {
    /// The socket failed or was closed, or no connection could be made.
    Failed,
    /// Something the driver timed ran out of time (always `io::ErrorKind::TimedOut`).
    TimedOut,
}

/// A connection failure (`how`) of `kind`, described by `message`.
pub(super) fn connection_io(
    kind: io::ErrorKind,
    how: ConnectionIoKind,
    message: String,
) -> io::Error {
    io::Error::new(kind, ConnectionIo { message, how })
}

/// What the driver was doing and how it failed, when `error` is one of its connection failures
/// (`None` for any other I/O error).
pub(super) fn read_connection_io(error: &io::Error) -> Option<(&str, ConnectionIoKind)> {
    let payload = error.get_ref()?.downcast_ref::<ConnectionIo>()?;
    Some((payload.message.as_str(), payload.how))
}
