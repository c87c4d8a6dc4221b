//! `Deserialize` for [`ClientOptions`], reading the fields the official driver reads, under its
//! names: camel case (`loadbalanced` for `load_balanced`), durations in serde's own form
//! (`{ secs, nanos }`), `hosts` defaulting to `localhost:27017`. Event handlers, listeners,
//! retry policies and compressors are code or wire settings and are not read. steadfast's own
//! time limits are read in milliseconds (`timeoutMS`, `socketTimeoutMS`,
//! `waitQueueTimeoutMS`).

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use steadfast_core::ServerAddress;
use steadfast_core::options::{
    Credential, ReadConcern, ServerMonitoringMode, Socks5Proxy, WriteConcern,
};
use steadfast_core::selection::SelectionCriteria;

use crate::client::{ClientOptions, Tls};
use crate::conn::config::ServerApi;
use crate::handshake::metadata::DriverInfo;

fn default_hosts() -> Vec<ServerAddress> {
    vec![ServerAddress::default()]
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClientOptionsForm {
    #[serde(default = "default_hosts")]
    hosts: Vec<ServerAddress>,
    #[serde(default)]
    app_name: Option<String>,
    #[serde(default)]
    connect_timeout: Option<Duration>,
    #[serde(default)]
    credential: Option<Credential>,
    #[serde(default)]
    direct_connection: Option<bool>,
    #[serde(default)]
    driver_info: Option<DriverInfo>,
    #[serde(default)]
    heartbeat_freq: Option<Duration>,
    #[serde(default, rename = "loadbalanced")]
    load_balanced: Option<bool>,
    #[serde(default)]
    local_threshold: Option<Duration>,
    #[serde(default)]
    max_idle_time: Option<Duration>,
    #[serde(default)]
    max_pool_size: Option<u32>,
    #[serde(default)]
    min_pool_size: Option<u32>,
    #[serde(default)]
    max_connecting: Option<u32>,
    #[serde(default)]
    read_concern: Option<ReadConcern>,
    #[serde(default)]
    repl_set_name: Option<String>,
    #[serde(default)]
    retry_reads: Option<bool>,
    #[serde(default)]
    retry_writes: Option<bool>,
    #[serde(default)]
    server_monitoring_mode: Option<ServerMonitoringMode>,
    #[serde(default)]
    selection_criteria: Option<SelectionCriteria>,
    #[serde(default)]
    server_api: Option<ServerApi>,
    #[serde(default)]
    server_selection_timeout: Option<Duration>,
    #[serde(default)]
    default_database: Option<String>,
    #[serde(default)]
    srv_service_name: Option<String>,
    #[serde(default)]
    tls: Option<Tls>,
    #[serde(default)]
    tracing_max_document_length_bytes: Option<usize>,
    #[serde(default)]
    write_concern: Option<WriteConcern>,
    #[serde(default)]
    srv_max_hosts: Option<u32>,
    #[serde(default)]
    socks5_proxy: Option<Socks5Proxy>,
    #[serde(default)]
    max_adaptive_retries: Option<u32>,
    #[serde(default)]
    enable_overload_retargeting: Option<bool>,
    #[serde(
        default,
        rename = "timeoutMS",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    timeout: Option<Duration>,
    #[serde(
        default,
        rename = "socketTimeoutMS",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    socket_timeout: Option<Duration>,
    #[serde(
        default,
        rename = "waitQueueTimeoutMS",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    wait_queue_timeout: Option<Duration>,
}

impl<'de> Deserialize<'de> for ClientOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = ClientOptionsForm::deserialize(deserializer)?;
        let mut options = ClientOptions::default();
        options.hosts = form.hosts;
        options.app_name = form.app_name;
        options.connect_timeout = form.connect_timeout;
        options.credential = form.credential;
        options.direct_connection = form.direct_connection;
        options.driver_info = form.driver_info;
        options.heartbeat_freq = form.heartbeat_freq;
        options.load_balanced = form.load_balanced;
        options.local_threshold = form.local_threshold;
        options.max_idle_time = form.max_idle_time;
        options.max_pool_size = form.max_pool_size;
        options.min_pool_size = form.min_pool_size;
        options.max_connecting = form.max_connecting;
        options.read_concern = form.read_concern;
        options.repl_set_name = form.repl_set_name;
        options.retry_reads = form.retry_reads;
        options.retry_writes = form.retry_writes;
        options.server_monitoring_mode = form.server_monitoring_mode;
        options.selection_criteria = form.selection_criteria;
        options.server_api = form.server_api;
        options.server_selection_timeout = form.server_selection_timeout;
        options.default_database = form.default_database;
        options.srv_service_name = form.srv_service_name;
        options.tls = form.tls;
        options.tracing_max_document_length_bytes = form.tracing_max_document_length_bytes;
        options.write_concern = form.write_concern;
        options.srv_max_hosts = form.srv_max_hosts;
        options.socks5_proxy = form.socks5_proxy;
        options.max_adaptive_retries = form.max_adaptive_retries;
        options.enable_overload_retargeting = form.enable_overload_retargeting;
        options.timeout = form.timeout;
        options.socket_timeout = form.socket_timeout;
        options.wait_queue_timeout = form.wait_queue_timeout;
        Ok(options)
    }
}
