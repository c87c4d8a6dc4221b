//! The resolver behind `mongodb+srv://` and SRV polling (the `dns-resolver` feature):
//! hickory, asking the system's name servers or those of a [`ResolverConfig`].

use std::time::Duration;

use steadfast_core::options::SrvRecord;

use super::{SrvAnswer, SrvResolver};
use crate::client::ResolverConfig;
use crate::error::{Error, Result};

/// A hickory-resolver: the system's (`/etc/resolv.conf` on Unix) or the name servers of a
/// [`ResolverConfig`]. Cheap to clone: clones share the connections and the cache.
#[derive(Clone)]
pub(crate) struct HickoryResolver {
    resolver: std::sync::Arc<hickory_resolver::TokioResolver>,
}

impl std::fmt::Debug for HickoryResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HickoryResolver").finish_non_exhaustive()
    }
}

impl HickoryResolver {
    /// A resolver configured like the operating system's.
    ///
    /// # Errors
    /// `DnsResolve` when the system resolver configuration cannot be read.
    pub(crate) fn from_system_config() -> Result<Self> {
        let builder = hickory_resolver::TokioResolver::builder_tokio().map_err(|e| {
            Error::dns("the system DNS configuration cannot be read").with_source(e)
        })?;
        Ok(HickoryResolver {
            resolver: std::sync::Arc::new(builder.build()),
        })
    }

    /// A resolver that asks the name servers of `config`, and nothing else.
    pub(crate) fn with_config(config: &ResolverConfig) -> Self {
        let provider = hickory_resolver::name_server::TokioConnectionProvider::default();
        let builder =
            hickory_resolver::TokioResolver::builder_with_config(config.to_hickory(), provider);
        HickoryResolver {
            resolver: std::sync::Arc::new(builder.build()),
        }
    }

    /// The resolver a client uses: `config`'s name servers when given, else the system's.
    ///
    /// # Errors
    /// As [`HickoryResolver::from_system_config`] when no configuration is given.
    pub(crate) fn for_client(config: Option<&ResolverConfig>) -> Result<Self> {
        match config {
            Some(config) => Ok(Self::with_config(config)),
            None => Self::from_system_config(),
        }
    }

    /// The hickory resolver itself, shared, for address (A/AAAA) lookups.
    pub(crate) fn shared(&self) -> std::sync::Arc<hickory_resolver::TokioResolver> {
        std::sync::Arc::clone(&self.resolver)
    }
}

impl SrvResolver for HickoryResolver {
    async fn srv_records(&self, name: &str) -> Result<Vec<SrvRecord>> {
        Ok(self.srv_answer(name).await?.records)
    }

    async fn srv_answer(&self, name: &str) -> Result<SrvAnswer> {
        let answer = self.resolver.srv_lookup(name).await.map_err(|e| {
            Error::dns(format!(
                "the SRV lookup of {name} failed, so no host can be found: {e}"
            ))
            .with_source(e)
        })?;
        let lowest_ttl = answer
            .as_lookup()
            .record_iter()
            .map(|record| record.ttl())
            .min()
            .map(|ttl| Duration::from_secs(u64::from(ttl)));
        let records = answer
            .iter()
            .map(|srv| SrvRecord {
                target: srv.target().to_utf8(),
                port: srv.port(),
            })
            .collect();
        Ok(SrvAnswer {
            records,
            lowest_ttl,
        })
    }

    async fn txt_records(&self, name: &str) -> Result<Vec<Vec<String>>> {
        match self.resolver.txt_lookup(name).await {
            Ok(answer) => Ok(answer
                .iter()
                .map(|txt| {
                    txt.txt_data()
                        .iter()
                        .map(|part| String::from_utf8_lossy(part).into_owned())
                        .collect()
                })
                .collect()),
            Err(e) if e.is_no_records_found() || e.is_nx_domain() => Ok(Vec::new()),
            Err(e) => {
                Err(Error::dns(format!("the TXT lookup of {name} failed: {e}")).with_source(e))
            }
        }
    }
}
