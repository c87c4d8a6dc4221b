//! What one connection learnt about its server from the handshake reply.

use bson::Document;
use bson::oid::ObjectId;
use steadfast_core::ServerAddress;
use steadfast_core::description::{ServerDescription, ServerType};
use steadfast_wire::Compressor;

use crate::error::{Error, Result};

/// The per-connection facts (CMAP's "stream description") that commands are built against.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StreamDescription {
    /// The server this connection talks to.
    pub(crate) address: ServerAddress,
    /// The server type the handshake reply implies (a hint: SDAM's monitor is authoritative).
    pub(crate) server_type: ServerType,
    /// The lowest wire version the server speaks.
    pub(crate) min_wire_version: i32,
    /// The highest wire version the server speaks.
    pub(crate) max_wire_version: i32,
    /// The largest BSON document the server accepts.
    pub(crate) max_bson_object_size: i64,
    /// The largest message the server accepts (also the limit for replies we read).
    pub(crate) max_message_size_bytes: usize,
    /// The most writes one batch may hold.
    pub(crate) max_write_batch_size: i64,
    /// The session timeout, when the server supports sessions.
    pub(crate) logical_session_timeout_minutes: Option<i64>,
    /// The server's id for this connection (`connectionId`).
    pub(crate) server_connection_id: Option<i64>,
    /// The service behind a load balancer.
    pub(crate) service_id: Option<ObjectId>,
    /// Whether the server said `helloOk: true`.
    pub(crate) hello_ok: bool,
    /// The compressor to use: the first of ours that the server also listed.
    pub(crate) compressor: Option<Compressor>,
    /// `saslSupportedMechs`, when the handshake asked for them.
    pub(crate) sasl_supported_mechs: Option<Vec<String>>,
}

impl StreamDescription {
    /// Reads the description from a successful (`ok: 1`) handshake reply. `ours` is the list of
    /// compressors offered, in preference order.
    ///
    /// # Errors
    /// `InvalidResponse` when the reply's fields are malformed (core's hello parsing rejected it).
    pub(crate) fn from_handshake_reply(
        address: &ServerAddress,
        reply: &Document,
        ours: &[Compressor],
    ) -> Result<Self> {
        // The RTT and time arguments only matter for SDAM; a connection does not use them.
        let parsed = ServerDescription::from_hello(
            address.clone(),
            reply,
            std::time::Duration::ZERO,
            std::time::Duration::ZERO,
            crate::runtime::now(),
        );
        if let Some(error) = parsed.error {
            return Err(Error::protocol(format!(
                "the handshake reply is malformed: {error}"
            )));
        }
        let compressor = ours
            .iter()
            .find(|c| parsed.compressors.iter().any(|s| s == c.name()))
            .copied();
        let sasl_supported_mechs = reply.get_array("saslSupportedMechs").ok().map(|mechs| {
            mechs
                .iter()
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect()
        });
        let max_message_size_bytes = usize::try_from(parsed.max_message_size_bytes)
            .ok()
            .filter(|size| *size > 0)
            .ok_or_else(|| {
                Error::protocol(format!(
                    "the handshake reply has an invalid maxMessageSizeBytes ({})",
                    parsed.max_message_size_bytes
                ))
            })?;
        Ok(StreamDescription {
            address: address.clone(),
            server_type: parsed.server_type,
            min_wire_version: parsed.min_wire_version,
            max_wire_version: parsed.max_wire_version,
            max_bson_object_size: parsed.max_bson_object_size,
            max_message_size_bytes,
            max_write_batch_size: parsed.max_write_batch_size,
            logical_session_timeout_minutes: parsed.logical_session_timeout_minutes,
            server_connection_id: parsed.connection_id,
            service_id: parsed.service_id,
            hello_ok: parsed.hello_ok,
            compressor,
            sasl_supported_mechs,
        })
    }
}
