//! [`ClientOptionsBuilder`]: [`ClientOptions`] built by chained setters, as in the official
//! driver (`ClientOptions::builder().app_name(..).build()`).

use std::sync::Arc;
use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::options::{Credential, ReadConcern, ServerMonitoringMode, WriteConcern};
use steadfast_core::retry::{RetryBudgetConfig, RetryPolicy};
use steadfast_core::selection::SelectionCriteria;

use super::options::{ClientOptions, Compressor, Socks5Proxy};
#[cfg(feature = "dns-resolver")]
use super::resolver_config::ResolverConfig;
use super::tls::Tls;
use crate::conn::config::ServerApi;
use crate::event::{EventHandler, EventListener, cmap, command, sdam};
use crate::handshake::metadata::DriverInfo;

/// Builds [`ClientOptions`]: each setter sets the field of the same name; a setter left
/// uncalled leaves the field's default. Setters of optional fields take the value itself or
/// an `Option` (so `None` can be passed to clear one).
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ClientOptionsBuilder {
    options: ClientOptions,
}

/// Defines a setter per `Option` field of [`ClientOptions`].
macro_rules! optional_setters {
    ($($field:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`ClientOptions::", stringify!($field), "`].")]
            pub fn $field(mut self, value: impl Into<Option<$ty>>) -> Self {
                self.options.$field = value.into();
                self
            }
        )*
    };
}

/// Defines a setter per event handler field of [`ClientOptions`].
macro_rules! handler_setters {
    ($($field:ident: $event:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`ClientOptions::", stringify!($field), "`].")]
            pub fn $field(mut self, handler: impl Into<EventHandler<$event>>) -> Self {
                self.options.$field = Some(handler.into());
                self
            }
        )*
    };
}

impl ClientOptionsBuilder {
    /// Sets [`ClientOptions::hosts`].
    pub fn hosts(mut self, hosts: impl Into<Vec<ServerAddress>>) -> Self {
        self.options.hosts = hosts.into();
        self
    }

    optional_setters!(
        app_name: String,
        compressors: Vec<Compressor>,
        connect_timeout: Duration,
        credential: Credential,
        direct_connection: bool,
        driver_info: DriverInfo,
        heartbeat_freq: Duration,
        load_balanced: bool,
        local_threshold: Duration,
        max_idle_time: Duration,
        max_pool_size: u32,
        min_pool_size: u32,
        max_connecting: u32,
        read_concern: ReadConcern,
        repl_set_name: String,
        retry_reads: bool,
        retry_writes: bool,
        server_monitoring_mode: ServerMonitoringMode,
        selection_criteria: SelectionCriteria,
        server_api: ServerApi,
        server_selection_timeout: Duration,
        default_database: String,
        srv_service_name: String,
        tls: Tls,
        socks5_proxy: Socks5Proxy,
        write_concern: WriteConcern,
        srv_max_hosts: u32,
        max_adaptive_retries: u32,
        enable_overload_retargeting: bool,
        timeout: Duration,
        socket_timeout: Duration,
        wait_queue_timeout: Duration,
        retry_policy: Arc<dyn RetryPolicy>,
        retry_budget: RetryBudgetConfig,
        tracing_max_document_length_bytes: usize,
    );

    /// Sets [`ClientOptions::resolver_config`].
    #[cfg(feature = "dns-resolver")]
    pub fn resolver_config(mut self, value: impl Into<Option<ResolverConfig>>) -> Self {
        self.options.resolver_config = value.into();
        self
    }

    handler_setters!(
        command_event_handler: command::CommandEvent,
        sdam_event_handler: sdam::SdamEvent,
        cmap_event_handler: cmap::CmapEvent,
    );

    /// Sets [`ClientOptions::tracing`] (feature `opentelemetry`).
    #[cfg(feature = "opentelemetry")]
    pub fn tracing(
        mut self,
        tracing: impl Into<Option<crate::otel::OpentelemetryOptions>>,
    ) -> Self {
        self.options.tracing = tracing.into();
        self
    }

    /// Adds one of [`ClientOptions::event_listeners`].
    pub fn event_listener(mut self, listener: Arc<dyn EventListener>) -> Self {
        self.options.event_listeners.push(listener);
        self
    }

    /// The options.
    pub fn build(self) -> ClientOptions {
        self.options
    }
}
