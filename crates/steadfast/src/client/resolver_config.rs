//! [`ResolverConfig`]: which name servers a client asks, shaped as the official driver's
//! `options::ResolverConfig` (`cloudflare()`, `google()`, `quad9()`), plus name servers of
//! the application's own choosing (a private DNS).

use std::net::SocketAddr;

use hickory_resolver::config::{NameServerConfig, ResolverConfig as HickoryConfig};
use hickory_resolver::proto::xfer::Protocol;

/// The transport a name server is asked over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DnsProtocol {
    /// UDP (port 53 on public resolvers).
    Udp,
    /// TCP.
    Tcp,
}

/// One name server: its address and port, and the transport to ask it over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NameServer {
    /// The server's address and port.
    pub address: SocketAddr,
    /// The transport.
    pub protocol: DnsProtocol,
}

/// The name servers a client asks instead of the operating system's: for the SRV and TXT
/// records of a `mongodb+srv://` connection string, for SRV polling, and for the addresses
/// (A/AAAA) of the servers' host names. Without one (the default), SRV and TXT records come
/// from the system's resolver configuration (`/etc/resolv.conf` on Unix) and host names are
/// resolved by the operating system.
///
/// Set it with [`ClientOptions::resolver_config`](crate::options::ClientOptions::resolver_config)
/// or while parsing: `ClientOptions::parse(uri).resolver_config(config).await`.
///
/// ```no_run
/// # async fn demo() -> steadfast::Result<()> {
/// use steadfast::options::{ClientOptions, ResolverConfig};
///
/// // Public resolvers...
/// let options = ClientOptions::parse("mongodb+srv://cluster0.example.com/")
///     .resolver_config(ResolverConfig::cloudflare())
///     .await?;
/// // ...or a private DNS that knows the cluster's names.
/// let private = ResolverConfig::with_name_servers(["10.0.0.2:53".parse().unwrap()]);
/// let options = ClientOptions::parse("mongodb+srv://db.corp.internal/")
///     .resolver_config(private)
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolverConfig {
    name_servers: Vec<NameServer>,
}

impl ResolverConfig {
    /// Cloudflare's public resolvers: 1.1.1.1, 1.0.0.1, 2606:4700:4700::1111 and
    /// 2606:4700:4700::1001, over UDP and TCP.
    pub fn cloudflare() -> Self {
        Self::from_hickory(&HickoryConfig::cloudflare())
    }

    /// Google's public resolvers: 8.8.8.8, 8.8.4.4, 2001:4860:4860::8888 and
    /// 2001:4860:4860::8844, over UDP and TCP.
    pub fn google() -> Self {
        Self::from_hickory(&HickoryConfig::google())
    }

    /// Quad9's "secure" resolvers: 9.9.9.9, 149.112.112.112, 2620:fe::fe and 2620:fe::fe:9,
    /// over UDP and TCP.
    pub fn quad9() -> Self {
        Self::from_hickory(&HickoryConfig::quad9())
    }

    /// The name servers at `addresses` (address and port each), in order, each asked over UDP
    /// and, for answers too large for a datagram, over TCP.
    pub fn with_name_servers(addresses: impl IntoIterator<Item = SocketAddr>) -> Self {
        let name_servers = addresses
            .into_iter()
            .flat_map(|address| {
                [DnsProtocol::Udp, DnsProtocol::Tcp]
                    .map(|protocol| NameServer { address, protocol })
            })
            .collect();
        ResolverConfig { name_servers }
    }

    /// Exactly these name servers, in order, each over its own transport.
    pub fn with_name_servers_over(name_servers: impl IntoIterator<Item = NameServer>) -> Self {
        ResolverConfig {
            name_servers: name_servers.into_iter().collect(),
        }
    }

    /// The name servers, in the order they are asked.
    pub fn name_servers(&self) -> &[NameServer] {
        &self.name_servers
    }

    /// The UDP and TCP servers of one of hickory's presets (its TLS and HTTPS ones have no
    /// counterpart here).
    fn from_hickory(config: &HickoryConfig) -> Self {
        let name_servers = config
            .name_servers()
            .iter()
            .filter_map(|server| {
                let protocol = match server.protocol {
                    Protocol::Udp => DnsProtocol::Udp,
                    Protocol::Tcp => DnsProtocol::Tcp,
                    _ => return None,
                };
                Some(NameServer {
                    address: server.socket_addr,
                    protocol,
                })
            })
            .collect();
        ResolverConfig { name_servers }
    }

    /// The hickory configuration: these servers, no search domains (names are asked as given).
    pub(crate) fn to_hickory(&self) -> HickoryConfig {
        let mut config = HickoryConfig::new();
        for server in &self.name_servers {
            let protocol = match server.protocol {
                DnsProtocol::Udp => Protocol::Udp,
                DnsProtocol::Tcp => Protocol::Tcp,
            };
            config.add_name_server(NameServerConfig::new(server.address, protocol));
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_keep_their_udp_and_tcp_servers() {
        let cloudflare = ResolverConfig::cloudflare();
        let address: SocketAddr = "1.1.1.1:53".parse().unwrap();
        for protocol in [DnsProtocol::Udp, DnsProtocol::Tcp] {
            assert!(
                cloudflare
                    .name_servers()
                    .contains(&NameServer { address, protocol }),
                "{cloudflare:?}"
            );
        }
        assert_ne!(ResolverConfig::google(), ResolverConfig::quad9());
    }

    #[test]
    fn custom_servers_are_asked_in_order_over_both_transports() {
        let first: SocketAddr = "127.0.0.1:5353".parse().unwrap();
        let second: SocketAddr = "[::1]:53".parse().unwrap();
        let config = ResolverConfig::with_name_servers([first, second]);
        let hickory = config.to_hickory();
        let servers: Vec<_> = hickory
            .name_servers()
            .iter()
            .map(|s| (s.socket_addr, s.protocol))
            .collect();
        assert_eq!(
            servers,
            vec![
                (first, Protocol::Udp),
                (first, Protocol::Tcp),
                (second, Protocol::Udp),
                (second, Protocol::Tcp)
            ]
        );
        assert!(hickory.search().is_empty());

        let tcp_only = ResolverConfig::with_name_servers_over([NameServer {
            address: first,
            protocol: DnsProtocol::Tcp,
        }]);
        assert_eq!(tcp_only.to_hickory().name_servers().len(), 1);
    }
}
