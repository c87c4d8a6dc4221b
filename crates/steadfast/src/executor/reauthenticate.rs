//! Reauthentication (auth.md, "Reauthentication"): when a command fails with
//! ReauthenticationRequired (391) on a client that authenticates with MONGODB-OIDC, the
//! connection authenticates again (SASL only: no `hello`, no speculative attempt) and the same
//! command is sent once more on it, whether or not the operation is retryable. The first reply
//! is reported as a failed command; an error while reauthenticating, or the second reply, is
//! what the attempt reports.

use bson::{Document, RawDocumentBuf};
use steadfast_core::IoLimit;

use super::Executor;
use super::attempt::{Interrupt, Stage};
use super::exchange::Exchanged;
use super::monitoring;
use super::prepare::Prepared;
use crate::error::{CommandError, Error};
use crate::pool::PooledConnection;
use crate::session::ClientSession;

/// The server's ReauthenticationRequired.
const REAUTHENTICATION_REQUIRED: i32 = 391;

impl Executor {
    /// [`Executor::exchange`], reauthenticating and resending once when the server asks for it.
    ///
    /// # Cancel safety
    /// Not cancel safe, as [`Executor::exchange`].
    pub(super) async fn exchange_reauthenticating(
        &self,
        stage: Stage<'_>,
        connection: &mut PooledConnection,
        prepared: Prepared,
        session: Option<&mut ClientSession>,
    ) -> Result<Exchanged, Interrupt> {
        if self.auth().is_some_and(|auth| auth.oidc.is_some()) {
            // Boxed: the OIDC conversation and the second exchange would otherwise make every
            // operation's future larger (copied once per call, held per operation in flight)
            // for every client, OIDC or not.
            Box::pin(self.exchange_oidc(stage, connection, prepared, session)).await
        } else {
            self.exchange(stage, connection, prepared, session).await
        }
    }

    /// The OIDC client's exchange: reauthenticates and resends once on 391.
    async fn exchange_oidc(
        &self,
        stage: Stage<'_>,
        connection: &mut PooledConnection,
        prepared: Prepared,
        mut session: Option<&mut ClientSession>,
    ) -> Result<Exchanged, Interrupt> {
        let Some((oidc, source)) = self
            .auth()
            .and_then(|auth| Some((auth.oidc.as_deref()?, auth.source.as_str())))
        else {
            return self.exchange(stage, connection, prepared, session).await;
        };
        // Kept only for OIDC clients: the identical command (same lsid and txnNumber) is what
        // goes out again after reauthenticating.
        let resend = prepared.clone();
        let exchanged = self
            .exchange(stage, connection, prepared, session.as_deref_mut())
            .await?;
        let Some(refusal) = reauthentication_required(&exchanged.reply) else {
            return Ok(exchanged);
        };
        if let Some(identity) = &exchanged.identity {
            let error = Error::from(refusal).with_address(&stage.selected.address);
            monitoring::failed(self.events(), identity, &error, exchanged.duration);
        }
        // As a handshake's: socketTimeoutMS bounds each read and write, the deadline all.
        let limit = IoLimit::SocketTimeout(stage.plan.deadline.instant());
        if let Err(error) = crate::auth::oidc::reauthenticate(connection, oidc, source, limit).await
        {
            let error = error.with_address(&stage.selected.address);
            return Err(self.exchange_failed(stage, error, exchanged.generation, session));
        }
        self.exchange(stage, connection, resend, session).await
    }
}

/// The command error of a ReauthenticationRequired reply; `None` for any other reply.
fn reauthentication_required(reply: &RawDocumentBuf) -> Option<CommandError> {
    let code = reply.get("code").ok().flatten()?.as_i32()?;
    if code != REAUTHENTICATION_REQUIRED {
        return None;
    }
    let document = Document::try_from(reply.clone()).ok()?;
    Some(CommandError::from_reply(&document))
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    #[test]
    fn only_reauthentication_required_triggers_reauthentication() {
        let refusal = rawdoc! { "ok": 0, "code": 391, "errmsg": "reauthenticate" };
        let error = reauthentication_required(&refusal).expect("391 is recognised");
        assert_eq!(error.code_if_present(), Some(391));
        for other in [
            rawdoc! { "ok": 0, "code": 18 },
            rawdoc! { "ok": 1 },
            rawdoc! { "ok": 0, "code": "391" },
        ] {
            assert!(reauthentication_required(&other).is_none(), "{other:?}");
        }
    }
}
