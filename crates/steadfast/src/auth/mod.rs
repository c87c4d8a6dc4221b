//! Authentication over an established connection: mechanism negotiation, completion of a
//! speculative conversation, the SASL `saslStart` / `saslContinue` exchange for SCRAM, and
//! dispatch to the other mechanisms (PLAIN, MONGODB-X509), each in its own module.

pub(crate) mod aws;
#[cfg(any(feature = "aws-auth", feature = "azure-oidc", feature = "gcp-oidc"))]
pub(crate) mod http;
pub(crate) mod oidc;
pub(crate) mod plain;
pub(crate) mod scram;
pub(crate) mod x509;

use std::sync::Arc;

use base64::Engine as _;
use bson::{Bson, Document, RawDocumentBuf, doc};
use steadfast_core::IoLimit;

use self::scram::{ClientFirst, ScramVariant};
use crate::conn::Connection;
use crate::conn::config::{AuthSettings, MechanismChoice};
use crate::error::{CommandError, Error, Result, reply_is_ok};

/// Servers that ignore `skipEmptyExchange` need one extra empty round trip; anything beyond a
/// couple of them is a misbehaving server, not a longer conversation.
const MAX_EMPTY_EXCHANGES: usize = 2;

/// The server's `speculativeAuthenticate` answer, and the first SCRAM message it answers
/// (`None` for a mechanism whose speculative step is not SCRAM's).
pub(crate) struct SpeculativeState {
    pub(crate) first: Option<ClientFirst>,
    pub(crate) reply: Document,
}

/// The `saslStart` command for the first SCRAM message (also the body of
/// `speculativeAuthenticate`, which adds `db`).
pub(crate) fn sasl_start_command(first: &ClientFirst) -> Document {
    doc! {
        "saslStart": 1,
        "mechanism": first.variant().mechanism_name(),
        "payload": crate::handshake::binary(first.message()),
        "autoAuthorize": 1,
        "options": { "skipEmptyExchange": true },
    }
}

/// The SCRAM variant to use: the configured one, else SCRAM-SHA-256 when the server lists it
/// for this user, else SCRAM-SHA-1 (auth specification, "Default Authentication Methods").
pub(crate) fn choose_variant(
    choice: MechanismChoice,
    negotiated: Option<&[String]>,
) -> ScramVariant {
    match choice {
        MechanismChoice::Scram(variant) => variant,
        // Not reached: those mechanisms are dispatched before SCRAM is chosen.
        MechanismChoice::Plain
        | MechanismChoice::X509
        | MechanismChoice::Aws
        | MechanismChoice::Oidc => ScramVariant::Sha256,
        MechanismChoice::Negotiate => {
            if negotiated.is_some_and(|mechs| mechs.iter().any(|m| m == "SCRAM-SHA-256")) {
                ScramVariant::Sha256
            } else {
                ScramVariant::Sha1
            }
        }
    }
}

/// Authenticates `connection` with `auth`.
///
/// # Errors
/// `Authentication` when the server rejects the credential or the conversation goes wrong
/// (including a server signature that does not verify); network, timeout and protocol errors
/// from the exchange are reported as such.
///
/// # Cancel safety
/// Not cancel safe: a dropped future leaves the connection broken.
pub(crate) async fn authenticate(
    connection: &mut Connection,
    auth: &AuthSettings,
    negotiated: Option<&[String]>,
    speculative: Option<SpeculativeState>,
    limit: IoLimit,
) -> Result<()> {
    if let Some(aws) = &auth.aws {
        return aws::authenticate(connection, aws, &auth.source, limit).await;
    }
    if let Some(oidc) = auth.oidc.as_deref() {
        return oidc::finish_handshake(connection, oidc, &auth.source, None, limit).await;
    }
    match auth.mechanism {
        MechanismChoice::Plain => return plain::authenticate(connection, auth, limit).await,
        MechanismChoice::X509 => {
            return x509::authenticate(connection, auth, speculative.is_some(), limit).await;
        }
        // MONGODB-AWS and MONGODB-OIDC settings are always present with their choice
        // (dispatched above).
        MechanismChoice::Negotiate
        | MechanismChoice::Scram(_)
        | MechanismChoice::Aws
        | MechanismChoice::Oidc => {}
    }
    let variant = choose_variant(auth.mechanism, negotiated);
    let password = variant.prepare_password(&auth.username, &auth.password)?;
    let (first, server_first) = match speculative {
        // The speculative reply only continues a conversation of the same mechanism.
        Some(SpeculativeState {
            first: Some(first),
            reply,
        }) if first.variant() == variant => (first, reply),
        _ => {
            let first = ClientFirst::new(variant, &auth.username, &crate::runtime::scram_nonce());
            let reply =
                sasl_command(connection, &auth.source, sasl_start_command(&first), limit).await?;
            (first, reply)
        }
    };
    let conversation_id = server_first
        .get("conversationId")
        .cloned()
        .ok_or_else(|| Error::authentication("the SASL reply has no conversationId"))?;
    if is_done(&server_first) {
        return Err(Error::authentication(
            "the server ended the SCRAM conversation before proving it knows the password",
        ));
    }
    // PBKDF2 is thousands of HMACs: off the async workers, so that one connection's
    // authentication does not stall every other task on its worker thread.
    let server_first_payload = payload(&server_first)?;
    let cache = Arc::clone(&auth.cache);
    let last = crate::runtime::run_blocking(move || {
        first.handle_server_first(&password, &server_first_payload, Some(&cache))
    })
    .await
    .ok_or_else(|| {
        Error::authentication("the runtime shut down while computing the SCRAM proof")
    })??;
    let continue_command = |payload: &[u8]| {
        doc! {
            "saslContinue": 1,
            "conversationId": conversation_id.clone(),
            "payload": crate::handshake::binary(payload.to_vec()),
        }
    };
    let server_final = sasl_command(
        connection,
        &auth.source,
        continue_command(last.message()),
        limit,
    )
    .await?;
    last.verify_server_final(&payload(&server_final)?)?;
    let mut reply = server_final;
    let mut empty_exchanges = 0;
    while !is_done(&reply) {
        empty_exchanges += 1;
        if empty_exchanges > MAX_EMPTY_EXCHANGES {
            return Err(Error::authentication(
                "the server did not finish the SCRAM conversation",
            ));
        }
        reply = sasl_command(connection, &auth.source, continue_command(&[]), limit).await?;
    }
    Ok(())
}

/// Sends one SASL command to the auth source and returns its successful reply.
pub(crate) async fn sasl_command(
    connection: &mut Connection,
    source: &str,
    mut command: Document,
    limit: IoLimit,
) -> Result<Document> {
    command.insert("$db", source);
    let command = RawDocumentBuf::try_from(&command).map_err(|e| {
        Error::invalid_argument("the SASL command cannot be encoded").with_source(e)
    })?;
    let reply = connection.send_command(command, limit).await?;
    let reply = Document::try_from(reply)
        .map_err(|e| Error::protocol("the SASL reply is not valid BSON").with_source(e))?;
    if !reply_is_ok(&reply) {
        let command_error = CommandError::from_reply(&reply);
        return Err(Error::authentication(format!(
            "the server rejected the credential: {command_error}"
        ))
        .with_source(command_error));
    }
    Ok(reply)
}

pub(crate) fn is_done(reply: &Document) -> bool {
    reply.get_bool("done").unwrap_or(false)
}

/// The SASL payload: binary data, or (from some servers) a base64 string.
fn payload(reply: &Document) -> Result<Vec<u8>> {
    match reply.get("payload") {
        Some(Bson::Binary(binary)) => Ok(binary.bytes.clone()),
        Some(Bson::String(text)) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| Error::authentication("the SASL payload is not valid base64")),
        _ => Err(Error::authentication("the SASL reply has no payload")),
    }
}
