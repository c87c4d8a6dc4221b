//! The control room: blackpipe's `{blackpipe: ...}` commands and the mongod commands a node
//! answers itself (`configureFailPoint`, `replSet*`, `shutdown`, `getParameter`, `ping`...).
//! Each command lives in one place: [`admin`] parses it into a value, [`blackpipe`] and
//! [`mongod`] apply it to the deployment and build the reply. The node room's pipeline hands
//! these commands here; the model changes and the ports they need are the effects room's.

pub mod admin;
pub(crate) mod blackpipe;
pub(crate) mod config_catalog;
pub(crate) mod diagnostics;
pub(crate) mod mongod;
pub(crate) mod parameters;
mod repl_status;
