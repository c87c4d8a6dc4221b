//! The built-in token sources the `ENVIRONMENT` mechanism property names (auth.md, "Built-in
//! OIDC Environment Integrations"). Each is a machine token source: it reads or fetches a token
//! and never caches it (the client's cache does).

use std::path::PathBuf;
use std::time::Instant;

use steadfast_core::options::Credential;

use crate::error::{Error, Result};

/// The largest token file read. Access tokens are a few kilobytes; the bound keeps a wrong
/// path (a log file, a device) from being read whole into memory.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;

/// Where a Kubernetes service account token is when neither cloud's variable names one.
const K8S_DEFAULT_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// Looks up an environment variable (injectable, so tests need not change the process's).
pub(crate) type EnvLookup = fn(&str) -> Option<String>;

/// The process environment.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A built-in token source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BuiltIn {
    /// `test`: the token in the file `OIDC_TOKEN_FILE` names (driver testing only).
    Test,
    /// `k8s`: the service account token file (AKS, EKS, then the default path).
    K8s,
    /// `azure`: the Azure instance metadata service.
    Azure {
        resource: String,
        client_id: Option<String>,
    },
    /// `gcp`: the Google Cloud metadata server.
    Gcp { resource: String },
}

impl BuiltIn {
    /// The source `credential`'s `ENVIRONMENT` names, if any (the value was validated with
    /// the credential).
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown environment or a missing `TOKEN_RESOURCE`.
    pub(crate) fn from_credential(credential: &Credential) -> Result<Option<BuiltIn>> {
        let Some(environment) = credential.property("ENVIRONMENT") else {
            return Ok(None);
        };
        let resource = || {
            credential
                .property("TOKEN_RESOURCE")
                .map(str::to_owned)
                .ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "MONGODB-OIDC ENVIRONMENT {environment} requires TOKEN_RESOURCE"
                    ))
                })
        };
        let source = match environment {
            "test" => BuiltIn::Test,
            "k8s" => BuiltIn::K8s,
            "azure" => BuiltIn::Azure {
                resource: resource()?,
                client_id: credential.username.clone(),
            },
            "gcp" => BuiltIn::Gcp {
                resource: resource()?,
            },
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown MONGODB-OIDC ENVIRONMENT {other:?}"
                )));
            }
        };
        Ok(Some(source))
    }

    /// Obtains an access token.
    ///
    /// # Errors
    /// `Authentication` when the token file cannot be read or the metadata service refuses.
    pub(crate) async fn fetch(&self, env: EnvLookup, deadline: Instant) -> Result<String> {
        match self {
            BuiltIn::Test => {
                let path = env("OIDC_TOKEN_FILE").ok_or_else(|| {
                    Error::authentication(
                        "MONGODB-OIDC ENVIRONMENT test needs OIDC_TOKEN_FILE to name a token file",
                    )
                })?;
                read_token_file(PathBuf::from(path)).await
            }
            BuiltIn::K8s => read_token_file(k8s_token_file(env)).await,
            BuiltIn::Azure {
                resource,
                client_id,
            } => super::metadata::azure_token(resource, client_id.as_deref(), deadline).await,
            BuiltIn::Gcp { resource } => super::metadata::gcp_token(resource, deadline).await,
        }
    }
}

/// The Kubernetes token file, in auth.md's order: AKS's variable, EKS's, then the default.
pub(crate) fn k8s_token_file(env: EnvLookup) -> PathBuf {
    env("AZURE_FEDERATED_TOKEN_FILE")
        .or_else(|| env("AWS_WEB_IDENTITY_TOKEN_FILE"))
        .map_or_else(|| PathBuf::from(K8S_DEFAULT_TOKEN_FILE), PathBuf::from)
}

/// Reads a token file (off the async workers), bounded by [`MAX_TOKEN_BYTES`], without the
/// surrounding whitespace (a trailing newline is common; a JWT has no whitespace).
async fn read_token_file(path: PathBuf) -> Result<String> {
    let shown = path.display().to_string();
    let read = crate::runtime::run_blocking(move || -> std::io::Result<Vec<u8>> {
        use std::io::Read as _;
        let mut bytes = Vec::new();
        std::fs::File::open(&path)?
            .take(MAX_TOKEN_BYTES + 1)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    })
    .await
    .ok_or_else(|| Error::authentication("the runtime shut down while reading the token file"))?;
    let bytes = read.map_err(|e| {
        Error::authentication(format!("cannot read the OIDC token file {shown}: {e}"))
            .with_source(e)
    })?;
    if bytes.len() as u64 > MAX_TOKEN_BYTES {
        return Err(Error::authentication(format!(
            "the OIDC token file {shown} is larger than {MAX_TOKEN_BYTES} bytes"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::authentication(format!("the OIDC token file {shown} is not UTF-8")))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(Error::authentication(format!(
            "the OIDC token file {shown} is empty"
        )));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aks(name: &str) -> Option<String> {
        match name {
            "AZURE_FEDERATED_TOKEN_FILE" => Some("/aks".into()),
            "AWS_WEB_IDENTITY_TOKEN_FILE" => Some("/eks".into()),
            _ => None,
        }
    }

    fn eks(name: &str) -> Option<String> {
        (name == "AWS_WEB_IDENTITY_TOKEN_FILE").then(|| "/eks".into())
    }

    fn nothing(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn k8s_token_file_follows_the_spec_order() {
        assert_eq!(k8s_token_file(aks), PathBuf::from("/aks"));
        assert_eq!(k8s_token_file(eks), PathBuf::from("/eks"));
        assert_eq!(
            k8s_token_file(nothing),
            PathBuf::from(K8S_DEFAULT_TOKEN_FILE)
        );
    }

    #[tokio::test]
    async fn test_environment_reads_the_named_file_without_its_newline() {
        let dir = std::env::temp_dir().join(format!("steadfast-oidc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "header.claims.signature\n").unwrap();
        let token = read_token_file(path.clone()).await.unwrap();
        assert_eq!(token, "header.claims.signature");
        std::fs::write(&path, "").unwrap();
        let empty = read_token_file(path).await.unwrap_err();
        assert!(empty.is_authentication_error(), "{empty}");
        let missing = BuiltIn::Test
            .fetch(nothing, crate::runtime::now())
            .await
            .unwrap_err();
        assert!(missing.to_string().contains("OIDC_TOKEN_FILE"), "{missing}");
    }
}
