//! `ClientOptions::parse`: [`ParseConnectionString`], the action that reads a connection
//! string into options, resolving `mongodb+srv://` through DNS.

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use crate::client::ClientOptions;
#[cfg(feature = "dns-resolver")]
use crate::client::ResolverConfig;
use crate::error::Result;

impl ClientOptions {
    /// Parses a connection string. A `mongodb+srv://` string is resolved through DNS (SRV and
    /// TXT records) when the action is awaited; otherwise no I/O happens. Set
    /// [`ParseConnectionString::resolver_config`] to ask other name servers than the
    /// system's.
    ///
    /// ```no_run
    /// # async fn demo() -> steadfast::Result<()> {
    /// use steadfast::options::{ClientOptions, ResolverConfig};
    ///
    /// let options = ClientOptions::parse("mongodb://127.0.0.1:27017/?replicaSet=rs0").await?;
    /// let options = ClientOptions::parse("mongodb+srv://cluster0.example.com/")
    ///     .resolver_config(ResolverConfig::google())
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn parse(uri: impl AsRef<str>) -> ParseConnectionString {
        ParseConnectionString {
            uri: uri.as_ref().to_string(),
            #[cfg(feature = "dns-resolver")]
            resolver_config: None,
        }
    }
}

/// Parses a connection string into [`ClientOptions`] when awaited.
///
/// # Errors
/// Awaiting it fails with `InvalidArgument` naming the offending part when the string is
/// invalid, and `DnsResolve` when the DNS records of a `mongodb+srv://` string cannot be
/// resolved or used (no SRV records, a target outside the domain, a forbidden or malformed
/// TXT option, options that conflict once the TXT options are applied).
///
/// # Cancel safety
/// Cancel safe: nothing is kept until the options are returned.
#[must_use = "the connection string is parsed only when the action is awaited"]
#[derive(Clone, Debug)]
pub struct ParseConnectionString {
    uri: String,
    #[cfg(feature = "dns-resolver")]
    resolver_config: Option<ResolverConfig>,
}

impl ParseConnectionString {
    /// Resolves `mongodb+srv://` through these name servers instead of the system's. The
    /// parsed options keep the configuration
    /// ([`ClientOptions::resolver_config`]), so the client also polls SRV records and
    /// resolves its servers' host names through it. With the `dns-resolver` feature only.
    #[cfg(feature = "dns-resolver")]
    pub fn resolver_config(mut self, config: ResolverConfig) -> Self {
        self.resolver_config = Some(config);
        self
    }
}

impl IntoFuture for ParseConnectionString {
    type Output = Result<ClientOptions>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            #[cfg(feature = "dns-resolver")]
            {
                let resolved =
                    crate::client::options_from_uri(&self.uri, self.resolver_config.as_ref())
                        .await?;
                let mut options = ClientOptions::from_resolved(resolved);
                options.resolver_config = self.resolver_config;
                Ok(options)
            }
            #[cfg(not(feature = "dns-resolver"))]
            {
                let resolved = crate::client::options_from_uri(&self.uri).await?;
                Ok(ClientOptions::from_resolved(resolved))
            }
        })
    }
}
