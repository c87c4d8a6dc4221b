//! Programs written in the official `mongodb` crate's idiom, compiled against steadfast: each
//! area's module shows that such code ports by renaming the crate, and runs against an
//! embedded blackpipe where it can.

mod client;
mod options;
