//! Unit tests of the CRUD operations: commands are built against hand-made connection
//! descriptions and replies are hand-made documents, so no server is involved.

mod read;
mod write;

use steadfast_core::ServerAddress;
use steadfast_core::description::ServerType;

use super::ReplyContext;
use crate::conn::description::StreamDescription;

/// A 7.0-like server with the given limits.
pub(crate) fn description(
    max_bson_object_size: i64,
    max_message_size_bytes: usize,
    max_write_batch_size: i64,
) -> StreamDescription {
    StreamDescription {
        address: ServerAddress::tcp("127.0.0.1", 27017),
        server_type: ServerType::Standalone,
        min_wire_version: 0,
        max_wire_version: 21,
        max_bson_object_size,
        max_message_size_bytes,
        max_write_batch_size,
        logical_session_timeout_minutes: Some(30),
        server_connection_id: Some(1),
        service_id: None,
        hello_ok: true,
        compressor: None,
        sasl_supported_mechs: None,
    }
}

/// The usual limits: 16 MiB documents, 48 MB messages, 100 000 writes per batch.
pub(crate) fn default_description() -> StreamDescription {
    description(16 * 1024 * 1024, 48_000_000, 100_000)
}

/// Runs `f` with a reply context for `description`.
fn with_context<R>(description: &StreamDescription, f: impl FnOnce(&ReplyContext<'_>) -> R) -> R {
    let context = ReplyContext {
        description,
        address: &description.address,
    };
    f(&context)
}
