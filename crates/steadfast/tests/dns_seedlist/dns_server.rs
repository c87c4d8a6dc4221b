//! An authoritative name server on 127.0.0.1 (UDP and TCP on one ephemeral port) serving a
//! fixed set of records, so that the driver's DNS queries never leave the machine. Names it
//! does not hold are answered NXDOMAIN (it is authoritative for the root zone).

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use hickory_server::ServerFuture;
use hickory_server::authority::{AuthorityObject, Catalog, ZoneType};
use hickory_server::proto::rr::rdata::{A, SOA, SRV, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record};
use hickory_server::store::in_memory::InMemoryAuthority;
use steadfast::options::ResolverConfig;
use tokio::net::{TcpListener, UdpSocket};

use crate::records::DnsRecord;

/// Short, so that a record changed between servers is never served from a cache.
const TTL: u32 = 1;
/// How long an idle TCP client may keep its connection.
const TCP_IDLE: Duration = Duration::from_secs(5);
/// Attempts at finding a port free for both UDP and TCP.
const BIND_ATTEMPTS: usize = 20;

/// A running name server; stopped on [`DnsServer::stop`].
pub(crate) struct DnsServer {
    address: SocketAddr,
    server: ServerFuture<Catalog>,
}

impl DnsServer {
    /// Serves `records` on a fresh port.
    ///
    /// # Errors
    /// A message when a record cannot be built or no port could be bound.
    pub(crate) async fn start(records: &[DnsRecord]) -> Result<Self, String> {
        let authority = authority(records)?;
        let mut catalog = Catalog::new();
        catalog.upsert(
            LowerName::from(Name::root()),
            vec![Arc::new(authority) as Arc<dyn AuthorityObject>],
        );
        let (udp, tcp) = bind_pair().await?;
        let address = udp
            .local_addr()
            .map_err(|e| format!("the DNS socket has no address: {e}"))?;
        let mut server = ServerFuture::new(catalog);
        server.register_socket(udp);
        server.register_listener(tcp, TCP_IDLE);
        Ok(DnsServer { address, server })
    }

    /// The client configuration that asks this server only (over UDP, and TCP for large
    /// answers).
    pub(crate) fn resolver_config(&self) -> ResolverConfig {
        ResolverConfig::with_name_servers([self.address])
    }

    /// Stops serving.
    pub(crate) async fn stop(mut self) {
        let _ = self.server.shutdown_gracefully().await;
    }
}

/// The root zone with `records` and the SOA that negative answers carry.
fn authority(records: &[DnsRecord]) -> Result<InMemoryAuthority, String> {
    let root = Name::root();
    let mut authority = InMemoryAuthority::empty(root.clone(), ZoneType::Primary, false);
    let serial = 1;
    let soa = SOA::new(
        name("ns.test")?,
        name("hostmaster.test")?,
        serial,
        3600,
        600,
        86400,
        TTL,
    );
    let mut all = vec![Record::from_rdata(root, TTL, RData::SOA(soa))];
    for record in records {
        all.push(to_hickory(record)?);
    }
    for record in all {
        let description = record.to_string();
        if !authority.upsert_mut(record, serial) {
            return Err(format!("the DNS server refused the record {description}"));
        }
    }
    Ok(authority)
}

fn to_hickory(record: &DnsRecord) -> Result<Record, String> {
    let owner = name(record.name())?;
    let data = match record {
        DnsRecord::A { address, .. } => RData::A(A(*address)),
        DnsRecord::Srv { port, target, .. } => RData::SRV(SRV::new(0, 0, *port, name(target)?)),
        DnsRecord::Txt { strings, .. } => RData::TXT(TXT::new(strings.clone())),
    };
    Ok(Record::from_rdata(owner, TTL, data))
}

/// A fully qualified name.
fn name(text: &str) -> Result<Name, String> {
    Name::from_str(&format!("{}.", text.trim_end_matches('.')))
        .map_err(|e| format!("{text} is not a DNS name: {e}"))
}

/// A UDP socket and a TCP listener on the same ephemeral port of 127.0.0.1 (a resolver asks
/// one address over both).
async fn bind_pair() -> Result<(UdpSocket, TcpListener), String> {
    let mut last_error = String::new();
    for _ in 0..BIND_ATTEMPTS {
        let udp = UdpSocket::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot bind a UDP socket: {e}"))?;
        let address = udp
            .local_addr()
            .map_err(|e| format!("the UDP socket has no address: {e}"))?;
        match TcpListener::bind(address).await {
            Ok(tcp) => return Ok((udp, tcp)),
            // Another socket holds this TCP port: try another pair.
            Err(e) => last_error = e.to_string(),
        }
    }
    Err(format!(
        "no port of 127.0.0.1 was free for both UDP and TCP: {last_error}"
    ))
}
