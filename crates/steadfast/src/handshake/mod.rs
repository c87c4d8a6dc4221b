//! The connection handshake (handshake specification): the first command on every connection,
//! carrying client metadata, compression negotiation, mechanism negotiation and the first SCRAM
//! message (speculative authentication), followed by authentication.

pub(crate) mod metadata;

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawDocumentBuf, doc};
use steadfast_core::IoLimit;
use steadfast_core::description::ServerType;

use crate::auth::scram::{ClientFirst, ScramVariant};
use crate::auth::{self, SpeculativeState};
use crate::conn::Connection;
use crate::conn::config::{ConnectionConfig, MechanismChoice};
use crate::conn::description::StreamDescription;
use crate::error::{CommandError, Error, Result, reply_is_ok};

/// The value of the handshake's `backpressure` field. The handshake specification requires the
/// string "2" (the version of the client backpressure specification this driver implements),
/// explicitly not a number.
pub(crate) const BACKPRESSURE_VERSION: &str = "2";

/// The error of a load-balanced handshake whose reply carries no `serviceId`: the server is
/// not behind a load balancer (the load-balancers specification's message).
pub(crate) const NOT_LOAD_BALANCED: &str = "Driver attempted to initialize in load balancing mode, but the server does not support this mode.";

/// Builds the handshake command (without `$db`). With `speculative`, the first SCRAM message
/// rides along in `speculativeAuthenticate`.
pub(crate) fn handshake_command(
    config: &ConnectionConfig,
    speculative: Option<&ClientFirst>,
) -> Document {
    // Legacy hello (with helloOk) unless the application declared a Stable API version or the
    // deployment is load balanced; both require `hello`. Either way it travels in an OP_MSG.
    let mut command = if config.server_api.is_some() || config.load_balanced {
        doc! { "hello": 1 }
    } else {
        doc! { "isMaster": 1, "helloOk": true }
    };
    command.insert("backpressure", BACKPRESSURE_VERSION);
    command.insert("client", config.current_metadata());
    let names: Vec<Bson> = config
        .compressors
        .iter()
        .map(|c| Bson::String(c.name().to_string()))
        .collect();
    command.insert("compression", names);
    if config.load_balanced {
        command.insert("loadBalanced", true);
    }
    if let Some(auth) = &config.auth {
        if auth.mechanism == MechanismChoice::Negotiate {
            // The username is sent as the application gave it: never SASLprepped.
            command.insert(
                "saslSupportedMechs",
                format!("{}.{}", auth.source, auth.username),
            );
        }
        if let Some(first) = speculative {
            let mut start = auth::sasl_start_command(first);
            start.insert("db", auth.source.clone());
            command.insert("speculativeAuthenticate", start);
        } else if auth.mechanism == MechanismChoice::X509 {
            command.insert(
                "speculativeAuthenticate",
                auth::x509::speculative_command(auth),
            );
        }
    }
    if let Some(api) = &config.server_api {
        api.append_to(&mut command);
    }
    command
}

/// The SCRAM variant speculative authentication uses: the configured one, or SCRAM-SHA-256
/// when negotiating (as the handshake specification requires); `None` for other mechanisms
/// (X.509 speculates with its own command; PLAIN and MONGODB-AWS, which the handshake
/// specification does not list among the speculative mechanisms, not at all).
pub(crate) fn speculative_variant(choice: MechanismChoice) -> Option<ScramVariant> {
    match choice {
        MechanismChoice::Negotiate => Some(ScramVariant::Sha256),
        MechanismChoice::Scram(variant) => Some(variant),
        // OIDC speculates with its cached token (`auth::oidc::speculative_start`).
        MechanismChoice::Plain
        | MechanismChoice::X509
        | MechanismChoice::Aws
        | MechanismChoice::Oidc => None,
    }
}

/// Runs the handshake on a fresh connection, records its stream description, then
/// authenticates when a credential is configured.
///
/// # Errors
/// Network/timeout/protocol errors from the exchange; a command error when the server answers
/// the handshake with `ok: 0`; authentication errors.
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn perform(
    connection: &mut Connection,
    config: &ConnectionConfig,
    limit: IoLimit,
) -> Result<()> {
    let oidc = config.auth.as_ref().and_then(|auth| auth.oidc.as_deref());
    let speculative = config.auth.as_ref().and_then(|auth| {
        let variant = speculative_variant(auth.mechanism)?;
        Some(ClientFirst::new(
            variant,
            &auth.username,
            &crate::runtime::scram_nonce(),
        ))
    });
    let oidc_speculative = config
        .auth
        .as_ref()
        .zip(oidc)
        .and_then(|(auth, oidc)| auth::oidc::speculative_start(oidc, &auth.source));
    let mut command = handshake_command(config, speculative.as_ref());
    if let Some((start, _)) = &oidc_speculative {
        command.insert("speculativeAuthenticate", start.clone());
    }
    command.insert("$db", "admin");
    let command = RawDocumentBuf::try_from(&command).map_err(|e| {
        Error::invalid_argument("the handshake command cannot be encoded").with_source(e)
    })?;
    let reply = connection.send_command(command, limit).await?;
    let reply = Document::try_from(reply)
        .map_err(|e| Error::protocol("the handshake reply is not valid BSON").with_source(e))?;
    if !reply_is_ok(&reply) {
        let failure = CommandError::from_reply(&reply);
        // The auth specification: with a credential, a failed handshake is an authentication
        // failure (e.g. negotiation for a user that does not exist), whatever the server said.
        if config.auth.is_some() {
            return Err(
                Error::authentication(format!("the handshake failed: {failure}"))
                    .with_label_set(&failure.labels)
                    .with_source(failure),
            );
        }
        return Err(failure.into());
    }
    let description =
        StreamDescription::from_handshake_reply(connection.address(), &reply, &config.compressors)?;
    if config.load_balanced && description.service_id.is_none() {
        return Err(Error::protocol(NOT_LOAD_BALANCED));
    }
    let is_arbiter = description.server_type == ServerType::RsArbiter;
    let mechanisms = description.sasl_supported_mechs.clone();
    connection.set_description(description);

    let Some(auth) = &config.auth else {
        return Ok(());
    };
    // Authentication is impossible (and unnecessary) against an arbiter.
    if is_arbiter {
        return Ok(());
    }
    if let Some(oidc) = oidc {
        let speculative = oidc_speculative.map(|(_, token)| {
            let reply = reply.get_document("speculativeAuthenticate").ok().cloned();
            (token, reply)
        });
        return auth::oidc::finish_handshake(connection, oidc, &auth.source, speculative, limit)
            .await;
    }
    let speculative = reply
        .get_document("speculativeAuthenticate")
        .ok()
        .map(|server_reply| SpeculativeState {
            first: speculative,
            reply: server_reply.clone(),
        });
    auth::authenticate(connection, auth, mechanisms.as_deref(), speculative, limit).await
}

/// A SASL payload as BSON binary data.
pub(crate) fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

#[cfg(test)]
mod tests;
