//! Cargo features: an option that needs a feature this program was built without is refused
//! when the client is created, with an error naming the feature, rather than failing later on
//! a connection or being silently ignored.
//!
//! | feature | what it adds |
//! |---|---|
//! | `rustls-tls` (default) | TLS with rustls and the Mozilla roots |
//! | `dns-resolver` (default) | `mongodb+srv://`, SRV polling and `ResolverConfig` (hickory) |
//! | `zstd-compression`, `zlib-compression`, `snappy-compression` | that wire compressor |
//! | `aws-auth` | MONGODB-AWS credentials from the environment, ECS and EC2 |
//! | `azure-oidc`, `gcp-oidc` | MONGODB-OIDC's `ENVIRONMENT=azure` / `gcp` token sources |
//! | `socks5-proxy` | connections through a SOCKS5 proxy (`proxyHost`, `ClientOptions::socks5_proxy`) |
//! | `opentelemetry` | OpenTelemetry spans (`ClientOptions::tracing`) |
//! | `sync` | the blocking API, [`crate::sync`], and `.run()` on every action |
//! | `compat-3-0-0`, `compat-3-3-0`, `bson-3`, `tracing-unstable` | nothing: kept so that a
//!   features line written for the official `mongodb` crate resolves (steadfast is always on
//!   bson 3 and always logs through `tracing`) |

use steadfast_core::options::AuthMechanism;
use steadfast_wire::Compressor;

use crate::client::{ClientOptions, Tls};
use crate::error::{Error, Result};

/// The message for `what`, which needs `feature`.
pub(crate) fn missing(what: &str, feature: &str) -> String {
    format!(
        "{what} needs steadfast's `{feature}` cargo feature, which this program was built \
         without: add it to steadfast's `features` in Cargo.toml"
    )
}

/// Which optional parts this build has.
#[derive(Clone, Copy, Debug)]
struct Built {
    tls: bool,
    socks5: bool,
    aws: bool,
    azure_oidc: bool,
    gcp_oidc: bool,
}

impl Built {
    const THIS_PROGRAM: Built = Built {
        tls: cfg!(feature = "rustls-tls"),
        socks5: cfg!(feature = "socks5-proxy"),
        aws: cfg!(feature = "aws-auth"),
        azure_oidc: cfg!(feature = "azure-oidc"),
        gcp_oidc: cfg!(feature = "gcp-oidc"),
    };
}

/// Refuses options that need a feature this program was built without.
///
/// # Errors
/// `InvalidArgument` naming the first such option and its feature.
pub(crate) fn check(options: &ClientOptions) -> Result<()> {
    match first_missing(options, Built::THIS_PROGRAM, Compressor::is_built) {
        Some((what, feature)) => Err(Error::invalid_argument(missing(&what, feature))),
        None => Ok(()),
    }
}

/// The first option (described) that needs a feature `built` lacks, with that feature.
fn first_missing(
    options: &ClientOptions,
    built: Built,
    codec_built: impl Fn(&Compressor) -> bool,
) -> Option<(String, &'static str)> {
    let compressors = options.compressors.as_deref().unwrap_or_default();
    if let Some(codec) = compressors.iter().find(|codec| !codec_built(codec)) {
        let feature = match codec {
            Compressor::Snappy => "snappy-compression",
            Compressor::Zlib { .. } => "zlib-compression",
            Compressor::Zstd { .. } => "zstd-compression",
        };
        return Some((format!("the {} compressor", codec.name()), feature));
    }
    if matches!(options.tls, Some(Tls::Enabled(_))) && !built.tls {
        return Some(("TLS".to_owned(), "rustls-tls"));
    }
    if options.socks5_proxy.is_some() && !built.socks5 {
        return Some(("a SOCKS5 proxy (proxyHost)".to_owned(), "socks5-proxy"));
    }
    let credential = options.credential.as_ref()?;
    match credential.mechanism {
        Some(AuthMechanism::MongoDbAws) if !built.aws => {
            Some(("MONGODB-AWS authentication".to_owned(), "aws-auth"))
        }
        Some(AuthMechanism::MongoDbOidc) => match credential.property("ENVIRONMENT") {
            Some("azure") if !built.azure_oidc => Some((
                "MONGODB-OIDC with ENVIRONMENT=azure".to_owned(),
                "azure-oidc",
            )),
            Some("gcp") if !built.gcp_oidc => {
                Some(("MONGODB-OIDC with ENVIRONMENT=gcp".to_owned(), "gcp-oidc"))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use steadfast_core::options::Credential;

    use super::*;
    use crate::client::{Socks5Proxy, TlsOptions};

    const NOTHING: Built = Built {
        tls: false,
        socks5: false,
        aws: false,
        azure_oidc: false,
        gcp_oidc: false,
    };
    const EVERYTHING: Built = Built {
        tls: true,
        socks5: true,
        aws: true,
        azure_oidc: true,
        gcp_oidc: true,
    };

    fn oidc(environment: &str) -> Credential {
        let mut credential = Credential::default();
        credential.mechanism = Some(AuthMechanism::MongoDbOidc);
        credential.mechanism_properties = [
            ("ENVIRONMENT".to_owned(), environment.to_owned()),
            ("TOKEN_RESOURCE".to_owned(), "r".to_owned()),
        ]
        .into();
        credential
    }

    #[test]
    fn each_option_names_the_feature_it_needs() {
        let mut options = ClientOptions::default();
        options.compressors = Some(vec![
            Compressor::Snappy,
            Compressor::Zstd { level: Some(3) },
        ]);
        let only_snappy = |c: &Compressor| matches!(c, Compressor::Snappy);
        assert_eq!(
            first_missing(&options, EVERYTHING, only_snappy),
            Some(("the zstd compressor".to_owned(), "zstd-compression"))
        );

        let mut options = ClientOptions::default();
        options.tls = Some(Tls::Enabled(TlsOptions::default()));
        assert_eq!(
            first_missing(&options, NOTHING, |_| true),
            Some(("TLS".to_owned(), "rustls-tls"))
        );
        options.tls = Some(Tls::Disabled);
        assert_eq!(first_missing(&options, NOTHING, |_| true), None);
        options.socks5_proxy = Some(Socks5Proxy::builder().host("proxy.example").build());
        assert_eq!(
            first_missing(&options, NOTHING, |_| true).map(|(_, f)| f),
            Some("socks5-proxy")
        );
        assert_eq!(first_missing(&options, EVERYTHING, |_| true), None);
        options.socks5_proxy = None;

        let mut aws = Credential::default();
        aws.mechanism = Some(AuthMechanism::MongoDbAws);
        options.credential = Some(aws);
        assert_eq!(
            first_missing(&options, NOTHING, |_| true).map(|(_, f)| f),
            Some("aws-auth")
        );
        for (environment, feature) in [("azure", "azure-oidc"), ("gcp", "gcp-oidc")] {
            options.credential = Some(oidc(environment));
            assert_eq!(
                first_missing(&options, NOTHING, |_| true).map(|(_, f)| f),
                Some(feature)
            );
            assert_eq!(first_missing(&options, EVERYTHING, |_| true), None);
        }
        options.credential = Some(oidc("k8s"));
        assert_eq!(first_missing(&options, NOTHING, |_| true), None);
    }

    #[test]
    fn this_program_accepts_what_it_was_built_with() {
        let mut options = ClientOptions::default();
        options.compressors = Some(
            [
                Compressor::Snappy,
                Compressor::Zlib { level: None },
                Compressor::Zstd { level: None },
            ]
            .into_iter()
            .filter(Compressor::is_built)
            .collect(),
        );
        assert!(check(&options).is_ok());
        let message = missing("the zstd compressor", "zstd-compression");
        assert!(
            message.contains("`zstd-compression` cargo feature"),
            "{message}"
        );
    }
}
