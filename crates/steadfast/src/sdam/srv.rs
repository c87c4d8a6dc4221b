//! `mongodb+srv://` resolution (initial-dns-seedlist-discovery.md): the DNS queries happen here,
//! the rules (target domains, TXT options, srvMaxHosts) in `steadfast_core::options`.

use std::future::Future;
use std::time::Duration;

use steadfast_core::options::{
    ClientOptions, ConnectionString, HostInfo, ParsedUri, SrvLookup, SrvRecord, SrvResolution,
};

use crate::error::{Error, Result};
use crate::runtime;

/// Answers the two DNS questions of a `mongodb+srv://` connection string. The trait exists so
/// that the resolution can run against canned answers as well as the system resolver.
pub(crate) trait SrvResolver: Send + Sync {
    /// The SRV records at `name` (`_mongodb._tcp.host.example.com`).
    ///
    /// # Errors
    /// Any DNS failure, including "no records": a seed list cannot be empty.
    fn srv_records(&self, name: &str) -> impl Future<Output = Result<Vec<SrvRecord>>> + Send;

    /// The TXT records at `name`, each as its list of character strings. No records at all is
    /// an empty list, not an error.
    ///
    /// # Errors
    /// DNS failures other than "no such record".
    fn txt_records(&self, name: &str) -> impl Future<Output = Result<Vec<Vec<String>>>> + Send;

    /// The SRV records at `name` with the lowest of their TTLs, for SRV polling. A resolver
    /// that cannot see TTLs answers `None` for it (polling then rescans every 60 s).
    ///
    /// # Errors
    /// As [`SrvResolver::srv_records`].
    fn srv_answer(&self, name: &str) -> impl Future<Output = Result<SrvAnswer>> + Send {
        async move {
            Ok(SrvAnswer {
                records: self.srv_records(name).await?,
                lowest_ttl: None,
            })
        }
    }
}

/// One SRV lookup's records and the lowest of their TTLs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SrvAnswer {
    /// The records.
    pub(crate) records: Vec<SrvRecord>,
    /// The lowest TTL among them, when the resolver reports TTLs.
    pub(crate) lowest_ttl: Option<Duration>,
}

/// Finishes a `mongodb+srv://` connection string: queries SRV and TXT records (both before any
/// connection is attempted, as the specification requires), then lets core apply the rules.
///
/// # Errors
/// `DnsResolve` for a failed lookup (the message says which query failed and why) or records
/// that cannot be used (no SRV records, a target outside the domain, a forbidden or malformed
/// TXT option, options that are invalid once combined); `InvalidArgument` for a `mongodb://`
/// string.
///
/// # Cancel safety
/// Cancel safe: nothing is kept between the queries.
pub(crate) async fn resolve(
    connection_string: &ConnectionString,
    resolver: &impl SrvResolver,
) -> Result<SrvResolution> {
    let (Some(srv_name), HostInfo::Srv(host)) = (
        connection_string.srv_query_name(),
        &connection_string.host_info,
    ) else {
        return Err(Error::invalid_argument(
            "SRV resolution needs a mongodb+srv:// connection string",
        ));
    };
    let txt_name = host.hostname().to_string();
    let (srv, txt) = tokio::join!(
        resolver.srv_records(&srv_name),
        resolver.txt_records(&txt_name)
    );
    let lookup = SrvLookup {
        srv_records: srv?,
        txt_records: txt?,
    };
    connection_string
        .resolve_srv(&lookup, &mut runtime::rng())
        .map_err(|e| {
            Error::dns(format!("the mongodb+srv:// records cannot be used: {e}")).with_source(e)
        })
}

/// Parses a connection string into complete options, resolving `mongodb+srv://` through
/// `resolver` first (so that the client is built from the resolved seed list). Returns the
/// options and the warnings about ignored options.
///
/// # Errors
/// `InvalidArgument` for an invalid connection string, or as [`resolve`].
///
/// # Cancel safety
/// Cancel safe.
pub(crate) async fn options_from_uri(
    uri: &str,
    resolver: &impl SrvResolver,
) -> Result<(ClientOptions, Vec<String>)> {
    match ClientOptions::parse(uri) {
        Ok(ParsedUri::Complete { options, warnings }) => Ok((options, warnings)),
        Ok(ParsedUri::NeedsSrv(connection_string)) => {
            let resolution = resolve(&connection_string, resolver).await?;
            Ok((resolution.options, resolution.warnings))
        }
        Err(e) => {
            Err(Error::invalid_argument(format!("invalid connection string: {e}")).with_source(e))
        }
    }
}

#[cfg(feature = "dns-resolver")]
pub(crate) use self::hickory::HickoryResolver;

#[cfg(feature = "dns-resolver")]
mod hickory;
pub(crate) mod poll;
#[cfg(test)]
mod tests;
