//! The exchange stage of an attempt: command events, the session's exchange bracket, the
//! send itself (bounded by the I/O limit the deadline chooses, passed to the call), and SDAM's
//! judgement of a failed exchange.

use std::time::{Duration, Instant};

use bson::{Document, RawDocumentBuf, rawdoc};
use steadfast_core::retry::Sent;
use steadfast_core::sdam::ErrorPhase;

use super::Executor;
use super::attempt::{Interrupt, On, Stage, deadline_status};
use super::monitoring::{self, CommandIdentity};
use super::prepare::Prepared;
use super::spans;
use crate::error::{Error, ErrorKind};
use crate::event::{ConnectionInfo, EventEmitter};
use crate::pool::{ConnectionGeneration, PoolFailure, PooledConnection, failure_of};
use crate::runtime;
use crate::session::ClientSession;

/// A reply and what the interpret stage needs to report on it.
pub(super) struct Exchanged {
    /// The reply's body (`{ok: 1}` for an unacknowledged write).
    pub(super) reply: RawDocumentBuf,
    /// The command's identity in events, when they are built.
    pub(super) identity: Option<CommandIdentity>,
    /// The round trip's duration (zero when no command event reports it).
    pub(super) duration: Duration,
    /// The connection's pool generation (and service), for SDAM.
    pub(super) generation: ConnectionGeneration,
}

/// A started command whose reply the exchange awaits. If the exchange is dropped first (the
/// caller cancelled the operation), the drop emits the command's failed event, so that every
/// started event is answered (command monitoring, "Guarantees").
struct Unanswered<'e> {
    events: &'e EventEmitter,
    identity: Option<&'e CommandIdentity>,
    sent_at: Option<Instant>,
}

impl Unanswered<'_> {
    /// The exchange ended; its own outcome is reported by the caller.
    fn answered(mut self) {
        self.identity = None;
    }
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if let Some(identity) = self.identity {
            let error = Error::network(
                "the operation was cancelled before the reply arrived; the connection is closed",
            )
            .with_address(&identity.connection.address);
            monitoring::failed(self.events, identity, &error, elapsed_since(self.sent_at));
        }
    }
}

/// The time since `sent_at` (zero when the round trip is not timed).
fn elapsed_since(sent_at: Option<Instant>) -> Duration {
    sent_at.map_or(Duration::ZERO, |sent_at| {
        runtime::now().saturating_duration_since(sent_at)
    })
}

impl Executor {
    /// Sends the prepared command and reads its reply.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future mid-exchange leaves the connection broken (it is
    /// closed when checked in).
    pub(super) async fn exchange(
        &self,
        stage: Stage<'_>,
        connection: &mut PooledConnection,
        prepared: Prepared,
        mut session: Option<&mut ClientSession>,
    ) -> Result<Exchanged, Interrupt> {
        let identity = self.command_started(stage, connection, &prepared);
        // The attempt's span is the current one (`run_attempts` instruments the attempt).
        let command_span = spans::current_if(&stage.plan.span);
        spans::sent(
            &stage.plan.span,
            &command_span,
            &prepared,
            &spans::SentOn {
                operation_name: &stage.plan.operation_name,
                address: &stage.selected.address,
                driver_connection_id: connection.id(),
                server_connection_id: connection
                    .description()
                    .and_then(|d| d.server_connection_id),
            },
        );
        self.open_command_span(stage, connection, &prepared, identity.as_ref());
        if let Some(session) = session.as_deref_mut() {
            session.begin_exchange();
        }
        // The round trip is timed only for the command events that report it.
        let sent_at = identity.as_ref().map(|_| runtime::now());
        let unanswered = Unanswered {
            events: self.events(),
            identity: identity.as_ref(),
            sent_at,
        };
        // Under timeoutMS the deprecated socketTimeoutMS gives way to the deadline (CSOT).
        let exchange = connection
            .send_message(prepared.message, stage.plan.deadline.io_limit())
            .await;
        unanswered.answered();
        if let Some(session) = session.as_deref_mut() {
            session.end_exchange();
        }
        let duration = elapsed_since(sent_at);
        let generation = connection.service_generation();
        let reply = match exchange {
            Ok(reply) if stage.plan.acknowledged => {
                spans::replied(&stage.plan.span, &command_span, &reply.body);
                stage.plan.otel.command_replied(&reply.body);
                reply.body
            }
            Ok(_) => rawdoc! { "ok": 1 },
            Err(error) => {
                if let Some(identity) = &identity {
                    monitoring::failed(self.events(), identity, &error, duration);
                }
                return Err(self.exchange_failed(stage, error, generation, session));
            }
        };
        Ok(Exchanged {
            reply,
            identity,
            duration,
            generation,
        })
    }

    /// Opens the OpenTelemetry span of the command, when the client traces and the command is
    /// not sensitive (such commands get no span, as they get no event payload; they still name
    /// the operation's span).
    fn open_command_span(
        &self,
        stage: Stage<'_>,
        connection: &PooledConnection,
        prepared: &Prepared,
        identity: Option<&CommandIdentity>,
    ) {
        if !stage.plan.otel.is_recording() {
            return;
        }
        let body = prepared.message.body.as_ref();
        let sensitive = identity.map_or_else(
            || monitoring::is_sensitive_raw(&prepared.name, body),
            |identity| identity.sensitive,
        );
        stage.plan.otel.command_sent(&crate::otel::SentCommand {
            name: &prepared.name,
            database: &prepared.database,
            body,
            sequences: &prepared.message.sequences,
            address: &stage.selected.address,
            driver_connection_id: connection.id(),
            server_connection_id: connection
                .description()
                .and_then(|d| d.server_connection_id),
            sensitive,
        });
    }

    /// Emits the command started event, when events are built, and returns the identity the
    /// succeeded or failed event will carry.
    fn command_started(
        &self,
        stage: Stage<'_>,
        connection: &mut PooledConnection,
        prepared: &Prepared,
    ) -> Option<CommandIdentity> {
        if !self.monitoring_active() {
            return None;
        }
        // Events show the command as sent; it was encoded by `prepare` a moment ago, so it
        // decodes (an empty document would only hide a bug, never leak a field).
        let body = Document::try_from(prepared.message.body.as_ref()).unwrap_or_default();
        let identity = CommandIdentity {
            name: prepared.name.clone(),
            database: prepared.database.clone(),
            request_id: connection.reserve_request_id(),
            operation_id: stage.plan.operation_id,
            connection: ConnectionInfo {
                address: stage.selected.address.clone(),
                id: connection.id(),
                server_id: connection
                    .description()
                    .and_then(|d| d.server_connection_id),
            },
            service_id: connection.description().and_then(|d| d.service_id),
            sensitive: monitoring::is_sensitive(&prepared.name, &body),
        };
        let sequences = &prepared.message.sequences;
        monitoring::started(self.events(), &identity, &body, sequences);
        Some(identity)
    }

    /// A failed exchange: the session is dirty after a network error, and SDAM judges the
    /// error unless a pool clear interrupted the exchange (the clear already did).
    pub(super) fn exchange_failed(
        &self,
        stage: Stage<'_>,
        error: Error,
        generation: ConnectionGeneration,
        session: Option<&mut ClientSession>,
    ) -> Interrupt {
        let interrupted = matches!(failure_of(&error), Some(PoolFailure::Interrupted { .. }));
        if error.is_network_error() {
            if let Some(session) = session {
                session.mark_dirty();
            }
        }
        if !interrupted {
            self.topology().handle_connection_error(
                &stage.selected.address,
                &error,
                generation,
                ErrorPhase::AfterHandshake,
            );
        }
        let sent = if matches!(error.kind(), ErrorKind::InvalidArgument { .. }) {
            Sent::No
        } else {
            Sent::Yes
        };
        let on = On {
            server: Some(stage.selected),
            sent,
            base_backoff: None,
            deadline: deadline_status(stage.plan),
            wire_version: None,
        };
        self.failure(error, stage.kind, &on)
    }
}
